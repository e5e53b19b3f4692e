# SPDX-License-Identifier: BSD-3-Clause
"""Unit tests of run-bench's parsing, medians and ratios (python3 -m unittest)."""
import importlib.machinery
import importlib.util
import os
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


class ParseBenchCsv(unittest.TestCase):
    def test_comments_are_skipped_and_fields_typed(self):
        text = "# smx_bench mode=pingpong\nmode,bytes,iters,usec,mbps\npingpong,4096,10,2.5,1638.4\n"
        rows = rb.parse_bench_csv(text)
        self.assertEqual([{"mode": "pingpong", "bytes": 4096, "iters": 10, "usec": 2.5,
                           "mbps": 1638.4}], rows)


class Presets(unittest.TestCase):
    def test_presets_come_from_the_shared_configurations_file(self):
        presets = rb.read_presets()
        self.assertIn("sm-cma", presets)
        self.assertIn("--mca btl sm,self", presets["sm-cma"])
        self.assertIn("--mca smsc ^", presets["sm-nosc"])


if __name__ == "__main__":
    unittest.main()
