#!/usr/bin/env python3
"""Reads the dlq-exporter's /metrics (used by stack-checks.sh).

usage:
  dlq_reasons_scrape.py URL STREAM N   exit 0 when jetstream_dlq_messages{stream=STREAM} has a
                                       reason label holding N dead letters (prints the reasons)
  dlq_reasons_scrape.py URL --streams  prints the streams of jetstream_stream_messages, sorted

Python standard library only.
"""
import re
import sys
import urllib.request

SAMPLE = re.compile(r"^(\w+)\{([^}]*)\} (\S+)$")
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def samples(url, name):
    with urllib.request.urlopen(url, timeout=5) as r:
        text = r.read().decode()
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m and m.group(1) == name:
            yield dict(LABEL.findall(m.group(2))), float(m.group(3))


def main():
    if len(sys.argv) == 3 and sys.argv[2] == "--streams":
        print(" ".join(sorted(l["stream"] for l, _ in samples(sys.argv[1], "jetstream_stream_messages"))))
        return 0
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    url, stream, want = sys.argv[1], sys.argv[2], float(sys.argv[3])
    reasons = {l.get("reason"): v for l, v in samples(url, "jetstream_dlq_messages")
               if l.get("stream") == stream}
    print(f"{stream}: {reasons}")
    return 0 if any(r and v == want for r, v in reasons.items()) else 1


if __name__ == "__main__":
    sys.exit(main())
