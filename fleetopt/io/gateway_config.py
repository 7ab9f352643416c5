"""The gateway plugin's configuration: the plan's routing as the plugin reads it (docs/gateway.md).

``fleetopt export --to litellm`` writes it under ``callback_settings.fleetopt`` of ``litellm.yaml``
(LiteLLM hands that mapping to ``litellm.callback_settings``); :func:`gateway_config` checks it
field by field (unknown keys are errors) and returns the planner's own
:class:`~fleetopt.core.routing.Routing`. No LiteLLM here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fleetopt.core.estimator import CATEGORIES, DEFAULT_BIAS, DEFAULT_DECAY
from fleetopt.core.routing import Routing
from fleetopt.errors import ValidationError

GATEWAY_KIND = "fleetopt-gateway"
GATEWAY_SCHEMA_VERSION = 1
#: A LiteLLM model group name the exporter writes: letters, digits and . _ / : - (no spaces).
MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,199}$")

_TOP = {
    "kind", "schema_version", "model", "pools", "compress_and_route", "estimator", "tokenizer",
    "seed", "metrics_port", "metrics_address", "in_flight_timeout_s", "plan", "shadow_compression",
}  # fmt: skip
_SHADOW = {"gamma", "max_cut_fraction"}
_POOL = {"name", "model_group", "max_budget_tokens", "max_in_flight"}
_BAND = {"gamma", "compressibility", "max_cut_fraction"}
_ESTIMATOR = {"decay", "bias", "cold_start_bytes_per_token", "cold_start_deviation_fraction"}
_TOKENIZER = {"tiktoken", "huggingface_file", "tokens_per_message"}


@dataclass(frozen=True)
class GatewayPool:
    """One pool as the gateway sees it: its LiteLLM model group, context and in-flight limit."""

    name: str
    model_group: str
    max_budget_tokens: int
    max_in_flight: int | None


@dataclass(frozen=True)
class GatewayConfig:
    """Everything the plugin needs (module docstring)."""

    model: str
    pools: tuple[GatewayPool, ...]
    routing: Routing
    decay: float = DEFAULT_DECAY
    bias: float = DEFAULT_BIAS
    cold_start_bytes_per_token: Mapping[str, float] | None = None
    cold_start_deviation_fraction: float | None = None
    tiktoken_encoding: str | None = None
    huggingface_file: str | None = None
    tokens_per_message: int = 0
    seed: int | None = None
    metrics_port: int | None = None
    metrics_address: str = "127.0.0.1"
    in_flight_timeout_s: float = 600.0
    shadow_gamma: float | None = None
    shadow_max_cut_fraction: float = 1.0

    @property
    def context_tokens(self) -> tuple[int, ...]:
        return tuple(p.max_budget_tokens for p in self.pools)


def _fail(source: str, field: str, value: Any, allowed: str) -> ValidationError:
    return ValidationError(f"{source}: {field} = {value!r} is invalid; expected {allowed}")


def _mapping(source: str, field: str, value: Any, allowed_keys: set[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(source, field, value, "a mapping")
    unknown = sorted(set(value) - allowed_keys)
    if unknown:
        raise ValidationError(
            f"{source}: {field}: unknown key {unknown[0]!r}; allowed: {', '.join(sorted(allowed_keys))}"
        )
    return value


def _int(source: str, field: str, value: Any, lo: int, hi: int | None = None) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < lo or (hi is not None and value > hi):
        raise _fail(source, field, value, f"a whole number from {lo}" + (f" to {hi}" if hi else " up"))
    return value


def _number(source: str, field: str, value: Any, lo: float, hi: float) -> float:
    if (
        not isinstance(value, (int, float))
        or isinstance(value, bool)
        or not math.isfinite(value)
        or not lo <= value <= hi
    ):
        raise _fail(source, field, value, f"a number from {lo:g} to {hi:g}")
    return float(value)


def gateway_config(document: Any, source: str = "callback_settings.fleetopt") -> GatewayConfig:
    """Check a gateway configuration mapping and return what it encodes."""
    doc = _mapping(source, "the gateway settings", document, _TOP)
    if doc.get("kind") != GATEWAY_KIND:
        raise _fail(source, "kind", doc.get("kind"), repr(GATEWAY_KIND))
    if doc.get("schema_version") != GATEWAY_SCHEMA_VERSION:
        raise _fail(source, "schema_version", doc.get("schema_version"), str(GATEWAY_SCHEMA_VERSION))
    model = doc.get("model")
    if not isinstance(model, str) or not MODEL_NAME.match(model):
        raise _fail(source, "model", model, "the served model name clients ask for")
    raw_pools = doc.get("pools")
    if not isinstance(raw_pools, list) or not raw_pools:
        raise _fail(source, "pools", raw_pools, "a non-empty list")
    pools: list[GatewayPool] = []
    for k, raw in enumerate(raw_pools):
        field = f"pools[{k}]"
        pool = _mapping(source, field, raw, _POOL)
        name, group = pool.get("name"), pool.get("model_group")
        if not isinstance(name, str) or not MODEL_NAME.match(name):
            raise _fail(source, f"{field}.name", name, "a pool name")
        if not isinstance(group, str) or not MODEL_NAME.match(group) or group == model:
            raise _fail(
                source, f"{field}.model_group", group, "a LiteLLM model group other than the served model"
            )
        limit = _int(source, f"{field}.max_budget_tokens", pool.get("max_budget_tokens"), 1)
        if pools and limit <= pools[-1].max_budget_tokens:
            raise _fail(
                source, f"{field}.max_budget_tokens", limit, f"more than {pools[-1].max_budget_tokens}"
            )
        in_flight = pool.get("max_in_flight")
        if in_flight is not None:
            in_flight = _int(source, f"{field}.max_in_flight", in_flight, 1)
        pools.append(GatewayPool(name, group, limit, in_flight))
    if len({p.name for p in pools}) != len(pools) or len({p.model_group for p in pools}) != len(pools):
        raise ValidationError(f"{source}: pools: names and model groups must be unique")
    gamma, compressibility, cut = 1.0, 0.0, 1.0
    if doc.get("compress_and_route") is not None:
        band = _mapping(source, "compress_and_route", doc["compress_and_route"], _BAND)
        if len(pools) < 2:
            raise ValidationError(f"{source}: compress_and_route needs two or more pools")
        gamma = _number(source, "compress_and_route.gamma", band.get("gamma"), 1.0, 1e6)
        compressibility = _number(
            source, "compress_and_route.compressibility", band.get("compressibility"), 0.0, 1.0
        )
        cut = _number(
            source, "compress_and_route.max_cut_fraction", band.get("max_cut_fraction", 1.0), 1e-9, 1.0
        )
    try:
        routing = Routing(tuple(p.max_budget_tokens for p in pools[:-1]), gamma, compressibility, cut)
    except ValidationError as exc:
        raise ValidationError(f"{source}: {exc}") from None
    extra: dict[str, Any] = {}
    if doc.get("estimator") is not None:
        est = _mapping(source, "estimator", doc["estimator"], _ESTIMATOR)
        if "decay" in est:
            extra["decay"] = _number(source, "estimator.decay", est["decay"], 0.0, 0.999999)
        if "bias" in est:
            extra["bias"] = _number(source, "estimator.bias", est["bias"], 0.0, 100.0)
        if "cold_start_bytes_per_token" in est:
            cold = _mapping(source, "estimator.cold_start_bytes_per_token", est["cold_start_bytes_per_token"],
                            set(CATEGORIES))  # fmt: skip
            extra["cold_start_bytes_per_token"] = {
                k: _number(source, f"estimator.cold_start_bytes_per_token.{k}", v, 1.0, 64.0)
                for k, v in cold.items()
            }
        if "cold_start_deviation_fraction" in est:
            extra["cold_start_deviation_fraction"] = _number(
                source,
                "estimator.cold_start_deviation_fraction",
                est["cold_start_deviation_fraction"],
                0.0,
                0.9,
            )
    if doc.get("tokenizer") is not None:
        tok = _mapping(source, "tokenizer", doc["tokenizer"], _TOKENIZER)
        kinds = [k for k in ("tiktoken", "huggingface_file") if tok.get(k) is not None]
        if len(kinds) != 1 or not isinstance(tok[kinds[0]], str):
            raise _fail(source, "tokenizer", dict(tok), "one of tiktoken: ENCODING or huggingface_file: PATH")
        extra["tiktoken_encoding" if kinds[0] == "tiktoken" else "huggingface_file"] = tok[kinds[0]]
        if "tokens_per_message" in tok:
            extra["tokens_per_message"] = _int(
                source, "tokenizer.tokens_per_message", tok["tokens_per_message"], 0, 64
            )
    if doc.get("seed") is not None:
        extra["seed"] = _int(source, "seed", doc["seed"], 0)
    if doc.get("metrics_port") is not None:
        extra["metrics_port"] = _int(source, "metrics_port", doc["metrics_port"], 1, 65535)
    if doc.get("metrics_address") is not None:
        address = doc["metrics_address"]
        if not isinstance(address, str) or not re.match(r"^[A-Za-z0-9.:\[\]-]{1,255}$", address):
            raise _fail(source, "metrics_address", address, "a host name or IP address")
        extra["metrics_address"] = address
    if doc.get("in_flight_timeout_s") is not None:
        extra["in_flight_timeout_s"] = _number(
            source, "in_flight_timeout_s", doc["in_flight_timeout_s"], 1.0, 86400.0
        )
    if doc.get("shadow_compression") is not None:
        shadow = _mapping(source, "shadow_compression", doc["shadow_compression"], _SHADOW)
        if len(pools) < 2:
            raise ValidationError(f"{source}: shadow_compression needs two or more pools")
        extra["shadow_gamma"] = _number(source, "shadow_compression.gamma", shadow.get("gamma"), 1.0, 1e6)
        extra["shadow_max_cut_fraction"] = _number(
            source, "shadow_compression.max_cut_fraction", shadow.get("max_cut_fraction", 1.0), 1e-9, 1.0
        )
    return GatewayConfig(model=model, pools=tuple(pools), routing=routing, **extra)
