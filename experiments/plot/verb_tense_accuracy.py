"""verb_tense_accuracy.png from 26-quant-curve/results.json: a grid of verb-tense accuracy, one row per
scheme and one per rule baseline (below the line), one column per construction (the easy four, the
hard three, the hard set together, all slots). Each cell shows the accuracy and its Wilson 95% interval
(ci95 in results.json); the colour is the accuracy, so a scheme that breaks shows as a lighter row.

usage: verb_tense_accuracy.py results.json verb_tense_accuracy.png
"""
import numpy as np

import common

EASY = ["agreement", "local_time_cue", "attractor", "long_range"]
HARD = ["coordination", "object_relative", "relative_inner"]


def cells(by, overall, kinds):
    """(accuracy, low, high) per column: each construction, the hard set pooled, all slots."""
    out = []
    for k in kinds:
        s = by.get(k)
        out.append(None if s is None else (s["accuracy"], *common.wilson(s["correct"], s["total"])))
    hard = [by[k] for k in HARD if k in by]
    if hard:
        c, n = sum(s["correct"] for s in hard), sum(s["total"] for s in hard)
        out.append((c / n if n else 0.0, *common.wilson(c, n)))
    out.append((overall["accuracy"], *common.wilson(overall["correct"], overall["total"])))
    return out


src, dst = common.usage(2, "results.json verb_tense_accuracy.png")
data = common.load(src)
rows = common.ok(data["schemes"])
present = set(rows[0]["verb_tense"]["by_construction"].keys()) if rows else set()
kinds = [k for k in EASY + HARD if k in present] + sorted(present - set(EASY + HARD))
has_hard = any(k in present for k in HARD)
cols = kinds + (["hard set"] if has_hard else []) + ["all slots"]
labels, grid = [], []
for r in rows:
    labels.append(r["scheme"])
    grid.append(cells(r["verb_tense"]["by_construction"], r["verb_tense"]["overall"], kinds))
n_models = len(labels)
for b in data.get("baselines", []):
    labels.append("rule: " + b["name"])
    grid.append(cells(b["by_construction"], b["overall"], kinds))

acc = np.array([[np.nan if c is None else c[0] for c in row] for row in grid], dtype=float)
fig, ax = common.plt.subplots(figsize=(1.25 * len(cols) + 2.5, 0.36 * len(labels) + 1.6))
cmap = common.plt.cm.viridis.copy()
cmap.set_bad("0.9")
im = ax.imshow(acc, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto")
for i, row in enumerate(grid):
    for j, c in enumerate(row):
        if c is None:
            continue
        a, lo, hi = c
        ax.text(j, i, f"{a:.3f}\n[{lo:.3f}, {hi:.3f}]", ha="center", va="center", fontsize=5.6,
                color="black" if a > 0.6 else "white")
ax.set_xticks(range(len(cols)))
ax.set_xticklabels([c.replace("_", " ") for c in cols], rotation=25, ha="right", fontsize=8)
ax.set_yticks(range(len(labels)))
ax.set_yticklabels(labels, fontsize=7)
if n_models < len(labels):
    ax.axhline(n_models - 0.5, color="white", lw=2.5)
if has_hard:
    ax.axvline(len([k for k in kinds if k in EASY]) - 0.5, color="white", lw=2.5)
ax.set_title("Verb-tense accuracy [Wilson 95%] per construction: schemes, then rules without a model", fontsize=9)
fig.colorbar(im, ax=ax, fraction=0.03, pad=0.02, label="accuracy")
common.save(fig, dst)
