"""What deploying a plan needs beyond the plan: each pool's vLLM engine settings (from its serving
and model profiles), and the router configuration file format (``fleetopt export --to router``).

The router file is versioned (:data:`ROUTER_SCHEMA_VERSION`, format in docs/deploy.md) and read
back by :func:`read_router`, which checks it field by field and returns the
:class:`~fleetopt.core.routing.Routing` it encodes: the same object the planner sized the pools
for, so a gateway that loads the file routes every request as the plan assumed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fleetopt.core.kv import DTYPE_BYTES
from fleetopt.core.routing import Routing
from fleetopt.core.service import PoolHardware
from fleetopt.errors import NotFoundError, ValidationError, excerpt
from fleetopt.io.documents.router import (  # the file's fields: fleetopt schema router
    ROUTER_KIND,
    ROUTER_SCHEMA_VERSION,
    WITHOUT_MAX_TOKENS,
    RouterDocument,
)
from fleetopt.io.documents.typed import from_document
from fleetopt.io.files import read_text
from fleetopt.io.yamlio import safe_load


@dataclass(frozen=True)
class EngineSettings:
    """The vLLM engine settings of one pool that come from its profiles, not from the sizing.

    Attributes:
        model_id: the checkpoint ``vllm serve`` loads (Hugging Face id).
        quantization: ``--quantization`` (``fp8``: weights quantized at load time), or None.
        kv_cache_dtype: ``--kv-cache-dtype``, or None for vLLM's ``auto`` (the model's dtype).
        gpu_memory_utilization: ``--gpu-memory-utilization`` of a memory-sized KV cache, or None.
        num_gpu_blocks_override: ``--num-gpu-blocks-override`` of a block-sized KV cache (the
            papers' profiles), or None.
        block_size: ``--block-size``, tokens per KV block.
        max_num_batched_tokens: ``--max-num-batched-tokens``, the profile's per-iteration token
            budget (chunked prefill).
        kv_capacity_tokens: the KV cache the plan assumed per instance, tokens.
        max_context_tokens: the model's longest context (``max_position_embeddings``), if known.
        checkpoint_bytes: the checkpoint's size on disk (parameters × the model's weight dtype).
        notes: what the operator should check that the flags cannot say.
    """

    model_id: str
    quantization: str | None
    kv_cache_dtype: str | None
    gpu_memory_utilization: float | None
    num_gpu_blocks_override: int | None
    block_size: int
    max_num_batched_tokens: int
    kv_capacity_tokens: int
    max_context_tokens: int | None = None
    notes: tuple[str, ...] = ()
    checkpoint_bytes: float | None = None


#: fleetopt's KV dtypes that vLLM's --kv-cache-dtype names (vllm/config/cache.py ``CacheDType``);
#: the 16-bit ones are vLLM's ``auto`` for a 16-bit checkpoint.
_VLLM_KV_DTYPES = {"fp8": "fp8", "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2"}


def engine_settings(
    hardware: PoolHardware, dirs: Sequence[Path], *, model_id: str | None = None, source: str = "plan"
) -> EngineSettings:
    """The vLLM settings of a planned pool from the serving profile the plan names.

    The profile must still describe the instance the plan sized (tensor parallelism, token budget,
    KV block and capacity); otherwise the plan is stale and must be re-run. ``model_id`` overrides
    the model profile's ``huggingface_id``.
    """
    from fleetopt.io.profiles import resolve_serving, serving_kv_sizing

    try:
        serving, model, gpu = resolve_serving(hardware.serving_name, dirs)
    except NotFoundError as exc:
        raise NotFoundError(
            f"{source}: the plan's serving profile {excerpt(hardware.serving_name)} is not on the profile "
            f"path ({exc}); pass the folder it is in with --profiles-dir"
        ) from None
    for what, in_plan, in_profile in (
        ("model", hardware.model_name, model.name),
        ("GPU", hardware.gpu_name, gpu.name),
    ):
        if in_plan != in_profile:
            raise ValidationError(
                f"{source}: the plan says its {what} is {excerpt(in_plan)}, but serving profile "
                f"{serving.name} ({serving.source_file}) runs {excerpt(in_profile)}: the plan was edited or "
                "the profile changed; re-run fleetopt plan"
            )
    sizing = serving_kv_sizing(serving, model, gpu)
    planned = {
        "tensor parallel size": (hardware.gpus_per_instance, serving.tensor_parallel),
        "token budget per iteration": (hardware.prefill_chunk_tokens, serving.prefill_chunk_tokens),
        "KV block size": (hardware.kv_block_tokens, serving.kv_block_tokens),
        "KV capacity per instance": (hardware.kv_capacity_tokens, sizing.kv_capacity_tokens_per_instance),
    }  # fmt: skip
    for what, (in_plan, in_profile) in planned.items():
        if in_plan != in_profile:
            raise ValidationError(
                f"{source}: serving profile {serving.name} ({serving.source_file}) now gives {what} "
                f"{in_profile:,}, the plan was made with {in_plan:,}: re-run fleetopt plan"
            )
    checkpoint = model_id or model.huggingface_id
    if model_id is not None:
        check_model_id(model_id, "--model-id")
    if checkpoint is None:
        raise ValidationError(
            f"{source}: model profile {model.name} ({model.source_file}) has no huggingface_id; "
            "add one, or give the checkpoint with --model-id"
        )
    notes = []
    quantization = None
    if sizing.weight_dtype != model.weight_dtype:
        if sizing.weight_dtype == "fp8":
            quantization = "fp8"  # vLLM quantizes a 16-bit checkpoint to FP8 as it loads it
        else:
            notes.append(
                f"the plan assumes {sizing.weight_dtype} weights: serve a checkpoint quantized to "
                f"{sizing.weight_dtype} (vLLM reads its quantization from the checkpoint)"
            )
    kv_dtype = None
    if sizing.kv_dtype in _VLLM_KV_DTYPES:
        kv_dtype = _VLLM_KV_DTYPES[sizing.kv_dtype]
    elif sizing.kv_dtype not in ("bf16", "fp16") or sizing.kv_dtype != model.kv_dtype:
        notes.append(
            f"the plan assumes a {sizing.kv_dtype} KV cache, which vLLM's --kv-cache-dtype does not "
            "offer: the KV capacity vLLM reports at start-up will differ from the plan's"
        )
    blocks = serving.kv_capacity_method == "blocks"
    return EngineSettings(
        model_id=checkpoint,
        quantization=quantization,
        kv_cache_dtype=kv_dtype,
        gpu_memory_utilization=None if blocks else serving.gpu_memory_utilization,
        num_gpu_blocks_override=serving.kv_blocks if blocks else None,
        block_size=serving.kv_block_tokens,
        max_num_batched_tokens=serving.prefill_chunk_tokens,
        kv_capacity_tokens=sizing.kv_capacity_tokens_per_instance,
        max_context_tokens=model.max_context_tokens,
        notes=tuple(notes),
        checkpoint_bytes=model.parameter_count_total * DTYPE_BYTES[model.weight_dtype],
    )


#: What ``vllm serve`` loads: a Hugging Face id (organization/name, the model profiles' rule), or a
#: local folder (an absolute path or one starting with ./) of printable characters, no spaces.
_MODEL_ID = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*|\.{0,2}/[^\s\\]+)$")


def check_model_id(value: str, option: str) -> str:
    """``value`` when it is a Hugging Face id or a local path ``vllm serve`` can load, else a
    ValidationError (the id goes into shell scripts, manifests and the router file)."""
    if not (_MODEL_ID.fullmatch(value) and value.isprintable() and len(value) <= 512):
        raise ValidationError(
            f"{option}: {excerpt(value)} is not a model vllm serve loads: a Hugging Face id "
            "organization/name (letters, digits, '.', '_', '-') or a local path starting with / or ./, "
            "without spaces"
        )
    return value


# --------------------------------------------------------------------------------------- router


@dataclass(frozen=True)
class RouterPool:
    """One pool of a router file: requests whose budget is at most ``max_budget_tokens`` (and above
    the previous pool's) go to ``endpoint``."""

    name: str
    max_budget_tokens: int
    endpoint: str | None
    instances: int | None


@dataclass(frozen=True)
class RouterConfig:
    """A router file as read back: its pools in order and the :class:`Routing` they encode."""

    source: str
    model: str | None
    pools: tuple[RouterPool, ...]
    routing: Routing

    def route(self, prompt_tokens: int, max_tokens: int | None, coin: float) -> tuple[str | None, int]:
        """The pool a request goes to and its prompt tokens after C&R (None: longer than every pool).

        ``coin`` is one uniform [0, 1) draw: a request in the C&R band is compressed when coin < p_c
        and its cut is within the file's ``max_cut_fraction``. The rule of docs/deploy.md, step by
        step, from the file's own numbers.
        """
        if max_tokens is None:
            last = self.pools[-1]
            return (last.name if prompt_tokens < last.max_budget_tokens else None), prompt_tokens
        budget = prompt_tokens + max_tokens
        band_top = self.routing.band_top_tokens
        if band_top is not None and len(self.pools) > 1:
            first = self.pools[0].max_budget_tokens
            within_cap = budget - first <= self.routing.max_cut_fraction * prompt_tokens
            if (
                first < budget <= band_top
                and max_tokens < first
                and within_cap
                and coin < self.routing.compressibility
            ):
                return self.pools[0].name, first - max_tokens
        for pool in self.pools:
            if budget <= pool.max_budget_tokens:
                return pool.name, prompt_tokens
        return None, prompt_tokens


def read_router(path: Path) -> RouterConfig:
    """Read and check a router file written by ``fleetopt export --to router``."""
    path = Path(path)
    source = f"router {path}"
    try:
        document = safe_load(read_text(path, "router "))
    except ValidationError:
        raise
    except Exception as exc:  # a YAML syntax error
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValidationError(f"{source}: not valid YAML ({first_line})") from None
    return router_from_document(document, source)


def router_from_document(document: Any, source: str = "router") -> RouterConfig:
    """Check a router document (the mapping of a router file) and return what it encodes."""
    if not isinstance(document, dict) or document.get("kind") != ROUTER_KIND:
        raise ValidationError(f"{source}: not a fleetopt router file (expected kind: {ROUTER_KIND})")
    if document.get("schema_version") != ROUTER_SCHEMA_VERSION:
        raise ValidationError(
            f"{source}: schema_version {excerpt(document.get('schema_version'))} is not supported "
            f"(this fleetopt reads version {ROUTER_SCHEMA_VERSION})"
        )
    from_document(RouterDocument, document, source)  # every field's type, and no unknown one

    def fail(field: str, value: Any, allowed: str) -> None:
        raise ValidationError(f"{source}: {field} = {excerpt(value)} is invalid; expected {allowed}")

    budget = document.get("budget")
    if not isinstance(budget, dict) or budget.get("without_max_tokens") != WITHOUT_MAX_TOKENS:
        fail("budget.without_max_tokens", (budget or {}).get("without_max_tokens"), repr(WITHOUT_MAX_TOKENS))
    raw_pools = document.get("pools")
    if not isinstance(raw_pools, list) or not raw_pools:
        fail("pools", raw_pools, "a non-empty list of pools")
    pools = []
    for k, pool in enumerate(raw_pools):
        if not isinstance(pool, dict):
            fail(f"pools[{k}]", pool, "a mapping with name and max_budget_tokens")
        name, limit = pool.get("name"), pool.get("max_budget_tokens")
        if not isinstance(name, str) or not name:
            fail(f"pools[{k}].name", name, "a pool name")
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            fail(f"pools[{k}].max_budget_tokens", limit, "a whole number of tokens ≥ 1")
        if pools and limit <= pools[-1].max_budget_tokens:
            fail(
                f"pools[{k}].max_budget_tokens",
                limit,
                f"more than pools[{k - 1}]'s {pools[-1].max_budget_tokens}",
            )
        endpoint, instances = pool.get("endpoint"), pool.get("instances")
        pools.append(
            RouterPool(
                name=name,
                max_budget_tokens=limit,
                endpoint=endpoint if isinstance(endpoint, str) else None,
                instances=instances
                if isinstance(instances, int) and not isinstance(instances, bool)
                else None,
            )
        )
    boundaries = tuple(p.max_budget_tokens for p in pools[:-1])
    gamma, compressibility, cut = 1.0, 0.0, Routing().max_cut_fraction  # without a band the cap cuts nothing
    band = document.get("compress_and_route")
    if band is not None:
        if len(pools) < 2 or not isinstance(band, dict):
            fail("compress_and_route", band, "a mapping, in a router of two or more pools")
        first = pools[0]
        checks = {
            "pool": first.name,
            "above_budget_tokens": first.max_budget_tokens,
            "only_if_max_tokens_below": first.max_budget_tokens,
        }
        for key, expected in checks.items():
            if band.get(key) != expected:
                fail(f"compress_and_route.{key}", band.get(key), repr(expected))
        gamma, compressibility = band.get("gamma"), band.get("compressibility")
        cut = band.get("max_cut_fraction", 1.0)
        for key, value in (("gamma", gamma), ("compressibility", compressibility), ("max_cut_fraction", cut)):
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
                fail(f"compress_and_route.{key}", value, "a number")
        top = math.floor(gamma * first.max_budget_tokens)
        if band.get("up_to_budget_tokens") != top:
            fail("compress_and_route.up_to_budget_tokens", band.get("up_to_budget_tokens"),
                 f"⌊gamma × above_budget_tokens⌋ = {top}")  # fmt: skip
    try:
        routing = Routing(boundaries, float(gamma), float(compressibility), float(cut))
    except ValidationError as exc:
        raise ValidationError(f"{source}: {exc}") from None
    model = document.get("model")
    return RouterConfig(
        source=source, model=model if isinstance(model, str) else None, pools=tuple(pools), routing=routing
    )
