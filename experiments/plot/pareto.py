"""pareto.png from 26-quant-curve/results.json: model bytes (log x) vs test perplexity, one labelled dot
per scheme, the lower-left Pareto frontier (as results.json marks it) drawn as a step line, ΔPPL's 95%
interval (paired against fp32) as error bars; when the rows carry a divergence against fp32, a second
panel: bytes vs mean KL(fp32 || scheme) on a log axis with its 95% interval (the fp32 row, KLD 0, is left out).

usage: pareto.py results.json pareto.png
"""
import common

src, dst = common.usage(2, "results.json pareto.png")
res = common.load(src)
rows = common.ok(res["schemes"])
has_kld = any("divergence" in r for r in rows)
fig, axes = common.plt.subplots(1, 2 if has_kld else 1, figsize=(15 if has_kld else 7.5, 5.5))
ax = axes[0] if has_kld else axes
# Labels alternate above and below in order of size, so schemes of nearly equal bytes stay readable.
for i, r in enumerate(sorted(rows, key=lambda r: r["bytes"])):
    on = r.get("on_pareto_frontier", False)
    ax.scatter(r["bytes"], r["ppl"], s=45, color="tab:red" if on else "tab:blue", zorder=3)
    if "divergence" in r:
        d = r["divergence"]
        ref = d["ppl_reference"]
        lo_, hi_ = ref + d["delta_ppl"]["ci95"][0], ref + d["delta_ppl"]["ci95"][1]
        ax.errorbar(r["bytes"], r["ppl"], yerr=[[max(0.0, r["ppl"] - lo_)], [max(0.0, hi_ - r["ppl"])]], fmt="none",
                    ecolor="0.3", lw=0.8, capsize=2, zorder=2)
    dy = [8, -14, 20, -26][i % 4]
    ax.annotate(f'{r["scheme"]} ({r["ppl"]:.3f})', (r["bytes"], r["ppl"]), textcoords="offset points", xytext=(6, dy),
                fontsize=7.5, arrowprops=dict(arrowstyle="-", lw=0.4, color="0.5"))
xs, ys = common.frontier_steps((r["bytes"], r["ppl"]) for r in rows if r.get("on_pareto_frontier"))
if xs:
    ax.plot(xs, ys, color="tab:red", lw=1.2, label="Pareto frontier (lower-left)")
floor = rows[0].get("ppl_floor") if rows else None
if rows:
    lo, hi = min(r["ppl"] for r in rows), max(r["ppl"] for r in rows)
    if hi > 1.5 * lo:  # the breaking region: a log axis keeps the near-fp32 rows apart
        ax.set_yscale("log")
    else:
        pad = max(hi - lo, 1e-3) * 0.6
        ax.set_ylim(lo - pad, hi + pad)
ax.set_xscale("log")
ax.set_xlabel("model bytes (Linear codes + scales + zero-points, embedding, norms)")
ax.set_ylabel("test perplexity")
ax.set_title("MiniGPT: size vs test perplexity per scheme" + (f" (corpus floor {floor:.3f})" if floor else ""))
ax.grid(True, which="both", alpha=0.25)
ax.legend(fontsize=8)
if has_kld:
    bx = axes[1]
    kr = sorted((r for r in rows if "divergence" in r and r["divergence"]["kl"]["mean"] > 0), key=lambda r: r["bytes"])
    for i, r in enumerate(kr):
        k = r["divergence"]["kl"]
        gptq = r.get("method") == "gptq"
        bx.errorbar(r["bytes"], k["mean"], yerr=[[k["mean"] - max(k["ci95"][0], 1e-12)], [k["ci95"][1] - k["mean"]]],
                    fmt="s" if gptq else "o", color="tab:green" if gptq else "tab:blue", ms=5, capsize=2, lw=0.8)
        bx.annotate(f'{r["scheme"]} ({k["mean"]:.2g})', (r["bytes"], k["mean"]), textcoords="offset points",
                    xytext=(6, [8, -14, 20, -26][i % 4]), fontsize=7.5, arrowprops=dict(arrowstyle="-", lw=0.4, color="0.5"))
    bx.set_xscale("log")
    bx.set_yscale("log")
    bx.set_xlabel("model bytes")
    bx.set_ylabel("mean KL(fp32 || scheme), nats per token (95% CI)")
    bx.set_title("size vs divergence from fp32 (squares: GPTQ)")
    bx.grid(True, which="both", alpha=0.25)
common.save(fig, dst)
