"""Which hardware for which pool: what ``plan --hardware auto`` picks and saves, and what it costs.

    python benchmarks/bench_hardware.py [--rounds 5]

For each case (workload, SLO, mean rate, pools; the engine model and each workload's default rate
basis, as ``fleetopt plan`` runs them) it prints the profile each pool of the best fleet runs,
the best fleet's $/year, the best single-hardware fleet's (the cheapest plan on one of the six
bundled Llama-3.1-70B profiles) and the default profile's, the saving, and the best fleet's
$ per million input / output tokens. Then the CPU time of ``plan_workload`` with ``--hardware
auto`` against the single-profile plan (the default), interleaved, medians over the rounds
(process CPU time: the machine is shared). docs/planner.md quotes this output.
"""

from __future__ import annotations

import argparse
import statistics
import time

from fleetopt.api import plan_workload

CASES = (
    ("azure-2023", 0.5, 1000.0, 2),
    ("azure-2023", 0.5, 1000.0, 3),
    ("azure-2023", 2.0, 1000.0, 2),
    ("azure-2023-conv", 0.5, 1000.0, 2),
    ("azure-2023-code", 0.5, 1000.0, 2),
    ("lmsys", 0.5, 1000.0, 2),
    ("azure-2023", 0.5, 10.0, 2),
)


def _short(name: str) -> str:
    return name.removeprefix("llama-3.1-70b-fp8-").removesuffix("-vllm")


def figures() -> None:
    print(
        "| workload | SLO | req/s | pools | hardware per pool | $/year | best single | default | "
        "vs single | vs default | $/M in / out |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for workload, slo_s, rate, pools in CASES:
        kwargs = {"ttft_slo_s": slo_s, "mean_rate_per_s": rate, "max_pools": pools}
        searched = plan_workload(workload, hardware="auto", **kwargs).document
        default = plan_workload(workload, **kwargs).document
        best, single = searched["best"], searched["baselines"]["best_single_hardware"]
        per_pool = ", ".join(f"{name}: {_short(p['serving_profile'])}" for name, p in best["pools"].items())
        single_profile = _short(next(iter(single["pools"].values()))["serving_profile"])
        cost, single_cost = best["cost_per_year_usd"], single["cost_per_year_usd"]
        default_cost = default["best"]["cost_per_year_usd"]
        print(
            f"| {workload} | {slo_s:g} s | {rate:,.0f} | ≤ {pools} | {per_pool} | ${cost / 1e6:.2f}M | "
            f"${single_cost / 1e6:.2f}M ({single_profile}) | ${default_cost / 1e6:.2f}M | "
            f"{1 - cost / single_cost:.1%} | {1 - cost / default_cost:.1%} | "
            f"${best['cost_per_million_input_tokens_usd']:.3f} / "
            f"${best['cost_per_million_output_tokens_usd']:.3f} |"
        )


def timing(rounds: int) -> None:
    kwargs = {"ttft_slo_s": 0.5, "mean_rate_per_s": 1000.0}
    cases = {
        "single profile (default)": lambda: plan_workload("azure-2023", **kwargs),
        "--hardware auto (6 profiles)": lambda: plan_workload("azure-2023", hardware="auto", **kwargs),
    }
    for function in cases.values():
        function()  # warm imports and the bundled workload's cache
    samples: dict[str, list[float]] = {label: [] for label in cases}
    for _ in range(rounds):
        for label, function in cases.items():
            start = time.process_time()
            function()
            samples[label].append(time.process_time() - start)
    base = statistics.median(samples["single profile (default)"])
    for label, values in samples.items():
        median = statistics.median(values)
        print(f"{label:30s} {median * 1000:8.0f} ms CPU  ({median / base:.2f}× the single-profile plan)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-figures", action="store_true")
    args = parser.parse_args()
    if not args.no_figures:
        figures()
    timing(args.rounds)


if __name__ == "__main__":
    main()
