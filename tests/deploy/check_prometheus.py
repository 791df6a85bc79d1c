#!/usr/bin/env python3
"""Checks a running Prometheus against the alert rules it loaded (used by deploy-test.sh).

A rule that names a metric nobody exports is a silent alert: it never fires. With the services
running and scraped, this asserts that
  1. every scrape target is up,
  2. every rule group was evaluated without error,
  3. every metric selector an alert names (with its label matchers) returns a series, and
  4. every alert expression returns a series once its comparisons are made `bool`: a comparison
     then keeps every series with 0 or 1 instead of filtering, so an expression that returns
     nothing in that form refers to something that does not exist (or joins series that never
     match), whatever the thresholds.

usage: check_prometheus.py http://127.0.0.1:PORT rules.yml [expected-targets]
Python standard library plus PyYAML (installed with ansible). Exit 0 when all hold.
"""
import json
import re
import sys
import urllib.parse
import urllib.request

import yaml

KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless",
    "bool", "offset", "inf", "nan",
}
LABEL_LISTS = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
COMPARISON = re.compile(r"(==|!=|>=|<=|>|<)(?!=)")


def get(base, path, **params):
    url = base + path + ("?" + urllib.parse.urlencode(params) if params else "")
    with urllib.request.urlopen(url, timeout=10) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError(f"{url}: {body}")
    return body["data"]


def outside_braces_and_strings(expr):
    """Yields (index, char, outside) for each character of a PromQL expression."""
    depth, quote = 0, None
    for i, c in enumerate(expr):
        if quote:
            yield i, c, False
            if c == quote and expr[i - 1] != "\\":
                quote = None
            continue
        if c in "\"'`":
            quote = c
            yield i, c, False
        elif c == "{":
            depth += 1
            yield i, c, False
        elif c == "}":
            depth -= 1
            yield i, c, False
        else:
            yield i, c, depth == 0


def bool_form(expr):
    """The expression with every comparison made `bool` (label matchers left alone)."""
    out, skip = [], 0
    chars = list(outside_braces_and_strings(expr))
    for i, c, outside in chars:
        if skip:  # the rest of a two-character operator, already copied
            skip -= 1
            continue
        m = COMPARISON.match(expr, i) if outside else None
        if m and not (c == "=" and i > 0 and expr[i - 1] in "=!<>"):
            op = m.group(1)
            rest = expr[i + len(op):]
            out.append(op)
            skip = len(op) - 1
            if not re.match(r"\s*bool\b", rest):
                out.append(" bool")
            continue
        out.append(c)
    return "".join(out)


def selectors(expr):
    """Metric selectors (name plus label matchers) an expression reads."""
    text = LABEL_LISTS.sub(" ", expr)
    text = re.sub(r"\[[^\]]*\]", " ", text)  # range durations
    found = []
    for m in re.finditer(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?", text):
        name, matchers = m.group(1), m.group(2) or ""
        after = text[m.end():].lstrip()
        if name.lower() in KEYWORDS or after.startswith("("):
            continue
        start = m.start()
        if start > 0 and (text[start - 1].isdigit() or text[start - 1] == "."):
            continue  # part of a number such as 1e-3
        if re.fullmatch(r"\d+[smhdwy]?", name):
            continue
        sel = name + matchers
        if sel not in found:
            found.append(sel)
    return found


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    base, rules_path = sys.argv[1].rstrip("/"), sys.argv[2]
    expected_targets = int(sys.argv[3]) if len(sys.argv) > 3 else None
    failures = []

    targets = get(base, "/api/v1/targets")["activeTargets"]
    for t in targets:
        if t["health"] != "up":
            failures.append(f"target {t['scrapeUrl']} is {t['health']}: {t.get('lastError')}")
    if expected_targets is not None and len(targets) != expected_targets:
        failures.append(f"{len(targets)} targets, expected {expected_targets}")
    print(f"targets: {len(targets)}, up: {sum(t['health'] == 'up' for t in targets)}")

    groups = get(base, "/api/v1/rules")["groups"]
    loaded = 0
    for g in groups:
        for r in g["rules"]:
            loaded += 1
            if r.get("health") != "ok" or r.get("lastError"):
                failures.append(f"rule {r['name']}: health {r.get('health')} {r.get('lastError')}")

    with open(rules_path) as f:
        rules = [r for g in yaml.safe_load(f)["groups"] for r in g["rules"] if "alert" in r]
    print(f"rules loaded by Prometheus: {loaded}; alerts in {rules_path}: {len(rules)}")
    if loaded < len(rules):
        failures.append("Prometheus loaded fewer rules than the file holds")

    for r in rules:
        expr = r["expr"]
        for sel in selectors(expr):
            n = len(get(base, "/api/v1/query", query=sel)["result"])
            print(f"  {r['alert']}: {sel} -> {n} series")
            if n == 0:
                failures.append(f"{r['alert']}: {sel} has no series (nobody exports it)")
        b = bool_form(expr)
        result = get(base, "/api/v1/query", query=b)["result"]
        values = sorted({s["value"][1] for s in result})
        print(f"  {r['alert']}: whole expression (comparisons as bool) -> {len(result)} series "
              f"{values}")
        if not result:
            failures.append(f"{r['alert']}: the expression resolves to no series: {b}")

    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
