"""pareto_epi.png from 27-mixed-epi/results.json: the generalization benchmark's accuracy (test half, its
Wilson 95% interval as error bars) against joules per token (mean over the paired rounds, its 95%
interval as error bars), one dot per configuration with energy rounds; uniform maps,
hand-written mixed maps, allocated maps and the fp32 baseline marked apart; the frontier (fewer joules,
higher accuracy, as results.json marks it) drawn as a step line; dashed lines of equal EPI (J/token ÷ accuracy).
A second panel repeats it against mean KLD (log), the sensitive form of accuracy.

usage: mixed_pareto_epi.py results.json pareto_epi.png
"""
import common

src, dst = common.usage(2, "results.json pareto_epi.png")
res = common.load(src)
cs = [c for c in res["configs"] if "energy" in c]
STYLE = {"baseline": ("k", "*", "fp32 baseline"), "uniform": ("tab:blue", "o", "uniform"),
         "mixed": ("tab:orange", "s", "mixed (hand-written)"), "auto": ("tab:green", "D", "allocated (solver)")}
fig, (ax, bx) = common.plt.subplots(1, 2, figsize=(16, 6.5))
seen = set()
for i, c in enumerate(sorted(cs, key=lambda c: c["joules_per_token"])):
    color, marker, label = STYLE[c["kind"]]
    e = c["energy"]["joules_per_token"]["total"]
    x = 1e3 * e["mean"]
    xerr = [[x - 1e3 * e["ci95_low"]], [1e3 * e["ci95_high"] - x]]
    y = c["accuracy"]
    ci = c.get("accuracy_detail", {}).get("ci95")
    yerr = [[y - ci[0]], [ci[1] - y]] if ci else None
    lab = None if c["kind"] in seen else label
    seen.add(c["kind"])
    ax.errorbar(x, y, xerr=xerr, yerr=yerr, fmt=marker, color=color, ms=6, capsize=2, lw=0.7, label=lab,
                markeredgecolor="red" if c.get("on_epi_frontier") else color, markeredgewidth=1.6 if c.get("on_epi_frontier") else 0.5)
    # Accuracy saturates for most maps, so their labels would pile up on one line: name the frontier, the
    # baseline, the slowest map and any map below full accuracy; the right panel names every uniform map.
    if c.get("on_epi_frontier") or c["kind"] in ("baseline", "uniform"):
        ax.annotate(c["config_id"], (x, y), textcoords="offset points", xytext=(5, [6, -12, 16, -22][i % 4]), fontsize=7)
    kl = c["row"]["divergence"]["kl"]["mean"]
    if kl > 0:
        bx.errorbar(x, kl, xerr=xerr, fmt=marker, color=color, ms=6, capsize=2, lw=0.7, label=lab)
        if c["kind"] in ("uniform",) or c.get("on_epi_frontier"):
            bx.annotate(c["config_id"], (x, kl), textcoords="offset points", xytext=(5, [6, -12][i % 2]), fontsize=7)
xs, ys = common.frontier_steps((1e3 * c["joules_per_token"], c["accuracy"]) for c in cs if c.get("on_epi_frontier"))
if xs:
    ax.plot(xs, ys, color="red", lw=1.0, label="frontier (fewer J, higher accuracy)")
lo, hi = ax.get_xlim()
ylo, yhi = ax.get_ylim()
for c in cs:  # EPI iso-lines through the uniform configurations: accuracy = J / EPI
    if c["kind"] == "uniform" and c.get("epi"):
        epi = 1e3 * c["epi"]
        xs = [lo, hi]
        ax.plot(xs, [x / epi for x in xs], ls=":", lw=0.6, color="0.6")
ax.set_xlim(lo, hi)
ax.set_ylim(ylo, yhi)
source = res.get("energy", {}).get("energy_source", "?")
measured = res.get("energy", {}).get("measured", False)
ax.set_xlabel("joules per token, mJ (prefill + decode + post of one generation)" + ("" if measured else " — MODELLED, no energy counter"))
ax.set_ylabel("generalization benchmark accuracy (Wilson 95%)")
ax.set_title("MiniGPT: accuracy vs energy per configuration (dotted: equal EPI through each uniform map)")
ax.grid(True, alpha=0.25)
ax.legend(fontsize=8, loc="lower right")
bx.set_yscale("log")
bx.set_xlabel("joules per token, mJ")
bx.set_ylabel("mean KL(fp32 || config), nats per token")
bx.set_title("divergence from fp32 vs energy")
bx.grid(True, which="both", alpha=0.25)
bx.legend(fontsize=8)
fig.text(0.01, 0.005, f"energy source: {source}", fontsize=7, color="0.4")
common.save(fig, dst)
