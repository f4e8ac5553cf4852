"""pareto.png from 26-quant-curve/results.json: model bytes (log x) vs test perplexity, one labelled dot
per scheme, the lower-left Pareto frontier (as results.json marks it) drawn as a step line.

usage: pareto.py results.json pareto.png
"""
import common

src, dst = common.usage(2, "results.json pareto.png")
res = common.load(src)
rows = common.ok(res["schemes"])
fig, ax = common.plt.subplots(figsize=(7.5, 5))
# Labels alternate above and below in order of size, so schemes of nearly equal bytes stay readable.
for i, r in enumerate(sorted(rows, key=lambda r: r["bytes"])):
    on = r.get("on_pareto_frontier", False)
    ax.scatter(r["bytes"], r["ppl"], s=45, color="tab:red" if on else "tab:blue", zorder=3)
    dy = [8, -14, 20, -26][i % 4]
    ax.annotate(f'{r["scheme"]} ({r["ppl"]:.3f})', (r["bytes"], r["ppl"]), textcoords="offset points", xytext=(6, dy),
                fontsize=7.5, arrowprops=dict(arrowstyle="-", lw=0.4, color="0.5"))
front = sorted((r["bytes"], r["ppl"]) for r in rows if r.get("on_pareto_frontier"))
if front:
    xs, ys = [front[0][0]], [front[0][1]]
    for x, y in front[1:]:
        xs += [x, x]
        ys += [ys[-1], y]
    ax.plot(xs, ys, color="tab:red", lw=1.2, label="Pareto frontier (lower-left)")
floor = rows[0].get("ppl_floor") if rows else None
if rows:
    lo, hi = min(r["ppl"] for r in rows), max(r["ppl"] for r in rows)
    pad = max(hi - lo, 1e-3) * 0.6
    ax.set_ylim(lo - pad, hi + pad)
ax.set_xscale("log")
ax.set_xlabel("model bytes (Linear codes + scales + zero-points, embedding, norms)")
ax.set_ylabel("test perplexity")
ax.set_title("MiniGPT: size vs test perplexity per scheme" + (f" (corpus floor {floor:.3f})" if floor else ""))
ax.grid(True, which="both", alpha=0.25)
ax.legend(fontsize=8)
common.save(fig, dst)
