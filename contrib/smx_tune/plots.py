# SPDX-License-Identifier: BSD-3-Clause
"""Figures: bandwidth against size per class, and one summary of every class."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from . import analysis  # noqa: E402

STYLE = {analysis.DOUBLE: ("double copy", "tab:blue", "o"),
         "cma": ("single copy: cma", "tab:orange", "s"),
         "knemlike": ("single copy: knemlike", "tab:green", "^"),
         "xpmem": ("single copy: xpmem", "tab:red", "D")}
DPI = 80


def _size_axis(ax):
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: analysis.human(int(x))))
    ax.set_xlabel("message size (bytes)")
    ax.grid(True, which="major", alpha=0.3)


def _label(dec):
    if dec is None or dec.threshold is None:
        return "threshold: auto (measured)"
    if dec.threshold == 0:
        return "single copy: never"
    return "single copy from %s" % analysis.human(dec.threshold)


def class_figure(path, cls, pair, eager_limit, med, protocols, decision, title_extra=""):
    """Median bandwidth (with the range over runs) per protocol, the eager region shaded,
    the chosen threshold marked."""
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    top = 0
    all_sizes = sorted({s for proto in protocols for s in med.get((cls, proto), {}) if s > 0})
    for proto in protocols:
        pts = med.get((cls, proto))
        if not pts:
            continue
        sizes = sorted(s for s in pts if s > 0)
        mbps = [pts[s].mbps for s in sizes]
        # the range over runs, as bandwidth: min time = max bandwidth
        lo = [s / pts[s].usec_max if pts[s].usec_max > 0 else 0 for s in sizes]
        hi = [s / pts[s].usec_min if pts[s].usec_min > 0 else 0 for s in sizes]
        name, color, marker = STYLE.get(proto, (proto, None, "x"))
        ax.plot(sizes, mbps, marker=marker, color=color, label=name, markersize=4)
        ax.fill_between(sizes, lo, hi, color=color, alpha=0.15, linewidth=0)
        top = max([top] + hi)
    _size_axis(ax)
    ax.set_ylabel("bandwidth (MB/s, median of runs)")
    if all_sizes:
        ax.set_xlim(all_sizes[0] / 1.3, all_sizes[-1] * 1.3)
        if eager_limit > ax.get_xlim()[0]:
            ax.axvspan(ax.get_xlim()[0], min(eager_limit, ax.get_xlim()[1]), color="grey",
                       alpha=0.12, label="eager (threshold has no effect)")
    if decision is not None and decision.threshold:
        ax.axvline(decision.threshold, color="black", linestyle="--",
                   label="chosen: " + _label(decision))
    ax.set_ylim(0, top * 1.1 if top else 1)
    ax.set_title("class %s (CPUs %d, %d): %s%s" % (cls, pair[0], pair[1], _label(decision),
                                                    title_extra), fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def summary_figure(path, classes, mech, med, decisions, eager_limits, title_extra=""):
    """Speedup of single copy over double copy per class (> 1: single copy faster), the
    chosen thresholds as markers."""
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, cls in enumerate(classes):
        dbl, sgl = med.get((cls, analysis.DOUBLE), {}), med.get((cls, mech), {}) if mech else {}
        sizes = sorted(s for s in set(dbl) & set(sgl) if s > eager_limits[cls]
                       and sgl[s].usec > 0)
        if not sizes:
            continue
        ratio = [dbl[s].usec / sgl[s].usec for s in sizes]
        color = colors[i % len(colors)]
        dec = decisions.get(cls)
        ax.plot(sizes, ratio, marker="o", markersize=4, color=color,
                label="%s: %s" % (cls, _label(dec)))
        if dec is not None and dec.threshold:
            ax.axvline(dec.threshold, color=color, linestyle="--", alpha=0.7)
    ax.axhline(1.0, color="black", linewidth=0.8)
    _size_axis(ax)
    ax.set_yscale("log")
    ax.set_ylabel("double-copy time / %s time\n(> 1: single copy faster)" % (mech or "single-copy"))
    ax.set_title("single copy (%s) vs double copy, per class%s" % (mech or "none", title_extra),
                 fontsize=10)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "no single-copy measurements", ha="center", transform=ax.transAxes)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def compare_figure(path, classes, med, stock, tuned):
    """Gain of the tuned btl/smx over stock btl/sm per class (> 1: tuned faster)."""
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for cls in classes:
        a, b = med.get((cls, stock), {}), med.get((cls, tuned), {})
        sizes = sorted(s for s in set(a) & set(b) if s > 0 and b[s].usec > 0)
        if sizes:
            ax.plot(sizes, [a[s].usec / b[s].usec for s in sizes], marker="o", markersize=4,
                    label=cls)
    ax.axhline(1.0, color="black", linewidth=0.8)
    _size_axis(ax)
    ax.set_ylabel("stock btl/sm time / tuned btl/smx time")
    ax.set_title("gain of the tuned file over stock btl/sm", fontsize=10)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
