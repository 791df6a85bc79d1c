#!/usr/bin/env python3
"""agree.py PLATFORMCTL_JSON JSZ_DIR EXPORTER_METRICS...: the numbers three readers give agree.

PLATFORMCTL_JSON: `platformctl streams --json --interval 0`; JSZ_DIR: nats-server's own
/jsz?streams=true&consumers=true of every node (jsz-<n>.json), of which each stream's and each
consumer's leader is taken (a replica may lag; jsz-<n>.json is server nats-<n>'s); EXPORTER_METRICS: the /metrics pages of
`platformctl streams --serve` (one per core node). Read while nothing flows. Prints one line per
value compared and exits 1 on any difference.
"""
import glob
import json
import os
import re
import sys

STREAMS = ["WEB_EVENTS", "API_METRICS", "WEB_DLQ", "API_DLQ"]
CONSUMERS = [("WEB_EVENTS", "replayer"), ("API_METRICS", "metricswriter")]


def leader_view(jsz_files):
    """{stream: (state, {consumer: info})}, each from the replica its raft group's leader runs."""
    streams, consumers = {}, {}
    for path in jsz_files:
        with open(path) as f:
            jsz = json.load(f)
        # jsz-<n>.json is nats-<n>'s (nats-server 2.9's /jsz does not name its server).
        server = "nats-" + re.sub(r"^jsz-(\d+)\.json$", r"\1", os.path.basename(path))
        for acc in jsz.get("account_details") or []:
            for s in acc.get("stream_detail") or []:
                name = s["name"]
                leader = (s.get("cluster") or {}).get("leader")
                if leader == server or (leader is None and name not in streams):
                    streams[name] = s["state"]
                for c in s.get("consumer_detail") or []:
                    cl = (c.get("cluster") or {}).get("leader")
                    if cl == server or (cl is None and (name, c["name"]) not in consumers):
                        consumers[(name, c["name"])] = c
    return streams, consumers


def parse_metrics(path):
    out = {}
    pat = re.compile(r'^([a-z_]+)\{([^}]*)\}\s+(\S+)$')
    with open(path) as f:
        for line in f:
            m = pat.match(line.strip())
            if not m:
                continue
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
            key = (m.group(1), labels.get("stream", ""), labels.get("consumer", ""))
            out[key] = float(m.group(3))
    return out


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    with open(sys.argv[1]) as f:
        pc = json.load(f)
    js_streams, js_consumers = leader_view(sorted(glob.glob(sys.argv[2] + "/jsz-*.json")))
    exporters = [(p, parse_metrics(p)) for p in sys.argv[3:]]
    pc_streams = {s["name"]: s for s in pc["streams"]}
    bad = 0

    def same(what, truth, others):
        nonlocal bad
        ok = all(v is not None and float(v) == float(truth) for _, v in others)
        if not ok:
            bad += 1
        shown = " ".join(f"{n}={v}" for n, v in others)
        print(f"{'ok  ' if ok else 'DIFF'} {what}: jetstream={truth} {shown}")

    for s in STREAMS:
        if s not in js_streams:
            print(f"DIFF {s}: not in /jsz")
            bad += 1
            continue
        st = js_streams[s]
        for field, metric in [("messages", "jetstream_stream_messages"),
                              ("first_seq", "jetstream_stream_first_seq"),
                              ("last_seq", "jetstream_stream_last_seq")]:
            others = [("platformctl", pc_streams.get(s, {}).get(field))]
            others += [(f"exporter{i + 1}", m.get((metric, s, ""))) for i, (_, m) in enumerate(exporters)]
            same(f"{s} {field}", st[field], others)
    for s, c in CONSUMERS:
        info = js_consumers.get((s, c))
        if info is None:
            print(f"DIFF {s}/{c}: not in /jsz")
            bad += 1
            continue
        pcc = {x["name"]: x for x in pc_streams.get(s, {}).get("consumers", [])}.get(c, {})
        for truth, field, metric in [
                (info["num_pending"], "pending", "jetstream_consumer_pending"),
                (info["num_ack_pending"], "unacked", "jetstream_consumer_unacked"),
                (info["num_redelivered"], "redelivered", "jetstream_consumer_redelivered"),
                (info["delivered"]["consumer_seq"], None, "jetstream_consumer_delivered_consumer_seq"),
                (info["ack_floor"]["consumer_seq"], None, "jetstream_consumer_ack_floor_consumer_seq")]:
            others = [("platformctl", pcc.get(field))] if field else []
            others += [(f"exporter{i + 1}", m.get((metric, s, c))) for i, (_, m) in enumerate(exporters)]
            same(f"{s}/{c} {field or metric}", truth, others)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
