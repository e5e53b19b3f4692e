#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""tests/mpi4py/compare.py BASE_LABEL BASE_DIR LABEL DIR: compare two runs of mpi4py's
test suite recorded by record.py (one rank<N>.tsv per rank).

Holds when both runs completed on every rank and, rank by rank, the same tests ran with
the same outcome. Prints the outcome counts of both, every difference, and the tests
that fail on both (failures of the MPI library or of mpi4py, not of the transport).
Exit status 0 when the runs agree, 1 otherwise.
"""
import collections
import glob
import os
import sys

BAD = ("fail", "error", "xpass")


def load(resultdir):
    """{rank: {test id: outcome}}, and the ranks whose record is missing or cut short."""
    runs, incomplete = {}, []
    for path in sorted(glob.glob(os.path.join(resultdir, "rank*.tsv"))):
        rank = int(os.path.basename(path)[4:-4])
        with open(path) as f:
            lines = f.read().splitlines()
        if not lines or lines[-1] != "#complete":
            incomplete.append(rank)
            continue
        runs[rank] = dict(reversed(line.split("\t", 1)) for line in lines[:-1])
    return runs, incomplete


def counts(outcomes):
    c = collections.Counter(outcomes.values())
    return "%d tests: %d pass, %d skip, %d fail, %d error%s" % (
        len(outcomes), c["pass"], c["skip"] + c["xfail"], c["fail"], c["error"],
        ", %d unexpected success" % c["xpass"] if c["xpass"] else "")


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    base_label, base_dir, label, other_dir = sys.argv[1:]
    base, base_cut = load(base_dir)
    other, other_cut = load(other_dir)
    ok = True
    for name, cut, runs in ((base_label, base_cut, base), (label, other_cut, other)):
        if cut or not runs:
            print("FAIL: %s: the suite did not run to its end on rank(s) %s"
                  % (name, ", ".join(map(str, cut)) or "(no record at all)"))
            ok = False
    if set(base) != set(other):
        print("FAIL: ranks recorded: %s %s, %s %s" % (base_label, sorted(base), label,
                                                      sorted(other)))
        ok = False

    on_both = set()
    for rank in sorted(set(base) & set(other)):
        b, o = base[rank], other[rank]
        print("  rank %d  %-12s %s" % (rank, base_label, counts(b)))
        print("  rank %d  %-12s %s" % (rank, label, counts(o)))
        for test in sorted(set(b) | set(o)):
            bo, oo = b.get(test, "not run"), o.get(test, "not run")
            if bo != oo:
                print("FAIL: rank %d: %s: %s on %s, %s on %s"
                      % (rank, test, bo, base_label, oo, label))
                ok = False
            elif bo in BAD:
                on_both.add((test, bo))
    for test, outcome in sorted(on_both):
        print("  %s on both (not the transport's doing): %s" % (outcome, test))
    if ok:
        print("ok: %s agrees with %s test by test" % (label, base_label))
    else:
        print("FAIL: %s differs from %s (above)" % (label, base_label))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
