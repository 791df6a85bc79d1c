# shellcheck shell=bash
# shellcheck disable=SC2154  # work, src, here, build, R, RD and the ports come from deploy-test.sh
# The render half of deploy-test.sh (sourced; uses its helpers and variables).

lint_checks() {
  log "ansible-lint and the syntax check"
  check "ansible-lint is clean" \
    env ANSIBLE_HOME="$work/ansible-home" ANSIBLE_LOCAL_TEMP="$work/ansible-tmp" \
    bash -c "cd '$src/ansible' && ansible-lint --offline -q --nocolor"
  check "ansible-playbook --syntax-check (example inventory)" \
    env ANSIBLE_HOME="$work/ansible-home" ANSIBLE_LOCAL_TEMP="$work/ansible-tmp" \
    bash -c "cd '$src/ansible' && ansible-playbook -i inventory/example site.yml --syntax-check"
  # Without their secrets (the example inventory has no vault.yml) the roles write nothing.
  local out rc=0
  out=$(cd "$src/ansible" && ANSIBLE_HOME="$work/ansible-home" ANSIBLE_LOCAL_TEMP="$work/ansible-tmp" \
    ansible-playbook -i inventory/example site.yml --limit core-1 -e ansible_connection=local \
    -e deploy_become=false -e core_manage_services=false -e core_root="$work/no-secrets" 2>&1) ||
    rc=$?
  if ((rc != 0)) && grep -q 'ansible-vault' <<<"$out" && [[ ! -e "$work/no-secrets/env" ]]; then
    pass "without the vault's secrets the roles stop before writing anything"
  else
    fail "the core role ran without secrets (exit $rc)"; tail -5 <<<"$out"
  fi
  # Secrets come from variables: no YAML file of ansible/ (but the *.example placeholders) gives
  # a password, secret or database URL a literal value; only variable references.
  check "no secret value in ansible/ (only variable references)" python3 - "$src/ansible" <<'EOF'
import pathlib, re, sys, yaml
secret = re.compile(r"(password|secret|database_url)", re.I)
leaks = []
def walk(node, path, f, inside):
    # inside: a key on the way here names a secret (nats_passwords: {replayer: ...}).
    if isinstance(node, dict):
        for k, v in node.items():
            walk(v, f"{path}.{k}", f, inside or bool(secret.search(str(k))))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            walk(v, f"{path}[{i}]", f, inside)
    elif inside and node is not None and "{{" not in str(node):
        leaks.append(f"{f}: {path} = {node!r}")
for f in pathlib.Path(sys.argv[1]).rglob("*.yml"):
    for doc in yaml.safe_load_all(f.read_text()):
        walk(doc, "", f, False)
print("\n".join(leaks) or "none")
sys.exit(1 if leaks else 0)
EOF
}

compose_checks() {
  local dir="$R/core-1/core"
  check "docker-compose config accepts the core compose file" \
    bash -c "cd '$dir' && docker-compose config -q"
  (cd "$dir" && docker-compose config) >"$work/compose-normalised.yml" 2>&1 ||
    { fail "docker-compose config"; return; }
  check "compose: services, healthchecks, restarts, limits, log rotation, env files" \
    python3 - "$work/compose-normalised.yml" "$dir" <<'EOF'
import sys, yaml
cfg = yaml.safe_load(open(sys.argv[1]))
env_dir = sys.argv[2] + "/env"
svc = cfg["services"]
problems = []
umami = sorted(n for n in svc if n.startswith("umami-"))
if umami != [f"umami-{i}" for i in range(1, 5)]:
    problems.append(f"expected umami-1..4 (core_umami_processes 4), got {umami}")
for name in ["replayer", "metricswriter", "streams-exporter", "dlq-exporter", "platformctl"] + umami:
    if name not in svc:
        problems.append(f"service {name} missing")
        continue
    s = svc[name]
    if name != "platformctl":
        hc = " ".join(s.get("healthcheck", {}).get("test", []))
        want = "/api/heartbeat" if name.startswith("umami") else "/healthz"
        if want not in hc:
            problems.append(f"{name}: healthcheck {hc!r} does not probe {want}")
        if s.get("restart") != "unless-stopped":
            problems.append(f"{name}: restart {s.get('restart')}")
        opts = s.get("logging", {}).get("options", {})
        if s.get("logging", {}).get("driver") != "json-file" or "max-size" not in opts \
                or "max-file" not in opts:
            problems.append(f"{name}: no log rotation {s.get('logging')}")
    for k in ("mem_limit", "cpus", "pids_limit"):
        if k not in s:
            problems.append(f"{name}: no {k}")
# No core files anywhere: every service's memory holds passwords and payloads.
for name, s in svc.items():
    core = s.get("ulimits", {}).get("core")
    if core not in (0, {"soft": 0, "hard": 0}):
        problems.append(f"{name}: ulimits core {core!r}, expected 0")
if svc.get("platformctl", {}).get("profiles") != ["tools"]:
    problems.append("platformctl should run on demand (profile tools)")
exp = svc.get("streams-exporter", {}).get("command", [])
if exp[:3] != ["platformctl", "streams", "--serve"]:
    problems.append(f"streams-exporter command {exp}")
def env(name):
    out = {}
    for line in open(f"{env_dir}/{name}.env"):
        line = line.rstrip("\n")
        if line and not line.startswith("#"):
            k, _, v = line.partition("=")
            out[k] = v
    return out
r = env("replayer")
for k, v in {"REPLAYER_WORKERS": "128", "REPLAYER_MAX_IN_FLIGHT": "900",
             "NATS_USER": "replayer", "NATS_INBOX_PREFIX": "_INBOX_replayer"}.items():
    if r.get(k) != v:
        problems.append(f"replayer.env {k}={r.get(k)}, expected {v}")
if r.get("UMAMI_URLS", "").count("http://umami-") != 4:
    problems.append(f"replayer.env UMAMI_URLS {r.get('UMAMI_URLS')}")
import os
for name, user in [("replayer", "replayer"), ("metricswriter", "metricswriter"),
                   ("exporter", "exporter"), ("platformctl", "platformctl"),
                   ("dlq-exporter", "platformctl"), ("provision", "provisioner")]:
    e = env(name)
    if e.get("NATS_INBOX_PREFIX") != "_INBOX_" + user:
        problems.append(f"{name}.env NATS_INBOX_PREFIX {e.get('NATS_INBOX_PREFIX')}")
    if e.get("NATS_USER") != user or not e.get("NATS_PASSWORD"):
        problems.append(f"{name}.env NATS identity {e.get('NATS_USER')}")
    # TLS to every NATS node, the CA and (mutual TLS) this node's client certificate and key.
    urls = e.get("NATS_URL", "").split(",")
    if len(urls) != 3 or not all(u.startswith("tls://") for u in urls):
        problems.append(f"{name}.env NATS_URL {e.get('NATS_URL')}: not tls:// to the 3 nodes")
    for k in ("NATS_CA", "NATS_CERT", "NATS_KEY"):
        if not os.path.isfile(e.get(k, "")):
            problems.append(f"{name}.env {k}={e.get(k)}: no such file")
# Who may reach the database: the metricswriter, and the provisioning user for migrate; the
# operator's day-to-day tool has no DATABASE_URL.
if not env("metricswriter").get("DATABASE_URL"):
    problems.append("metricswriter.env has no DATABASE_URL")
if not env("provision").get("DATABASE_URL"):
    problems.append("provision.env has no DATABASE_URL (platformctl migrate)")
if "DATABASE_URL" in env("platformctl"):
    problems.append("platformctl.env has DATABASE_URL: migrate is provisioning")
# The dlq-exporter has the streams-exporter's settings with the operator's NATS identity, nothing
# of the operator's tool besides (docs/operations.md, "Deployment").
extra = sorted(k for k in env("dlq-exporter") if k not in env("exporter"))
if extra:
    problems.append(f"dlq-exporter.env has {extra}, which the streams-exporter's has not")
# The TLS files reach our containers, read-only, at the path the environment names.
ca_dir = os.path.dirname(r.get("NATS_CA", ""))
for name in ["replayer", "metricswriter", "streams-exporter", "dlq-exporter", "platformctl",
             "provision"]:
    vols = svc.get(name, {}).get("volumes", [])
    # docker-compose 1.29 prints the short form "src:dst:ro", newer ones a mapping.
    def ro_mount(v):
        if isinstance(v, dict):
            return v.get("source") == ca_dir and v.get("target") == ca_dir and v.get("read_only")
        return v == f"{ca_dir}:{ca_dir}:ro"
    if not ca_dir or not any(ro_mount(v) for v in vols):
        problems.append(f"{name}: no read-only mount of {ca_dir!r}: {vols}")
if svc.get("provision", {}).get("profiles") != ["tools"]:
    problems.append("provision should run on demand (profile tools)")
if svc.get("provision", {}).get("entrypoint") != ["platformctl"]:
    problems.append(f"provision entrypoint {svc.get('provision', {}).get('entrypoint')}")
# The exporter reads the four queues by name, the streams the nats role lets it read.
want = ["--stream=WEB_EVENTS", "--stream=API_METRICS", "--stream=WEB_DLQ", "--stream=API_DLQ"]
if [a for a in exp if a.startswith("--stream")] != want or "--dlq-reasons" in exp:
    problems.append(f"streams-exporter command {exp}: expected {want}, no --dlq-reasons")
# The dlq-exporter (core_dlq_reasons_exporter, on by default) reads the two DLQs' reasons only.
dexp = svc.get("dlq-exporter", {}).get("command", [])
if dexp[:3] != ["platformctl", "streams", "--serve"] or "--dlq-reasons" not in dexp or \
        [a for a in dexp if a.startswith("--stream")] != want[2:]:
    problems.append(f"dlq-exporter command {dexp}: expected --dlq-reasons and {want[2:]}")
# The metrics ports are published on the node's private address (127.0.0.1 in this inventory),
# never on every interface.
for name in ["replayer", "metricswriter", "streams-exporter", "dlq-exporter"]:
    ports = svc.get(name, {}).get("ports", [])
    for p in ports:
        host_ip = p.get("host_ip") if isinstance(p, dict) else str(p).split(":")[0]
        if host_ip != "127.0.0.1":
            problems.append(f"{name}: port {p} published on {host_ip!r}, not the node's address")
    if not ports:
        problems.append(f"{name}: no published port")
print("\n".join(problems) or "all present")
sys.exit(1 if problems else 0)
EOF
}

nats_checks() {
  local i
  for i in 1 2 3; do
    check "nats-server -t accepts nats-$i's configuration (3 routes, JetStream, accounts)" \
      "$NATS_SERVER" -t -c "$R/nats-$i/nats/nats-server.conf"
  done
  check "nats-1 routes to nats-2 and nats-3, with one user per service and the edge" bash -c "
    c='$R/nats-1/nats/nats-server.conf'
    [ \$(grep -c 'nats-route://' \$c) -eq 2 ] &&
    for u in replayer metricswriter provisioner platformctl exporter edge; do
      grep -q \"user: \\\"\$u\\\"\" \$c || { echo \"no user \$u\"; exit 1; }; done"
  # TLS: the client port and the routes each have a tls block with the CA, this node's
  # certificate and key, and verify (the test inventory asks for client certificates too).
  check "nats-1: TLS on the client port and mutual TLS on the routes, files in place" python3 - \
    "$R/nats-1/nats/nats-server.conf" <<'EOF'
import os, re, sys
text = open(sys.argv[1]).read()
cluster = text[text.index("\ncluster {"):text.index("\naccounts {")]
top = text[:text.index("\ncluster {")]
problems = []
for where, block in (("client port", top), ("routes", cluster)):
    m = re.search(r"tls \{(.*?)\}", block, re.S)
    if not m:
        problems.append(f"{where}: no tls block")
        continue
    fields = dict(re.findall(r"(\w+): (.+)", m.group(1)))
    for k in ("cert_file", "key_file", "ca_file"):
        if not os.path.isfile(fields.get(k, "").strip('"')):
            problems.append(f"{where}: {k} {fields.get(k)} is not a file")
    if fields.get("verify") != "true":
        problems.append(f"{where}: verify {fields.get('verify')}")
print("\n".join(problems) or "ok")
sys.exit(1 if problems else 0)
EOF
  # The production form (sync_interval: always, rendered by default) differs from the form with
  # the switch off by that field alone.
  local a="$R/nats-1/nats/nats-server.conf" b="$RD/render-nosync/nats-1/nats/nats-server.conf"
  check "sync_interval: always sits in the jetstream block of the production form" \
    awk '/^jetstream \{/{j=1} j&&/^\}/{j=0} j&&/^  sync_interval: always$/{found=1} END{exit !found}' "$a"
  check "the two forms differ only by sync_interval (and its comment)" bash -c "
    diff <(grep -vE 'store_dir|_file:' '$b') <(grep -vE 'store_dir|_file:' '$a') | grep '^[<>]' |
      grep -v '^> *# Sync every write' | grep -v '^> *sync_interval: always\$' | (! grep .)"
  check "sync_interval is gone from the form with the switch off" bash -c "! grep -q sync_interval '$b'"
}

prometheus_checks() {
  local p="$R/mon-1/prometheus"
  check "promtool check config (scrape config and the rule file it names)" \
    promtool check config "$p/prometheus.yml"
  check "promtool check rules" promtool check rules "$p/core-alerts.yml"
  check "the scrape config has the replayer, metricswriter, jetstream and jetstream_dlq jobs for core-1" bash -c "
    for j in replayer metricswriter jetstream jetstream_dlq; do grep -q \"job_name: \\\"\$j\\\"\" '$p/prometheus.yml' || exit 1; done
    grep -q '127.0.0.1:$EXPORTER_PORT' '$p/prometheus.yml' && grep -q '127.0.0.1:$DLQ_EXPORTER_PORT' '$p/prometheus.yml'"
  check "every alert of docs/contract.md §7 is defined" bash -c "
    for a in QueueOldestMessageTooOld ReplayerLagHigh MetricsWriterLagHigh ReplayerNotConsuming \
             MetricsWriterNotConsuming DLQNotEmpty DLQPublishFailing StreamNearlyFull \
             UmamiHeartbeatFailing; do
      grep -q \"alert: \$a\$\" '$p/core-alerts.yml' || { echo \"missing \$a\"; exit 1; }; done"
  # core_dlq_reasons_exporter off: neither the service nor its scrape job, the rest as it was.
  local off="$RD/render-nodlq"
  check "core_dlq_reasons_exporter=false: no dlq-exporter service, no jetstream_dlq job" python3 - \
    "$off/core-1/core/docker-compose.yml" "$R/core-1/core/docker-compose.yml" \
    "$off/mon-1/prometheus/prometheus.yml" <<'EOF'
import sys, yaml
off, on = (set(yaml.safe_load(open(f))["services"]) for f in sys.argv[1:3])
jobs = [j["job_name"] for j in yaml.safe_load(open(sys.argv[3]))["scrape_configs"]]
print(f"services off: {sorted(off)}; jobs off: {jobs}")
sys.exit(0 if on - off == {"dlq-exporter"} and off < on
         and jobs == ["replayer", "metricswriter", "jetstream"] else 1)
EOF
  check "promtool check config with core_dlq_reasons_exporter=false" \
    promtool check config "$off/mon-1/prometheus/prometheus.yml"
  cp "$here/alerts_test.yml" "$p/alerts_test.yml"
  check "promtool test rules: each alert fires on its series and stays quiet on healthy ones" \
    promtool test rules "$p/alerts_test.yml"
  # Every alert has a test that fires it: a rule nobody tests is not proven.
  check "every alert appears in alerts_test.yml with an expected firing" bash -c "
    for a in \$(sed -n 's/^ *- alert: //p' '$p/core-alerts.yml'); do
      awk -v a=\"\$a\" '\$0 ~ \"alertname: \"a\"\$\" {n=1; next} n && /exp_alerts: *\\[\\]/ {n=0} n && /exp_labels:/ {found=1} END {exit !found}' \
        '$p/alerts_test.yml' || { echo \"no firing case for \$a\"; exit 1; }; done"
}

dockerfile_checks() {
  local df="$src/Dockerfile"
  check "Dockerfile: Debian 12 stages, a non-root user, three binaries" bash -c "
    grep -q '^FROM debian:12 AS build' '$df' && grep -q '^FROM debian:12-slim AS runtime' '$df' &&
    grep -qE '^USER [1-9][0-9]*(:[1-9][0-9]*)?\$' '$df' &&
    for b in replayer/replayer metricswriter/metricswriter platformctl/platformctl; do
      grep -q \"/src/build/\$b\" '$df' || exit 1; test -x '$build'/\$b || { echo \"\$b not built\"; exit 1; }; done"
  # The build stage runs CI's recipe: scripts/install-deps (its build packages) and
  # scripts/test's configure flags.
  check "Dockerfile build stage = scripts/install-deps + scripts/test's CMake configure" bash -c "
    grep -qE '^(RUN |    )scripts/install-deps --build-only' '$df' &&
    ci=\$(grep -E '^cmake -S \. -B \"\\\$build\" ' '$src/scripts/test' | grep -oE '(-G [A-Za-z]+|-D[A-Z_]+=[A-Za-z0-9]+)' | sort) &&
    img=\$(grep -E 'cmake -S \. -B build ' '$df' | grep -oE '(-G [A-Za-z]+|-D[A-Z_]+=[A-Za-z0-9]+)' | sort) &&
    [ -n \"\$ci\" ] && [ \"\$ci\" = \"\$img\" ] || { echo \"CI: \$ci\"; echo \"image: \$img\"; exit 1; }
    ci=\$(grep -A1 -E '^cmake -S \. -B \"\\\$build\" ' '$src/scripts/test' | grep -oE -- '-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=\"[^\"]*\"') &&
    img=\$(grep -oE -- '-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=\"[^\"]*\"' '$df') &&
    [ -n \"\$ci\" ] && [ \"\$ci\" = \"\$img\" ] || { echo \"CI flags: \$ci\"; echo \"image flags: \$img\"; exit 1; }"
  check "Dockerfile runtime packages provide every library the binaries link" \
    bash "$here/runtime-libs.sh" "$df" "$build"
  check ".dockerignore keeps build trees and caches out of the context" bash -c "
    for p in .git .cache .stack 'build-\*'; do grep -qx \"\$p\" '$src/.dockerignore' || exit 1; done"
}

# Nothing secret is printed by the roles (docs/operations.md, "Secrets").
secret_checks() {
  log "secrets: no_log and no diff where a task renders or passes one"
  # Statically: a task whose arguments, loop or template name a secret (a password, a database
  # URL, Umami's secret, a TLS key, the environment files) is no_log: true and diff: false. An
  # assert is left out: it evaluates secrets but prints only its own condition and message.
  check "every task that renders or passes a secret is no_log and shows no diff" \
    python3 - "$src/ansible/roles" <<'EOF'
import pathlib, re, sys, yaml
secret = re.compile(r"password|database_url|app_secret|_key_src|core_env_files|vault_", re.I)
problems, flagged = [], []
for tasks in sorted(pathlib.Path(sys.argv[1]).glob("*/tasks/*.yml")):
    role = tasks.parent.parent
    for t in yaml.safe_load(tasks.read_text()) or []:
        module = next((k for k in t if k.startswith("ansible.builtin.")), None)
        if module in (None, "ansible.builtin.assert"):
            continue
        text = yaml.safe_dump({k: t.get(k) for k in (module, "loop", "with_items")})
        if module == "ansible.builtin.template":
            text += (role / "templates" / t[module]["src"]).read_text()
        if not secret.search(text):
            continue
        flagged.append(t["name"])
        if t.get("no_log") is not True or t.get("diff") is not False:
            problems.append(f"{tasks}: '{t['name']}' handles a secret without no_log: true "
                            f"and diff: false")
# The tasks known to handle secrets are among those found: the pattern still sees them.
for want in ("Render the nats-server configuration", "Render the environment files",
             "Install the TLS CA, certificate and key"):
    if want not in flagged:
        problems.append(f"'{want}' was not recognised as handling a secret")
print("\n".join(problems) or "flagged: " + ", ".join(flagged))
sys.exit(1 if problems else 0)
EOF
  # Dynamically: the playbook in --check --diff mode into an empty directory (every file new, so
  # a diff would hold it whole) for a NATS node and the core node, with a database password
  # added; no secret of the inventory and no private key may appear in what it prints.
  local out="$work/check-diff.log" db_pw="db-pw-$RANDOM$RANDOM" rc=0
  (cd "$src/ansible" && ANSIBLE_PIPELINING=1 ANSIBLE_LOCAL_TEMP="$work/ansible-tmp" \
    ANSIBLE_HOME="$work/ansible-home" ANSIBLE_NOCOLOR=1 \
    ansible-playbook -i "$RD/inventory.yml" -e deploy_become=false -e deploy_serial=100% \
    -e render="$work/check-render" --limit nats-1,core-1 --check --diff -v \
    -e "core_metricswriter_database_url=postgresql://mw:$db_pw@127.0.0.1:1/metrics" \
    site.yml) >"$out" 2>&1 || rc=$?
  if ((rc != 0)); then
    fail "ansible-playbook --check --diff (exit $rc)"; tail -20 "$out"
  else
    check "ansible-playbook --check --diff prints no password, secret or key" python3 - \
      "$RD/inventory.yml" "$out" "$db_pw" <<'EOF'
import sys, yaml
inv = yaml.safe_load(open(sys.argv[1]))["all"]["vars"]
out = open(sys.argv[2]).read()
secrets = list(inv["nats_passwords"].values()) + [
    inv["nats_cluster_password"], inv["core_umami_app_secret"], sys.argv[3]] + [
    u["password"] for u in inv["nats_edge_users"]]
leaks = [s for s in secrets if s and s in out]
if "PRIVATE KEY" in out:
    leaks.append("a PEM private key")
# Diffs were printed (the files without secrets): the check is not vacuous.
if "docker-compose.yml" not in out or "+++ after" not in out:
    leaks.append("no diff printed at all: --diff did not take effect")
print("\n".join(f"printed: {s}" for s in leaks) or f"none of {len(secrets) + 1} printed")
sys.exit(1 if leaks else 0)
EOF
  fi
  check "nats compose: nats-server runs with a core limit of 0" python3 - \
    "$R/nats-1/nats/docker-compose.yml" <<'EOF'
import sys, yaml
core = yaml.safe_load(open(sys.argv[1]))["services"]["nats"].get("ulimits", {}).get("core")
print(core)
sys.exit(0 if core == {"soft": 0, "hard": 0} else 1)
EOF
}

render_checks() {
  lint_checks
  secret_checks
  compose_checks
  nats_checks
  limits_checks
  prometheus_checks
  dashboard_render_checks
  dockerfile_checks
}
