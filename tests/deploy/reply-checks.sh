# shellcheck shell=bash
# shellcheck disable=SC2154  # build, SITE and the ports come from deploy-test.sh and stack-checks.sh
# shellcheck disable=SC2016  # '$JS.API...' and '$KV...' are NATS subjects, not expansions
# Reply subjects (issue 35), the last part of deploy-test.sh's stack mode (sourced; uses its
# helpers and stack-checks.sh's). JetStream publishes a publish's ack, and an API request's
# answer, to whatever reply subject the client named, with no permission check. Every user, on
# every node, names every protected subject as the reply of what it may publish or request; no
# stream or bucket may change but by the publishes themselves.

STREAMS=(WEB_EVENTS API_METRICS WEB_DLQ API_DLQ KV_locks KV_visit_state KV_replayer_stored
         KV_dlq_tasks KV_crash_guard)

# stream_seqs: each stream's and bucket's last sequence, one "NAME SEQ" line each, read as
# platformctl (the one user that may read all nine).
stream_seqs() {
  as platformctl "$build/tests/deploy/nats_probe" reqs "${STREAMS[@]/#/\$JS.API.STREAM.INFO.}" |
    python3 -c 'import json,sys
names = sys.argv[1:]
for line in sys.stdin:
    if line.startswith("reply: "):
        print(names.pop(0), json.loads(line[7:])["state"]["last_seq"])
for n in names:
    print(n, "unreadable")' "${STREAMS[@]}"
}

# seq_diff WANT-ARRAY-NAME: the streams whose last sequence is not the one WANT holds.
seq_diff() {
  local -n w=$1
  local st seq
  while read -r st seq; do
    [[ $seq == "${w[$st]:-}" ]] || echo "$st: last_seq $seq, expected ${w[$st]:-?}"
  done < <(stream_seqs)
}

# settled_diff WANT-ARRAY-NAME: seq_diff once JetStream has had time to answer: read until
# equal (at most 3 s), then once more 1 s later (an answer still on its way shows then).
settled_diff() {
  local deadline=$((SECONDS + 3)) d
  while :; do
    d=$(seq_diff "$1")
    if [[ -z $d ]]; then
      sleep 1
      d=$(seq_diff "$1")
      break
    fi
    ((SECONDS < deadline)) || break
    sleep 0.5
  done
  printf '%s' "$d"
}

reply_checks() {
  log "reply subjects naming protected subjects (nats_probe reply), on each node"
  # Nothing else writes meanwhile.
  stop replayer; stop replayer-after-fill; stop metricswriter; stop exporter
  local -a protected=(
    '$KV.locks.replayer' '$KV.locks.metricswriter' '$KV.crash_guard.replayer.1'
    '$KV.crash_guard.metricswriter.1' '$KV.visit_state.probe' '$KV.replayer_stored.probe'
    '$KV.dlq_tasks.probe' "dlq.web.$SITE" dlq.api.tenant-1 "web.events.$SITE"
    api.metrics.tenant-1 '$JS.API.STREAM.PURGE.WEB_EVENTS' '$JS.API.STREAM.DELETE.API_DLQ'
    '$JS.API.STREAM.MSG.DELETE.WEB_DLQ' '$JS.API.CONSUMER.DELETE.WEB_EVENTS.replayer'
    '$JS.API.STREAM.UPDATE.WEB_EVENTS')
  local n=${#protected[@]}
  # USER SUBJECT STREAM-IT-STORES-IN (- for an API request): what each user may publish or ask.
  local -a attacks=(
    "edge web.events.$SITE WEB_EVENTS" "edge api.metrics.tenant-1 API_METRICS"
    'replayer $JS.API.STREAM.INFO.KV_visit_state -' 'replayer $KV.visit_state.probe KV_visit_state'
    'metricswriter $JS.API.STREAM.INFO.KV_locks -' 'metricswriter $KV.locks.metricswriter KV_locks'
    'provisioner $JS.API.STREAM.INFO.WEB_EVENTS -'
    'platformctl $JS.API.STREAM.INFO.WEB_DLQ -' "platformctl web.events.$SITE WEB_EVENTS"
    'exporter $JS.API.STREAM.INFO.WEB_EVENTS -')
  local a user subject target out rc diff port changed url_scheme
  url_scheme=${NATS_URL%%://*}
  declare -A want=()
  while read -r st seq; do want[$st]=$seq; done < <(stream_seqs)
  for a in "${attacks[@]}"; do
    read -r user subject target <<<"$a"
    # On each node: where JetStream answers and where the asker is connected decide the path.
    for port in $NATS_PORTS; do
      rc=0
      out=$(as "$user" env NATS_URL="$url_scheme://127.0.0.1:$port" \
        "$build/tests/deploy/nats_probe" reply "$subject" '{}' "${protected[@]}" 2>&1) || rc=$?
      if ((rc != 0)); then
        fail "$user: publish to $subject (node port $port) naming protected replies: exit $rc"
        printf '    %s\n' "$out"
        continue
      fi
      [[ $target == - ]] || want[$target]=$((want[$target] + n))
    done
    diff=$(settled_diff want)
    if [[ -z $diff ]]; then
      pass "$user: $subject on 3 nodes naming $n protected subjects as reply: no stream or bucket changed$([[ $target == - ]] || echo " but $target by the publishes")"
      continue
    fi
    fail "$user: $subject naming $n protected subjects as reply: JetStream wrote its answers"
    printf '    %s\n' "$diff"
    while IFS=: read -r changed _; do
      as platformctl "$build/tests/deploy/nats_probe" req "\$JS.API.STREAM.INFO.$changed" \
        '{"subjects_filter":">"}' | sed -n 's/.*"subjects":\({[^}]*}\).*/    subjects now: \1/p'  | cut -c1-400
    done <<<"$diff"
    while read -r st seq; do want[$st]=$seq; done < <(stream_seqs)
  done
}
