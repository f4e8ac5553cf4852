"""energy_phases.png from 28-energy/summary.json: energy per generated token, stacked by phase
(prefill, decode, post; each phase's joules per run divided by the run's generated tokens), one bar
per method, one panel per model, with the 95% CI of the total as an error bar. The title says
whether the joules were measured or MODELLED.

usage: energy_phases.py summary.json energy_phases.png
"""
import common

src, dst = common.usage(2, "summary.json energy_phases.png")
s = common.load(src)
models = [k for k in ("minigpt", "gpt2_small_shaped") if k in s["models"]]
fig, axes = common.plt.subplots(1, len(models), figsize=(6.5 * len(models), 4.8), squeeze=False)
colors = {"prefill": "tab:blue", "decode": "tab:orange", "post": "tab:green"}
for ax, key in zip(axes[0], models):
    rows = common.ok(s["models"][key]["methods"])
    names = [r["name"] for r in rows]
    bottom = [0.0] * len(rows)
    for ph in ("prefill", "decode", "post"):
        # mJ per generated token: the phase's joules per run over the run's generated tokens.
        vals = [1e3 * r["phases"][ph]["joules"]["mean"] / r["phases"]["total"]["tokens"] for r in rows]
        ax.bar(names, vals, bottom=bottom, color=colors[ph], label=ph)
        bottom = [b + v for b, v in zip(bottom, vals)]
    tot = [r["phases"]["total"]["joules_per_token"] for r in rows]
    err = [[1e3 * (t["mean"] - t["ci95_low"]) for t in tot], [1e3 * (t["ci95_high"] - t["mean"]) for t in tot]]
    ax.errorbar(names, [1e3 * t["mean"] for t in tot], yerr=err, fmt="none", ecolor="black", capsize=4, lw=1,
                label="total, 95% CI")
    ax.set_ylabel("mJ per generated token")
    ax.set_title({"minigpt": "MiniGPT", "gpt2_small_shaped": "GPT-2-small-shaped body"}[key], fontsize=10)
    ax.tick_params(axis="x", rotation=35, labelsize=8)
    ax.grid(True, axis="y", alpha=0.25)
    ax.legend(fontsize=8)
kind = "measured" if s["measured"] else "MODELLED (estimate)"
fig.suptitle(f"Energy per token by phase, {kind}: {s['energy_source']}", fontsize=9)
common.save(fig, dst)
