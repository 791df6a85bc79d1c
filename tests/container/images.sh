#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# tests/container/images.sh: the images the container test runs, built with podman.
#
#   images.sh [base-image] [nats-image] [umami-image] [core-image]
#                        those named, or all four; prints each one's build time
#
# - debian:12, debian:12-slim: scripts/container-base-image (debootstrap; cached a week);
# - $CORE_IMAGE (core-workers:container-test): the repository's Dockerfile, as production builds
#   it (layer and RUN --mount=type=cache caches make a rebuild of unchanged sources take
#   seconds, of a changed file a minute or two);
# - $NATS_IMAGE (localhost/core-workers-test-nats:<version>): the nats-server of
#   $NATS_SERVER_BIN (default: sid's, the production line, which scripts/install-deps took from
#   Debian's package) on debian:12-slim (nats.Dockerfile);
# - $UMAMI_IMAGE: Umami 2.10 from $UMAMI_HOME (umami.Dockerfile), rebuilt only when the Umami
#   build, the node binary, the base image or the Dockerfile changed (label
#   core-workers.umami-key).
# Environment: NATS_SERVER_BIN, PODMAN (default podman, with scripts/container-runtime's configuration unless
# CONTAINERS_CONF names one), CONTAINER_TEST_SOURCE_DIR (the repository), UMAMI_HOME,
# IMAGE_TIMES (a file the build times are appended to, "name seconds").
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="${CONTAINER_TEST_SOURCE_DIR:-$(cd "$here/../.." && pwd)}"
: "${UMAMI_HOME:=$src/.cache/umami}"
: "${CORE_IMAGE:=localhost/core-workers:container-test}"
: "${NATS_SERVER_BIN:=$(bash -c '. "$0" && printf %s "$NATS_SERVER_DEFAULT"' "$src/scripts/lib/common.sh")}"
nats_version=$("$NATS_SERVER_BIN" --version 2>/dev/null | sed -n 's/^nats-server: v//p')
[[ -n "$nats_version" ]] || { echo "no nats-server at $NATS_SERVER_BIN (scripts/install-deps)" >&2; exit 1; }
: "${NATS_IMAGE:=localhost/core-workers-test-nats:$nats_version}"
: "${UMAMI_IMAGE:=localhost/core-workers-test-umami:2.10}"
read -r -a podman <<<"${PODMAN:-podman}"
# podman's configuration for this machine (runc, cgroupfs, ...), unless the caller has one.
if [[ -z "${CONTAINERS_CONF:-}" && "${podman[0]}" == podman ]]; then
  eval "$("$src/scripts/container-runtime" env "${TMPDIR:-/tmp}/core-workers-podman")"
fi
times=${IMAGE_TIMES:-/dev/null}

say() { printf '[images %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
timed() { # timed NAME CMD...: runs CMD, logs and records how long it took
  local name=$1 t0=$SECONDS log
  shift
  log=$(mktemp "${TMPDIR:-/tmp}/image-$name.XXXXXX")
  if ! "$@" >"$log" 2>&1; then
    tail -40 "$log"
    say "FAILED: $name (log $log)"
    return 1
  fi
  say "$name: $((SECONDS - t0)) s"
  echo "$name $((SECONDS - t0))" >>"$times"
  rm -f "$log"
}

base() { PODMAN="${podman[*]}" "$src/scripts/container-base-image"; }

# The context has no .git: the version the binaries print comes in as a build argument.
core() {
  "${podman[@]}" build --layers -t "$CORE_IMAGE" -f "$src/Dockerfile" \
    --build-arg "CORE_VERSION=$(git -C "$src" describe --always --dirty 2>/dev/null || echo unknown)" "$src"
}

nats() {
  local ctx rc=0
  ctx=$(mktemp -d "${TMPDIR:-/tmp}/nats-image.XXXXXX")
  cp "$(readlink -f "$NATS_SERVER_BIN")" "$ctx/nats-server"
  echo "nats-server $nats_version ($NATS_SERVER_BIN)"
  "${podman[@]}" build --layers -t "$NATS_IMAGE" -f "$here/nats.Dockerfile" "$ctx" || rc=$?
  rm -rf "$ctx"
  return $rc
}

umami() {
  [[ -f "$UMAMI_HOME/app/server.js" ]] || { echo "no Umami build in $UMAMI_HOME (scripts/install-deps)"; return 1; }
  local node key current ctx
  node=$(command -v node) || { echo "node not found (the Umami image takes the machine's)"; return 1; }
  key=$(cat "$UMAMI_HOME/.stamp" "$here/umami.Dockerfile" <("$node" --version) \
    <("${podman[@]}" image inspect --format '{{.Id}}' debian:12-slim) | sha256sum | cut -c1-16)
  current=$("${podman[@]}" image inspect --format '{{ index .Labels "core-workers.umami-key" }}' \
    "$UMAMI_IMAGE" 2>/dev/null || true)
  if [[ "$current" == "$key" ]]; then
    echo "$UMAMI_IMAGE is current (key $key)"
    return 0
  fi
  ctx=$(mktemp -d "${TMPDIR:-/tmp}/umami-image.XXXXXX")
  cp -a "$UMAMI_HOME/app" "$ctx/app"
  cp "$(readlink -f "$node")" "$ctx/node"
  "${podman[@]}" build --layers --label "core-workers.umami-key=$key" -t "$UMAMI_IMAGE" \
    -f "$here/umami.Dockerfile" "$ctx"
  local rc=$?
  rm -rf "$ctx"
  return $rc
}

[[ $# -gt 0 ]] || set -- base-image nats-image umami-image core-image
for name in "$@"; do
  case $name in
    base-image | nats-image | umami-image | core-image) timed "$name" "${name%-image}" ;;
    *) echo "usage: $0 [base-image] [nats-image] [umami-image] [core-image]" >&2; exit 2 ;;
  esac
done
