"""xdc_results.generalisation: random experiments in range, checked, and the bench's JSON."""

import contextlib
import io
import json
import math
import os
import re
import shutil
import stat
import sys
import tempfile
import unittest

from xdc_results import generalisation as gen

from .fixtures import DATA, entry, write_summary

try:
    import yaml  # only to check the tiny reader against a real one, where installed
except ImportError:
    yaml = None

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ALLOWED = {"1f1b", "zbh1", "interleaved", "zbv", "overlap", "crosspipe-greedy", "gpipe"}


def number(text, unit):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)" + unit, text)
    if not m:
        raise AssertionError("%r: not a number of %s" % (text, unit))
    return float(m.group(1))


def kib(text):
    m = re.fullmatch(r"(\d+)(kib|mib)", text)
    if not m:
        raise AssertionError("%r: not a size in kib or mib" % text)
    return int(m.group(1)) * (1024 if m.group(2) == "mib" else 1)


def mbit(text):
    m = re.fullmatch(r"(\d+)(mbit|gbit)", text)
    if not m:
        raise AssertionError("%r: not a rate in mbit or gbit" % text)
    return int(m.group(1)) * (1000 if m.group(2) == "gbit" else 1)


def mean_loss_pct(loss):
    if isinstance(loss, str):
        return number(loss, "%")
    p, r, h = (number(loss[k], "%") for k in ("p", "r", "h"))
    return p / (p + r) * h


def fake_xdc(directory, script):
    """An executable standing in for xdc: SCRIPT's body gets `path` (the experiment) and
    `out` (-o's directory) and returns the exit status."""
    path = os.path.join(directory, "fake-xdc")
    with open(path, "w") as f:
        f.write("#!%s\nimport json, os, sys\npath, out = sys.argv[2], sys.argv[4]\n"
                "def main():\n%s\nsys.exit(main())\n" % (
                    sys.executable, "".join("    " + line + "\n" for line in script)))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


SUMMARY = ["os.makedirs(out, exist_ok=True)",
           "json.dump({'schedules': [{'schedule': '1f1b', 'ok': True,",
           "           'simulated_iteration_s': SIM}]}, open(out + '/summary.json', 'w'))",
           "return 0"]


class Generate(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def files(self, d):
        """The files in D by name; generated.json without the paths."""
        out = {}
        for n in sorted(os.listdir(d)):
            with open(os.path.join(d, n)) as f:
                out[n] = json.load(f) if n.endswith(".json") else f.read()
        for r in out.get("generated.json", {}).get("experiments", []):
            self.assertEqual(r.pop("file"), os.path.join(d, r["name"] + ".yaml"))
        return out

    def test_deterministic_per_seed(self):
        a, b, c = (os.path.join(self.dir, x) for x in "abc")
        gen.generate(5, 12, a, xdc=None)
        gen.generate(5, 12, b, xdc=None)
        gen.generate(6, 12, c, xdc=None)
        fa, fb = self.files(a), self.files(b)
        self.assertEqual(len(fa), 13)   # 12 experiments and generated.json
        self.assertEqual(fa, fb)
        self.assertNotEqual(fa["gen-s5-001.yaml"], self.files(c)["gen-s6-001.yaml"])
        # Experiment i does not depend on the ones before it: fewer give the same first ones.
        gen.generate(5, 3, a, xdc=None)
        self.assertEqual(sorted(os.listdir(a)),
                         ["gen-s5-001.yaml", "gen-s5-002.yaml", "gen-s5-003.yaml",
                          "generated.json"])
        self.assertEqual(self.files(a)["gen-s5-003.yaml"], fb["gen-s5-003.yaml"])

    def test_written_yaml_reads_back_as_drawn(self):
        import random
        rng = random.Random(3)
        for i in range(100):
            exp, _ = gen.draw(rng, "gen-s3-%03d" % i, "gen%03d" % i)
            text = gen.to_yaml(exp, "a header\nof two lines")
            self.assertTrue(text.startswith("# a header\n# of two lines\nname: "))
            self.assertEqual(gen.parse_yaml(text), exp)
            if yaml is not None:
                self.assertEqual(yaml.safe_load(text), exp)

    def test_every_experiment_in_range(self):
        records = gen.generate(11, 300, self.dir, xdc=None)
        seen = {"layout": set(), "dcs": set(), "shape": set(), "loss": set(), "tp": set(),
                "schedules": set(), "dilated": False, "jitter": False, "connections": False,
                "temporal": False, "w": set()}
        for r in records:
            with open(r["file"]) as f:
                e = gen.parse_yaml(f.read())
            with self.subTest(experiment=r["name"]):
                self.check(e, r["settings"], seen)
        # Over 300 draws every kind shows up.
        self.assertEqual(seen["layout"], {"pipeline", "within", "across", "rotated"})
        self.assertEqual(seen["dcs"], {2, 3, 4})
        self.assertEqual(seen["shape"], {"pair", "chain", "mesh"})
        self.assertEqual(seen["loss"], {"random", "gemodel"})
        self.assertEqual(seen["tp"], {1, 2})
        self.assertEqual(seen["schedules"], ALLOWED)
        self.assertEqual(seen["w"], {True, False})
        for key in ("dilated", "jitter", "connections", "temporal"):
            self.assertTrue(seen[key], key)

    def check(self, e, settings, seen):
        self.assertEqual(list(e)[:2], ["name", "topology"])
        topo = e["topology"]
        self.assertLessEqual(len(topo["name"]), 10)
        self.assertEqual(topo["intra_dc"], {"rate": "1gbit", "delay": "50us"})
        dcs = {d["name"]: d["hosts"] for d in topo["dcs"]}
        n = len(dcs)
        self.assertTrue(2 <= n <= 4)
        seen["dcs"].add(n)
        # The WAN: a chain or a full mesh, each pair once.
        pairs = [tuple(link["between"]) for link in topo["wan"]]
        self.assertEqual(len(set(frozenset(p) for p in pairs)), len(pairs))
        self.assertTrue(all(a in dcs and b in dcs and a != b for a, b in pairs))
        names = [d["name"] for d in topo["dcs"]]
        chain = [(names[i], names[i + 1]) for i in range(n - 1)]
        mesh = n > 2 and len(pairs) == n * (n - 1) // 2
        self.assertTrue(pairs == chain or mesh, pairs)
        seen["shape"].add("pair" if n == 2 else "mesh" if mesh else "chain")
        total = 0
        for link in topo["wan"]:
            self.assertLessEqual(set(link), {"between", "delay", "rate", "loss", "jitter"})
            delay = number(link["delay"], "ms")
            self.assertTrue(1 <= delay <= 100)
            rate = mbit(link["rate"])
            self.assertTrue(50 <= rate <= 1000)
            total += rate
            if "loss" in link:
                loss = link["loss"]
                seen["loss"].add("random" if isinstance(loss, str) else loss["model"])
                self.assertTrue(0 < mean_loss_pct(loss) <= 0.5 + 1e-3, loss)
                if isinstance(loss, dict):
                    self.assertEqual(set(loss), {"model", "p", "r", "h", "k"})
                    self.assertEqual(loss["model"], "gemodel")
                    self.assertLessEqual(number(loss["k"], "%"), number(loss["h"], "%"))
            if "jitter" in link:
                seen["jitter"] = True
                self.assertTrue(0 < number(link["jitter"], "ms") <= min(2.0, delay / 2) + 0.05)
        # Faster than the delay line carries: dilated, just enough.
        k = e.get("time_dilation", 1)
        self.assertEqual(k, math.ceil(total / 1000) if total > 1000 else 1)
        self.assertNotEqual(e.get("time_dilation"), 1)
        seen["dilated"] |= k > 1
        # Parallelism and placement: one rank per host, every host of the topology used.
        p = e["pipeline"]
        stages, dp, tp = p["stages"], p.get("data_parallel", 1), p.get("tensor_parallel", 1)
        self.assertTrue(2 <= stages <= 8)
        self.assertTrue(1 <= dp <= 4)
        self.assertIn(tp, (1, 2))
        seen["tp"].add(tp)
        self.assertLessEqual(stages * dp * tp, 8)
        replicas = [p["placement"]] if dp == 1 else p["placement"]
        self.assertEqual(len(replicas), dp)
        hosts = []
        for replica in replicas:
            self.assertEqual(len(replica), stages)
            for group in replica:
                group = [group] if tp == 1 else group
                self.assertEqual(len(group), tp)
                self.assertEqual(len({h.rsplit("-h", 1)[0] for h in group}), 1)  # TP in one DC
                hosts += group
        self.assertEqual(len(hosts), len(set(hosts)))
        self.assertEqual(sorted(hosts),
                         sorted("%s-h%d" % (dc, i + 1) for dc, c in dcs.items() for i in range(c)))
        # DP layouts, as the settings name them.
        dc_of = [[(g if tp == 1 else g[0]).rsplit("-h", 1)[0] for g in rep] for rep in replicas]
        layout = settings["layout"]
        seen["layout"].add(layout)
        if dp == 1:
            self.assertEqual(layout, "pipeline")
        elif layout == "within":
            self.assertTrue(all(rep == dc_of[0] for rep in dc_of))
        elif layout == "across":
            self.assertTrue(all(len(set(rep)) == 1 for rep in dc_of))
            self.assertGreater(len({rep[0] for rep in dc_of}), 1)
        else:
            self.assertEqual(layout, "rotated")
            self.assertNotEqual(dc_of[0], dc_of[1])
        # Every DC holds a rank; the pipeline visits DCs in contiguous segments.
        self.assertEqual({dc for rep in dc_of for dc in rep}, set(dcs))
        for rep in dc_of:
            runs = [dc for i, dc in enumerate(rep) if i == 0 or rep[i - 1] != dc]
            self.assertEqual(len(runs), len(set(runs)))
        if tp > 1:
            self.assertEqual(e["model"], {"layers": 2 * stages})
        else:
            self.assertNotIn("model", e)
        # Compute.
        m = e["compute"]["modeled"]
        f, b = number(m["f"], "ms"), number(m["b"], "ms")
        self.assertTrue(10 <= f <= 200)
        self.assertTrue(1.6 * f <= b <= 2.4 * f)
        seen["w"].add("w" in m)
        if "w" in m:
            self.assertLess(number(m["w"], "ms"), b)
        act = kib(m["activation"])
        self.assertTrue(256 <= act <= (2048 if tp > 1 else 32 * 1024))
        if dp > 1:
            self.assertTrue(1 <= kib(m["grad"]) / 1024 <= 64)
        else:
            self.assertNotIn("grad", m)
        # Schedules and the rest.
        mb = e["microbatches"]
        self.assertTrue(2 <= mb <= 12)
        s = e["schedules"]
        self.assertTrue(1 <= len(s) <= 2 and len(set(s)) == len(s))
        self.assertLessEqual(set(s), ALLOWED)
        seen["schedules"] |= set(s)
        if "interleaved" in s:
            self.assertEqual(mb % stages, 0)
        self.assertIn(e["iterations"], (3, 4))
        self.assertEqual((e["warmup"], e["seed"], e["microbatch_size"]), (1, 1, 1))
        mpi = e["mpi"]
        self.assertEqual(mpi["timeout_s"], 300)
        self.assertLessEqual(set(mpi), {"timeout_s", "connections", "wan_sharing"})
        if "connections" in mpi:
            seen["connections"] = True
            self.assertEqual(list(mpi["connections"]), ["wan"])
            self.assertTrue(1 <= mpi["connections"]["wan"] <= 8)
        if "wan_sharing" in mpi:
            seen["temporal"] = True
            self.assertEqual(mpi["wan_sharing"], "temporal")
            self.assertTrue(dp > 1 and tp == 1)

    def test_refused_draws_are_drawn_again(self):
        # Exit 2 on the first call, then a valid experiment.
        xdc = fake_xdc(self.dir, [
            "mark = os.path.join(os.path.dirname(sys.argv[0]), 'called')",
            "if not os.path.exists(mark):",
            "    open(mark, 'w').close()",
            "    print('xdc: %s:3:4: pipeline: bad' % path, file=sys.stderr)",
            "    return 2",
            "SIM = 2.5"] + SUMMARY)
        out = os.path.join(self.dir, "out")
        records = gen.generate(1, 2, out, xdc=xdc, budget_s=1e9)
        self.assertEqual([r["draws"] for r in records], [2, 1])
        self.assertEqual(records[0]["refused"], ["exit 2: xdc: gen-s1-001.yaml:3:4: pipeline: bad"])
        r = records[1]
        self.assertEqual(r["simulated_iteration_s"], {"1f1b": 2.5})
        e = r["settings"]
        self.assertAlmostEqual(r["predicted_run_s"],
                               2.5 * (e["iterations"] + 1) * e["time_dilation"], places=1)
        with open(os.path.join(out, "generated.json")) as f:
            doc = json.load(f)
        self.assertEqual((doc["seed"], doc["n"], doc["budget_s"]), (1, 2, 1e9))
        self.assertEqual(doc["experiments"][0]["refused"], records[0]["refused"])

    def test_over_budget_is_drawn_again_then_given_up(self):
        xdc = fake_xdc(self.dir, ["SIM = 100.0"] + SUMMARY)   # >= 400 s a run
        out = os.path.join(self.dir, "out")
        with self.assertRaisesRegex(RuntimeError, r"gen-s4-001: no valid draw in 5 \(last: "
                                                  r"over budget: \d+ s predicted\)"):
            gen.generate(4, 1, out, xdc=xdc, budget_s=120, max_draws=5)
        self.assertFalse(os.path.exists(os.path.join(out, "gen-s4-001.yaml")))

    def test_missing_binary(self):
        with self.assertRaises(FileNotFoundError):
            gen.generate(1, 1, self.dir, xdc=os.path.join(self.dir, "no-xdc"))

    @unittest.skipUnless(os.access(os.environ.get("XDC") or
                                   os.path.join(ROOT, "build/harness/cli/xdc"), os.X_OK),
                         "no xdc binary (set XDC or build build/harness/cli/xdc)")
    def test_checked_by_the_real_simulator(self):
        xdc = os.environ.get("XDC") or os.path.join(ROOT, "build/harness/cli/xdc")
        records = gen.generate(2, 4, self.dir, xdc=xdc)
        for r in records:
            self.assertLessEqual(r["predicted_run_s"], gen.BUDGET_S)
            self.assertEqual(sorted(r["simulated_iteration_s"]), sorted(r["settings"]["schedules"]))


class Collect(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        self.runs = os.path.join(self.root, "run")

    def tearDown(self):
        self.tmp.cleanup()

    def run_dir(self, name, fixture=None, schedules=None):
        d = os.path.join(self.runs, name)
        if fixture:
            shutil.copytree(os.path.join(DATA, fixture), d)
        else:
            write_summary(d, schedules)
        open(os.path.join(self.root, name + ".yaml"), "w").close()
        return d

    def test_measured_fixture(self):
        doc = gen.collect([self.run_dir("gen-s1-001", "run-measured")], seed=1)
        self.assertEqual(list(doc), ["seed", "points", "median_abs_err_pct", "p90_abs_err_pct",
                                     "inside_fraction"])
        ok, failed = doc["points"]
        self.assertEqual(list(ok), ["experiment_yaml", "schedule", "compute", "measured_s",
                                    "simulated_s", "band_s", "err_pct", "inside",
                                    "tcp_timeouts"])
        self.assertIsNone(ok["tcp_timeouts"])   # a summary without the hosts' TCP counters
        self.assertEqual(ok["experiment_yaml"], os.path.join(self.root, "gen-s1-001.yaml"))
        self.assertEqual((ok["schedule"], ok["compute"], ok["measured_s"], ok["simulated_s"]),
                         ("1f1b", "real", 3.352, 3.523))
        self.assertEqual(ok["band_s"], [3.523, 3.523])
        self.assertEqual(ok["err_pct"], 5.1)   # 100 (3.523 - 3.352) / 3.352 = 5.101
        # Iterations 3.2, 3.4, 3.456: mean 3.352 +- 4.303 x 0.1346 / sqrt(3) = [3.018, 3.686].
        self.assertIs(ok["inside"], True)
        # A schedule that failed: predicted, not measured.
        self.assertEqual((failed["schedule"], failed["measured_s"], failed["err_pct"],
                          failed["inside"], failed["simulated_s"]),
                         ("overlap", None, None, None, 3.408))
        self.assertEqual((doc["seed"], doc["median_abs_err_pct"], doc["p90_abs_err_pct"],
                          doc["inside_fraction"]), (1, 5.1, 5.1, 1.0))

    def test_simulated_only(self):
        d = self.run_dir("gen-s1-002", "simulated")
        os.remove(os.path.join(self.root, "gen-s1-002.yaml"))   # falls back to the run's copy
        doc = gen.collect([d, os.path.join(self.runs, "absent")], seed=3)
        self.assertEqual([p["schedule"] for p in doc["points"]],
                         ["1f1b", "overlap", "crosspipe-greedy"])
        p = doc["points"][0]
        self.assertEqual(p["experiment_yaml"], os.path.join(d, "experiment.yaml"))
        self.assertEqual((p["measured_s"], p["simulated_s"], p["band_s"], p["err_pct"],
                          p["inside"]), (None, 3.7032, [3.7032, 3.7032], None, None))
        self.assertEqual((doc["median_abs_err_pct"], doc["p90_abs_err_pct"],
                          doc["inside_fraction"]), (None, None, None))

    def test_band_ci_and_statistics(self):
        dirs = [
            # The summary's own band and interval: [9, 11] and [11.5, 12] do not overlap.
            self.run_dir("a", schedules=[entry("1f1b", 12.0, 10.0, iterations=[11.9, 12.1],
                                               simulated_band_s=[9.0, 11.0],
                                               iteration_s_ci95=[11.5, 12.0],
                                               tcp={"timeouts": 3, "sent_segments": 900})]),
            # Computed: [9.5, 10.5] +- 12.706 x 0.7071 / sqrt(2) = 6.353 around 10 -> inside.
            self.run_dir("b", schedules=[entry("zbv", 10.0, 11.0, iterations=[9.5, 10.5])]),
            # One iteration: its interval is the point, outside a point band.
            self.run_dir("c", schedules=[entry("overlap", 5.0, 4.0, iterations=[5.0]),
                                         entry("gpipe", None, 2.0)]),
        ]
        doc = gen.collect(dirs, seed=9)
        got = [(p["schedule"], p["err_pct"], p["band_s"], p["inside"]) for p in doc["points"]]
        self.assertEqual(doc["points"][0]["tcp_timeouts"], 3)
        self.assertEqual(got, [("1f1b", -16.67, [9.0, 11.0], False),
                               ("zbv", 10.0, [11.0, 11.0], True),
                               ("overlap", -20.0, [4.0, 4.0], False),
                               ("gpipe", None, [2.0, 2.0], None)])
        # |err| 10, 16.67, 20: median 16.67; p90 between the last two: 16.67 + 0.8 x 3.33.
        self.assertEqual(doc["median_abs_err_pct"], 16.67)
        self.assertAlmostEqual(doc["p90_abs_err_pct"], 19.33, places=2)
        self.assertEqual(doc["inside_fraction"], 0.333)

    def test_repredicted_takes_the_prediction_and_band_made_again(self):
        d = self.run_dir("a", schedules=[entry("1f1b", 12.0, 10.0, iterations=[11.9, 12.1]),
                                         entry("zbv", 8.0, 7.0, iterations=[8.0])])
        write_summary(os.path.join(d, "repredicted"),
                      [entry("1f1b", None, 11.5, simulated_band_s=[11.0, 12.5])])
        doc = gen.collect([d], seed=9, repredicted=True)
        got = [(p["schedule"], p["simulated_s"], p["band_s"], p["err_pct"], p["inside"])
               for p in doc["points"]]
        # zbv was not predicted again: no prediction.
        self.assertEqual(got, [("1f1b", 11.5, [11.0, 12.5], -4.17, True),
                               ("zbv", None, None, None, None)])

    def test_ci95_and_percentile(self):
        self.assertIsNone(gen.ci95([]))
        self.assertEqual(gen.ci95([2.0]), [2.0, 2.0])
        lo, hi = gen.ci95([1.0, 2.0, 3.0, 4.0])   # sd 1.291, t(3) 3.182
        self.assertAlmostEqual(hi - 2.5, 3.182 * 1.2910 / 2, places=3)
        self.assertAlmostEqual(lo + hi, 5.0)
        self.assertAlmostEqual(gen.t975(40), 2.0225)
        self.assertEqual(gen.percentile([3.0, 1.0, 2.0], 50), 2.0)
        self.assertEqual(gen.percentile([1.0, 2.0], 90), 1.9)
        self.assertIsNone(gen.percentile([], 90))

    def test_main_writes_the_document(self):
        d = self.run_dir("gen-s1-001", "run-measured")
        out = os.path.join(self.root, "bench", "generalisation.json")
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            self.assertEqual(gen.main(["collect", "--seed", "1", "--runs", d, "--out", out]), 0)
        with open(out) as f:
            doc = json.load(f)
        self.assertEqual(doc, gen.collect([d], seed=1))
        lines = text.getvalue().splitlines()
        self.assertTrue(lines[0].startswith("experiment "))
        self.assertRegex(lines[1],
                         r"^gen-s1-001 +1f1b +3\.352 +3\.523 +3\.523-3\.523 +\+5\.1% yes +-$")
        self.assertRegex(lines[2], r"^gen-s1-001 +overlap +- +3\.408 .* - +-$")
        self.assertTrue(lines[-1].startswith("2 points, 1 measured; |err| median 5.1%, p90 5.1%; "
                                             "inside 1.000; wrote "))


if __name__ == "__main__":
    unittest.main()
