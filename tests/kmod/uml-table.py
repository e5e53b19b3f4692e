#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""tests/kmod/uml-table.py [--plot PNG] RESULT...: the medians over several boots of
kmod_copybench's output (one RESULT file per boot), as a markdown table with the ratios
that matter, and optionally a log-log plot (matplotlib).

Ratios, each from the medians of the same run:
  held/cma      time of a repeated copy from a held region against CMA's, same direction;
  net speedup   CMA's time beyond one system call (the syscall column, measured in the
                same run) divided by the held copy's;
  excess share  what a held copy costs beyond the system call and a memcpy of the same
                bytes, as a share of what CMA costs beyond them;
  fresh/cma     a first copy of a fresh held region (create, copy, destroy: two system
                calls more than a copy, which are taken off) against CMA.
A second table, for attachments: a copy through the mapping against a memcpy within one
process and against CMA, and what attaching (with the faults of a first copy) costs
against one copy ioctl from a held region. A third, for exports: a copy through a cached
attachment of the owner's export against a memcpy, from the columns' medians and, timed in
turn within each repetition (the median of those ratios, then over the boots), and a
fresh attachment's first touch (attach, a copy that faults every page, munmap) per page.
Exit status 1 if a file holds no complete table (a boot that failed).
"""
import argparse
import math
import statistics
import sys

COLS = ["syscall", "memcpy", "cma_read", "knemlike_read", "held_read", "cma_write",
        "knemlike_write", "held_write", "held_fresh", "attached_read", "attached_write",
        "attach_first", "attach_only", "export_read", "export_write", "export_first",
        "export_read_ratio", "export_write_ratio"]


def read(path):
    rows = {}
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            fields = line.split()
            if len(fields) != len(COLS) + 1:
                raise ValueError("%s: %d fields in %r" % (path, len(fields), line))
            rows[int(fields[0])] = [float(x) for x in fields[1:]]
    if not rows:
        raise ValueError("%s: no table" % path)
    return rows


def size_name(n):
    return "%d MiB" % (n >> 20) if n >= 1 << 20 else "%d KiB" % (n >> 10)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--plot", help="write a PNG plot here")
    ap.add_argument("results", nargs="+")
    args = ap.parse_args()
    try:
        boots = [read(p) for p in args.results]
    except (OSError, ValueError) as e:
        print("uml-table: %s" % e, file=sys.stderr)
        return 1
    sizes = sorted(set.intersection(*(set(b) for b in boots)))
    med = {}
    for s in sizes:
        med[s] = [statistics.median(b[s][i] for b in boots) for i in range(len(COLS))]
    c = {name: i for i, name in enumerate(COLS)}

    def ratio(a, b):
        return "%.2f" % (a / b) if b > 0 and not math.isnan(a) and not math.isnan(b) else "-"

    print("Medians of %d boot(s), us per copy; ratios from the medians." % len(boots))
    print()
    print("| size | syscall | memcpy | CMA read | knemlike read | held read | CMA write | "
          "held write | fresh held | held/CMA read | held/CMA write | net speedup read | "
          "excess share read | fresh/CMA |")
    print("| ---: " * 14 + "|")
    for s in sizes:
        m = med[s]
        sc, mc = m[c["syscall"]], m[c["memcpy"]]
        cr, hr = m[c["cma_read"]], m[c["held_read"]]
        net = ratio(cr - sc, hr - sc)
        excess = ratio(hr - sc - mc, cr - sc - mc) if cr - sc - mc > 0 else "-"
        print("| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %s | %s | %s | %s"
              " | %s |" % (size_name(s), sc, mc, cr, m[c["knemlike_read"]], hr,
                           m[c["cma_write"]], m[c["held_write"]], m[c["held_fresh"]],
                           ratio(hr, cr), ratio(m[c["held_write"]], m[c["cma_write"]]), net,
                           excess, ratio(m[c["held_fresh"]] - 2 * sc, cr)))
    if any(not math.isnan(med[s][c["attached_read"]]) for s in sizes):
        print()
        print("Attachments (KNEMLIKE_IOC_ATTACH): a copy from or to the held region mapped "
              "here is a memcpy; 'first' is attach + a copy that faults the pages in + "
              "munmap, 'attach only' is attach + munmap untouched.")
        print()
        print("| size | memcpy | attached read | attached write | CMA read | held read | "
              "first (attach, copy, unmap) | attach only | attached/memcpy | CMA/attached | "
              "first/held read |")
        print("| ---: " * 11 + "|")
        for s in sizes:
            m = med[s]
            ar, mc = m[c["attached_read"]], m[c["memcpy"]]
            print("| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %s | %s | %s |" % (
                size_name(s), mc, ar, m[c["attached_write"]], m[c["cma_read"]],
                m[c["held_read"]], m[c["attach_first"]], m[c["attach_only"]], ratio(ar, mc),
                ratio(m[c["cma_read"]], ar), ratio(m[c["attach_first"]], m[c["held_read"]])))
    if any(not math.isnan(med[s][c["export_read"]]) for s in sizes):
        print()
        print("Exports (KNEMLIKE_IOC_EXPORT_ATTACH): a copy through a cached attachment of the "
              "owner's export is a memcpy; 'first' is attach + a copy that faults every page "
              "in + munmap, and per page what that costs.")
        print()
        print("| size | memcpy | export read | export write | export read/memcpy | "
              "export write/memcpy | read/memcpy, in turn | write/memcpy, in turn | "
              "first (attach, copy, unmap) | first per page |")
        print("| ---: " * 10 + "|")

        def fixed(x):
            return "-" if math.isnan(x) else "%.2f" % x
        for s in sizes:
            m = med[s]
            er, ew, mc, ef = (m[c["export_read"]], m[c["export_write"]], m[c["memcpy"]],
                              m[c["export_first"]])
            print("| %s | %.1f | %.1f | %.1f | %s | %s | %s | %s | %.1f | %.2f |" % (
                size_name(s), mc, er, ew, ratio(er, mc), ratio(ew, mc),
                fixed(m[c["export_read_ratio"]]), fixed(m[c["export_write_ratio"]]), ef,
                ef / max(1, s // 4096)))
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, (ax, rx) = plt.subplots(1, 2, figsize=(11, 4.5))
        for name, label in [("memcpy", "memcpy (one process)"), ("cma_read", "CMA"),
                            ("knemlike_read", "knemlike"), ("held_read", "knemlike, held"),
                            ("held_fresh", "knemlike, fresh held region"),
                            ("attached_read", "knemlike, attached (memcpy)"),
                            ("syscall", "one system call")]:
            pts = [(s, med[s][c[name]]) for s in sizes if med[s][c[name]] > 0]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("bytes per copy (from another process)")
        ax.set_ylabel("us per copy (median)")
        ax.set_title("Time per copy")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        # Beyond one system call, against CMA's time beyond it (the same direction).
        big = [s for s in sizes if s >= 256 << 10]
        for name, extra, label in [("knemlike_read", 0, "knemlike read"),
                                   ("held_read", 0, "held read"),
                                   ("held_write", 0, "held write"),
                                   ("held_fresh", 2, "fresh held (create+copy+destroy)")]:
            base = "cma_write" if name.endswith("write") else "cma_read"
            ys = [(med[s][c[name]] - (1 + extra) * med[s][c["syscall"]]) /
                  (med[s][c[base]] - med[s][c["syscall"]]) for s in big]
            rx.plot(big, ys, marker="o", label=label)
        rx.axhline(1.0, color="gray", linestyle="--", label="CMA")
        rx.set_xscale("log", base=2)
        rx.set_xlabel("bytes per copy")
        rx.set_ylabel("time beyond the system call(s) / CMA's")
        rx.set_title("Against CMA")
        rx.grid(True, which="both", alpha=0.3)
        rx.legend(fontsize=8)
        fig.suptitle("knemlike in User-mode Linux 6.1, medians of %d boots" % len(boots))
        fig.tight_layout()
        fig.savefig(args.plot, dpi=90)
    return 0


if __name__ == "__main__":
    sys.exit(main())
