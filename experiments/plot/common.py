"""Shared by the figure scripts: JSON loading and atomic PNG writes (temp file + rename)."""
import json
import os
import sys
import tempfile

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
    """Writes the figure to a temporary file of our own next to `path` (created exclusively, so two runs
    never share one), then renames it over: a crash leaves no half PNG. An existing `path` that is not a
    regular file (a folder, a FIFO, a device) is refused with one line, and the temporary file removed."""
    if os.path.lexists(path) and not os.path.islink(path) and not os.path.isfile(path):
        sys.exit(f"{os.path.basename(sys.argv[0])}: {path} exists and is not a regular file; not writing over it")
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            fig.savefig(f, format="png", dpi=130, bbox_inches="tight")
        os.replace(tmp, path)
    except OSError as e:
        sys.exit(f"{os.path.basename(sys.argv[0])}: cannot write {path}: {e}")
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.unlink(tmp)


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


def draw_ceilings(ax, ceil, threads, xlim=(1e-2, 1e3), alpha=1.0):
    """Roofline ceilings on a log-log axis: peak arithmetic as flat dashed lines, read bandwidth per
    level as diagonals (GFLOP/s = intensity x GB/s). A diagonal is solid up to the fp32 FMA peak (the
    roof of every weight-only kernel, which widens weights to fp32) and dotted above it, where only
    integer (or bf16) arithmetic goes. Every line is named in the legend, in words, so no label sits on
    the plot to collide with another. Returns the legend handles."""
    import numpy as np

    compute, bandwidth = ceilings_for(ceil, threads)
    top = max(c["median"] for c in compute)
    fp32 = [c["median"] for c in compute if c.get("datatype") == "fp32"]
    knee = fp32[0] if fp32 else top
    x = np.logspace(np.log10(xlim[0]), np.log10(xlim[1]), 400)
    colors = plt.cm.viridis(np.linspace(0.0, 0.85, max(1, len(bandwidth))))
    handles = []
    for c, col in zip(bandwidth, colors):
        y = x * c["median"]
        lo = y <= knee
        h, = ax.plot(x[lo], y[lo], color=col, lw=1.4, alpha=alpha, label=f'{c["level"]} read bandwidth {c["median"]:.0f} GB/s')
        hi = (y >= knee) & (y <= top)
        ax.plot(x[hi], y[hi], color=col, lw=1.2, ls=":", alpha=alpha)
        handles.append(h)
    greys = ["0.0", "0.3", "0.5", "0.65"]
    styles = ["--", "-.", (0, (5, 1.5)), (0, (1, 1.5, 4, 1.5))]
    for i, c in enumerate(sorted(compute, key=lambda c: -c["median"])):
        h = ax.axhline(c["median"], color=greys[i % 4], ls=styles[i % 4], lw=1.0, alpha=alpha,
                       label=f'{c["name"]} peak {c["median"]:.0f} {c["unit"]}')
        handles.append(h)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*xlim)
    ax.set_xlabel("arithmetic intensity (FLOP or integer op per byte moved)")
    ax.set_ylabel("GFLOP/s (GOP/s for int8 arithmetic)")
    ax.grid(True, which="both", alpha=0.2)
    return handles


def frontier_steps(points):
    """The staircase through Pareto-frontier points (x, y), sorted by x: each step holds the last y
    until the next point's x, so the line shows what the frontier guarantees between its points."""
    front = sorted(points)
    if not front:
        return [], []
    xs, ys = [front[0][0]], [front[0][1]]
    for x, y in front[1:]:
        xs += [x, x]
        ys += [ys[-1], y]
    return xs, ys


def place_labels(ax, items, fontsize=7.5):
    """Writes each (x, y, text) of `items` beside its point without covering another label or point: the
    candidates are the right side, then the left, moved up or down by whole label lines (0, +1, -1, +2, ...);
    the first that stays inside the axes and overlaps nothing placed before it wins (labels in order of x),
    with a thin line back to the point when it moved. Call it once the axes' scales and limits are final: it
    works in display coordinates."""
    fig = ax.figure
    fig.canvas.draw()
    px_per_pt = fig.dpi / 72.0
    line = fontsize * 1.3 * px_per_pt   # one label line, px
    char = fontsize * 0.56 * px_per_pt  # an average character's width, px
    gap = 6 * px_per_pt
    frame = ax.get_window_extent()
    pts = [ax.transData.transform((x, y)) for x, y, _ in items]
    placed = [(px - 4, py - 4, px + 4, py + 4) for px, py in pts]  # the points themselves

    def free(b):
        inside = b[0] >= frame.x0 and b[2] <= frame.x1 and b[1] >= frame.y0 and b[3] <= frame.y1
        return inside and all(b[2] <= o[0] or b[0] >= o[2] or b[3] <= o[1] or b[1] >= o[3] for o in placed)

    for (x, y, text), (px, py) in sorted(zip(items, pts), key=lambda t: (t[0][0], t[0][1])):
        w = char * len(text)
        choice = None
        for k in range(80):
            off = ((k + 1) // 2) * (1 if k % 2 else -1) * line
            for side in (1, -1):
                x0 = px + gap if side > 0 else px - gap - w
                box = (x0, py + off - line / 2, x0 + w, py + off + line / 2)
                if free(box):
                    choice = (side, off, box)
                    break
            if choice:
                break
        side, off, box = choice or (1, 0.0, (px + gap, py - line / 2, px + gap + w, py + line / 2))
        placed.append(box)
        ax.annotate(text, (x, y), xytext=(side * 6, off / px_per_pt), textcoords="offset points", va="center",
                    ha="left" if side > 0 else "right", fontsize=fontsize,
                    arrowprops=dict(arrowstyle="-", lw=0.4, color="0.5") if off else None)


def wilson(k, n, z=1.959963984540054):
    """Wilson score 95% interval of k / n (intervals.h `wilson`); [0, 1] for n = 0."""
    import math

    if n == 0:
        return (0.0, 1.0)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))
