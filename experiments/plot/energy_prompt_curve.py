"""energy_prompt_curve.png from 28-energy/summary.json: the prompt-length curve. Left: prefill and decode
energy per token against the prompt length (log x), one colour per method (solid prefill, dashed
decode). Right: prefill's share of a request's energy (the prompt plus the curve's generated tokens),
with the 50% line where prefill overtakes decode. One row per model.

usage: energy_prompt_curve.py summary.json energy_prompt_curve.png
"""
import common

src, dst = common.usage(2, "summary.json energy_prompt_curve.png")
s = common.load(src)
models = [k for k in ("minigpt", "gpt2_small_shaped") if k in s["models"] and "prompt_curve" in s["models"][k]]
fig, axes = common.plt.subplots(max(1, len(models)), 2, figsize=(12, 4.2 * max(1, len(models))), squeeze=False)
for row, key in zip(axes, models):
    pc = s["models"][key]["prompt_curve"]
    colors = common.plt.cm.tab10.colors
    for i, (m, pts) in enumerate(pc["methods"].items()):
        L = [p["prompt"] for p in pts]
        c = colors[i % len(colors)]
        row[0].plot(L, [1e3 * p["prefill_joules_per_token"] for p in pts], "-o", color=c, ms=4, label=f"{m} prefill")
        row[0].plot(L, [1e3 * p["decode_joules_per_token"] for p in pts], "--s", color=c, ms=4, label=f"{m} decode")
        row[1].plot(L, [100 * p["prefill_share"] for p in pts], "-o", color=c, ms=4, label=m)
    title = s["models"][key].get("title", key)
    row[0].set_xscale("log", base=2)
    row[0].set_yscale("log")
    row[0].set_xlabel("prompt tokens")
    row[0].set_ylabel("mJ per token")
    row[0].set_title(f"{title}: energy per token by phase", fontsize=10)
    row[0].grid(True, which="both", alpha=0.25)
    row[0].legend(fontsize=7, ncol=2)
    row[1].axhline(50, color="grey", lw=1, ls=":")
    row[1].set_xscale("log", base=2)
    row[1].set_ylim(0, 100)
    row[1].set_xlabel("prompt tokens")
    row[1].set_ylabel(f"prefill's share of the request's energy (%), {pc['gen_tokens']} generated")
    row[1].set_title(f"{title}: where prefill overtakes decode", fontsize=10)
    row[1].grid(True, alpha=0.25)
    row[1].legend(fontsize=7)
kind = "measured" if s["measured"] else "MODELLED (estimate)"
fig.suptitle(f"Energy per token against prompt length, {kind}: {s['energy_source']}", fontsize=9)
common.save(fig, dst)
