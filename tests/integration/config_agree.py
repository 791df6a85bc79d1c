#!/usr/bin/env python3
"""config_agree.py SOURCE_DIR BINARY_DIR: README's configuration table, every binary's --help and
the sources name the same variables.

- Per binary (replayer, metricswriter, platformctl): the variables its --help lists (generated
  from the code that reads them at start) are exactly the README rows whose "read by" names it,
  and where both give a default they are equal (durations and sizes compared by value).
- Every variable any source of common/, replayer/, metricswriter/ or platformctl/ reads (a
  ConfigReader call or getenv with a literal name) is in README's table and in some --help.

Prints each difference and exits 1 on any; prints the lists compared and exits 0 otherwise.
"""
import os
import re
import subprocess
import sys

BINARIES = {
    "replayer": "replayer/replayer",
    "metricswriter": "metricswriter/metricswriter",
    "platformctl": "platformctl/platformctl",
}
GROUPS = {
    "all": set(BINARIES),
    "services": {"replayer", "metricswriter"},
}
# Read with getenv but no configuration: the operator's login name (queue move's audit note).
NOT_CONFIGURATION = {"USER"}
READS = re.compile(
    r"\b(?:Int|Size|Duration|String|Optional|OneOf|UrlList|HostPort|ListenAddress|ReadableFile)"
    r"\(\s*\"([A-Z][A-Z0-9_]+)\"|getenv\(\s*\"([A-Z][A-Z0-9_]+)\"\)")
UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
UNITS_B = {"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def normalize(value):
    """A duration as ("ms", n), a size as ("bytes", n), anything else as itself."""
    parts = re.findall(r"(\d+)([a-z]+)", value)
    if parts and "".join(n + u for n, u in parts) == value and all(u in UNITS_MS for _, u in parts):
        return ("ms", sum(int(n) * UNITS_MS[u] for n, u in parts))
    m = re.fullmatch(r"(\d+)(B|KiB|MiB|GiB)?", value)
    if m:
        return ("bytes", int(m.group(1)) * UNITS_B[m.group(2) or ""])
    return value


def readme_table(path):
    """{binary: {variable: default or None}} from README's ## Configuration table."""
    text = open(path, encoding="utf-8").read()
    section = text[text.index("## Configuration"):]
    section = section[:section.index("\n## ", 3)]
    rows = [l for l in section.splitlines() if l.startswith("| `")]
    out = {b: {} for b in BINARIES}
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        names = re.findall(r"`([A-Z][A-Z0-9_]+)`", cells[0])
        readers = set()
        for word in re.split(r"[,\s]+", cells[1]):
            if word:
                readers |= GROUPS.get(word, {word})
        unknown = readers - set(BINARIES)
        if unknown or not names:
            raise SystemExit(f"README: a row I cannot read: {row}")
        per_binary = dict((b, v) for v, b in re.findall(r"`([^`]*)`\s*\((\w+)\)", cells[2]))
        plain = re.findall(r"`([^`]*)`", cells[2])
        for i, name in enumerate(names):
            for b in readers:
                if per_binary:
                    default = per_binary.get(b)
                elif len(plain) == len(names):
                    default = plain[i]
                elif len(plain) == 1 and "(" not in cells[2]:
                    default = plain[0]
                else:
                    default = None
                out[b][name] = default
    return out


def help_list(binary_dir, rel):
    """{variable: default or None} as `<binary> --help` lists them."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    text = subprocess.run([os.path.join(binary_dir, rel), "--help"], env=env, check=True,
                          capture_output=True, text=True).stdout
    start = text.find("Read here, with their defaults:")
    out = {}
    if start < 0:
        return out
    for line in text[start:].splitlines()[1:]:
        m = re.fullmatch(r"  ([A-Z][A-Z0-9_]+)(?:\s+(\S.*))?", line)
        if not m:
            break
        out[m.group(1)] = m.group(2)
    return out


def source_reads(source_dir):
    """{variable: first file that reads it} over the binaries' sources (tests and bench aside)."""
    out = {}
    for top in ("common", "replayer", "metricswriter", "platformctl"):
        for root, _, files in os.walk(os.path.join(source_dir, top)):
            for f in sorted(files):
                if not f.endswith((".cpp", ".h")):
                    continue
                path = os.path.join(root, f)
                for m in READS.finditer(open(path, encoding="utf-8").read()):
                    name = m.group(1) or m.group(2)
                    out.setdefault(name, os.path.relpath(path, source_dir))
    return out


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    source_dir, binary_dir = sys.argv[1], sys.argv[2]
    readme = readme_table(os.path.join(source_dir, "README.md"))
    problems = []
    helped = set()
    for b, rel in BINARIES.items():
        listed = help_list(binary_dir, rel)
        helped |= set(listed)
        documented = readme[b]
        for name in sorted(set(listed) - set(documented)):
            problems.append(f"{b} --help lists {name}; README's table does not say {b} reads it")
        for name in sorted(set(documented) - set(listed)):
            problems.append(f"README's table says {b} reads {name}; {b} --help does not list it")
        for name in sorted(set(listed) & set(documented)):
            code, doc = listed[name], documented[name]
            if code and doc and normalize(code) != normalize(doc):
                problems.append(f"{name}: {b} --help says default {code}, README says {doc}")
        print(f"{b}: {len(listed)} variables, {' '.join(sorted(listed))}")
    in_readme = set().union(*(set(v) for v in readme.values()))
    for name, where in sorted(source_reads(source_dir).items()):
        if name in NOT_CONFIGURATION:
            continue
        if name not in in_readme:
            problems.append(f"{where} reads {name}; README's table does not have it")
        if name not in helped:
            problems.append(f"{where} reads {name}; no binary's --help lists it")
    for p in problems:
        print("DIFFERENT: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
