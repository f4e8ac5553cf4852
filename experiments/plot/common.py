"""Shared by the figure scripts: JSON loading and atomic PNG writes (temp file + rename)."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")  # no display on a build machine
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"{os.path.basename(sys.argv[0])}: cannot read {path}: {e}")


def save(fig, path):
    """Writes the figure next to `path`, then renames it over, so a crash leaves no half PNG."""
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=130, bbox_inches="tight")
    plt.close(fig)
    os.replace(tmp, path)


def usage(n, text):
    if len(sys.argv) != n + 1:
        sys.exit(f"usage: {os.path.basename(sys.argv[0])} {text}")
    return sys.argv[1:]


def ok(rows):
    return [r for r in rows if r.get("status") == "ok"]


def ceilings_for(ceil, threads):
    """(compute ceilings, bandwidth ceilings) measured with `threads` threads."""
    rows = [c for c in ceil["ceilings"] if c["threads"] == threads]
    return [c for c in rows if c["kind"] == "compute"], [c for c in rows if c["kind"] == "bandwidth"]


def draw_ceilings(ax, ceil, threads, xlim=(1e-2, 1e3), label=True, alpha=1.0):
    """Roofline ceilings on a log-log axis: FLOP/s flat lines, bandwidth diagonals (GFLOP/s =
    intensity x GB/s) capped at the highest compute peak."""
    import numpy as np

    compute, bandwidth = ceilings_for(ceil, threads)
    top = max(c["median"] for c in compute)
    x = np.logspace(np.log10(xlim[0]), np.log10(xlim[1]), 200)
    colors = plt.cm.viridis(np.linspace(0.0, 0.85, max(1, len(bandwidth))))
    for i, (c, col) in enumerate(zip(bandwidth, colors)):
        y = np.minimum(x * c["median"], top)
        ax.plot(x, y, color=col, lw=1.4, alpha=alpha)
        if label:  # staggered up the diagonal so neighbouring levels' labels do not overlap, inside the axes
            xi = max(xlim[0] * 1.5 * 2.2 ** i, 2.0 * 2.5 ** i / c["median"])
            xi = min(xi, top / c["median"] / 2)
            ax.text(xi * 1.15, xi * c["median"], f'{c["level"]} read {c["median"]:.0f} GB/s', color=col, fontsize=7,
                    ha="left", va="top")
    for i, c in enumerate(sorted(compute, key=lambda c: c["median"])):
        ax.axhline(c["median"], color="0.35", ls="--", lw=1.0, alpha=alpha)
        if label:  # alternate right / middle: two peaks can be almost equal
            ax.text(xlim[1] if i % 2 == 0 else xlim[1] / 40, c["median"] * 1.03, f'{c["name"]} {c["median"]:.0f} {c["unit"]}',
                    fontsize=7, ha="right", va="bottom", color="0.25")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*xlim)
    ax.set_xlabel("arithmetic intensity (FLOP or OP per byte)")
    ax.set_ylabel("GFLOP/s (GOP/s for int8)")
    ax.grid(True, which="both", alpha=0.2)
