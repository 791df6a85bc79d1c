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
