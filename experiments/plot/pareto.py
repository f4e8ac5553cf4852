"""pareto.png from 26-quant-curve/results.json: model bytes (log x) vs test perplexity, one labelled dot
per scheme, the lower-left Pareto frontier (as results.json marks it) drawn as a step line, ΔPPL's 95%
interval (paired against fp32) as error bars; when the rows carry a divergence against fp32, a second
panel: bytes vs mean KL(fp32 || scheme) on a log axis with its 95% interval (the fp32 row, KLD 0, is left out);
when the rows carry the generalization benchmark, a third: bytes vs its accuracy with the Wilson 95% interval,
its upper-left frontier (the smallest model at each accuracy) as a step line, and fp32's interval as a band.

usage: pareto.py results.json pareto.png
"""
import common

src, dst = common.usage(2, "results.json pareto.png")
res = common.load(src)
rows = common.ok(res["schemes"])
has_kld = any("divergence" in r for r in rows)
has_gen = any("generalization" in r for r in rows)
panels = 1 + has_kld + has_gen
fig, axes = common.plt.subplots(1, panels, figsize=(8 * panels, 6.5), squeeze=False)
axes = axes[0]
fig.subplots_adjust(wspace=0.25)
ax = axes[0]
# A scheme far above the rest (the breaking region, e.g. int2-g64 RTN) would squeeze every other row into a
# few pixels: the axis covers the rows within 1.5x of the best perplexity, and the others sit on its top
# edge as an upward triangle labelled with their perplexity.
lo = min((r["ppl"] for r in rows), default=0.0)
near = [r for r in rows if r["ppl"] <= 1.5 * lo]
far = [r for r in rows if r["ppl"] > 1.5 * lo]
hi = max((r["ppl"] for r in near), default=lo)
pad = max(hi - lo, 1e-3) * 0.15
top = hi + pad
labels = []
for r in rows:
    on = r.get("on_pareto_frontier", False)
    color = "tab:red" if on else "tab:blue"
    if r in far:
        ax.scatter(r["bytes"], top, s=60, marker="^", color=color, zorder=3, clip_on=False)
        labels.append((r["bytes"], top, f'{r["scheme"]} (PPL {r["ppl"]:.2f}, off scale)'))
        continue
    ax.scatter(r["bytes"], r["ppl"], s=45, color=color, zorder=3)
    if "divergence" in r:
        d = r["divergence"]
        ref = d["ppl_reference"]
        lo_, hi_ = ref + d["delta_ppl"]["ci95"][0], ref + d["delta_ppl"]["ci95"][1]
        ax.errorbar(r["bytes"], r["ppl"], yerr=[[max(0.0, r["ppl"] - lo_)], [max(0.0, hi_ - r["ppl"])]], fmt="none",
                    ecolor="0.3", lw=0.8, capsize=2, zorder=2)
    labels.append((r["bytes"], r["ppl"], f'{r["scheme"]} ({r["ppl"]:.3f})'))
xs, ys = common.frontier_steps((r["bytes"], min(r["ppl"], top)) for r in rows if r.get("on_pareto_frontier"))
if xs:
    ax.plot(xs, ys, color="tab:red", lw=1.2, label="Pareto frontier (lower-left)")
floor = rows[0].get("ppl_floor") if rows else None
if rows:
    ax.set_ylim(lo - pad, top)
ax.set_xscale("log")
ax.set_xlabel("model bytes (Linear codes + scales + zero-points, embedding, norms)")
ax.set_ylabel("test perplexity")
ax.set_title("MiniGPT: size vs test perplexity per scheme" + (f" (corpus floor {floor:.3f})" if floor else ""))
ax.grid(True, which="both", alpha=0.25)
ax.legend(fontsize=8, loc="upper right")
if has_kld:
    bx = axes[1]
    kr = [r for r in rows if "divergence" in r and r["divergence"]["kl"]["mean"] > 0]
    for r in kr:
        k = r["divergence"]["kl"]
        gptq = r.get("method") == "gptq"
        bx.errorbar(r["bytes"], k["mean"], yerr=[[k["mean"] - max(k["ci95"][0], 1e-12)], [k["ci95"][1] - k["mean"]]],
                    fmt="s" if gptq else "o", color="tab:green" if gptq else "tab:blue", ms=5, capsize=2, lw=0.8)
    bx.set_xscale("log")
    bx.set_yscale("log")
    bx.set_xlabel("model bytes")
    bx.set_ylabel("mean KL(fp32 || scheme), nats per token (95% CI)")
    bx.set_title("size vs divergence from fp32 (squares: GPTQ)")
    bx.grid(True, which="both", alpha=0.25)
    common.place_labels(bx, [(r["bytes"], r["divergence"]["kl"]["mean"], f'{r["scheme"]} ({r["divergence"]["kl"]["mean"]:.2g})') for r in kr])
if has_gen:
    gx = axes[-1]
    gr = [r for r in rows if "generalization" in r]
    pts = []
    for r in gr:
        o = r["generalization"]["overall"]
        lo_, hi_ = common.wilson(o["correct"], o["total"])
        gptq = r.get("method") == "gptq"
        gx.errorbar(r["bytes"], o["accuracy"], yerr=[[o["accuracy"] - lo_], [hi_ - o["accuracy"]]], fmt="s" if gptq else "o",
                    color="tab:green" if gptq else "tab:blue", ms=5, capsize=2, lw=0.8)
        pts.append((r["bytes"], o["accuracy"], f'{r["scheme"]} ({o["accuracy"]:.3f})'))
        if r["scheme"] == res.get("baseline"):
            gx.axhspan(lo_, hi_, color="0.85", zorder=0, label=f'{r["scheme"]} Wilson 95%')
    # Upper-left frontier: a point is on it when no other is at most as large and strictly more accurate.
    front = sorted((b, a) for b, a, _ in pts if not any(b2 <= b and a2 > a for b2, a2, _ in pts))
    if front:
        xs, ys = [], []
        for b, a in front:
            if ys and a <= ys[-1]:
                continue
            if xs:
                xs.append(b)
                ys.append(ys[-1])
            xs.append(b)
            ys.append(a)
        gx.plot(xs, ys, color="tab:red", lw=1.2, label="frontier (smallest at each accuracy)")
    gx.set_xscale("log")
    gx.set_xlabel("model bytes")
    gx.set_ylabel("generalization accuracy (scored paradigms, Wilson 95%)")
    gx.set_title(f'size vs generalization ({gr[0]["generalization"]["split"]} half; squares: GPTQ)')
    gx.grid(True, which="both", alpha=0.25)
    gx.legend(fontsize=8, loc="lower right")
    common.place_labels(gx, pts)
common.place_labels(ax, labels)
common.save(fig, dst)
