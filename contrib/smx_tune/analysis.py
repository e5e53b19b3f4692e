# SPDX-License-Identifier: BSD-3-Clause
"""From measurements to thresholds: medians, crossovers, the mechanism to use.

The pin btl/smx offers per class is a step: double copy below
btl_smx_single_copy_min_<class>, single copy from it (where a message goes by rendezvous,
above the eager limit: ob1 hands it to btl_get). Unpinned, btl/smx measures the way of
each size range per peer instead. The threshold is chosen as the best step over the sizes
measured by rendezvous (above the eager limit the sweep pinned):

    cost(k) = sum over sizes below k of (double time / best time - 1)
            + sum over sizes from k of (single time / best time - 1)

the k with the least cost (ties go to the later switch, i.e. fewer single copies). A step
fit is robust to a noisy point: one outlier cannot move the switch unless it outweighs the
points on the other side. Single copy is then adopted only if it is at least `margin`
faster (geometric mean) over the sizes it would take: gains inside the noise keep
double copy. The threshold written is the first measured size at which single copy takes
over; 0 (written "never", which btl/smx also reads 0 as) when it never does.
"""
import collections
import math
import statistics

DOUBLE = "double"
MECHANISMS = ("knemlike", "cma", "xpmem")
DEFAULT_MARGIN = 0.05

Point = collections.namedtuple("Point", "usec mbps n usec_min usec_max")
Decision = collections.namedtuple("Decision", "threshold reason sizes double single gain")


def medians(rows):
    """rows: dicts with class, protocol, bytes, usec, mbps (one per repetition).
    Returns {(class, protocol): {bytes: Point}} over the repetitions."""
    groups = collections.defaultdict(list)
    for r in rows:
        groups[(r["class"], r["protocol"], int(r["bytes"]))].append(r)
    out = collections.defaultdict(dict)
    for (cls, proto, size), rs in groups.items():
        usec = [float(r["usec"]) for r in rs]
        out[(cls, proto)][size] = Point(statistics.median(usec),
                                        statistics.median(float(r["mbps"]) for r in rs),
                                        len(rs), min(usec), max(usec))
    return dict(out)


def human(n):
    """4096 -> '4K', 1048576 -> '1M', 34816 -> '34K' only when exact."""
    for unit, shift in (("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d%s" % (n >> shift, unit)
    return str(n)


def step_fit(double, single):
    """Index k of the best step (double copy before k, single copy from k) for two lists
    of times at the same sizes; len(double) means never single copy."""
    n = len(double)
    best = [min(d, s) for d, s in zip(double, single)]
    loss_d = [d / b - 1 for d, b in zip(double, best)]
    loss_s = [s / b - 1 for s, b in zip(single, best)]
    best_k, best_cost = n, sum(loss_d)
    for k in range(n - 1, -1, -1):
        cost = sum(loss_d[:k]) + sum(loss_s[k:])
        if cost < best_cost - 1e-12:
            best_k, best_cost = k, cost
    return best_k


def decide(double_pts, single_pts, eager_limit, margin=DEFAULT_MARGIN):
    """The threshold for one class: double_pts and single_pts are {bytes: Point}."""
    sizes = sorted(s for s in set(double_pts) & set(single_pts) if s > eager_limit)
    if not sizes:
        return Decision(None, "no size above the eager limit (%d) measured with both "
                        "protocols: the threshold cannot matter below it; left auto "
                        "(measured by btl/smx)" % eager_limit, [], [], [], None)
    d = [double_pts[s].usec for s in sizes]
    s_ = [single_pts[s].usec for s in sizes]
    if min(d + s_) <= 0:
        return Decision(None, "a median time of 0: broken measurement; left auto",
                        sizes, d, s_, None)
    k = step_fit(d, s_)
    if k == len(sizes):
        return Decision(0, "double copy is faster over every range of sizes measured "
                        "above the eager limit: never single copy", sizes, d, s_, None)
    gain = math.exp(statistics.mean(math.log(a / b) for a, b in zip(d[k:], s_[k:])))
    if gain < 1 + margin:
        return Decision(0, "single copy ahead from %s by only %.1f%% (noise margin %.0f%%): "
                        "never single copy" % (human(sizes[k]), 100 * (gain - 1),
                                               100 * margin), sizes, d, s_, gain)
    where = ("from the first size measured above the eager limit" if k == 0 else
             "from %s (double copy faster up to %s)" % (human(sizes[k]), human(sizes[k - 1])))
    return Decision(sizes[k], "single copy %.2fx faster %s" % (gain, where),
                    sizes, d, s_, gain)


def _ratios(med, classes, mech, eager_limits):
    """{(class, size): single time / double time} above each class's eager limit."""
    out = {}
    for cls in classes:
        dp, sp = med.get((cls, DOUBLE), {}), med.get((cls, mech), {})
        for size in set(dp) & set(sp):
            if size > eager_limits[cls] and dp[size].usec > 0 and sp[size].usec > 0:
                out[(cls, size)] = sp[size].usec / dp[size].usec
    return out


def _points(keys):
    """{(class, size)} -> 'l3 (4 sizes), numa (1 size)'"""
    counts = collections.Counter(cls for cls, _ in keys)
    return ", ".join("%s (%d size%s)" % (c, n, "" if n == 1 else "s")
                     for c, n in sorted(counts.items()))


def choose_mechanism(med, classes, mechanisms, eager_limits):
    """The single-copy mechanism with the lowest geometric-mean time relative to double
    copy over the (class, size) points above the eager limits that every measured
    mechanism has: a sweep cut short by its budget may have measured one mechanism in
    more classes than another, and a score over other points would compare nothing. Open
    MPI selects one smsc component per job, so one mechanism serves every class.
    Returns (name, {name: score}, note): note says what the scores leave out, or why no
    mechanism was chosen though several were measured (None when nothing is left out);
    (None, {}, None) when no mechanism has measurements."""
    ratios = {}
    for mech in mechanisms:
        r = _ratios(med, classes, mech, eager_limits)
        if r:
            ratios[mech] = r
    if not ratios:
        return None, {}, None
    common = set.intersection(*(set(r) for r in ratios.values()))
    if not common:
        return None, {}, ("no mechanism chosen: the mechanisms measured have no class and "
                          "size above the eager limits in common (%s), so they cannot be "
                          "compared (a sweep cut short by its budget?); every threshold is "
                          "left auto: resume with a larger --budget"
                          % "; ".join("%s: %s" % (m, _points(r)) for m, r in ratios.items()))
    scores = {m: math.exp(statistics.mean(math.log(r[k]) for k in common))
              for m, r in ratios.items()}
    note = None
    if any(len(r) > len(common) for r in ratios.values()):
        note = ("mechanisms compared only where each of %s was measured: %s; the other "
                "points are left out of the scores" % (", ".join(ratios), _points(common)))
    return min(scores, key=lambda m: (scores[m], MECHANISMS.index(m)
                                      if m in MECHANISMS else 99)), scores, note


def tune(rows, classes, mechanisms, eager_limits, margin=DEFAULT_MARGIN):
    """Everything the parameter file needs: (mechanism, scores, {class: Decision},
    {mechanism: {class: Decision}}, medians, note); note: choose_mechanism()'s."""
    if not (math.isfinite(margin) and 0 <= margin < 1):
        raise ValueError("margin %r: expected 0 <= margin < 1" % margin)
    med = medians(rows)
    mech, scores, note = choose_mechanism(med, classes, mechanisms, eager_limits)
    per_mech = {}
    for m in mechanisms:
        per_mech[m] = {cls: decide(med.get((cls, DOUBLE), {}), med.get((cls, m), {}),
                                   eager_limits[cls], margin)
                       for cls in classes if (cls, m) in med and (cls, DOUBLE) in med}
    chosen = per_mech.get(mech, {}) if mech else {}
    return mech, scores, chosen, per_mech, med, note
