"""How fast is the planner? Times after loading, ratios against baselines measured in the same run.

    python benchmarks/bench_plan.py

Reports, each as the median of several runs:
  1. preparing the exact pool statistics of a workload (one O(N log N) pass, reused by every cell);
  2. the fleet-sim 11-γ sweep at one B_short on the papers' Azure, LMSYS and Agent-heavy CDFs
     (FleetOpt claims < 1 ms; the reference tool takes 0.15–3.6 s, FACTS §1), at λ = 10, 1,000
     and 10⁶ req/s (the time should not depend on λ);
  3. the full default plan (every B_short candidate × 11 γ, plus the homogeneous, pool-routing
     and retrofit baselines) on the Azure 2023 trace, same three rates;
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

RATES = (10.0, 1000.0, 1e6)


def median_time(function, repeats: int = 9) -> float:
    """Median wall time of ``function()`` over ``repeats`` runs, seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def command_time(arguments: list[str], repeats: int = 5) -> float:
    return median_time(lambda: subprocess.run(arguments, check=True, capture_output=True), repeats)


def main() -> None:
    hardware = pool_hardware("llama-3-70b-a100-80gb-tp8", [bundled_dir("profiles")])
    rows: list[tuple[str, float]] = []
    for name, b_short, p_c in (("azure", 4096, 1.0), ("lmsys", 1536, 1.0), ("agent-heavy", 8192, 0.75)):
        cdf = load_workload(name)
        prepared = Planner(cdf, hardware, hardware, PlanOptions(arrival_rate_per_s=1.0, ttft_slo_s=0.5))
        rows.append(
            (
                f"prepare statistics, {name} CDF ({cdf.total_tokens.size:,} atoms)",
                median_time(
                    lambda cdf=cdf, options=prepared.options: Planner(cdf, hardware, hardware, options).stats(
                        hardware
                    )
                ),
            )
        )
        prepared.stats(hardware)
        for rate in RATES:
            options = PlanOptions(
                arrival_rate_per_s=rate, ttft_slo_s=0.5, b_short_candidates=(b_short,), compressibility=p_c,
                service_model="fleet-sim",
            )  # fmt: skip

            def sweep(
                options=options, cdf=cdf, shared=prepared.prepared_statistics(), b_short=b_short
            ) -> None:
                planner = Planner(cdf, hardware, hardware, options, shared)
                for gamma in options.gammas:
                    planner.candidate(b_short, gamma)

            rows.append((f"fleet-sim 11-γ sweep, {name} B = {b_short}, λ = {rate:g}/s", median_time(sweep, 101)))
    trace = load_workload("azure-2023")
    prepared = Planner(trace, hardware, hardware, PlanOptions(arrival_rate_per_s=1.0, ttft_slo_s=0.5))
    prepared.stats(hardware)
    for rate in RATES:
        options = PlanOptions(arrival_rate_per_s=rate, ttft_slo_s=0.5)
        plan = Planner(trace, hardware, hardware, options, prepared.prepared_statistics()).plan()
        seconds = median_time(
            lambda options=options: Planner(
                trace, hardware, hardware, options, prepared.prepared_statistics()
            ).plan(),
            5,
        )
        rows.append(
            (f"full default plan, azure-2023, λ = {rate:g}/s ({len(plan.grid)} cells + baselines)", seconds)
        )
    python = sys.executable
    startup = command_time([python, "-c", "pass"])
    version = command_time([python, "-m", "fleetopt", "--version"])
    help_time = command_time([python, "-m", "fleetopt", "--help"])
    end_to_end = command_time([python, "-m", "fleetopt", "plan", "--cdf", "azure-2023", "--slo", "500ms"])
    print(f"{'what':<76} {'time':>12}")
    for label, seconds in rows:
        print(f"{label:<76} {seconds * 1e3:>9.2f} ms")
    print()
    print(f"{'python -c pass (interpreter start-up)':<76} {startup * 1e3:>9.1f} ms   1.00×")
    print(f"{'fleetopt --version':<76} {version * 1e3:>9.1f} ms   {version / startup:.2f}×")
    print(f"{'fleetopt --help':<76} {help_time * 1e3:>9.1f} ms   {help_time / startup:.2f}×")
    print(
        f"{'fleetopt plan --cdf azure-2023 --slo 500ms (end to end)':<76} {end_to_end * 1e3:>9.1f} ms   "
        f"{end_to_end / startup:.2f}×"
    )


if __name__ == "__main__":
    main()
