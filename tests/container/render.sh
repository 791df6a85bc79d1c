# shellcheck shell=bash
# tests/container/render.sh: the test's ports, secrets and inventory, and the roles rendered
# with ansible-playbook (sourced by container-test.sh).
#
# The inventory: three NATS nodes (nats-1..3) and two core nodes (core-1, core-2) on this one
# machine, apart by ports and directories (each host renders into $R/cwtest-<host>, which is
# also its compose project's name), with the test's images instead of the registry's. The
# rendered files are used as rendered; nothing is edited after ansible wrote them.

# choose_ports: every port and secret of the run, in $work/ports.sh.
choose_ports() {
  local ports
  ports=$(free_ports 21)
  read -r n1 n2 n3 c1 c2 c3 h1 h2 h3 pg r1 m1 e1 r2 m2 e2 u1 u2 d1 d2 _ <<<"$ports"
  {
    echo "NATS_PORTS='$n1 $n2 $n3' NATS_CLUSTER_PORTS='$c1 $c2 $c3' NATS_HTTP_PORTS='$h1 $h2 $h3'"
    echo "PG_PORT=$pg"
    # Per core node: replayer, metricswriter, exporter and dlq-exporter /metrics, the first
    # Umami host port.
    echo "REPLAYER_PORTS='$r1 $r2' METRICSWRITER_PORTS='$m1 $m2' EXPORTER_PORTS='$e1 $e2'"
    echo "DLQ_EXPORTER_PORTS='$d1 $d2'"
    echo "UMAMI_PORTS='$u1 $u2'"
    echo "HOST_IP=$(host_address)"
    local name
    for name in PG_UMAMI_PASSWORD PG_METRICS_PASSWORD NATS_PW_REPLAYER NATS_PW_METRICSWRITER \
      NATS_PW_PROVISIONER NATS_PW_PLATFORMCTL NATS_PW_EXPORTER NATS_PW_ROUTE NATS_PW_EDGE \
      UMAMI_SECRET; do
      echo "$name=$(openssl rand -hex 16)"
    done
    echo "SITE=$(python3 -c 'import uuid; print(uuid.uuid4())')"
  } >"$work/ports.sh"
}

# nproc_limit: the process limit the containers get (scripts/container-runtime's, too).
nproc_limit() {
  local n
  n=$(ulimit -Hu)
  [[ $n == unlimited || $n -gt 32768 ]] && n=32768
  echo "$n"
}

# nth LIST N: the N-th word (1-based).
nth() { cut -d' ' -f"$2" <<<"$1"; }

write_inventory() {
  local i nats_hosts="" core_hosts=""
  for i in 1 2 3; do
    nats_hosts+="        nats-$i: {nats_client_port: $(nth "$NATS_PORTS" $i), nats_cluster_port: $(nth "$NATS_CLUSTER_PORTS" $i), nats_http_port: $(nth "$NATS_HTTP_PORTS" $i)}"$'\n'
  done
  for i in 1 2; do
    core_hosts+="        core-$i: {core_replayer_metrics_port: $(nth "$REPLAYER_PORTS" $i), core_metricswriter_metrics_port: $(nth "$METRICSWRITER_PORTS" $i), core_exporter_metrics_port: $(nth "$EXPORTER_PORTS" $i), core_dlq_exporter_metrics_port: $(nth "$DLQ_EXPORTER_PORTS" $i), core_umami_host_port_base: $(nth "$UMAMI_PORTS" $i)}"$'\n'
  done
  cat >"$work/inventory.yml" <<EOF
all:
  vars:
    ansible_connection: local
    ansible_python_interpreter: /usr/bin/python3
    render: "$R"
    nats_root: "{{ render }}/cwtest-{{ inventory_hostname }}"
    core_root: "{{ render }}/cwtest-{{ inventory_hostname }}"
    core_project_name: "cwtest-{{ inventory_hostname }}"
    nats_manage_service: false
    core_manage_services: false
    # The test's images (tests/container/images.sh), not the registry's.
    core_image: "$CORE_IMAGE"
    nats_image: "$NATS_IMAGE"
    core_umami_image: "$UMAMI_IMAGE"
    # Every node is this machine: the address the containers reach it by. The NATS nodes use the
    # host's network (as rendered), the core services their compose network.
    nats_address: "$HOST_IP"
    # Within this machine's hard limits: without CAP_SYS_RESOURCE the engine cannot raise them,
    # and rootful podman sets a limit not given to 1048576 (nproc too, then).
    nats_ulimits: {nofile: $(ulimit -Hn), nproc: $(nproc_limit)}
    core_ulimits: {nofile: $(ulimit -Hn), nproc: $(nproc_limit)}
    core_metrics_bind_address: 127.0.0.1
    core_umami_processes: 2
    core_exporter_interval: 2s
    # TLS as in production (nats_tls_enabled defaults to true), from the test's CA (make_tls).
    nats_tls_ca_src: "$work/tls/ca.pem"
    nats_tls_cert_src: "$work/tls/{{ inventory_hostname }}.pem"
    nats_tls_key_src: "$work/tls/{{ inventory_hostname }}-key.pem"
    nats_passwords:
      replayer: $NATS_PW_REPLAYER
      metricswriter: $NATS_PW_METRICSWRITER
      provisioner: $NATS_PW_PROVISIONER
      platformctl: $NATS_PW_PLATFORMCTL
      exporter: $NATS_PW_EXPORTER
    nats_cluster_password: $NATS_PW_ROUTE
    nats_edge_users:
      - user: edge
        password: $NATS_PW_EDGE
    core_metricswriter_database_url: "postgresql://metrics:$PG_METRICS_PASSWORD@$HOST_IP:$PG_PORT/metrics"
    core_umami_database_url: "postgresql://umami:$PG_UMAMI_PASSWORD@$HOST_IP:$PG_PORT/umami"
    core_umami_app_secret: $UMAMI_SECRET
  children:
    nats:
      hosts:
$nats_hosts    core:
      hosts:
$core_hosts
EOF
}

# make_tls: the operator's CA made with openssl, and a certificate per NATS node (its SANs: the
# address the services and the other nodes dial, and the loopback the test's publisher uses;
# serverAuth and clientAuth, since a node presents it to the others on the routes).
make_tls() {
  local d="$work/tls" name
  mkdir -p "$d"
  (
    cd "$d"
    ossl() { openssl "$@" 2>>openssl.log; }
    ossl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -days 2 \
      -subj "/CN=container test CA" -keyout ca-key.pem -out ca.pem \
      -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
    for name in nats-1 nats-2 nats-3; do
      ossl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -subj "/CN=$name" \
        -keyout "$name-key.pem" -out "$name.csr"
      printf 'subjectAltName=IP:%s,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' \
        "$HOST_IP" >"$name.ext"
      ossl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 \
        -extfile "$name.ext" -out "$name.pem"
      chmod 600 "$name-key.pem"
      openssl verify -CAfile ca.pem "$name.pem" >/dev/null 2>>openssl.log || exit 1
    done
  ) || die "openssl could not make the test CA and certificates ($d/openssl.log)"
}

render_roles() {
  make_tls
  R="$work/render"
  write_inventory
  log "rendering the roles (ansible-playbook site.yml, connection local) into $R"
  (cd "$src/ansible" && ANSIBLE_PIPELINING=1 ANSIBLE_LOCAL_TEMP="$work/ansible-tmp" \
    ANSIBLE_HOME="$work/ansible-home" ANSIBLE_NOCOLOR=1 \
    ansible-playbook -i "$work/inventory.yml" -e deploy_become=false -e deploy_serial=100% \
    site.yml) >"$work/playbook.log" 2>&1 || { tail -40 "$work/playbook.log"; die "ansible-playbook failed"; }
  local i
  for i in 1 2 3; do
    [[ -f "$R/cwtest-nats-$i/docker-compose.yml" ]] || die "nats-$i: nothing rendered"
  done
  for i in 1 2; do
    [[ -f "$R/cwtest-core-$i/docker-compose.yml" && -f "$R/cwtest-core-$i/.env" ]] ||
      die "core-$i: nothing rendered"
  done
  pass "roles rendered for 3 NATS nodes and 2 core nodes"
}
