"""xdc_results.calibration: runs counted inside their own predicted band."""

import json
import os
import tempfile
import unittest

from xdc_results import calibration


def write_run(root, point, mean, band, iterations=1):
    d = os.path.join(root, point)
    os.makedirs(d)
    entry = {"schedule": "1f1b", "ok": True, "iteration_s": [mean] * iterations,
             "iteration_s_mean": mean,
             "simulated_iteration_s": 1.0, "simulated_band_s": band}
    with open(os.path.join(d, "summary.json"), "w") as f:
        json.dump({"schema_version": 1, "experiment": "demo", "schedules": [entry]}, f)


class CalibrationTest(unittest.TestCase):
    def test_counts_runs_inside_their_band_and_the_mean_half_width(self):
        with tempfile.TemporaryDirectory() as root:
            write_run(root, "p1", 3.0, [2.9, 3.1], 4)   # inside, +-3.33%
            write_run(root, "p2", 3.5, [2.8, 3.2], 3)   # outside, +-6.67%
            write_run(root, "p3", 2.0, [2.0, 2.0], 3)   # a zero-width band, on it
            doc = calibration.collect([root])
        (p,) = doc["points"]
        self.assertEqual((p["experiment"], p["schedule"], p["runs"], p["inside"]),
                         ("demo", "1f1b", 3, 2))
        self.assertEqual(p["iterations"], 3)  # the shortest run's measured iterations
        self.assertAlmostEqual(p["band_halfwidth_pct"], (10 / 3 + 20 / 3 + 0) / 3, places=2)

    def test_entries_without_a_band_or_a_measurement_are_left_out(self):
        with tempfile.TemporaryDirectory() as root:
            write_run(root, "p1", 3.0, [])
            self.assertEqual(calibration.collect([root])["points"], [])


if __name__ == "__main__":
    unittest.main()
