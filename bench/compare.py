#!/usr/bin/env python3
"""Before / after table from two bench_kernels JSON files of the same rows (two binaries run in alternation,
so both saw the same machine state): median time of each, the speed-up, and each one's fraction of its own
same-run read-bandwidth probe. Rows present in only one file are left out.
With --suffix S and one file: the rows whose scheme ends in S against the same rows without it, in that one
run (e.g. --suffix +bf16: each +bf16 row beside its weight-only row).
Usage: compare.py BEFORE.json AFTER.json [--filter REGEX]
       compare.py RUN.json --suffix SUFFIX [--filter REGEX]"""
import json
import re
import sys


def medians(path):
    out = {}
    for r in json.load(open(path))["benchmarks"]:
        if r.get("run_type") == "aggregate" and r["aggregate_name"] == "median":
            out[r.get("label", r["run_name"])] = r
    return out


# Google Benchmark reports each row in its own unit (the whole-model rows in ms).
UNIT_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}


def micros(r):
    return r["real_time"] * UNIT_US[r.get("time_unit", "ns")]


def frac(r):
    probe = r.get("probe_GBps", 0.0)
    return f"{100.0 * r['GBps'] / probe:.0f}%" if probe > 0 and "GBps" in r else ""


def main():
    args = sys.argv[1:]
    pattern = None
    if "--filter" in args:
        i = args.index("--filter")
        pattern = re.compile(args[i + 1])
        args = args[:i] + args[i + 2:]
    suffix = None
    if "--suffix" in args:
        i = args.index("--suffix")
        suffix = args[i + 1]
        args = args[:i] + args[i + 2:]
    if len(args) != (1 if suffix else 2):
        sys.exit("usage: compare.py BEFORE.json AFTER.json [--filter REGEX] | compare.py RUN.json --suffix SUFFIX [--filter REGEX]")
    if suffix:
        rows = medians(args[0])
        print(f"| row | without {suffix} us | with {suffix} us | speed-up | without, of probe BW | with, of probe BW |")
        print("|---|---:|---:|---:|---:|---:|")
        for label, a in rows.items():
            words = label.split(" ")  # the scheme is the first word of a kernel row, the second of a model row
            hit = [i for i, w in enumerate(words) if w.endswith(suffix) and len(w) > len(suffix)]
            if not hit or (pattern and not pattern.search(label)):
                continue
            words[hit[0]] = words[hit[0]][: -len(suffix)]
            b = rows.get(" ".join(words))
            if b is None:
                continue
            tb, ta = micros(b), micros(a)
            print(f"| {label} | {tb:.1f} | {ta:.1f} | {tb / ta:.2f}x | {frac(b)} | {frac(a)} |")
        return
    before, after = medians(args[0]), medians(args[1])
    print("| row | before us | after us | speed-up | before, of probe BW | after, of probe BW |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, a in after.items():
        b = before.get(label)
        if b is None or (pattern and not pattern.search(label)):
            continue
        tb, ta = micros(b), micros(a)
        print(f"| {label} | {tb:.1f} | {ta:.1f} | {tb / ta:.2f}x | {frac(b)} | {frac(a)} |")


if __name__ == "__main__":
    main()
