"""sensitivity.png from 27-mixed-epi/results.json: the KLD one Linear adds when it alone is quantized (every
other Linear and the embedding fp16), as heat maps of layer x tensor kind, one panel per recipe, on one shared
log colour scale; a last column per panel: the whole layer quantized at once.

usage: mixed_sensitivity.py results.json sensitivity.png
"""
import math

import matplotlib.colors as mcolors

import common

src, dst = common.usage(2, "results.json sensitivity.png")
res = common.load(src)
sv = res["sensitivity"]
KINDS = ["qkv", "attn_out", "mlp_up", "mlp_down", "whole layer"]
recipes = []
for e in sv["linears"]:
    if e["recipe"] not in recipes:
        recipes.append(e["recipe"])
layers = sorted({e["layer"] for e in sv["linears"]})
floor = 1e-9
vals = {}
for e in sv["linears"]:
    vals[(e["recipe"], e["layer"], e["kind"])] = e["dkl"]
for e in sv["layers"]:
    vals[(e["recipe"], e["layer"], "whole layer")] = e["dkl"]
pos = [v for v in vals.values() if v > 0]
norm = mcolors.LogNorm(vmin=max(min(pos), floor) if pos else floor, vmax=max(pos) if pos else 1)
fig, axes = common.plt.subplots(1, len(recipes), figsize=(4.2 * len(recipes), 3.6), squeeze=False)
for ax, r in zip(axes[0], recipes):
    grid = [[max(vals.get((r, l, k), math.nan), norm.vmin) if (r, l, k) in vals else math.nan for k in KINDS] for l in layers]
    im = ax.imshow(grid, norm=norm, cmap="magma_r", aspect="auto")
    for i, l in enumerate(layers):
        for j, k in enumerate(KINDS):
            v = vals.get((r, l, k))
            if v is not None:
                ax.text(j, i, f"{v:.1e}", ha="center", va="center", fontsize=6.5,
                        color="white" if v > 0 and norm(v) > 0.6 else "black")
    ax.set_xticks(range(len(KINDS)), [k.replace("whole layer", "layer") for k in KINDS], fontsize=8, rotation=30)
    ax.set_yticks(range(len(layers)), [f"layer {l}" for l in layers] if ax is axes[0][0] else [], fontsize=8)
    ax.set_title(r, fontsize=9)
fig.colorbar(im, ax=axes[0].tolist(), label="KLD added over the all-fp16 model (nats/token)")
fig.suptitle(f"Layer sensitivity: one Linear quantized, the rest fp16 (KLD over {sv['tokens']} test tokens; "
             f"all-fp16 base {sv['base_fp16']['kl_mean']:.2g})", fontsize=10)
common.save(fig, dst)
