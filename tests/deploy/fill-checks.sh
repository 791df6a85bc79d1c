# shellcheck shell=bash
# shellcheck disable=SC2154  # work, build, R, pids, SITE, UMAMI_URLS and the ports come from deploy-test.sh
# shellcheck disable=SC2016  # '$KV...' are NATS subjects, not expansions
# The storage limits in the deploy test (sourced by deploy-test.sh): limits_checks, called by
# render_checks, adds up the rendered numbers; fill_checks, called at the end of stack_checks,
# fills WEB_EVENTS. The test inventory gives WEB_EVENTS a limit of 256 KiB (deploy-test.sh,
# core_stream_limits_env), which platformctl init set. With the replayer stopped, the edge user
# fills WEB_EVENTS until JetStream refuses it: the refusal reaches the edge in words, nothing
# stored is lost, both services' leases keep being renewed (locks has room of its own), and once
# the replayer runs again WEB_EVENTS drains into Umami and the edge publishes again.

# The storage limits add up (docs/contract.md §2): the streams' and buckets' max_bytes that
# platformctl init gets (the provision environment; the operator's platformctl has the same, so
# its init --dry-run agrees), plus the fixed buckets of common/topology.h, times the replicas,
# fit the account's max_file; one replica of each fits a node's max_file_store.
limits_checks() {
  check "storage limits: streams and buckets x replicas fit the account's max_file" python3 - \
    "$R/nats-1/nats/nats-server.conf" "$R/core-1/core/env" "$src/common/topology.h" <<'EOF'
import re, sys
conf, envdir, topo = sys.argv[1], sys.argv[2], open(sys.argv[3]).read()
def size(text):  # nats-server's units (conf/parse.go): k = 1000, kb/ki/kib = 1024, ...
    m = re.fullmatch(r"(\d+)\s*([a-zA-Z]*)", text.strip().strip('"'))
    n, unit = int(m.group(1)), m.group(2).lower()
    for i, p in enumerate("kmgtpe", 1):
        if unit == p: return n * 1000 ** i
        if unit in (p + "b", p + "i", p + "ib"): return n * 1024 ** i
    assert unit in ("", "b"), unit
    return n
def env(name):
    return dict(l.split("=", 1) for l in open(f"{envdir}/{name}.env").read().splitlines()
                if l and not l.startswith("#"))
text = open(conf).read()
acc = re.search(r"jetstream \{ max_file: (\S+), max_mem: (\S+), max_bytes_required: (\w+) \}", text)
node = size(re.search(r"^  max_file_store: (\S+)$", text, re.M).group(1))
prov, ctl = env("provision"), env("platformctl")
names = ["WEB_EVENTS", "API_METRICS", "WEB_DLQ", "API_DLQ", "VISIT_STATE", "STORED_IDS"]
if not acc:
    sys.exit("no account jetstream block with max_file, max_mem, max_bytes_required")
problems = []
max_file = size(acc.group(1))
limits = {n: size(prov[n + "_MAX_BYTES"]) for n in names}
for n in names:
    if ctl.get(n + "_MAX_BYTES") != prov[n + "_MAX_BYTES"]:
        problems.append(f"platformctl.env {n}_MAX_BYTES differs from provision.env")
fixed = {m.group(1): int(m.group(2)) << int(m.group(3)) for m in re.finditer(
    r"k(\w+)MaxBytes = int64_t\{(\d+)\} << (\d+);", topo)}
replicas = int(prov["STREAM_REPLICAS"])
per_replica = sum(limits.values()) + sum(fixed.values())
print(f"streams and buckets {limits}, fixed buckets {fixed}: {per_replica} bytes per replica,"
      f" x {replicas} = {per_replica * replicas} <= account max_file {max_file}"
      f" (room {max_file - per_replica * replicas}); per node {per_replica} <= {node}")
if len(fixed) != 3: problems.append(f"fixed bucket limits not found in topology.h: {fixed}")
if per_replica * replicas > max_file: problems.append("the account cannot hold the limits")
if per_replica > node: problems.append("a node's max_file_store cannot hold one replica of each")
if acc.group(3) != "true": problems.append("max_bytes_required is not true")
print("\n".join(problems) or "ok")
sys.exit(1 if problems else 0)
EOF
  # The roles' defaults (what production gets) add up too, not only the test inventory's.
  check "storage limits: the roles' defaults x STREAM_REPLICAS fit nats_account_max_file" \
    python3 - "$src/ansible/roles" "$src/common/topology.h" <<'EOF'
import re, sys, yaml
roles, topo = sys.argv[1], open(sys.argv[2]).read()
core = yaml.safe_load(open(f"{roles}/core/defaults/main.yml"))
nats = yaml.safe_load(open(f"{roles}/nats/defaults/main.yml"))
units = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "GB": 1 << 30, "TiB": 1 << 40}
def size(t):
    m = re.fullmatch(r"(\d+)([A-Za-z]*)", str(t))
    return int(m.group(1)) * units.get(m.group(2), 1)
fixed = sum(int(a) << int(b) for a, b in re.findall(r"k\w+MaxBytes = int64_t\{(\d+)\} << (\d+);", topo))
per_replica = sum(size(v) for v in core["core_stream_limits_env"].values()) + fixed
replicas = int(core["core_common_env"]["STREAM_REPLICAS"])
account, node = size(nats["nats_account_max_file"]), size(nats["nats_jetstream_max_file_store"])
print(f"{per_replica / 2**30:.2f} GiB per replica x {replicas} = {per_replica * replicas / 2**30:.2f} GiB"
      f" <= {account / 2**30:.2f} GiB; per node <= {node / 2**30:.2f} GiB")
sys.exit(0 if per_replica * replicas <= account and per_replica <= node else 1)
EOF
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

# lease_revision_reaches SERVICE N: its lease's revision is N or more.
lease_revision_reaches() {
  local r
  r=$(lease_revision "$1")
  [[ -n $r ]] && ((r >= $2))
}

both_lead() { [[ -n $(lease_revision replayer) && -n $(lease_revision metricswriter) ]]; }

fill_checks() {
  log "storage limits: WEB_EVENTS filled through the edge user"
  local rm="http://127.0.0.1:$REPLAYER_PORT/metrics" mm="http://127.0.0.1:$METRICSWRITER_PORT/metrics"
  local em="http://127.0.0.1:$EXPORTER_PORT/metrics"
  wait_for 10 "exporter: WEB_EVENTS's limit is the rendered 256 KiB (jetstream_stream_max_bytes)" \
    bash -c "curl -fsS -m 2 $em | grep -qx 'jetstream_stream_max_bytes{stream=\"WEB_EVENTS\"} 262144'"
  wait_for 20 "WEB_EVENTS is empty before the fill" web_events_holds 0
  [[ -n ${pid_of[replayer]:-} ]] || { fail "no running replayer to stop"; return 0; }
  stop replayer
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
  # The burst's refusals can come before the stream is full: a clustered stream counts the bytes
  # of writes proposed but not yet applied against max_bytes (2.10 and later; more of them when
  # every write is synced), so room may be left. Small bursts of 20 fill it until one stores
  # nothing.
  local more i
  for ((i = 0; i < 40; i++)); do
    rc=0
    out=$(as edge "$build/bench/webgen" --count 20 --visitors 5 --sites "$SITE" \
      --prefix "fill$$-$i" 2>&1) || rc=$?
    # "published 20 in ... s" when every one was stored (exit 0), else "published 20: S stored,
    # R refused" (exit 1).
    more=$(sed -n -e 's/^published 20: \([0-9]*\) stored, [0-9]* refused$/\1/p' \
      -e 's/^published 20 in .*/20/p' <<<"$out")
    [[ -n $more ]] || { fail "edge tops WEB_EVENTS up (webgen exit $rc)"; printf '    %s\n' "$out"; return 0; }
    stored=$((stored + more))
    ((more > 0)) || break
  done
  if ((more == 0)); then pass "edge tops WEB_EVENTS up to full: $stored stored, in $i bursts of 20"
  else fail "WEB_EVENTS still takes events after 40 bursts of 20 ($stored stored)"; fi
  # 4 KiB: more than the room one refused event leaves (events are about 550 bytes stored).
  check_out "edge: a 4 KiB publish to the full WEB_EVENTS is answered with JetStream's 10077" \
    '"err_code":10077' as edge "$build/tests/deploy/nats_probe" pub "web.events.$SITE" \
    "$(head -c 4096 /dev/zero | tr '\0' x)" "Nats-Msg-Id=fill$$-probe"
  check "nothing stored is lost: WEB_EVENTS holds the $stored stored, within 256 KiB" \
    web_events_holds "$stored" 262144

  # The leases: locks has room of its own, so the metricswriter keeps renewing (every 5 s).
  # Two renewals, not one write that slipped in: the lease keeps moving while the stream is full.
  local rev1
  rev1=$(lease_revision metricswriter)
  if [[ -n $rev1 ]]; then
    wait_for 20 "while WEB_EVENTS is full the metricswriter renews its lease twice (from revision $rev1)" \
      lease_revision_reaches metricswriter $((rev1 + 2))
  else fail "the metricswriter holds no lease while WEB_EVENTS is full"; fi
  check "metricswriter_leader stays 1 while WEB_EVENTS is full" bash -c \
    "curl -fsS -m 2 $mm | grep -qx 'metricswriter_leader 1'"
  check "WEB_EVENTS still holds $stored after those renewals (discard new: none dropped)" \
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
