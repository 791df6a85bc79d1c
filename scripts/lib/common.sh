# shellcheck shell=bash
# Shared helpers for scripts/umami-build, scripts/stack and tests/umami/*.
# Source it; it does not change shell options.

# Repository root: the directory that contains scripts/.
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# Default location of the cached Umami build.
: "${UMAMI_HOME:=$REPO_ROOT/.cache/umami}"

_log_prefix="${LOG_PREFIX:-$(basename "$0")}"

log()  { printf '[%s] %s\n' "$_log_prefix" "$*" >&2; }
warn() { printf '[%s] WARNING: %s\n' "$_log_prefix" "$*" >&2; }
die()  { printf '[%s] ERROR: %s\n' "$_log_prefix" "$*" >&2; exit 1; }

# need_cmd CMD [hint]: fail clearly when a command is missing.
need_cmd() {
    command -v "$1" >/dev/null 2>&1 || die "'$1' not found in PATH${2:+ ($2)}"
}

# now_ms: milliseconds since the epoch.
now_ms() { date +%s%3N; }

# port_in_use PORT: true when something listens on 127.0.0.1:PORT (or any addr).
port_in_use() {
    local port=$1
    if command -v ss >/dev/null 2>&1; then
        ss -Htln "sport = :$port" 2>/dev/null | grep -q . && return 0
        return 1
    fi
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    return 1
}

# pid_alive PID: true when the process exists (and is not a zombie).
pid_alive() {
    local pid=$1 state
    [[ -n "$pid" && "$pid" =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    state=$(ps -o stat= -p "$pid" 2>/dev/null | tr -d ' ') || return 1
    [[ -n "$state" && "$state" != Z* ]]
}

# debian_mirror [SUITE]: the URI of the Debian archive this machine's apt sources use for SUITE
# (default: the system's release, e.g. bookworm; bookworm-security gives the security archive),
# without a trailing slash. Read from apt itself (`apt-get indextargets`), so one-line and deb822
# sources both count and no registry host is written in the repository. Fails when no source
# carries SUITE (e.g. not a Debian machine).
debian_mirror() {
    local suite=${1:-} uri
    if [[ -z "$suite" ]]; then
        # shellcheck disable=SC1091
        suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
        [[ -n "$suite" ]] || die "no VERSION_CODENAME in /etc/os-release: not a Debian system?"
    fi
    # shellcheck disable=SC2016  # $(...) are apt's format fields, not shell
    uri=$(apt-get indextargets --no-release-info --format '$(RELEASE) $(REPO_URI)' \
        'Created-By: Packages' 2>/dev/null | awk -v s="$suite" '$1 == s { print $2; exit }')
    [[ -n "$uri" ]] || die "no apt source carries '$suite' (apt-get indextargets; run apt-get update?)"
    echo "${uri%/}"
}
