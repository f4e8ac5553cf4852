"""energy_accuracy.png from 28-energy/summary.json: MiniGPT's energy per generated token (x, with
its 95% CI) against accuracy: the generalization benchmark's accuracy (test half, with its Wilson 95%
interval; left) and the fraction of greedy tokens identical to float32's (right), one labelled dot per
configuration (the control left out: it is float32 again).

usage: energy_accuracy.py summary.json energy_accuracy.png
"""
import common

src, dst = common.usage(2, "summary.json energy_accuracy.png")
s = common.load(src)
rows = [r for r in common.ok(s["models"].get("minigpt", {}).get("methods", [])) if r.get("role") != "control"]
fig, axes = common.plt.subplots(1, 2, figsize=(12, 4.6))
panels = [("accuracy", "generalization benchmark accuracy (Wilson 95%)"), ("greedy_agreement_with_float32", "greedy tokens identical to float32's")]
for ax, (field, label) in zip(axes, panels):
    for i, r in enumerate(rows):
        y = r["accuracy"].get(field)
        if y is None:
            continue
        t = r["phases"]["total"]["joules_per_token"]
        x = 1e3 * t["mean"]
        ci = r["accuracy"].get("accuracy_ci95") if field == "accuracy" else None
        yerr = [[y - ci[0]], [ci[1] - y]] if ci else None
        ax.errorbar([x], [y], xerr=[[x - 1e3 * t["ci95_low"]], [1e3 * t["ci95_high"] - x]], yerr=yerr, fmt="o", capsize=3, ms=5)
        ax.annotate(r["name"], (x, y), textcoords="offset points", xytext=(5, [6, -12][i % 2]), fontsize=8)
    ax.set_xlabel("mJ per generated token (total, 95% CI)")
    ax.set_ylabel(label)
    ax.grid(True, alpha=0.25)
kind = "measured" if s["measured"] else "MODELLED (estimate)"
fig.suptitle(f"MiniGPT: energy per token vs accuracy, {kind}: {s['energy_source']}", fontsize=9)
common.save(fig, dst)
