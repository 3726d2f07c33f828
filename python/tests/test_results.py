"""xdc_results.results: reading run and sweep directories, and err_pct."""

import json
import math
import os
import tempfile
import unittest

from xdc_results import (err_pct, load_run, load_sweep, schedule_table, sweep_table,
                         to_dataframe, try_load_run)

from .fixtures import DATA, METRICS, entry, write_summary, write_sweep_csv

try:
    import pandas  # noqa: F401
    HAVE_PANDAS = True
except ImportError:
    HAVE_PANDAS = False


class ErrPct(unittest.TestCase):
    def test_positive_when_the_prediction_is_slower(self):
        self.assertAlmostEqual(err_pct(simulated_s=11.0, measured_s=10.0), 10.0)
        self.assertAlmostEqual(err_pct(simulated_s=9.0, measured_s=10.0), -10.0)

    def test_relative_to_the_measurement(self):
        # Not measured / simulated - 1 (which gives -9.09 here).
        self.assertAlmostEqual(err_pct(11.0, 10.0), 10.0)

    def test_none_without_both_sides(self):
        self.assertIsNone(err_pct(None, 1.0))
        self.assertIsNone(err_pct(1.0, None))
        self.assertIsNone(err_pct(1.0, 0.0))


class LoadRun(unittest.TestCase):
    def test_measured_run(self):
        run = load_run(os.path.join(DATA, "run-measured"))
        self.assertEqual(run.experiment, "two-dc")
        self.assertEqual(run.compute_mode, "real")
        self.assertFalse(run.simulated_only)
        self.assertEqual([s.name for s in run], ["1f1b", "overlap"])
        s = run.schedule("1f1b")
        self.assertTrue(s.ok and s.measured)
        self.assertEqual(s.iteration_s, [3.2, 3.4, 3.456])
        self.assertAlmostEqual(s.measured_iteration_s, 3.352)
        self.assertAlmostEqual(s.simulated_iteration_s, 3.523)
        self.assertAlmostEqual(s.err_pct, 100 * (3.523 - 3.352) / 3.352)
        self.assertAlmostEqual(s.bubble("zerobubble"), 0.37)
        self.assertAlmostEqual(s.bubble("zerobubble", simulated=True), 0.4)
        self.assertEqual(s.raw["transfers"]["goodput_mbit_p50"], 312.5)
        self.assertEqual(run.non_default_settings, ["mpi.tcp_links: 2"])

    def test_a_run_without_repeats_is_one_run(self):
        # Written before the spread keys: one run, its mean; no interval.
        s = load_run(os.path.join(DATA, "run-measured")).schedule("1f1b")
        self.assertEqual(s.repeats, 1)
        self.assertEqual(s.run_means_s, [s.measured_iteration_s])
        self.assertIsNone(s.iteration_s_ci95)
        self.assertIsNone(s.iteration_s_sd)
        self.assertEqual(load_run(os.path.join(DATA, "simulated")).schedules[0].run_means_s, [])

    def test_a_killed_run_is_not_complete(self):
        self.assertTrue(load_run(os.path.join(DATA, "run-measured")).complete)  # no key: older
        with tempfile.TemporaryDirectory() as d:
            missing = [{"repeat": 0, "seed": 5, "state": "running"}]
            write_summary(d, [entry("1f1b", 0.3, 0.3, repeats=1),
                              entry("gpipe", ok=False, repeats=0, missing_runs=missing)],
                          complete=False)
            run = load_run(d)
            self.assertFalse(run.complete)
            self.assertEqual(run.schedule("gpipe").repeats, 0)
            self.assertEqual(run.schedule("gpipe").raw["missing_runs"], missing)

    def test_repeated_run(self):
        run = load_run(os.path.join(DATA, "run-repeated"))
        s = run.schedule("1f1b")
        self.assertEqual(s.repeats, 2)
        self.assertEqual(len(s.iteration_s), 6)  # pooled
        self.assertEqual(len(s.run_means_s), 2)
        self.assertAlmostEqual(s.run_means_s[1], 0.26)
        lo, hi = s.iteration_s_ci95
        # Over the two runs' means: mean +- t(0.975, 1) sd / sqrt(2).
        half = 12.7062 * s.iteration_s_sd / math.sqrt(2)
        self.assertAlmostEqual((lo + hi) / 2, sum(s.run_means_s) / 2)
        self.assertAlmostEqual((hi - lo) / 2, half, places=4)
        self.assertEqual(s.raw["run_seeds"], [1, 2])
        # A repeat that measured nothing: None in run_means_s, the interval over the rest.
        g = run.schedule("gpipe")
        self.assertFalse(g.ok)
        self.assertEqual(g.run_means_s, [g.measured_iteration_s, None])
        lo, hi = g.iteration_s_ci95
        self.assertLess(lo, g.measured_iteration_s)
        self.assertGreater(hi, g.measured_iteration_s)
        t = schedule_table(run)
        self.assertEqual(t[0]["repeats"], 2)
        self.assertAlmostEqual(t[0]["iteration_s_ci95_low"], s.iteration_s_ci95[0])
        self.assertIsNotNone(t[1]["iteration_s_ci95_high"])

    def test_interval_from_entries(self):
        with tempfile.TemporaryDirectory() as d:
            write_summary(d, [entry("a", 1.0, 1.1, iterations=[1.0],
                                    iteration_s_ci95=None, repeats=1, run_means_s=[1.0]),
                              entry("b", 2.0, 2.0, iteration_s_ci95=[1.5, "x"], repeats=True)])
            a, b = load_run(d).schedules
            self.assertIsNone(a.iteration_s_ci95)  # null: one iteration, no interval
            self.assertEqual(a.run_means_s, [1.0])
            self.assertIsNone(b.iteration_s_ci95)  # malformed
            self.assertEqual(b.repeats, 1)

    def test_a_failed_schedule_has_no_error_figure(self):
        s = load_run(os.path.join(DATA, "run-measured")).schedule("overlap")
        self.assertFalse(s.ok)
        self.assertEqual(s.error, "rank 3: MPI timeout")
        self.assertIsNone(s.err_pct)

    def test_simulated_run(self):
        # `xdc simulate EXP.yaml` (trimmed from experiments/two-dc.yaml's): no measurement.
        run = load_run(os.path.join(DATA, "simulated"))
        self.assertTrue(run.simulated_only)
        self.assertEqual(run.experiment, "two-dc")
        self.assertEqual([s.name for s in run], ["1f1b", "overlap", "crosspipe-greedy"])
        for s in run:
            self.assertFalse(s.measured)
            self.assertIsNone(s.measured_iteration_s)
            self.assertGreater(s.simulated_iteration_s, 0)
            self.assertIsNone(s.err_pct)
            self.assertGreaterEqual(s.bubble("megatron", simulated=True), 0)

    def test_flags_run_is_an_experiment_run(self):
        # `xdc simulate --schedule ...` writes the one layout, like `xdc simulate EXP.yaml`.
        run = load_run(os.path.join(DATA, "simulate-flags"))
        self.assertTrue(run.simulated_only)
        self.assertEqual([s.name for s in run], ["1f1b", "overlap"])
        for s in run:
            self.assertGreater(s.simulated_iteration_s, 0)
            self.assertGreaterEqual(s.bubble("megatron", simulated=True), 0)

    def test_workload_run(self):
        # `xdc run experiments/byo/mpi-pingpong.yaml` (the user's own MPI program, 50 steps
        # of a 20 ms one-way WAN ping-pong; wan.csv cut to its first samples).
        run = load_run(os.path.join(DATA, "run-workload"))
        self.assertEqual(run.kind, "workload")
        self.assertEqual([(p["rank"], p["host"], p["exit_code"]) for p in run.processes],
                         [(0, "e1", 0), (1, "w1", 0)])
        self.assertEqual(sorted(run.wan), ["east->west", "west->east"])
        self.assertGreater(run.wan["east->west"]["samples"], 0)
        samples = run.wan_samples()
        self.assertEqual(len(samples), 6)
        self.assertEqual(samples[0]["link"], "east->west")
        self.assertIsInstance(samples[1]["t_s"], float)
        self.assertGreater(samples[1]["t_s"], samples[0]["t_s"])
        (s,) = run.schedules
        self.assertEqual(s.name, "workload")
        self.assertEqual(s.steps["per_rank"], [50, 50])
        self.assertEqual(len(s.iteration_s), 50)
        self.assertAlmostEqual(s.measured_iteration_s, 0.0407, delta=0.002)  # 2 x 20 ms
        self.assertIsNone(s.simulated_iteration_s)  # no predict: block, nothing predicted
        self.assertEqual(s.prediction, {})
        self.assertIsNone(s.err_pct)
        # The worker's runs: the default kind, no processes or WAN timeline.
        worker = load_run(os.path.join(DATA, "run-measured"))
        self.assertEqual(worker.kind, "worker")
        self.assertEqual((worker.processes, worker.wan, worker.wan_samples()), ([], {}, []))
        self.assertEqual(worker.schedule("1f1b").steps, {})

    def test_newer_schema_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "summary.json"), "w") as f:
                json.dump({"schema_version": 99, "schedules": []}, f)
            with self.assertRaises(ValueError):
                load_run(d)

    def test_missing_summary(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(FileNotFoundError):
                load_run(d)
            self.assertIsNone(try_load_run(d))

    def test_schedule_table(self):
        t = schedule_table(load_run(os.path.join(DATA, "run-measured")))
        self.assertEqual(t[0]["schedule"], "1f1b")
        self.assertAlmostEqual(t[0]["err_pct"], 5.1, places=1)
        self.assertIsNone(t[1]["err_pct"])
        self.assertAlmostEqual(t[0]["simulated_bubble_megatron"], 0.61)


class LoadSweep(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        write_sweep_csv(self.dir, ["wan.delay", "wan.rate"], [
            {"id": "p0-0ms-1gbit", "wan.delay": "0ms", "wan.rate": "1gbit", "schedule": "1f1b",
             "iteration_s": 2.0, "simulated_iteration_s": 2.2},
            {"id": "p0-0ms-1gbit", "wan.delay": "0ms", "wan.rate": "1gbit",
             "schedule": "overlap", "status": "failed: rank 1 exited",
             "simulated_iteration_s": 1.9},
            {"id": "p1-20ms-1gbit", "wan.delay": "20ms", "wan.rate": "1gbit",
             "schedule": "1f1b", "iteration_s": 4.0, "simulated_iteration_s": 3.0},
        ])
        write_summary(os.path.join(self.dir, "p0-0ms-1gbit"),
                      [entry("1f1b", 2.0, 2.2), entry("overlap", None, 1.9, ok=False)])

    def tearDown(self):
        self.tmp.cleanup()

    def test_columns(self):
        sw = load_sweep(self.dir)
        self.assertEqual(sw.axes, ["wan.delay", "wan.rate"])
        self.assertIn("simulated_iteration_s", sw.metrics)
        self.assertNotIn("schedule", sw.metrics)
        self.assertEqual(len(sw.rows), 3)
        r = sw.rows[0]
        self.assertEqual((r["point"], r["id"], r["wan.delay"]), (0, "p0-0ms-1gbit", "0ms"))
        self.assertEqual(r["iteration_s"], 2.0)
        self.assertIsNone(r["slowdown"])
        self.assertEqual(sw.point_ids(), ["p0-0ms-1gbit", "p1-20ms-1gbit"])
        self.assertEqual(len(sw.ok_rows()), 2)
        self.assertEqual(sw.find(**{"wan.delay": "20ms"})["iteration_s"], 4.0)

    def test_points(self):
        sw = load_sweep(self.dir)
        self.assertEqual(sw.run("p0-0ms-1gbit").schedule("1f1b").measured_iteration_s, 2.0)
        self.assertIsNone(sw.run("p1-20ms-1gbit"))  # no summary.json
        self.assertEqual([row["id"] for row, _ in sw.runs()], ["p0-0ms-1gbit"])

    def test_err_pct_per_row(self):
        t = sweep_table(load_sweep(self.dir))
        self.assertAlmostEqual(t[0]["err_pct"], 10.0)
        self.assertIsNone(t[1]["err_pct"])  # failed
        self.assertAlmostEqual(t[2]["err_pct"], -25.0)

    def test_header_as_xdc_writes_it(self):
        sw = load_sweep(os.path.join(DATA, "sweep-header"))
        self.assertEqual(sw.axes, ["delays"])
        self.assertEqual(sw.metrics, METRICS)  # the fixtures write the same columns
        self.assertEqual(sw.rows, [])

    def test_missing_csv(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(FileNotFoundError):
                load_sweep(d)


class DataFrame(unittest.TestCase):
    @unittest.skipUnless(HAVE_PANDAS, "pandas is optional")
    def test_run_and_sweep(self):
        df = to_dataframe(load_run(os.path.join(DATA, "run-measured")))
        self.assertEqual(list(df["schedule"]), ["1f1b", "overlap"])
        self.assertIn("err_pct", df.columns)

    @unittest.skipIf(HAVE_PANDAS, "pandas is installed")
    def test_without_pandas(self):
        with self.assertRaises(ImportError):
            to_dataframe(load_run(os.path.join(DATA, "run-measured")))


if __name__ == "__main__":
    unittest.main()
