#!/usr/bin/env python3
"""routes_to.py MONITOR PEER_MONITOR...: exit 0 when the node behind MONITOR (its monitoring URL)
has a route to each of the peers and to no other server.

Judged by server id: each peer's /varz server_id against the remote_id of the node's /routez
routes, which every version gives. The number of routes is not: 2.10 and later keep a pool of
connections to each peer (pool_size, 3 by default, plus one per pinned account), 2.9 one.
"""
import json
import sys
import urllib.request


def get(url):
    with urllib.request.urlopen(url, timeout=2) as r:
        return json.load(r)


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    node, peers = sys.argv[1], sys.argv[2:]
    want = {get(p + "/varz")["server_id"]: p for p in peers}
    routes = get(node + "/routez").get("routes") or []
    have = {r.get("remote_id", "") for r in routes}
    missing = [url for sid, url in want.items() if sid not in have]
    others = sorted(have - set(want))
    print(f"{len(routes)} route connection(s) to {len(have)} server(s)")
    if missing:
        print("no route to: " + " ".join(missing))
    if others:
        print("routes to unknown servers: " + " ".join(others))
    return 1 if missing or others else 0


if __name__ == "__main__":
    sys.exit(main())
