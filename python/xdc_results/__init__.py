"""xdc's results, read for scripts and notebooks (standard library; pandas optional).

    from xdc_results import load_run, load_sweep, err_pct
    run = load_run("results/two-dc")
    for s in run:
        print(s.name, s.measured_iteration_s, s.simulated_iteration_s, s.err_pct)

err_pct is the one definition of prediction error: 100 * (simulated - measured) /
measured; positive means the simulator predicted a slower iteration than was measured.
"""

from .results import (Run, Schedule, Sweep, err_pct, find_row, load_run, load_sweep,
                      schedule_table, sweep_table, to_dataframe, try_load_run, try_load_sweep)

__all__ = ["Run", "Schedule", "Sweep", "err_pct", "find_row", "load_run", "load_sweep",
           "schedule_table", "sweep_table", "to_dataframe", "try_load_run", "try_load_sweep"]
