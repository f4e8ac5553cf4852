"""pareto_bytes.png from 27-mixed-epi/results.json: mean KL(fp32 || config) (log, 95% interval) against model
bytes, one dot per configuration (uniform, hand-written mixed, allocated marked apart), the lower-left frontier
(as results.json marks it), and the allocation solver's predicted frontier (additive per-Linear KLD from the
sensitivity units, plus the all-fp16 base; the embedding and the fp32 parameters added to its Linear bytes).

usage: mixed_pareto_bytes.py results.json pareto_bytes.png
"""
import common

src, dst = common.usage(2, "results.json pareto_bytes.png")
res = common.load(src)
cs = [c for c in res["configs"] if c["row"]["divergence"]["kl"]["mean"] > 0]
STYLE = {"uniform": ("tab:blue", "o", "uniform"), "mixed": ("tab:orange", "s", "mixed (hand-written)"),
         "auto": ("tab:green", "D", "allocated (solver), measured")}
fig, ax = common.plt.subplots(figsize=(11, 6.5))
seen = set()
labels = []
for c in sorted(cs, key=lambda c: c["row"]["bytes"]):
    color, marker, label = STYLE.get(c["kind"], ("k", "*", c["kind"]))
    k = c["row"]["divergence"]["kl"]
    x = c["row"]["bytes"] / 1024
    ax.errorbar(x, k["mean"], yerr=[[k["mean"] - max(k["ci95"][0], 1e-12)], [k["ci95"][1] - k["mean"]]], fmt=marker, color=color,
                ms=6, capsize=2, lw=0.7, label=None if c["kind"] in seen else label,
                markeredgecolor="red" if c.get("on_bytes_frontier") else color, markeredgewidth=1.6 if c.get("on_bytes_frontier") else 0.5)
    seen.add(c["kind"])
    if c["kind"] != "auto" or c.get("on_bytes_frontier"):
        labels.append((x, k["mean"], c["config_id"]))
xs, ys = common.frontier_steps((c["row"]["bytes"] / 1024, c["row"]["divergence"]["kl"]["mean"]) for c in cs if c.get("on_bytes_frontier"))
if xs:
    ax.plot(xs, ys, color="red", lw=1.0, label="measured frontier (lower-left)")
alloc = res.get("allocation")
if alloc and cs:
    # Model bytes = Linear bytes + what every configuration stores the same (fp16 embedding, fp32 rest).
    ref = cs[0]["row"]
    fixed = ref["bytes"] - ref["bytes_linear"]
    pts = [((p["linear_bytes"] + fixed) / 1024, p["predicted_kl"]) for p in alloc["frontier"] if p["predicted_kl"] > 0]
    if pts:
        ax.plot([p[0] for p in pts], [p[1] for p in pts], color="tab:green", lw=0.8, ls="--", alpha=0.8,
                label="solver's predicted frontier (additive sensitivities)")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("model KiB (Linear codes + scales, fp16 embedding, fp32 norms and biases)")
ax.set_ylabel("mean KL(fp32 || config), nats per token (95% CI)")
ax.set_title("MiniGPT: size vs divergence from fp32, uniform vs mixed vs allocated maps")
ax.grid(True, which="both", alpha=0.25)
ax.legend(fontsize=8)
common.place_labels(ax, labels, fontsize=6.5)
common.save(fig, dst)
