#!/usr/bin/env python3
"""Checks the Grafana dashboard the monitoring role provisions (used by deploy-test.sh).

usage:
  check_dashboard.py render DASHBOARD.json RULES.yml OPERATIONS.md [DATASOURCES.yml PROVIDERS.yml]
      The JSON is a dashboard Grafana loads (schemaVersion, uid, unique panel ids, one row per
      runbook step, every panel under a row with at least one PromQL target on the provisioned
      datasource); every alert of the rendered rules is paired with a panel of the dashboard in
      docs/operations.md's "Dashboard" table (and the table names no alert or panel that does not
      exist); the provisioning files point at the datasource uid the panels use and at the
      directory that holds the dashboard.
  check_dashboard.py query http://127.0.0.1:PORT DASHBOARD.json
      Runs every panel target's expression (dashboard variables substituted: $__rate_interval and
      $__interval as 1m, $node as .*) as an instant query against a running Prometheus; fails
      when one errors or returns no series.

Python standard library plus PyYAML (installed with ansible). Exit 0 when all hold.
"""
import json
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request

import yaml

DATASOURCE_UID = "core-prometheus"
# Grafana's built-in variables and the dashboard's own, as a query at "now" over a short window.
SUBSTITUTIONS = {
    "$__rate_interval": "1m",
    "$__interval": "1m",
    "$__range": "5m",
    "${node}": ".*",
    "$node": ".*",
}


def panels_of(dash):
    """(row title, panel) for each panel, rows included as (title, row)."""
    out, current = [], None
    for p in dash.get("panels", []):
        if p.get("type") == "row":
            current = p.get("title")
            out.append((current, p))
            for inner in p.get("panels", []):  # a collapsed row keeps its panels inside
                out.append((current, inner))
        else:
            out.append((current, p))
    return out


def substitute(expr):
    for k in sorted(SUBSTITUTIONS, key=len, reverse=True):
        expr = expr.replace(k, SUBSTITUTIONS[k])
    left = re.findall(r"\$\{?\w+", expr)
    if left:
        raise ValueError(f"unknown variable(s) {left} in {expr}")
    return expr


def alert_panel_table(operations_md):
    """{alert: panel title} from the table of the section '## Dashboard' of docs/operations.md:
    rows '| `AlertName` | Panel title | ...' (backticks optional)."""
    text = open(operations_md, encoding="utf-8").read()
    m = re.search(r"^## Dashboard\b(.*?)(?=^## )", text, re.S | re.M)
    if not m:
        raise ValueError(f"{operations_md} has no '## Dashboard' section")
    pairs = {}
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) < 2 or not re.fullmatch(r"`?[A-Z][A-Za-z]+`?", cells[0]):
            continue
        pairs[cells[0].strip("`")] = cells[1].strip("`* ")
    return pairs


def check_render(dash_path, rules_path, operations_md, datasources=None, providers=None):
    failures = []
    with open(dash_path, encoding="utf-8") as f:
        dash = json.load(f)
    for key in ("uid", "title", "schemaVersion", "panels"):
        if key not in dash:
            failures.append(f"dashboard has no {key}")
    if dash.get("schemaVersion", 0) < 36:
        failures.append(f"schemaVersion {dash.get('schemaVersion')}: older than Grafana 9")
    all_panels = panels_of(dash)
    ids = [p.get("id") for _, p in all_panels]
    if len(ids) != len(set(ids)):
        failures.append(f"panel ids are not unique: {ids}")
    rows = [p for _, p in all_panels if p.get("type") == "row"]
    titles = {}
    for row, p in all_panels:
        if p.get("type") == "row":
            continue
        t = p.get("title", "")
        if row is None:
            failures.append(f"panel {t!r} is not under a row")
        if t in titles:
            failures.append(f"two panels named {t!r}")
        titles[t] = row
        targets = p.get("targets") or []
        if not targets:
            failures.append(f"panel {t!r} has no query")
        for tg in [p] + targets:
            ds = tg.get("datasource") or {}
            if ds.get("uid") not in ("${datasource}", DATASOURCE_UID):
                failures.append(f"panel {t!r}: datasource {ds} is not the provisioned Prometheus")
        for tg in targets:
            if not tg.get("expr", "").strip():
                failures.append(f"panel {t!r} target {tg.get('refId')}: no expr")
            else:
                try:
                    substitute(tg["expr"])
                except ValueError as e:
                    failures.append(f"panel {t!r}: {e}")
    print(f"dashboard {dash.get('uid')!r}: {len(rows)} rows, {len(titles)} panels, "
          f"{sum(len(p.get('targets') or []) for _, p in all_panels)} queries")
    for r in rows:
        print(f"  row: {r['title']}")

    with open(rules_path, encoding="utf-8") as f:
        alerts = [r["alert"] for g in yaml.safe_load(f)["groups"] for r in g["rules"] if "alert" in r]
    pairs = alert_panel_table(operations_md)
    for a in alerts:
        if a not in pairs:
            failures.append(f"alert {a}: no panel named for it in {operations_md} (## Dashboard)")
        elif pairs[a] not in titles:
            failures.append(f"alert {a}: panel {pairs[a]!r} is not on the dashboard")
        else:
            print(f"  {a} -> {pairs[a]!r} (row {titles[pairs[a]]!r})")
    for a in pairs:
        if a not in alerts:
            failures.append(f"{operations_md} pairs {a}, which is no alert of {rules_path}")

    if datasources:
        with open(datasources, encoding="utf-8") as f:
            ds = yaml.safe_load(f)["datasources"]
        if not any(d.get("uid") == DATASOURCE_UID and d.get("type") == "prometheus" for d in ds):
            failures.append(f"{datasources}: no prometheus datasource with uid {DATASOURCE_UID}")
    if providers:
        with open(providers, encoding="utf-8") as f:
            provs = yaml.safe_load(f)["providers"]
        paths = [os.path.realpath(p["options"]["path"]) for p in provs if p.get("type") == "file"]
        if os.path.realpath(os.path.dirname(dash_path)) not in paths:
            failures.append(f"{providers}: no file provider reads {os.path.dirname(dash_path)} ({paths})")
    return failures


def query(base, expr):
    url = base + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.load(r)
    except urllib.error.HTTPError as e:
        body = json.load(e)
    if body.get("status") != "success":
        raise RuntimeError(f"{body.get('errorType')}: {body.get('error')}")
    return body["data"]["result"]


def check_query(base, dash_path):
    failures = []
    with open(dash_path, encoding="utf-8") as f:
        dash = json.load(f)
    for var in dash.get("templating", {}).get("list", []):
        q = var.get("query")
        q = q.get("query") if isinstance(q, dict) else None
        m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", q or "")
        if m:  # a variable's values: the selector must return series with that label
            result = query(base, m.group(1))
            values = sorted({s["metric"].get(m.group(2)) for s in result} - {None})
            print(f"variable ${var['name']}: {values}")
            if not values:
                failures.append(f"variable ${var['name']}: {q} has no values")
    for row, p in panels_of(dash):
        for tg in p.get("targets") or []:
            expr = substitute(tg["expr"])
            try:
                result = query(base, expr)
            except Exception as e:  # noqa: BLE001 (an error is what the check reports)
                failures.append(f"{p['title']} [{tg['refId']}]: {e}: {expr}")
                continue
            values = [s["value"][1] for s in result]
            print(f"  {p['title']} [{tg['refId']}]: {len(result)} series {values[:4]}")
            if not result:
                failures.append(f"{p['title']} [{tg['refId']}] (row {row!r}) returns no data: {expr}")
    return failures


def main():
    if len(sys.argv) >= 5 and sys.argv[1] == "render":
        failures = check_render(*sys.argv[2:8])
    elif len(sys.argv) == 4 and sys.argv[1] == "query":
        failures = check_query(sys.argv[2].rstrip("/"), sys.argv[3])
    else:
        print(__doc__)
        return 2
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
