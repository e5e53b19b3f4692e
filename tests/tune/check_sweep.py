#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""check_sweep.py OUT_DIR [--margin M]: does the parameter file smx-tune wrote into OUT_DIR
follow from the measurements recorded beside it?

Written apart from contrib/smx_tune (it imports none of it) so that the check and the tool
cannot share a mistake. From runs.csv, units.csv and state.json it takes the medians of the
finished jobs and, for every class the file sets, requires:

- N > 0: N is a measured size above the class's eager limit; single copy's median is no
  slower than double copy's at N, and double copy's no slower at the measured size just
  below N (when that size is above the eager limit): the switch sits at a crossover;
- N = 0: double copy is no slower at the largest size, or single copy's lead over the
  sizes it leads at the top is under the noise margin;
- either way, no other switch point fits the data better under the rule the tool
  documents (the sum of each size's slowdown against the faster protocol).

Exit 0 when every class passes, 1 with a message per failure.
"""
import csv
import json
import math
import os
import re
import statistics
import sys


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def main():
    out = sys.argv[1]
    margin = float(sys.argv[sys.argv.index("--margin") + 1]) if "--margin" in sys.argv else 0.05
    with open(os.path.join(out, "state.json")) as f:
        plan = json.load(f)["plan"]
    finished = {u["run_id"] for u in read_csv(os.path.join(out, "units.csv"))}
    times = {}
    for r in read_csv(os.path.join(out, "runs.csv")):
        if r["run_id"] in finished:
            times.setdefault((r["class"], r["protocol"], int(r["bytes"])), []).append(
                float(r["usec"]))
    values = {}
    with open(os.path.join(out, "smx-tuned.conf")) as f:
        for line in f:
            m = re.match(r"^(\w+)=(\S+)$", line.strip())
            if m:
                values[m.group(1)] = m.group(2)
    mech = values.get("smsc") or (plan["available"][0] if len(plan["available"]) == 1
                                  else None)
    failures = []
    if mech is None:
        failures.append("several mechanisms available but no smsc line")
    checked = 0
    for cls, eager in plan["eager_limits"].items():
        key = "btl_smx_single_copy_min_" + cls
        if key not in values or mech is None:
            continue
        n = 0 if values[key] == "never" else int(values[key])
        sizes = sorted(s for (c, p, s) in times if c == cls and p == "double"
                       and s > eager and (cls, mech, s) in times)
        med_d = [statistics.median(times[(cls, "double", s)]) for s in sizes]
        med_s = [statistics.median(times[(cls, mech, s)]) for s in sizes]
        if not sizes:
            failures.append("%s: a value without measurements above the eager limit" % cls)
            continue
        best = [min(d, s) for d, s in zip(med_d, med_s)]
        cost = [sum(d / b - 1 for d, b in zip(med_d[:k], best[:k])) +
                sum(s / b - 1 for s, b in zip(med_s[k:], best[k:]))
                for k in range(len(sizes) + 1)]
        before = len(failures)
        k = len(sizes) if n == 0 else (sizes.index(n) if n in sizes else None)
        if k is None:
            failures.append("%s: %d is not a measured size above the eager limit %d"
                            % (cls, n, eager))
            continue
        if n > 0:
            if med_s[k] > med_d[k]:
                failures.append("%s: single copy from %d, but double copy is faster there "
                                "(%.2f us vs %.2f us)" % (cls, n, med_d[k], med_s[k]))
            if k > 0 and med_d[k - 1] > med_s[k - 1]:
                failures.append("%s: single copy from %d, but it is already faster at %d"
                                % (cls, n, sizes[k - 1]))
            if cost[k] > min(cost) + 1e-9:
                failures.append("%s: switch at %d costs %.3f, the best switch %.3f"
                                % (cls, n, cost[k], min(cost)))
        else:
            kb = min(range(len(cost)), key=lambda i: (cost[i], -i))
            if kb < len(sizes):
                gain = math.exp(statistics.mean(math.log(d / s) for d, s in
                                                zip(med_d[kb:], med_s[kb:])))
                if gain >= 1 + margin:
                    failures.append("%s: never single copy, but it is %.2fx faster from %d"
                                    % (cls, gain, sizes[kb]))
        checked += 1
        if len(failures) > before:
            continue
        print("ok: %s: btl_smx_single_copy_min_%s=%d follows from the medians (%s)"
              % (cls, cls, n, ", ".join("%d: %.1f/%.1f us" % x
                                        for x in zip(sizes, med_d, med_s))))
    if not checked:
        failures.append("no class value was checked")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
