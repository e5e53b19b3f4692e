# SPDX-License-Identifier: BSD-3-Clause
"""smx-tune: measure where single copy beats double copy for each locality class of this
node, and write the btl/smx parameters that pin it there.

    smx-tune [sweep] --budget SECONDS [--out DIR] [--mechanisms cma,knemlike,...] ...
    smx-tune compare PARAMFILE --budget SECONDS [--out DIR] ...

sweep    finds the node's locality classes (hwloc, confirmed by btl/smx itself), binds two
         ranks to a pair of CPUs of each class, runs tests/bench/smx_bench off-cache over
         the message sizes with double copy and with each single-copy mechanism that works
         here, each pinned (btl_smx_single_copy_min_<class> never, or 1) and every size
         above the eager limit it pins (btl_smx_eager_limit 2048) by rendezvous, repeated
         (interleaved, medians), and writes into --out:
           smx-tuned.conf           the parameter file (mpirun --tune, openmpi-mca-params.conf)
           smx-tune-<class>.png     bandwidth against size per protocol, threshold marked
           smx-tune-summary.png     single-copy speedup per class
           medians.csv              the medians behind every value
         The file pins btl_smx_single_copy_min_<class> where the measurements decide it;
         everything else stays auto (btl/smx measures each peer's ways as it runs).
         Interrupted (Ctrl-C) or out of budget, it keeps every finished job in --out; the
         same command resumes (a larger --reps adds repetitions).
compare  runs the benchmark with PARAMFILE on btl/smx against stock btl/sm on each class's
         pair of CPUs, interleaved, and prints the gain per class (compare.csv, compare.png).

To use the file on every job of the node, append its parameter lines to
<prefix>/etc/openmpi-mca-params.conf or ~/.openmpi/mca-params.conf. (btl/smx has no
calibration file any more: "calibrate" and --calibrate are gone, and refused with that
advice.)

Exit status: 0 done (possibly fewer repetitions than asked, when the budget ran out), 1 a
job failed, 2 refused (bad input, budget too small, binding impossible, nothing to tune),
130 interrupted.
"""
import argparse
import csv
import datetime
import math
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import time
import uuid

from . import analysis, paramfile, runner, store, topology

DEFAULT_SIZES = "4K,8K,16K,32K,64K,128K,256K,512K,1M,2M,4M"
STOCK, TUNED = "stock-sm", "tuned-smx"
SIZE_RE = re.compile(r"^(\d+)([KMG]?)$", re.I)


class Refusal(argparse.ArgumentTypeError):
    """Bad input or a node this tool cannot measure: exit 2 with the message. (An
    argparse type error too: the argument converters below raise it.)"""


class Interrupted(Exception):
    pass


# ---------------------------------------------------------------- input

def parse_size(text):
    m = SIZE_RE.match(text.strip())
    if not m:
        raise Refusal("bad size %r: expected bytes like 4096, 64K, 1M" % text)
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2).upper()]


def parse_sizes(text):
    """'4K,64K,1M' or a doubling range '4K:4M' (smx_bench's syntax)."""
    sizes = []
    for part in text.split(","):
        if ":" in part:
            lo, hi = (parse_size(x) for x in part.split(":", 1))
            s = max(lo, 1)
            if lo == 0:
                sizes.append(0)
            while s <= hi:
                sizes.append(s)
                s *= 2
        else:
            sizes.append(parse_size(part))
    sizes = sorted(set(sizes))
    if not sizes or len(sizes) > 128:
        raise Refusal("--sizes: 1 to 128 sizes, got %d" % len(sizes))
    return sizes


def parse_mechanisms(text):
    names = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in names if m not in analysis.MECHANISMS]
    if unknown:
        raise Refusal("unknown single-copy mechanism %s; known: %s"
                      % (", ".join(repr(u) for u in unknown), ", ".join(analysis.MECHANISMS)))
    if not names:
        raise Refusal("--mechanisms: name at least one of " + ", ".join(analysis.MECHANISMS))
    return list(dict.fromkeys(names))


def parse_classes(text):
    if not text:
        return list(topology.CLASSES)
    names = [c.strip() for c in text.split(",") if c.strip()]
    unknown = [c for c in names if c not in topology.CLASSES]
    if unknown:
        raise Refusal("unknown class %s; classes: %s"
                      % (", ".join(repr(u) for u in unknown), ", ".join(topology.CLASSES)))
    return names


def ranged(name, lo, hi):
    """argparse type: an integer from lo to hi (smx_bench's own ranges)."""
    def convert(text):
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not lo <= value <= hi:
            raise Refusal("%s must be %d to %d, got %s" % (name, lo, hi, text))
        return value
    return convert


def real(accept, message):
    """argparse type: a finite number that accept() takes; anything else is refused with
    message % the text given."""
    def convert(text):
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and accept(value)):
            raise Refusal(message % text)
        return value
    return convert


# a watchdog is set from the budget; the margin is a fraction
budget_seconds = real(lambda v: v > 0, "--budget must be a positive number of seconds, got %s")
margin_fraction = real(lambda v: 0 <= v < 1, "--margin must be at least 0 and below 1 (a "
                       "fraction: 0.05 is 5%%), got %s")


# ---------------------------------------------------------------- Open MPI facts

def ompi_info(*args):
    try:
        p = subprocess.run(["ompi_info", "--parsable"] + list(args), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=120)
    except FileNotFoundError:
        raise Refusal("ompi_info not found: source contrib/env.sh (Open MPI 5 first on PATH)")
    return p.stdout


# The eager limit every class has in the sweep's jobs (btl_smx_eager_limit, ob1's header
# included): every size above it goes by rendezvous, each size from 4 KiB included (below
# 4 KiB btl/smx measures nothing and sends eagerly when left auto).
SWEEP_EAGER_LIMIT = 2048


def eager_limits():
    """{class: the eager limit of the sweep's jobs}, once ompi_info shows a btl/smx whose
    classes' ways are pinned by btl_smx_eager_limit_<class> and btl_smx_single_copy_min_<class>
    (each 'auto' by default: measured)."""
    out = ompi_info("--param", "btl", "smx", "--level", "9")
    names = set(re.findall(r"^mca:btl:smx:param:(btl_smx_\w+):value:", out, re.M))
    for name in ["btl_smx_single_copy_min"] + \
            ["btl_smx_%s_%s" % (p, c) for p in ("eager_limit", "single_copy_min")
             for c in topology.CLASSES]:
        if name not in names:
            raise Refusal("this Open MPI has no btl/smx that measures its ways (ompi_info "
                          "--param btl smx lists no %s): install the project's components "
                          "first" % name)
    return {cls: SWEEP_EAGER_LIMIT for cls in topology.CLASSES}


def smsc_components():
    return set(re.findall(r"^mca:smsc:(\w+):version:", ompi_info(), re.M))


def ompi_version():
    m = re.search(r"^ompi:version:full:(\S+)$", ompi_info(), re.M)
    return m.group(1) if m else "unknown"


def machine_description(topo):
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"^model name\s*:\s*(.*)$", f.read(), re.M)
            model = m.group(1) if m else model
    except OSError:
        pass
    u = os.uname()
    return "%s, %s, %s (Linux %s)" % (socket.gethostname(), model, topo.describe(), u.release)


# ---------------------------------------------------------------- budget and progress

def estimate_job_seconds(n_sizes, target_mb, samples):
    """A first guess for one measuring job before any has run: mpirun start-up, and per size
    the off-cache pools, the warm-up and the timed batches (a few GB/s). Replaced by the
    mean of finished jobs as soon as there is one."""
    return 1.0 + n_sizes * (0.08 + 2.4 * target_mb / 1500.0)


class Clock:
    """The budget. left() keeps back what writing the results takes (the figures)."""
    RESERVE = 3.0

    def __init__(self, budget):
        self.start = time.monotonic()
        self.budget = budget

    def elapsed(self):
        return time.monotonic() - self.start

    def left(self):
        return self.budget - self.RESERVE - self.elapsed()


class Progress:
    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.width = 0

    def line(self, text, final=True):
        if self.tty:
            pad = max(0, self.width - len(text))
            self.stream.write("\r" + text + " " * pad + ("\n" if final else ""))
            self.width = 0 if final else len(text)
        elif final:
            self.stream.write(text + "\n")
        self.stream.flush()


def fmt_seconds(s):
    s = max(0, int(round(s)))
    return "%d min %02d s" % (s // 60, s % 60) if s >= 60 else "%d s" % s


# ---------------------------------------------------------------- measuring loop

def run_jobs(jobs, st, clock, launcher, bench_args, n_sizes, est, progress, job_args, check):
    """Run the jobs not finished yet (rep-major, so drift hits every protocol alike), as
    long as the budget holds each whole repetition. jobs: [(rep, class, protocol)].
    Returns the number of repetitions complete."""
    done = st.units()
    durations = [float(u["seconds"]) for u in done.values()]
    todo = [j for j in jobs if (j[1], j[2], j[0]) not in done]
    reps = sorted({j[0] for j in jobs})
    per_rep = len(jobs) // max(1, len(reps))
    if len(done):
        progress.line("resuming: %d of %d jobs already done in %s" % (len(jobs) - len(todo),
                                                                     len(jobs), st.dir))
    current_rep = None
    for i, (rep, cls, proto) in enumerate(todo):
        job_est = statistics.mean(durations) if durations else est
        if rep != current_rep:
            # a new repetition starts only if the whole of it fits (fewer, complete
            # repetitions beat a ragged last one); the first one may run partly
            left_in_rep = sum(1 for j in todo[i:] if j[0] == rep)
            if rep != reps[0] and left_in_rep * job_est > clock.left():
                progress.line("budget: %s left, a repetition takes about %s: stopping after "
                              "%d of %d repetitions" % (fmt_seconds(clock.left()),
                                                        fmt_seconds(per_rep * job_est),
                                                        rep, len(reps)))
                return rep
            current_rep = rep
        if job_est > clock.left():
            progress.line("budget: %s left, a job takes about %s: stopping"
                          % (fmt_seconds(clock.left()), fmt_seconds(job_est)))
            return rep
        remaining_jobs = len(todo) - i
        sizes_done = [0]

        def on_row(row, rep=rep, cls=cls, proto=proto):
            sizes_done[0] += 1
            left = (remaining_jobs - sizes_done[0] / max(1, n_sizes)) * job_est
            progress.line("[%d/%d] class %s, %s, repetition %d/%d: %s done (%d/%d sizes) | "
                          "%s elapsed, about %s left"
                          % (len(jobs) - remaining_jobs + 1, len(jobs), cls, proto, rep + 1,
                             len(reps), analysis.human(row["bytes"]), sizes_done[0], n_sizes,
                             fmt_seconds(clock.elapsed()),
                             fmt_seconds(min(left, clock.left()))), final=False)

        t0 = time.monotonic()
        try:
            rows, err = launcher.measure(job_args(cls, proto), bench_args,
                                         timeout=max(5.0, clock.left()) + 10, on_row=on_row)
        except runner.RunError as e:
            if clock.left() <= 0:
                progress.line("budget: the job of class %s, %s ran past the budget and was "
                              "stopped (not kept)" % (cls, proto))
                return rep
            raise
        check(cls, proto, err)
        seconds = time.monotonic() - t0
        durations.append(seconds)
        st.add(uuid.uuid4().hex[:12], cls, proto, rep, rows, seconds,
               datetime.datetime.now().isoformat(timespec="seconds"))
        progress.line("[%d/%d] class %s, %s, repetition %d/%d: done in %s | %s elapsed, "
                      "about %s left" % (len(jobs) - remaining_jobs + 1, len(jobs), cls, proto,
                                         rep + 1, len(reps), fmt_seconds(seconds),
                                         fmt_seconds(clock.elapsed()),
                                         fmt_seconds(min((remaining_jobs - 1) *
                                                         statistics.mean(durations),
                                                         max(0, clock.left())))))
    return len(reps)


def smx_line_check(expect, ways=None):
    """A check of the policy a job's btl/smx reports (runner.pair_policy, runner.pair_ways):
    expect(cls, proto) -> the single-copy threshold the job must show for its peer;
    ways(cls, proto) -> the way ('s' or 'd') every size range of the peer's messages must
    take. A job that silently measured something else (a mechanism that vanished, a
    parameter not applied) is an error, not data."""
    def check(cls, proto, err):
        want = expect(cls, proto)
        if want is None:
            return
        got = runner.pair_policy(err)
        if not got or any(g != (cls, want) for g in got):
            raise runner.RunError("the %s job of class %s did not run as asked: btl/smx "
                                  "reports %s, expected class %s with single copy from %s"
                                  % (proto, cls, ", ".join("class %s, single copy from %s" % g
                                                           for g in got) or "nothing",
                                     cls, want))
        way = ways(cls, proto) if ways else None
        if way is None:
            return
        seen = runner.pair_ways(err)
        if len(seen) != len(got) or any(set(w.values()) != {way} for w in seen):
            raise runner.RunError("the %s job of class %s did not run as asked: its peers' "
                                  "messages went %s, expected '%s' in every size range"
                                  % (proto, cls, "; ".join(",".join("%s:%s" % kv
                                                                    for kv in w.items())
                                                           for w in seen) or "nowhere", way))
    return check


# ---------------------------------------------------------------- discovery

def discover(a, launcher, progress, classes_wanted):
    """Classes and pairs, each binding proven and each class confirmed by btl/smx."""
    topo = topology.load(a.topology)
    if len(topo.pus) < 2:
        raise Refusal("binding is impossible: %s has %d usable CPU; two ranks need two"
                      % (topo.source, len(topo.pus)))
    pairs = topo.pairs_by_class()
    for cls in topology.CLASSES:
        if cls not in pairs:
            progress.line("class %s: not on this machine (%s)" % (cls, topo.describe()))
    pairs = {c: p for c, p in pairs.items() if c in classes_wanted}
    if not pairs:
        raise Refusal("none of the classes asked for (%s) is on this machine"
                      % ", ".join(classes_wanted))
    same = {c: topo.same_core(*p) for c, p in pairs.items()}
    return topo, pairs, same


def confirm_pairs(launcher, pairs, same, progress):
    for cls, pair in pairs.items():
        try:
            launcher.check_binding(pair, same[cls])
        except runner.RunError as e:
            raise Refusal(str(e))
        got, _ = launcher.smx_classes(pair, same[cls])
        if got != {cls}:
            raise Refusal("btl/smx classifies CPUs %d and %d as %s, the topology says %s: "
                          "was --topology another machine's?" % (pair[0], pair[1],
                                                               "/".join(sorted(got)) or "?",
                                                               cls))
        progress.line("class %s: CPUs %d and %d (binding and class confirmed by btl/smx)"
                      % (cls, pair[0], pair[1]))


# ---------------------------------------------------------------- sweep

def sweep(a):
    clock = Clock(a.budget)
    progress = Progress()
    mechanisms, classes_wanted, sizes = a.mechanisms, a.classes, a.sizes
    settings = {"mode": a.mode, "sizes": sizes, "samples": a.samples,
                "off_cache_mb": a.off_cache, "target_mb": a.target_mb,
                "mechanisms": mechanisms, "classes": classes_wanted,
                "topology": os.path.abspath(a.topology) if a.topology else None}
    est = estimate_job_seconds(len(sizes), a.target_mb, a.samples)
    # before any MPI job: can the budget hold one job per protocol of one class at all?
    if a.budget < 2 * est:
        raise Refusal("budget too small to measure anything: %s; one class needs at least "
                      "a double-copy and a single-copy job of about %s each with these "
                      "settings: give --budget %d or more (or fewer --sizes, a smaller "
                      "--target-mb)" % (fmt_seconds(a.budget), fmt_seconds(est),
                                        math.ceil(2 * est + 10)))
    st = store.Store(a.out)
    state = None if a.fresh else st.load_state()
    if a.fresh and os.path.exists(st.state_path):
        for p in (st.state_path, st.runs_path, st.units_path):
            if os.path.exists(p):
                os.remove(p)
    if state is not None:
        old = state["settings"]
        diff = [k for k in settings if old.get(k) != settings[k]]
        if diff:
            raise Refusal("%s holds a sweep with other settings (%s: %s there, %s now): give "
                          "the same options to resume, or --fresh to start over, or another "
                          "--out" % (a.out, diff[0], old.get(diff[0]), settings[diff[0]]))
        if state["plan"]["host"] != socket.gethostname():
            raise Refusal("%s was measured on host %s, this is %s: use another --out"
                          % (a.out, state["plan"]["host"], socket.gethostname()))
    launcher = runner.Launcher(a.mpirun, a.bench)
    if a.dry_run:
        return dry_run(a, settings, est, progress, classes_wanted, launcher)
    runner.ensure_bench(launcher.bench)
    if state is None:
        state = {"settings": settings, "plan": plan(a, launcher, progress, classes_wanted,
                                                    mechanisms, clock)}
        st.save_state(state)
    p = state["plan"]
    classes = list(p["pairs"])
    pairs = {c: tuple(v) for c, v in p["pairs"].items()}
    available = p["available"]
    for m, why in p["unavailable"].items():
        progress.line("mechanism %s: unavailable: %s" % (m, why))
    protocols = [analysis.DOUBLE] + available
    jobs = [(rep, cls, proto) for rep in range(a.reps) for cls in classes for proto in protocols]
    done = st.units()
    measured = {(c, pr) for (c, pr, _) in done}
    first = [(c, pr) for c in classes for pr in protocols if (c, pr) not in measured]
    durations = [float(u["seconds"]) for u in done.values()]
    job_est = statistics.mean(durations) if durations else est
    need = job_est * max(1, len(first))
    if len(done) < len(jobs) and need > clock.left():
        raise Refusal("budget too small to measure anything: %s left, one job of each of the "
                      "%d class/protocol pairs not measured yet takes about %s: give --budget "
                      "%d or more" % (fmt_seconds(clock.left()), max(1, len(first)),
                                      fmt_seconds(need), math.ceil(clock.elapsed() + need + 10)))
    progress.line("sweep: %d classes x %d protocols (%s) x %d repetitions, %d sizes; about %s "
                  "per job, budget %s" % (len(classes), len(protocols), ", ".join(protocols),
                                          a.reps, len(sizes), fmt_seconds(job_est),
                                          fmt_seconds(a.budget)))
    bench_args = ["--mode", a.mode, "--sizes", ",".join(str(s) for s in sizes),
                  "--off-cache", str(a.off_cache), "--samples", str(a.samples),
                  "--target-mb", str(a.target_mb)] + runner.POLICY_ARGS

    def job_args(cls, proto):
        # both of the class's switches pinned: btl/smx measures nothing and tries no other
        # way (the sweep measures each alone), every size above the eager limit by
        # rendezvous, each by the copy of the job
        args = launcher.base(pairs[cls], p["same_core"][cls]) + [
            "--mca", "btl", "smx,self",
            "--mca", "btl_smx_eager_limit_" + cls, str(p["eager_limits"][cls])]
        if proto == analysis.DOUBLE:
            return args + ["--mca", "btl_smx_single_copy_min_" + cls, "never"]
        return args + ["--mca", "smsc", proto, "--mca", "btl_smx_single_copy_min_" + cls, "1"]

    check = smx_line_check(lambda cls, proto: "never" if proto == analysis.DOUBLE else "1",
                           lambda cls, proto: "d" if proto == analysis.DOUBLE else "s")
    reps_done = run_jobs(jobs, st, clock, launcher, bench_args, len(sizes), est, progress,
                         job_args, check)
    return write_results(a, st, state, reps_done, progress, clock)


def plan(a, launcher, progress, classes_wanted, mechanisms, clock):
    topo, pairs, same = discover(a, launcher, progress, classes_wanted)
    confirm_pairs(launcher, pairs, same, progress)
    limits = eager_limits()
    built = smsc_components()
    first = next(iter(pairs))
    available, unavailable = [], {}
    for m in mechanisms:
        if m not in built:
            unavailable[m] = "not built into this Open MPI (ompi_info lists no smsc/%s)" % m
        else:
            why = launcher.probe_mechanism(m, pairs[first], same[first])
            if why is None:
                available.append(m)
                progress.line("mechanism %s: available" % m)
            else:
                unavailable[m] = why
    if not available:
        raise Refusal("no single-copy mechanism works here (%s): every message is "
                      "double-copied, there is nothing to tune"
                      % "; ".join("%s: %s" % kv for kv in unavailable.items()))
    absent = [c for c in topology.CLASSES if c not in topo.pairs_by_class()]
    return {"host": socket.gethostname(), "machine": machine_description(topo),
            "topology": topo.source, "ompi": ompi_version(),
            "created": datetime.datetime.now().isoformat(timespec="seconds"),
            "pairs": pairs, "same_core": same, "absent": absent,
            "eager_limits": {c: limits[c] for c in pairs},
            "available": available, "unavailable": unavailable}


def dry_run(a, settings, est, progress, classes_wanted, launcher):
    topo, pairs, _ = discover(a, launcher, progress, classes_wanted)
    n = len(pairs) * (1 + len(settings["mechanisms"])) * a.reps
    print("would measure %d classes (%s) with double copy and %s, %d repetitions: %d jobs of "
          "about %s, about %s in all (budget %s)"
          % (len(pairs), ", ".join("%s: CPUs %d,%d" % (c, p[0], p[1]) for c, p in pairs.items()),
             "/".join(settings["mechanisms"]), a.reps, n, fmt_seconds(est),
             fmt_seconds(n * est), fmt_seconds(a.budget)))
    return 0


def write_results(a, st, state, reps_done, progress, clock):
    p = state["plan"]
    s = state["settings"]
    rows = st.rows()
    if not rows:
        progress.line("no finished job: nothing to write (run again with a larger --budget)")
        return 1
    classes = list(p["pairs"])
    result = analysis.tune(rows, classes, p["available"], p["eager_limits"], a.margin)
    mech, scores, chosen, per_mech, med, note = result
    counts = sorted({int(r["rep"]) for r in rows})
    info = {"machine": p["machine"], "topology": p["topology"],
            "date": datetime.datetime.now().isoformat(timespec="seconds") +
            " (sweep started %s)" % p["created"],
            "ompi": "%s, %s" % (p["ompi"], _which("mpirun")),
            "bench": "smx_bench --mode %s, off-cache pool %d MB, %d timed batches per size "
                     "(median batch), %d MB per size; btl smx,self, eager limit and "
                     "single-copy threshold pinned"
                     % (s["mode"], s["off_cache_mb"], s["samples"], s["target_mb"]),
            "reps": "%d repetitions, interleaved; each value below is the median over them "
                    "(runs: double/single)" % len(counts),
            "mechanisms": ", ".join(["%s (available%s)" % (m, ", used" if m == mech else "")
                                     for m in p["available"]] +
                                    ["%s (unavailable: %s)" % kv
                                     for kv in p["unavailable"].items()]),
            "pairs": {c: tuple(v) for c, v in p["pairs"].items()},
            "eager_limits": p["eager_limits"], "absent": p["absent"],
            "available": len(p["available"])}
    conf = st.path("smx-tuned.conf")
    with open(conf, "w") as f:
        f.write(paramfile.render(info, result))
    write_medians(st.path("medians.csv"), med)
    plots = import_plots()
    pngs = []
    for cls in classes:
        path = st.path("smx-tune-%s.png" % cls)
        plots.class_figure(path, cls, info["pairs"][cls], p["eager_limits"][cls], med,
                           [analysis.DOUBLE] + p["available"], chosen.get(cls))
        pngs.append(path)
    path = st.path("smx-tune-summary.png")
    plots.summary_figure(path, classes, mech, med, chosen, p["eager_limits"])
    pngs.append(path)
    if note:
        print("\n" + note)
    if mech is None:
        print("\nno single-copy mechanism chosen: every threshold left auto "
              "(%d repetitions)" % len(counts))
    else:
        print("\nthresholds (single copy with %s; %d repetitions):" % (mech, len(counts)))
        for cls in classes:
            dec = chosen.get(cls)
            if dec is None:
                print("  %-8s no measurements with %s: left auto" % (cls, mech))
            elif dec.threshold is None:
                print("  %-8s left auto: %s" % (cls, dec.reason))
            else:
                print("  %-8s btl_smx_single_copy_min_%s=%s   (%s)"
                      % (cls, cls, dec.threshold or "never", dec.reason))
    print("\nparameter file: %s\nfigures: %s\nmedians: %s\n(%s elapsed)"
          % (conf, " ".join(pngs), st.path("medians.csv"), fmt_seconds(clock.elapsed())))
    return 0


def import_plots():
    """The figures module, loaded only when there is something to draw."""
    try:
        from . import plots
    except ImportError as e:
        raise runner.RunError("cannot draw the figures: %s: install python3-matplotlib "
                              "(contrib/setup.sh does) and run this Python: %s"
                              % (e, sys.executable))
    return plots


def write_medians(path, med):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["class", "protocol", "bytes", "usec", "mbps", "runs", "usec_min",
                    "usec_max"])
        for (cls, proto), pts in sorted(med.items()):
            for size, pt in sorted(pts.items()):
                w.writerow([cls, proto, size, "%.4f" % pt.usec, "%.2f" % pt.mbps, pt.n,
                            "%.4f" % pt.usec_min, "%.4f" % pt.usec_max])


def _which(prog):
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if os.access(os.path.join(d, prog), os.X_OK):
            return os.path.join(d, prog)
    return prog


# ---------------------------------------------------------------- compare

def check_compare_out(st):
    """compare starts afresh in its --out, deleting the state and runs it finds there:
    refuse a directory whose state is not a compare's (a sweep's measurements, or files
    of unknown origin), rather than delete what cannot be measured again cheaply."""
    present = [os.path.basename(p) for p in (st.state_path, st.runs_path, st.units_path)
               if os.path.exists(p)]
    if not present:
        return
    state = st.load_state()
    if state is None or "compare" not in state.get("settings", {}):
        raise Refusal("%s holds %s (%s), which compare would delete: give compare another "
                      "--out (default smx-tune-compare)"
                      % (st.dir, "a sweep's measurements" if state is not None else
                         "measurements of no compare", ", ".join(present)))


def compare(a):
    clock = Clock(a.budget)
    progress = Progress()
    classes_wanted, sizes = a.classes, a.sizes
    st = store.Store(a.out)
    check_compare_out(st)
    try:
        values = paramfile.read_values(a.paramfile)
    except OSError as e:
        raise Refusal("cannot read %s: %s" % (a.paramfile, e.strerror))
    except ValueError as e:
        raise Refusal(str(e))
    pfile = os.path.abspath(a.paramfile)
    est = estimate_job_seconds(len(sizes), a.target_mb, a.samples)
    if a.budget < 2 * est:
        raise Refusal("budget too small to measure anything: %s; a stock and a tuned job "
                      "take about %s each: give --budget %d or more"
                      % (fmt_seconds(a.budget), fmt_seconds(est), math.ceil(2 * est + 10)))
    launcher = runner.Launcher(a.mpirun, a.bench)
    runner.ensure_bench(launcher.bench)
    topo, pairs, same = discover(a, launcher, progress, classes_wanted)
    confirm_pairs(launcher, pairs, same, progress)
    # the file must take effect: btl/smx shows each class's threshold as the file says
    expect = {}
    for cls, pair in pairs.items():
        _, out = launcher.smx_classes(pair, same[cls], ["--tune", pfile])
        got = runner.pair_policy(out)
        want = values.get("btl_smx_single_copy_min_" + cls,
                          values.get("btl_smx_single_copy_min"))
        if want is not None:
            # (btl/smx reads 0 as never, and prints a size in bytes)
            want = want if want in ("never", "auto") else str(parse_size(want) or "never")
            if not got or any(g != (cls, want) for g in got):
                raise Refusal("Open MPI did not apply %s for class %s: btl/smx reports %s, "
                              "the file says single copy from %s" % (pfile, cls, got, want))
        expect[cls] = got[0][1] if got else None
    check_compare_out(st)  # again: a sweep may have started there meanwhile
    for p in (st.state_path, st.runs_path, st.units_path):
        if os.path.exists(p):
            os.remove(p)
    st.save_state({"settings": {"compare": pfile, "sizes": sizes}, "plan": {}})
    bench_args = ["--mode", a.mode, "--sizes", ",".join(str(s) for s in sizes),
                  "--off-cache", str(a.off_cache), "--samples", str(a.samples),
                  "--target-mb", str(a.target_mb)] + runner.POLICY_ARGS

    def job_args(cls, proto):
        args = launcher.base(pairs[cls], same[cls])
        if proto == STOCK:
            return args + ["--mca", "btl", "sm,self"]
        return args + ["--mca", "btl", "smx,self", "--tune", pfile]

    check = smx_line_check(lambda cls, proto: expect[cls] if proto == TUNED else None)
    jobs = [(rep, cls, proto) for rep in range(a.reps) for cls in pairs
            for proto in (STOCK, TUNED)]
    run_jobs(jobs, st, clock, launcher, bench_args, len(sizes), est, progress, job_args,
             check)
    med = analysis.medians(st.rows())
    reps = len({r["rep"] for r in st.rows()})
    print("\ngain of %s (btl/smx) over stock btl/sm, %s, off-cache %d MB, median of %d "
          "runs; gain = sm time / tuned time (> 1: tuned faster)"
          % (a.paramfile, a.mode, a.off_cache, reps))
    with open(st.path("compare.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["class", "bytes", "sm_usec", "tuned_usec", "gain"])
        for cls in pairs:
            sm, tu = med.get((cls, STOCK), {}), med.get((cls, TUNED), {})
            both = sorted(s for s in set(sm) & set(tu) if tu[s].usec > 0)
            print("\nclass %s (CPUs %d and %d, tuned: %s)"
                  % (cls, pairs[cls][0], pairs[cls][1],
                     {"never": "never single copy", "auto": "single copy as measured",
                      None: "?"}.get(expect[cls], "single copy from %s" % expect[cls])))
            print("  %8s %12s %12s %8s" % ("bytes", "sm us", "tuned us", "gain"))
            gains = []
            for s in both:
                g = sm[s].usec / tu[s].usec
                gains.append(g)
                w.writerow([cls, s, "%.4f" % sm[s].usec, "%.4f" % tu[s].usec, "%.4f" % g])
                print("  %8s %12.2f %12.2f %7.2fx" % (analysis.human(s), sm[s].usec,
                                                      tu[s].usec, g))
            if gains:
                gm = math.exp(statistics.mean(math.log(g) for g in gains))
                print("  class %s: gain %.2fx (geometric mean over %d sizes; %.2fx to %.2fx)"
                      % (cls, gm, len(gains), min(gains), max(gains)))
    plots = import_plots()
    plots.compare_figure(st.path("compare.png"), list(pairs), med, STOCK, TUNED)
    print("\n%s, %s (%s elapsed)" % (st.path("compare.csv"), st.path("compare.png"),
                                     fmt_seconds(clock.elapsed())))
    return 0


# ---------------------------------------------------------------- what is gone

GONE = ("btl/smx has no calibration file any more: it measures the way of each peer's "
        "messages as it runs. To use a parameter file on every job of this node, append its "
        "parameter lines to <prefix>/etc/openmpi-mca-params.conf or "
        "~/.openmpi/mca-params.conf (or give it to mpirun --tune)")


# ---------------------------------------------------------------- main

def build_parser():
    ap = argparse.ArgumentParser(prog="smx-tune", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command")

    def common(p, out, reps):
        p.add_argument("--budget", type=budget_seconds, default=900, metavar="SECONDS",
                       help="wall-clock budget of this invocation (default 900)")
        p.add_argument("--out", default=out, help="output directory (default %s)" % out)
        p.add_argument("--sizes", type=parse_sizes, default=DEFAULT_SIZES,
                       help="message sizes: list or doubling range (default %s)" % DEFAULT_SIZES)
        p.add_argument("--reps", type=ranged("--reps", 1, 1000), default=reps,
                       help="repetitions, interleaved; medians over them (default %d)" % reps)
        p.add_argument("--samples", type=ranged("--samples", 1, 1000), default=5,
                       help="timed batches per size in one job (default 5)")
        p.add_argument("--target-mb", type=ranged("--target-mb", 1, 65536), default=32,
                       help="MB moved per size in one job (default 32)")
        p.add_argument("--off-cache", type=ranged("--off-cache", 0, 65536), default=64,
                       metavar="MB",
                       help="buffer pool per direction, so messages start out of cache "
                            "(default 64)")
        p.add_argument("--mode", default="pingpong", choices=["pingpong", "bw"])
        p.add_argument("--classes", type=parse_classes, default="",
                       help="only these classes (default: all on this node)")
        p.add_argument("--topology", help="hwloc XML file instead of this machine's topology "
                                          "(the pairs must still exist here)")
        p.add_argument("--mpirun", default="mpirun")
        p.add_argument("--bench", help="smx_bench binary (default $SMX_BUILD/tests/bench/"
                                       "smx_bench, built if missing)")

    sw = sub.add_parser("sweep", help="measure and write the parameter file (default)")
    common(sw, "smx-tune-out", 5)
    sw.add_argument("--mechanisms", type=parse_mechanisms, default=",".join(analysis.MECHANISMS),
                    help="single-copy mechanisms to try (default: %s; the ones that do not "
                         "work here are reported and skipped)" % ",".join(analysis.MECHANISMS))
    sw.add_argument("--margin", type=margin_fraction, default=analysis.DEFAULT_MARGIN,
                    help="least gain for single copy to be adopted (default %.2f)"
                    % analysis.DEFAULT_MARGIN)
    sw.add_argument("--fresh", action="store_true", help="discard what --out holds")
    sw.add_argument("--dry-run", action="store_true",
                    help="print the classes, pairs and an estimate; run nothing")
    cp = sub.add_parser("compare", help="tuned btl/smx against stock btl/sm, per class")
    cp.add_argument("paramfile")
    common(cp, "smx-tune-compare", 3)
    return ap


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["calibrate"] or any(w == "--calibrate" or w.startswith("--calibration-file")
                                        for w in argv):
        sys.stderr.write("smx-tune: refused: %s\n" % GONE)
        return 2
    if not argv or argv[0] not in ("sweep", "compare", "-h", "--help"):
        argv.insert(0, "sweep")
    try:
        a = build_parser().parse_args(argv)
    except SystemExit as e:  # --help, or a value argparse refused (exit 2, message said)
        return e.code

    def on_term(signum, frame):
        raise Interrupted()
    signal.signal(signal.SIGTERM, on_term)
    try:
        return {"sweep": sweep, "compare": compare}[a.command](a)
    except Refusal as e:
        sys.stderr.write("\nsmx-tune: refused: %s\n" % e)
        return 2
    except topology.TopologyError as e:
        sys.stderr.write("\nsmx-tune: refused: %s\n" % e)
        return 2
    except store.StoreError as e:
        sys.stderr.write("\nsmx-tune: refused: %s\n" % e)
        return 2
    except runner.RunError as e:
        sys.stderr.write("\nsmx-tune: %s\nfinished jobs are kept in %s; the same command "
                         "resumes\n" % (e, a.out))
        return 1
    except (KeyboardInterrupt, Interrupted):
        sys.stderr.write("\nsmx-tune: interrupted; finished jobs are kept in %s: run the same "
                         "command to resume\n" % a.out)
        return 130
