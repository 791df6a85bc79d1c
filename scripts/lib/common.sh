# shellcheck shell=bash
# Shared helpers for scripts/umami-build, scripts/stack and tests/umami/*.
# Source it; it does not change shell options.

# Repository root: the directory that contains scripts/.
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# The nats-server versions the tests run on, as scripts/install-deps installs them (symlinks to
# /opt/nats-server-<version>/, by Debian suite): Debian 13's (trixie) and the newest Debian's
# (sid), the production line and the default (NATS_SERVER_BIN picks another). The system's own
# nats-server (Debian 12: 2.9.10) is below the supported 2.10.27: no test runs it.
NATS_SERVER_TRIXIE=/opt/nats-server/trixie/usr/sbin/nats-server
NATS_SERVER_SID=/opt/nats-server/sid/usr/sbin/nats-server
NATS_SERVER_DEFAULT=$NATS_SERVER_SID

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

# make_route_tls DIR IP...: a CA (DIR/ca.pem) and one certificate for every node of a test's NATS
# cluster (DIR/node.pem, DIR/node-key.pem) naming the given addresses, serverAuth and clientAuth:
# the routes run mutual TLS as the deployment's do (ansible/roles/nats). Made once: a DIR that
# holds them is left as it is. Needs openssl; its messages go to DIR/openssl.log.
make_route_tls() {
    local d=$1 ip san=""; shift
    [[ -f "$d/node.pem" && -f "$d/node-key.pem" && -f "$d/ca.pem" ]] && return 0
    need_cmd openssl
    for ip in "$@"; do san+="${san:+,}IP:$ip"; done
    mkdir -p "$d"
    (
        cd "$d" || exit 1
        ossl() { openssl "$@" 2>>openssl.log; }
        ossl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -days 30 \
            -subj "/CN=test route CA" -keyout ca-key.pem -out ca.pem \
            -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign &&
        ossl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -subj "/CN=node" \
            -keyout node-key.pem.tmp -out node.csr &&
        printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$san" >node.ext &&
        ossl x509 -req -in node.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 30 \
            -extfile node.ext -out node.pem.tmp &&
        chmod 600 node-key.pem.tmp && mv node-key.pem.tmp node-key.pem && mv node.pem.tmp node.pem
    ) || die "openssl could not make the route certificates in $d (see $d/openssl.log)"
}
