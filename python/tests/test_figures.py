"""xdc_results.figures and .bench: docs/figures.md is what results/bench/*.json give; the
rendering of the fixtures; the record a benchmark's JSON carries."""

import contextlib
import io
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from xdc_results import bench, figures

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
FIXTURES = os.path.join(DATA, "bench")
REFERENCE_GPU = os.path.join(bench.ROOT, "results", "reference", "gpu-h100.json")


def rows(renderer, doc):
    return dict(renderer(doc))


class RepositoryPage(unittest.TestCase):
    def test_figures_md_is_what_results_bench_gives(self):
        with open(figures.FIGURES_MD) as f:
            page = f.read()
        self.maxDiff = None
        self.assertEqual(page, figures.render(bench.load_all(bench.BENCH_DIR)),
                         "docs/figures.md is not what results/bench/*.json give: run "
                         "PYTHONPATH=python python3 -m xdc_results.figures")


class Page(unittest.TestCase):
    def test_fixtures_render_as_expected(self):
        with open(os.path.join(DATA, "bench-figures.md")) as f:
            expected = f.read()
        self.maxDiff = None
        self.assertEqual(figures.render(bench.load_all(FIXTURES)), expected)

    def test_sections_follow_the_benchmarks_order_then_unknown_ones(self):
        page = figures.render(bench.load_all(FIXTURES))
        heads = [line for line in page.splitlines() if line.startswith("## ")]
        self.assertEqual(heads, ["## plan", "## prediction", "## custom", "## Not recorded yet"])

    def test_the_run_line_says_command_date_commit_machine_load(self):
        page = figures.render(bench.load_all(FIXTURES))
        self.assertIn("`results/bench/plan.json`: `scripts/bench_plan.sh`; 2026-01-31 12:00:00 "
                      "UTC; at abc1234; 2 cores, kernel 6.1.0-18-amd64; load 2.00 before", page)
        self.assertIn("at def5678 (modified)", page)
        self.assertIn("command, date and commit not recorded (no `bench` key); load 0.31 before",
                      page)

    def test_benchmarks_without_a_file_are_listed_with_their_command(self):
        page = figures.render([])
        self.assertIn("| network | `sudo scripts/bench_network.sh` | root |", page)
        self.assertNotIn("model_avx512 |", page)  # a second pass, not a benchmark of its own

    def test_cells_stay_one_table_cell(self):
        self.assertEqual(figures.cell("a | b\nc"), "a \\| b c")
        page = figures.render([("custom", {"note": "x | y"})])
        self.assertIn("| note | x \\| y |", page)

    def test_a_page_has_no_long_cells(self):
        for name, doc in bench.load_all(bench.BENCH_DIR) + bench.load_all(FIXTURES):
            for line in figures.render([(name, doc)]).splitlines():
                if line.startswith("| "):
                    self.assertLess(len(line), 400, line)


class Check(unittest.TestCase):
    def run_main(self, out):
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            rc = figures.main(["--check", "--bench", FIXTURES, "--out", out])
        return rc, stdout.getvalue()

    def test_check_passes_on_a_current_page_and_fails_with_the_difference(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "figures.md")
            with contextlib.redirect_stderr(io.StringIO()):
                self.assertEqual(figures.main(["--bench", FIXTURES, "--out", out]), 0)
            self.assertEqual(self.run_main(out), (0, ""))
            with open(out) as f:
                text = f.read()
            with open(out, "w") as f:
                f.write(text.replace("| 42, 42 |", "| 41, 42 |"))
            rc, diff = self.run_main(out)
            self.assertEqual(rc, 1)
            row = "| placements ranked, predictions (experiments/plan-3dc.yaml) | %s, 42 |"
            self.assertIn("-" + row % 41, diff)
            self.assertIn("+" + row % 42, diff)

    def test_check_fails_where_there_is_no_page(self):
        with tempfile.TemporaryDirectory() as tmp:
            rc, diff = self.run_main(os.path.join(tmp, "absent.md"))
        self.assertEqual(rc, 1)
        self.assertIn("+# Figures", diff)


class Renderers(unittest.TestCase):
    def test_every_renderer_takes_a_file_without_its_keys(self):
        for b in figures.BENCHMARKS:
            for label, value in b.render({}):
                self.assertTrue(label and value, (b.name, label, value))

    def test_gpu_from_the_reference_run(self):
        with open(REFERENCE_GPU) as f:
            r = rows(figures.render_gpu, json.load(f))
        self.assertEqual(r["training tokens/s, fp32: xdc / PyTorch eager"], "37096 / 30603 (1.21x)")
        self.assertEqual(r["achieved TFLOP/s, fp32, of the GEMM peak"], "39.3 of 51.1")
        self.assertEqual(r["largest relative error, fp32: vs the CPU stage / vs PyTorch autograd"],
                         "4.3e-06 / 5.4e-06")
        self.assertIn("GPU, model", r)
        self.assertIn("training tokens/s, bf16: xdc / PyTorch autocast", r)

    def test_network(self):
        r = rows(figures.render_network, {
            "hosts": 64, "wan_directions": 56, "shaping_backend": "userspace", "rounds": 3,
            "up_s": 0.4912, "down_s": 0.1899, "per_host_ms": 10.64,
            "mininet": {"up_s": 7.47, "down_s": 7.24}, "load_before": 0.5})
        self.assertEqual(r["native backend: up / down"], "0.491 / 0.190 s")
        self.assertEqual(r["Mininet backend: up / down"], "7.470 / 7.240 s")
        self.assertEqual(r["hosts, WAN directions"], "64, 56 (shaping: userspace)")

    def test_scale(self):
        r = rows(figures.render_scale, {
            "predict": [{"ranks": 512, "microbatches": 256, "dcs": 8, "seconds": 2.0,
                         "peak_mb": 244, "full_sim_error_pct": None},
                        {"ranks": 8192, "microbatches": 256, "dcs": 8, "seconds": None,
                         "peak_mb": None, "full_sim_error_pct": None,
                         "failed": "std::bad_alloc (12 GB cap)"}],
            "emulate": [{"hosts": 1024, "dcs": 64, "up_s": 3.2, "down_s": 0.5, "peak_mb": 25}],
            "side_by_side_64": {"native_up_s": 0.3, "native_down_s": 0.1, "mininet_up_s": 2.0,
                                "mininet_down_s": 6.0},
            "slopes": {"predict_seconds_per_ranks": 1.14, "predict_peak_mb_per_ranks": 1.71}})
        self.assertEqual(r["predict 512 ranks (256 microbatches, 8 DCs)"], "2.00 s, 244 MB")
        self.assertEqual(r["predict 8192 ranks (256 microbatches, 8 DCs)"],
                         "failed: std::bad_alloc (12 GB cap)")
        self.assertEqual(r["emulate 1024 hosts in 64 DCs: up / down, xdc's peak memory"],
                         "3.200 / 0.500 s, 25 MB")
        self.assertEqual(r["predict: slope of log time / log memory against log ranks"],
                         "1.14 / 1.71")
        self.assertEqual(r["64 hosts side by side: native up / down, Mininet up / down"],
                         "0.300 / 0.100 s, 2.000 / 6.000 s (Mininet 20.0 x slower)")

    def test_shaping(self):
        r = rows(figures.render_shaping, {"figures": [
            {"what": "delay", "backend": "userspace", "unit": "ms", "configured": 10,
             "measured": 10.021, "low": 9.8, "high": 10.2, "ok": True},
            {"what": "rate", "backend": "userspace", "unit": "Mbit/s", "configured": 1000,
             "measured": 956.3, "low": 920, "high": 1010, "ok": False}],
            "all_ok": False, "sch_netem": False, "sch_netem_probe": "no module"})
        self.assertEqual(r["one-way delay 10 ms, userspace"], "10.02 ms (accepted 9.8-10.2)")
        self.assertEqual(r["TCP goodput at 1000 Mbit/s, userspace"],
                         "956.3 Mbit/s (accepted 920-1010), OUTSIDE")
        self.assertEqual(r["kernel backend"], "not measured: no sch_netem (no module)")

    def test_wan_and_dilation(self):
        dil = [{"k": 10.0, "rate_mbit": 5000, "delay_ms": 5, "goodput_ratio": 0.956,
                "rtt_err_pct": 0.037, "congestion": "cubic", "runs": 3, "goodput_mbit": 4780.2}]
        r = rows(figures.render_wan, {
            "tcp_loss": [{"rtt_ms": 40, "loss_pct": 0.1, "congestion": "cubic",
                          "goodput_mbit": 19.31, "reference_mbit": 16.8, "model_mbit": 11.2,
                          "ratio_to_reference": 1.149, "within_25pct": True,
                          "tcp_retransmission_loss": {"measured_pct": 0.1012,
                                                      "expected_pct": 0.1}}],
            "kernel_backend": {"ran": False, "error": "no linux.uml"},
            "dilation": dil, "tcp_settings_recorded": True})
        self.assertEqual(r["CUBIC, RTT 40 ms, loss 0.1%"],
                         "19.31 Mbit/s vs reference 16.8 (Mathis 11.2), ratio 1.15; "
                         "retransmitted 0.101% of 0.1%")
        self.assertEqual(r["goodput within +-25% of the reference"], "1 of 1")
        self.assertEqual(r["kernel backend in a User-Mode Linux guest"], "not run: no linux.uml")
        self.assertEqual(r["k = 10, 5 Gbit/s, 5 ms one way"],
                         "goodput 95.6% of the rate (4780 Mbit/s), RTT error 0.037% (cubic, "
                         "median of 3 runs x 2 directions)")
        self.assertEqual(r["`xdc up` records the hosts' TCP settings"], "yes")
        self.assertEqual(figures.render_dilation({"dilation": dil}),
                         [("k = 10, 5 Gbit/s, 5 ms one way", r["k = 10, 5 Gbit/s, 5 ms one way"])])

    def test_dynamic(self):
        backend = {"change_apply_ms": {"delay_p50": 0.17, "delay_max": 0.25, "rate_p50": 0.44,
                                       "rate_max": 1.02},
                   "change_artefacts": {"delay_change_drops": 0, "reorders": 0,
                                        "rate_decrease_overflow_drops": 102,
                                        "rate_decrease_other_drops": 0},
                   "trace_replay": {"points": 60, "delay_rmse_ms": 0.005, "rate_rmse_pct": 0.22,
                                    "compress": 100}}
        r = rows(figures.render_dynamic, {
            "backends": {"userspace": backend},
            "flap": {"down_s": 1.0, "run_exit": 0, "iterations_done": 8, "stall_s": 1.12,
                     "experiment": "tests/run/flap.yaml"},
            "flap_event": {"run_exit": 0, "slowest_measured_s": 4.10, "slowest_simulated_s": 4.24,
                           "experiment": "experiments/flap.yaml"},
            "partition": {"run_exit": 1, "message": "east->west | cut", "experiment": "p.yaml"}})
        self.assertEqual(r["userspace: delay change in force, p50 / max"], "0.17 / 0.25 ms")
        self.assertEqual(r["userspace: under TCP, rate decrease's drops: queue overflow / other"],
                         "102 / 0")
        self.assertEqual(r["userspace: trace replay (60 rows, 100x faster): delay / rate RMSE"],
                         "0.005 ms / 0.22%")
        self.assertEqual(r["WAN down 1.00 s under a job (tests/run/flap.yaml)"],
                         "exit 0, 8 iterations, the slowest 1.12 s over the median")
        self.assertEqual(r["the cut iteration of experiments/flap.yaml"],
                         "exit 0; 4.100 s measured vs 4.240 s predicted (+3.4%)")
        self.assertEqual(r["a partition past mpi.timeout_s (p.yaml)"], "exit 1: east->west | cut")

    def test_lab(self):
        r = rows(figures.render_lab, {
            "machines": 3, "kernels": ["6.1", "6.1", "6.1"], "boot_s": 16.2, "up_s": 56.1,
            "down_s": 31.9, "rtts": [{"from": "lab1", "to": "lab2", "median_ms": 64.9,
                                      "configured_ms": 64.1}],
            "experiment": "experiments/lab-3dc.yaml", "run_exit": 0, "iteration_s": 2.273,
            "single_machine_iteration_s": 2.228, "clock_offset_max_us": 25700,
            "clock_residual_us": 14.0, "lost_machine_exit": 1, "lost_machine_end_s": 51.8})
        self.assertEqual(r["machines, kernels"], "3, 6.1")
        self.assertEqual(r["cross-machine RTT medians against configured"],
                         "lab1->lab2 +1.25% of 64.1 ms")
        self.assertEqual(r["`xdc run --lab experiments/lab-3dc.yaml`"],
                         "exit 0, iteration 2.273 s vs 2.228 s on one machine (+2.0%)")

    def test_model(self):
        r = rows(figures.render_model, {
            "tokens_per_s_1t": 5207.3, "torch_tokens_per_s_1t": 4327.0,
            "speedup_vs_torch_1t": 1.203, "tokens_per_s_2t": 9439.0,
            "torch_tokens_per_s_2t": 6606.0, "speedup_vs_torch_2t": 1.429,
            "achieved_gflops_1t": 60.1, "achieved_gflops_2t": 109.0,
            "sgemm_peak_gflops_1t": 120.5, "openblas_core": "Haswell", "peak_rss_mb": 98.0})
        self.assertEqual(r["training tokens/s, 1 thread: xdc / PyTorch"], "5207 / 4327 (1.20x)")
        self.assertEqual(r["training tokens/s, 2 threads: xdc / PyTorch"], "9439 / 6606 (1.43x)")
        self.assertEqual(r["OpenBLAS kernel"], "Haswell")

    def test_fuzz(self):
        r = rows(figures.render_fuzz, {"timeout_s": 1, "targets": [
            {"name": "topology", "seconds": 600, "executions": 1234567, "crashes": 0, "hangs": 1,
             "seeds": 117, "corpus": 900, "edges": 2100},
            {"name": "lab", "seconds": 600, "executions": 765433, "crashes": 2, "hangs": 0,
             "seeds": 4, "corpus": 300, "edges": 800}]})
        self.assertEqual(r["targets, executions in all (hang: an input over 1 s)"], "2, 2000000")
        self.assertEqual(r["topology"], "600 s, 1234567 executions, 0 crashes, 1 hangs; "
                                        "corpus 117 -> 900, 2100 edges")
        r = rows(figures.render_fuzz, {"timeout_s": 1, "targets": [
            {"name": "lab", "seconds": 600, "executions": 5, "crashes": 0, "hangs": 0,
             "stalls": 2, "seeds": 4, "corpus": 300, "edges": 800}],
            "cli": {"per_target": 40, "timeout_s": 20, "targets": [
                {"name": "lab", "checked": 40, "accepted": 30, "accepted_cut": 1,
                 "rejected_with_position": 9, "failures": []}]}})
        self.assertEqual(r["lab"], "600 s, 5 executions, 0 crashes, 0 hangs (2 timeouts under "
                                   "load, under 1 s replayed alone); corpus 4 -> 300, 800 edges")
        self.assertEqual(r["through the CLI (40 inputs a target of the grown corpora)"],
                         "40 checked: 30 accepted, 1 cut at 20 s, 9 refused with FILE:LINE:COL, "
                         "0 failures")

    def test_calibration_and_generalisation(self):
        r = rows(figures.render_calibration, {"points": [
            {"experiment": "two-dc", "schedule": "1f1b", "runs": 20, "inside": 17,
             "band_halfwidth_pct": 6.04}]})
        self.assertEqual(r["two-dc, 1f1b"], "17 of 20 runs inside their band (band +-6.0%)")
        r = rows(figures.render_calibration, {"points": [
            {"experiment": "two-dc", "schedule": "1f1b", "runs": 20, "inside": 17,
             "iterations": 38, "band_halfwidth_pct": 6.04}]})
        self.assertEqual(r["two-dc, 1f1b"],
                         "17 of 20 runs of 38 iterations inside their band (band +-6.0%)")
        r = rows(figures.render_generalisation, {
            "seed": 1, "points": [{"experiment_yaml": "a.yaml", "measured_s": 1.0},
                                  {"experiment_yaml": "a.yaml", "measured_s": None},
                                  {"experiment_yaml": "b.yaml", "measured_s": 2.0}],
            "median_abs_err_pct": 4.2, "p90_abs_err_pct": 12.0, "inside_fraction": 0.5})
        self.assertEqual(r["seed, experiments, schedule points (measured)"], "1, 2, 3 (2)")
        self.assertEqual(r["|error| median / p90"], "4.2% / 12.0%")
        self.assertEqual(r["measured points whose 95% interval meets the band"], "50%")


class Record(unittest.TestCase):
    def test_record_adds_the_bench_key_and_keeps_the_figures(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "x.json")
            with open(path, "w") as f:
                json.dump({"seconds": 1.5}, f)
            bench.record(path, "scripts/bench_x.sh 3", root=tmp)  # not a git checkout
            with open(path) as f:
                doc = json.load(f)
        self.assertEqual(doc["seconds"], 1.5)
        b = doc["bench"]
        self.assertEqual((b["script"], b["command"], b["commit"], b["modified"]),
                         ("scripts/bench_x.sh", "scripts/bench_x.sh 3", None, None))
        self.assertRegex(b["date"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertIsInstance(b["cores"], int)

    def test_record_refuses_what_is_not_an_object(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "x.json")
            with open(path, "w") as f:
                f.write("[1, 2]")
            with self.assertRaisesRegex(ValueError, "x.json: expected a JSON object"):
                bench.record(path, "scripts/bench_x.sh", root=tmp)

    @unittest.skipUnless(shutil.which("git"), "needs git")
    def test_commit_and_whether_programs_were_modified(self):
        with tempfile.TemporaryDirectory() as tmp:
            def git(*args):
                subprocess.run(["git", "-C", tmp, "-c", "user.name=t", "-c", "user.email=t@t"]
                               + list(args), check=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            git("init", "-q")
            for path in ("prog.sh", "results/bench/x.json", "docs/figures.md"):
                os.makedirs(os.path.dirname(os.path.join(tmp, path)), exist_ok=True)
                with open(os.path.join(tmp, path), "w") as f:
                    f.write("{}\n")
            git("add", ".")
            git("commit", "-q", "-m", "c")
            r = bench.make_record("scripts/bench_x.sh", root=tmp)
            self.assertRegex(r["commit"] or "", r"^[0-9a-f]{7}$")
            self.assertIs(r["modified"], False)
            # The benchmark's own output and the page do not count as modified programs.
            for path in ("results/bench/x.json", "docs/figures.md"):
                with open(os.path.join(tmp, path), "w") as f:
                    f.write('{"a": 1}\n')
            self.assertIs(bench.make_record("s", root=tmp)["modified"], False)
            with open(os.path.join(tmp, "prog.sh"), "w") as f:
                f.write("changed\n")
            self.assertIs(bench.make_record("s", root=tmp)["modified"], True)


if __name__ == "__main__":
    unittest.main()
