"""The gateway plugin under load, and its own cost in process.

    python benchmarks/bench_gateway.py [--requests 20000] [--concurrency 32] [--max-seconds 600]

1. In process (no LiteLLM): the CPU time of :meth:`TokenBudgetRouter.route` — reading the body,
   classifying, estimating, routing — on requests of the README plan's traffic (prompt lengths from
   the Azure 2023 log, text from the project's docs), and of a C&R band request of an 8K-token
   prompt compressed to the first pool (the §5.2 compressor included). Targets: routing ≤ 1 ms p99,
   compression ≤ 10 ms p99.
2. Over real HTTP: a LiteLLM proxy (the README plan exported with ``--to litellm``, estimator mode)
   in front of two mock pools on loopback, ``--requests`` requests at ``--concurrency`` (bounded by
   ``--max-seconds``), then the same through a proxy without the plugin (clients name the pool's
   model group): throughput, client latency percentiles, the plugin's added latency, and that
   every request was answered once.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import http.client
import json
import secrets
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from gateway_mocks import MockPool, prose_corpus, start_litellm, stop_process  # noqa: E402

from fleetopt.gateway.router import TokenBudgetRouter  # noqa: E402
from fleetopt.io.gateway_config import gateway_config  # noqa: E402

MODEL = "meta-llama/Llama-3.1-70B-Instruct"


def azure_requests(count: int, rng) -> list[tuple[int, int]]:
    rows = []
    for name in ("azure-2023-conv", "azure-2023-code"):
        with gzip.open(REPO / "workloads" / f"{name}.csv.gz", "rt") as f:
            rows += [(int(r["input_tokens"]), int(r["output_tokens"])) for r in csv.DictReader(f)]
    picks = rng.integers(0, len(rows), count)
    return [rows[i] for i in picks]


def bodies(count: int, rng, text: str) -> list[dict]:
    """Chat bodies with the Azure log's prompt lengths (≈ 4.5 bytes per token of docs prose)."""
    out = []
    for prompt_tokens, output_tokens in azure_requests(count, rng):
        start = int(rng.integers(0, max(1, len(text) - 4 * 4500 * 5)))
        content = text[start : start + int(prompt_tokens * 4.5)] or "hello"
        out.append({"model": MODEL, "messages": [{"role": "user", "content": content}],
                    "max_tokens": max(1, output_tokens)})  # fmt: skip
    return out


def percentiles(values) -> str:
    a = np.asarray(values)
    return " ".join(f"p{q} {np.percentile(a, q):.3f}" for q in (50, 95, 99))


def in_process(settings: dict, text: str, rng) -> None:
    router = TokenBudgetRouter(gateway_config(settings))
    sample = bodies(2000, rng, text)
    for body in sample[:100]:  # warm up (imports, caches)
        routed = router.route(body)
        router.complete(routed.request_id, None)
    times: dict[str, list[float]] = {}
    for body in sample:
        start = time.process_time()
        routed = router.route(body)
        times.setdefault(routed.outcome, []).append((time.process_time() - start) * 1000)
        router.complete(routed.request_id, None)
    for outcome, values in sorted(times.items()):
        print(f"in process, route() of the Azure-length requests it {outcome} ({len(values):,}), ms of CPU: "
              f"{percentiles(values)}")  # fmt: skip
    # an 8K-token prose prompt in the band of an 8,192-token pool (γ 1.2, the cut capped at 20%)
    band = {
        **settings,
        "pools": [{**settings["pools"][0], "max_budget_tokens": 8192}, settings["pools"][-1]],
        "compress_and_route": {"gamma": 1.2, "compressibility": 1.0, "max_cut_fraction": 0.2},
    }
    router = TokenBudgetRouter(gateway_config(band))
    ratio = router.estimator.route_ratio("prose")
    prose = text[: int(8700 * ratio)]
    body = {"model": MODEL, "messages": [{"role": "user", "content": prose}], "max_tokens": 200}
    prompt = router.estimator.estimate(len(prose.encode()), "prose")
    times_ms, outcomes = [], []
    for _ in range(200):
        start = time.process_time()
        routed = router.route(body)
        times_ms.append((time.process_time() - start) * 1000)
        outcomes.append(routed.outcome)
        router.complete(routed.request_id, None)
    outcome = statistics.mode(outcomes)
    print(f"in process, a {prompt:,}-token prose prompt + 200 max_tokens compressed to "
          f"{routed.prompt_tokens:,} tokens for an 8,192-token pool ({outcome}), ms of CPU: "
          f"{percentiles(times_ms)}")  # fmt: skip


def load(url: str, key: str, sample: list[dict], concurrency: int, max_seconds: float, model: str | None):
    """Send every body once (``model`` overrides the model name); (latencies s, statuses, wall s)."""
    parts = urlsplit(url)
    local = threading.local()
    deadline = time.monotonic() + max_seconds

    def send(body):
        if time.monotonic() > deadline:
            return None, None
        connection = getattr(local, "connection", None)
        if connection is None:
            connection = local.connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        payload = json.dumps(body if model is None else {**body, "model": model})
        start = time.perf_counter()
        try:
            headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
            connection.request("POST", "/v1/chat/completions", payload, headers)
            response = connection.getresponse()
            response.read()
            status = response.status
        except (OSError, http.client.HTTPException):
            local.connection = None
            status = 599
        return time.perf_counter() - start, status

    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(send, sample))
    wall = time.perf_counter() - start
    done = [(t, s) for t, s in results if t is not None]
    return [t for t, _ in done], [s for _, s in done], wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--max-seconds", type=float, default=600.0)
    parser.add_argument("--in-process-only", action="store_true")
    args = parser.parse_args()
    import yaml

    from fleetopt.api import plan_workload
    from fleetopt.io.plans import plan_file_from_document
    from fleetopt.render.export import export_plan
    from fleetopt.render.gateway import GatewayOptions
    from fleetopt.render.output import dumps

    rng = np.random.default_rng(0)
    text = prose_corpus(REPO) * 3
    run = plan_workload("azure-2023", ttft_slo_s=0.5, mean_rate_per_s=1000, compressibility=1.0)
    plan_file = plan_file_from_document(json.loads(dumps(run.document, "json")), "benchmark plan")
    names = run.plan.best.pool_names
    contexts = run.plan.best.routing.context_tokens(65_536)
    pools = [
        MockPool(n, c, lambda t: (len(t.encode()) + 3) // 4).start()
        for n, c in zip(names, contexts, strict=True)
    ]
    try:
        endpoints = tuple(f"{p.name}={p.url}" for p in pools)
        exported = export_plan(plan_file, ["litellm"], gateway=GatewayOptions(endpoints)).files[
            "litellm.yaml"
        ]
        config = yaml.safe_load(exported)
        settings = config["callback_settings"]["fleetopt"]
        best = run.plan.best
        print(f"plan: {names} boundaries {best.routing.boundaries_tokens}, γ {best.gamma:g} "
              f"(p_c = 1, the cut capped at {best.routing.max_cut_fraction:.0%})")  # fmt: skip
        in_process(settings, text, rng)
        if args.in_process_only:
            return
        sample = bodies(args.requests, rng, text)
        with tempfile.TemporaryDirectory() as workdir:
            key = "sk-" + secrets.token_hex(24)
            runs = {}
            for label, callbacks in (("with the fleetopt plugin", True), ("without it (baseline)", False)):
                cfg = json.loads(json.dumps(config))
                if not callbacks:
                    cfg["litellm_settings"].pop("callbacks")
                    cfg.pop("callback_settings")
                path = Path(workdir) / f"litellm-{int(callbacks)}.yaml"
                path.write_text(yaml.safe_dump(cfg, sort_keys=False))
                before = sum(len(p.requests) for p in pools)
                process, url, _ = start_litellm(path, workdir, REPO, key)
                try:
                    latencies, statuses, wall = load(
                        url,
                        key,
                        sample,
                        args.concurrency,
                        args.max_seconds,
                        None if callbacks else config["model_list"][-1]["model_name"],  # all to the last pool
                    )
                finally:
                    stop_process(process)
                served = sum(len(p.requests) for p in pools) - before
                ok = sum(1 for s in statuses if s == 200)
                runs[label] = np.asarray(latencies)
                others = {s: statuses.count(s) for s in set(statuses) if s != 200}
                rate = len(latencies) / wall
                print(f"\n{label}: {len(latencies):,} requests in {wall:.1f} s = {rate:.0f} req/s at "
                      f"concurrency {args.concurrency}; {ok:,} answered 200, {served:,} reached a pool "
                      f"(others: {others})")  # fmt: skip
                print(f"  client latency (ms): {percentiles(np.asarray(latencies) * 1000)}")
            with_plugin, baseline = runs.values()
            print(f"\nthe plugin's added latency at the median: "
                  f"{(np.median(with_plugin) - np.median(baseline)) * 1000:.2f} ms")  # fmt: skip
    finally:
        for pool in pools:
            pool.stop()


if __name__ == "__main__":
    main()
