#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# tests/deploy/deploy-test.sh: the deployment (ansible/, Dockerfile) checked with the real tools.
#
#   deploy-test.sh render   renders the roles with ansible-playbook for a local inventory
#                           (connection local, into DEPLOY_RENDER_DIR): every host of the test
#                           inventory (the production form: sync_interval always), plus nats-1
#                           again with the switch nats_jetstream_sync_always off, and core-1's
#                           compose file and mon-1's scrape config with core_dlq_reasons_exporter
#                           off.
#                           The CTest fixture the two others use.
#   deploy-test.sh check    ansible-lint, --syntax-check, and the rendered files checked with
#                           docker-compose config, nats-server -t, promtool check config/rules,
#                           promtool test rules; the Dockerfile against CI's commands.
#   deploy-test.sh stack    a 3-node NATS cluster from the rendered configuration, the real
#                           binaries as their NATS users doing their jobs (PostgreSQL and Umami
#                           from test_stack_tool), every refusal of the permission matrix, and a real
#                           Prometheus scraping the services with the rendered configuration.
#
# Environment: DEPLOY_BUILD_DIR (built binaries, default build), DEPLOY_SOURCE_DIR (the repo),
# DEPLOY_RENDER_DIR (default $DEPLOY_BUILD_DIR/tests/deploy/rendered), KEEP_TEST_STACK=1 keeps
# the work directory and prints where it is.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="${DEPLOY_SOURCE_DIR:-$(cd "$here/../.." && pwd)}"
build="${DEPLOY_BUILD_DIR:-$src/build}"
mode="${1:-}"
[[ "$mode" =~ ^(render|check|stack)$ ]] || { echo "usage: $0 render|check|stack" >&2; exit 2; }
RD="${DEPLOY_RENDER_DIR:-$build/tests/deploy/rendered}"
R="$RD/render"

work="$(mktemp -d "${TMPDIR:-/tmp}/deploy-$mode.XXXXXX")"
started=$SECONDS
failures=0
pids=()

log() { printf '[deploy %3ds] %s\n' $((SECONDS - started)) "$*"; }
pass() { log "ok: $*"; }
fail() { log "FAIL: $*"; failures=$((failures + 1)); }
die() { log "FATAL: $*"; exit 1; }
# check DESCRIPTION COMMAND...: runs the command, records pass/fail with its output on failure.
check() {
  local what=$1 out; shift
  if out=$("$@" 2>&1); then pass "$what"; else fail "$what"; printf '%s\n' "$out" | tail -20; fi
}

# Stops what this run started, newest first (the services before the NATS servers they use).
cleanup() {
  local rc=$? i p
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    p=${pids[i]}
    kill -TERM "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  if [[ "${KEEP_TEST_STACK:-0}" == 1 || $rc -ne 0 ]]; then
    log "work directory kept: $work"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

# free_ports N: N distinct TCP ports free on every interface right now, below Linux's ephemeral
# range (32768+), where outgoing connections would take them. (Ports the kernel hands out for
# bind(0) come from that ephemeral range: one a server of the rendered configuration is meant to
# listen on could be taken in the meantime.)
free_ports() {
  python3 -c '
import random, socket, sys
n = int(sys.argv[1])
socks = []
for port in random.sample(range(10000, 32000), 2000):
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

# ---- rendering ------------------------------------------------------------------------------
# choose_ports: every port the stack test will use, free now, saved in $RD/ports.sh.
choose_ports() {
  local ports
  # PostgreSQL's port is rendered into the roles; Umami's is the OS's pick (test_stack_tool).
  ports=$(free_ports 15)
  read -r n1 n2 n3 c1 c2 c3 h1 h2 h3 rp mp ep dp prom pg <<<"$ports"
  {
    echo "NATS_PORTS='$n1 $n2 $n3'"
    echo "NATS_CLUSTER_PORTS='$c1 $c2 $c3'"
    echo "NATS_HTTP_PORTS='$h1 $h2 $h3'"
    echo "REPLAYER_PORT=$rp METRICSWRITER_PORT=$mp EXPORTER_PORT=$ep DLQ_EXPORTER_PORT=$dp"
    echo "PROM_PORT=$prom"
    echo "PG_PORT=$pg"
  } >"$RD/ports.sh"
}

# make_tls DIR: an operator's CA made with openssl, and from it a certificate per NATS node
# (SANs 127.0.0.1 and localhost, serverAuth and clientAuth: the nodes present them to each other
# on the routes), a client certificate for core-1's services and one for the edge publisher;
# plus a second CA with a client certificate of its own, which the servers must refuse.
make_tls() {
  local d=$1 name
  mkdir -p "$d"
  (
    cd "$d"
    ossl() { openssl "$@" 2>>openssl.log; }
    for ca in ca other-ca; do
      ossl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -days 3 \
        -subj "/CN=deploy test $ca" -keyout "$ca-key.pem" -out "$ca.pem" \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
    done
    # sign NAME CA EXT: a key and a certificate for NAME signed by CA with the extensions EXT.
    sign() {
      ossl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -subj "/CN=$1" \
        -keyout "$1-key.pem" -out "$1.csr"
      printf '%s\n' "$3" >"$1.ext"
      ossl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2-key.pem" -CAcreateserial -days 3 \
        -extfile "$1.ext" -out "$1.pem"
      chmod 600 "$1-key.pem"
    }
    for name in nats-1 nats-2 nats-3; do
      sign "$name" ca "subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth,clientAuth"
    done
    sign core-1-client ca "extendedKeyUsage=clientAuth"
    sign edge-client ca "extendedKeyUsage=clientAuth"
    sign other-client other-ca "extendedKeyUsage=clientAuth"
    # (set -e does not hold under `make_tls || die`: the files decide.)
    for name in nats-1 nats-2 nats-3 core-1-client edge-client other-client; do
      openssl verify -CAfile "$([[ $name == other-* ]] && echo other-ca || echo ca).pem" \
        "$name.pem" >/dev/null 2>>openssl.log || exit 1
    done
  )
}

# write_inventory FILE: three NATS nodes, one core node and one Prometheus, all on this machine
# (connection local), each rendering into $R/<host>/.
write_inventory() {
  local file=$1 i n c h nats_hosts=""
  for i in 1 2 3; do
    n=$(cut -d' ' -f$i <<<"$NATS_PORTS")
    c=$(cut -d' ' -f$i <<<"$NATS_CLUSTER_PORTS")
    h=$(cut -d' ' -f$i <<<"$NATS_HTTP_PORTS")
    nats_hosts+="        nats-$i: {nats_address: 127.0.0.1, nats_client_port: $n, nats_cluster_port: $c, nats_http_port: $h}"$'\n'
  done
  cat >"$file" <<EOF
all:
  vars:
    ansible_connection: local
    ansible_python_interpreter: /usr/bin/python3
    render: "$R"
    nats_root: "{{ render }}/{{ inventory_hostname }}/nats"
    nats_server_store_dir: "{{ render }}/{{ inventory_hostname }}/nats/jetstream"
    core_root: "{{ render }}/{{ inventory_hostname }}/core"
    monitoring_root: "{{ render }}/{{ inventory_hostname }}/prometheus"
    monitoring_grafana_root: "{{ render }}/{{ inventory_hostname }}/grafana"
    nats_manage_service: false
    core_manage_services: false
    monitoring_manage_service: false
    nats_passwords:
      replayer: test-replayer-$RANDOM
      metricswriter: test-metricswriter-$RANDOM
      platformctl: test-platformctl-$RANDOM
      exporter: test-exporter-$RANDOM
      provisioner: test-provisioner-$RANDOM
    # TLS from the test CA (make_tls), mutual for clients too; the servers read the files where
    # the role puts them (no container here), and the key keeps this user as its owner.
    nats_tls_enabled: true
    nats_tls_verify_clients: true
    nats_tls_ca_src: "$RD/tls/ca.pem"
    nats_tls_cert_src: "$RD/tls/{{ inventory_hostname }}.pem"
    nats_tls_key_src: "$RD/tls/{{ inventory_hostname }}-key.pem"
    nats_server_tls_dir: "{{ nats_tls_dir }}"
    core_nats_tls_cert_src: "$RD/tls/{{ inventory_hostname }}-client.pem"
    core_nats_tls_key_src: "$RD/tls/{{ inventory_hostname }}-client-key.pem"
    core_tls_key_owner: ""
    core_tls_key_group: ""
    nats_cluster_password: test-route-$RANDOM
    nats_edge_users:
      - user: edge
        password: test-edge-$RANDOM
    core_metricswriter_database_url: "postgresql://postgres@127.0.0.1:$PG_PORT/metrics"
    core_umami_database_url: "postgresql://postgres@127.0.0.1:$PG_PORT/umami"
    core_umami_app_secret: test-secret-$RANDOM
    core_exporter_interval: 1s
    # WEB_EVENTS small enough for the fill test (fill-checks.sh) to fill it in a second.
    core_stream_limits_env:
      WEB_EVENTS_MAX_BYTES: 256KiB
      API_METRICS_MAX_BYTES: 40GiB
      WEB_DLQ_MAX_BYTES: 10GiB
      API_DLQ_MAX_BYTES: 10GiB
      VISIT_STATE_MAX_BYTES: 4GiB
      STORED_IDS_MAX_BYTES: 16GiB
    monitoring_scrape_interval: 1s
    monitoring_scrape_timeout: 1s
    monitoring_evaluation_interval: 1s
  children:
    nats:
      hosts:
$nats_hosts    core:
      hosts:
        core-1:
          core_metrics_address: 127.0.0.1
          core_replayer_metrics_port: $REPLAYER_PORT
          core_metricswriter_metrics_port: $METRICSWRITER_PORT
          core_exporter_metrics_port: $EXPORTER_PORT
          core_dlq_exporter_metrics_port: $DLQ_EXPORTER_PORT
    monitoring:
      hosts:
        mon-1: {}
EOF
}

# playbook ARGS...: ansible-playbook on site.yml with the test inventory, quietly.
playbook() {
  (cd "$src/ansible" && ANSIBLE_PIPELINING=1 ANSIBLE_LOCAL_TEMP="$work/ansible-tmp" \
    ANSIBLE_HOME="$work/ansible-home" ANSIBLE_NOCOLOR=1 \
    ansible-playbook -i "$RD/inventory.yml" -e deploy_become=false -e deploy_serial=100% \
    "$@" site.yml) >"$work/playbook.log" 2>&1 || { tail -40 "$work/playbook.log"; return 1; }
}

# What the rendered files depend on besides the ports: the roles and this test's own files.
sources_stamp() {
  (cd "$src" && find ansible tests/deploy -type f -print0 | sort -z | xargs -0 sha256sum) |
    sha256sum | cut -d' ' -f1
}

# The ports a render chose are all still free (nothing else took one since).
ports_still_free() {
  local p listening
  # shellcheck disable=SC1091
  source "$RD/ports.sh"
  listening=$(ss -Htln | awk '{print $4}' | sed 's/.*://')
  for p in $NATS_PORTS $NATS_CLUSTER_PORTS $NATS_HTTP_PORTS $REPLAYER_PORT $METRICSWRITER_PORT \
    $EXPORTER_PORT $DLQ_EXPORTER_PORT $PROM_PORT $PG_PORT; do
    grep -qx "$p" <<<"$listening" && return 1
  done
  return 0
}

render() {
  # CTest runs this fixture for `check` and again for `stack`; rendering takes about two
  # minutes, so a render of the same sources whose ports are still free is used again.
  local stamp
  stamp=$(sources_stamp)
  if [[ -f "$RD/stamp" && $(cat "$RD/stamp") == "$stamp" && -f "$RD/ports.sh" &&
        -f "$R/mon-1/prometheus/core-alerts.yml" ]] && ports_still_free; then
    pass "roles rendered before from the same sources (stamp ${stamp:0:12}), ports still free"
    return 0
  fi
  rm -rf "$RD"
  mkdir -p "$RD"
  choose_ports
  # shellcheck disable=SC1091
  source "$RD/ports.sh"
  make_tls "$RD/tls" || die "openssl could not make the test CA and certificates ($RD/tls/openssl.log)"
  write_inventory "$RD/inventory.yml"
  log "rendering the roles for the local inventory into $RD"
  playbook || die "ansible-playbook failed to render the roles"
  [[ -f "$R/core-1/core/docker-compose.yml" && -f "$R/nats-1/nats/nats-server.conf" &&
     -f "$R/mon-1/prometheus/core-alerts.yml" ]] || die "rendered files missing"
  pass "roles rendered ($(find "$R" -type f | wc -l) files)"
  # The form without sync_interval (the switch off), for the check that it drops that alone.
  playbook -e render="$RD/render-nosync" -e nats_jetstream_sync_always=false --limit nats-1 \
    --tags nats_config ||
    die "rendering nats-1 with nats_jetstream_sync_always=false failed"
  pass "nats-1 rendered again with nats_jetstream_sync_always=false"
  # The core node's compose file and the scrape config with the DLQ reasons exporter off.
  playbook -e render="$RD/render-nodlq" -e core_dlq_reasons_exporter=false --limit core-1,mon-1 \
    --tags core_compose,monitoring_prometheus ||
    die "rendering core-1 and mon-1 with core_dlq_reasons_exporter=false failed"
  pass "core-1 and mon-1 rendered again with core_dlq_reasons_exporter=false"
  echo "$stamp" >"$RD/stamp"
}

# The other modes read what `render` left (CTest runs it first: fixture deploy_rendered).
need_render() {
  [[ -f "$RD/ports.sh" && -f "$R/mon-1/prometheus/core-alerts.yml" ]] ||
    die "nothing rendered in $RD: run '$0 render' first (CTest does: fixture deploy_rendered)"
  # shellcheck disable=SC1091
  source "$RD/ports.sh"
}

# shellcheck source=render-checks.sh
source "$here/render-checks.sh"
# shellcheck source=stack-checks.sh
source "$here/stack-checks.sh"
# shellcheck source=fill-checks.sh
source "$here/fill-checks.sh"
# shellcheck source=reply-checks.sh
source "$here/reply-checks.sh"
# shellcheck source=dashboard-checks.sh
source "$here/dashboard-checks.sh"

# The nats-server the checks run (as the C++ tests: NATS_SERVER_BIN, else NATS_SERVER_DEFAULT of
# scripts/lib/common.sh, sid's, the production line).
# shellcheck disable=SC2016  # $0 and the variable are the inner shell's
NATS_SERVER=${NATS_SERVER_BIN:-$(bash -c '. "$0" && printf %s "$NATS_SERVER_DEFAULT"' \
  "$src/scripts/lib/common.sh")}
export NATS_SERVER_BIN=$NATS_SERVER  # for every child that starts one: the same
if [[ $mode != render ]]; then
  [[ -x "$NATS_SERVER" ]] || die "no nats-server at $NATS_SERVER (scripts/install-deps installs it)"
  log "nats-server $("$NATS_SERVER" --version 2>&1 | sed 's/^nats-server: //') ($NATS_SERVER)"
fi

case $mode in
  render) render ;;
  check) need_render; render_checks ;;
  stack) need_render; stack_checks ;;
esac
log "$failures failure(s) in $((SECONDS - started)) s"
[[ $failures -eq 0 ]]
