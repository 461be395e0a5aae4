#!/usr/bin/env python3
"""Runs the end-to-end examples (BERT layer, ResNet-50) for 1 and 2 threads,
batch 1 and 8, f32 / bf16 / int8, and prints docs/integration.md's latency
table (markdown) from their --json output.

usage: tools/e2e_table.py [BUILD_DIR] [--iters N] [--threads 1,2]

Each row is one process: anvil and oneDNN run the same graph alternating,
so a row's ratio is from one run.  1 thread is pinned with taskset -c 0,
2 threads with taskset -c 0,1 (OMP_NUM_THREADS = threads).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def run(build, model, dt, batch, threads, iters, extra):
    exe = os.path.join(build, "examples", "anvil_example_" + model)
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    cpus = "0" if threads == 1 else "0,1"
    cmd = ["taskset", "-c", cpus, exe, "--dt", dt, "--batch", str(batch), "--iters", str(iters),
           "--threads", str(threads), "--check", "--json", out] + extra
    if model == "bert":
        cmd[4:4] = ["--seq", "128"]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), r.stdout[-2000:]))
    with open(out) as f:
        j = json.load(f)
    os.unlink(out)
    return j


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--iters", type=int, default=11)
    ap.add_argument("--threads", default="1,2")
    a = ap.parse_args()
    rows = []
    configs = []
    for dt, label, extra in (("f32", "f32 (plan)", []), ("f32", "f32 (1x1 conv)", ["--f32-linear", "conv"]),
                             ("bf16", "bf16", []), ("int8", "int8", [])):
        for b in (1, 8):
            configs.append(("bert", "BERT s128", dt, label, b, extra))
    for dt in ("f32", "bf16", "int8"):
        for b in (1, 8):
            configs.append(("resnet50", "ResNet-50 224", dt, dt, b, []))
    print("| threads | model | batch | dt | anvil ms | oneDNN ms | ratio | kernel-only ratio | "
          "anvil kernels ms | anvil glue ms | oneDNN glue ms | packing anvil / oneDNN ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for t in [int(x) for x in a.threads.split(",")]:
        for model, name, dt, label, b, extra in configs:
            iters = a.iters if model == "bert" else max(3, a.iters * 2 // 3)
            j = run(a.build, model, dt, b, t, iters, extra)
            an, dn = j["anvil"], j["onednn"]
            print("| %d | %s | %d | %s | %.1f | %.1f | %.2f | %.2f | %.1f | %.1f | %.1f | %.0f / %.0f |" % (
                t, name, b, label, an["median_ms"], dn["median_ms"], dn["median_ms"] / an["median_ms"],
                dn["kernel_ms"] / an["kernel_ms"], an["kernel_ms"], an["glue_ms"], dn["glue_ms"],
                an["setup_ms"], dn["setup_ms"]), flush=True)


if __name__ == "__main__":
    main()
