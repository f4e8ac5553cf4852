"""roofline_overlay.png: the ceilings of 01-roofline with the measured decode dots (fp32, int8, int4)
of MiniGPT and of the GPT-2-small-shaped body, each annotated with the ceiling it sits under.

usage: roofline_overlay.py results.json ceilings.json roofline_overlay.png
"""
import common

src, csrc, dst = common.usage(3, "results.json ceilings.json roofline_overlay.png")
res = common.load(src)
ceil = common.load(csrc)
models = [("MiniGPT", res["schemes"], "o")]
if "gpt2_small_shaped" in res:
    models.append(("GPT-2-small-shaped", res["gpt2_small_shaped"]["schemes"], "s"))
wanted = {"fp32": "tab:blue", "int8-per-channel": "tab:orange", "int4-g64": "tab:green"}
threads = max((r.get("threads", 1) for _, rows, _ in models for r in common.ok(rows)), default=1)
avail = [t for t in ceil["threads"]]
t = min(avail, key=lambda a: abs(a - threads))
fig, ax = common.plt.subplots(figsize=(8.5, 6))
common.draw_ceilings(ax, ceil, t, xlim=(0.05, 100))
k = 0
for name, rows, marker in models:
    for r in common.ok(rows):
        if r["scheme"] not in wanted:
            continue
        k += 1
        x, y = r["decode_traffic"]["intensity"], r["decode_gflops"]
        ax.scatter(x, y, marker=marker, s=60, color=wanted[r["scheme"]], edgecolor="k", zorder=4)
        bound = r.get("roofline", {})
        note = f'{name} {r["scheme"]}\n{y:.1f} GFLOP/s'
        if bound:
            note += f' = {100 * bound["fraction_of_bound"]:.0f}% of\n{bound["ceiling"]}'
        # Dots sit close together: labels fan out to fixed offsets, joined to their dot by a thin line.
        off = [(-150, 40), (-40, 70), (40, 45), (-150, -45), (30, -60), (60, -25)][(k - 1) % 6]
        ax.annotate(note, (x, y), textcoords="offset points", xytext=off, fontsize=6.5,
                    arrowprops=dict(arrowstyle="-", lw=0.5, color="0.4"))
ax.set_ylim(0.5, 4 * max(c["median"] for c in common.ceilings_for(ceil, t)[0]))
ax.set_title(f"Decode on the roofline ({t} thread{'s' if t > 1 else ''}): o MiniGPT, s GPT-2-small-shaped")
common.save(fig, dst)
