# SPDX-License-Identifier: BSD-3-Clause
"""Unit tests of contrib/smx-tune on recorded data: no MPI job runs here.

Run: /usr/bin/python3 -m unittest -v test_smx_tune   (from tests/tune; Debian's Python,
where python3-matplotlib is installed). data/ holds the recordings (data/README.md).
"""
import contextlib
import csv
import io
import os
import shutil
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "contrib"))

from smx_tune import analysis, cli, paramfile, plots, runner, store, topology  # noqa: E402

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
KIB = 1024


def recording(name):
    with open(os.path.join(HERE, "data", name), newline="") as f:
        return list(csv.DictReader(f))


def decision(name, cls, mech, eager, margin=analysis.DEFAULT_MARGIN):
    med = analysis.medians(recording(name))
    return analysis.decide(med[(cls, analysis.DOUBLE)], med[(cls, mech)], eager, margin)


class CrossoverOnRecordedData(unittest.TestCase):
    def test_dev_machine_l3_double_copy_wins_so_single_copy_is_never_used(self):
        d = decision("dev-vm-l3-cma.csv", "l3", "cma", 34816)
        self.assertEqual(d.threshold, 0)
        self.assertIn("never", d.reason)
        self.assertTrue(all(s > 34816 for s in d.sizes), d.sizes)

    def test_noisy_curves_switch_where_single_copy_stays_ahead_not_at_a_blip(self):
        d = decision("noisy-crossing.csv", "package", "cma", 4096)
        self.assertEqual(d.threshold, 256 * KIB)
        # the 32K point where single copy is level or ahead is not taken
        i = d.sizes.index(32 * KIB)
        self.assertGreaterEqual(d.double[i] / d.single[i], 1.0)

    def test_outliers_in_a_minority_of_runs_do_not_move_the_medians(self):
        med = analysis.medians(recording("noisy-crossing.csv"))
        pt = med[("package", "cma")][64 * KIB]
        self.assertEqual(pt.n, 5)
        self.assertGreater(pt.usec, 0.8 * (20 + 65536 / 10e3))  # not the planted 0.3x

    def test_curves_that_never_cross_double_copy_faster_gives_never(self):
        self.assertEqual(decision("never-cross.csv", "l3", "cma", 34816).threshold, 0)

    def test_curves_that_never_cross_single_copy_faster_switches_at_first_size_above_eager(self):
        d = decision("never-cross.csv", "remote", "cma", 4096)
        self.assertEqual(d.threshold, 8 * KIB)
        self.assertIn("first size measured above the eager limit", d.reason)

    def test_gain_inside_the_noise_margin_keeps_double_copy(self):
        d = decision("marginal-gain.csv", "l2", "cma", 34816)
        self.assertEqual(d.threshold, 0)
        self.assertIn("noise margin", d.reason)
        # with no margin the same data would switch: the margin is what decides
        self.assertGreater(decision("marginal-gain.csv", "l2", "cma", 34816, 0.0).threshold, 0)

    def test_sizes_at_or_below_the_eager_limit_never_decide(self):
        # single copy "wins" 32K in the noisy data; with the eager limit above every size
        # that wins, the only sizes left favour nothing below 256K
        d = decision("noisy-crossing.csv", "package", "cma", 128 * KIB)
        self.assertEqual(d.threshold, 256 * KIB)
        self.assertEqual(d.sizes[0], 256 * KIB)

    def test_no_size_above_the_eager_limit_leaves_the_class_measured(self):
        d = decision("never-cross.csv", "remote", "cma", 8 << 20)
        self.assertIsNone(d.threshold)
        self.assertIn("left auto", d.reason)


class StepFit(unittest.TestCase):
    def test_one_bad_point_does_not_outweigh_its_neighbours(self):
        double = [1, 1, 1, 1, 2, 2, 2]
        single = [2, 2, 0.9, 2, 1, 1, 1]  # 3rd point: single slightly ahead, alone
        self.assertEqual(analysis.step_fit(double, single), 4)

    def test_ties_keep_double_copy(self):
        self.assertEqual(analysis.step_fit([1, 1, 1], [1, 1, 1]), 3)

    def test_single_copy_everywhere(self):
        self.assertEqual(analysis.step_fit([2, 2], [1, 1]), 0)


class Mechanisms(unittest.TestCase):
    def test_the_faster_mechanism_is_chosen_and_an_unmeasured_one_is_ignored(self):
        rows = recording("knemlike-and-cma.csv")
        mech, scores, chosen, per_mech, _, note = analysis.tune(
            rows, ["numa"], ["cma", "knemlike", "xpmem"], {"numa": 4096})
        self.assertIsNone(note)
        self.assertEqual(mech, "knemlike")
        self.assertLess(scores["knemlike"], scores["cma"])
        self.assertNotIn("xpmem", scores)
        self.assertEqual(per_mech["xpmem"], {})
        self.assertEqual(chosen["numa"].threshold, 32 * KIB)
        self.assertEqual(per_mech["cma"]["numa"].threshold, 64 * KIB)

    def test_a_missing_mechanism_leaves_the_other_one_in_charge(self):
        rows = [r for r in recording("knemlike-and-cma.csv") if r["protocol"] != "knemlike"]
        mech, _, chosen, _, _, _ = analysis.tune(rows, ["numa"], ["knemlike", "cma"],
                                                 {"numa": 4096})
        self.assertEqual(mech, "cma")
        self.assertEqual(chosen["numa"].threshold, 64 * KIB)

    def test_no_mechanism_measured_gives_no_decision(self):
        rows = [r for r in recording("never-cross.csv") if r["protocol"] == "double"]
        mech, scores, chosen, _, _, note = analysis.tune(rows, ["l3"], ["cma"], {"l3": 34816})
        self.assertIsNone(mech)
        self.assertEqual(chosen, {})
        self.assertIsNone(note)

    def test_mechanisms_are_scored_only_where_all_were_measured(self):
        # the budget ran out after class a: knemlike has a only, cma has a and b. cma is
        # faster at every point both have; its poor showing in b must not hand the choice
        # to knemlike
        rows = budget_cut_rows({"a": {"cma": 4.0, "knemlike": 5.0}, "b": {"cma": 9.0}})
        mech, scores, _, _, _, note = analysis.tune(rows, ["a", "b"], ["cma", "knemlike"],
                                                    {"a": 4096, "b": 4096})
        self.assertEqual(mech, "cma")
        self.assertAlmostEqual(scores["cma"], 0.4)
        self.assertAlmostEqual(scores["knemlike"], 0.5)
        self.assertIn("compared only where each of cma, knemlike was measured: a (2 sizes)",
                      note)

    def test_mechanisms_measured_at_no_common_point_choose_nothing(self):
        rows = budget_cut_rows({"a": {"cma": 4.0}, "b": {"knemlike": 5.0}})
        mech, scores, chosen, per_mech, _, note = analysis.tune(
            rows, ["a", "b"], ["cma", "knemlike"], {"a": 4096, "b": 4096})
        self.assertIsNone(mech)
        self.assertEqual((scores, chosen), ({}, {}))
        self.assertIn("no mechanism chosen", note)
        self.assertIn("cma: a (2 sizes); knemlike: b (2 sizes)", note)
        self.assertEqual(per_mech["cma"]["a"].threshold, 8 * KIB)  # still worked out

    def test_a_margin_outside_0_to_1_is_refused(self):
        rows = recording("never-cross.csv")
        for margin in (-0.1, 1.0, float("nan"), float("inf")):
            with self.assertRaises(ValueError):
                analysis.tune(rows, ["l3"], ["cma"], {"l3": 34816}, margin)


def budget_cut_rows(times):
    """runs.csv rows: per class, double copy at 10 us and each mechanism at the time given,
    at 8K and 16K (above an eager limit of 4K), one repetition."""
    rows = []
    for cls, mechs in times.items():
        for proto, usec in [("double", 10.0)] + sorted(mechs.items()):
            for size in (8 * KIB, 16 * KIB):
                rows.append({"class": cls, "protocol": proto, "rep": "0", "bytes": str(size),
                             "usec": str(usec), "mbps": str(size / usec)})
    return rows


def info_for(pairs, eager, available=1, absent=()):
    return {"machine": "testhost, Test CPU", "topology": "test", "date": "2026-11-22T12:00",
            "ompi": "5.0.7", "bench": "smx_bench pingpong", "reps": "5 repetitions",
            "mechanisms": "cma (available, used), knemlike (unavailable: no device)",
            "pairs": pairs, "eager_limits": eager, "absent": list(absent),
            "available": available}


class ParameterFile(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def render(self, rows, classes, mechs, eager, available):
        result = analysis.tune(rows, classes, mechs, eager)
        text = paramfile.render(info_for({c: (0, i + 1) for i, c in enumerate(classes)},
                                         eager, available, ["numa"]), result)
        path = os.path.join(self.tmp, "smx-tuned.conf")
        with open(path, "w") as f:
            f.write(text)
        return text, paramfile.read_values(path)

    def test_values_are_the_decisions_and_the_header_shows_what_they_rest_on(self):
        rows = recording("never-cross.csv")
        text, values = self.render(rows, ["l3", "remote"], ["cma"],
                                   {"l3": 34816, "remote": 4096}, 1)
        # double copy everywhere is written "never"; nothing else is pinned: no eager
        # limit, no parameter btl/smx no longer has
        self.assertEqual(values, {"btl_smx_single_copy_min_l3": "never",
                                  "btl_smx_single_copy_min_remote": "8192"})
        for needle in ("# machine:    testhost", "# date:       2026-11-22", "double us",
                       "cma us", "not on this machine (left auto): numa",
                       "# class l3: CPUs 0 and 1, measured by rendezvous above 34816 bytes",
                       "Eager\n# limits stay auto"):
            self.assertIn(needle, text)
        # the medians behind each value: every size, both protocols, the runs counted
        self.assertRegex(text, r"(?m)^#\s+4M\s+\d+\.\d+\s+\d+\.\d+\s+\d+\.\d+x\s+5/5$")
        # every parameter line is 'name=value', the one form both Open MPI readers take
        for line in text.splitlines():
            if line and not line.startswith("#"):
                self.assertRegex(line, r"^[a-z0-9_]+=\S+$")

    def test_smsc_is_selected_only_when_there_was_a_choice(self):
        rows = recording("knemlike-and-cma.csv")
        _, values = self.render(rows, ["numa"], ["cma", "knemlike"], {"numa": 4096}, 2)
        self.assertEqual(values.get("smsc"), "knemlike")
        rows = [r for r in rows if r["protocol"] != "knemlike"]
        _, values = self.render(rows, ["numa"], ["cma"], {"numa": 4096}, 1)
        self.assertNotIn("smsc", values)

    def test_no_mechanism_chosen_writes_no_value_and_says_why(self):
        rows = budget_cut_rows({"numa": {"cma": 4.0}, "l3": {"knemlike": 5.0}})
        text, values = self.render(rows, ["numa", "l3"], ["cma", "knemlike"],
                                   {"numa": 4096, "l3": 4096}, 2)
        self.assertEqual(values, {})
        self.assertIn("# mechanism:  no mechanism chosen: the mechanisms measured have no "
                      "class and size above the eager limits in common", text)
        self.assertIn("no mechanism chosen (see above): btl_smx_single_copy_min_l3 left "
                      "auto (measured by btl/smx)", text)
        self.assertIn("(with cma instead: single copy", text)

    def test_a_partial_comparison_is_noted_in_the_header(self):
        rows = budget_cut_rows({"numa": {"cma": 4.0, "knemlike": 5.0}, "l3": {"cma": 9.0}})
        text, values = self.render(rows, ["numa", "l3"], ["cma", "knemlike"],
                                   {"numa": 4096, "l3": 4096}, 2)
        self.assertEqual(values.get("smsc"), "cma")
        self.assertIn("# mechanism:  mechanisms compared only where each of cma, knemlike was "
                      "measured: numa (2 sizes)", text)

    def test_a_class_without_data_above_its_eager_limit_gets_no_line(self):
        rows = recording("never-cross.csv")
        text, values = self.render(rows, ["remote"], ["cma"], {"remote": 8 << 20}, 1)
        self.assertEqual(values, {})
        self.assertIn("left auto", text)

    def test_reading_refuses_a_spaced_assignment(self):
        path = os.path.join(self.tmp, "bad.conf")
        with open(path, "w") as f:
            f.write("# ok\nbtl_smx_single_copy_min_l3 = 0\n")
        with self.assertRaisesRegex(ValueError, "bad.conf:2"):
            paramfile.read_values(path)


class Figures(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def assert_png(self, path):
        with open(path, "rb") as f:
            self.assertEqual(f.read(8), PNG_SIGNATURE)
        img = plots.plt.imread(path)
        self.assertGreater(img.shape[0], 100)
        self.assertGreater(img.shape[1], 100)
        self.assertLess(os.path.getsize(path), 100 * 1024)

    def test_class_and_summary_figures_are_png_images(self):
        rows = recording("noisy-crossing.csv")
        mech, _, chosen, _, med, _ = analysis.tune(rows, ["package"], ["cma"],
                                                   {"package": 4096})
        p1 = os.path.join(self.tmp, "c.png")
        p2 = os.path.join(self.tmp, "s.png")
        plots.class_figure(p1, "package", (0, 2), 4096, med, ["double", "cma"],
                           chosen["package"])
        plots.summary_figure(p2, ["package"], mech, med, chosen, {"package": 4096})
        self.assert_png(p1)
        self.assert_png(p2)

    def test_a_figure_without_single_copy_data_is_still_drawn(self):
        rows = [r for r in recording("never-cross.csv") if r["protocol"] == "double"]
        med = analysis.medians(rows)
        p = os.path.join(self.tmp, "s.png")
        plots.summary_figure(p, ["l3"], None, med, {}, {"l3": 34816})
        self.assert_png(p)


class Topologies(unittest.TestCase):
    """The classes btl/smx's own unit tests expect on the same XML files."""
    EXPECTED = {"dev-vm-2core.xml": {"l3": (0, 1)},
                "shared-l2.xml": {"l2": (0, 1), "package": (0, 2)},
                "numa-per-l3.xml": {"l3": (0, 1), "package": (0, 2), "remote": (0, 4)},
                "two-packages-one-numa.xml": {"l3": (0, 1), "numa": (0, 2)},
                "two-sockets-smt.xml": {"l2": (0, 1), "l3": (0, 2), "remote": (0, 4)}}

    def test_each_topology_gives_its_classes_and_a_pair_for_each(self):
        for name, want in self.EXPECTED.items():
            topo = topology.load(os.path.join(TOP, "tests", "topologies", name))
            self.assertEqual(topo.pairs_by_class(), want, name)

    def test_smt_siblings_are_l2_and_recognised_as_one_core(self):
        topo = topology.load(os.path.join(TOP, "tests", "topologies", "two-sockets-smt.xml"))
        self.assertTrue(topo.same_core(0, 1))
        self.assertFalse(topo.same_core(0, 2))

    def test_a_file_that_is_not_a_topology_is_refused(self):
        with self.assertRaises(topology.TopologyError):
            topology.load(os.path.join(HERE, "data", "never-cross.csv"))

    def test_bitmaps_with_several_words(self):
        self.assertEqual(topology.parse_bitmap("0x00000001,0x00000003"), (1 << 32) | 3)


class Store(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_rows_of_a_job_cut_short_do_not_count_and_a_cut_line_is_mended(self):
        st = store.Store(self.tmp)
        row = {"bytes": 4096, "iters": 10, "usec": 1.5, "mbps": 2730.0}
        st.add("a", "l3", "double", 0, [row], 1.0, "t")
        # a job that died after writing part of its rows: no units.csv line, a cut line
        with open(st.runs_path, "a") as f:
            f.write("b,l3,cma,0,4096,10,1.")
        st.add("c", "l3", "cma", 0, [row], 1.0, "t")
        self.assertEqual(sorted(st.units()), [("l3", "cma", 0), ("l3", "double", 0)])
        self.assertEqual(sorted(r["run_id"] for r in st.rows()), ["a", "c"])


def run_cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(list(argv))
    return rc, out.getvalue() + err.getvalue()


class Refusals(unittest.TestCase):
    """Bad input is refused (exit 2) with a message, before any MPI job."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_unknown_mechanism(self):
        rc, out = run_cli("--mechanisms", "cma,shmem", "--out", self.tmp)
        self.assertEqual(rc, 2)
        self.assertIn("unknown single-copy mechanism 'shmem'", out)

    def test_unknown_class(self):
        rc, out = run_cli("--classes", "l4", "--out", self.tmp)
        self.assertEqual(rc, 2)
        self.assertIn("unknown class 'l4'", out)

    def test_budget_too_small_to_measure_anything(self):
        rc, out = run_cli("--budget", "3", "--out", self.tmp)
        self.assertEqual(rc, 2)
        self.assertIn("budget too small to measure anything", out)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "state.json")))

    def test_resuming_with_other_settings(self):
        st = store.Store(self.tmp)
        st.save_state({"settings": {"sizes": [4096]}, "plan": {"host": "x"}})
        rc, out = run_cli("--sizes", "8K", "--budget", "100", "--out", self.tmp)
        self.assertEqual(rc, 2)
        self.assertIn("other settings", out)

    def test_budget_that_is_not_a_finite_positive_number(self):
        conf = os.path.join(self.tmp, "x.conf")
        with open(conf, "w") as f:
            f.write("btl_smx_single_copy_min_l3=0\n")
        for budget in ("nan", "inf", "-inf", "0", "-5"):
            for cmd in ((), ("compare", conf)):
                rc, out = run_cli(*cmd, "--budget=" + budget, "--out", self.tmp)
                self.assertEqual(rc, 2, (cmd, budget))
                self.assertIn("--budget must be a positive number of seconds, got", out)
        self.assertEqual(os.listdir(self.tmp), ["x.conf"])

    def test_margin_outside_0_to_1(self):
        for margin in ("-0.01", "1", "1.5", "nan", "inf"):
            rc, out = run_cli("--margin=" + margin, "--budget", "100", "--out", self.tmp)
            self.assertEqual(rc, 2, margin)
            self.assertIn("--margin must be at least 0 and below 1", out)

    def test_compare_checks_its_numbers_like_sweep(self):
        conf = os.path.join(self.tmp, "x.conf")
        with open(conf, "w") as f:
            f.write("btl_smx_single_copy_min_l3=0\n")
        for opt, value, message in (("--samples", "0", "--samples must be 1 to 1000"),
                                    ("--samples", "1001", "--samples must be 1 to 1000"),
                                    ("--target-mb", "0", "--target-mb must be 1 to 65536"),
                                    ("--off-cache", "-1", "--off-cache must be 0 to 65536"),
                                    ("--reps", "0", "--reps must be 1 to 1000")):
            for cmd in ((), ("compare", conf)):
                rc, out = run_cli(*cmd, opt + "=" + value, "--budget", "100", "--out",
                                  self.tmp)
                self.assertEqual(rc, 2, (cmd, opt, value))
                # argparse names the argument it refused, with the tool's message
                self.assertIn("error: argument %s: %s" % (opt, message), out)

    def test_compare_does_not_delete_a_sweeps_measurements(self):
        conf = os.path.join(self.tmp, "smx-tuned.conf")
        with open(conf, "w") as f:
            f.write("btl_smx_single_copy_min_l3=0\n")
        st = store.Store(self.tmp)
        st.save_state({"settings": {"sizes": [4096]}, "plan": {"host": "x"}})
        st.add("a", "l3", "double", 0, [{"bytes": 4096, "iters": 10, "usec": 1.5,
                                         "mbps": 2730.0}], 1.0, "t")
        before = sorted(os.listdir(self.tmp))
        rc, out = run_cli("compare", conf, "--budget", "100", "--out", self.tmp)
        self.assertEqual(rc, 2)
        self.assertIn("holds a sweep's measurements (state.json, runs.csv, units.csv), which "
                      "compare would delete", out)
        self.assertEqual(sorted(os.listdir(self.tmp)), before)
        # runs without a state (not a compare's either) are refused as well
        os.remove(st.state_path)
        with self.assertRaisesRegex(cli.Refusal, "measurements of no compare"):
            cli.check_compare_out(st)

    def test_compare_may_start_over_in_its_own_directory(self):
        st = store.Store(self.tmp)
        cli.check_compare_out(st)  # empty
        st.save_state({"settings": {"compare": "/x.conf", "sizes": [4096]}, "plan": {}})
        st.add("a", "l3", "tuned-smx", 0, [], 1.0, "t")
        cli.check_compare_out(st)

    def test_compare_refuses_a_file_in_the_wrong_form(self):
        path = os.path.join(self.tmp, "x.conf")
        with open(path, "w") as f:
            f.write("--mca btl_smx_single_copy_min_l3 0\n")
        rc, out = run_cli("compare", path, "--out", self.tmp)
        self.assertEqual(rc, 2)
        self.assertIn("not a 'name=value' line", out)

    def test_calibrate_is_gone_and_says_what_to_do_instead(self):
        for argv in (("calibrate", "x.conf"), ("--calibrate", "--out", self.tmp),
                     ("sweep", "--calibration-file=n.conf", "--out", self.tmp)):
            rc, out = run_cli(*argv)
            self.assertEqual(rc, 2, argv)
            self.assertIn("btl/smx has no calibration file any more", out)
            self.assertIn("mca-params.conf", out)
        self.assertEqual(os.listdir(self.tmp), [])

    def test_dry_run_on_a_topology_file_lists_its_classes_and_runs_nothing(self):
        xml = os.path.join(TOP, "tests", "topologies", "numa-per-l3.xml")
        rc, out = run_cli("--dry-run", "--topology", xml, "--budget", "100", "--out", self.tmp)
        self.assertEqual(rc, 0, out)
        self.assertIn("l3: CPUs 0,1, package: CPUs 0,2, remote: CPUs 0,4", out)
        self.assertIn("class l2: not on this machine", out)
        self.assertEqual(os.listdir(self.tmp), [])


class Runner(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_a_probe_past_its_timeout_is_stopped_with_sigint_not_killed(self):
        # stands for mpirun: SIGINT is what lets it end its ranks
        mark = os.path.join(self.tmp, "mark")
        job = [sys.executable, "-c", "import signal, sys, time\n"
               "def on_int(signum, frame):\n"
               "    open(%r, 'w').write('SIGINT')\n"
               "    sys.exit(1)\n"
               "signal.signal(signal.SIGINT, on_int)\n"
               "print('started', flush=True)\n"
               "time.sleep(60)\n" % mark]
        t0 = time.monotonic()
        with self.assertRaisesRegex(runner.RunError, "no answer within 1 s"):
            runner.Launcher()._run(job, 1)
        self.assertLess(time.monotonic() - t0, 5)
        with open(mark) as f:
            self.assertEqual(f.read(), "SIGINT")

    def test_a_probe_returns_its_status_and_output(self):
        rc, out = runner.Launcher()._run(
            [sys.executable, "-c", "import sys; print('out'); sys.stderr.write('err'); "
             "sys.exit(3)"], 30)
        self.assertEqual(rc, 3)
        self.assertIn("out", out)
        self.assertIn("err", out)


class PairPolicy(unittest.TestCase):
    """btl/smx's policy as the benchmark prints it (btl_smx_policy, through MPI_T)."""
    WAYS = "4k:%s,8k:%s,16k:%s,32k:%s,64k:%s,128k:%s,256k:%s,512k:%s,1m:%s,2m:%s,4m:%s,8m:%s"
    LINE0 = ("# cvar 0 btl_smx_policy pieces_in_flight=32 chunk_cycle=4194304 skew=on "
             "skew_late_us=10 skew_eager_limit=133120 l2.eager_limit=auto "
             "l2.single_copy_min=auto l3.eager_limit=%s l3.single_copy_min=%s peer1=l3 "
             "peer1.smsc=%d peer1.ways=%s\n")
    LINE1 = ("# cvar 1 btl_smx_policy pieces_in_flight=32 chunk_cycle=4194304 skew=on "
             "skew_late_us=10 skew_eager_limit=133120 l3.eager_limit=%s "
             "l3.single_copy_min=%s peer0=l3 peer0.smsc=1 peer0.ways=%s\n")

    def ways(self, *letters):
        return self.WAYS % (letters * 12)[:12]

    def test_each_ranks_class_and_threshold_for_its_peer(self):
        out = ("pingpong,0,1,0.2,0\n" + self.LINE0 % ("2048", "4096", 1, self.ways("s")) +
               self.LINE1 % ("2048", "4096", self.ways("s")))
        self.assertEqual(runner.pair_policy(out), [("l3", "4096"), ("l3", "4096")])

    def test_a_peer_without_a_single_copy_endpoint_never_single_copies(self):
        out = (self.LINE0 % ("2048", "1", 0, self.ways("d")) +
               self.LINE1 % ("2048", "1", self.ways("s")))
        self.assertEqual(runner.pair_policy(out), [("l3", "never"), ("l3", "1")])

    def test_measured_thresholds_read_auto(self):
        out = self.LINE0 % ("auto", "auto", 1, self.ways("e", "e", "d")) + \
            self.LINE1 % ("auto", "never", self.ways("e"))
        self.assertEqual(runner.pair_policy(out), [("l3", "auto"), ("l3", "never")])

    def test_the_ways_of_each_size_range(self):
        out = self.LINE0 % ("auto", "auto", 1, self.ways("e", "s", "d") + ",late") + \
            self.LINE1 % ("auto", "auto", self.ways("d"))
        got = runner.pair_ways(out)
        self.assertEqual(len(got), 2)
        self.assertEqual((got[0]["4k"], got[0]["8k"], got[0]["16k"], got[0]["8m"]),
                         ("e", "s", "d", "d"))
        self.assertNotIn("late", got[0])
        self.assertEqual(set(got[1].values()), {"d"})
        self.assertEqual(len(got[1]), 12)

    def test_the_sweeps_check_wants_its_pin_in_every_range(self):
        check = cli.smx_line_check(lambda cls, proto: "1", lambda cls, proto: "s")
        good = (self.LINE0 % ("2048", "1", 1, self.ways("s")) +
                self.LINE1 % ("2048", "1", self.ways("s")))
        check("l3", "cma", good)
        one_range_off = (self.LINE0 % ("2048", "1", 1, self.ways("s")) +
                         self.LINE1 % ("2048", "1", self.ways("e", "s", "s")))
        with self.assertRaisesRegex(runner.RunError, "expected 's' in every size range"):
            check("l3", "cma", one_range_off)
        with self.assertRaisesRegex(runner.RunError, "single copy from 1"):
            check("l3", "cma", self.LINE0 % ("2048", "auto", 1, self.ways("s")) +
                  self.LINE1 % ("2048", "1", self.ways("s")))

    def test_no_policy_no_answer(self):
        self.assertEqual(runner.pair_policy("# cvar 0 btl_smx_policy (none)\n"), [])
        self.assertEqual(runner.pair_policy("mode,bytes\n"), [])
        self.assertEqual(runner.pair_ways("mode,bytes\n"), [])


class Sizes(unittest.TestCase):
    def test_lists_and_doubling_ranges(self):
        self.assertEqual(cli.parse_sizes("4K:32K"), [4096, 8192, 16384, 32768])
        self.assertEqual(cli.parse_sizes("1M,64K,64K"), [65536, 1 << 20])
        with self.assertRaises(cli.Refusal):
            cli.parse_sizes("12Q")


if __name__ == "__main__":
    unittest.main()
