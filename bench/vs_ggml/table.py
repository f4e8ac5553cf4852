#!/usr/bin/env python3
"""Markdown tables from vs_ggml's results JSON: per weight shape, ggml's time over ours for every pair and cell
(above 1: ours is faster) with the 95% interval over rounds, then every cell's medians and both sides' share of
the same-run read bandwidth.

Usage: table.py RESULTS.json                          print the tables
       table.py RUN.json [RUN.json ...] --readme README.md
                                                      replace the block between the vs_ggml markers in README.md
                                                      with every run's tables (one run per CPU family, run.sh's
                                                      runs/ folder), the newest run first"""
import json
import os
import sys
import tempfile

BEGIN, END = "<!-- vs_ggml table: begin (bench/vs_ggml/table.py writes it) -->", "<!-- vs_ggml table: end -->"


def cell_key(c):
    return (c["n"], 0 if c["mode"] == "hot" else 1, c["threads"])


def cell_name(k):
    n, dram, t = k
    return f"n={n} {'DRAM' if dram else 'hot'}, {t}t"


def tables(res):
    m, cells = res["manifest"], res["cells"]
    g = m["ggml"]
    load = m["load_average_start"]
    lines = [
        f"Run {m['started_utc']} - {m['finished_utc']}: {m['cpu']['model']} ({m['cpu']['logical_cpus']} logical CPUs), "
        f"ggml {g['version']} CPU variant `{g['chosen']}` (highest `ggml_backend_score` of {len(g['variants'])}), "
        f"ours {m['ours']['commit']} ({m['ours']['simd_arch']}, +a8 {m['ours']['a8_kernels']}); "
        f"{m['options']['rounds']} rounds; load average at the start {load[0]:.2f}, at the end {m['load_average_end'][0]:.2f}; "
        f"OMP_WAIT_POLICY {m['env']['OMP_WAIT_POLICY']}, GOMP_SPINCOUNT {m['env']['GOMP_SPINCOUNT']}.",
        "",
    ]
    shapes = sorted({(c["out"], c["in"]) for c in cells})
    pairs = list(dict.fromkeys(c["pair"] for c in cells))
    for out, inn in shapes:
        sc = [c for c in cells if (c["out"], c["in"]) == (out, inn)]
        keys = sorted({cell_key(c) for c in sc})
        lines.append(f"**{out}x{inn}** (out x in), ggml time / our time (above 1: ours faster), 95% interval over rounds; "
                     "bold: ours slower beyond the interval:")
        lines.append("")
        lines.append("| pair (ggml / ours) | " + " | ".join(cell_name(k) for k in keys) + " |")
        lines.append("|---|" + "---:|" * len(keys))
        for p in pairs:
            row = []
            for k in keys:
                c = next((c for c in sc if c["pair"] == p and cell_key(c) == k), None)
                if c is None:
                    row.append("")
                    continue
                r = c["ratio"]
                v = f"{r['ggml_over_ours']:.2f}x"
                row.append(f"{'**' + v + '**' if r['high'] < 1 else v} [{r['low']:.2f}, {r['high']:.2f}]")
            lines.append(f"| {p} | " + " | ".join(row) + " |")
        lines.append("")
    lines.append("<details><summary>Every cell (median us per call over rounds; GB/s = weight bytes one call reads / median; "
                 "probe = the same-run read bandwidth at that side's working set)</summary>")
    lines.append("")
    lines.append("| pair | shape | cell | ggml us | ours us | ggml/ours | ggml GB/s (of probe) | ours GB/s (of probe) | ggml buffer | our layout |")
    lines.append("|---|---|---|---:|---:|---:|---:|---:|---|---|")
    for c in sorted(cells, key=lambda c: (c["out"], c["in"], pairs.index(c["pair"]), cell_key(c))):
        gg, us = c["ggml"], c["ours"]
        lines.append(
            f"| {c['pair']} | {c['out']}x{c['in']} | {cell_name(cell_key(c))} | {gg['us_median']:.1f} | {us['us_median']:.1f} | "
            f"{c['ratio']['ggml_over_ours']:.2f}x | {gg['GBps']:.1f} ({100 * gg['of_probe']:.0f}% of {gg['probe_GBps']:.1f}) | "
            f"{us['GBps']:.1f} ({100 * us['of_probe']:.0f}% of {us['probe_GBps']:.1f}) | {gg['buffer_type']} | {us['layout']} |")
    lines.append("")
    lines.append("</details>")
    return "\n".join(lines) + "\n"


def heading(res):
    """One run's heading in the README: its CPU (model name, family, model) and its date."""
    m = res["manifest"]
    c = m["cpu"]
    return f"### {c['model']}, family {c['family']} model {c['model_number']}: run of {m['started_utc'][:10]}\n\n"


def main():
    args = sys.argv[1:]
    readme = None
    if len(args) >= 2 and args[-2] == "--readme":
        readme, args = args[-1], args[:-2]
    if not args or any(a.startswith("--") for a in args) or (readme is None and len(args) != 1):
        sys.stderr.write("usage: table.py RESULTS.json | table.py RUN.json [RUN.json ...] --readme README.md\n")
        return 2
    runs = []  # (results, their tables)
    for path in args:
        try:
            with open(path) as f:
                res = json.load(f)
            runs.append((res, tables(res)))
        except (OSError, ValueError, KeyError, TypeError) as e:
            sys.stderr.write(f"table.py: cannot read {path} as vs_ggml results: {e}\n")
            return 1
    if readme is None:
        sys.stdout.write(runs[0][1])
        return 0
    runs.sort(key=lambda r: r[0]["manifest"]["started_utc"], reverse=True)  # the newest run first
    text = "\n".join(heading(res) + t for res, t in runs)
    try:
        with open(readme) as f:
            doc = f.read()
    except OSError as e:
        sys.stderr.write(f"table.py: cannot read {readme}: {e}\n")
        return 1
    if BEGIN not in doc or END not in doc:
        sys.stderr.write(f"table.py: {readme} has no vs_ggml table markers\n")
        return 1
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    # A temporary file of our own beside the README (created exclusively, as experiments/plot/common.py's save does),
    # renamed over it when whole.
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(readme) + ".", suffix=".tmp",
                                   dir=os.path.dirname(os.path.abspath(readme)))
        with os.fdopen(fd, "w") as f:
            f.write(head + BEGIN + "\n" + text + END + tail)
        os.replace(tmp, readme)
    except OSError as e:
        sys.stderr.write(f"table.py: cannot write {readme}: {e}\n")
        return 1
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
