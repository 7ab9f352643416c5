"""``fleetopt export``: a plan as deployable text — vLLM commands, the router file, Kubernetes
Deployments and Services, KEDA ScaledObjects and a markdown summary (docs/deploy.md).

Every number comes from the plan (instances, max_num_seqs, max_model_len, tensor parallelism,
boundaries, γ, p_c) or from the serving profile the plan names (token budget, memory utilization,
KV block, dtypes: :class:`fleetopt.io.deploy.EngineSettings`). Which flags are written depends on
the vLLM release (``--vllm-version``, :data:`VLLM_RELEASES`); the tests check every flag written for
a release against the flags that release's own argument parser defines
(``vllm/engine/arg_utils.py`` of its PyPI wheel, vendored with its commit in tests/data/vllm-flags).
No rich here: the API builds these too.
"""

from __future__ import annotations

import datetime
import json
import math
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fleetopt import __version__
from fleetopt.core.routing import Routing
from fleetopt.errors import printable
from fleetopt.io.deploy import (
    ROUTER_KIND,
    ROUTER_SCHEMA_VERSION,
    WITHOUT_MAX_TOKENS,
    EngineSettings,
)
from fleetopt.io.documents.prefix import PrefixCachingDocument
from fleetopt.io.plans import PlanSchedule


@dataclass(frozen=True)
class VllmRelease:
    """What one vLLM release series parses beyond the flags every supported release has.

    Attributes:
        series: ``major.minor``.
        custom_histogram_buckets: ``--custom-histogram-buckets`` (first in 0.32).
        shutdown_timeout: ``--shutdown-timeout`` (SIGTERM drains running requests; first in 0.30).
    """

    series: str
    custom_histogram_buckets: bool
    shutdown_timeout: bool


#: The vLLM release series export writes flags for, each read from its release's argument parser
#: (``vllm/engine/arg_utils.py`` of the PyPI wheels 0.11.0, 0.30.0, 0.31.0, 0.32.0, 0.33.0; their
#: commits are in tests/data/vllm-flags/, which the tests check every written flag against).
VLLM_RELEASES = {
    "0.11": VllmRelease("0.11", custom_histogram_buckets=False, shutdown_timeout=False),
    "0.30": VllmRelease("0.30", custom_histogram_buckets=False, shutdown_timeout=True),
    "0.31": VllmRelease("0.31", custom_histogram_buckets=False, shutdown_timeout=True),
    "0.32": VllmRelease("0.32", custom_histogram_buckets=True, shutdown_timeout=True),
    "0.33": VllmRelease("0.33", custom_histogram_buckets=True, shutdown_timeout=True),
}
#: The release export writes for unless told (``--vllm-version``): the newest on PyPI when checked.
DEFAULT_VLLM_VERSION = "0.33.0"


def vllm_image(version: str) -> str:
    """vLLM's OpenAI-compatible server image of a release."""
    return f"vllm/vllm-openai:v{version}"


def image_vllm_version(image: str) -> str | None:
    """The release an image's tag names (``…:v0.11.0`` → ``0.11.0``), or None."""
    import re

    match = re.search(r":v?(\d+\.\d+(?:\.\d+)?)$", image)
    return match.group(1) if match else None


#: The vLLM image of the manifests: the default release's OpenAI-compatible server.
DEFAULT_VLLM_IMAGE = vllm_image(DEFAULT_VLLM_VERSION)
#: vLLM's default port (``vllm serve --port``).
VLLM_PORT = 8000
#: vLLM's time-to-first-token histogram edges, seconds (``vllm:time_to_first_token_seconds``;
#: vllm/v1/metrics/loggers.py, the ``time_to_first_token`` family of vllm/v1/metrics/buckets.py).
VLLM_TTFT_BUCKETS_S = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
)  # fmt: skip
#: Cron triggers have minute resolution (KEDA's cron scaler, robfig/cron five-field expressions).
_MINUTE_S = 60
#: Periods a schedule can repeat on as cron expressions: a day or a week.
_DAY_S, _WEEK_S = 86_400, 604_800


@dataclass(frozen=True)
class DeployPool:
    """One planned pool with everything its deployment needs (seconds, tokens, req/s)."""

    name: str
    resource: str
    instances: int
    gpus_per_instance: int
    context_tokens: int
    slots_per_instance: int
    engine: EngineSettings
    serving_profile: str
    gpu: str
    arrival_rate_per_s: float | None = None
    mean_service_s: float | None = None
    p99_ttft_s: float | None = None
    p99_wait_s: float | None = None
    iteration_s: float | None = None
    tpot_limit_s: float | None = None
    spare_instances: int = 0
    prefix_cache_hit_rate: float | None = None  # the share of prompt tokens the plan assumed cached

    @property
    def prefix_caching(self) -> bool:
        """Whether vLLM caches this pool's prefixes: exactly when the plan charged it a hit rate > 0."""
        return bool(self.prefix_cache_hit_rate)


@dataclass(frozen=True)
class ExportOptions:
    """How the exported files name, place and scale things (the ``fleetopt export`` options).

    ``histogram_buckets`` None: on when the release parses ``--custom-histogram-buckets``.
    ``node_selector`` None: the GPU product label of each pool's GPU (:data:`GPU_PRODUCT_LABELS`);
    ``tolerations`` None: tolerate the GPU vendor's taint (``nvidia.com/gpu``/``amd.com/gpu``
    NoSchedule). ``surge_gpus`` None: one instance's GPUs. ``drain_s`` None: each pool's longest
    stream at the plan's TPOT, at most :data:`MAX_DEFAULT_DRAIN_S`."""

    name_prefix: str = "fleetopt"
    namespace: str | None = None
    image: str = DEFAULT_VLLM_IMAGE
    prometheus_url: str = "http://prometheus-operated.monitoring.svc:9090"
    burst_headroom: float = 0.25
    hf_token_secret: str | None = None
    histogram_buckets: bool | None = None
    vllm_version: str = DEFAULT_VLLM_VERSION
    allow_long_context: bool = False
    weight_cache: str = "pvc"
    storage_class: str | None = None
    prefetch_weights: bool = False
    node_selector: tuple[tuple[str, str], ...] | None = None
    tolerations: tuple[tuple[str, str | None, str], ...] | None = None
    surge_gpus: int | None = None
    drain_s: int | None = None

    @property
    def release(self) -> VllmRelease:
        return VLLM_RELEASES[vllm_series(self.vllm_version)]

    @property
    def writes_histogram_buckets(self) -> bool:
        return (
            self.release.custom_histogram_buckets
            if self.histogram_buckets is None
            else self.histogram_buckets
        )


def vllm_series(version: str) -> str:
    """``major.minor`` of a vLLM version such as ``0.33``, ``0.33.1`` or ``v0.33.0`` (ValueError if
    it is not one)."""
    import re

    match = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.\d+(?:\.post\d+)?)?", version)
    if match is None:
        raise ValueError(version)
    return f"{int(match.group(1))}.{int(match.group(2))}"


@dataclass(frozen=True)
class ExportContext:
    """The plan's facts every target needs besides its pools."""

    plan_label: str
    ttft_slo_s: float
    routing: Routing
    pools: tuple[DeployPool, ...]
    workload_sha256: str | None = None
    schedule: PlanSchedule | None = None
    notes: tuple[str, ...] = field(default=())
    dispatch: str | None = None  # the plan's stated dispatch policy (the router file says it)
    prefix_caching: PrefixCachingDocument | None = None  # the plan's prefix_caching section


# ------------------------------------------------------------------------------------------ vLLM


def max_num_batched_tokens(pool: DeployPool) -> int:
    """The profile's token budget per iteration, raised to max_num_seqs where vLLM requires it
    (``max_num_batched_tokens ≥ max_num_seqs``, vllm/config/scheduler.py ``_verify_args``)."""
    return max(pool.engine.max_num_batched_tokens, pool.slots_per_instance)


def _one_two_five(limit: int) -> list[int]:
    """vLLM's default token buckets: 1, 2, 5, 10, 20, 50, … up to ``limit`` (``build_1_2_5_buckets``)."""
    edges, scale = [], 1
    while True:
        for mantissa in (1, 2, 5):
            if mantissa * scale > limit:
                return edges
            edges.append(mantissa * scale)
        scale *= 10


def histogram_buckets(context: ExportContext, pool: DeployPool) -> dict[str, list[float]]:
    """vLLM's default bucket edges plus the plan's own: the pool boundaries and ⌊γB⌋ up to this pool's
    context (token histograms), and the TTFT SLO (seconds), so Prometheus counts them exactly."""
    plan_edges = {*context.routing.boundaries_tokens, pool.context_tokens}
    if context.routing.band_top_tokens is not None:
        plan_edges.add(context.routing.band_top_tokens)
    tokens = sorted(
        {*_one_two_five(pool.context_tokens), *(b for b in plan_edges if b <= pool.context_tokens)}
    )
    ttft = sorted({*VLLM_TTFT_BUCKETS_S, context.ttft_slo_s})
    return {"request_tokens": [float(t) for t in tokens], "time_to_first_token": ttft}


#: vLLM's prefix-caching switch, on and off. ``--enable-prefix-caching`` is an
#: ``argparse.BooleanOptionalAction`` (``--no-enable-prefix-caching`` turns it off) in every release
#: export writes for — vllm/engine/arg_utils.py of 0.11.0 (f71952c1c) and 0.30.0–0.33.0 (ced6857af …
#: 4ba787ec9), ``negated_flags`` in tests/data/vllm-flags — and already in 0.7.3. Since 0.8.0 vLLM
#: caches prefixes unless told not to: V1 became the default engine (vllm#13726) and 0.8.0's
#: ``EngineArgs._set_default_args_v1`` says "V1 enables prefix caching by default" (0.30–0.33: on
#: whenever ``ModelConfig.is_prefix_caching_supported``). So both values are written explicitly: a
#: plan that charged every prompt token turns it off (docs/deploy.md, "Prefix caching").
PREFIX_CACHING_FLAGS = {True: "--enable-prefix-caching", False: "--no-enable-prefix-caching"}


def vllm_arguments(context: ExportContext, pool: DeployPool, options: ExportOptions) -> list[str]:
    """``vllm serve`` arguments of one pool: the model, then each planned setting as its flag."""
    engine = pool.engine
    args = [
        engine.model_id,
        "--tensor-parallel-size", str(pool.gpus_per_instance),
        "--max-model-len", str(pool.context_tokens),
        "--max-num-seqs", str(pool.slots_per_instance),
        "--max-num-batched-tokens", str(max_num_batched_tokens(pool)),
        "--block-size", str(engine.block_size),
        PREFIX_CACHING_FLAGS[pool.prefix_caching],
    ]  # fmt: skip
    if engine.gpu_memory_utilization is not None:
        args += ["--gpu-memory-utilization", f"{engine.gpu_memory_utilization:g}"]
    if engine.num_gpu_blocks_override is not None:
        args += ["--num-gpu-blocks-override", str(engine.num_gpu_blocks_override)]
    if engine.quantization is not None:
        args += ["--quantization", engine.quantization]
    if engine.kv_cache_dtype is not None:
        args += ["--kv-cache-dtype", engine.kv_cache_dtype]
    if options.writes_histogram_buckets:
        buckets = histogram_buckets(context, pool)
        args += ["--custom-histogram-buckets", json.dumps(buckets, separators=(",", ":"))]
    if options.release.shutdown_timeout:
        args += ["--shutdown-timeout", str(drain_seconds(pool, options))]
    return args


def prefix_caching_comment(context: ExportContext, pool: DeployPool) -> str:
    """Why the pool's vLLM caches prefixes or not, in words (the script's header says it)."""
    caching = context.prefix_caching
    if caching is None:
        return "Prefix caching off (vLLM's default is on): the plan charged every prompt token."
    if not pool.prefix_caching:
        return "Prefix caching off: the plan charged this pool every prompt token (a hit rate of 0)."
    if caching.mode == "hit-rate":
        source = "given, --prefix-caching hit-rate"
    else:
        source = f"simulated from the log's block hashes, {caching.dispatch} dispatch"
        if caching.dispatch == "affinity":
            source += ": route with prefix affinity, router.yaml"
    return (
        f"Prefix caching on: the plan charged {pool.prefix_cache_hit_rate:.1%} of this pool's prompt "
        f"tokens as cache hits ({source})."
    )


def long_context(pool: DeployPool) -> bool:
    """Whether the pool's --max-model-len is beyond the model's trained context."""
    limit = pool.engine.max_context_tokens
    return limit is not None and pool.context_tokens > limit


#: vLLM's switch that lets --max-model-len exceed the model's own context (vllm/envs.py).
LONG_CONTEXT_ENV = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"


def pool_notes(context: ExportContext, pool: DeployPool) -> list[str]:
    """What the operator of a pool should know that its flags cannot say (profile and vLLM limits)."""
    notes = list(pool.engine.notes)
    if pool.engine.max_num_batched_tokens < pool.slots_per_instance:
        notes.append(
            f"--max-num-batched-tokens is raised from the profile's "
            f"{pool.engine.max_num_batched_tokens:,} to max_num_seqs = {pool.slots_per_instance:,}, the "
            f"least vLLM accepts; the plan's iteration times assumed {pool.engine.max_num_batched_tokens:,}"
        )
    if long_context(pool):
        notes.append(
            f"--max-model-len {pool.context_tokens:,} is beyond the model's "
            f"{pool.engine.max_context_tokens:,} tokens (--allow-long-context): {LONG_CONTEXT_ENV}=1 is "
            "set, and the model runs past what it was trained on"
        )
    if pool.instances == 0:
        notes.append("this pool receives no traffic in the plan: 0 instances")
    return notes


def _served_by(context: ExportContext, index: int) -> str:
    """Which requests a pool serves, in words (router.yaml states the same rule as data)."""
    bounds = context.routing.boundaries_tokens
    if not bounds:
        return "every request (one pool)"
    if index == len(bounds):
        return f"prompt + max_tokens > {bounds[-1]:,}, and requests without max_tokens"
    text = f"prompt + max_tokens ≤ {bounds[index]:,}"
    if index > 0:
        text = f"{bounds[index - 1]:,} < {text}"
    band = context.routing.band_top_tokens
    if index == 0 and band is not None and band > bounds[0] and context.routing.compressibility > 0:
        text += f", and compressed prompts up to {band:,} (C&R)"
    return text


def pod_selector(pool: DeployPool, options: ExportOptions) -> str:
    """The PromQL label matchers of the pool's pods: the ``namespace`` and ``pod`` labels a
    PodMonitor (``--to monitoring``) sets, a pod being named ``<Deployment>-<ReplicaSet hash>-<id>``
    (so pool ``pool-1`` does not match ``pool-10``'s pods). KEDA, the alerts and the dashboard use it."""
    selector = f'pod=~"{pool.resource}-[a-z0-9]+-[a-z0-9]+"'
    if options.namespace is not None:
        selector = f'namespace="{options.namespace}",{selector}'
    return selector


def prometheus_le(value: float) -> str:
    """A bucket edge as the ``le`` label vLLM's Prometheus client writes it (Python's float repr,
    ``floatToGoString`` of prometheus_client: 0.5 → "0.5", 1 → "1.0")."""
    return repr(float(value))


def ttft_slo_edge(context: ExportContext, options: ExportOptions) -> float:
    """The TTFT histogram edge the alerts count within: the SLO itself when it is an edge (vLLM's
    default edges, or the SLO added by ``--custom-histogram-buckets``), else the next edge above it
    (the alert then fires only once P99 TTFT is past that edge)."""
    slo = context.ttft_slo_s
    if options.writes_histogram_buckets or slo in VLLM_TTFT_BUCKETS_S:
        return slo
    return min((b for b in VLLM_TTFT_BUCKETS_S if b > slo), default=math.inf)


def _metrics_comment(context: ExportContext, pool: DeployPool, options: ExportOptions) -> list[str]:
    slo = context.ttft_slo_s
    selector = pod_selector(pool, options)
    lines = [
        f"Prometheus (vLLM's /metrics on port {VLLM_PORT}): this pool's requests are exactly",
        f"  sum(rate(vllm:request_success_total{{{selector}}}[5m]))",
    ]
    edge = ttft_slo_edge(context, options)
    if edge == slo:
        lines += [
            f"and those within the {slo * 1e3:g} ms TTFT SLO exactly",
            "  sum(rate(vllm:time_to_first_token_seconds_bucket"
            f'{{{selector},le="{prometheus_le(slo)}"}}[5m]))',
        ]
    else:
        below = max((b for b in VLLM_TTFT_BUCKETS_S if b < slo), default=0.0)
        lines += [
            f"vLLM {options.release.series}'s TTFT histogram has no edge at the {slo * 1e3:g} ms SLO (its "
            "--custom-histogram-buckets is in 0.32 and later): the count within it lies",
            f'between its buckets le="{prometheus_le(below)}" and '
            f'le="{"+Inf" if math.isinf(edge) else prometheus_le(edge)}" (vllm:time_to_first_token_seconds).',
        ]
    if pool.prefix_caching:
        lines += [
            f"and the share of prompt tokens found in the prefix cache (the plan charged "
            f"{pool.prefix_cache_hit_rate:.1%})",
            f"  sum(rate(vllm:prefix_cache_hits_total{{{selector}}}[5m]))"
            f" / sum(rate(vllm:prefix_cache_queries_total{{{selector}}}[5m]))",
        ]
    return lines


def vllm_script(context: ExportContext, pool: DeployPool, options: ExportOptions) -> str:
    """A shell script that starts one instance of ``pool`` (run it on each of its instances)."""
    index = [p.name for p in context.pools].index(pool.name)
    command = ["vllm", "serve", *vllm_arguments(context, pool, options)]
    comments = [
        f"fleetopt {__version__} export --to vllm: {pool.name} pool of {context.plan_label}",
        f"{pool.instances:,} instances × {pool.gpus_per_instance} GPUs ({pool.gpu}); run this on each.",
        f"Serving profile {pool.serving_profile}.",
        f"It serves {_served_by(context, index)} (router.yaml).",
        prefix_caching_comment(context, pool),
        f"Flags of vLLM {options.release.series} (--vllm-version; checked against its "
        "vllm/engine/arg_utils.py, docs/deploy.md).",
        f"At start-up vLLM logs 'Maximum concurrency for {pool.context_tokens:,} tokens per request: Nx':",
        f"N must be at least max_num_seqs = {pool.slots_per_instance:,} (the plan assumed "
        f"{pool.engine.kv_capacity_tokens:,} KV tokens per instance).",
    ]
    comments += [f"note: {note}" for note in pool_notes(context, pool)]
    comments += _metrics_comment(context, pool, options)
    env = f"export {LONG_CONTEXT_ENV}=1\n" if long_context(pool) else ""
    return "#!/bin/sh\n" + comment_lines(comments) + env + _shell_command(command) + "\n"


def comment_lines(lines: Sequence[str]) -> str:
    """``# line`` for each line, for a shell script or a YAML file: every character that could end
    the comment (a line break — ``\\n``, ``\\r``, U+2028, U+2029, NEL — or any other control
    character) is written escaped (fleetopt.errors.printable), so text from a file name or a plan
    field stays inside its comment."""
    return "".join(f"# {printable(line)}\n" for line in lines)


def _shell_command(words: Sequence[str]) -> str:
    """``words`` as one shell command, a flag and its value per line, every word through
    ``shlex.quote`` (so the shell reads back exactly ``words``)."""
    first, rest = shlex.join(words[:3]), list(words[3:])
    lines = [first]
    while rest:
        flag = rest.pop(0)
        value = rest.pop(0) if rest and not rest[0].startswith("--") else None
        lines.append(f"  {shlex.quote(flag)}" + ("" if value is None else f" {shlex.quote(value)}"))
    return " \\\n".join(lines)


# ---------------------------------------------------------------------------------------- router


def pool_endpoint(pool: DeployPool, options: ExportOptions) -> str:
    """The pool's Service address inside the cluster."""
    host = pool.resource if options.namespace is None else f"{pool.resource}.{options.namespace}.svc"
    return f"http://{host}:{VLLM_PORT}"


def router_document(context: ExportContext, options: ExportOptions) -> dict[str, Any]:
    """The router configuration (kind fleetopt-router, schema_version 1; format in docs/deploy.md)."""
    routing = context.routing
    model_ids = sorted({pool.engine.model_id for pool in context.pools})
    document: dict[str, Any] = {
        "kind": ROUTER_KIND,
        "schema_version": ROUTER_SCHEMA_VERSION,
        "fleetopt_version": __version__,
        "plan": {"file": context.plan_label, "workload_sha256": context.workload_sha256},
        "model": model_ids[0] if len(model_ids) == 1 else None,
        "budget": {
            "tokens": "prompt_tokens + max_tokens",
            "prompt_tokens": "the prompt's length in the model's tokens, chat template applied",
            "without_max_tokens": WITHOUT_MAX_TOKENS,
        },
        "pools": [
            {
                "name": pool.name,
                "max_budget_tokens": pool.context_tokens,
                "endpoint": pool_endpoint(pool, options),
                "model": pool.engine.model_id,
                "instances": pool.instances,
            }
            for pool in context.pools
        ],
        "longer_than_every_pool": "reject",
    }
    if context.dispatch is not None:
        from fleetopt.core.prefix import DEFAULT_LOAD_BOUND
        from fleetopt.render.words import dispatch_router_setting

        hit_rates = {
            p.name: p.prefix_cache_hit_rate for p in context.pools if p.prefix_cache_hit_rate is not None
        }
        document["dispatch"] = dispatch_router_setting(
            context.dispatch, context.prefix_caching, hit_rates, DEFAULT_LOAD_BOUND
        )
    band_top = routing.band_top_tokens
    if routing.compresses:
        first = routing.boundaries_tokens[0]
        document["compress_and_route"] = {
            "pool": context.pools[0].name,
            "above_budget_tokens": first,
            "up_to_budget_tokens": band_top,
            "gamma": routing.gamma,
            "compressibility": routing.compressibility,
            "max_cut_fraction": routing.max_cut_fraction,
            "only_if_max_tokens_below": first,
            "compress_prompt_to_tokens": f"{first} - max_tokens",
        }
    return document


_ROUTER_HEADER = """\
# fleetopt router configuration: which pool serves each request (docs/deploy.md#the-router-file).
# For each request, with L = prompt_tokens + max_tokens:
#   1. no max_tokens: the last pool (the only one whose context holds any output);
#   2. compress_and_route: if above_budget_tokens < L <= up_to_budget_tokens and
#      max_tokens < only_if_max_tokens_below and L - above_budget_tokens <= max_cut_fraction
#      × prompt_tokens, then with probability `compressibility` compress the prompt to
#      above_budget_tokens - max_tokens tokens and send it to `pool`;
#   3. otherwise the first pool (in order) with L <= max_budget_tokens;
#   4. longer than every pool: reject (no instance can hold it);
#   5. within the pool, the instance `dispatch.policy` picks (what the plan was sized for;
#      prefix-affinity: what its prefix-cache hit rates assumed).
# Each pool's max_budget_tokens is its vLLM --max-model-len, so every routed request fits.
"""


def _yaml(document: Mapping[str, Any]) -> str:
    """Block-style YAML from PyYAML's serializer, without anchors or aliases (manifests repeat equal
    probes on purpose), any string that is not all printable double-quoted with escapes
    (:func:`fleetopt.io.yamlio.dump_yaml`)."""
    from fleetopt.io.yamlio import dump_yaml

    return dump_yaml(dict(document))


def router_yaml(context: ExportContext, options: ExportOptions) -> str:
    return _ROUTER_HEADER + _yaml(router_document(context, options))


# ------------------------------------------------------------------------------------ Kubernetes


def _labels(pool: DeployPool, options: ExportOptions) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "vllm",
        "app.kubernetes.io/instance": pool.resource,
        "app.kubernetes.io/component": pool.name,
        "app.kubernetes.io/part-of": options.name_prefix,
    }


def _metadata(pool: DeployPool, options: ExportOptions, annotations: dict[str, str] | None = None) -> dict:
    metadata: dict[str, Any] = {"name": pool.resource, "labels": _labels(pool, options)}
    if options.namespace is not None:
        metadata["namespace"] = options.namespace
    if annotations:
        metadata["annotations"] = annotations
    return metadata


#: Kubernetes extended resource of a GPU, by vendor (device plugins' resource names).
def gpu_resource(gpu: str) -> str:
    return "amd.com/gpu" if gpu.lower().startswith("mi") else "nvidia.com/gpu"


#: The node label that names each bundled GPU profile's product, and its value: NVIDIA GPU Feature
#: Discovery's ``nvidia.com/gpu.product`` (nvidia-smi's product name, spaces as '-'; the SXM parts'
#: names), AMD's GPU operator node labeller's ``amd.com/gpu.product-name``. Check them against
#: ``kubectl get nodes -L nvidia.com/gpu.product``; ``--node-selector`` replaces them.
GPU_PRODUCT_LABELS = {
    "a100-80gb": ("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"),
    "a10g": ("nvidia.com/gpu.product", "NVIDIA-A10G"),
    "b200": ("nvidia.com/gpu.product", "NVIDIA-B200"),
    "h100-80gb": ("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"),
    "h200": ("nvidia.com/gpu.product", "NVIDIA-H200"),
    "l40s": ("nvidia.com/gpu.product", "NVIDIA-L40S"),
    "mi300x": ("amd.com/gpu.product-name", "AMD_Instinct_MI300X"),
}
#: Where the vLLM image keeps the Hugging Face cache (HF_HOME), mounted from the weight cache.
HF_HOME = "/root/.cache/huggingface"
#: Start-up budget of an instance: the engine's own start (CUDA graphs, compilation, KV allocation)
#: plus reading the checkpoint at a cold cache's download rate.
ENGINE_START_S = 300.0
COLD_DOWNLOAD_BYTES_PER_S = 100e6
#: Seconds between a pod's removal from its Service's endpoints and kube-proxy/the gateway knowing:
#: the preStop hook sleeps this long before vLLM is told to stop.
ENDPOINT_PROPAGATION_S = 15
#: The default drain (a pool's longest stream at the plan's TPOT) is capped here; --drain-seconds.
MAX_DEFAULT_DRAIN_S = 600
#: Drain when the plan does not give the pool's TPOT.
FALLBACK_DRAIN_S = 300
#: Head-room of the weight cache over the checkpoints it holds (tokenizer, config, a second revision).
CACHE_SIZE_FACTOR = 1.25


def drain_seconds(pool: DeployPool, options: ExportOptions) -> int:
    """Seconds a stopping instance gets to finish its running streams: ``--drain-seconds``, else
    the pool's longest stream (its context in output tokens at the plan's TPOT) up to
    :data:`MAX_DEFAULT_DRAIN_S`."""
    if options.drain_s is not None:
        return options.drain_s
    if pool.iteration_s is None:
        return FALLBACK_DRAIN_S
    return min(MAX_DEFAULT_DRAIN_S, math.ceil(pool.context_tokens * pool.iteration_s))


def startup_seconds(pool: DeployPool) -> float:
    """The start-up the startup probe allows: :data:`ENGINE_START_S` plus the checkpoint at
    :data:`COLD_DOWNLOAD_BYTES_PER_S`."""
    return ENGINE_START_S + (pool.engine.checkpoint_bytes or 0.0) / COLD_DOWNLOAD_BYTES_PER_S


@dataclass(frozen=True)
class Rollout:
    """A pool's rolling update: instances started above and stopped below ``replicas`` at once."""

    max_surge: int
    max_unavailable: int
    surge_gpus: int


def rollout(pool: DeployPool, options: ExportOptions) -> Rollout:
    """The surge the GPU budget allows (``--surge-gpus``, default one instance's GPUs), and as many
    instances down at once as the plan has spares (at least one when nothing may surge)."""
    budget = pool.gpus_per_instance if options.surge_gpus is None else options.surge_gpus
    surge = budget // pool.gpus_per_instance
    unavailable = max(pool.spare_instances, 0 if surge else 1)
    return Rollout(surge, unavailable, surge * pool.gpus_per_instance)


def _gpu_scheduling(pool: DeployPool, options: ExportOptions) -> dict[str, Any]:
    """nodeSelector, tolerations and topology spread of a pool's pods."""
    spec: dict[str, Any] = {}
    if options.node_selector is None:
        if pool.gpu in GPU_PRODUCT_LABELS:
            key, value = GPU_PRODUCT_LABELS[pool.gpu]
            spec["nodeSelector"] = {key: value}
    elif options.node_selector:
        spec["nodeSelector"] = dict(options.node_selector)
    tolerations = options.tolerations
    if tolerations is None:
        tolerations = ((gpu_resource(pool.gpu), None, "NoSchedule"),)
    spec["tolerations"] = [
        {"key": key, "operator": "Exists", "effect": effect}
        if value is None
        else {"key": key, "operator": "Equal", "value": value, "effect": effect}
        for key, value, effect in tolerations
    ]
    selector = {"matchLabels": {"app.kubernetes.io/instance": pool.resource}}
    spec["topologySpreadConstraints"] = [
        {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": selector}
        for key in ("topology.kubernetes.io/zone", "kubernetes.io/hostname")
    ]
    return spec


def cache_claim_name(options: ExportOptions) -> str:
    return f"{options.name_prefix}-model-cache"


def _weights(context: ExportContext, pool: DeployPool, options: ExportOptions):
    """The weight cache's volume, the mount and environment of the containers, and the init container
    that pre-pulls the checkpoint (None unless ``prefetch_weights``)."""
    env = [{"name": "HF_HOME", "value": HF_HOME}]
    if options.hf_token_secret is not None:
        env.append(
            {
                "name": "HF_TOKEN",
                "valueFrom": {"secretKeyRef": {"name": options.hf_token_secret, "key": "token"}},
            }
        )
    if options.weight_cache == "none":
        return None, [], env, None
    if options.weight_cache == "pvc":
        volume = {"name": "model-cache", "persistentVolumeClaim": {"claimName": cache_claim_name(options)}}
    else:
        volume = {
            "name": "model-cache",
            "hostPath": {"path": options.weight_cache, "type": "DirectoryOrCreate"},
        }
    mounts = [{"name": "model-cache", "mountPath": HF_HOME}]
    init = None
    if options.prefetch_weights:
        init = {
            "name": "prefetch-weights",
            "image": options.image,
            # the model id is an argument of the script, never part of its text
            "command": ["python3", "-c", "import sys\nfrom huggingface_hub import snapshot_download\n"
                        "snapshot_download(sys.argv[1])\n", pool.engine.model_id],
            "env": env,
            "volumeMounts": mounts,
        }  # fmt: skip
    return volume, mounts, env, init


def deployment(context: ExportContext, pool: DeployPool, options: ExportOptions) -> dict[str, Any]:
    """An apps/v1 Deployment running ``pool.instances`` vLLM servers of ``pool``: GPUs and placement,
    the weight cache, probes sized for the model's load, a rollout that surges at most the GPUs
    allowed, and a drain that lets running streams finish before the pod stops."""
    health = {"httpGet": {"path": "/health", "port": "http"}}
    volume, mounts, env, init = _weights(context, pool, options)
    if long_context(pool):
        env.append({"name": LONG_CONTEXT_ENV, "value": "1"})
    drain = drain_seconds(pool, options)
    container: dict[str, Any] = {
        "name": "vllm",
        "image": options.image,
        "command": ["vllm", "serve"],
        "args": vllm_arguments(context, pool, options),
        "ports": [{"name": "http", "containerPort": VLLM_PORT, "protocol": "TCP"}],
        "env": env,
        "resources": {
            "limits": {gpu_resource(pool.gpu): pool.gpus_per_instance},
            "requests": {gpu_resource(pool.gpu): pool.gpus_per_instance},
        },
        # the liveness check starts once the model is loaded: start-up may take startup_seconds()
        "startupProbe": {
            **health,
            "periodSeconds": 10,
            "failureThreshold": math.ceil(startup_seconds(pool) / 10),
        },  # fmt: skip
        "readinessProbe": {**health, "periodSeconds": 5, "failureThreshold": 3},
        "livenessProbe": {**health, "periodSeconds": 30, "failureThreshold": 3},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}, *mounts],
    }
    # Stopping: the pod leaves its Service's endpoints; preStop waits until no new request can
    # arrive; vLLM then drains (0.30 and later: --shutdown-timeout) or, before 0.30, the preStop
    # hook itself waits out the drain, since such a vLLM aborts running requests on SIGTERM.
    pre_stop = ENDPOINT_PROPAGATION_S + (0 if options.release.shutdown_timeout else drain)
    container["lifecycle"] = {"preStop": {"exec": {"command": ["sleep", str(pre_stop)]}}}
    plan = rollout(pool, options)
    annotations = {
        "fleetopt/pool": pool.name,
        "fleetopt/planned-instances": str(pool.instances),
        "fleetopt/spare-instances": str(pool.spare_instances),
        "fleetopt/rollout-surge-gpus": str(plan.surge_gpus),
        "fleetopt/serving-profile": pool.serving_profile,
        "fleetopt/plan": context.plan_label,
        "fleetopt/vllm-version": options.vllm_version,
        "fleetopt/version": __version__,
    }
    selector = {"app.kubernetes.io/instance": pool.resource}
    # NCCL between the tensor-parallel workers needs shared memory beyond Docker's 64 MB.
    volumes: list[dict[str, Any]] = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}]
    if volume is not None:
        volumes.append(volume)
    pod_spec: dict[str, Any] = {
        **_gpu_scheduling(pool, options),
        "terminationGracePeriodSeconds": pre_stop + drain + ENDPOINT_PROPAGATION_S,
        "containers": [container],
        "volumes": volumes,
    }
    if init is not None:
        pod_spec["initContainers"] = [init]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(pool, options, annotations),
        "spec": {
            "replicas": pool.instances,
            "selector": {"matchLabels": selector},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": plan.max_surge, "maxUnavailable": plan.max_unavailable},
            },
            # a new instance counts as available once it has served its readiness for a minute
            "minReadySeconds": 60,
            "template": {"metadata": {"labels": _labels(pool, options)}, "spec": pod_spec},
        },
    }


def service(pool: DeployPool, options: ExportOptions) -> dict[str, Any]:
    """A v1 Service in front of the pool's vLLM servers (the router's endpoint)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(pool, options),
        "spec": {
            "selector": {"app.kubernetes.io/instance": pool.resource},
            "ports": [{"name": "http", "port": VLLM_PORT, "targetPort": "http", "protocol": "TCP"}],
        },
    }


def disruption_budget(pool: DeployPool, options: ExportOptions) -> dict[str, Any]:
    """A policy/v1 PodDisruptionBudget: node drains and upgrades take down as many instances at
    once as the rollout may (the plan's spares, at least one)."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": _metadata(pool, options),
        "spec": {
            "maxUnavailable": max(1, pool.spare_instances),
            "selector": {"matchLabels": {"app.kubernetes.io/instance": pool.resource}},
        },
    }


def cache_size_gib(context: ExportContext) -> int:
    """The weight cache's size: every distinct checkpoint the pools serve, × :data:`CACHE_SIZE_FACTOR`."""
    checkpoints = {p.engine.model_id: p.engine.checkpoint_bytes or 0.0 for p in context.pools}
    return max(1, math.ceil(CACHE_SIZE_FACTOR * sum(checkpoints.values()) / 2**30))


def cache_claim(context: ExportContext, options: ExportOptions) -> dict[str, Any]:
    """The v1 PersistentVolumeClaim every pod mounts as its Hugging Face cache: ReadWriteMany, so the
    checkpoint is downloaded once for the fleet, not once per pod."""
    metadata: dict[str, Any] = {
        "name": cache_claim_name(options),
        "labels": {"app.kubernetes.io/part-of": options.name_prefix},
    }
    if options.namespace is not None:
        metadata["namespace"] = options.namespace
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteMany"],
        "resources": {"requests": {"storage": f"{cache_size_gib(context)}Gi"}},
    }
    if options.storage_class is not None:
        spec["storageClassName"] = options.storage_class
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": metadata, "spec": spec}


def kubernetes_manifests(context: ExportContext, options: ExportOptions) -> list[dict[str, Any]]:
    """The weight cache's claim (with ``weight_cache`` "pvc"), then per pool, shortest first, its
    Deployment, Service and PodDisruptionBudget."""
    manifests = [cache_claim(context, options)] if options.weight_cache == "pvc" else []
    for pool in context.pools:
        manifests += [deployment(context, pool, options), service(pool, options)]
        manifests.append(disruption_budget(pool, options))
    return manifests


# ------------------------------------------------------------------------------------------ KEDA


@dataclass(frozen=True)
class FloorWindow:
    """A stretch of the period with one floor: offsets from the schedule's origin, seconds."""

    start_s: float
    end_s: float
    instances: int


def floor_windows(schedule: PlanSchedule, pool: str) -> list[FloorWindow]:
    """The schedule's windows for ``pool``, consecutive windows of equal instances merged (across
    the end of the period too). Raises ValueError when the windows do not tile the period."""
    windows = sorted(schedule.windows, key=lambda w: w.start_s)
    position = 0.0
    for window in windows:
        if not math.isclose(window.start_s, position, abs_tol=1e-6):
            raise ValueError(
                f"the schedule's windows leave {position:g}–{window.start_s:g} s of the period uncovered"
            )
        position = window.end_s
    if not math.isclose(position, schedule.period_s, abs_tol=1e-6):
        raise ValueError(
            f"the schedule's windows end at {position:g} s, not at the period {schedule.period_s:g} s"
        )
    merged: list[FloorWindow] = []
    for window in windows:
        count = window.instances[pool]
        if merged and merged[-1].instances == count:
            merged[-1] = FloorWindow(merged[-1].start_s, window.end_s, count)
        else:
            merged.append(FloorWindow(window.start_s, window.end_s, count))
    if len(merged) > 1 and merged[0].instances == merged[-1].instances:  # wrap across the period's end
        last = merged.pop()
        merged[0] = FloorWindow(last.start_s, merged[0].end_s + schedule.period_s, last.instances)
    return merged


def _cron(moment: datetime.datetime, weekly: bool) -> str:
    """A five-field cron expression firing at ``moment``'s minute each day (or each week)."""
    day = str(moment.isoweekday() % 7) if weekly else "*"  # cron weekdays: 0 = Sunday
    return f"{moment.minute} {moment.hour} * * {day}"


def cron_triggers(schedule: PlanSchedule, pool: str, floor: int) -> list[dict[str, Any]]:
    """KEDA cron triggers that hold ``pool`` at each window's planned instances (UTC; a window's
    start rounded down and its end up to the minute, so the floor covers the whole window)."""
    weekly = math.isclose(schedule.period_s, _WEEK_S)
    origin = schedule.origin_utc
    assert origin is not None
    triggers = []
    for window in floor_windows(schedule, pool):
        if window.instances <= floor:
            continue
        start = origin + datetime.timedelta(seconds=_MINUTE_S * math.floor(window.start_s / _MINUTE_S))
        end = origin + datetime.timedelta(seconds=_MINUTE_S * math.ceil(window.end_s / _MINUTE_S))
        if end - start >= datetime.timedelta(seconds=schedule.period_s):
            continue  # the whole period: that is the floor itself
        label = start.strftime("%a-%H%M" if weekly else "%H%M").lower()
        triggers.append(
            {
                "type": "cron",
                "name": f"planned-from-{label}",
                "metadata": {
                    "timezone": "Etc/UTC",
                    "start": _cron(start, weekly),
                    "end": _cron(end, weekly),
                    "desiredReplicas": str(window.instances),
                },
            }
        )
    return triggers


def waiting_threshold(context: ExportContext, pool: DeployPool) -> int:
    """Requests waiting per instance above which KEDA adds instances: the queue at which a newly
    arrived request's wait uses up the SLO headroom left after its prefill and first token.

    A request behind q waiting ones starts after q + 1 of the instance's ``slots`` free up, about
    (q + 1)·E[S]/slots on average; it keeps the SLO while that is within SLO − (P99 TTFT − P99 wait).
    """
    needed = (pool.mean_service_s, pool.p99_ttft_s, pool.p99_wait_s)
    if any(value is None or not math.isfinite(value) for value in needed) or not pool.mean_service_s:
        return 1
    headroom_s = context.ttft_slo_s - (pool.p99_ttft_s - pool.p99_wait_s)  # type: ignore[operator]
    return max(1, math.floor(headroom_s * pool.slots_per_instance / pool.mean_service_s - 1))


def scaled_object(context: ExportContext, pool: DeployPool, options: ExportOptions) -> tuple[dict, list[str]]:
    """A KEDA ScaledObject for ``pool``: the schedule's windows as cron floors, and a
    ``vllm:num_requests_waiting`` trigger that adds instances in bursts, up to the planned
    instances plus ``burst_headroom``. Returns it with notes on what was assumed."""
    notes: list[str] = []
    schedule = context.schedule
    static = pool.instances
    cap = max(1, math.ceil(static * (1 + options.burst_headroom) - 1e-9))
    triggers: list[dict[str, Any]] = []
    usable = (
        schedule is not None
        and schedule.periodic
        and schedule.origin_utc is not None
        and (math.isclose(schedule.period_s, _DAY_S) or math.isclose(schedule.period_s, _WEEK_S))
    )
    if usable:
        assert schedule is not None
        floor = max(1, min(w.instances for w in floor_windows(schedule, pool.name)))
        triggers += cron_triggers(schedule, pool.name, floor)
    else:
        floor = max(1, static)
        if schedule is None:
            notes.append(
                f"{pool.name}: the plan has no time-of-day schedule (fleetopt plan --schedule), so the floor "
                f"is the planned {static:,} instances at all hours"
            )
        else:
            notes.append(
                f"{pool.name}: the plan's schedule is not a daily or weekly cycle with a wall-clock origin, "
                f"so the floor is the planned {static:,} instances at all hours"
            )
    selector = pod_selector(pool, options)
    # AverageValue: the HPA wants ceil(Σ waiting / threshold) instances, i.e. it adds instances once
    # more than `threshold` requests wait per running instance (beyond its 10% tolerance).
    triggers.append(
        {
            "type": "prometheus",
            "name": "requests-waiting",
            "metricType": "AverageValue",
            "metadata": {
                "serverAddress": options.prometheus_url,
                "query": f"sum(vllm:num_requests_waiting{{{selector}}})",
                "threshold": str(waiting_threshold(context, pool)),
            },
        }
    )
    manifest = {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": _metadata(pool, options, {"fleetopt/plan": context.plan_label}),
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": pool.resource},
            "minReplicaCount": floor,
            "maxReplicaCount": max(cap, floor),
            "pollingInterval": 15,
            "cooldownPeriod": 300,
            "advanced": {
                "horizontalPodAutoscalerConfig": {
                    # an instance takes minutes to load its model: do not give one back for 10 minutes
                    "behavior": {"scaleDown": {"stabilizationWindowSeconds": 600}}
                }
            },
            "triggers": triggers,
        },
    }
    return manifest, notes


def keda_manifests(context: ExportContext, options: ExportOptions) -> tuple[list[dict[str, Any]], list[str]]:
    """One ScaledObject per pool that serves traffic, with the notes on their floors."""
    manifests, notes = [], []
    for pool in context.pools:
        if pool.instances == 0:
            notes.append(f"{pool.name}: no instances in the plan, so no ScaledObject")
            continue
        manifest, pool_notes = scaled_object(context, pool, options)
        manifests.append(manifest)
        notes += pool_notes
    return manifests, notes


def manifests_yaml(manifests: Sequence[Mapping[str, Any]], header: Sequence[str]) -> str:
    """Kubernetes manifests as one multi-document YAML stream, after a comment header."""
    documents = [_yaml(m) for m in manifests]
    return comment_lines(header) + "---\n" + "---\n".join(documents)


# -------------------------------------------------------------------------------------- markdown


def plan_markdown(document: Mapping[str, Any], plan_label: str | None = None) -> str:
    """A one-page summary of a plan for a design review or a pull request. Every string that comes
    from the plan (the workload's path, profile names, notes, a hand-edited field) goes through
    :func:`fleetopt.render.markdown.md_text` (one line, markdown and HTML escaped); the export
    command through :func:`md_code` with the plan's path shell-quoted."""
    from fleetopt.io.units import fmt_num, fmt_pct, fmt_seconds, fmt_usd
    from fleetopt.render.markdown import md_bullets, md_code, md_table, md_text

    inputs, best, savings = document["inputs"], document["best"], document["savings"]
    slo = fmt_seconds(inputs["ttft_slo_s"])
    lines = [
        f"### fleetopt plan — {md_text(inputs['workload'])} at {fmt_num(inputs['arrival_rate_per_s'])} "
        f"req/s, P99 TTFT ≤ {slo}",
        "",
    ]
    if best is None:
        return "\n".join(lines + ["**No fleet meets the SLO and the utilization cap.**", ""])
    short = inputs["profiles"]["short"]
    bounds = (best.get("routing") or {}).get("boundaries_tokens") or []
    if not bounds:
        shape = "one homogeneous pool"
    else:
        shape = f"boundaries {' / '.join(f'{b:,}' for b in bounds)}, γ = {best['gamma']:g}"
    lines += [
        f"**{best['total_gpus']:,} GPUs** in {best['total_instances']:,} instances, "
        f"**{fmt_usd(best['cost_per_year_usd'])}/year** ({shape}): "
        f"{fmt_pct(savings['vs_homogeneous'])} below the homogeneous fleet, "
        f"{fmt_pct(savings['vs_pool_routing'])} below pool routing. "
        f"Service model {md_text(inputs['service_model'])}, serving profile {md_text(short['serving_name'])} "
        f"(TP {short['gpus_per_instance']}, ${short['gpu_hour_usd']:g}/GPU-hour), utilization cap "
        f"{inputs['max_utilization']:.0%}.",
        "",
    ]
    if inputs.get("rate_basis"):
        from fleetopt.render.words import basis_sentence

        lines += [f"Rate: {md_text(basis_sentence(inputs['rate_basis']))}.", ""]
    if best.get("routing"):
        lines += [f"Routing: {md_text(best['routing']['rule'])}.", ""]
    if document.get("compression"):
        lines += [f"**{md_text(document['compression']['message'])}**", ""]
    headers = ("pool", "instances × GPUs", "max_model_len", "max_num_seqs", "req/s", "utilization",
               "P99 TTFT", "TTFT headroom", "TPOT", "set by")  # fmt: skip
    rows = []
    for name, pool in best["pools"].items():
        headroom = pool.get("ttft_headroom_s")
        rows.append(
            (
                name,
                f"{pool['instances']:,} × {pool['gpus_per_instance']}",
                f"{pool['context_tokens']:,}",
                f"{pool['slots_per_instance']:,}",
                fmt_num(pool["arrival_rate_per_s"]),
                fmt_pct(pool["utilization"]) if pool["instances"] else "–",
                fmt_seconds(pool["p99_ttft_s"]) if pool["instances"] else "–",
                "–"
                if headroom is None
                else f"{fmt_seconds(headroom)} ({fmt_pct(pool['ttft_headroom_fraction'])})",
                fmt_seconds(pool["iteration_s"]) if pool["instances"] else "–",
                md_text(pool["binding_constraint"]),
            )
        )
    lines += md_table(headers, rows, align="lrrrrrrrrl") + [""]
    warnings = document.get("warnings") or []
    if warnings:
        lines += ["**Headroom warnings**", ""] + md_bullets(md_text(w["message"]) for w in warnings) + [""]
    baselines = document["baselines"]
    rows = []
    for label, fleet in (
        ("homogeneous", baselines["homogeneous"]),
        ("pool routing (γ = 1)", baselines["pool_routing"]),
        ("PR + C&R retrofit", baselines["retrofit"]),
        ("fleetopt (best)", best),
    ):
        if fleet is None:
            continue
        rows.append(
            (
                label,
                fmt_num(fleet["total_gpus"]) if fleet["feasible"] else "✗",
                fmt_usd(fleet["cost_per_year_usd"]) if fleet["feasible"] else f"✗ {md_text(fleet['reason'])}",
            )
        )
    lines += md_table(("fleet", "GPUs", "$/year"), rows) + [""]
    if document["notes"]:
        lines += md_bullets(md_text(note) for note in document["notes"]) + [""]
    command = f"fleetopt export --plan {shlex.quote(plan_label or 'plan.yaml')} --to vllm|router|kubernetes"
    lines.append(
        f"<sub>fleetopt {md_text(document.get('fleetopt_version', __version__))}; deploy with "
        f"{md_code(command)}</sub>"
    )
    return "\n".join(lines) + "\n"
