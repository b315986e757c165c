"""Compares the results of `tunable tune-file --devices all` with a one-GPU run of the same file.

    python3 bench/multigpu/compare_results.py ONE_GPU.csv MERGED_0.csv MERGED_1.csv ... [--json OUT]

Checks that every merged file holds the same problems as the one-GPU run, with equal solutions
in all merged files, and reports, per problem whose solution differs from the one-GPU choice, the
ratio of the two stored tuning times (each solution timed on its own GPU): within noise when the
runs picked equally fast kernels. Exit status 1 when a problem is missing or merged files disagree.
"""
import argparse
import json
import statistics
import sys


def read(path):
    out = {}
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split(",")
            if parts[0] == "Validator" or len(parts) < 3:
                continue
            out[(parts[0], parts[1])] = (parts[2], float(parts[3]) if len(parts) > 3 and parts[3] else -1.0)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("one")
    ap.add_argument("merged", nargs="+")
    ap.add_argument("--json")
    a = ap.parse_args()
    one = read(a.one)
    merged = [read(p) for p in a.merged]
    bad = 0
    for p, m in zip(a.merged, merged):
        missing = set(one) - set(m)
        if missing:
            bad += 1
            print(f"{p}: {len(missing)} problems of the one-GPU run missing, e.g. {sorted(missing)[0]}")
        if {k: v[0] for k, v in m.items()} != {k: v[0] for k, v in merged[0].items()}:
            bad += 1
            print(f"{p}: solutions differ from {a.merged[0]}")
    same, ratios, rows = 0, [], []
    for key, (sol, t) in sorted(one.items()):
        if key not in merged[0]:
            continue
        msol, mt = merged[0][key]
        if msol == sol:
            same += 1
        elif t > 0 and mt > 0:
            ratios.append(mt / t)
        rows.append({"op": key[0], "params": key[1], "one_gpu": sol, "one_gpu_ms": t, "merged": msol,
                     "merged_ms": mt})
    print(f"{len(one)} problems: {same} same solution; {len(ratios)} differ, merged/one-GPU tuned time "
          + (f"median {statistics.median(ratios):.3f}, range {min(ratios):.3f}-{max(ratios):.3f}" if ratios else "-"))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"problems": len(one), "same_solution": same, "time_ratios": ratios, "rows": rows,
                       "disagreements": bad}, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
