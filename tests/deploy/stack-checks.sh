# shellcheck shell=bash
# shellcheck disable=SC2154  # work, src, here, build, R, RD and the ports come from deploy-test.sh
# shellcheck disable=SC2016  # '$JS.API...' and '$KV...' are NATS subjects, not expansions
# The stack half of deploy-test.sh (sourced; uses its helpers and variables).
#
# Three nats-servers run the rendered configuration (cluster routes, JetStream, the accounts and
# users). The real binaries run with their rendered environment files, changed only where a
# container name cannot work on this host (UMAMI_URLS). The permission test needs Umami: the
# replayer's job includes storing events there (scripts/stack's real Umami 2.10).

SITE=5e5e5e5e-0000-4000-8000-00000000d001

# env_args FILE: the KEY=VALUE lines of a rendered environment file, one per line.
env_args() { grep -vE '^(#|$)' "$1"; }

# start NAME ENVFILE [KEY=VALUE...] -- COMMAND...: runs COMMAND with only that environment.
start() {
  local name=$1 file=$2; shift 2
  local -a kv=()
  mapfile -t kv < <(env_args "$file")
  while [[ $1 != -- ]]; do kv+=("$1"); shift; done
  shift
  env -i PATH="$PATH" HOME="$work" "${kv[@]}" "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
}

# as USER COMMAND...: runs a short command as that NATS user with its rendered identity.
as() {
  local user=$1 file; shift
  case $user in
    edge) env -i PATH="$PATH" NATS_URL="$NATS_URL" NATS_USER=edge NATS_PASSWORD="$EDGE_PASSWORD" "$@" ;;
    *) file="$R/core-1/core/env/$user.env"
       local -a kv=(); mapfile -t kv < <(env_args "$file")
       env -i PATH="$PATH" HOME="$work" "${kv[@]}" "$@" ;;
  esac
}

# check_out DESCRIPTION PATTERN COMMAND...: the command succeeds and its output has PATTERN.
check_out() {
  local what=$1 pattern=$2 out rc=0; shift 2
  out=$("$@" 2>&1) || rc=$?
  if ((rc == 0)) && grep -q -- "$pattern" <<<"$out"; then pass "$what"
  else fail "$what (exit $rc)"; printf '%s\n' "$out" | tail -15; fi
}

# wait_for SECONDS DESCRIPTION COMMAND...: polls until the command succeeds; records a failure
# after SECONDS (and sets waited_ok=0) without stopping the test.
wait_for() {
  local limit=$1 what=$2 deadline=$((SECONDS + $1)); shift 2
  waited_ok=1
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || { fail "$what (not within ${limit}s)"; waited_ok=0; return 0; }
    sleep 0.5
  done
  pass "$what"
}

# expect allowed|refused USER DESCRIPTION PROBE-ARGS...: one nats_probe operation.
expect() {
  local want=$1 user=$2 what=$3 rc=0 out; shift 3
  out=$(as "$user" "$build/tests/deploy/nats_probe" "$@" 2>&1) || rc=$?
  local got=other
  ((rc == 0)) && got=allowed
  ((rc == 10)) && got=refused
  if [[ $got == "$want" ]]; then pass "$user: $what: $want"
  else fail "$user: $what: expected $want, got $got"; printf '    %s\n' "$out"; fi
}

start_nats() {
  local i http
  for i in 1 2 3; do
    start "nats-$i" /dev/null -- nats-server -c "$R/nats-$i/nats/nats-server.conf"
  done
  for i in 1 2 3; do
    http=$(cut -d' ' -f$i <<<"$NATS_HTTP_PORTS")
    wait_for 60 "nats-$i is up with JetStream (cluster of 3 from the rendered configuration)" \
      curl -fsS -m 2 "http://127.0.0.1:$http/healthz"
    ((waited_ok)) || return 1
  done
}

job_checks() {
  local out
  # platformctl: provisioning, idempotent, as its own user with replicas from its env file (3).
  if out=$(as platformctl "$build/platformctl/platformctl" init 2>&1); then
    pass "platformctl init as platformctl (R3 streams and buckets)"
  else fail "platformctl init as platformctl"; printf '%s\n' "$out"; return 1; fi
  check_out "platformctl init again: no change" "no change" \
    as platformctl "$build/platformctl/platformctl" init
  psql -X -q "postgresql://postgres@127.0.0.1:$PG_PORT/umami" -c "INSERT INTO website
    (website_id, name, domain, created_at) VALUES ('$SITE', 'deploy', 'deploy.example', now())
    ON CONFLICT DO NOTHING" || { fail "register the test website in Umami"; return 1; }

  # The services exactly as the compose file runs them, with their rendered environment.
  local cmd
  cmd=$(python3 -c "import yaml,sys; print(' '.join(yaml.safe_load(open(sys.argv[1]))['services']['streams-exporter']['command'][1:]))" \
    "$R/core-1/core/docker-compose.yml")
  # shellcheck disable=SC2086
  start exporter "$R/core-1/core/env/exporter.env" -- "$build/platformctl/platformctl" $cmd
  start replayer "$R/core-1/core/env/replayer.env" "UMAMI_URLS=$UMAMI_URLS" -- \
    "$build/replayer/replayer"
  start metricswriter "$R/core-1/core/env/metricswriter.env" -- "$build/metricswriter/metricswriter"
  start prometheus /dev/null -- prometheus --config.file="$R/mon-1/prometheus/prometheus.yml" \
    --storage.tsdb.path="$work/prometheus" --web.listen-address="127.0.0.1:$PROM_PORT" \
    --log.level=warn

  # The edge publishes: web events (one poison) and metric batches (one undecodable).
  local now_ns json
  if as edge "$build/bench/webgen" --count 100 --visitors 10 --sites "$SITE" --prefix "dt$$" \
    >"$work/webgen.log" 2>&1; then
    pass "edge publishes 100 web events (webgen)"
  else
    fail "edge publishes web events"
    cat "$work/webgen.log"
  fi
  expect allowed edge "publish a poison web event" \
    pub "web.events.$SITE" 'not json' "Nats-Msg-Id=dt$$-poison"
  now_ns=$(date +%s%N)
  json='{"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"deploy-test"}}]},"scopeMetrics":[{"scope":{"name":"t"},"metrics":[{"name":"deploy.requests","gauge":{"dataPoints":[{"timeUnixNano":"'$now_ns'","asDouble":1.5}]}}]}]}]}'
  expect allowed edge "publish an OTLP batch" \
    pub api.metrics.tenant-1 "$json" "Nats-Msg-Id=dt$$-b1" Content-Type=application/json
  expect allowed edge "publish an undecodable batch" \
    pub api.metrics.tenant-1 '{"resourceMetrics": 7' "Nats-Msg-Id=dt$$-b2" Content-Type=application/json

  local rm="http://127.0.0.1:$REPLAYER_PORT/metrics" mm="http://127.0.0.1:$METRICSWRITER_PORT/metrics"
  local em="http://127.0.0.1:$EXPORTER_PORT/metrics"
  wait_for 90 "replayer (user replayer) leads, drains WEB_EVENTS into Umami: 100 stored" \
    bash -c "[ \"\$(curl -fsS -m 2 $rm | awk '\$1==\"replayer_events_stored_total\"{print \$2}')\" -ge 100 ]"
  wait_for 30 "replayer dead-letters the poison event to WEB_DLQ" \
    bash -c "curl -fsS -m 2 $em | grep -qx 'jetstream_stream_messages{stream=\"WEB_DLQ\"} 1'"
  wait_for 60 "metricswriter (user metricswriter) leads, stores the batch in PostgreSQL" \
    bash -c "[ \"\$(curl -fsS -m 2 $mm | awk '\$1==\"metricswriter_batches_stored_total\"{print \$2}')\" -ge 1 ]"
  wait_for 30 "metricswriter dead-letters the undecodable batch to API_DLQ" \
    bash -c "curl -fsS -m 2 $em | grep -qx 'jetstream_stream_messages{stream=\"API_DLQ\"} 1'"
  check "both hold their lease in locks (replayer_leader, metricswriter_leader = 1)" bash -c \
    "[ \"\$(curl -fsS $rm | grep -x 'replayer_leader 1')\" ] && [ \"\$(curl -fsS $mm | grep -x 'metricswriter_leader 1')\" ]"
  check "/healthz of replayer, metricswriter and exporter answer 200" bash -c \
    "for p in $REPLAYER_PORT $METRICSWRITER_PORT $EXPORTER_PORT; do curl -fsS -m 2 http://127.0.0.1:\$p/healthz >/dev/null || exit 1; done"
  # The exporter reads JetStream every few seconds: a consumer made since its last reading
  # shows at the next one.
  wait_for 20 "exporter (user exporter) keeps pending and unacked apart per consumer" bash -c \
    "curl -fsS $em | grep -q '^jetstream_consumer_unacked{stream=\"WEB_EVENTS\",consumer=\"replayer\"}' &&
     curl -fsS $em | grep -q '^jetstream_consumer_pending{stream=\"API_METRICS\",consumer=\"metricswriter\"}'"

  # platformctl's operator commands as platformctl.
  local ctl="$build/platformctl/platformctl"
  check_out "platformctl streams --json as platformctl" '"WEB_DLQ"' \
    as platformctl "$ctl" streams --interval 0 --json
  check_out "platformctl leaders as platformctl (reads both leases)" replayer \
    as platformctl "$ctl" leaders
  check_out "platformctl dlq list as platformctl (browses WEB_DLQ)" "web.events.$SITE" \
    as platformctl "$ctl" dlq list --queue web --json
  check_out "platformctl dlq replay as platformctl (the poison event back to WEB_EVENTS)" "" \
    as platformctl "$ctl" dlq replay --queue web --all
  wait_for 30 "the replayed poison event is dead-lettered again (WEB_DLQ holds 1, from seq 2)" \
    bash -c "curl -fsS -m 2 $em | grep -qx 'jetstream_stream_first_seq{stream=\"WEB_DLQ\"} 2' &&
             curl -fsS -m 2 $em | grep -qx 'jetstream_stream_messages{stream=\"WEB_DLQ\"} 1'"
  check_out "platformctl dlq purge as platformctl (erases from API_DLQ)" "" \
    as platformctl "$ctl" dlq purge --queue api --all --yes
  wait_for 10 "API_DLQ is empty after the purge" \
    bash -c "curl -fsS -m 2 $em | grep -qx 'jetstream_stream_messages{stream=\"API_DLQ\"} 0'"
  # Every job above ran without a single refusal: the permissions cover what the code does.
  local v
  v=$(cat "$work"/nats-*.log | grep -i 'violation' || true)
  if [[ -z "$v" ]]; then pass "no permission violation while every user did its job"
  else fail "permission violations while the users did their jobs"; printf '%s\n' "$v" | head -20; fi
}

refusal_checks() {
  log "the refusals (nats_probe)"
  local next='{"batch":1,"no_wait":true}' del='{"seq":1}'
  # Positive controls: the probe sees an allowed operation as allowed.
  expect allowed replayer "read its own lease" kvget locks replayer
  expect allowed replayer "subscribe to its own inbox" sub '_INBOX_replayer.probe'
  expect allowed metricswriter "read its own lease" kvget locks metricswriter
  expect allowed platformctl "read WEB_DLQ's state" req '$JS.API.STREAM.INFO.WEB_DLQ'
  expect allowed platformctl "erase a message of WEB_DLQ (its job)" req '$JS.API.STREAM.MSG.DELETE.WEB_DLQ' '{"seq":2}'
  expect allowed platformctl "publish to web.events.* (replays)" pub "web.events.$SITE" 'not json' "Nats-Msg-Id=dt$$-replay"
  # Nobody gets in without a user of the configuration.
  local anon rc=0
  anon=$(env -i PATH="$PATH" NATS_URL="$NATS_URL" "$build/tests/deploy/nats_probe" \
    req '$JS.API.INFO' 2>&1) || rc=$?
  if ((rc != 0)) && grep -qiE 'authorization|authentication' <<<"$anon"; then
    pass "a connection without a user is refused"
  else fail "a connection without a user: exit $rc"; printf '    %s\n' "$anon"; fi
  # replayer
  expect refused replayer "publish to API_METRICS" pub api.metrics.tenant-1 '{}'
  expect refused replayer "publish to WEB_EVENTS (the edge's right)" pub "web.events.$SITE" '{}'
  expect refused replayer "publish to API_DLQ" pub dlq.api.tenant-1 '{}'
  expect refused replayer "consume the metricswriter's consumer" req '$JS.API.CONSUMER.MSG.NEXT.API_METRICS.metricswriter' "$next"
  expect refused replayer "subscribe to web.events.> around its consumer" sub 'web.events.>'
  expect refused replayer "delete from WEB_EVENTS" req '$JS.API.STREAM.MSG.DELETE.WEB_EVENTS' "$del"
  expect refused replayer "delete from WEB_DLQ" req '$JS.API.STREAM.MSG.DELETE.WEB_DLQ' "$del"
  expect refused replayer "purge WEB_EVENTS" req '$JS.API.STREAM.PURGE.WEB_EVENTS'
  expect refused replayer "delete the stream WEB_EVENTS" req '$JS.API.STREAM.DELETE.WEB_EVENTS'
  expect refused replayer "read the metricswriter's lease" kvget locks metricswriter
  expect refused replayer "read replies on the shared inbox" sub '_INBOX.>'
  expect refused replayer "read the platformctl user's replies" sub '_INBOX_platformctl.>'
  expect refused replayer "write the metricswriter's lease" pub '$KV.locks.metricswriter' x
  # metricswriter
  expect refused metricswriter "publish to WEB_EVENTS" pub "web.events.$SITE" '{}'
  expect refused metricswriter "publish to WEB_DLQ" pub "dlq.web.$SITE" '{}'
  expect refused metricswriter "consume the replayer's consumer" req '$JS.API.CONSUMER.MSG.NEXT.WEB_EVENTS.replayer' "$next"
  expect refused metricswriter "delete from API_METRICS" req '$JS.API.STREAM.MSG.DELETE.API_METRICS' "$del"
  expect refused metricswriter "delete from API_DLQ" req '$JS.API.STREAM.MSG.DELETE.API_DLQ' "$del"
  expect refused metricswriter "read the replayer's lease" kvget locks replayer
  expect refused metricswriter "read visitors' state (visit_state)" kvget visit_state x
  expect refused metricswriter "read the replayer's replies" sub '_INBOX_replayer.>'
  # platformctl
  expect refused platformctl "consume the replayer's consumer" req '$JS.API.CONSUMER.MSG.NEXT.WEB_EVENTS.replayer' "$next"
  expect refused platformctl "consume the metricswriter's consumer" req '$JS.API.CONSUMER.MSG.NEXT.API_METRICS.metricswriter' "$next"
  expect refused platformctl "delete from WEB_EVENTS (not a DLQ)" req '$JS.API.STREAM.MSG.DELETE.WEB_EVENTS' "$del"
  expect refused platformctl "delete from API_METRICS (not a DLQ)" req '$JS.API.STREAM.MSG.DELETE.API_METRICS' "$del"
  expect refused platformctl "delete the stream WEB_DLQ" req '$JS.API.STREAM.DELETE.WEB_DLQ'
  expect refused platformctl "purge WEB_EVENTS" req '$JS.API.STREAM.PURGE.WEB_EVENTS'
  expect refused platformctl "forge a dead letter" pub "dlq.web.$SITE" '{}'
  expect refused platformctl "write a lease" pub '$KV.locks.replayer' x
  expect refused platformctl "read visitors' state (visit_state)" kvget visit_state x
  expect refused platformctl "read the replayer's replies (visit state, stored ids)" sub '_INBOX_replayer.>'
  # exporter
  expect refused exporter "publish to WEB_EVENTS" pub "web.events.$SITE" '{}'
  expect refused exporter "consume the replayer's consumer" req '$JS.API.CONSUMER.MSG.NEXT.WEB_EVENTS.replayer' "$next"
  expect refused exporter "create a stream" req '$JS.API.STREAM.CREATE.EXTRA' '{"name":"EXTRA","subjects":["extra.>"]}'
  expect refused exporter "read a lease" kvget locks replayer
  # edge
  expect refused edge "consume the replayer's consumer" req '$JS.API.CONSUMER.MSG.NEXT.WEB_EVENTS.replayer' "$next"
  expect refused edge "publish to WEB_DLQ" pub "dlq.web.$SITE" '{}'
  expect refused edge "read stream state" req '$JS.API.STREAM.INFO.WEB_EVENTS'
  expect refused edge "subscribe to web.events.>" sub 'web.events.>'
  expect refused edge "read the replayer's replies" sub '_INBOX_replayer.>'
  # The services kept running meanwhile: every refusal the servers logged was the probe's.
  local v
  v=$(cat "$work"/nats-*.log | grep 'Violation' | grep -v ':nats_probe"' || true)
  if [[ -z "$v" ]]; then pass "every violation the servers logged came from nats_probe"
  else fail "violations by the services or platformctl"; printf '%s\n' "$v" | head -20; fi
}

prometheus_scrape_checks() {
  local base="http://127.0.0.1:$PROM_PORT"
  wait_for 30 "Prometheus (rendered scrape config) is ready" curl -fsS -m 2 "$base/-/ready"
  ((waited_ok)) || return 0
  # Enough scrapes (1 s apart) for the rates and windows of the rules to have two samples.
  wait_for 30 "Prometheus scraped every target at least 5 times" bash -c "
    curl -fsS -m 2 '$base/api/v1/query?query=min(count_over_time(up%5B1m%5D))%20%3E%3D%205' | grep -q '\"result\":\[{'"
  if python3 "$here/check_prometheus.py" "$base" "$R/mon-1/prometheus/core-alerts.yml" 3 \
    >"$work/prometheus-check.log" 2>&1; then
    pass "every target up, rules healthy, every metric and alert expression resolves to a series"
  else
    fail "Prometheus against the rules"
  fi
  sed 's/^/    /' "$work/prometheus-check.log"
}

stack_checks() {
  for tool in nats-server prometheus psql curl; do
    command -v "$tool" >/dev/null || die "$tool not installed (scripts/install-deps)"
  done
  for b in platformctl/platformctl replayer/replayer metricswriter/metricswriter bench/webgen \
           tests/deploy/nats_probe; do
    [[ -x "$build/$b" ]] || die "$build/$b is not built"
  done
  local port
  for port in $NATS_PORTS $NATS_CLUSTER_PORTS $NATS_HTTP_PORTS $REPLAYER_PORT $METRICSWRITER_PORT \
              $EXPORTER_PORT $PROM_PORT $PG_PORT $((STACK_BASE + 10)); do
    ! ss -Htln | awk '{print $4}' | grep -qE ":$port\$" ||
      die "port $port, free when the roles were rendered, is in use now: render again"
  done
  log "PostgreSQL and Umami from scripts/stack (base port $STACK_BASE), in the background"
  "$src/scripts/stack" --dir "$work/stack" --base-port "$STACK_BASE" up pg umami \
    >"$work/stack.log" 2>&1 &
  local stack_pid=$!
  # A fresh JetStream store (the one the rendered configuration names), even when run twice.
  local store
  while read -r store; do
    [[ "$store" == "$RD"/* ]] || die "unexpected JetStream store $store (not under $RD)"
    rm -rf "$store"
  done < <(sed -n 's/^ *store_dir: "\(.*\)"$/\1/p' "$R"/nats-*/nats/nats-server.conf)
  NATS_URL=$(grep '^NATS_URL=' "$R/core-1/core/env/replayer.env" | cut -d= -f2-)
  EDGE_PASSWORD=$(sed -n '/user: "edge"/{n;s/.*password: "\(.*\)"/\1/p}' "$R/nats-1/nats/nats-server.conf")
  start_nats || die "the NATS cluster did not come up; see $work/nats-*.log"
  wait "$stack_pid" || { tail -20 "$work/stack.log"; die "scripts/stack up pg umami failed"; }
  UMAMI_URLS=$(grep '^UMAMI_URLS=' "$work/stack/env" | cut -d= -f2-)
  pass "PostgreSQL and Umami up ($UMAMI_URLS)"
  job_checks
  refusal_checks
  prometheus_scrape_checks
}
