"""How fast is the planner? Times after loading, ratios against baselines measured in the same run.

    python benchmarks/bench_plan.py

Reports:
  1. the full default sweep (every B_short candidate × 11 γ, plus baselines) on the Azure 2023 trace;
  2. the fleet-sim 11-γ sweep at one B_short (FleetOpt claims < 1 ms; the reference tool takes
     0.15–3.6 s, FACTS §1) on the papers' Azure, LMSYS and Agent-heavy CDFs;
  3. the same sweep at λ = 10 and λ = 10⁶ req/s (the time should not depend on λ);
  4. the whole `fleetopt plan` command end to end, next to `fleetopt --version` and a bare
     `python -c pass` (interpreter start-up), in the same run.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

from fleetopt.core.planner import Planner, PlanOptions
from fleetopt.io.data import bundled_dir
from fleetopt.io.profiles import pool_hardware
from fleetopt.io.workloads import load_workload


def best_of(function, repeats: int = 7) -> float:
    """Median wall time of ``function()`` over ``repeats`` runs, seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def command_time(arguments: list[str], repeats: int = 3) -> float:
    def run() -> None:
        subprocess.run(arguments, check=True, capture_output=True)

    return best_of(run, repeats)


def main() -> None:
    hardware = pool_hardware("llama-3-70b-a100-80gb-tp8", [bundled_dir("profiles")])
    trace = load_workload("azure-2023")
    rows = []
    for rate in (10.0, 1000.0, 1e6):
        options = PlanOptions(arrival_rate_per_s=rate, ttft_slo_s=0.5)
        seconds = best_of(lambda options=options: Planner(trace, hardware, hardware, options).plan(), 3)
        cells = len(Planner(trace, hardware, hardware, options).plan().grid)
        rows.append((f"full default sweep, azure-2023, λ = {rate:g}/s ({cells} cells)", seconds))
    for name, b_short, p_c in (("azure", 4096, 1.0), ("lmsys", 1536, 1.0), ("agent-heavy", 8192, 0.75)):
        cdf = load_workload(name)
        for rate in (10.0, 1000.0, 1e6):
            options = PlanOptions(
                arrival_rate_per_s=rate, ttft_slo_s=0.5, b_short_candidates=(b_short,), compressibility=p_c,
                service_model="fleet-sim",
            )  # fmt: skip
            seconds = best_of(
                lambda options=options, cdf=cdf: Planner(cdf, hardware, hardware, options).plan()
            )
            rows.append((f"fleet-sim 11-γ sweep, {name} B = {b_short}, λ = {rate:g}/s", seconds))
    python = sys.executable
    startup = command_time([python, "-c", "pass"])
    version = command_time([python, "-m", "fleetopt", "--version"])
    help_time = command_time([python, "-m", "fleetopt", "--help"])
    end_to_end = command_time([python, "-m", "fleetopt", "plan", "--cdf", "azure-2023", "--slo", "500ms"])
    print(f"{'what':<64} {'time':>12}")
    for label, seconds in rows:
        print(f"{label:<64} {seconds * 1e3:>9.2f} ms")
    print()
    print(f"{'python -c pass (interpreter start-up)':<64} {startup * 1e3:>9.1f} ms   1.00×")
    print(f"{'fleetopt --version':<64} {version * 1e3:>9.1f} ms   {version / startup:.2f}×")
    print(f"{'fleetopt --help':<64} {help_time * 1e3:>9.1f} ms   {help_time / startup:.2f}×")
    print(
        f"{'fleetopt plan --cdf azure-2023 --slo 500ms (end to end)':<64} {end_to_end * 1e3:>9.1f} ms   "
        f"{end_to_end / startup:.2f}×"
    )
    sweep = rows[1][1]
    print(
        f"\nplanning share of the end-to-end command: {sweep / end_to_end:.0%} "
        f"(the rest is start-up, imports, loading and rendering)"
    )


if __name__ == "__main__":
    main()
