#!/usr/bin/env bash
# runtime-libs.sh DOCKERFILE BUILD_DIR: the runtime stage's apt packages (with their
# dependencies) provide every shared library the three binaries link. Exit 0 when they do.
# Reads the libraries of the binaries built here (same Debian 12 packages as the image).
set -euo pipefail
df=$1
build=$2

# The package list of the runtime stage's apt-get install.
mapfile -t runtime < <(awk '/^FROM .* AS runtime/{r=1} r' "$df" |
  sed -n '/apt-get install/,/rm -rf/p' | sed 's/[\\]//g' | tr -s ' ' '\n' |
  grep -E '^[a-z0-9][a-z0-9.+-]+$' | grep -vE '^(apt-get|install|rm|rf|update)$' | sort -u)
((${#runtime[@]})) || { echo "no runtime packages found in $df"; exit 1; }
apt-cache show "${runtime[@]}" >/dev/null 2>&1 ||
  { echo "a runtime package is not a Debian package here: ${runtime[*]}"; exit 1; }

# Packages that own the libraries the binaries load. One dpkg query for all of them, each under
# its /usr and its / path (usrmerge: dpkg knows only the one the package shipped).
mapfile -t libs < <(for b in replayer/replayer metricswriter/metricswriter platformctl/platformctl; do
  ldd "$build/$b" | awk '$3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'
done | xargs -r readlink -f | sort -u)
forms=()
for l in "${libs[@]}"; do forms+=("$l" "${l#/usr}" "/usr${l#/usr}"); done
owners=$(dpkg -S "${forms[@]}" 2>/dev/null || true)
needed=()
for l in "${libs[@]}"; do
  pkg=$(awk -v a="$l" -v b="${l#/usr}" -F': ' '$2 == a || $2 == b {sub(/:.*/, "", $1); print $1; exit}' <<<"$owners")
  [[ -n "$pkg" ]] || { echo "no package owns $l"; exit 1; }
  needed+=("$pkg")
done
mapfile -t needed < <(printf '%s\n' "${needed[@]}" | sort -u)

# Everything the runtime packages pull in (Depends and Pre-Depends), plus what every Debian
# image has (essential packages).
closure=$( {
  apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
    --no-replaces --no-enhances "${runtime[@]}" 2>/dev/null | grep -vE '^ |^<' | tr -d ' '
  dpkg-query -W -f='${Package} ${Essential}\n' | awk '$2 == "yes" {print $1}'
} | sed 's/:.*//' | sort -u)
missing=()
for p in "${needed[@]}"; do
  grep -qx "$p" <<<"$closure" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "libraries of packages not installed by the runtime stage: ${missing[*]}"
  exit 1
fi
echo "runtime packages: ${runtime[*]}; they provide all ${#needed[@]} library packages"
