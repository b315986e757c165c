#!/usr/bin/env python3
"""Issue 4's floor target on a `tunable_bench verify` table (gemm_verify.csv): for weights >= 32 MB
at M in {1, 8, 16}, how many tuned problems reach >= 0.88 of the copy-bandwidth floor back-to-back
(events every 8 calls), as a stream (32 launches between events; tables from 2026-11-22 on) and in
graphs, and which miss. With a second table (an earlier run), each row shows that run's figures.

  python3 lab/probes/floor_count.py NEW/gemm_verify.csv [OLD/gemm_verify.csv]
"""
import csv
import sys

TARGET = 0.88


def load(path):
    with open(path, newline="") as f:
        return {r["problem"]: r for r in csv.DictReader(f)}


def efficiencies(r):
    """Back-to-back and graph efficiency; the graph one is None when the run timed no graphs."""
    floor = float(r["floor_us"])
    graph_us = float(r.get("tuned_graph_us") or 0)
    return floor / float(r["tuned_us"]), (floor / graph_us if graph_us > 0 else None)


def stream_efficiency(r):
    t = r.get("tuned_stream_us")
    return float(r["floor_us"]) / float(t) if t else None


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    new = load(sys.argv[1])
    old = load(sys.argv[2]) if len(sys.argv) == 3 else {}
    hit_b2b = hit_graph = hit_stream = total = 0
    for name, r in new.items():
        weight_bytes = int(r["N"]) * int(r["K"]) * (1 if r["dtype"] == "fp8e4m3" else 2)
        if int(r["M"]) not in (1, 8, 16) or weight_bytes < 32e6:
            continue
        total += 1
        b2b, graph = efficiencies(r)
        hit_b2b += b2b >= TARGET
        hit_graph += graph is not None and graph >= TARGET
        st = stream_efficiency(r)
        hit_stream += st is not None and st >= TARGET
        st_text = f" stream {st:.3f}" if st is not None else ""
        graph_text = f" graph {graph:.3f}" if graph is not None else " graph -"
        line = f"{name:36s} b2b {b2b:.3f}{st_text}{graph_text} {r['winner']}"
        if name in old:
            ob, og = efficiencies(old[name])
            og_text = f"{og:.3f}" if og is not None else "-"
            line += f" | before {ob:.3f} / {og_text} {old[name]['winner']}"
        print(line + ("" if b2b >= TARGET and graph is not None and graph >= TARGET else "  MISS"))
    has_stream = any(stream_efficiency(r) is not None for r in new.values())
    stream_text = f", {hit_stream}/{total} as a stream" if has_stream else ""
    print(f">= {TARGET} of the floor: {hit_b2b}/{total} back-to-back{stream_text}, {hit_graph}/{total} in graphs")


if __name__ == "__main__":
    main()
