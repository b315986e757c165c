#!/usr/bin/env python3
"""Per problem of a TUNABLE_VERBOSE=3 tuning log: the best candidate whose name matches a pattern
against the best of all the others (the question every NOTES-skinny round asks of a new family).

    python3 lab/probes/candidates_vs_best.py tune_verbose.log[.xz] 'skinny_mmt_'

Times are the tuner's medians in us; a candidate dropped by the pruning probe counts with the
probe's median (a lower bound of what it lost by). Prints one row per problem with a match and a
summary line: how many problems the pattern's best won, and by how much it lost elsewhere.
"""
import lzma
import re
import sys

TIMED = re.compile(r"median ([0-9.]+) ms instance id=\d+, (\w+)\((\S+)\) (\S+)$")
PRUNED = re.compile(r"skip slow instance id=\d+, (\w+)\((\S+)\) (\S+) \(([0-9.]+) ms after")


def read(path):
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt") as f:
        for line in f:
            yield line.rstrip("\n")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    path, pattern = sys.argv[1], re.compile(sys.argv[2])
    times = {}  # (op, params) -> {solution: us}
    for line in read(path):
        m = TIMED.search(line)
        if m:
            us, op, params, sol = float(m[1]) * 1e3, m[2], m[3], m[4]
        else:
            m = PRUNED.search(line)
            if not m:
                continue
            op, params, sol, us = m[1], m[2], m[3], float(m[4]) * 1e3
        per = times.setdefault((op, params), {})
        per[sol] = min(us, per.get(sol, float("inf")))
    if not times:
        sys.exit(f"{path}: no tuner timings (was it written with TUNABLE_VERBOSE=3?)")
    wins, ratios = 0, []
    print(f"# {path}: best '{pattern.pattern}' candidate vs best other (us); ratio = match / other")
    for (op, params), per in sorted(times.items()):
        mine = {s: t for s, t in per.items() if pattern.search(s)}
        other = {s: t for s, t in per.items() if not pattern.search(s)}
        if not mine or not other:
            continue
        ms, mt = min(mine.items(), key=lambda kv: kv[1])
        os_, ot = min(other.items(), key=lambda kv: kv[1])
        r = mt / ot
        ratios.append(r)
        wins += r < 1
        print(f"{op.split('_')[1]:9s} {params.split('_ld_')[0]:22s} {mt:8.2f} {ms:44s} {ot:8.2f} {os_:44s} {r:6.3f}")
    lost = sorted(r for r in ratios if r >= 1)
    print(f"# {len(ratios)} problems: the pattern's best won {wins}"
          + (f"; lost elsewhere by {lost[0]:.3f}-{lost[-1]:.3f} (median {lost[len(lost) // 2]:.3f})" if lost else ""))


if __name__ == "__main__":
    main()
