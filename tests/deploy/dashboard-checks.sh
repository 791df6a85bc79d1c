# shellcheck shell=bash
# shellcheck disable=SC2154  # work, src, here, R and PROM_PORT come from deploy-test.sh
# The Grafana dashboard half of deploy-test.sh (sourced; uses its helpers and variables): the
# dashboard the monitoring role provisions (ansible/roles/monitoring/files/core-dashboard.json)
# loads, every alert has its panel (docs/operations.md, "Dashboard"), and every panel's query
# returns data from the stack's real Prometheus (check_dashboard.py).

# Render time: the JSON as rendered for mon-1, its provisioning files, the alert <-> panel table.
dashboard_render_checks() {
  local g="$R/mon-1/grafana"
  if python3 "$here/check_dashboard.py" render "$g/dashboards/core-dashboard.json" \
    "$R/mon-1/prometheus/core-alerts.yml" "$src/docs/operations.md" \
    "$g/provisioning/datasources/core-prometheus.yml" "$g/provisioning/dashboards/core.yml" \
    >"$work/dashboard-render.log" 2>&1; then
    pass "Grafana dashboard: parses, one row per runbook step, provisioned, every alert paired with a panel"
  else
    fail "Grafana dashboard (rendered JSON, provisioning, docs/operations.md's alert-panel table)"
  fi
  sed 's/^/    /' "$work/dashboard-render.log"
}

# Stack: run after prometheus_scrape_checks (Prometheus up and scraped at least 5 times).
dashboard_query_checks() {
  local base="http://127.0.0.1:$PROM_PORT"
  curl -fsS -m 2 "$base/-/ready" >/dev/null 2>&1 || { fail "Grafana dashboard: Prometheus is not up"; return 0; }
  if python3 "$here/check_dashboard.py" query "$base" "$R/mon-1/grafana/dashboards/core-dashboard.json" \
    >"$work/dashboard-query.log" 2>&1; then
    pass "Grafana dashboard: every panel's query returns data from the stack's Prometheus"
  else
    fail "Grafana dashboard: panel queries against the stack's Prometheus"
  fi
  sed 's/^/    /' "$work/dashboard-query.log"
}
