"""roofline.png from 01-roofline/ceilings.json: one panel per measured thread count.

usage: roofline.py ceilings.json roofline.png
"""
import common

src, dst = common.usage(2, "ceilings.json roofline.png")
ceil = common.load(src)
threads = ceil["threads"]
fig, axes = common.plt.subplots(1, len(threads), figsize=(6.5 * len(threads), 5.8), squeeze=False)
for ax, t in zip(axes[0], threads):
    handles = common.draw_ceilings(ax, ceil, t)
    ax.set_title(f"{t} thread{'s' if t > 1 else ''}")
    ax.set_ylim(1, 4 * max(c["median"] for c in common.ceilings_for(ceil, t)[0]))
    ax.legend(handles=handles, loc="upper left", fontsize=7, framealpha=0.95)
fig.text(0.5, -0.02, "Diagonals: read bandwidth x intensity; solid up to the fp32 FMA peak, dotted above it "
         "(reachable only by int8 or bf16 arithmetic). Dashed: peak arithmetic.", ha="center", fontsize=8)
fig.suptitle(f'Roofline of {ceil.get("machine", {}).get("cpu_model", "this machine")} (measured {ceil.get("date", "")})')
common.save(fig, dst)
