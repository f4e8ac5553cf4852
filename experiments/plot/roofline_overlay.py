"""roofline_overlay.png: the ceilings of 01-roofline with the measured decode dots of MiniGPT and of
the GPT-2-small-shaped body (fp32, int8, int4, and the +a8 integer-activation rows), each named in the
legend with its speed and the ceiling it sits under: the sweep judges a weight-only row against fp32
arithmetic and a +a8 row against the int8 peak, whichever roof is lower at its intensity.

usage: roofline_overlay.py results.json ceilings.json roofline_overlay.png
"""
import common

src, csrc, dst = common.usage(3, "results.json ceilings.json roofline_overlay.png")
res = common.load(src)
ceil = common.load(csrc)
models = [("MiniGPT", res["schemes"], "o")]
if "gpt2_small_shaped" in res:
    models.append(("GPT-2-small-shaped", res["gpt2_small_shaped"]["schemes"], "s"))
wanted = {"fp32": "tab:blue", "int8-per-channel": "tab:orange", "int4-g64": "tab:green",
          "int8-per-channel+a8": "tab:red", "int4-g64+a8": "tab:purple"}
threads = max((r.get("threads", 1) for _, rows, _ in models for r in common.ok(rows)), default=1)
t = min(ceil["threads"], key=lambda a: abs(a - threads))
fig, ax = common.plt.subplots(figsize=(9, 6.5))
ceiling_handles = common.draw_ceilings(ax, ceil, t, xlim=(0.05, 100))
dot_handles = []
for name, rows, marker in models:
    for r in common.ok(rows):
        if r["scheme"] not in wanted or "decode_traffic" not in r:
            continue
        x, y = r["decode_traffic"]["intensity"], r["decode_gflops"]
        unit = "GOP/s" if r["scheme"].endswith("+a8") else "GFLOP/s"
        label = f'{name} {r["scheme"]}: {y:.1f} {unit}'
        bound = r.get("roofline", {})
        if bound:
            label += f', {100 * bound["fraction_of_bound"]:.0f}% of {bound["ceiling"]}'
        # Squares larger and beneath circles: a MiniGPT dot that lands on a GPT-2-shaped one stays visible.
        big = marker == "s"
        h = ax.scatter(x, y, marker=marker, s=120 if big else 45, color=wanted[r["scheme"]], edgecolor="k",
                       zorder=3 if big else 5, label=label)
        dot_handles.append(h)
ax.set_ylim(0.5, 4 * max(c["median"] for c in common.ceilings_for(ceil, t)[0]))
first = ax.legend(handles=ceiling_handles, loc="upper left", fontsize=7, title="ceilings", title_fontsize=7,
                  framealpha=0.95)
ax.add_artist(first)
fig.legend(handles=dot_handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=1, fontsize=7,
           title="decode, measured (circles: MiniGPT, squares: GPT-2-small-shaped body)", title_fontsize=7.5)
ax.set_title(f"Decode on the roofline ({t} thread{'s' if t > 1 else ''})")
common.save(fig, dst)
