#!/usr/bin/env python3
"""The mutation run of docs/simulation.md: puts back, one at a time, bugs a code review once found
in the replayer's engine core, and checks that the simulation fails on each.

    tests/sim/mutations.py [--only N ...] [--keep DIR]

For each mutation: a scratch worktree of HEAD (git worktree, under a temporary directory unless
--keep names one), the change applied to its sources, replayer_sim built there (RelWithDebInfo),
then `--scenarios 2000 --minutes 10` (with the mutation's own flags, if it has any) and, if
those pass, `--matrix write-fault`. The checkout you
run it from is never changed. Exit 0 when every mutation was caught; 1 otherwise, or when a
mutation's text is no longer in the source (the engine changed: update the mutation).
Takes about 3 minutes per mutation on 2 cores (the first build longer). Not part of CI.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

# (what it puts back, [(file, text that must occur exactly once, replacement)], [sim flags])
MUTATIONS = [
    ("a redelivery adopted with ++held_count (counted twice)",
     [("replayer/engine_core.cpp",
       "    h.touched = now;  // the new delivery's ack wait starts now\n",
       "    h.touched = now;  // the new delivery's ack wait starts now\n    ++held_count;\n")]),
    ("a redelivery of an event whose guard record is being written admitted as a new event",
     [("replayer/engine_core.cpp",
       "if (auto it = by_seq.find(d.stream_seq); it != by_seq.end()) {",
       "if (auto it = by_seq.find(d.stream_seq);\n"
       "      it != by_seq.end() && held[it->second].stage != Stage::kFinishing) {")]),
    ("MakeReady not clearing the write-fault parking flag",
     [("replayer/engine_core.cpp",
       "  if (h.parked_write_fault) --parked;\n  h.parked_write_fault = false;\n", "")]),
    ("WakeParked also wakes events waiting to be dead-lettered",
     [("replayer/engine_core_send.cpp",
       "if (h.stage == Stage::kBackoff && h.parked_write_fault) MakeReady(eid, h);",
       "if ((h.stage == Stage::kBackoff && h.parked_write_fault) ||\n"
       "        h.stage == Stage::kDeadLettering)\n      MakeReady(eid, h);")]),
    ("no ClearFailing on admission while every process is down (the 64 cap in an outage)",
     [("replayer/engine_core.cpp", "  if (AllDown()) lanes.ClearFailing(e.lane);\n", "")]),
    ("the outage and write-fault decisions without ClearFailing",
     [("replayer/engine_core_send.cpp",
       "      lanes.ClearFailing(h.lane);  // the visitor's later events wait for Umami, not for "
       "poison\n", ""),
      ("replayer/engine_core_send.cpp",
       "      lanes.ClearFailing(h.lane);\n      h.stage = Stage::kBackoff;\n",
       "      h.stage = Stage::kBackoff;\n")]),
    ("a batch that carries the visit's token past the visit's end (no Continues check)",
     [("replayer/engine_core_batch.cpp",
       "    if (!VisitStates::Continues(*v, f.ev.accepted_at_ms)) break;\n", "")]),
    ("sends go on while the duplicate guard cannot record (no guard gate)",
     [("replayer/engine_core_send.cpp", "  if (guard_blocked) return true;\n", "")]),
    ("sends go on while a guard record waits for its answer (no slow-record gate)",
     [("replayer/engine_core_send.cpp",
       "  return !guard_writes.empty() && now - guard_writes.front().since >= kGuardSlow;\n",
       "  return false;\n")]),
    ("an answer about the site judged as any failure (no unknown-site rule; issue 36)",
     [("replayer/engine_core_site.cpp", "  if (h.about == AnswerAbout::kSite) {",
       "  if (false) {")],
     ["--unknown-site", "--scenarios", "200"]),
    ("a validation refusal counted toward the write-fault rule (issue 36)",
     [("replayer/engine_core_send.cpp", "  bool about_event = h.about == AnswerAbout::kEvent;",
       "  bool about_event = false;")]),
    ("the crash-loop guard without its own-marker rule (a live process's marker taken for a crash)",
     [("common/crash_guard.cpp",
       "  if (m && !m->process.empty() && m->process == this_process) {",
       "  if (false) {")],
     ["--own-marker", "--scenarios", "200"]),
    ("the crash-loop guard dead-letters at the first stopped reader (kill -9 in a marked window)",
     [("common/crash_guard.h",
       "inline constexpr uint32_t kStoppedReaders = 2;",
       "inline constexpr uint32_t kStoppedReaders = 1;"),
      ("common/crash_guard.h",
       'static_assert(kStoppedReaders == 2, "kReason says two readers");', "")],
     ["--reader-killer", "--scenarios", "200"]),
]


def run(cmd, cwd, log=None):
    out = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if log:
        with open(log, "w") as f:
            f.write(out.stdout)
    return out.returncode, out.stdout


def first_line(text, prefix):
    return next((l for l in text.splitlines() if l.startswith(prefix)), "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", type=int, nargs="*", help="mutation numbers (1-based)")
    ap.add_argument("--keep", help="directory for the scratch worktree (kept afterwards)")
    args = ap.parse_args()
    repo = subprocess.check_output(["git", "rev-parse", "--show-toplevel"], text=True).strip()
    base = args.keep or tempfile.mkdtemp(prefix="sim-mutations-")
    tree = os.path.join(base, "tree")
    if not os.path.isdir(tree):
        subprocess.check_call(["git", "-C", repo, "worktree", "add", "-q", "--detach", tree, "HEAD"])
    build = os.path.join(tree, "build-mutations")
    subprocess.check_call(["cmake", "-S", tree, "-B", build, "-G", "Ninja",
                           "-DCMAKE_BUILD_TYPE=RelWithDebInfo"], stdout=subprocess.DEVNULL)
    sim = os.path.join(build, "tests", "sim", "replayer_sim")
    missed = 0
    for n, (what, edits, *flags) in enumerate(MUTATIONS, 1):
        if args.only and n not in args.only:
            continue
        subprocess.check_call(["git", "-C", tree, "checkout", "-q", "--", "replayer", "common"])
        for path, old, new in edits:
            p = os.path.join(tree, path)
            text = open(p).read()
            if text.count(old) != 1:
                print(f"mutation {n} ({what}): its text is not in {path} once: update it")
                return 1
            open(p, "w").write(text.replace(old, new))
        rc, out = run(["ninja", "-C", build, "replayer_sim"], tree)
        if rc != 0:
            print(f"mutation {n} ({what}): the build failed\n{out[-2000:]}")
            return 1
        rc, out = run([sim, "--scenarios", "2000", "--minutes", "10"] + (flags[0] if flags else []),
                      tree, os.path.join(base, f"mutation-{n}.log"))
        how = "scenarios"
        if rc == 0:
            how = "write-fault matrix"
            rc, out = run([sim, "--matrix", "write-fault"], tree,
                          os.path.join(base, f"mutation-{n}-matrix.log"))
        line = first_line(out, "simulation")
        if rc == 0:
            missed += 1
            print(f"mutation {n} ({what}): NOT caught: {line}")
        else:
            print(f"mutation {n} ({what}): caught by the {how}: {line}")
    subprocess.check_call(["git", "-C", tree, "checkout", "-q", "--", "replayer", "common"])
    if not args.keep:
        subprocess.check_call(["git", "-C", repo, "worktree", "remove", "--force", tree])
        shutil.rmtree(base, ignore_errors=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
