"""generalization_accuracy.png from 26-quant-curve/results.json: the generalization benchmark per scheme
(rows) and paradigm (columns: the scored paradigms, then their accuracy together, then the diagnostics
after a white line). Each cell shows the accuracy and, against the fp32 row, the paired difference's
verdict: a down arrow when the scheme is below fp32 beyond the paired 95% interval (Newcombe), an up arrow
when above; the colour is the accuracy, so a scheme that loses generalization shows as a lighter row.
The pairing reads the per-item answers results.json stores.

usage: generalization_accuracy.py results.json generalization_accuracy.png
"""
import math

import numpy as np

import common

wilson = common.wilson


def paired(a, b):
    """Newcombe's method 10 interval of acc(a) - acc(b) from two answer strings ('1', '0', '-')."""
    e = f = g = h = 0
    for x, y in zip(a, b):
        if x == "-" or y == "-":
            continue
        e += x == "1" and y == "1"
        f += x == "1" and y == "0"
        g += x == "0" and y == "1"
        h += x == "0" and y == "0"
    n = e + f + g + h
    if n == 0:
        return None
    pa, pb = (e + f) / n, (e + g) / n
    la, ua = wilson(e + f, n)
    lb, ub = wilson(e + g, n)
    den = (e + f) * (g + h) * (e + g) * (f + h)
    assoc = e * h - f * g
    assoc = assoc - n / 2 if assoc > n / 2 else assoc if assoc < 0 else 0.0  # Newcombe's shrunk phi (intervals.cpp)
    phi = assoc / math.sqrt(den) if den > 0 else 0.0
    da, ua_, db, ub_ = pa - la, ua - pa, pb - lb, ub - pb
    lo = pa - pb - math.sqrt(max(0.0, da * da - 2 * phi * da * ub_ + ub_ * ub_))
    hi = pa - pb + math.sqrt(max(0.0, ua_ * ua_ - 2 * phi * ua_ * db + db * db))
    return lo, hi


src, dst = common.usage(2, "results.json generalization_accuracy.png")
data = common.load(src)
rows = [r for r in common.ok(data["schemes"]) if "generalization" in r]
if not rows:
    raise SystemExit("generalization_accuracy.py: no row of results.json carries the generalization benchmark")
ref = next((r for r in rows if r["scheme"] == data.get("baseline")), rows[0])
g0 = ref["generalization"]
names = list(g0["by_paradigm"].keys())
# The paradigms that count in "overall" are the ones results.json lists as scored; the rest are diagnostics.
scored = [n for n in g0["scored_paradigms"] if n in names]
diags = [n for n in names if n not in scored]
cols = scored + ["scored together"] + diags
grid, arrows = [], []
for r in rows:
    g = r["generalization"]
    row, arr = [], []
    for c in cols:
        if c == "scored together":
            row.append(g["overall"]["accuracy"])
            a = "".join(g["answers"].get(n, "") for n in scored)
            b = "".join(g0["answers"].get(n, "") for n in scored)
        else:
            row.append(g["by_paradigm"][c]["accuracy"])
            a, b = g["answers"].get(c, ""), g0["answers"].get(c, "")
        iv = paired(a, b) if r is not ref and len(a) == len(b) else None
        arr.append("" if iv is None else " \u2193" if iv[1] < 0 else " \u2191" if iv[0] > 0 else "")
    grid.append(row)
    arrows.append(arr)

acc = np.array(grid, dtype=float)
fig, ax = common.plt.subplots(figsize=(0.95 * len(cols) + 2.5, 0.36 * len(rows) + 1.8))
im = ax.imshow(acc, cmap=common.plt.cm.viridis, vmin=0.0, vmax=1.0, aspect="auto")
for i in range(len(rows)):
    for j in range(len(cols)):
        a = acc[i, j]
        ax.text(j, i, f"{a:.3f}{arrows[i][j]}", ha="center", va="center", fontsize=6.2, color="black" if a > 0.6 else "white")
ax.set_xticks(range(len(cols)))
ax.set_xticklabels([c.replace("_", " ") for c in cols], rotation=30, ha="right", fontsize=8)
ax.set_yticks(range(len(rows)))
ax.set_yticklabels([r["scheme"] for r in rows], fontsize=7)
ax.axvline(len(scored) - 0.5, color="white", lw=1.5)
ax.axvline(len(scored) + 0.5, color="white", lw=2.5)
ax.set_title(f"Generalization benchmark ({g0['split']} half): accuracy per paradigm; \u2193/\u2191 below/above "
             f"{ref['scheme']} beyond the paired 95% interval; diagnostics right of the line", fontsize=9)
fig.colorbar(im, ax=ax, fraction=0.03, pad=0.02, label="accuracy")
common.save(fig, dst)
