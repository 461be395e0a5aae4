#!/usr/bin/env python3
"""Markdown tables from bench_highway JSON output (docs/highway.md).

    taskset -c 1 ./bench_highway --benchmark_repetitions=3 \\
        --benchmark_enable_random_interleaving=true \\
        --benchmark_out=run1.json --benchmark_out_format=json
    python3 bench/highway_table.py run1.json [run2.json ...]

GFLOP/s: the median over every repetition of every file (wall time).
Ratios to the JIT: within each file the median of the backend over the
median of the JIT on the same shape and path (both from the same
interleaved run, so they saw the same machine load), then the median of
those over the files; in parentheses the same from CPU time.
"""
import json
import re
import statistics as st
import sys
from collections import defaultdict

BACKENDS = ("jit", "hwy_avx3", "hwy_avx2")


def load(path):
    wall, cpu = defaultdict(list), defaultdict(list)
    with open(path) as f:
        data = json.load(f)
    for b in data["benchmarks"]:
        if b.get("run_type") != "iteration" or b.get("error_occurred"):
            continue
        m = re.match(r"BM_(\w+)/(\w+)/M:(\d+)/N:(\d+)/K:(\d+)", b["name"])
        if not m:
            continue
        key = (m.group(1), int(m.group(3)), int(m.group(4)), int(m.group(5)), m.group(2))
        flop = 2.0 * key[1] * key[2] * key[3]
        scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
        wall[key].append(flop / (b["real_time"] * scale))
        cpu[key].append(flop / (b["cpu_time"] * scale))
    return wall, cpu


def main(files):
    runs = [load(f) for f in files]
    every = defaultdict(list)
    for wall, _ in runs:
        for k, v in wall.items():
            every[k].extend(v)

    def ratio(shape, be, which):
        vals = []
        for run in runs:
            t = run[which]
            if t.get(shape + (be,)) and t.get(shape + ("jit",)):
                vals.append(st.median(t[shape + (be,)]) / st.median(t[shape + ("jit",)]))
        return "%.2f" % st.median(vals) if vals else "-"

    for path in ("sgemm", "planned"):
        shapes = sorted({k[1:4] for k in every if k[0] == path})
        if not shapes:
            continue
        print("\n%s path (GFLOP/s; ratio to the JIT, wall (CPU))\n" % path)
        print("| M | N | K | JIT | hwy AVX3 | hwy AVX2 | AVX3 / JIT | AVX2 / JIT |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|")
        for s in shapes:
            shape = (path,) + s
            med = [("%.1f" % st.median(every[shape + (be,)])) if every.get(shape + (be,)) else "-"
                   for be in BACKENDS]
            cells = ["%s (%s)" % (ratio(shape, be, 0), ratio(shape, be, 1))
                     for be in ("hwy_avx3", "hwy_avx2")]
            print("| %d | %d | %d | %s | %s | %s | %s | %s |" % (s + tuple(med) + tuple(cells)))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
