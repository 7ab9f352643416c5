"""How fast is the planner? Times after loading the workload; ratios against baselines in the same run.

    python benchmarks/bench_plan.py [--rounds 51]

Every timed case runs once per round, the cases interleaved, and each reports its median over the
rounds: on a shared, noisy machine a burst of load then hits every case alike instead of one.

Reports:
  1. preparing the exact pool statistics of a workload (one O(N log N) pass, reused by every cell);
  2. the fleet-sim 11-γ sweep at one B_short on the papers' Azure, LMSYS and Agent-heavy CDFs
     (FleetOpt claims < 1 ms; the reference tool takes 0.15–3.6 s, FACTS §1) at λ = 10, 1,000
     and 10⁶ req/s, after preparing the statistics, and at λ = 1,000 including that preparation;
  3. the full default plan (every B_short candidate × 11 γ, plus the homogeneous, pool-routing
     and retrofit baselines) on the Azure 2023 trace from the loaded workload (every statistic,
     band and sizing inside the timing), at the same three rates, with the ratio to λ = 10, and
     at the trace's own rate as `fleetopt plan --cdf azure-2023` plans it (peak basis, C_a²);
  4. the whole `fleetopt plan` command end to end, next to `fleetopt --version`, `--help`, a bare
     `python -c pass` (interpreter start-up) and a process that only imports what the command
     needs, in the same run: the difference between the last two is import time, and the
     difference between the command and the imports is loading, planning and rendering. These
     are CPU seconds of the child process (user + system; on a shared machine wall time also
     measures the neighbours);
  5. big logs (``--big-atoms``): a synthetic request log of that many distinct (input, output)
     pairs (log-uniform inputs to 30,000 and outputs to 4,000 tokens), planned in full (default
     B_short candidates × 11 γ and the baselines, statistics prepared inside) under lockstep,
     fleet-sim and engine: CPU µs per atom and the planning's peak memory in bytes per atom
     (numpy's allocations, traced; the Workload itself, 32 bytes per atom, is not counted).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable

import numpy as np

from fleetopt.api import plan_workload
from fleetopt.core.planner import Planner, PlanOptions
from fleetopt.core.workload import Workload, workload_from_requests
from fleetopt.defaults import DEFAULT_SERVING
from fleetopt.io.data import bundled_dir
from fleetopt.io.profiles import pool_hardware
from fleetopt.io.workloads import load_workload

RATES = (10.0, 1000.0, 1e6)
PAPER_CDFS = (("azure", 4096, 1.0), ("lmsys", 1536, 1.0), ("agent-heavy", 8192, 0.75))


def interleaved_medians(cases: list[tuple[str, Callable[[], object]]], rounds: int) -> dict[str, float]:
    """Median wall time (s) of each case over ``rounds`` rounds, every case once per round."""
    for _, function in cases:
        function()  # warm caches and lazy imports outside the timing
    samples: dict[str, list[float]] = {label: [] for label, _ in cases}
    for _ in range(rounds):
        for label, function in cases:
            start = time.perf_counter()
            function()
            samples[label].append(time.perf_counter() - start)
    return {label: statistics.median(times) for label, times in samples.items()}


def planning_cases() -> list[tuple[str, Callable[[], object]]]:
    hardware = pool_hardware("llama-3-70b-a100-80gb-tp8", [bundled_dir("profiles")])
    cases: list[tuple[str, Callable[[], object]]] = []
    for name, b_short, p_c in PAPER_CDFS:
        cdf = load_workload(name)
        prepared = Planner(cdf, (hardware,), PlanOptions(sizing_rate_per_s=1.0, ttft_slo_s=0.5))
        cases.append(
            (
                f"prepare statistics, {name} CDF ({cdf.total_tokens.size:,} atoms)",
                lambda cdf=cdf, options=prepared.options: Planner(cdf, (hardware,), options).stats(hardware),
            )
        )
        prepared.stats(hardware)
        for rate in RATES:
            options = PlanOptions(
                sizing_rate_per_s=rate, ttft_slo_s=0.5, b_short_candidates=(b_short,), compressibility=p_c,
                service_model="fleet-sim",
            )  # fmt: skip

            def sweep(options=options, cdf=cdf, shared=prepared.prepared_statistics(), b_short=b_short):
                planner = Planner(cdf, (hardware,), options, shared)
                return [planner.candidate(b_short, gamma) for gamma in options.gammas]

            cases.append((f"fleet-sim 11-γ sweep, {name} B = {b_short}, λ = {rate:g}/s", sweep))
            if rate == 1000.0:

                def sweep_from_scratch(options=options, cdf=cdf, b_short=b_short):
                    planner = Planner(cdf, (hardware,), options)
                    return [planner.candidate(b_short, gamma) for gamma in options.gammas]

                cases.append(
                    (f"  the same, {name} statistics prepared inside, λ = {rate:g}/s", sweep_from_scratch)
                )
    trace = load_workload("azure-2023")
    default = pool_hardware(DEFAULT_SERVING, [bundled_dir("profiles")])
    for rate in RATES:
        options = PlanOptions(sizing_rate_per_s=rate, ttft_slo_s=0.5)
        cells = len(Planner(trace, (default,), options).plan().grid)
        cases.append(
            (
                f"full default plan (engine, {DEFAULT_SERVING}), azure-2023, λ = {rate:g}/s ({cells} cells)",
                lambda options=options: Planner(trace, (default,), options).plan(),
            )
        )
        lockstep = PlanOptions(sizing_rate_per_s=rate, ttft_slo_s=0.5, service_model="lockstep")
        cases.append(
            (
                f"  the same under lockstep on the papers' A100 profile, λ = {rate:g}/s",
                lambda options=lockstep: Planner(trace, (hardware,), options).plan(),
            )
        )
    # The trace's own default plan, as `fleetopt plan --cdf azure-2023 --slo 500ms` makes it: its own
    # rate, the peak 1-minute basis and each pool's C_a² from the log's dispersion; then the same
    # through the API (the rate basis and the plan document inside the timing).
    own = plan_workload(trace, ttft_slo_s=0.5).plan.options
    cases.append(
        (
            f"full default plan, azure-2023 at its own rate "
            f"(peak basis {own.sizing_rate_per_s:.1f}/s, C_a² > 1)",
            lambda: Planner(trace, (default,), own).plan(),
        )
    )
    cases.append(
        ("  the same through plan_workload (rate basis and plan document included)",
         lambda: plan_workload(trace, ttft_slo_s=0.5))
    )  # fmt: skip
    return cases


def command_cases() -> list[tuple[str, Callable[[], object]]]:
    python = sys.executable

    def command(*arguments: str) -> Callable[[], object]:
        return lambda: subprocess.run([python, *arguments], check=True, capture_output=True)

    plan_imports = (
        "import fleetopt.cli, fleetopt.cli.plan, fleetopt.api, fleetopt.io.workloads, fleetopt.io.profiles, "
        "fleetopt.io.documents.build_plan, fleetopt.render.plan, yaml"
    )
    reference_cell = (
        "-m fleetopt plan --cdf azure --slo 500ms --rate 10 --b-short 4096 --service-model fleet-sim "
    )
    reference_cell += "--compressibility 0.75 --format json"
    return [
        ("python -c pass (interpreter start-up)", command("-c", "pass")),
        ("fleetopt --version", command("-m", "fleetopt", "--version")),
        ("import what `fleetopt plan` needs (numpy, typer, yaml, the planner)", command("-c", plan_imports)),
        ("fleetopt --help", command("-m", "fleetopt", "--help")),
        (
            "fleetopt plan --cdf azure --slo 500ms --rate 10 --b-short 4096 (fleet-sim, json)",
            command(*reference_cell.split()),
        ),
        (
            "fleetopt plan --cdf azure-2023 --slo 500ms (end to end, the default engine model)",
            command("-m", "fleetopt", "plan", "--cdf", "azure-2023", "--slo", "500ms"),
        ),
    ]


def child_cpu_medians(cases: list[tuple[str, Callable[[], object]]], rounds: int) -> dict[str, float]:
    """Median CPU seconds (user + system) of each subprocess case, interleaved over ``rounds``."""
    for _, function in cases:
        function()
    samples: dict[str, list[float]] = {label: [] for label, _ in cases}
    for _ in range(rounds):
        for label, function in cases:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            function()
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            samples[label].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return {label: statistics.median(times) for label, times in samples.items()}


def synthetic_log(pairs: int, seed: int = 1) -> Workload:
    """A log of ``pairs`` random requests, log-uniform inputs (≤ 30,000) and outputs (≤ 4,000)."""
    rng = np.random.default_rng(seed)
    inputs = np.exp(rng.uniform(0, np.log(30_000), pairs)).astype(np.int64)
    outputs = np.exp(rng.uniform(0, np.log(4_000), pairs)).astype(np.int64) + 1
    return workload_from_requests(inputs, outputs, name=f"synthetic-{pairs}")


def big_log_rows(pairs: int, rounds: int) -> list[str]:
    """Full plans of a synthetic big log: CPU µs per atom (median) and traced peak bytes per atom."""
    log = synthetic_log(pairs)
    atoms = log.total_tokens.size
    hardware = pool_hardware("llama-3-70b-a100-80gb-tp8", [bundled_dir("profiles")])
    rows = []
    for model in ("lockstep", "fleet-sim", "engine"):
        options = PlanOptions(sizing_rate_per_s=1000.0, ttft_slo_s=0.5, service_model=model)
        times = []
        for _ in range(rounds):
            start = time.process_time()
            Planner(log, (hardware,), options).plan()
            times.append(time.process_time() - start)
        tracemalloc.start()
        Planner(log, (hardware,), options).plan()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        per_atom_us = statistics.median(times) / atoms * 1e6
        rows.append(
            f"big log, {atoms:,} atoms, full plan under {model:<9} {per_atom_us:7.3f} µs/atom (CPU)   "
            f"peak {peak / atoms:5.0f} bytes/atom"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=51, help="rounds of the in-process cases")
    parser.add_argument("--command-rounds", type=int, default=7, help="rounds of the subprocess cases")
    parser.add_argument(
        "--big-atoms",
        default="250000,2000000",
        help="sizes of the synthetic logs (requests drawn), comma list",
    )
    parser.add_argument("--big-rounds", type=int, default=3)
    arguments = parser.parse_args()

    planning = interleaved_medians(planning_cases(), arguments.rounds)
    print(f"{'what (median of ' + str(arguments.rounds) + ' interleaved rounds)':<84} {'time':>12}")
    full_at_10 = next(
        seconds for label, seconds in planning.items() if label.startswith("full") and "λ = 10/" in label
    )
    for label, seconds in planning.items():
        ratio = f"   {seconds / full_at_10:.2f}× λ = 10" if label.startswith("full") else ""
        print(f"{label:<84} {seconds * 1e3:>9.2f} ms{ratio}")
    print()
    commands = child_cpu_medians(command_cases(), arguments.command_rounds)
    startup = commands["python -c pass (interpreter start-up)"]
    print(f"{'command (median CPU of ' + str(arguments.command_rounds) + ' interleaved rounds)':<84}")
    for label, seconds in commands.items():
        print(f"{label:<84} {seconds * 1e3:>9.1f} ms   {seconds / startup:.2f}×")
    print()
    for pairs in (int(float(size)) for size in arguments.big_atoms.split(",") if size):
        for row in big_log_rows(pairs, arguments.big_rounds):
            print(row)


if __name__ == "__main__":
    main()
