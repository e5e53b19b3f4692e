# SPDX-License-Identifier: BSD-3-Clause
"""Unit tests of run-bench's parsing, medians and ratios, its input checks and how it runs
a job (fake launchers: no MPI job runs here) (python3 -m unittest)."""
import contextlib
import importlib.machinery
import importlib.util
import io
import os
import re
import shutil
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
_loader = importlib.machinery.SourceFileLoader("run_bench", os.path.join(HERE, "run-bench"))
_spec = importlib.util.spec_from_loader("run_bench", _loader)
rb = importlib.util.module_from_spec(_spec)
_loader.exec_module(rb)


def run(label, size, usec, mbps=0.0):
    return {"label": label, "bytes": size, "usec": usec, "mbps": mbps}


class Summarize(unittest.TestCase):
    def test_median_over_repetitions_resists_one_outlier(self):
        runs = [run("a", 8, 1.0), run("a", 8, 1.2), run("a", 8, 50.0)]
        (size, med, _), = rb.summarize(runs, ["a"], "a")
        self.assertEqual(8, size)
        self.assertAlmostEqual(1.2, med["a"][0])

    def test_speedup_is_baseline_time_over_configuration_time(self):
        runs = [run("base", 4096, 4.0), run("fast", 4096, 2.0), run("slow", 4096, 8.0)]
        (_, _, sp), = rb.summarize(runs, ["base", "fast", "slow"], "base")
        self.assertAlmostEqual(1.0, sp["base"])
        self.assertAlmostEqual(2.0, sp["fast"])
        self.assertAlmostEqual(0.5, sp["slow"])

    def test_sizes_are_sorted_and_missing_configurations_left_out(self):
        runs = [run("a", 1024, 2.0), run("a", 0, 1.0), run("b", 0, 1.0)]
        rows = rb.summarize(runs, ["a", "b"], "a")
        self.assertEqual([0, 1024], [r[0] for r in rows])
        self.assertNotIn("b", rows[1][1])
        self.assertNotIn("b", rows[1][2])

    def test_no_ratio_without_a_baseline_measurement(self):
        rows = rb.summarize([run("b", 64, 1.0)], ["a", "b"], "a")
        self.assertEqual({}, rows[0][2])


class SplitByState(unittest.TestCase):
    def test_each_job_goes_by_its_own_zero_byte_time(self):
        def job(label, rep, zero, big):
            return [dict(run(label, 0, zero), rep=rep), dict(run(label, 4096, big), rep=rep)]
        runs = job("a", 0, 0.12, 1.0) + job("a", 1, 0.35, 9.0) + job("b", 0, 0.34, 8.0) + \
            job("b", 1, 0.25, 7.0) + [dict(run("c", 4096, 5.0), rep=0)]
        quiet, slow = rb.split_by_state(runs, 0.25)
        self.assertEqual({("a", 0)}, {(r["label"], r["rep"]) for r in quiet})
        self.assertEqual({("a", 1), ("b", 0), ("b", 1)}, {(r["label"], r["rep"]) for r in slow})
        self.assertEqual(2, len(quiet))  # its 0-byte row with the rest; c has none: neither
        self.assertEqual(6, len(slow))


HEADER = "# smx_bench mode=pingpong\nmode,bytes,iters,usec,mbps\n"
SHM_WARNING = ("btl:smx: /dev/shm has room for this process's segment, not for those of "
               "every process on this node")


class ParseBenchCsv(unittest.TestCase):
    def test_comments_are_skipped_and_fields_typed(self):
        text = HEADER + "pingpong,4096,10,2.5,1638.4\n"
        rows = rb.parse_bench_csv(text)
        self.assertEqual([{"mode": "pingpong", "bytes": 4096, "iters": 10, "usec": 2.5,
                           "mbps": 1638.4}], rows)

    def test_a_warning_line_is_a_clear_error_not_a_traceback(self):
        for text in (SHM_WARNING + "\n" + HEADER + "pingpong,0,10,1.0,0.0\n",
                     HEADER + "pingpong,0,10,1.0,0.0\n" + SHM_WARNING + "\n"):
            with self.assertRaisesRegex(rb.BenchOutputError, "/dev/shm"):
                rb.parse_bench_csv(text, "pingpong")

    def test_rows_must_have_the_mode_asked_for_and_numbers(self):
        with self.assertRaisesRegex(rb.BenchOutputError, "mode 'bw', not 'pingpong'"):
            rb.parse_bench_csv(HEADER + "bw,4096,10,2.5,1638.4\n", "pingpong")
        with self.assertRaisesRegex(rb.BenchOutputError, "not numbers"):
            rb.parse_bench_csv(HEADER + "pingpong,4096,10,fast,1638.4\n", "pingpong")
        with self.assertRaisesRegex(rb.BenchOutputError, "out of range"):
            rb.parse_bench_csv(HEADER + "pingpong,4096,10,nan,1638.4\n", "pingpong")
        with self.assertRaisesRegex(rb.BenchOutputError, "fields"):
            rb.parse_bench_csv(HEADER + "pingpong,4096,10\n", "pingpong")

    def test_no_rows_is_an_error(self):
        with self.assertRaisesRegex(rb.BenchOutputError, "no CSV output"):
            rb.parse_bench_csv("")
        with self.assertRaisesRegex(rb.BenchOutputError, "no rows"):
            rb.parse_bench_csv(HEADER)

    def test_stderr_is_shown_with_the_configuration_label(self):
        self.assertEqual("[smx-cma] a\n[smx-cma] b\n", rb.prefixed("smx-cma", "a\n\nb"))


UML = "UML guest: Linux 7.2.13 (User-mode Linux), 2 CPUs; host: AMD EPYC (family 25, model 17)"
HOST = "host: Linux 6.18.44, 2 CPUs, AMD EPYC (family 25, model 17)"


class Notes(unittest.TestCase):
    def test_where_a_job_ran_and_its_first_touches_are_read_from_its_comments(self):
        text = ("# smx_bench mode=pingpong\n# system: %s\n" % UML + HEADER +
                "pingpong,0,10,0.2,0.0\n# first bytes=0 touch_usec=120.5 warmup_usec=0.3\n"
                "pingpong,4096,10,0.5,8192.0\n# first bytes=4096 touch_usec=99 warmup_usec=2.5\n"
                "# first bytes=x touch_usec=1 warmup_usec=1\n")
        self.assertEqual((UML, {0: (120.5, 0.3), 4096: (99.0, 2.5)}), rb.parse_bench_notes(text))
        self.assertEqual((None, {}), rb.parse_bench_notes(HEADER + "pingpong,0,10,0.2,0.0\n"))

    def test_one_system_for_all_is_said_once_and_different_ones_by_configuration(self):
        self.assertEqual("measured on: " + UML, rb.where({"a": {UML}, "b": {UML}}, ["a", "b"]))
        self.assertEqual("measured on: %s (a); %s (b, c)" % (HOST, UML),
                         rb.where({"a": {HOST}, "b": {UML}, "c": {UML}}, ["a", "b", "c"]))
        self.assertIn("not said (a benchmark without '# system') (b)",
                      rb.where({"a": {HOST}}, ["a", "b"]))


class Presets(unittest.TestCase):
    def test_presets_come_from_the_shared_configurations_file(self):
        presets = rb.read_presets()
        self.assertIn("sm-cma", presets)
        self.assertIn("--mca btl sm,self", presets["sm-cma"])
        self.assertIn("--mca smsc ^", presets["sm-nosc"])


def fake_job(body):
    """argv of a Python job running body (a job that stands for mpirun)."""
    return [sys.executable, "-c", "import signal, sys, time\n" + body]


# a job that writes the CSV header, then waits; SIGINT ends it and says so (the handler is
# in place before anything else, and the timeouts below leave it seconds to get there)
SLOW = """
def on_int(signum, frame):
    print("stopped by SIGINT", file=sys.stderr, flush=True)
    sys.exit(1)
signal.signal(signal.SIGINT, on_int)
print("mode,bytes,iters,usec,mbps", flush=True)
time.sleep(60)
"""


class RunJob(unittest.TestCase):
    def test_stderr_is_kept_apart_from_the_csv(self):
        rc, out, err = rb.run_job(fake_job(
            "print(%r, file=sys.stderr)\nprint(%r)" % (SHM_WARNING, HEADER.strip() +
                                                     "\npingpong,0,10,1.0,0.0")), 30)
        self.assertEqual(0, rc)
        self.assertIn("/dev/shm", err)
        self.assertEqual(1, len(rb.parse_bench_csv(out, "pingpong")))

    def test_a_job_past_its_timeout_is_stopped_with_sigint_first(self):
        t0 = time.monotonic()
        with self.assertRaises(rb.JobTimeout) as cm:
            rb.run_job(fake_job(SLOW), 3)
        self.assertLess(time.monotonic() - t0, 10)
        self.assertIn("stopped by SIGINT", cm.exception.stderr)
        self.assertIn("mode,bytes", cm.exception.stdout)


class JobCommand(unittest.TestCase):
    def args(self, np, order="sequential", target_mb=None, mode="pingpong", window=None,
             delay_us=None):
        return rb.argparse.Namespace(mpirun="mpirun", np=np, bind="core", bench="smx_bench",
                                     mode=mode, sizes="0", off_cache=64, samples=3,
                                     order=order, target_mb=target_mb, window=window,
                                     delay_us=delay_us)

    def test_the_skew_mode_its_window_and_delay_are_passed_only_when_given(self):
        cmd = rb.job_command(self.args(2), "a", "", {}, {}, 2)
        self.assertNotIn("--window", cmd)
        self.assertNotIn("--delay-us", cmd)
        cmd = rb.job_command(self.args(2, mode="skew", window=16, delay_us=0), "a", "", {}, {}, 2)
        self.assertEqual("skew", cmd[cmd.index("--mode") + 1])
        self.assertEqual("16", cmd[cmd.index("--window") + 1])
        self.assertEqual("0", cmd[cmd.index("--delay-us") + 1])

    def test_the_target_is_passed_only_when_given(self):
        self.assertNotIn("--target-mb", rb.job_command(self.args(2), "a", "", {}, {}, 2))
        cmd = rb.job_command(self.args(2, target_mb=1024), "a", "", {}, {}, 2)
        self.assertEqual("1024", cmd[cmd.index("--target-mb") + 1])

    def test_the_order_is_passed_only_when_it_is_not_the_default(self):
        cmd = rb.job_command(self.args(2), "a", "", {}, {}, 2)
        self.assertNotIn("--order", cmd)
        cmd = rb.job_command(self.args(2, "random"), "a", "", {}, {}, 2)
        self.assertEqual(["--order", "random"], cmd[-2:])

    def test_more_ranks_than_usable_cpus_are_not_bound_and_oversubscribe(self):
        cmd = rb.job_command(self.args(4), "a", "--mca btl sm,self", {}, {}, 2)
        self.assertEqual("none", cmd[cmd.index("--bind-to") + 1])
        self.assertIn("--oversubscribe", cmd)
        cmd = rb.job_command(self.args(2), "a", "", {"a": "/x/mpiexec"}, {"a": "/x/b"}, 2)
        self.assertEqual(["/x/mpiexec", "-np", "2", "--bind-to", "core", "/x/b"], cmd[:6])
        # a launcher with arguments of its own (tests/bench/pympi-launch NAME)
        cmd = rb.job_command(self.args(2), "a", "", {"a": "/x/launch 'an mpi'"}, {"a": "/x/b"}, 2)
        self.assertEqual(["/x/launch", "an mpi", "-np", "2", "--bind-to", "core", "/x/b"],
                         cmd[:7])


class Main(unittest.TestCase):
    """run-bench end to end with a fake launcher (--launcher/--binary: no Open MPI check,
    no build: --bench names a file newer than the sources)."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.bench = os.path.join(self.tmp, "smx_bench")
        with open(self.bench, "w"):
            pass

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def launcher(self, body):
        path = os.path.join(self.tmp, "fake-mpirun")
        with open(path, "w") as f:
            f.write("#!%s\nimport signal, sys, time\n%s" % (sys.executable, body))
        os.chmod(path, 0o755)
        return path

    def main(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        code = 0
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rb.main(list(argv))
            except SystemExit as e:
                code = e.code
        return code, out.getvalue(), err.getvalue()

    def fake(self, body, *extra):
        return self.main("--config", "fake=", "--launcher", "fake=" + self.launcher(body),
                         "--binary", "fake=/bin/true", "--bench", self.bench, "--sizes", "0,4K",
                         "--reps", "1", "--samples", "1", *extra)

    def test_warnings_of_a_run_that_worked_are_shown_and_the_run_kept(self):
        code, out, err = self.fake("print(%r, file=sys.stderr)\nprint(%r)"
                                   % (SHM_WARNING, HEADER + "pingpong,0,10,1.0,0.0\n"
                                      "pingpong,4096,10,2.0,2048.0"))
        self.assertEqual(0, code, err)
        self.assertIn("[fake] " + SHM_WARNING, err)
        self.assertRegex(out, r"(?m)^\s+4K\s+2\.00\s")

    def test_the_tables_say_where_they_were_measured_and_first_touches_come_apart(self):
        csv_path = os.path.join(self.tmp, "out.csv")
        code, out, err = self.fake("print(%r)" % ("# system: %s\n" % UML + HEADER +
                                                  "pingpong,0,10,0.2,0.0\n"
                                                  "# first bytes=0 touch_usec=120.5 warmup_usec=0.3\n"
                                                  "pingpong,4096,10,0.5,8192.0\n"
                                                  "# first bytes=4096 touch_usec=99 warmup_usec=2.5"),
                                   "--csv", csv_path)
        self.assertEqual(0, code, err)
        self.assertIn("measured on: " + UML, out)
        self.assertIn("first touches, out of the timed batches", out)
        self.assertRegex(out, r"(?m)^\s+4K\s+0\.1\s+5\.00$")
        with open(csv_path) as f:
            lines = f.read().splitlines()
        self.assertTrue(lines[0].endswith(",system,touch_usec,warmup_usec"))
        self.assertIn(',"%s",99.0,2.5' % UML, "\n".join(lines))

    def test_slow_jobs_are_summarized_apart(self):
        code, out, err = self.fake("print(%r)" % (HEADER + "pingpong,0,10,0.4,0.0\n"
                                                  "pingpong,4096,10,9.0,455.1"),
                                   "--slow-state-us", "0.25")
        self.assertEqual(0, code, err)
        self.assertIn("quiet jobs only (0 B below 0.25 us): median of fake 0", out)
        self.assertIn("slow jobs only (0 B at or above 0.25 us): median of fake 1", out)
        self.assertEqual(2, len(re.findall(r"(?m)^\s+4K\s+9\.00\s", out)))  # all, slow

    def test_output_that_is_not_the_csv_names_the_configuration(self):
        code, _, err = self.fake("print(%r)" % (HEADER + "bw,0,10,1.0,0.0"))
        self.assertIn("configuration 'fake': its output is not smx_bench's CSV", str(code))

    def test_a_timeout_stops_the_job_and_names_the_configuration(self):
        code, _, err = self.fake(SLOW, "--timeout", "3")
        self.assertIn("configuration 'fake' ran past --timeout 3 s", str(code))
        self.assertIn("[fake] stopped by SIGINT", err)

    def test_bad_input_is_an_argument_error(self):
        cases = [(("--launcher", "X"), "--launcher wants LABEL=COMMAND, got 'X'"),
                 (("--binary", "X"), "--binary wants LABEL=PATH, got 'X'"),
                 (("--binary", "y=/bin/true"), "--binary for unknown configuration 'y'"),
                 (("--samples", "0"), "--samples must be 1 to 1000, got 0"),
                 (("--timeout", "0"), "--timeout must be 1 to 86400, got 0"),
                 (("--reps", "0"), "--reps must be 1 to 1000, got 0"),
                 (("--np", "1"), "--np must be 2 to 4096, got 1"),
                 (("--off-cache", "-1"), "--off-cache must be 0 to 65536, got -1"),
                 (("--off-cache", "70000"), "--off-cache must be 0 to 65536, got 70000"),
                 (("--order", "shuffled"), "argument --order: invalid choice: 'shuffled'"),
                 (("--target-mb", "0"), "--target-mb must be 1 to 65536, got 0"),
                 (("--busy-cpu", "4096"), "--busy-cpu 4096 is not a CPU this process may use"),
                 (("--slow-state-us", "0.3", "--sizes", "4K"),
                  "--slow-state-us wants a time above 0 and 0 among --sizes"),
                 (("--slow-state-us", "0", "--sizes", "0,4K"),
                  "--slow-state-us wants a time above 0 and 0 among --sizes")]
        for extra, message in cases:
            code, _, err = self.main("--config", "x=", "--bench", self.bench, *extra)
            self.assertEqual(2, code, extra)
            self.assertIn(message, err)


if __name__ == "__main__":
    unittest.main()
