#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""tests/mpi4py/record.py TESTDIR RESULTDIR [main.py options]: run mpi4py's own test
suite (TESTDIR: the sdist's test/, driven by its main.py) under mpirun, and record the
outcome of every test, per rank, so that two transports can be compared test by test.

Each rank writes RESULTDIR/rank<N>.tsv: one line 'outcome<TAB>test id' per test, outcome
one of pass, fail, error, skip, xfail, xpass; a test with a failing subtest is 'fail'.
The last line is '#complete' once the suite has run to its end, so a rank that crashed,
hung or aborted leaves a file without it.
"""
import os
import sys
import unittest

testdir, resultdir = sys.argv[1], sys.argv[2]
sys.path.insert(0, testdir)
import main as mpi4py_main  # noqa: E402  (mpi4py's runner: its options, its loader)

# Worst outcome wins when a test reports more than once (subtests, tearDown errors).
SEVERITY = {"pass": 0, "skip": 1, "xfail": 1, "xpass": 2, "fail": 3, "error": 4}


class RecordingResult(unittest.TextTestResult):
    outcomes = {}

    def _note(self, test, outcome):
        key = test.id()
        old = self.outcomes.get(key)
        if old is None or SEVERITY[outcome] > SEVERITY[old]:
            self.outcomes[key] = outcome

    def addSuccess(self, test):
        super().addSuccess(test)
        self._note(test, "pass")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._note(test, "fail")

    def addError(self, test, err):
        super().addError(test, err)
        self._note(test, "error")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._note(test, "skip")

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._note(test, "xfail")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._note(test, "xpass")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            failed = issubclass(err[0], test.failureException)
            self._note(test, "fail" if failed else "error")


class RecordingRunner(unittest.TextTestRunner):
    resultclass = RecordingResult

    def run(self, test):
        result = super().run(test)
        from mpi4py import MPI
        rank = MPI.COMM_WORLD.Get_rank()
        path = os.path.join(resultdir, "rank%d.tsv" % rank)
        with open(path, "w") as f:
            for key in sorted(RecordingResult.outcomes):
                f.write("%s\t%s\n" % (RecordingResult.outcomes[key], key))
            f.write("#complete\n")
        return result


if __name__ == "__main__":
    sys.dont_write_bytecode = True
    mpi4py_main.main(module=None, argv=[os.path.join(testdir, "main.py")] + sys.argv[3:],
                     testRunner=RecordingRunner)
