# shellcheck shell=bash
# shellcheck disable=SC2154  # work, build, R, pids, SITE, UMAMI_URLS and the ports come from deploy-test.sh
# shellcheck disable=SC2016  # '$KV...' are NATS subjects, not expansions
# The storage-limit half of the stack test (sourced by deploy-test.sh; called at the end of
# stack_checks). The test inventory gives WEB_EVENTS a limit of 256 KiB (deploy-test.sh,
# core_stream_limits_env), which platformctl init set. With the replayer stopped, the edge user
# fills WEB_EVENTS until JetStream refuses it: the refusal reaches the edge in words, nothing
# stored is lost, both services' leases keep being renewed (locks has room of its own), and once
# the replayer runs again WEB_EVENTS drains into Umami and the edge publishes again.

# service_pid PATH: the pid in `pids` running the binary PATH ("" when none).
service_pid() {
  local p
  for p in "${pids[@]}"; do
    [[ $(readlink "/proc/$p/exe" 2>/dev/null) == "$1" ]] && { echo "$p"; return; }
  done
}

# web_events FIELD: WEB_EVENTS's messages or bytes, read by the operator's platformctl.
web_events() {
  as platformctl "$build/platformctl/platformctl" streams --interval 0 --stream WEB_EVENTS --json |
    python3 -c "import json,sys; print(json.load(sys.stdin)['streams'][0]['$1'])"
}

# web_events_holds N [MAX-BYTES]: WEB_EVENTS holds exactly N messages (in at most MAX-BYTES).
web_events_holds() {
  [[ $(web_events messages) == "$1" ]] && { [[ -z ${2:-} ]] || (($(web_events bytes) <= $2)); }
}

# stored_at_least URL N: the replayer at URL counts at least N events stored in Umami.
stored_at_least() {
  local n
  n=$(curl -fsS -m 2 "$1" | awk '$1=="replayer_events_stored_total"{print $2}')
  [[ -n $n ]] && ((${n%.*} >= $2))
}

# lease_revision SERVICE: the revision of the service's lease key (platformctl leaders).
lease_revision() {
  as platformctl "$build/platformctl/platformctl" leaders --json | python3 -c "
import json, sys
for l in json.load(sys.stdin)['leaders']:
    if l['service'] == '$1' and l['leader']: print(l['leader']['revision'])"
}

both_lead() { [[ -n $(lease_revision replayer) && -n $(lease_revision metricswriter) ]]; }

fill_checks() {
  log "storage limits: WEB_EVENTS filled through the edge user"
  local rm="http://127.0.0.1:$REPLAYER_PORT/metrics" mm="http://127.0.0.1:$METRICSWRITER_PORT/metrics"
  local em="http://127.0.0.1:$EXPORTER_PORT/metrics"
  wait_for 10 "exporter: WEB_EVENTS's limit is the rendered 256 KiB (jetstream_stream_max_bytes)" \
    bash -c "curl -fsS -m 2 $em | grep -qx 'jetstream_stream_max_bytes{stream=\"WEB_EVENTS\"} 262144'"
  wait_for 20 "WEB_EVENTS is empty before the fill" web_events_holds 0
  local replayer pid
  replayer=$(readlink -f "$build/replayer/replayer")
  pid=$(service_pid "$replayer")
  [[ -n $pid ]] || { fail "no running replayer to stop"; return 0; }
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null || true
  # Out of `pids`: the cleanup must not signal whatever takes the number later.
  local -a alive=() p
  for p in "${pids[@]}"; do [[ $p == "$pid" ]] || alive+=("$p"); done
  pids=("${alive[@]}")
  pass "replayer stopped (SIGTERM): nothing drains WEB_EVENTS"

  # The edge publishes 1,500 events of about 400 bytes into 256 KiB.
  local out rc=0 stored refused
  out=$(as edge "$build/bench/webgen" --count 1500 --visitors 50 --sites "$SITE" --prefix "fill$$" 2>&1) || rc=$?
  stored=$(sed -n 's/^published 1500: \([0-9]*\) stored, \([0-9]*\) refused$/\1/p' <<<"$out")
  refused=$(sed -n 's/^published 1500: \([0-9]*\) stored, \([0-9]*\) refused$/\2/p' <<<"$out")
  if ((rc == 1)) && [[ -n $stored ]] && ((stored > 100 && refused > 0)) &&
    grep -q "publishes refused: async publish refused, the stream is full: maximum bytes exceeded" <<<"$out"; then
    pass "edge fills WEB_EVENTS: $stored stored, $refused refused with a clear reason (webgen exit 1)"
  else
    fail "edge fills WEB_EVENTS (webgen exit $rc)"; printf '    %s\n' "$out"; return 0
  fi
  printf '    %s\n' "${out//$'\n'/$'\n    '}"
  # 4 KiB: more than the room one refused event leaves (events are about 550 bytes stored).
  check_out "edge: a 4 KiB publish to the full WEB_EVENTS is answered with JetStream's 10077" \
    '"err_code":10077' as edge "$build/tests/deploy/nats_probe" pub "web.events.$SITE" \
    "$(head -c 4096 /dev/zero | tr '\0' x)" "Nats-Msg-Id=fill$$-probe"
  check "nothing stored is lost: WEB_EVENTS holds the $stored stored, within 256 KiB" \
    web_events_holds "$stored" 262144

  # The leases: locks has room of its own, so the metricswriter keeps renewing (every 5 s).
  local rev1 rev2
  rev1=$(lease_revision metricswriter)
  sleep 12
  rev2=$(lease_revision metricswriter)
  if [[ -n $rev1 && -n $rev2 ]] && ((rev2 > rev1)); then
    pass "while WEB_EVENTS is full the metricswriter renews its lease (revision $rev1 -> $rev2)"
  else fail "metricswriter lease renewals while full (revision '$rev1' -> '$rev2')"; fi
  check "metricswriter_leader stays 1 while WEB_EVENTS is full" bash -c \
    "curl -fsS -m 2 $mm | grep -qx 'metricswriter_leader 1'"
  check "WEB_EVENTS still holds $stored after 12 s full (discard new: none dropped)" \
    web_events_holds "$stored"
  local prom="http://127.0.0.1:$PROM_PORT/api/v1/alerts"
  wait_for 20 "Prometheus: StreamNearlyFull is pending or firing for WEB_EVENTS (the rendered rule)" \
    bash -c "curl -fsS -m 2 $prom | python3 -c \"import json,sys; sys.exit(not any(a['labels'].get('alertname') == 'StreamNearlyFull' and a['labels'].get('stream') == 'WEB_EVENTS' for a in json.load(sys.stdin)['data']['alerts']))\""

  # Room returns: the replayer, started again as before, takes its lease (a KV create in locks)
  # and drains WEB_EVENTS into Umami; the edge publishes again.
  start replayer-after-fill "$R/core-1/core/env/replayer.env" "UMAMI_URLS=$UMAMI_URLS" -- \
    "$build/replayer/replayer"
  wait_for 30 "replayer started again leads (replayer_leader 1: its lease written while full)" \
    bash -c "curl -fsS -m 2 $rm | grep -qx 'replayer_leader 1'"
  wait_for 180 "WEB_EVENTS drains: the replayer stores the $stored events in Umami" \
    stored_at_least "$rm" "$stored"
  wait_for 10 "WEB_EVENTS is empty after the drain" web_events_holds 0
  check_out "edge publishes again once WEB_EVENTS has room (20 events, none refused)" \
    "published 20 in" as edge "$build/bench/webgen" --count 20 --visitors 5 --sites "$SITE" \
    --prefix "after$$"
  check "platformctl leaders: both services lead after the fill" both_lead
}
