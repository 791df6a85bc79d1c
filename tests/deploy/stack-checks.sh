# shellcheck shell=bash
# shellcheck disable=SC2154  # work, src, here, build, R, RD and the ports come from deploy-test.sh
# shellcheck disable=SC2016  # '$JS.API...' and '$KV...' are NATS subjects, not expansions
# The stack half of deploy-test.sh (sourced; uses its helpers and variables).
#
# Three nats-servers run the rendered configuration (cluster routes, JetStream, the accounts and
# users). The real binaries run with their rendered environment files, changed only where a
# container name cannot work on this host (UMAMI_URLS). The permission test needs Umami: the
# replayer's job includes storing events there (a real Umami 2.10 from test_stack_tool, the C++
# tests' TestStack).

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
  pid_of[$name]=$!
}
declare -A pid_of=()

# stop NAME: stops what `start NAME` started (SIGTERM, then waits for it).
stop() {
  local p=${pid_of[$1]:-}
  [[ -n $p ]] || return 0
  kill -TERM "$p" 2>/dev/null || true
  wait "$p" 2>/dev/null || true
  unset "pid_of[$1]"
  # Out of `pids`: the cleanup must not signal whatever takes the number later.
  local -a alive=()
  local q
  for q in "${pids[@]}"; do [[ $q == "$p" ]] || alive+=("$q"); done
  pids=("${alive[@]}")
}

# as USER COMMAND...: runs a short command as that NATS user with its rendered identity (the
# provisioner's is the compose service provision's environment file). The edge publisher is not
# rendered by the roles: it gets the same servers and the test CA's client certificate for it.
as() {
  local user=$1 file; shift
  case $user in
    edge) env -i PATH="$PATH" NATS_URL="$NATS_URL" NATS_USER=edge NATS_PASSWORD="$EDGE_PASSWORD" \
            NATS_CA="$RD/tls/ca.pem" NATS_CERT="$RD/tls/edge-client.pem" \
            NATS_KEY="$RD/tls/edge-client-key.pem" "$@" ;;
    *) file="$R/core-1/core/env/${user/provisioner/provision}.env"
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

# check_erasure DESCRIPTION PATTERN COMMAND...: a purge or erasure run with --raft-wait 0. On
# three replicas it would wait for every replica's raft log to be compacted past the erasure
# (the next snapshot, 2 to 3 minutes: the cluster erasure tests wait for it); here it reads them
# once, through the system account's raftz the platformctl user imports, and exits 1 while one
# still holds the erased entries. Passes when the output matches, every replica's raft log was
# read (a "STILL HOLDS" or "compacted past" line for each of the 3, none "NOT READ") and the
# exit is 0 or, with a log still holding them, 1.
check_erasure() {
  local what=$1 pattern=$2 out rc=0 read; shift 2
  out=$("$@" 2>&1) || rc=$?
  read=$(grep -cE ' on [^ ]+: (STILL HOLDS|compacted past the erasure)' <<<"$out" || true)
  if { ((rc == 0)) || { ((rc == 1)) && grep -q "STILL HOLDS" <<<"$out"; }; } &&
    grep -q -- "$pattern" <<<"$out" && ((read >= 3)) && ! grep -q "NOT READ" <<<"$out"; then
    pass "$what (exit $rc; $read raft log readings)"
  else fail "$what (exit $rc; $read raft log readings)"; printf '%s\n' "$out" | tail -25; fi
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
    start "nats-$i" /dev/null -- "$NATS_SERVER" -c "$R/nats-$i/nats/nats-server.conf"
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
  # Provisioning as the provisioner (the compose service provision), idempotent, with replicas
  # from its environment file (3): the streams over the TLS routes, then the metrics schema.
  if out=$(as provisioner "$build/platformctl/platformctl" init 2>&1); then
    pass "platformctl init as provisioner (R3 streams and buckets)"
  else fail "platformctl init as provisioner"; printf '%s\n' "$out"; return 1; fi
  check_out "platformctl init again as provisioner: no change" "no change" \
    as provisioner "$build/platformctl/platformctl" init
  check_out "platformctl migrate as provisioner (its DATABASE_URL) applies the metrics schema" \
    "schema at version [0-9]*: migrated" as provisioner "$build/platformctl/platformctl" migrate
  # The operator's day-to-day user reads what init would do, and has no database to migrate.
  check_out "platformctl init --dry-run as platformctl reads every stream: no change" "no change" \
    as platformctl "$build/platformctl/platformctl" init --dry-run
  local rc=0
  out=$(as platformctl "$build/platformctl/platformctl" migrate 2>&1) || rc=$?
  if ((rc == 2)) && grep -q DATABASE_URL <<<"$out"; then
    pass "platformctl migrate as platformctl: no DATABASE_URL in its environment (exit 2)"
  else fail "platformctl migrate as platformctl: exit $rc"; printf '%s\n' "$out"; fi
  psql -X -q "postgresql://postgres@127.0.0.1:$PG_PORT/umami" -c "INSERT INTO website
    (website_id, name, domain, created_at) VALUES ('$SITE', 'deploy', 'deploy.example', now())
    ON CONFLICT DO NOTHING" || { fail "register the test website in Umami"; return 1; }

  # The services exactly as the compose file runs them, with their rendered environment.
  local cmd
  cmd=$(python3 -c "import yaml,sys; print(' '.join(yaml.safe_load(open(sys.argv[1]))['services']['streams-exporter']['command'][1:]))" \
    "$R/core-1/core/docker-compose.yml")
  # shellcheck disable=SC2086
  start exporter "$R/core-1/core/env/exporter.env" -- "$build/platformctl/platformctl" $cmd
  # The DLQs' reasons as the operator's user (core_dlq_reasons_exporter, on by default).
  cmd=$(python3 -c "import yaml,sys; print(' '.join(yaml.safe_load(open(sys.argv[1]))['services']['dlq-exporter']['command'][1:]))" \
    "$R/core-1/core/docker-compose.yml")
  # shellcheck disable=SC2086
  start dlq-exporter "$R/core-1/core/env/dlq-exporter.env" -- "$build/platformctl/platformctl" $cmd
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
  local em="http://127.0.0.1:$EXPORTER_PORT/metrics" dm="http://127.0.0.1:$DLQ_EXPORTER_PORT/metrics"
  wait_for 90 "replayer (user replayer) leads, drains WEB_EVENTS into Umami: 100 stored" \
    bash -c "[ \"\$(curl -fsS -m 2 $rm | awk '\$1==\"replayer_events_stored_total\"{print \$2}')\" -ge 100 ]"
  wait_for 30 "replayer dead-letters the poison event to WEB_DLQ" \
    bash -c "curl -fsS -m 2 $em | grep -qx 'jetstream_stream_messages{stream=\"WEB_DLQ\"} 1'"
  # Read from the dead letter's headers through a consumer on WEB_DLQ, as user platformctl.
  wait_for 20 "dlq-exporter counts WEB_DLQ's dead letter by its reason" \
    python3 "$here/dlq_reasons_scrape.py" "$dm" WEB_DLQ 1
  wait_for 60 "metricswriter (user metricswriter) leads, stores the batch in PostgreSQL" \
    bash -c "[ \"\$(curl -fsS -m 2 $mm | awk '\$1==\"metricswriter_batches_stored_total\"{print \$2}')\" -ge 1 ]"
  wait_for 30 "metricswriter dead-letters the undecodable batch to API_DLQ" \
    bash -c "curl -fsS -m 2 $em | grep -qx 'jetstream_stream_messages{stream=\"API_DLQ\"} 1'"
  wait_for 20 "dlq-exporter counts API_DLQ's dead letter by its reason" \
    python3 "$here/dlq_reasons_scrape.py" "$dm" API_DLQ 1
  dlq_exporter_checks "$dm"
  check "both hold their lease in locks (replayer_leader, metricswriter_leader = 1)" bash -c \
    "[ \"\$(curl -fsS $rm | grep -x 'replayer_leader 1')\" ] && [ \"\$(curl -fsS $mm | grep -x 'metricswriter_leader 1')\" ]"
  check "/healthz of replayer, metricswriter, exporter and dlq-exporter answer 200" bash -c \
    "for p in $REPLAYER_PORT $METRICSWRITER_PORT $EXPORTER_PORT $DLQ_EXPORTER_PORT; do curl -fsS -m 2 http://127.0.0.1:\$p/healthz >/dev/null || exit 1; done"
  # The exporter reads JetStream every few seconds: a consumer made since its last reading
  # shows at the next one.
  wait_for 20 "exporter (user exporter) keeps pending and unacked apart per consumer" bash -c \
    "curl -fsS $em | grep '^jetstream_consumer_unacked{' | grep 'stream=\"WEB_EVENTS\"' | grep -q 'consumer=\"replayer\"' &&
     curl -fsS $em | grep '^jetstream_consumer_pending{' | grep 'stream=\"API_METRICS\"' | grep -q 'consumer=\"metricswriter\"'"

  # platformctl's operator commands as platformctl.
  local ctl="$build/platformctl/platformctl"
  check_out "platformctl streams --json as platformctl" '"WEB_DLQ"' \
    as platformctl "$ctl" streams --interval 0 --json
  check_out "platformctl leaders as platformctl (reads both leases)" replayer \
    as platformctl "$ctl" leaders
  check_out "platformctl dlq list as platformctl (browses WEB_DLQ)" "web.events.$SITE" \
    as platformctl "$ctl" dlq list --queue web --json
  check_out "platformctl dlq replay --task as platformctl (the poison event back to WEB_EVENTS)" \
    "task deploy-redrive: done" as platformctl "$ctl" dlq replay --queue web --all --task deploy-redrive
  check_out "platformctl dlq task list as platformctl (reads the task records)" \
    "deploy-redrive" as platformctl "$ctl" dlq task list
  wait_for 30 "the replayed poison event is dead-lettered again (WEB_DLQ holds 1, from seq 2)" \
    bash -c "curl -fsS -m 2 $em | grep -qx 'jetstream_stream_first_seq{stream=\"WEB_DLQ\"} 2' &&
             curl -fsS -m 2 $em | grep -qx 'jetstream_stream_messages{stream=\"WEB_DLQ\"} 1'"
  check_erasure "platformctl dlq purge as platformctl (erases from API_DLQ)" "" \
    as platformctl "$ctl" dlq purge --queue api --all --yes --raft-wait 0
  wait_for 10 "API_DLQ is empty after the purge" \
    bash -c "curl -fsS -m 2 $em | grep -qx 'jetstream_stream_messages{stream=\"API_DLQ\"} 0'"
  check_erasure "platformctl erase --site as platformctl (the poison event's DLQ copy, by its site)" \
    "1 message of WEB_DLQ erased" as platformctl "$ctl" erase --site "$SITE" --raft-wait 0
  wait_for 10 "WEB_DLQ is empty after the erasure" \
    bash -c "curl -fsS -m 2 $em | grep -qx 'jetstream_stream_messages{stream=\"WEB_DLQ\"} 0'"
  # The dlq-exporter's walks all succeeded (a failed one is only a warning in its log).
  if grep -q "cannot read" "$work/dlq-exporter.log"; then
    fail "dlq-exporter: a walk of a DLQ failed"; grep "cannot read" "$work/dlq-exporter.log" | head -5
  else pass "dlq-exporter: every walk of the DLQs succeeded (no 'cannot read' in its log)"; fi
  # Every job above ran without a single refusal: the permissions cover what the code does.
  local v
  v=$(cat "$work"/nats-*.log | grep -i 'violation' || true)
  if [[ -z "$v" ]]; then pass "no permission violation while every user did its job"
  else fail "permission violations while the users did their jobs"; printf '%s\n' "$v" | head -20; fi
}

# dlq_exporter_checks METRICS-URL: the dlq-exporter (compose service dlq-exporter) connects as
# the operator's NATS user over TLS and the streams-exporter as the least-trusted `exporter`
# (each node's /connz names every connection's user), and it reads the two DLQs only.
dlq_exporter_checks() {
  local dm=$1 mons=() i
  for i in 1 2 3; do mons+=("http://127.0.0.1:$(cut -d' ' -f$i <<<"$NATS_HTTP_PORTS")"); done
  check "dlq-exporter connects as platformctl, streams-exporter as exporter, both over TLS" \
    python3 - "${mons[@]}" <<'EOF'
import json, sys, urllib.request
users = {}
for mon in sys.argv[1:]:
    with urllib.request.urlopen(mon + "/connz?auth=true&limit=1024", timeout=5) as r:
        for c in json.load(r).get("connections") or []:
            if c.get("name") == "platformctl-exporter@core-1":
                users.setdefault(c.get("authorized_user"), []).append(c.get("tls_version"))
print(users)
sys.exit(0 if sorted(users) == ["exporter", "platformctl"]
         and all(len(v) == 1 and v[0] for v in users.values()) else 1)
EOF
  check "dlq-exporter reads WEB_DLQ and API_DLQ only" bash -c \
    "[ \"\$(python3 '$here/dlq_reasons_scrape.py' '$dm' --streams)\" = 'API_DLQ WEB_DLQ' ]"
}

refusal_checks() {
  log "the refusals (nats_probe)"
  local next='{"batch":1,"no_wait":true}' del='{"seq":1}' get='{"seq":1}'
  local all_subjects='{"subjects_filter":">"}'
  # A stream that would capture the replayer's replies (fetched events, visit state, stored ids).
  local capture='{"name":"CAPTURE","subjects":["_INBOX_replayer.>"],"storage":"file","num_replicas":3}'
  local web_dlq_capture='{"name":"WEB_DLQ","subjects":["dlq.web.*","_INBOX_replayer.>"],"retention":"limits","storage":"file","num_replicas":3}'
  local web_events_one='{"name":"WEB_EVENTS","subjects":["web.events.*"],"retention":"workqueue","max_msgs":1,"storage":"file","num_replicas":3}'
  local dlq_consumer='{"stream_name":"WEB_DLQ","config":{"ack_policy":"none","deliver_policy":"all","deliver_subject":"_INBOX_platformctl.probe"}}'
  local queue_consumer='{"stream_name":"WEB_EVENTS","config":{"ack_policy":"explicit","filter_subject":"web.events.*"}}'
  local u st
  # Positive controls: the probe sees an allowed operation as allowed.
  expect allowed replayer "read its own lease" kvget locks replayer
  expect allowed replayer "subscribe to its own inbox" sub '_INBOX_replayer.probe'
  expect allowed metricswriter "read its own lease" kvget locks metricswriter
  expect allowed platformctl "read WEB_DLQ's state" req '$JS.API.STREAM.INFO.WEB_DLQ'
  expect allowed platformctl "erase a message of WEB_DLQ (its job)" req '$JS.API.STREAM.MSG.DELETE.WEB_DLQ' '{"seq":2}'
  expect allowed platformctl "publish to web.events.* (replays)" pub "web.events.$SITE" 'not json' "Nats-Msg-Id=dt$$-replay"
  expect allowed platformctl "read a lease (leaders)" kvget locks replayer
  expect allowed exporter "read WEB_EVENTS's state" req '$JS.API.STREAM.INFO.WEB_EVENTS'
  expect allowed exporter "list API_METRICS's consumers" req '$JS.API.CONSUMER.LIST.API_METRICS'
  expect allowed provisioner "read KV_visit_state's configuration (init)" req '$JS.API.STREAM.INFO.KV_visit_state'
  # What NATS permissions cannot limit (ansible/README.md): a user that may read a stream's
  # state may ask for every subject in it. The operator's `streams` reads every stream.
  expect allowed platformctl "list every visit_state key (STREAM.INFO subjects filter: not expressible)" \
    req '$JS.API.STREAM.INFO.KV_visit_state' "$all_subjects"
  # Nobody gets in without a user of the configuration, even over TLS with a good certificate.
  local anon rc=0
  anon=$(env -i PATH="$PATH" NATS_URL="$NATS_URL" NATS_CA="$RD/tls/ca.pem" \
    NATS_CERT="$RD/tls/edge-client.pem" NATS_KEY="$RD/tls/edge-client-key.pem" \
    "$build/tests/deploy/nats_probe" req '$JS.API.INFO' 2>&1) || rc=$?
  if ((rc != 0)) && grep -qiE 'authorization|authentication' <<<"$anon"; then
    pass "a connection without a user is refused"
  else fail "a connection without a user: exit $rc"; printf '    %s\n' "$anon"; fi
  # Every user: no stream deleted, purged or created to capture another user's replies, no
  # subscription to the shared inbox (the edge's own, which it keeps).
  for u in replayer metricswriter provisioner platformctl exporter edge; do
    expect refused "$u" "create a stream capturing _INBOX_replayer.>" req '$JS.API.STREAM.CREATE.CAPTURE' "$capture"
    expect refused "$u" "delete the stream WEB_EVENTS" req '$JS.API.STREAM.DELETE.WEB_EVENTS'
    expect refused "$u" "purge WEB_EVENTS" req '$JS.API.STREAM.PURGE.WEB_EVENTS'
    expect refused "$u" "purge WEB_DLQ" req '$JS.API.STREAM.PURGE.WEB_DLQ'
    [[ $u == edge ]] || expect refused "$u" "read replies on the shared inbox" sub '_INBOX.>'
  done
  # replayer
  expect refused replayer "publish to API_METRICS" pub api.metrics.tenant-1 '{}'
  expect refused replayer "publish to WEB_EVENTS (the edge's right)" pub "web.events.$SITE" '{}'
  expect refused replayer "publish to API_DLQ" pub dlq.api.tenant-1 '{}'
  expect refused replayer "consume the metricswriter's consumer" req '$JS.API.CONSUMER.MSG.NEXT.API_METRICS.metricswriter' "$next"
  expect refused replayer "create another consumer on WEB_EVENTS" req '$JS.API.CONSUMER.CREATE.WEB_EVENTS' "$queue_consumer"
  expect refused replayer "subscribe to web.events.> around its consumer" sub 'web.events.>'
  expect refused replayer "delete from WEB_EVENTS" req '$JS.API.STREAM.MSG.DELETE.WEB_EVENTS' "$del"
  expect refused replayer "delete from WEB_DLQ" req '$JS.API.STREAM.MSG.DELETE.WEB_DLQ' "$del"
  expect refused replayer "update WEB_DLQ's subjects" req '$JS.API.STREAM.UPDATE.WEB_DLQ' "$web_dlq_capture"
  expect refused replayer "read the metricswriter's lease" kvget locks metricswriter
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
  # provisioner: init's reads, creates and updates on our streams, nothing else.
  expect refused provisioner "read a message of WEB_DLQ" req '$JS.API.STREAM.MSG.GET.WEB_DLQ' "$get"
  expect refused provisioner "delete from WEB_DLQ" req '$JS.API.STREAM.MSG.DELETE.WEB_DLQ' "$del"
  expect refused provisioner "create a consumer on WEB_EVENTS" req '$JS.API.CONSUMER.CREATE.WEB_EVENTS' "$queue_consumer"
  expect refused provisioner "publish to WEB_EVENTS" pub "web.events.$SITE" '{}'
  expect refused provisioner "read visitors' state (visit_state)" kvget visit_state x
  expect refused provisioner "write a lease" pub '$KV.locks.replayer' x
  expect refused provisioner "read the replayer's replies" sub '_INBOX_replayer.>'
  # platformctl, the operator's day-to-day user: no stream changes (so no capture of another
  # user's inbox through a stream's subjects, no max_msgs purge), no consumer on the queues.
  for st in WEB_EVENTS API_METRICS WEB_DLQ API_DLQ KV_locks KV_visit_state KV_replayer_stored KV_dlq_tasks KV_crash_guard; do
    expect refused platformctl "update $st (init is the provisioner's)" req "\$JS.API.STREAM.UPDATE.$st" '{}'
  done
  expect refused platformctl "add _INBOX_replayer.> to WEB_DLQ's subjects" req '$JS.API.STREAM.UPDATE.WEB_DLQ' "$web_dlq_capture"
  expect refused platformctl "set WEB_EVENTS's max_msgs to 1 (a purge in effect)" req '$JS.API.STREAM.UPDATE.WEB_EVENTS' "$web_events_one"
  expect refused platformctl "create a stream of ours (WEB_EVENTS)" req '$JS.API.STREAM.CREATE.WEB_EVENTS' "$web_events_one"
  expect refused platformctl "delete the stream WEB_DLQ" req '$JS.API.STREAM.DELETE.WEB_DLQ'
  expect refused platformctl "remove a replica of WEB_DLQ (dlq rebuild is the provisioner's)" req '$JS.API.STREAM.PEER.REMOVE.WEB_DLQ' '{"peer":"nats-1"}'
  expect refused platformctl "purge API_DLQ" req '$JS.API.STREAM.PURGE.API_DLQ'
  expect refused platformctl "consume the replayer's consumer" req '$JS.API.CONSUMER.MSG.NEXT.WEB_EVENTS.replayer' "$next"
  expect refused platformctl "consume the metricswriter's consumer" req '$JS.API.CONSUMER.MSG.NEXT.API_METRICS.metricswriter' "$next"
  expect refused platformctl "create a consumer on WEB_EVENTS (read queued events)" req '$JS.API.CONSUMER.CREATE.WEB_EVENTS' "$queue_consumer"
  # (platformctl may read, delete and dead-letter one held message of a work queue: queue move.)
  expect refused platformctl "write a lease" pub '$KV.locks.replayer' x
  expect refused platformctl "read visitors' state (visit_state)" kvget visit_state x
  expect refused platformctl "read a stored event id (replayer_stored)" kvget replayer_stored x
  expect refused platformctl "read the replayer's replies (visit state, stored ids)" sub '_INBOX_replayer.>'
  # exporter: the four queues' state and consumers, nothing else.
  expect refused exporter "list every visit_state key (STREAM.INFO on KV_visit_state)" req '$JS.API.STREAM.INFO.KV_visit_state' "$all_subjects"
  expect refused exporter "list every stored event id (STREAM.INFO on KV_replayer_stored)" req '$JS.API.STREAM.INFO.KV_replayer_stored' "$all_subjects"
  expect refused exporter "read the stream names" req '$JS.API.STREAM.NAMES'
  expect refused exporter "read a redrive task (dlq_tasks)" kvget dlq_tasks deploy-redrive
  expect refused replayer "write a redrive task (dlq_tasks)" pub '$KV.dlq_tasks.deploy-redrive' x
  expect refused provisioner "read a redrive task (dlq_tasks)" kvget dlq_tasks deploy-redrive
  # crash_guard: each service its own markers only (a planted marker would dead-letter a message).
  expect refused replayer "write the metricswriter's crash-loop marker" pub '$KV.crash_guard.metricswriter.1' x
  expect refused metricswriter "write the replayer's crash-loop marker" pub '$KV.crash_guard.replayer.1' x
  expect refused platformctl "write a crash-loop marker" pub '$KV.crash_guard.replayer.1' x
  expect refused edge "write a crash-loop marker" pub '$KV.crash_guard.replayer.1' x
  expect refused exporter "read a dead letter" req '$JS.API.STREAM.MSG.GET.WEB_DLQ' "$get"
  expect refused exporter "create a consumer on WEB_DLQ" req '$JS.API.CONSUMER.CREATE.WEB_DLQ' "$dlq_consumer"
  expect refused exporter "create a named consumer on WEB_DLQ" req '$JS.API.CONSUMER.CREATE.WEB_DLQ.probe' "$dlq_consumer"
  expect refused exporter "update WEB_EVENTS" req '$JS.API.STREAM.UPDATE.WEB_EVENTS' "$web_events_one"
  expect refused exporter "publish to WEB_EVENTS" pub "web.events.$SITE" '{}'
  expect refused exporter "consume the replayer's consumer" req '$JS.API.CONSUMER.MSG.NEXT.WEB_EVENTS.replayer' "$next"
  expect refused exporter "read a lease" kvget locks replayer
  # edge
  expect refused edge "consume the replayer's consumer" req '$JS.API.CONSUMER.MSG.NEXT.WEB_EVENTS.replayer' "$next"
  expect refused edge "publish to WEB_DLQ" pub "dlq.web.$SITE" '{}'
  expect refused edge "read stream state" req '$JS.API.STREAM.INFO.WEB_EVENTS'
  expect refused edge "subscribe to web.events.>" sub 'web.events.>'
  expect refused edge "read the replayer's replies" sub '_INBOX_replayer.>'
  # The services kept running meanwhile: every refusal the servers logged was the probe's. A
  # violation's log line names the connection by its id (cid:N) in every version, its client's
  # name not in all (2.10.27 leaves it out): the node's /connz (closed connections too) names
  # the client of that id.
  local i h out
  for i in 1 2 3; do
    h=$(cut -d' ' -f$i <<<"$NATS_HTTP_PORTS")
    if out=$(python3 "$here/violations.py" "$work/nats-$i.log" "http://127.0.0.1:$h" nats_probe 2>&1)
    then pass "nats-$i: every violation it logged came from nats_probe ($out)"
    else fail "nats-$i: violations by the services or platformctl"; printf '%s\n' "$out" | head -20; fi
  done
}

# TLS as rendered: plain clients and routes are refused, so are a TLS client or route without a
# certificate of the operator's CA (the test inventory asks clients for one too); the cluster's
# routes are up, which they can only be over mutual TLS.
tls_checks() {
  log "TLS (tls_probe.py)"
  local t="$RD/tls" i n c h
  n=$(cut -d' ' -f1 <<<"$NATS_PORTS")
  c=$(cut -d' ' -f1 <<<"$NATS_CLUSTER_PORTS")
  local edge=(-- edge "$EDGE_PASSWORD") good=("$t/edge-client.pem" "$t/edge-client-key.pem")
  local other=("$t/other-client.pem" "$t/other-client-key.pem")
  tls_expect accepted "a client with TLS, a CA certificate and its user" tls 127.0.0.1 "$n" "$t/ca.pem" "${good[@]}" "${edge[@]}"
  tls_expect refused "a plain client (user and password in clear)" plain 127.0.0.1 "$n" "${edge[@]}"
  tls_expect refused "a TLS client without a certificate" tls 127.0.0.1 "$n" "$t/ca.pem" "${edge[@]}"
  tls_expect refused "a TLS client with another CA's certificate" tls 127.0.0.1 "$n" "$t/ca.pem" "${other[@]}" "${edge[@]}"
  tls_expect accepted "a route with TLS and a node's certificate (handshake)" route-tls 127.0.0.1 "$c" "$t/ca.pem" "$t/nats-2.pem" "$t/nats-2-key.pem"
  tls_expect refused "a plain route (the route password in clear)" route-plain 127.0.0.1 "$c"
  tls_expect refused "a TLS route without a certificate" route-tls 127.0.0.1 "$c" "$t/ca.pem"
  tls_expect refused "a TLS route with another CA's certificate" route-tls 127.0.0.1 "$c" "$t/ca.pem" "${other[@]}"
  # Clients learn the other servers from the cluster: their own addresses (client_advertise),
  # which the certificates name, not every interface of the host (a reconnect to one of those
  # would fail the certificate check).
  local info urls
  info=$(python3 "$here/tls_probe.py" tls 127.0.0.1 "$n" "$t/ca.pem" "${good[@]}" "${edge[@]}" 2>&1) || true
  urls=$(sed -n 's/.* connect_urls=\([^ ]*\).*/\1/p' <<<"$info" | tr ',' '\n')
  if [[ -n $urls ]] && ! grep -qv '^127\.0\.0\.1:' <<<"$urls"; then
    pass "clients learn only the nodes' advertised addresses ($(tr '\n' ' ' <<<"$urls"))"
  else fail "the servers advertise other client addresses"; printf '    %s\n' "$info"; fi
  # A route is up to the other two nodes, by their server ids (/varz), however many connections
  # a version keeps to each (2.10 and later pool them: several per peer).
  local mons=()
  for i in 1 2 3; do mons+=("http://127.0.0.1:$(cut -d' ' -f$i <<<"$NATS_HTTP_PORTS")"); done
  for i in 1 2 3; do
    check "nats-$i has routes to the 2 other nodes (mutual TLS)" \
      python3 "$here/routes_to.py" "${mons[@]:i-1:1}" "${mons[@]:0:i-1}" "${mons[@]:i}"
  done
  # nats.c (what the services use) refuses a server whose certificate it cannot verify.
  local out rc=0
  out=$(env -i PATH="$PATH" NATS_URL="$NATS_URL" NATS_CA="$t/other-ca.pem" NATS_USER=edge \
    NATS_PASSWORD="$EDGE_PASSWORD" NATS_CERT="${good[0]}" NATS_KEY="${good[1]}" \
    "$build/tests/deploy/nats_probe" req '$JS.API.INFO' 2>&1) || rc=$?
  if ((rc == 1)) && grep -qi 'ssl' <<<"$out"; then
    pass "a client that trusts another CA does not connect (nats.c verifies the servers)"
  else fail "a client trusting another CA: exit $rc"; printf '    %s\n' "$out"; fi
}

# tls_expect accepted|refused DESCRIPTION TLS-PROBE-ARGS...
tls_expect() {
  local want=$1 what=$2 rc=0 out got=other; shift 2
  out=$(python3 "$here/tls_probe.py" "$@" 2>&1) || rc=$?
  ((rc == 0)) && got=accepted
  ((rc == 10)) && got=refused
  if [[ $got == "$want" ]]; then pass "TLS: $what: $want"
  else fail "TLS: $what: expected $want, got $got"; printf '    %s\n' "$out"; fi
}

prometheus_scrape_checks() {
  local base="http://127.0.0.1:$PROM_PORT"
  wait_for 30 "Prometheus (rendered scrape config) is ready" curl -fsS -m 2 "$base/-/ready"
  ((waited_ok)) || return 0
  # Enough scrapes (1 s apart) for the rates and windows of the rules to have two samples.
  wait_for 30 "Prometheus scraped every target at least 5 times" bash -c "
    curl -fsS -m 2 '$base/api/v1/query?query=min(count_over_time(up%5B1m%5D))%20%3E%3D%205' | grep -q '\"result\":\[{'"
  if python3 "$here/check_prometheus.py" "$base" "$R/mon-1/prometheus/core-alerts.yml" 4 \
    >"$work/prometheus-check.log" 2>&1; then
    pass "every target up, rules healthy, every metric and alert expression resolves to a series"
  else
    fail "Prometheus against the rules"
  fi
  sed 's/^/    /' "$work/prometheus-check.log"
}

stack_checks() {
  for tool in "$NATS_SERVER" prometheus psql curl; do
    command -v "$tool" >/dev/null || die "$tool not installed (scripts/install-deps)"
  done
  for b in platformctl/platformctl replayer/replayer metricswriter/metricswriter bench/webgen \
           tests/deploy/nats_probe tests/test_stack_tool; do
    [[ -x "$build/$b" ]] || die "$build/$b is not built"
  done
  local port
  for port in $NATS_PORTS $NATS_CLUSTER_PORTS $NATS_HTTP_PORTS $REPLAYER_PORT $METRICSWRITER_PORT \
              $EXPORTER_PORT $DLQ_EXPORTER_PORT $PROM_PORT $PG_PORT; do
    ! ss -Htln | awk '{print $4}' | grep -qE ":$port\$" ||
      die "port $port, free when the roles were rendered, is in use now: render again"
  done
  log "PostgreSQL (port $PG_PORT) and Umami from test_stack_tool, in the background"
  "$build/tests/test_stack_tool" --pg-port "$PG_PORT" --env-file "$work/stack.env" \
    >"$work/stack.log" 2>&1 &
  local stack_pid=$!
  pids+=("$stack_pid")  # stopped last by cleanup (SIGTERM: the tool stops its servers)
  # A fresh JetStream store (the one the rendered configuration names), even when run twice.
  local store
  while read -r store; do
    [[ "$store" == "$RD"/* ]] || die "unexpected JetStream store $store (not under $RD)"
    rm -rf "$store"
  done < <(sed -n 's/^ *store_dir: "\(.*\)"$/\1/p' "$R"/nats-*/nats/nats-server.conf)
  NATS_URL=$(grep '^NATS_URL=' "$R/core-1/core/env/replayer.env" | cut -d= -f2-)
  EDGE_PASSWORD=$(sed -n '/user: "edge"/{n;s/.*password: "\(.*\)"/\1/p}' "$R/nats-1/nats/nats-server.conf")
  start_nats || die "the NATS cluster did not come up; see $work/nats-*.log"
  # The tool writes its env file once both servers answer, or exits with the reason.
  while [[ ! -s "$work/stack.env" ]] && kill -0 "$stack_pid" 2>/dev/null; do sleep 0.2; done
  [[ -s "$work/stack.env" ]] || { tail -20 "$work/stack.log"; die "test_stack_tool failed"; }
  UMAMI_URLS=$(grep '^UMAMI_URLS=' "$work/stack.env" | cut -d= -f2-)
  pass "PostgreSQL and Umami up ($UMAMI_URLS)"
  tls_checks
  job_checks
  refusal_checks
  prometheus_scrape_checks
  dashboard_query_checks
  fill_checks
  reply_checks
}
