#!/usr/bin/env python3
"""violations.py LOG MONITOR NAME: exit 0 when every permission violation the nats-server wrote to
LOG was made by a client connection named NAME; prints how many there were.

A violation's line names its connection by id ("cid:N") in every version, but not always by its
client's name (2.10.27 leaves the name out), so the name comes from the server's /connz: state=all
keeps the closed connections too (up to max_closed_clients, 10,000 by default). A violation line
without a connection id, or whose connection /connz no longer knows, counts against.
"""
import json
import re
import sys
import urllib.request

CID = re.compile(r"\bcid:(\d+)\b")


def name_of(monitor, cid):
    url = f"{monitor}/connz?state=all&cid={cid}"
    with urllib.request.urlopen(url, timeout=2) as r:
        conns = json.load(r).get("connections") or []
    return conns[0].get("name", "") if conns else None


def main():
    if len(sys.argv) != 4:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    log, monitor, name = sys.argv[1:]
    bad, count, names = [], 0, {}
    with open(log, errors="replace") as f:
        for line in f:
            if "violation" not in line.lower():
                continue
            count += 1
            m = CID.search(line)
            if not m:
                bad.append("no connection id: " + line.rstrip())
                continue
            cid = m.group(1)
            if cid not in names:
                names[cid] = name_of(monitor, cid)
            if names[cid] != name:
                bad.append(f"client {names[cid]!r}: " + line.rstrip())
    print(f"{count} violation(s), {len(bad)} not by {name}")
    for b in bad:
        print("  " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
