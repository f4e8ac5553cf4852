"""roofline.png from 01-roofline/ceilings.json: one panel per measured thread count.

usage: roofline.py ceilings.json roofline.png
"""
import common

src, dst = common.usage(2, "ceilings.json roofline.png")
ceil = common.load(src)
threads = ceil["threads"]
fig, axes = common.plt.subplots(1, len(threads), figsize=(6.5 * len(threads), 5), squeeze=False)
for ax, t in zip(axes[0], threads):
    common.draw_ceilings(ax, ceil, t)
    ax.set_title(f"{t} thread{'s' if t > 1 else ''}")
    ax.set_ylim(1, 4 * max(c["median"] for c in common.ceilings_for(ceil, t)[0]))
fig.suptitle(f'Roofline of {ceil.get("machine", {}).get("cpu_model", "this machine")} (measured {ceil.get("date", "")})')
common.save(fig, dst)
