#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# tests/container/container-test.sh: the deployment run for real, on one machine (issue 17).
#
#  1. images (images.sh): the Debian 12 base made locally, the project's image from the
#     Dockerfile, the production line's nats-server (sid's Debian package, scripts/install-deps),
#     Umami 2.10 from $UMAMI_HOME;
#  2. the roles rendered (render.sh) for three NATS nodes and two core nodes; a PostgreSQL of
#     the test's own on this machine; the NATS nodes' and the core nodes' compose projects
#     started with docker-compose against podman (scripts/container-runtime), then
#     `docker-compose run --rm platformctl init`;
#  3. 2,000 web events and 200 metric batches published by an edge user and stored (Umami's
#     website_event, metrics.batches and points); platformctl streams, the exporters' /metrics
#     and JetStream's own /jsz agree;
#  4. failover drill: the leading replayer's and the leading metricswriter's containers killed
#     (SIGKILL to the process: `podman kill` would count as stopped by the user, which the
#     restart policy does not restart) while 2,000 events and 200 batches are published; a leader
#     again within the lease TTL (+1 s: a follower's poll), the restart policy brings the killed
#     ones back, every message stored, duplicate web events within the bound docs/operations.md gives
#     (the sends under way: REPLAYER_WORKERS, and REPLAYER_SENDS_PER_PROCESS per Umami process),
#     no batch stored twice;
#  5. the NATS node leading WEB_EVENTS killed while events flow: nothing lost;
#  6. both core projects and all NATS nodes `docker-compose down`, messages published meanwhile,
#     everything `up` again: the services come back and nothing is lost.
# Prints the drill's figures, and exits 1 when a check failed.
#
# Environment: CONTAINER_TEST_BUILD_DIR (host build with tests/container/container_load),
# CONTAINER_TEST_SOURCE_DIR, UMAMI_HOME, KEEP_TEST_STACK=1 (leave everything running and
# print how to reach it). Needs root (podman, debootstrap) and scripts/install-deps' packages.
set -Eeuo pipefail
# A command that fails outside a check ends the test (set -e): the ERR trap keeps where, and
# the clean-up says it (otherwise the test would stop without a word of why).
err_at=""
trap 'err_at="${BASH_SOURCE[0]##*/}:$LINENO: $BASH_COMMAND"' ERR
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="${CONTAINER_TEST_SOURCE_DIR:-$(cd "$here/../.." && pwd)}"
build="${CONTAINER_TEST_BUILD_DIR:-$src/build}"
export UMAMI_HOME="${UMAMI_HOME:-$src/.cache/umami}"
export CORE_IMAGE=localhost/core-workers:container-test
# The nats-server the NATS nodes' image holds (images.sh): sid's, the production line, unless
# NATS_SERVER_BIN names another.
# shellcheck disable=SC2016  # $0 and the variable are the inner shell's
export NATS_SERVER_BIN="${NATS_SERVER_BIN:-$(bash -c '. "$0" && printf %s "$NATS_SERVER_DEFAULT"' \
  "$src/scripts/lib/common.sh")}"
NATS_VERSION=$("$NATS_SERVER_BIN" --version 2>/dev/null | sed -n 's/^nats-server: v//p')
export NATS_IMAGE=localhost/core-workers-test-nats:${NATS_VERSION:-unknown}
export UMAMI_IMAGE=localhost/core-workers-test-umami:2.10
LOCK_TTL_S=15         # platformctl init's default LOCK_TTL (the inventory keeps it)
started=$SECONDS

# shellcheck source=lib.sh
source "$here/lib.sh"
# shellcheck source=render.sh
source "$here/render.sh"
# shellcheck source=phases.sh
source "$here/phases.sh"

[[ $(id -u) -eq 0 ]] || die "run as root (podman and debootstrap; CI runs as root)"
for c in podman runc docker-compose ansible-playbook psql openssl curl python3; do
  command -v "$c" >/dev/null || die "$c not found: run scripts/install-deps"
done
[[ -x "$build/tests/container/container_load" ]] || die "no $build/tests/container/container_load"
[[ -x "$build/tests/container/container_judge" ]] || die "no $build/tests/container/container_judge"
[[ -n "$NATS_VERSION" ]] || die "no nats-server at $NATS_SERVER_BIN (scripts/install-deps)"
log "nats-server $NATS_VERSION ($NATS_SERVER_BIN) in $NATS_IMAGE"
[[ -f "$UMAMI_HOME/app/server.js" ]] || die "no Umami build in $UMAMI_HOME (scripts/install-deps)"

work="$(mktemp -d "${TMPDIR:-/tmp}/container-test.XXXXXX")"
chmod 755 "$work"
projects=()
load_pids=()
cleanup() {
  local rc=$? p
  set +e  # every step of the clean-up runs, whatever one of them answers
  for p in "${load_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if [[ "${KEEP_TEST_STACK:-0}" == 1 ]]; then
    log "kept running: eval \"\$($src/scripts/container-runtime env $work/runtime)\"; projects in $work/render"
    return
  fi
  if ((rc != 0)) && [[ -z "${finished:-}" ]] && ! grep -qs '^FATAL' "$work/failures"; then
    log "FATAL: stopped by a failing command (status $rc) at ${err_at:-an unknown place}"
    note_failure "FATAL: stopped by a failing command (status $rc) at ${err_at:-an unknown place}"
  fi
  if ((rc != 0 || failures > 0)); then collect_logs; fi
  for ((i = ${#projects[@]} - 1; i >= 0; i--)); do
    dc "${projects[i]}" down -v --remove-orphans -t 20 >/dev/null 2>&1 || true
  done
  "$src/scripts/container-runtime" stop "$work/runtime" >/dev/null 2>&1 || true
  pg_stop
  if ((rc != 0 || failures > 0)); then
    log "work directory kept: $work"
    log "what failed (as printed above, before the containers' logs):"
    sed 's/^/  /' "$work/failures" 2>/dev/null || true
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

# ---- 1. runtime and images ------------------------------------------------------------------
"$src/scripts/container-runtime" start "$work/runtime"
eval "$("$src/scripts/container-runtime" env "$work/runtime")"
# Leftovers of an earlier run that was killed: its compose projects.
for c in $(podman ps -a -q --filter label=com.docker.compose.project 2>/dev/null); do
  case $(podman inspect --format '{{ index .Config.Labels "com.docker.compose.project" }}' "$c") in
    cwtest-*) podman rm -f "$c" >/dev/null 2>&1 || true ;;
  esac
done
IMAGE_TIMES="$work/image-times" "$here/images.sh" ||
  die "an image did not build"

# ---- 2. render, PostgreSQL, start -----------------------------------------------------------
choose_ports
# shellcheck disable=SC1091
source "$work/ports.sh"
[[ -n "$HOST_IP" ]] || die "no address of this machine to reach from the containers (no default route)"
UMAMI_DB_LOCAL="postgresql://umami:$PG_UMAMI_PASSWORD@127.0.0.1:$PG_PORT/umami"
METRICS_DB_LOCAL="postgresql://metrics:$PG_METRICS_PASSWORD@127.0.0.1:$PG_PORT/metrics"
render_roles
pg_start
start_nats
start_core

# ---- 3..6 -----------------------------------------------------------------------------------
phase_steady
phase_failover
phase_nats_kill
phase_down_up
final_report

log "$failures failure(s) in $((SECONDS - started)) s"
finished=1
[[ $failures -eq 0 ]]
