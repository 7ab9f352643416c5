"""How fast is the engine model's TTFT law at many prefill iterations? Old against new, in one run.

    python benchmarks/bench_ttft.py [--rounds 3] [--old-plan-levels 52]

The law's cost grows with D, the longest prompt's prefill iterations ⌈L_in / chunk⌉. Pools of at most
``PLAIN_FLOAT_MAX_LEVEL`` (8) levels evaluate it in plain floats, one level and lag at a time (the
previous implementation, unchanged; about O(D⁴) per new (τ, rate) key); above that, numpy runs over
all levels and lags at once (O(D²) arithmetic in O(D) numpy steps). "old" here is the plain-float
form forced at every D (``PLAIN_FLOAT_MAX_LEVEL`` raised), "new" the default. tests/test_ttft_levels.py
checks the two against each other and against a frozen copy of the previous code.

Reports, each case's median over interleaved rounds:
  1. one evaluation of the law at a new (τ, rate) key (the cluster recursion, the background marks
     and the per-level sums: what sizing pays per instance count it tries), on the whole workload's
     prompt levels at D ≈ 26, 52, 103 (old and new) and 205, 1,028, 2,017 (new only: the old form
     would take minutes to hours per key), with the ratio old/new;
  2. a full default plan (every B_short × 11 γ and the baselines, the default engine model) with a
     copy of the default H100 profile whose prefill chunk is cut to give that D: azure
     (λ = 20/s, 2 s) at chunk 512 (26) and 256 (52), lmsys and agent-heavy (λ = 1,000/s, 2 s) at
     chunk 512 (103), lmsys at chunk 51 (1,028) and 26 (2,017); old against new up to
     ``--old-plan-levels`` (default 52: the old form's plan at 103 takes more than 5 minutes).

Timings are wall seconds on a shared machine: read the ratios, not the absolute values.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import replace

from bench_plan import interleaved_medians  # (this script's folder is on sys.path)

import fleetopt.core.engine.ttft as ttft
from fleetopt.core.planner import Planner, PlanOptions
from fleetopt.core.poolstats import PoolStatistics
from fleetopt.core.service import PoolHardware
from fleetopt.core.workload import Workload
from fleetopt.defaults import DEFAULT_SERVING
from fleetopt.io.data import bundled_dir
from fleetopt.io.profiles import pool_hardware
from fleetopt.io.workloads import load_workload

#: (workload, chunk, arrival rate per s, SLO s): D = ⌈longest prompt / chunk⌉
PLANS = (
    ("azure", 512, 20.0, 2.0),
    ("azure", 256, 20.0, 2.0),
    ("lmsys", 512, 1000.0, 2.0),
    ("agent-heavy", 512, 1000.0, 2.0),
    ("lmsys", 51, 1000.0, 2.0),
    ("lmsys", 26, 1000.0, 2.0),
)
#: (workload, chunk) of the law's cases; old and new up to OLD_LAW_LEVELS
LAWS = (("azure", 512), ("azure", 256), ("lmsys", 512), ("lmsys", 256), ("lmsys", 51), ("lmsys", 26))
OLD_LAW_LEVELS = 110


class _Form:
    """Run a callable with the plain-float (old) or numpy (new) form of the law at every D."""

    def __init__(self, old: bool):
        self.bound = 10**9 if old else ttft.PLAIN_FLOAT_MAX_LEVEL

    def __call__(self, function: Callable[[], object]) -> Callable[[], object]:
        def run() -> object:
            saved = ttft.PLAIN_FLOAT_MAX_LEVEL
            ttft.PLAIN_FLOAT_MAX_LEVEL = self.bound
            try:
                return function()
            finally:
                ttft.PLAIN_FLOAT_MAX_LEVEL = saved

        return run


def _levels(workload: Workload, chunk: int) -> ttft.PromptLevels:
    moments = PoolStatistics(workload, chunk, prompt_levels=True).range_moments(
        -1, math.inf, prompt_levels=True
    )
    return moments.prompt_levels


def law_cases() -> list[tuple[str, Callable[[], object]]]:
    cases = []
    tau = 30.7e-6  # the default H100 profile's τ
    for name, chunk in LAWS:
        levels = _levels(load_workload(name), chunk)
        rate = 0.5 / (tau * levels.mean_tokens)  # half the instance's time on prompts

        def evaluate(levels=levels, rate=rate) -> object:
            levels._clusters.clear()  # a new (τ, rate) key: recursions included
            return ttft.ttft_cumulants(
                levels, tau_s=tau, decode_iteration_s=0.012, rate_per_instance_per_s=rate, time_share=0.3
            )

        label = (
            f"law, one new key, {name} chunk {chunk} (D = {levels.max_level}, {len(levels.levels)} levels)"
        )
        if levels.max_level <= OLD_LAW_LEVELS:
            cases.append((f"{label}, old", _Form(old=True)(evaluate)))
        cases.append((f"{label}, new", _Form(old=False)(evaluate)))
    return cases


def plan_cases(old_plan_levels: int) -> list[tuple[str, Callable[[], object]]]:
    default = pool_hardware(DEFAULT_SERVING, [bundled_dir("profiles")])
    cases = []
    for name, chunk, rate, slo in PLANS:
        workload = load_workload(name)
        hardware: PoolHardware = replace(default, prefill_chunk_tokens=chunk)
        levels = -(-int(workload.input_tokens.max()) // chunk)
        options = PlanOptions(sizing_rate_per_s=rate, ttft_slo_s=slo)

        def plan(workload=workload, hardware=hardware, options=options) -> object:
            return Planner(workload, (hardware,), options).plan()

        label = f"full default plan, {name} chunk {chunk} (D = {levels}), λ = {rate:g}/s, {slo:g} s"
        if levels <= old_plan_levels:
            cases.append((f"{label}, old", _Form(old=True)(plan)))
        cases.append((f"{label}, new", _Form(old=False)(plan)))
    return cases


def report(timings: dict[str, float]) -> None:
    for label, seconds in timings.items():
        ratio = ""
        if label.endswith(", new") and label[: -len("new")] + "old" in timings:
            ratio = f"   old/new {timings[label[: -len('new')] + 'old'] / seconds:8.1f}×"
        unit = f"{seconds * 1e3:10.2f} ms" if seconds < 1 else f"{seconds:10.2f} s "
        print(f"{label:<100} {unit}{ratio}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (medians)")
    parser.add_argument("--old-plan-levels", type=int, default=52, help="the largest D to plan the old way")
    parser.add_argument("--skip-plans", action="store_true", help="time the law only")
    arguments = parser.parse_args()
    print(
        f"median of {arguments.rounds} interleaved rounds, PLAIN_FLOAT_MAX_LEVEL {ttft.PLAIN_FLOAT_MAX_LEVEL}"
    )
    report(interleaved_medians(law_cases(), arguments.rounds))
    if not arguments.skip_plans:
        print()
        report(interleaved_medians(plan_cases(arguments.old_plan_levels), arguments.rounds))


if __name__ == "__main__":
    main()
