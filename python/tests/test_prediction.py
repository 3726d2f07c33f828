"""xdc_results.prediction: bench_prediction.sh's table of measured vs predicted."""

import contextlib
import io
import json
import os
import tempfile
import unittest

from xdc_results import prediction

from .fixtures import entry, write_environment, write_summary, write_sweep_csv

POINTS = ["two-dc|experiments/two-dc.yaml|  seed: [1, 2]",
          "geopipe-20ms|experiments/repro/geopipe-base.yaml|  wan.delay: [20ms]",
          "absent|experiments/x.yaml|  seed: [1]"]


class Prediction(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.runs = self.tmp.name
        demo = os.path.join(self.runs, "two-dc")
        write_sweep_csv(demo, ["seed"], [{"id": "p0-1", "seed": "1", "schedule": "1f1b"},
                                         {"id": "p1-2", "seed": "2", "schedule": "1f1b"}])
        write_summary(os.path.join(demo, "p0-1"), [entry("1f1b", 3.0, 3.3, iterations=[2.9, 3.1])])
        write_summary(os.path.join(demo, "p1-2"), [entry("1f1b", 4.0, 4.1, iterations=[4.0])])
        write_environment(os.path.join(demo, "p0-1"), compute_mode="real",
                          non_default_settings=[])
        write_environment(os.path.join(demo, "p1-2"), compute_mode="real",
                          non_default_settings=[])
        write_summary(os.path.join(demo, "p9-old"), [entry("1f1b", 1.0, 9.0)])  # not in grid
        gp = os.path.join(self.runs, "geopipe-20ms")
        write_sweep_csv(gp, ["wan.delay"], [{"id": "p0-20ms", "wan.delay": "20ms",
                                             "schedule": "1f1b"}])
        write_summary(os.path.join(gp, "p0-20ms"),
                      [entry("1f1b", 3.523, 3.593, iterations=[3.5, 3.546]),
                       entry("overlap", 3.0, 2.0, ok=False)], compute_mode="modeled")
        write_environment(os.path.join(gp, "p0-20ms"), compute_mode="modeled",
                          non_default_settings=["tcp.congestion: bbr"])

    def tearDown(self):
        self.tmp.cleanup()

    def test_rows(self):
        rows, overrides = prediction.collect(self.runs, POINTS, {"two-dc"})
        self.assertEqual([(r["point"], r["schedule"]) for r in rows],
                         [("two-dc/seeds", "1f1b"), ("geopipe-20ms/p0-20ms", "1f1b")])
        demo, gp = rows
        # Pooled: the mean of the runs' means against the mean of their predictions.
        self.assertEqual((demo["measured_s"], demo["simulated_s"]), (3.5, 3.7))
        self.assertEqual(demo["err_pct"], 5.7)
        self.assertEqual(demo["measured_runs_s"], [3.0, 4.0])
        self.assertEqual(demo["measured_iterations_s"], [2.9, 3.1, 4.0])
        self.assertEqual((demo["compute"], demo["target_pct"], demo["within_target"]),
                         ("real", 10, True))
        self.assertEqual(gp["err_pct"], 2.0)  # positive: the prediction is slower
        self.assertEqual((gp["compute"], gp["target_pct"]), ("modeled", 5))
        self.assertNotIn("measured_runs_s", gp)
        self.assertEqual(overrides, [{"experiment": "experiments/repro/geopipe-base.yaml",
                                      "setting": "tcp.congestion: bbr"}])

    def test_repredicted_rows_take_the_runs_predictions_made_again(self):
        demo = os.path.join(self.runs, "two-dc")
        write_summary(os.path.join(demo, "p0-1", "repredicted"), [entry("1f1b", None, 3.1)])
        write_summary(os.path.join(demo, "p1-2", "repredicted"), [entry("1f1b", None, 3.9)])
        rows, _ = prediction.collect(self.runs, POINTS, {"two-dc"}, repredicted=True)
        # geopipe's run was not predicted again: it has no row.
        self.assertEqual([(r["point"], r["schedule"]) for r in rows], [("two-dc/seeds", "1f1b")])
        self.assertEqual((rows[0]["measured_s"], rows[0]["simulated_s"]), (3.5, 3.5))

    def test_main_writes_the_document(self):
        out = os.path.join(self.runs, "bench", "prediction.json")
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            prediction.main(["--runs", self.runs, "--out", out, "--load", "1.5",
                             "--pooled", "two-dc"] + POINTS)
        with open(out) as f:
            doc = json.load(f)
        self.assertEqual(list(doc), ["points", "stock_settings", "overrides", "within_target",
                                     "load_before", "quick"])
        self.assertEqual((doc["within_target"], doc["stock_settings"], doc["quick"],
                          doc["load_before"]), ("2 of 2", False, False, 1.5))
        self.assertEqual(list(doc["points"][1]), [
            "experiment", "point", "schedule", "compute", "measured_iterations_s",
            "measured_s", "simulated_s", "err_pct", "target_pct", "within_target"])
        lines = text.getvalue().splitlines()
        self.assertTrue(lines[0].startswith("point "))
        self.assertIn("   +5.7%  <= 10%  2.90, 3.10, 4.00", lines[1])
        self.assertTrue(lines[-1].startswith("within target: 2 of 2; stock settings: False"))


if __name__ == "__main__":
    unittest.main()
