"""verb_tense_accuracy.png from 26-quant-curve/results.json: accuracy bars per scheme, one bar per
construction and one for all slots, with their Wilson 95% intervals (ci95 in results.json) as error bars.

usage: verb_tense_accuracy.py results.json verb_tense_accuracy.png
"""
import numpy as np

import common

src, dst = common.usage(2, "results.json verb_tense_accuracy.png")
rows = common.ok(common.load(src)["schemes"])
kinds = list(rows[0]["verb_tense"]["by_construction"].keys()) if rows else []
series = kinds + ["overall"]
fig, ax = common.plt.subplots(figsize=(max(7, 1.3 * len(rows)), 4.8))
w = 0.8 / max(1, len(series))
x = np.arange(len(rows))
lo = 1.0
for i, k in enumerate(series):
    sc = [r["verb_tense"]["overall"] if k == "overall" else r["verb_tense"]["by_construction"][k] for r in rows]
    vals = [s["accuracy"] for s in sc]
    ci = [s.get("ci95", [s["accuracy"], s["accuracy"]]) for s in sc]
    err = np.array([[v - c[0] for v, c in zip(vals, ci)], [c[1] - v for v, c in zip(vals, ci)]])
    lo = min([lo] + [c[0] for c in ci])
    ax.bar(x + (i - (len(series) - 1) / 2) * w, vals, w, yerr=err, capsize=1.5, error_kw=dict(lw=0.6),
           label=k.replace("_", " "))
ax.set_xticks(x)
ax.set_xticklabels([r["scheme"] for r in rows], rotation=20, ha="right", fontsize=8)
ax.set_ylabel("verb-tense minimal-pair accuracy")
ax.set_ylim(max(0.0, lo - 0.25 * (1 - lo) - 0.01), 1.0 + 0.002)
ax.axhline(1 / 3, color="0.5", ls=":", lw=1)
ax.set_title("Verb-tense accuracy per scheme and construction")
ax.legend(fontsize=8, ncol=len(series), loc="upper center", bbox_to_anchor=(0.5, -0.18), frameon=False)
ax.grid(True, axis="y", alpha=0.25)
common.save(fig, dst)
