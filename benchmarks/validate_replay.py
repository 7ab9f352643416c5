"""Plans under their own arrivals: the Azure 2023 plans replayed at a mean of 1,000 req/s.

Usage: ``python benchmarks/validate_replay.py [--seeds 3] [--slo 0.5] [--rate 1000]``

For the Azure 2023 trace (both files together, and the coding file alone), plans the fleet on three
bases — the mean, the peak 1-minute window (the default) and the peak 5-minute window — with the
default service model and profile, then simulates each plan's fleet (the iteration-level
``physical`` engine, least-loaded dispatch) under the log's own arrivals replayed at the plan's
mean on their own time scale (``fleetopt simulate --replay``), and the peak plans also under the
non-homogeneous Poisson process of the log's minute profile (``--arrivals profile``). Prints one
row per (workload, basis, arrivals, pool): instances, GPUs, the rate sized for, the pool's C_a², the
simulated P99 TTFT with its 95% interval, the share of the pool's requests whose TTFT exceeds the
SLO, and the verdict (the table in docs/validation.md).

``--arrival-term`` instead checks what C_a² does where slots bind: small lockstep fleets (the
papers' A100 profile) at 10 and 50 req/s, each planned on the peak basis with and without the
arrival term, replayed with 5 seeds.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fleetopt.api import crosscheck_setup_run, plan_workload
from fleetopt.core.crosscheck import setup_from_plan

CASES = (
    ("azure-2023", "mean", 60.0),
    ("azure-2023", "peak", 60.0),
    ("azure-2023", "peak", 300.0),
    ("azure-2023-code", "mean", 60.0),
    ("azure-2023-code", "peak", 60.0),
    ("azure-2023-code", "peak", 300.0),
)


def _over_slo_share(report, slo_s: float) -> dict[str, float]:
    """Per pool, the share of measured requests whose TTFT exceeded the SLO (pooled over seeds)."""
    shares = {}
    for pool in report.setup.pools:
        over = total = 0
        for trace in report.result.traces:
            if trace.pool_name != pool.name:
                continue
            ttft = (trace.first_token_s - trace.arrival_s)[trace.measured]
            over += int((ttft > slo_s).sum())
            total += int(ttft.size)
        shares[pool.name] = over / total if total else float("nan")
    return shares


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--seeds", type=int, default=None, help="default: the CLI's (3, more for a rare pool)"
    )
    parser.add_argument("--slo", type=float, default=0.5)
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--window", type=float, default=None, help="only the plans on this rate window (s)")
    parser.add_argument(
        "--arrival-term", action="store_true", help="small lockstep fleets with and without C_a²"
    )
    args = parser.parse_args()
    if args.arrival_term:
        arrival_term(args.slo)
        return
    print(
        "| workload | basis | arrivals | pool | instances | GPUs (fleet) | sized for | C_a² "
        "| P99 TTFT [95% interval] | TTFT > SLO | verdict |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, basis, window in CASES:
        if args.window is not None and window != args.window:
            continue
        run = plan_workload(name, ttft_slo_s=args.slo, mean_rate_per_s=args.rate, rate_basis=basis,
                            rate_window_s=window)  # fmt: skip
        best = run.plan.best
        setup = setup_from_plan(run.plan)
        label = basis if basis == "mean" else f"{basis} {window / 60:g} min"
        for arrivals in ("replay", "profile") if basis != "mean" else ("replay",):
            start = time.perf_counter()
            check = _keeping_requests(setup, run, arrivals, args.seeds)
            report = check.report
            shares = _over_slo_share(report, args.slo)
            for row, pool in zip(report.pools, best.pools, strict=True):
                low, high = row.p99_ttft_interval_s
                p99 = row.metrics["p99_ttft_s"].simulated
                interval = (
                    "–"
                    if not np.isfinite(p99)
                    else f"{p99 * 1e3:,.0f} ms [{low * 1e3:,.0f}, {high * 1e3:,.0f}]"
                )
                share = shares[row.prediction.name]
                print(
                    f"| {name} | {label} | {arrivals} | {row.prediction.name} | {pool.instances} | "
                    f"{best.total_gpus:,} | {run.plan.options.sizing_rate_per_s:,.0f} req/s | "
                    f"{pool.arrival_scv:.3g} | {interval} | "
                    f"{'–' if not np.isfinite(share) else f'{100 * share:.2f}%'} | {row.verdict.value} |",
                    flush=True,
                )
            seconds = time.perf_counter() - start
            print(f"<!-- {name} {label} {arrivals}: {report.verdict.value}, {seconds:.0f} s -->", flush=True)


def arrival_term(slo_s: float) -> None:
    """Peak-basis lockstep plans with and without C_a², replayed: where the slot queue binds."""
    from dataclasses import replace

    from fleetopt.core.planner import Planner

    print(
        "| workload | mean rate | C_a² | GPUs | pools (instances × slots, C_a²) | replayed P99 TTFT per pool "
        "| verdict |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, rate in (
        ("azure-2023-code", 10),
        ("azure-2023-code", 50),
        ("azure-2023", 10),
        ("azure-2023", 50),
    ):
        run = plan_workload(name, ttft_slo_s=slo_s, mean_rate_per_s=rate, service_model="lockstep",
                            serving="llama-3-70b-a100-80gb-tp8")  # fmt: skip
        options = replace(run.plan.options, arrival_dispersion=())
        poisson = Planner(run.workload, run.plan.hardware, options).plan()
        for label, plan in (("from the log", run.plan), ("1 (Poisson)", poisson)):
            report = crosscheck_setup_run(
                setup_from_plan(plan), run.workload, service_model="lockstep", seeds=5, arrivals="replay"
            ).report
            pools = ", ".join(
                f"{n}: {p.instances} × {p.slots_per_instance} ({p.arrival_scv:.3g})"
                for n, p in zip(plan.best.pool_names, plan.best.pools, strict=True)
            )
            p99 = ", ".join(
                f"{row.prediction.name} {row.metrics['p99_ttft_s'].simulated * 1e3:,.0f} ms"
                for row in report.pools
                if row.requests_measured
            )
            print(f"| {name} | {rate} req/s | {label} | {plan.best.total_gpus} | {pools} | {p99} | "
                  f"{report.verdict.value} |", flush=True)  # fmt: skip


def _keeping_requests(setup, run, arrivals: str, seeds: int):
    """crosscheck_setup_run with the per-request traces kept (for the share over the SLO)."""
    import fleetopt.core.crosscheck as crosscheck

    original = crosscheck.simulate_fleet

    def keeping(*args, **kwargs):
        return original(*args, **{**kwargs, "keep_requests": True})

    crosscheck.simulate_fleet = keeping
    try:
        return crosscheck_setup_run(
            setup, run.workload, service_model=setup.analytical_model, seeds=seeds, arrivals=arrivals,
        )  # fmt: skip
    finally:
        crosscheck.simulate_fleet = original


if __name__ == "__main__":
    main()
