"""Run one pool's request stream through Vidur with fleetopt's iteration costs; prints its TTFTs as JSON.

Runs in Vidur's own environment, not fleetopt's (see benchmarks/vidur_judge.py, which writes the
job and the trace and reads the answer):

    /work/venv-vidur/bin/python benchmarks/vidur_driver.py JOB.json

Vidur (github.com/microsoft/vidur, MIT) is used as published at commit 7d47513 (2024-11-19), with
one substitution: its execution-time predictor, which trains scikit-learn models on profiled
operator times, is replaced by a predictor that returns fleetopt's iteration cost for each batch
Vidur's scheduler forms, W + H·(decoding requests) + Σ_decoding max(0, κ·L − H) + Σ_chunks
(τ·c + max(τ_a·(c·x + c(c + 1)/2), κ·(x + c) − τ·c)) (x: the chunk's context; L: the request's
total). The public snapshot lacks the attention profiles (``data/profiling/compute/*/*/
attention.csv`` are Git LFS objects that are not in it), and with the same costs on both sides a
disagreement is the scheduling's, not the cost model's. Everything else is Vidur's: the replica
scheduler (``sarathi``: chunked prefill under one token budget per iteration, KV blocks of 16
tokens, preemption), the global scheduler (``round_robin``, ``lor``, ``random``), the event loop
and its metrics (TTFT = Vidur's ``prefill_e2e_time``, arrival to the end of the last prompt chunk).

JOB.json: trace (CSV with arrived_at, num_prefill_tokens, num_decode_tokens), instances, slots
(``batch_size_cap``), token_budget (``chunk_size``), kv_blocks, block_tokens, watermark (fraction of
the blocks kept free at admission; vLLM V1 keeps none), context_tokens, global_scheduler,
replica_scheduler, costs {w_s, h_s, tau_s, tau_attention_s, kv_read_s}, device, tensor_parallel,
output_dir, seed.
"""

from __future__ import annotations

import atexit
import json
import sys


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as handle:
        job = json.load(handle)
    costs = job["costs"]

    from vidur.config import SimulationConfig
    from vidur.entities import ExecutionTime
    from vidur.execution_time_predictor import BaseExecutionTimePredictor, ExecutionTimePredictorRegistry
    from vidur.metrics.constants import RequestMetricsTimeDistributions
    from vidur.simulator import Simulator
    from vidur.types import ExecutionTimePredictorType

    class FleetoptCosts(BaseExecutionTimePredictor):
        """Every batch costs fleetopt's iteration time; it is put in the MLP up-projection of each
        layer (Vidur adds the layers' times), every other operator costs nothing."""

        def get_execution_time(self, batch, pipeline_stage):  # noqa: ANN001, ANN201
            w, h, tau = costs["w_s"], costs["h_s"], costs["tau_s"]
            tau_a, kappa = costs["tau_attention_s"], costs["kv_read_s"]
            seconds = w
            for request, tokens in zip(batch.requests, batch.num_tokens, strict=True):
                if request.is_prefill_complete:
                    total = request.num_prefill_tokens + request.num_decode_tokens
                    seconds += h + max(0.0, kappa * total - h)
                else:
                    context = request.num_processed_tokens
                    pairs = tokens * context + tokens * (tokens + 1) // 2
                    seconds += tau * tokens + max(tau_a * pairs, kappa * (context + tokens) - tau * tokens)
            layers = self._num_layers_per_pipeline_stage
            values = [0.0] * 20
            values[6] = seconds * 1e3 / layers  # milliseconds per layer, in mlp_layer_up_proj
            return ExecutionTime(layers, *values[:6], values[6], *values[7:19])

    for name in list(BaseExecutionTimePredictor.__abstractmethods__):
        setattr(FleetoptCosts, name, lambda self, batch: 0.0)
    FleetoptCosts.__abstractmethods__ = frozenset()
    ExecutionTimePredictorRegistry.unregister(ExecutionTimePredictorType.RANDOM_FORREST)
    ExecutionTimePredictorRegistry.register(ExecutionTimePredictorType.RANDOM_FORREST, FleetoptCosts)

    sys.argv = [
        "vidur", "--seed", str(job["seed"]), "--log_level", "warning",
        "--cluster_config_num_replicas", str(job["instances"]),
        "--replica_config_model_name", "meta-llama/Meta-Llama-3-70B",
        "--replica_config_device", job["device"],
        "--replica_config_tensor_parallel_size", str(job["tensor_parallel"]),
        "--global_scheduler_config_type", job["global_scheduler"],
        "--replica_scheduler_config_type", job["replica_scheduler"],
        f"--{job['replica_scheduler']}_scheduler_config_batch_size_cap", str(job["slots"]),
        f"--{job['replica_scheduler']}_scheduler_config_block_size", str(job["block_tokens"]),
        f"--{job['replica_scheduler']}_scheduler_config_num_blocks", str(job["kv_blocks"]),
        f"--{job['replica_scheduler']}_scheduler_config_watermark_blocks_fraction", str(job["watermark"]),
        "--request_generator_config_type", "trace_replay",
        "--trace_request_generator_config_trace_file", job["trace"],
        "--trace_request_generator_config_max_tokens", str(job["context_tokens"]),
        "--execution_time_predictor_config_type", "random_forrest",
        "--metrics_config_output_dir", job["output_dir"],
        "--no-metrics_config_store_plots", "--no-metrics_config_enable_chrome_trace",
        "--no-metrics_config_store_batch_metrics", "--no-metrics_config_store_utilization_metrics",
        "--no-metrics_config_save_table_to_wandb",
    ]  # fmt: skip
    if job["replica_scheduler"] == "sarathi":
        sys.argv += ["--sarathi_scheduler_config_chunk_size", str(job["token_budget"])]
    else:
        sys.argv += [
            f"--{job['replica_scheduler']}_scheduler_config_max_tokens_in_batch",
            str(job["token_budget"]),
        ]
    config = SimulationConfig.create_from_cli_args()
    simulator = Simulator(config)
    atexit.unregister(simulator._write_output)  # no plots or files: the TTFTs are printed below
    simulator.run()
    series = simulator.metric_store._request_metrics_time_distributions[
        RequestMetricsTimeDistributions.PREFILL_TIME_E2E
    ]._data_series
    ttft = sorted(series)  # (request id, seconds): ids follow the trace's order
    e2e = sorted(
        simulator.metric_store._request_metrics_time_distributions[
            RequestMetricsTimeDistributions.REQUEST_E2E_TIME
        ]._data_series
    )
    json.dump(
        {"request_ids": [int(x) for x, _ in ttft], "ttft_s": [float(y) for _, y in ttft],
         "e2e_request_ids": [int(x) for x, _ in e2e], "e2e_s": [float(y) for _, y in e2e]},
        sys.stdout,
    )  # fmt: skip


if __name__ == "__main__":
    main()
