"""An outside judge: Vidur's smallest passing instance count for planned pools, beside ours.

Vidur (github.com/microsoft/vidur, MIT) is an LLM-inference cluster simulator nobody here wrote.
This recipe runs planned pools through it and through fleetopt's ``physical`` engine (both
schedulers) on the same requests, and for each finds the smallest instance count whose simulated
P99 TTFT meets the plan's SLO. Nothing of Vidur ships with fleetopt or is committed here; you fetch
and install it yourself, in an environment of its own:

    git clone https://github.com/microsoft/vidur /path/to/vidur && git -C /path/to/vidur checkout 7d47513
    python3.11 -m venv /path/to/venv-vidur
    /path/to/venv-vidur/bin/pip install "numpy==1.26.4" "pandas==3.0.6" "scikit-learn==1.9.1" \\
        "fasteners==0.20" "ddsketch==3.0.1" "wandb==0.31.0" "plotly==7.1.0" "plotly-express==0.4.1" \\
        "matplotlib==3.11.2" "seaborn==0.13.2" "kaleido==1.5.0" "PyYAML==6.0.4" "tqdm==4.70.1"
    python benchmarks/vidur_judge.py --vidur /path/to/vidur --vidur-python /path/to/venv-vidur/bin/python

What is substituted (benchmarks/vidur_driver.py, which runs inside Vidur's environment): Vidur's
execution-time predictor trains on profiled operator times, and the public snapshot lacks its
attention profiles (Git LFS objects); the driver replaces the predictor with fleetopt's iteration
cost of each batch Vidur forms, so both simulators price an iteration alike and any disagreement is
in the scheduling, batching, memory management and queueing, which are Vidur's own: its ``sarathi``
replica scheduler (chunked prefill under one token budget per iteration, the budget the pool's
vLLM ``max_num_batched_tokens``; ``batch_size_cap`` its ``max_num_seqs``; KV blocks of 16 tokens
out of the instance's KV cache, no watermark, as vLLM V1) and its global schedulers. Both sides
dispatch alike: ``round_robin`` against fleetopt's ``round-robin``, and Vidur's ``lor`` (the
replica with the fewest requests waiting in its queue, ties to the lowest index) against
fleetopt's ``least-waiting`` with every tie-breaking draw 0 (ties to the lowest index too: the same
rule). The smallest passing counts are found under ``lor``, a load-aware router like the
least-loaded one the plan assumes; round-robin is compared at the planned count.

Per pool: the pool's own Poisson stream at its planned rate, lengths from its routed atoms (C&R
applied), a warm-up of max(30 s, ten mean residences) and ``--requests`` measured requests, one
seed; the same trace for every judge and every instance count (common random numbers). A count
passes when the P99 TTFT of the measured requests (+ the profile's T0) is at most the SLO. The
search steps from the planned count by 10% and bisects, as benchmarks/validate_engine.py does, and
gives up above three times the planned count ("none").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np
from validate_engine import pool_stream, smallest_passing

from fleetopt.api import plan_workload
from fleetopt.api.crosscheck import with_model_attention
from fleetopt.core.crosscheck import setup_from_plan
from fleetopt.core.hardware import iteration_costs
from fleetopt.core.simulate import routed_pool_workload, run_pool_engine

HERE = Path(__file__).resolve().parent
PROFILES = HERE.parent / "tests" / "data" / "profiles"
#: (label, workload, SLO s, rate req/s, serving profile, long context, profiles folder, rate basis)
PLANS = (
    ("README plan", "azure-2023", 0.5, 1000.0, None, None, None, None),
    ("long context (LMSYS, 64K)", "lmsys", 1.0, 500.0, None, None, None, "mean"),
    (
        "A100 TP4 (Vidur's profiles)",
        "azure",
        2.0,
        100.0,
        "llama-3-70b-a100-80gb-tp4-vidur",
        16384,
        PROFILES,
        "mean",
    ),
)
#: Vidur's device for a GPU profile (only its memory planner sees it; the costs are fleetopt's).
DEVICES = {"a100-80gb": "a100"}


def plan_pools(label, workload, slo_s, rate, serving, context, folder, basis):
    kwargs = {}
    for key, value in (("serving", serving), ("long_context_tokens", context), ("profiles_dir", folder),
                       ("rate_basis", basis)):  # fmt: skip
        if value is not None:
            kwargs[key] = value
    run = plan_workload(workload, ttft_slo_s=slo_s, mean_rate_per_s=rate, **kwargs)
    setup = with_model_attention(setup_from_plan(run.plan))
    for index, (prediction, sizing) in enumerate(zip(setup.pools, run.plan.best.pools, strict=True)):
        own = routed_pool_workload(run.workload, run.plan.best.routing, index)
        if prediction.simulated.instances and own is not None:
            yield prediction, sizing, own


class Judges:
    """P99 TTFT of one pool's trace at n instances, by each judge (memoized)."""

    def __init__(self, prediction, stream, args, workdir: Path) -> None:
        self.pool, self.hardware = prediction.simulated, prediction.hardware
        self.arrivals, self.inputs, self.outputs, self.warmup = stream
        self.args, self.workdir = args, workdir
        self.cache: dict[tuple[str, int], float] = {}
        self.trace = workdir / f"{prediction.name}.csv"
        with self.trace.open("w", encoding="utf-8") as handle:
            handle.write("arrived_at,num_prefill_tokens,num_decode_tokens\n")
            for a, i, o in zip(
                self.arrivals.tolist(), self.inputs.tolist(), self.outputs.tolist(), strict=True
            ):
                handle.write(f"{a!r},{i},{o}\n")

    def p99(self, judge: str, n: int, dispatch: str = "lor") -> float:
        if (judge, n, dispatch) not in self.cache:
            self.cache[(judge, n, dispatch)] = self._p99(judge, n, dispatch)
        return self.cache[(judge, n, dispatch)]

    def _p99(self, judge: str, n: int, dispatch: str) -> float:
        import dataclasses

        pool = dataclasses.replace(self.pool, instances=n)
        if judge == "vidur":
            ttft = self._vidur(pool, {"lor": "lor", "round-robin": "round_robin"}[dispatch])
        else:
            scheduler = {"ours (vllm)": "vllm", "ours (slots)": "slots"}[judge]
            ours = {"lor": "least-waiting", "round-robin": "round-robin"}[dispatch]
            run = run_pool_engine(pool, self.arrivals, self.inputs, self.outputs, ours, scheduler)  # draws 0
            ttft = run.first_token_s - self.arrivals
        return float(np.percentile(ttft[self.warmup :], 99)) + pool.ttft_overhead_s

    def _vidur(self, pool, global_scheduler: str) -> np.ndarray:
        costs = iteration_costs(self.hardware)
        job = {
            "trace": str(self.trace), "instances": pool.instances, "slots": pool.slots_per_instance,
            "token_budget": pool.prefill_chunk_tokens, "block_tokens": pool.kv_block_tokens,
            "kv_blocks": pool.kv_capacity_tokens // pool.kv_block_tokens, "watermark": 0.0,
            "context_tokens": pool.context_tokens,
            "global_scheduler": global_scheduler, "replica_scheduler": "sarathi",
            "costs": {
                "w_s": costs.base_s, "h_s": costs.per_decode_s, "tau_s": costs.per_prefill_token_s,
                "tau_attention_s": pool.attention_s_per_token_pair,
                "kv_read_s": costs.kv_read_floor_s_per_token,
            },
            "device": DEVICES.get(self.hardware.gpu_name, "h100"),
            "tensor_parallel": self.hardware.gpus_per_instance,
            "output_dir": str(self.workdir / "vidur-output"), "seed": 1,
        }  # fmt: skip
        return run_vidur(job, self.workdir, self.args, self.arrivals.size)

    def smallest(self, judge: str, planned: int, slo_s: float) -> int | None:
        return smallest_passing(lambda n: n >= 1 and self.p99(judge, n) <= slo_s, planned)


JUDGES = ("ours (vllm)", "ours (slots)", "vidur")


def agreement(args) -> None:
    """Request by request, on synthetic traces: Vidur's sarathi scheduler against the vllm scheduler
    (4 instances of 32 sequences, budget 2,048, W = 10 ms, H = 0.5 ms, τ = 30 µs, prompts of 100–3,000
    tokens, 1–300 outputs, 3,000 requests), light and overloaded, round-robin and least-waiting
    (Vidur's lor), with a KV cache that never runs out and one that does."""
    from fleetopt.core.engines import IterationSettings, run_iteration_engine

    print(
        "| load | KV blocks | dispatch | P99 TTFT ours / Vidur | requests within 1 ms | largest difference |"
    )
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for rate in (20.0, 45.0):
            rng = np.random.default_rng(2)
            count = 3000
            arrivals = np.cumsum(rng.exponential(1.0 / rate, count))
            prompts, outputs = rng.integers(100, 3000, count), rng.integers(1, 300, count)
            trace = Path(folder) / "trace.csv"
            with trace.open("w", encoding="utf-8") as handle:
                handle.write("arrived_at,num_prefill_tokens,num_decode_tokens\n")
                for a, i, o in zip(arrivals.tolist(), prompts.tolist(), outputs.tolist(), strict=True):
                    handle.write(f"{a!r},{i},{o}\n")
            for blocks in (20_000, 3_000):
                for ours, theirs in (("round-robin", "round_robin"), ("least-waiting", "lor")):
                    costs = {
                        "w_s": 0.01,
                        "h_s": 0.0005,
                        "tau_s": 3e-5,
                        "tau_attention_s": 0.0,
                        "kv_read_s": 0.0,
                    }
                    job = {
                        "trace": str(trace), "instances": 4, "slots": 32, "token_budget": 2048,
                        "kv_blocks": blocks, "block_tokens": 16, "watermark": 0.0, "context_tokens": 4096,
                        "global_scheduler": theirs, "replica_scheduler": "sarathi", "device": "a100",
                        "tensor_parallel": 4, "seed": 1, "costs": costs,
                        "output_dir": str(Path(folder) / "out"),
                    }  # fmt: skip
                    vidur = run_vidur(job, Path(folder), args, count)
                    run = run_iteration_engine(
                        arrivals, prompts, outputs, np.zeros(count), np.zeros(count), instances=4,
                        slots=32, base_s=0.01, per_decode_s=0.0005, per_prefill_token_s=3e-5,
                        settings=IterationSettings(2048, None, blocks, 16, 0), dispatch=ours,
                    )  # fmt: skip
                    mine = run.first_token_s - arrivals
                    gap = np.abs(vidur - mine)
                    print(
                        f"| {rate:g} req/s | {blocks:,} | {ours} / {theirs} | "
                        f"{np.percentile(mine, 99):.3f} / {np.percentile(vidur, 99):.3f} s | "
                        f"{np.mean(gap < 1e-3):.1%} | {gap.max():.3g} s |",
                        flush=True,
                    )


def run_vidur(job: dict, folder: Path, args, count: int) -> np.ndarray:
    """Each request's TTFT (seconds, NaN if Vidur returned none) from one run of the driver."""
    path = folder / "job.json"
    path.write_text(json.dumps(job), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(args.vidur))
    output = subprocess.run(
        [args.vidur_python, str(HERE / "vidur_driver.py"), str(path)],
        cwd=args.vidur, env=env, check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    answer = json.loads(output.strip().splitlines()[-1])
    ttft = np.full(count, np.nan)
    ttft[np.asarray(answer["request_ids"], dtype=np.int64)] = answer["ttft_s"]
    return ttft


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vidur", type=Path, required=True, help="a checkout of microsoft/vidur at 7d47513")
    parser.add_argument("--vidur-python", required=True, help="the Python of Vidur's own environment")
    parser.add_argument(
        "--requests", type=int, default=20_000,
        help="measured requests per pool (Vidur steps every iteration: a long pool's run of 20,000 requests "
        "spans hours of simulated time; 3,000 keep 30 above its P99)",
    )  # fmt: skip
    parser.add_argument("--only", default=None, help="plans whose label starts with this")
    parser.add_argument("--pool", default=None, help="only this pool of each plan (short, long)")
    parser.add_argument("--agreement", action="store_true", help="the request-by-request check only")
    args = parser.parse_args()
    if args.agreement:
        agreement(args)
        return
    print(
        "| plan | pool | n × s planned | P99 TTFT predicted | at planned n, lor: ours vllm / ours slots / "
        "Vidur | at planned n, round-robin: ours vllm / ours slots / Vidur | smallest n passing (lor): ours "
        "vllm / ours slots / Vidur | plan vs Vidur |"
    )
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for label, *plan in PLANS:
            if args.only and not label.startswith(args.only):
                continue
            slo_s = plan[1]
            for prediction, sizing, own in plan_pools(label, *plan):
                if args.pool and prediction.name != args.pool:
                    continue
                stream = pool_stream(own, sizing.arrival_rate_per_s, sizing.mean_service_s, args.requests, 1)
                stream = (
                    stream[0],
                    np.maximum(stream[1], 1),
                    *stream[2:],
                )  # Vidur's traces: ≥ 1 prompt token
                judges = Judges(prediction, stream, args, Path(folder))
                planned = prediction.simulated.instances
                lor = " / ".join(f"{judges.p99(j, planned) * 1e3:.0f}" for j in JUDGES)
                rr = " / ".join(f"{judges.p99(j, planned, 'round-robin') * 1e3:.0f}" for j in JUDGES)
                smallest = [judges.smallest(j, planned, slo_s) for j in JUDGES]
                shown = " / ".join("none" if n is None else str(n) for n in smallest)
                versus = "–" if smallest[2] is None else f"{(planned / smallest[2] - 1.0) * 100.0:+.1f}%"
                print(
                    f"| {label} | {prediction.name} | {planned} × {prediction.simulated.slots_per_instance} "
                    f"| {sizing.p99_ttft_s * 1e3:.0f} ms | {lor} ms | {rr} ms | {shown} | {versus} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
