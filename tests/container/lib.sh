# shellcheck shell=bash
# tests/container/lib.sh: helpers of container-test.sh (sourced): logging and checks, free ports,
# the test's own PostgreSQL, docker-compose and podman calls, waits, database counts.
# Uses $work (the test's directory), $src, $build and the variables ports.sh defines.

started=${started:-$SECONDS}
failures=0
log() { printf '[container %4ds] %s\n' $((SECONDS - started)) "$*"; }
pass() { log "ok: $*"; }
# Each failure is also kept in $work/failures: the clean-up prints them again after the
# containers' logs, so the end of the output (all a CI summary may show) names what failed.
note_failure() { [[ -z "${work:-}" ]] || printf '%s\n' "$*" >>"$work/failures"; }
fail() {
  log "FAIL: $*"
  note_failure "FAIL: $*"
  failures=$((failures + 1))
}
die() {
  log "FATAL: $*"
  note_failure "FATAL: $*"
  exit 1
}
# expect DESCRIPTION COMMAND...: passes or fails on the command's status (output on failure).
expect() {
  local what=$1 out
  shift
  if out=$("$@" 2>&1); then pass "$what"; else fail "$what"; printf '%s\n' "$out" | tail -20; fi
}

# free_ports N: N distinct TCP ports free on every interface now, from 10000-32000 (below the
# ephemeral range, where outgoing connections could take one meanwhile).
free_ports() {
  python3 -c '
import random, socket, sys
n = int(sys.argv[1])
socks = []
for port in random.sample(range(10000, 32000), 3000):
    s = socket.socket()
    try:
        s.bind(("0.0.0.0", port))
    except OSError:
        s.close()
        continue
    socks.append(s)
    if len(socks) == n:
        break
print(" ".join(str(s.getsockname()[1]) for s in socks))' "$1"
}

# host_address: the machine's own address the containers reach it by (the source address of its
# default route). Containers on a compose network cannot reach the host's loopback.
host_address() {
  ip -4 route get 192.0.2.255 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p' | head -1
}

# ---- PostgreSQL: a cluster of the test's own, on loopback and the host address --------------
PG_BIN=/usr/lib/postgresql/15/bin
as_pg() { # in a subshell without the inherited descriptors: CTest waits on its pipe until every
  # holder exits, and the postmaster lives on
  (
    for fd in /proc/"$BASHPID"/fd/*; do
      fd=${fd##*/}
      [[ "$fd" =~ ^[0-9]+$ ]] && ((fd > 2)) && eval "exec $fd>&-"
    done
    cd /
    if [[ $(id -u) -eq 0 ]]; then exec runuser -u postgres -- "$@"; else exec "$@"; fi
  )
}
psql_admin() { # psql_admin DB ARGS...: as the superuser over the unix socket
  local db=$1
  shift
  as_pg psql -X -q -v ON_ERROR_STOP=1 -h "$work/pg-sock" -p "$PG_PORT" -U postgres -d "$db" "$@"
}
# q URL SQL: one value (psql -At).
q() { PGCONNECT_TIMEOUT=5 psql -X -q -At -v ON_ERROR_STOP=1 "$1" -c "$2"; }

pg_start() {
  mkdir -p "$work/pg" "$work/pg-sock"
  chmod 700 "$work/pg"
  touch "$work/pg.log"
  [[ $(id -u) -eq 0 ]] && chown postgres: "$work/pg" "$work/pg-sock" "$work/pg.log"
  as_pg "$PG_BIN/initdb" -D "$work/pg" -U postgres -E UTF8 --locale=C --no-sync \
    --auth-local=trust --auth-host=scram-sha-256 >"$work/pg-initdb.log" 2>&1 ||
    { tail -20 "$work/pg-initdb.log"; die "initdb failed"; }
  cat >>"$work/pg/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1,$HOST_IP'
port = $PG_PORT
unix_socket_directories = '$work/pg-sock'
max_connections = 200
fsync = on
EOF
  # Password logins only, from this machine and its containers (they come from the host address
  # through the engine's NAT, or from a compose network's address).
  cat >"$work/pg/pg_hba.conf" <<EOF
local all postgres trust
host all all 127.0.0.1/32 scram-sha-256
host all all $HOST_IP/32 scram-sha-256
host all all 10.0.0.0/8 scram-sha-256
host all all 172.16.0.0/12 scram-sha-256
EOF
  as_pg "$PG_BIN/pg_ctl" -D "$work/pg" -l "$work/pg.log" -w -t 60 start >/dev/null ||
    { tail -20 "$work/pg.log"; die "PostgreSQL did not start"; }
  psql_admin postgres -c "CREATE ROLE umami LOGIN PASSWORD '$PG_UMAMI_PASSWORD'" \
    -c "CREATE ROLE metrics LOGIN PASSWORD '$PG_METRICS_PASSWORD'" \
    -c "CREATE DATABASE umami OWNER umami" -c "CREATE DATABASE metrics OWNER metrics" ||
    die "cannot create the databases"
  local f
  # The production Umami image migrates at start; the test image has no schema engine.
  for f in "$UMAMI_HOME"/migrations/*.sql; do
    PGCONNECT_TIMEOUT=5 psql -X -q -v ON_ERROR_STOP=1 "$UMAMI_DB_LOCAL" -1 -f "$f" \
      >>"$work/umami-migrate.log" 2>&1 || die "Umami migration $f failed (see $work/umami-migrate.log)"
  done
  q "$UMAMI_DB_LOCAL" "INSERT INTO website (website_id, name, domain, created_at)
    VALUES ('$SITE', 'container test', 'example.com', now())" >/dev/null
  log "PostgreSQL on 127.0.0.1 and $HOST_IP:$PG_PORT (Umami schema migrated, website $SITE)"
}

pg_stop() {
  [[ -f "$work/pg/postmaster.pid" ]] || return 0
  as_pg "$PG_BIN/pg_ctl" -D "$work/pg" -m fast -w -t 30 stop >/dev/null 2>&1 || true
}

# ---- compose projects and containers -----------------------------------------------------
# dc DIR ARGS...: docker-compose in a rendered project directory, against podman.
dc() {
  local d=$1
  shift
  (cd "$d" && docker-compose --no-ansi "$@")
}
# The container of a compose service: cid PROJECT SERVICE
cid() {
  podman ps -a -q --filter "label=com.docker.compose.project=$1" \
    --filter "label=com.docker.compose.service=$2" | head -1
}
health_of() { podman inspect --format '{{.State.Health.Status}}' "$1" 2>/dev/null; }
restarts_of() { podman inspect --format '{{.RestartCount}}' "$1" 2>/dev/null; }

# wait_until SECONDS DESCRIPTION COMMAND...: polls the command every 0.5 s.
wait_until() {
  local limit=$1 what=$2 deadline=$((SECONDS + $1))
  shift 2
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || { fail "$what (not within $limit s)"; return 1; }
    sleep 0.5
  done
}

# all_healthy PROJECT: every container of the project runs and its healthcheck says healthy.
all_healthy() {
  local c n=0
  for c in $(podman ps -a -q --filter "label=com.docker.compose.project=$1"); do
    [[ "$(podman inspect --format '{{.State.Status}}' "$c")" == running ]] || return 1
    [[ "$(health_of "$c")" == healthy ]] || return 1
    n=$((n + 1))
  done
  ((n > 0))
}

# metric URL NAME: the value of an unlabelled sample on a /metrics page (empty when absent).
metric() {
  curl -fsS -m 5 "$1" 2>/dev/null | awk -v n="$2" '$1 == n {print $2; exit}'
}

# ---- what is stored ----------------------------------------------------------------------
# Web events of a prefix in Umami (rows, and distinct events), batches and points in metrics.
events_rows() { q "$UMAMI_DB_LOCAL" "SELECT count(*) FROM website_event WHERE url_path LIKE '/$1-%'"; }
events_distinct() {
  q "$UMAMI_DB_LOCAL" "SELECT count(DISTINCT url_path) FROM website_event WHERE url_path LIKE '/$1-%'"
}
batches_stored() { q "$METRICS_DB_LOCAL" "SELECT count(*) FROM metrics.batches WHERE batch_id LIKE '$1-b%'"; }
all_points() { q "$METRICS_DB_LOCAL" "SELECT count(*) FROM metrics.number_points"; }

# stored PREFIX EVENTS BATCHES: every event and batch of the prefix is stored.
stored() {
  [[ "$(events_distinct "$1")" -ge "$2" && "$(batches_stored "$1")" -ge "$3" ]]
}
