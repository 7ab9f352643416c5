"""Speed of the fleet simulator on the Azure 2023 trace (FleetOpt §7.4 setting, λ = 1,000 req/s).

Fleet: the papers' A100 calibration (W = 8 ms, H = 0.65 ms, chunk 512, L_cal = 8,192; FACTS §1),
short pool B = 4,096 with 70 slots/instance, long pool 65,536 with 16 slots/instance, γ = 1
(pool routing, the Table 5 setting; ``--gamma 1.5`` exercises Compress-and-Route with p_c = 1).
Each pool gets the fewest instances keeping λ_p·E[S]/(n·s) ≤ 0.85 under the service model
being run (physical runs on the lockstep sizing, its conservative upper bound).

Reports simulated requests per second of this process's CPU time (``time.process_time``: on a
machine shared with other jobs wall time measures them too) for every (service model, dispatch) pair,
and ratios against two baselines measured in the same run: drawing the requests alone (arrivals,
lengths, routing: the floor any simulator pays) and pooled lockstep.

Compiled kernels (numba, :mod:`fleetopt.core.engines`) are compiled once per machine and cached;
each (model, dispatch) pair first runs a small untimed simulation so the timings are of the steady
state, not of the first compilation (``FLEETOPT_JIT=0`` times the interpreted paths).

``physical`` runs under both of its schedulers: ``vllm`` (each instance's KV cache the paper's
65,536 blocks of 16 tokens, FACTS §1) and ``slots``. With ``--baseline PATH`` (a checkout of the
engine before issue 30, e.g. ``/work/wt/base`` at d4cd161) the same ``physical`` runs are also timed
on that code, in a subprocess with ``PYTHONPATH=PATH``, and the table gives new/old CPU-time ratios
and whether ``slots`` reproduced the old engine's times bit for bit (a SHA-256 of every pool's
per-request times).

Run: ``python benchmarks/bench_simulate.py [--requests 100000] [--trace-dir PATH] [--baseline PATH]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from fleetopt.core.engines import load_kernels
from fleetopt.core.routing import Routing
from fleetopt.core.simulate import DISPATCH_POLICIES, SERVICE_MODELS, SimulatedPool, simulate_fleet
from fleetopt.core.workload import Workload, workload_from_requests

TRACE_DIR = Path(__file__).resolve().parents[2] / "shared" / "traces" / "azure-2023"
ARRIVAL_RATE_PER_S = 1000.0
B_SHORT, LONG_CONTEXT = 4096, 65536
SHORT_SLOTS, LONG_SLOTS, RHO_MAX = 70, 16, 0.85
W_S, H_S, CHUNK, CAL = 0.008, 0.00065, 512, 8192


def load_azure(trace_dir: Path) -> Workload:
    """The two Azure 2023 CSVs as one Workload (project reader if present, else numpy)."""
    try:
        from fleetopt.io.workloads import load_workload  # written concurrently by another engineer

        return load_workload("azure-2023")
    except Exception:
        pass
    inputs, outputs = [], []
    for path in sorted(trace_dir.glob("*.csv")):
        table = np.loadtxt(path, delimiter=",", skiprows=1, usecols=(1, 2), dtype=np.int64)
        inputs.append(table[:, 0])
        outputs.append(table[:, 1])
    return workload_from_requests(np.concatenate(inputs), np.concatenate(outputs), name="azure-2023")


def mean_service_s(
    workload: Workload, gamma: float, slots: int, model: str, short: bool
) -> tuple[float, float]:
    """(routed fraction, E[S]) of one pool, exact over the workload's atoms (p_c = 1)."""
    total, out = workload.total_tokens, np.maximum(1, workload.output_tokens)
    inp = total - out
    band = (total > B_SHORT) & (total <= gamma * B_SHORT) & (out < B_SHORT)
    to_short = (total <= B_SHORT) | band
    mask = to_short if short else ~to_short
    inp = np.where(band, B_SHORT - out, inp)
    total = np.where(band, B_SHORT, total)
    weights = workload.weights * mask
    iterations = -(-inp // CHUNK) + out
    if model == "fleet-sim":
        service = iterations * (W_S + H_S * (total / CAL) * slots)
    else:
        service = iterations * (W_S + H_S * slots)
    return float(weights.sum() / workload.weights.sum()), float((weights * service).sum() / weights.sum())


#: The paper profile's KV cache per instance: 65,536 blocks of 16 tokens (FACTS §1).
KV_CAPACITY_TOKENS = 65_536 * 16


def fleet(workload: Workload, model: str, gamma: float) -> list[SimulatedPool]:
    sizing_model = "lockstep" if model == "physical" else model
    pools = []
    for name, context, slots, short in (
        ("short", B_SHORT, SHORT_SLOTS, True),
        ("long", LONG_CONTEXT, LONG_SLOTS, False),
    ):
        fraction, service = mean_service_s(workload, gamma, slots, sizing_model, short)
        instances = max(1, math.ceil(fraction * ARRIVAL_RATE_PER_S * service / (RHO_MAX * slots)))
        pool = SimulatedPool(name, instances, slots, context, W_S, H_S, CHUNK, CAL)
        if model == "physical" and "kv_capacity_tokens" in SimulatedPool.__dataclass_fields__:
            pool = SimulatedPool(
                name, instances, slots, context, W_S, H_S, CHUNK, CAL, kv_capacity_tokens=KV_CAPACITY_TOKENS
            )
        pools.append(pool)
    return pools


def timed_run(workload: Workload, dispatch: str, scheduler: str | None, requests: int, gamma: float):
    """(CPU seconds, result, digest of every pool's per-request times) of one physical run; the
    scheduler is not passed when None (the engine before issue 30 has no such argument)."""
    pools = fleet(workload, "physical", gamma)
    routing = Routing.two_pool(B_SHORT, gamma, 1.0)
    extra = {} if scheduler is None else {"scheduler": scheduler}
    simulate_fleet(  # untimed warm-up: loads (or, the first time on a machine, compiles) the kernels
        workload, pools, routing, arrival_rate_per_s=ARRIVAL_RATE_PER_S, service_model="physical",
        dispatch=dispatch, requests=2000, seeds=(1,), **extra,
    )  # fmt: skip
    begin = time.process_time()
    result = simulate_fleet(
        workload, pools, routing, arrival_rate_per_s=ARRIVAL_RATE_PER_S, service_model="physical",
        dispatch=dispatch, requests=requests, seeds=(1,), keep_requests=True, **extra,
    )  # fmt: skip
    cpu = time.process_time() - begin
    digest = hashlib.sha256()
    for trace in result.traces:
        for times in (trace.slot_start_s, trace.admission_s, trace.first_token_s, trace.departure_s):
            digest.update(np.ascontiguousarray(times).tobytes())
    return cpu, result, digest.hexdigest()[:16]


def baseline_run(path: str, dispatch: str, requests: int, gamma: float, trace_dir: Path) -> tuple[float, str]:
    """(CPU seconds, digest) of the physical engine in the checkout at ``path``."""
    env = dict(os.environ, PYTHONPATH=path)
    command = [
        sys.executable, __file__, "--worker", dispatch, "--requests", str(requests), "--gamma", str(gamma),
        "--trace-dir", str(trace_dir),
    ]  # fmt: skip
    output = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
    answer = json.loads(output.strip().splitlines()[-1])
    return answer["cpu_s"], answer["digest"]


def physical_table(workload: Workload, args: argparse.Namespace) -> None:
    """The physical engine: vllm and slots schedulers, and the engine before them (``--baseline``)."""
    print("\nphysical engine, CPU seconds (one seed):")
    print(
        f"{'dispatch':14} {'before':>8} {'slots':>8} {'vllm':>8} {'slots/before':>13} {'vllm/before':>12} "
        f"{'slots = before':>15}  vllm pools (P99 TTFT, preempted)"
    )
    for dispatch in args.dispatch.split(","):
        before, before_digest = (math.nan, None)
        if args.baseline and dispatch in ("pooled", "round-robin", "least-loaded"):
            before, before_digest = baseline_run(
                args.baseline, dispatch, args.requests, args.gamma, args.trace_dir
            )
        slots_s, slots_digest = (math.nan, None)
        if dispatch in ("pooled", "round-robin", "least-loaded"):
            slots_s, _, slots_digest = timed_run(workload, dispatch, "slots", args.requests, args.gamma)
        vllm_s, result, _ = timed_run(workload, dispatch, "vllm", args.requests, args.gamma)
        same = "–" if before_digest is None else ("yes" if before_digest == slots_digest else "NO")
        pools = "  ".join(
            f"{p.pool.name} {p.ttft_p99_s.mean * 1e3:.0f} ms {p.preempted_fraction.mean:.3f}"
            for p in result.pools
        )
        print(
            f"{dispatch:14} {before:8.2f} {slots_s:8.2f} {vllm_s:8.2f} {slots_s / before:13.2f} "
            f"{vllm_s / before:12.2f} {same:>15}  {pools}",
            flush=True,
        )


def sampling_baseline(workload: Workload, requests: int) -> float:
    """Wall time to draw arrivals, lengths and routing coins for ``requests`` (what every run pays)."""
    begin = time.process_time()
    rng = np.random.default_rng(1)
    np.cumsum(rng.exponential(1.0 / ARRIVAL_RATE_PER_S, requests))
    cumulative = np.cumsum(workload.weights)
    np.searchsorted(cumulative, rng.random(requests) * cumulative[-1], side="right")
    rng.random(requests)
    return time.process_time() - begin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--trace-dir", type=Path, default=TRACE_DIR)
    parser.add_argument("--gamma", type=float, default=1.0)
    parser.add_argument("--models", default=",".join(SERVICE_MODELS))
    parser.add_argument("--dispatch", default=",".join(DISPATCH_POLICIES))
    parser.add_argument("--baseline", default=None, help="a checkout of the engine before issue 30")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    workload = load_azure(args.trace_dir)
    if args.worker is not None:  # a baseline run: time one physical dispatch on this PYTHONPATH's code
        load_kernels()
        cpu, _, digest = timed_run(workload, args.worker, None, args.requests, args.gamma)
        print(json.dumps({"cpu_s": cpu, "digest": digest}))
        return
    baseline_s = sampling_baseline(workload, args.requests)
    print(
        f"workload {workload.name}: {workload.total_weight:.0f} requests, {workload.total_tokens.size} atoms"
    )
    print(f"baseline (draw {args.requests} requests): {baseline_s:.3f} s")
    reference_s = None
    print(
        f"{'model':10} {'dispatch':12} {'pools (n×s)':22} {'cpu s':>7} {'req/s':>9} {'×base':>7} "
        f"{'×pooled-lockstep':>17}"
    )
    runs = [
        (model, dispatch, False)
        for model in args.models.split(",")
        for dispatch in args.dispatch.split(",")
        if model != "physical" and dispatch in ("pooled", "round-robin", "least-loaded")
    ]
    if workload.arrival_times_s is not None:  # the log's own timestamps, scaled to λ (tiled to N)
        runs += [(model, "pooled", True) for model in args.models.split(",") if model != "physical"]
    print(f"compiled kernels (numba): {'on' if load_kernels() else 'off'}")
    for model, dispatch, replay in runs:
        pools = fleet(workload, model, args.gamma)
        routing = Routing.two_pool(B_SHORT, args.gamma, 1.0)
        simulate_fleet(  # untimed warm-up: loads (or, the first time on a machine, compiles) the kernels
            workload, pools, routing, arrival_rate_per_s=ARRIVAL_RATE_PER_S, service_model=model,
            dispatch=dispatch, requests=2000, seeds=(1,),
        )  # fmt: skip
        begin = time.process_time()
        result = simulate_fleet(
            workload,
            pools,
            Routing.two_pool(B_SHORT, args.gamma, 1.0),
            arrival_rate_per_s=ARRIVAL_RATE_PER_S,
            service_model=model,
            dispatch=dispatch,
            requests=args.requests,
            seeds=(1,),
            arrival_times_s=workload.arrival_times_s if replay else None,
        )
        wall = time.process_time() - begin
        if reference_s is None and model == "lockstep" and dispatch == "pooled" and not replay:
            reference_s = wall
        shape = " ".join(f"{p.name}={p.instances}×{p.slots_per_instance}" for p in pools)
        ratio = f"{wall / reference_s:17.1f}" if reference_s else f"{'-':>17}"
        print(
            f"{model:10} {dispatch + (' replay' if replay else ''):12} {shape:22} {wall:7.2f} "
            f"{args.requests / wall:9.0f} {wall / baseline_s:7.0f} {ratio}"
        )
        for summary in result.pools:
            print(
                f"    {summary.pool.name:5} util {summary.utilization.mean:.3f}  "
                f"P(wait>0) {summary.wait_probability.mean:.4f}  TTFT p50/p99 "
                f"{summary.ttft_p50_s.mean * 1e3:.0f}/{summary.ttft_p99_s.mean * 1e3:.0f} ms  "
                f"TPOT {summary.tpot_mean_s.mean * 1e3:.1f} ms  warmed up {summary.warmed_up}"
            )
    if "physical" in args.models.split(","):
        physical_table(workload, args)


if __name__ == "__main__":
    main()
