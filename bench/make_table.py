#!/usr/bin/env python3
"""Markdown tables from bench_kernels' JSON (--benchmark_out=...json): kernels with roofline fractions,
whole-model tokens/s, and the ratios the issue's bars name. Usage: make_table.py results.json [more.json ...]"""
import json
import re
import sys


def load(paths):
    runs = [r for path in paths for r in json.load(open(path))["benchmarks"]]
    med, cv = {}, {}
    for r in runs:
        if r.get("run_type") != "aggregate":
            continue
        key = r["run_name"]
        if r["aggregate_name"] == "median":
            med[key] = r
        elif r["aggregate_name"] == "cv":
            cv[key] = r
    return med, cv


def main():
    args = sys.argv[1:]
    pattern = None  # --filter REGEX: only kernel rows whose label matches (the model and bar tables stay whole)
    if "--filter" in args:
        i = args.index("--filter")
        pattern = re.compile(args[i + 1])
        args = args[:i] + args[i + 2:]
    med, cv = load(args)
    kern = [r for k, r in med.items() if k.startswith(("gemm", "eigen"))]
    models = [r for k, r in med.items() if k.startswith("model")]
    print("| kernel (out x in, n tokens, threads) | median us | cv % | cpu/real | weight GB/s | GOP/s | probe GB/s | of probe BW | of roofline |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    by_label = {}
    for r in kern:
        c = cv.get(r["run_name"], {})
        label = r.get("label", r["run_name"])
        by_label[label] = r
        if pattern and not pattern.search(label):
            continue
        print(f"| {label} | {r['real_time']:.1f} | {100 * c.get('real_time', 0):.1f} | {r['cpu_time'] / r['real_time']:.2f} | {r['GBps'] / 1e9:.1f} | "
              f"{r['GOPps'] / 1e9:.1f} | {r['probe_GBps'] / 1e9:.1f} | {100 * r['frac_bw']:.0f}% | {100 * r['frac_roof']:.0f}% |")
    print()
    # Hot and cold side by side: the same GEMV with its weights in cache (one tensor called again and again)
    # and from DRAM (bench_kernels' cold mode cycles through copies worth >= 256 MiB and 8x the LLC), each
    # against the same-run read-bandwidth probe at its own working set.
    cold = sorted(l for l in by_label if l.endswith(" cold"))
    if cold:
        print("| GEMV (hot: weights in cache; cold: from DRAM) | hot us | hot GB/s | of hot probe | cold us | cold GB/s | cold probe GB/s | of cold probe |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for lc in cold:
            c, h = by_label[lc], by_label.get(lc[: -len(" cold")])
            hot = (f"{h['real_time']:.1f} | {h['GBps'] / 1e9:.1f} | {100 * h['frac_bw']:.0f}%" if h else "- | - | -")
            print(f"| {lc[: -len(' cold')]} | {hot} | {c['real_time']:.1f} | {c['GBps'] / 1e9:.1f} | {c['probe_GBps'] / 1e9:.1f} | {100 * c['frac_bw']:.0f}% |")
        print()
    print("| model / scheme / phase / threads | median ms per call | cv % | cpu/real | tokens/s | Linear MB |")
    print("|---|---:|---:|---:|---:|---:|")
    tok = {}
    for r in models:
        c = cv.get(r["run_name"], {})
        label = r.get("label", r["run_name"])
        tok[label] = r["tok_per_s"]
        print(f"| {label} | {r['real_time']:.3f} | {100 * c.get('real_time', 0):.1f} | {r['cpu_time'] / r['real_time']:.2f} | {r['tok_per_s']:.0f} | {r['linear_MB']:.1f} |")
    print()

    def t(label):
        r = by_label.get(label)
        return r["real_time"] if r else float("nan")

    print("| bar | measured | 2 threads |")
    print("|---|---|---|")
    for shape in ("4096x4096", "4096x11008"):
        for s in ("fp32", "fp16", "bf16", "int8-per-tensor", "int8-per-channel", "int4-g64", "int4-g128",
                  "int8-per-tensor+a8", "int8-per-channel+a8", "int4-g64+a8", "int4-g128+a8",
                  "int8-per-channel+a16", "int4-g64+a16", "int4-g128+a16"):
            r, r2 = by_label.get(f"{s} {shape} n=1 t=1"), by_label.get(f"{s} {shape} n=1 t=2")
            if r:
                two = f"{t(f'{s} {shape} n=1 t=1') / t(f'{s} {shape} n=1 t=2'):.2f}x faster, {100 * r2['frac_bw']:.0f}% of 2-thread BW" if r2 else "-"
                print(f"| {s} {shape} GEMV 1 thread: {r['GBps'] / 1e9:.1f} GB/s of same-run read BW {r['probe_GBps'] / 1e9:.1f} (>= 70%) | "
                      f"{100 * r['frac_bw']:.0f}% | {two} |")
    # Issue 16's GEMV bar on DRAM: the cold rows against their same-run DRAM probe.
    for s in ("int4-g64", "int8-per-channel", "int4-g64+a8", "int8-per-channel+a8", "int4-g64+a16", "int8-per-channel+a16"):
        for shape in ("4096x4096", "4096x11008"):
            r, r2 = by_label.get(f"{s} {shape} n=1 t=1 cold"), by_label.get(f"{s} {shape} n=1 t=2 cold")
            if r:
                print(f"| {s} {shape} GEMV from DRAM, of the same-run DRAM probe (weight-only >= 70%, +a8 >= 85%) | "
                      f"{100 * r['frac_bw']:.0f}% ({r['GBps'] / 1e9:.1f} of {r['probe_GBps'] / 1e9:.1f} GB/s) | "
                      + (f"{100 * r2['frac_bw']:.0f}% ({r2['GBps'] / 1e9:.1f} of {r2['probe_GBps'] / 1e9:.1f} GB/s)" if r2 else "-") + " |")
    for s in ("int4-g64", "int4-g64+a8", "int4-g64+a16", "int8-per-channel", "int8-per-channel+a8", "int8-per-channel+a16"):
        print(f"| {s} vs fp32 GEMV 4096x11008 1 thread (int4 >= 5x, int8 >= 3x) | "
              f"{t('fp32 4096x11008 n=1 t=1') / t(s + ' 4096x11008 n=1 t=1'):.2f}x | "
              f"{t('fp32 4096x11008 n=1 t=2') / t(s + ' 4096x11008 n=1 t=2'):.2f}x |")
    for s in ("int8-per-channel+a8", "int4-g64+a8", "int8-per-tensor+a8", "int4-g128+a8", "int8-per-channel+a16", "int4-g64+a16",
              "int8-per-channel", "int4-g64"):
        r, r2 = by_label.get(f"{s} 4096x4096 n=64 t=1"), by_label.get(f"{s} 4096x4096 n=64 t=2")
        if r:
            print(f"| {s} 4096x4096 batch 64, 1 thread (>= 400 GOP/s) | {r['GOPps'] / 1e9:.0f} GOP/s | "
                  f"{(r2['GOPps'] / 1e9) if r2 else float('nan'):.0f} GOP/s |")
    # Issue 16: weight-only batch-64 GEMM at least as fast as the fp32 row (Eigen's GEMM on the same shape).
    for s in ("int4-g64", "int8-per-channel", "int4-g128-asym", "int3-g128", "int2-g64", "int4-g64+a16", "int8-per-channel+a16"):
        if by_label.get(f"{s} 4096x4096 n=64 t=1"):
            print(f"| {s} 4096x4096 batch 64 vs Eigen fp32 (>= 1x) | "
                  f"{t('eigen-fp32 4096x4096 n=64 t=1') / t(f'{s} 4096x4096 n=64 t=1'):.2f}x | "
                  f"{t('eigen-fp32 4096x4096 n=64 t=2') / t(f'{s} 4096x4096 n=64 t=2'):.2f}x |")
    for n in (8, 64):
        print(f"| fp32 kernel vs Eigen, 4096x4096 n={n} 1 thread (>= 1x) | "
              f"{t(f'eigen-fp32 4096x4096 n={n} t=1') / t(f'fp32 4096x4096 n={n} t=1'):.2f}x | "
              f"{t(f'eigen-fp32 4096x4096 n={n} t=2') / t(f'fp32 4096x4096 n={n} t=2'):.2f}x |")
    # Issue 16's whole-model bar: every quantized row decodes (and prefills) at least as fast as fp32.
    for model in ("minigpt", "gpt2-small-shaped"):
        for phase in ("decode", "prefill64"):
            for s in ("int8-per-channel", "int4-g64", "int3-g64", "int2-g64", "int4-g64+a8", "int4-g64+a16", "int8-per-channel+a16"):
                v1, v2 = tok.get(f"{model} {s} {phase} t=1"), tok.get(f"{model} {s} {phase} t=2")
                b1, b2 = tok.get(f"{model} eigen-fp32 {phase} t=1"), tok.get(f"{model} eigen-fp32 {phase} t=2")
                if b1 and v1:
                    print(f"| {model} {phase} {s} vs fp32 (Eigen) tokens/s (>= 1x) | {v1 / b1:.2f}x ({v1:.0f} vs {b1:.0f}) | "
                          + (f"{v2 / b2:.2f}x ({v2:.0f} vs {b2:.0f})" if b2 and v2 else "-") + " |")
    for s in ("int4-g64", "int4-g64+a8", "int4-g64+a16", "int8-per-channel", "int8-per-channel+a8", "int8-per-channel+a16", "fp32"):
        v1, v2 = tok.get(f"gpt2-small-shaped {s} decode t=1"), tok.get(f"gpt2-small-shaped {s} decode t=2")
        b1, b2 = tok.get("gpt2-small-shaped eigen-fp32 decode t=1"), tok.get("gpt2-small-shaped eigen-fp32 decode t=2")
        if b1 and v1:
            print(f"| GPT-2-small-shaped decode {s} vs fp32 (Eigen) tokens/s (int4 >= 4x, int8 >= 2.5x) | "
                  f"{v1 / b1:.2f}x ({v1:.0f} vs {b1:.0f}) | " + (f"{v2 / b2:.2f}x ({v2:.0f} vs {b2:.0f})" if b2 and v2 else "-") + " |")

main()
