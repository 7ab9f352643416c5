"""Plan documents: the versioned, machine-readable form of a :class:`~fleetopt.core.planner.FleetPlan`.

The same dictionary is printed by ``fleetopt plan --format json|yaml``, written by
``--output FILE`` (atomically) and read back by ``fleetopt drift`` and ``fleetopt simulate``.
The schema is documented in ``docs/planner.md``; ``SCHEMA_VERSION`` changes whenever a field
changes meaning or disappears.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from fleetopt import __version__
from fleetopt.core.planner import FleetCandidate, FleetPlan
from fleetopt.core.service import PoolHardware
from fleetopt.core.sizing import PoolSizing
from fleetopt.core.workload import Workload
from fleetopt.core.workload_stats import arrival_statistics
from fleetopt.defaults import HOURS_PER_YEAR
from fleetopt.errors import ValidationError

SCHEMA_VERSION = 1
PLAN_KIND = "fleetopt-plan"
#: Quantile levels of the total-token distribution kept in a plan's workload fingerprint
#: (0.000, 0.001, …, 1.000: a KS distance against it is pinned to within 0.001).
FINGERPRINT_LEVELS = tuple(round(k / 1000, 3) for k in range(1001))


def _weighted_quantiles(values: np.ndarray, weights: np.ndarray, levels) -> list[int]:
    """Inverted-CDF quantiles (smallest v with F(v) ≥ level) of a weighted sample sorted by value."""
    order = np.argsort(values, kind="stable")
    sorted_values, cumulative = values[order], np.cumsum(weights[order])
    cumulative /= cumulative[-1]
    positions = np.searchsorted(cumulative, np.asarray(levels) * (1 - 1e-12), side="left")
    return [int(sorted_values[min(p, sorted_values.size - 1)]) for p in positions]


def workload_fingerprint(
    workload: Workload, b_short_tokens: int | None, gamma: float | None
) -> dict[str, Any]:
    """A compact, comparable summary of a workload: sizes, quantiles, α, β, arrivals and a hash."""
    digest = hashlib.sha256()
    for array in (workload.total_tokens, workload.input_tokens, workload.output_tokens, workload.weights):
        digest.update(np.ascontiguousarray(array).tobytes())
    weights = workload.weights / workload.total_weight
    fingerprint: dict[str, Any] = {
        "sha256": digest.hexdigest(),
        "kind": workload.kind,
        "requests": workload.request_count,
        "atoms": int(workload.total_tokens.size),
        "mean_input_tokens": float(np.dot(weights, workload.input_tokens)),
        "mean_output_tokens": float(np.dot(weights, workload.output_tokens)),
        "mean_total_tokens": float(np.dot(weights, workload.total_tokens)),
        "input_tokens_p50_p90_p99": _weighted_quantiles(workload.input_tokens, weights, (0.5, 0.9, 0.99)),
        "output_tokens_p50_p90_p99": _weighted_quantiles(workload.output_tokens, weights, (0.5, 0.9, 0.99)),
        "total_tokens_quantile_levels": list(FINGERPRINT_LEVELS),
        "total_tokens_quantiles": _weighted_quantiles(workload.total_tokens, weights, FINGERPRINT_LEVELS),
    }
    if b_short_tokens is not None:
        alpha = workload.cdf_at(b_short_tokens)
        fingerprint["alpha_at_b_short"] = alpha
        if gamma is not None:
            fingerprint["beta_at_gamma"] = workload.cdf_at(gamma * b_short_tokens) - alpha
    if workload.arrival_times_s is not None and workload.arrival_times_s.size >= 2:
        fingerprint["arrivals"] = asdict(arrival_statistics(workload.arrival_times_s))
    return fingerprint


def hardware_document(hardware: PoolHardware) -> dict[str, Any]:
    """The serving calibration a pool was planned with (seconds, tokens, USD)."""
    return asdict(hardware)


def pool_document(pool: PoolSizing, hardware: PoolHardware, total_rate_per_s: float) -> dict[str, Any]:
    """One pool: what to deploy (instances, GPUs, max_num_seqs, max_model_len) and how it behaves."""
    return {
        "serving_profile": hardware.serving_name,
        "model": hardware.model_name,
        "gpu": hardware.gpu_name,
        "gpus_per_instance": hardware.gpus_per_instance,
        "instances": pool.instances,
        "gpus": pool.gpus,
        "slots_per_instance": pool.slots_per_instance,
        "kv_slot_limit": pool.kv_slot_limit,
        "context_tokens": pool.context_tokens,
        "arrival_rate_per_s": pool.arrival_rate_per_s,
        "traffic_fraction": pool.arrival_rate_per_s / total_rate_per_s if total_rate_per_s > 0 else 0.0,
        "mean_service_s": pool.mean_service_s,
        "service_scv": pool.service_scv,
        "service_rate_per_instance_per_s": pool.service_rate_per_instance_per_s,
        "utilization": pool.utilization,
        "p99_wait_s": pool.p99_wait_s,
        "mean_wait_s": pool.mean_wait_s,
        "p99_prefill_s": pool.p99_prefill_s,
        "iteration_s": pool.iteration_s,
        "p99_ttft_s": pool.p99_ttft_s,
        "binding_constraint": pool.binding_constraint,
        "slots_binding": pool.slots_binding,
        "feasible": pool.feasible,
        "reason": pool.reason,
        "min_achievable_ttft_s": pool.min_achievable_ttft_s,
        "cost_per_year_usd": pool.cost_per_hour_usd * HOURS_PER_YEAR if pool.feasible else None,
    }


def fleet_document(candidate: FleetCandidate, plan: FleetPlan) -> dict[str, Any]:
    """One fleet (best, a baseline or a grid cell) with its pools and its routing rule."""
    rate = plan.options.arrival_rate_per_s
    pools: dict[str, Any] = {}
    if candidate.short is not None:
        pools["short"] = pool_document(candidate.short, plan.short_hardware, rate)
        pools["long"] = pool_document(candidate.long, plan.long_hardware, rate)
    else:
        pools["homogeneous"] = pool_document(candidate.long, plan.long_hardware, rate)
    routing = None
    if candidate.b_short_tokens is not None:
        b = candidate.b_short_tokens
        band_top = math.floor(candidate.gamma * b)
        routing = {
            "rule": (
                f"short if L_in + max_tokens ≤ {b}"
                + (
                    f"; compress prompts with {b} < L_in + max_tokens ≤ {band_top} to L_in = {b} − max_tokens"
                    f" (p_c = {plan.options.compressibility:g}), then short"
                    if band_top > b
                    else ""
                )
                + "; otherwise long"
            ),
            "b_short_tokens": b,
            "compress_up_to_tokens": band_top,
        }
    return {
        "label": candidate.label,
        "feasible": candidate.feasible,
        "reason": candidate.reason,
        "b_short_tokens": candidate.b_short_tokens,
        "gamma": candidate.gamma,
        "alpha": candidate.alpha,
        "beta": candidate.beta,
        "short_traffic_fraction": candidate.short_traffic_fraction,
        "total_instances": candidate.total_instances,
        "total_gpus": candidate.total_gpus,
        "cost_per_hour_usd": candidate.cost_per_hour_usd if candidate.feasible else None,
        "cost_per_year_usd": candidate.cost_per_year_usd if candidate.feasible else None,
        "routing": routing,
        "pools": pools,
    }


def _savings(best: FleetCandidate | None, baseline: FleetCandidate | None) -> float | None:
    if best is None or baseline is None or not baseline.feasible or not best.feasible:
        return None
    base = baseline.cost_per_hour_usd
    return (base - best.cost_per_hour_usd) / base if base > 0 else None


def _reader_document(reader_options: dict[str, Any] | None, workload: Workload) -> dict[str, Any]:
    """How the workload was read (format and column overrides; the split model of a CDF)."""
    reader = {
        key: value for key, value in (reader_options or {}).items() if value is not None and key != "split"
    }
    if workload.kind == "cdf":
        reader["split_model"] = workload.split_model
    return reader


def plan_document(plan: FleetPlan, workload: Workload, inputs: dict[str, Any]) -> dict[str, Any]:
    """The versioned plan document (schema in docs/planner.md).

    ``inputs`` carries what only the caller knows: ``workload`` (name or path as given),
    ``arrival_rate_origin`` (``given`` / ``observed`` / ``default``) and the profile names.
    """
    o = plan.options
    best = plan.best
    document: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "kind": PLAN_KIND,
        "fleetopt_version": __version__,
        "inputs": {
            "workload": inputs.get("workload", workload.name),
            "workload_reader": _reader_document(inputs.get("workload_reader"), workload),
            "workload_fingerprint": workload_fingerprint(
                workload,
                best.b_short_tokens if best is not None else None,
                best.gamma if best is not None else None,
            ),
            "arrival_rate_per_s": o.arrival_rate_per_s,
            "arrival_rate_origin": inputs.get("arrival_rate_origin", "given"),
            "ttft_slo_s": o.ttft_slo_s,
            "tpot_slo_s": o.tpot_slo_s,
            "quantile": o.quantile,
            "max_utilization": o.max_utilization,
            "compressibility": o.compressibility,
            "service_model": o.service_model,
            "long_context_tokens": o.long_context_tokens,
            "b_short_candidates": list(plan.b_short_candidates),
            "gammas": list(o.gammas),
            "profiles": {
                "short": hardware_document(plan.short_hardware),
                "long": hardware_document(plan.long_hardware),
            },
        },
        "feasible": plan.feasible,
        "best": fleet_document(best, plan) if best is not None else None,
        "baselines": {
            "homogeneous": fleet_document(plan.homogeneous, plan),
            "pool_routing": fleet_document(plan.pool_routing, plan) if plan.pool_routing else None,
            "retrofit": fleet_document(plan.retrofit, plan) if plan.retrofit else None,
        },
        "savings": {
            "vs_homogeneous": _savings(best, plan.homogeneous),
            "vs_pool_routing": _savings(best, plan.pool_routing),
            "vs_retrofit": _savings(best, plan.retrofit),
        },
        "grid": [
            {
                "b_short_tokens": c.b_short_tokens,
                "gamma": c.gamma,
                "feasible": c.feasible,
                "short_instances": c.short.instances if c.short is not None else None,
                "long_instances": c.long.instances,
                "total_gpus": c.total_gpus if c.feasible else None,
                "cost_per_year_usd": c.cost_per_year_usd if c.feasible else None,
                "reason": c.reason,
            }
            for c in plan.grid
        ],
        "notes": list(plan.notes),
    }
    return document


def write_document_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file in the same folder and an atomic rename."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise ValidationError(f"--output {path}: the folder {folder} does not exist")
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def plan_format_for(path: Path) -> str:
    """``json`` or ``yaml`` from a plan file's suffix."""
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        return "json"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    raise ValidationError(
        f"--output {path}: the suffix must be .json, .yaml or .yml (got {suffix or 'none'!r})"
    )


_REQUIRED_POOL_FIELDS = (
    "instances",
    "gpus_per_instance",
    "slots_per_instance",
    "context_tokens",
    "serving_profile",
)


def read_plan(path: Path) -> dict[str, Any]:
    """Read and check a plan file written by ``fleetopt plan --output``.

    Raises ValidationError naming the file and what is wrong: unreadable, truncated, not a plan,
    an incompatible ``schema_version``, or a missing/ill-typed field.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValidationError(f"plan {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationError(f"plan {path}: cannot be read ({exc})") from None
    try:
        if path.suffix.lower() == ".json":
            document = json.loads(text)
        else:
            import yaml

            document = yaml.safe_load(text)
    except Exception as exc:  # json.JSONDecodeError, yaml.YAMLError: a truncated or mangled file
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValidationError(
            f"plan {path}: not valid {path.suffix.lstrip('.') or 'YAML'} ({first_line})"
        ) from None
    if not isinstance(document, dict) or document.get("kind") != PLAN_KIND:
        raise ValidationError(f"plan {path}: not a fleetopt plan (expected kind: {PLAN_KIND})")
    version = document.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ValidationError(
            f"plan {path}: schema_version {version!r} is not supported (this fleetopt reads version "
            f"{SCHEMA_VERSION}); re-run fleetopt plan --output to regenerate it"
        )
    _check_plan_fields(path, document)
    return document


def _check_plan_fields(path: Path, document: dict[str, Any]) -> None:
    def fail(field: str, value: Any, allowed: str) -> None:
        if value is None:
            raise ValidationError(
                f"plan {path}: {field} is missing (the file may be truncated); expected {allowed}"
            )
        raise ValidationError(f"plan {path}: {field} = {value!r} is invalid; expected {allowed}")

    inputs = document.get("inputs")
    if not isinstance(inputs, dict):
        fail("inputs", inputs, "a mapping")
    for key in ("arrival_rate_per_s", "ttft_slo_s", "max_utilization", "compressibility"):
        value = inputs.get(key)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
            fail(f"inputs.{key}", value, "a non-negative number")
    if inputs.get("service_model") not in ("lockstep", "fleet-sim"):
        fail("inputs.service_model", inputs.get("service_model"), "lockstep or fleet-sim")
    best = document.get("best")
    if not isinstance(best, dict):
        fail("best", best, "a fleet (the plan was infeasible or the file is incomplete)")
    pools = best.get("pools")
    if not isinstance(pools, dict) or not pools:
        fail("best.pools", pools, "a mapping of pools")
    for name, pool in pools.items():
        if not isinstance(pool, dict):
            fail(f"best.pools.{name}", pool, "a mapping")
        for key in _REQUIRED_POOL_FIELDS:
            value = pool.get(key)
            ok = isinstance(value, str) if key == "serving_profile" else isinstance(value, int) and value >= 0
            if not ok or isinstance(value, bool):
                fail(
                    f"best.pools.{name}.{key}",
                    value,
                    "a string" if key == "serving_profile" else "an integer ≥ 0",
                )
    if "short" in pools:
        b = best.get("b_short_tokens")
        if not isinstance(b, int) or b < 1:
            fail("best.b_short_tokens", b, "an integer ≥ 1")
        gamma = best.get("gamma")
        if not isinstance(gamma, (int, float)) or gamma < 1:
            fail("best.gamma", gamma, "a number ≥ 1")


def hardware_from_document(document: Any, *, source: str = "plan", field: str = "profiles") -> PoolHardware:
    """The :class:`PoolHardware` written by :func:`hardware_document`, checked field by field.

    Raises ValidationError naming ``source``, the field, the value and what is allowed.
    """
    from dataclasses import fields

    if not isinstance(document, dict):
        raise ValidationError(f"{source}: {field} = {document!r} is invalid; expected a mapping")
    known = {f.name for f in fields(PoolHardware)}
    unknown = sorted(set(document) - known)
    if unknown:
        raise ValidationError(f"{source}: {field} has unknown field(s) {', '.join(unknown)}")
    values: dict[str, Any] = {}
    for item in fields(PoolHardware):
        value = document.get(item.name)
        name = f"{field}.{item.name}"
        if item.name in ("serving_name", "model_name", "gpu_name"):
            if not isinstance(value, str) or not value:
                raise ValidationError(f"{source}: {name} = {value!r} is invalid; expected a name")
        elif item.name == "max_num_seqs":
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ValidationError(
                    f"{source}: {name} = {value!r} is invalid; expected an integer ≥ 1 or null"
                )
        elif item.name in ("gpus_per_instance", "prefill_chunk_tokens", "calibration_context_tokens",
                           "kv_capacity_tokens", "kv_block_tokens"):  # fmt: skip
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValidationError(f"{source}: {name} = {value!r} is invalid; expected an integer ≥ 1")
        else:
            positive = item.name != "iteration_per_slot_s"
            if (
                not isinstance(value, (int, float))
                or isinstance(value, bool)
                or not math.isfinite(value)
                or value < 0
                or (positive and value == 0)
            ):
                allowed = "a positive number" if positive else "a number ≥ 0"
                raise ValidationError(f"{source}: {name} = {value!r} is invalid; expected {allowed}")
            value = float(value)
        values[item.name] = value
    return PoolHardware(**values)
