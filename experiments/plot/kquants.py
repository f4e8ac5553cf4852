"""kld_vs_bits.png from 29-kquants/results.json: bits per weight of the Linears (x) against the mean KL divergence
from fp32 (log y) with its 95% interval, one line per quantizer (llama.cpp's without and with the importance
matrix, ours: the search, the search with the same importance, GPTQ), the K types and mixes as its points, each
labelled by its type on the lowest line.

usage: kquants.py results.json kld_vs_bits.png
"""
import common

src, dst = common.usage(2, "results.json kld_vs_bits.png")
res = common.load(src)
rows = [r for r in res["rows"] if r.get("ok")]
style = {
    "llama.cpp": ("tab:gray", "o", "--"),
    "llama.cpp+imatrix": ("black", "s", "--"),
    "ours": ("tab:blue", "o", "-"),
    "ours+imatrix": ("tab:green", "s", "-"),
    "ours-gptq": ("tab:red", "D", "-"),
}
fig, ax = common.plt.subplots(figsize=(9, 6.5))
for q in res.get("quantizers", sorted({r["quantizer"] for r in rows})):
    pts = sorted((r["bits_per_weight"], r["kld"]["mean"], r["kld"]["low"], r["kld"]["high"], r["type"])
                 for r in rows if r["quantizer"] == q)
    if not pts:
        continue
    color, marker, line = style.get(q, ("tab:purple", "^", "-"))
    xs = [p[0] for p in pts]
    ys = [p[1] for p in pts]
    ax.plot(xs, ys, line, color=color, marker=marker, ms=5, lw=1.2, label=q)
    ax.errorbar(xs, ys, yerr=[[max(0.0, p[1] - p[2]) for p in pts], [max(0.0, p[3] - p[1]) for p in pts]], fmt="none",
                ecolor=color, lw=0.8, capsize=2)
# Label each type once, at its lowest KLD.
best = {}
for r in rows:
    if r["type"] not in best or r["kld"]["mean"] < best[r["type"]][1]:
        best[r["type"]] = (r["bits_per_weight"], r["kld"]["mean"])
common.place_labels(ax, [(x, y, t) for t, (x, y) in best.items()])
ax.set_yscale("log")
ax.set_xlabel("bits per weight (Linears; the embedding is fp16 in every row)")
ax.set_ylabel("mean KL(fp32 || quantized) per test token, nats")
ax.set_title("MiniGPT in llama.cpp's K types: llama.cpp's quantizer beside ours")
ax.grid(True, which="both", alpha=0.3)
ax.legend()
common.save(fig, dst)
