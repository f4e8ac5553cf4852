"""energy_batch.png from 28-energy/summary.json: energy per generated token (decode + sampling)
against the number of sequences decoded together (log-log), one line per method with 95% CI bars,
one panel per model.

usage: energy_batch.py summary.json energy_batch.png
"""
import common

src, dst = common.usage(2, "summary.json energy_batch.png")
s = common.load(src)
models = [k for k in ("minigpt", "gpt2_small_shaped") if k in s["models"]]
fig, axes = common.plt.subplots(1, len(models), figsize=(6.5 * len(models), 4.6), squeeze=False)
for ax, key in zip(axes[0], models):
    for r in common.ok(s["models"][key]["methods"]):
        bs = [b["batch"] for b in r["batch"]]
        t = [b["total"]["joules_per_token"] for b in r["batch"]]
        y = [1e3 * v["mean"] for v in t]
        err = [[1e3 * (v["mean"] - v["ci95_low"]) for v in t], [1e3 * (v["ci95_high"] - v["mean"]) for v in t]]
        err[0] = [min(e, m * 0.999) for e, m in zip(err[0], y)]  # a log axis cannot show a bar below zero
        ax.errorbar(bs, y, yerr=err, marker="o", capsize=3, lw=1.2, ms=4, label=r["name"])
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("batch size B (sequences decoded together)")
    ax.set_ylabel("mJ per generated token")
    ax.set_title({"minigpt": "MiniGPT", "gpt2_small_shaped": "GPT-2-small-shaped body"}[key], fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7)
kind = "measured" if s["measured"] else "MODELLED (estimate)"
fig.suptitle(f"Energy per token vs batch size, {kind}: {s['energy_source']}", fontsize=9)
common.save(fig, dst)
