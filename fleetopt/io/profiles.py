"""Model, GPU and serving profiles: YAML files validated into frozen dataclasses.

A profile is ``<dir>/<kind>/<name>.yaml`` with kind ``models``, ``gpus`` or ``serving``; its name
is the file's stem. The search path (``dirs``) is the user's ``--profiles-dir`` first, then the
bundled folder (see :func:`fleetopt.cli.common.profiles_dirs`); a path to a ``.yaml`` file can
be given instead of a name. Units are converted here, once: GB → bytes, ms → seconds,
billions of parameters → parameters. The schema is documented in ``docs/profiles.md``.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fleetopt.core import kv
from fleetopt.core.service import PoolHardware
from fleetopt.errors import NotFoundError, ValidationError, excerpt
from fleetopt.io.profile_cache import cached_parse
from fleetopt.io.yamlio import safe_load

KINDS: tuple[str, ...] = ("models", "gpus", "serving")
CALIBRATION_KINDS: tuple[str, ...] = ("measured", "derived", "paper")
KV_CAPACITY_METHODS: tuple[str, ...] = ("blocks", "memory")
GB_BYTES = 10**9
GIB_BYTES = 2**30


# ---------------------------------------------------------------------------------------------
# Dataclasses (internal units: bytes, seconds, tokens, parameter counts)


@dataclass(frozen=True)
class ModelProfile:
    """A model's architecture as far as KV-cache and weight memory go.

    ``kv_formula`` says which KV equation applies: ``gqa`` uses layers, kv_heads and head_dim;
    ``mla`` uses layers, kv_lora_rank and qk_rope_head_dim (the others are ``None``).
    """

    name: str
    display_name: str
    source: str
    kv_formula: str
    layers: int
    kv_heads: int | None
    head_dim: int | None
    kv_lora_rank: int | None
    qk_rope_head_dim: int | None
    parameter_count_total: float
    parameter_count_active: float
    weight_dtype: str
    kv_dtype: str
    source_file: str
    max_context_tokens: int | None = None
    huggingface_id: str | None = None
    attention_heads: int | None = None

    def attention_flops_per_token_pair(self) -> float | None:
        """FLOPs of one prompt token's attention to one token of its context, over all layers:
        4·layers·attention_heads·head_dim (QKᵀ and the weighted sum of V, two FLOPs per multiply-add;
        Chowdhery et al. 2022, "PaLM", Appendix B: 6N + 12·L·H·Q·T training FLOPs per token is
        2N + 4·L·H·Q·T forward). None without the query heads (or for MLA)."""
        if self.attention_heads is None or self.head_dim is None:
            return None
        return 4.0 * self.layers * self.attention_heads * self.head_dim

    def kv_bytes_per_token(self, kv_dtype: str | None = None) -> int:
        """KV bytes per token of one copy of the cache (no tensor parallelism), pool-routing Eq. 1."""
        dtype_bytes = int(kv.DTYPE_BYTES[kv_dtype or self.kv_dtype])
        if self.kv_formula == "mla":
            return kv.mla_kv_bytes_per_token(
                self.layers,
                self.kv_lora_rank,
                self.qk_rope_head_dim,
                dtype_bytes,  # type: ignore[arg-type]
            )
        return kv.gqa_kv_bytes_per_token(self.layers, self.kv_heads, self.head_dim, dtype_bytes)  # type: ignore[arg-type]


@dataclass(frozen=True)
class GpuProfile:
    """One GPU: memory, bandwidth and an indicative price per GPU-hour (with its source and date)."""

    name: str
    display_name: str
    source: str
    memory_bytes: int
    memory_bandwidth_bytes_per_s: float
    gpu_hour_usd: float
    price_source: str
    price_date: str
    source_file: str
    peak_flops_bf16_per_s: float | None = None
    peak_flops_fp8_per_s: float | None = None

    def peak_flops_per_s(self, weight_dtype: str) -> float | None:
        """Dense peak FLOP/s for matmuls with weights of ``weight_dtype``: the FP8 peak for fp8
        weights when known, else the BF16 peak (a conservative floor for smaller dtypes)."""
        if weight_dtype == "fp8" and self.peak_flops_fp8_per_s is not None:
            return self.peak_flops_fp8_per_s
        return self.peak_flops_bf16_per_s


@dataclass(frozen=True)
class ServingProfile:
    """A calibration of a model on a GPU at a tensor-parallel size (one instance = TP GPUs).

    ``kv_capacity_method`` is ``blocks`` (capacity = kv_blocks · kv_block_tokens, the papers'
    form) or ``memory`` (pool-routing Eq. 2 from GPU memory, utilization, weights and
    activations). ``weight_dtype``/``kv_dtype`` are ``None`` when the model's own apply.
    """

    name: str
    model_name: str
    gpu_name: str
    tensor_parallel: int
    calibration: str
    source: str
    derivation: str | None
    iteration_base_s: float
    iteration_per_slot_s: float
    prefill_chunk_tokens: int
    calibration_context_tokens: int
    kv_block_tokens: int
    kv_capacity_method: str
    kv_blocks: int | None
    gpu_memory_utilization: float | None
    activation_reserve_bytes_per_gpu: float | None
    max_num_seqs: int | None
    weight_dtype: str | None
    kv_dtype: str | None
    kv_head_layout: str
    source_file: str
    prefill_per_token_s: float = 0.0
    iteration_per_kv_token_s: float = 0.0
    ttft_overhead_s: float = 0.0
    fit: dict[str, Any] | None = None

    @property
    def gpus_per_instance(self) -> int:
        """GPUs in one instance (= tensor-parallel size)."""
        return self.tensor_parallel


# ---------------------------------------------------------------------------------------------
# Field validation


@dataclass(frozen=True)
class _Field:
    key: str
    check: Callable[[Any], Any]  # returns the cleaned value or raises _Bad(allowed)
    allowed: str
    required: bool = True


class _Bad(Exception):
    """A value outside what a field allows (internal; becomes a ValidationError naming the file)."""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _whole(minimum: int) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise _Bad
        return value

    return check


def _number(*, above: float | None = None, at_least: float | None = None, at_most: float | None = None):
    def check(value: Any) -> float:
        if not _is_number(value):
            raise _Bad
        if above is not None and not value > above:
            raise _Bad
        if at_least is not None and value < at_least:
            raise _Bad
        if at_most is not None and value > at_most:
            raise _Bad
        return float(value)

    return check


def _choice(choices: Sequence[str]) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if not isinstance(value, str) or value not in choices:
            raise _Bad
        return value

    return check


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _Bad
    return value.strip()


def _fit_record(value: Any) -> dict[str, Any]:
    """A measured calibration's provenance: a mapping of names to numbers, text or lists of them."""
    if not isinstance(value, dict) or not value:
        raise _Bad
    for key, item in value.items():
        if not isinstance(key, str):
            raise _Bad
        items = item if isinstance(item, list) else [item]
        if not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in items):
            raise _Bad
    return dict(value)


_HUGGINGFACE_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


def _huggingface_id(value: Any) -> str:
    if isinstance(value, str) and _HUGGINGFACE_ID_RE.match(value.strip()):
        return value.strip()
    raise _Bad


_DATE_RE = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")


def _date(value: Any) -> str:
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, str) and _DATE_RE.match(value.strip()):
        return value.strip()
    raise _Bad


def _whole_field(key: str, minimum: int, what: str, required: bool = True) -> _Field:
    return _Field(key, _whole(minimum), f"a whole number ≥ {minimum} ({what})", required)


_TEXT = "a non-empty string"
_KV_DTYPE_ALLOWED = "one of " + ", ".join(kv.KV_DTYPES)
_WEIGHT_DTYPE_ALLOWED = "one of " + ", ".join(kv.WEIGHT_DTYPES)

_MODEL_FIELDS: tuple[_Field, ...] = (
    _Field("display_name", _text, _TEXT, required=False),
    _Field("source", _text, _TEXT + " saying where the numbers come from"),
    _Field("kv_formula", _choice(kv.KV_FORMULAS), "one of gqa, mla"),
    _whole_field("layers", 1, "transformer layers"),
    _whole_field(
        "attention_heads",
        1,
        "query heads, num_attention_heads; tensor parallelism must divide them",
        required=False,
    ),  # fmt: skip
    _whole_field("kv_heads", 1, "KV heads; gqa only", required=False),
    _whole_field("head_dim", 1, "head dimension; gqa only", required=False),
    _whole_field("kv_lora_rank", 1, "MLA latent rank; mla only", required=False),
    _whole_field("qk_rope_head_dim", 1, "MLA RoPE key dimension; mla only", required=False),
    _Field("parameters_total_billions", _number(above=0), "a number > 0 (billions of parameters)"),
    _Field(
        "parameters_active_billions",
        _number(above=0),
        "a number > 0 and ≤ parameters_total_billions (MoE active parameters)",
        required=False,
    ),
    _Field("weight_dtype", _choice(kv.WEIGHT_DTYPES), _WEIGHT_DTYPE_ALLOWED),
    _Field("kv_dtype", _choice(kv.KV_DTYPES), _KV_DTYPE_ALLOWED),
    _whole_field("max_context_tokens", 1, "the model's longest supported context", required=False),
    _Field(
        "huggingface_id",
        _huggingface_id,
        "a Hugging Face model id, organization/name (what `vllm serve` loads; used by fleetopt export)",
        required=False,
    ),
)

_GPU_FIELDS: tuple[_Field, ...] = (
    _Field("display_name", _text, _TEXT, required=False),
    _Field("source", _text, _TEXT + " saying where the numbers come from"),
    _Field("memory_gb", _number(above=0), "a number > 0 (GPU memory in GB = 10^9 bytes)", required=False),
    _Field("memory_gib", _number(above=0), "a number > 0 (GPU memory in GiB = 2^30 bytes)", required=False),
    _Field("memory_bandwidth_gb_per_s", _number(above=0), "a number > 0 (GB/s, 10^9 bytes per second)"),
    _Field(
        "peak_dense_tflops_bf16",
        _number(above=0),
        "a number > 0 (dense BF16 tensor peak, 10^12 FLOP/s, no sparsity)",
        required=False,
    ),
    _Field(
        "peak_dense_tflops_fp8",
        _number(above=0),
        "a number > 0 (dense FP8 tensor peak, 10^12 FLOP/s, no sparsity)",
        required=False,
    ),
    _Field("gpu_hour_usd", _number(above=0), "a number > 0 (USD per GPU per hour)"),
    _Field("price_source", _text, _TEXT + " naming where the price comes from"),
    _Field("price_date", _date, "a date YYYY-MM-DD or YYYY-MM (when the price was read)"),
)

_SERVING_FIELDS: tuple[_Field, ...] = (
    _Field("model", _text, "a model profile name"),
    _Field("gpu", _text, "a GPU profile name"),
    _whole_field("tensor_parallel", 1, "GPUs per instance"),
    _Field("calibration", _choice(CALIBRATION_KINDS), "one of " + ", ".join(CALIBRATION_KINDS)),
    _Field("source", _text, _TEXT + " saying where the numbers come from"),
    _Field("derivation", _text, _TEXT + " (how W, H were derived; required when derived)", required=False),
    _Field("iteration_base_ms", _number(above=0), "a number > 0 (W of t_iter = W + H·n, milliseconds)"),
    _Field(
        "iteration_per_slot_ms",
        _number(above=0),
        "a number > 0 (H of t_iter = W + H·n, milliseconds per slot)",
    ),
    _Field(
        "prefill_per_token_us",
        _number(at_least=0),
        "a number ≥ 0 (τ: microseconds per prompt token in an iteration)",
        required=False,
    ),
    _Field(
        "iteration_per_kv_token_ns",
        _number(at_least=0),
        "a number ≥ 0 (κ: nanoseconds per KV token held by the batch)",
        required=False,
    ),
    _Field(
        "ttft_overhead_ms",
        _number(at_least=0),
        "a number ≥ 0 (T0: constant milliseconds every TTFT carries — API server, tokenization)",
        required=False,
    ),
    _whole_field("prefill_chunk_tokens", 1, "chunked-prefill tokens per iteration"),
    _whole_field("calibration_context_tokens", 1, "context at which H was calibrated"),
    _whole_field("kv_block_tokens", 1, "KV block size in tokens"),
    _Field("kv_capacity", _choice(KV_CAPACITY_METHODS), "one of blocks, memory"),
    _whole_field("kv_blocks", 1, "KV blocks per instance; only with kv_capacity: blocks", required=False),
    _Field(
        "gpu_memory_utilization",
        _number(above=0, at_most=1),
        "a number in (0, 1] (fraction of GPU memory the engine may use)",
        required=False,
    ),
    _Field(
        "activation_reserve_gb_per_gpu",
        _number(at_least=0),
        "a number ≥ 0 (GB = 10^9 bytes held for activations on each GPU)",
        required=False,
    ),
    _whole_field("max_num_seqs", 1, "engine cap on concurrent sequences per instance", required=False),
    _Field("weight_dtype", _choice(kv.WEIGHT_DTYPES), _WEIGHT_DTYPE_ALLOWED, required=False),
    _Field("kv_dtype", _choice(kv.KV_DTYPES), _KV_DTYPE_ALLOWED, required=False),
    _Field("kv_head_layout", _choice(kv.KV_HEAD_LAYOUTS), "one of even, replicated", required=False),
    _Field(
        "fit",
        _fit_record,
        "a mapping of names to numbers or text (a measured calibration's rows, method and errors)",
        required=False,
    ),
)

_FIELDS_BY_KIND: dict[str, tuple[_Field, ...]] = {
    "models": _MODEL_FIELDS,
    "gpus": _GPU_FIELDS,
    "serving": _SERVING_FIELDS,
}


def _read_yaml(path: Path) -> dict[str, Any]:
    """The profile's YAML mapping (from the parsed cache when the text is a bundled profile's)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise NotFoundError(f"{path}: cannot read the profile ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise ValidationError(
            f"{path}: not UTF-8 text (byte {exc.start:,}); save the profile as UTF-8"
        ) from None
    data = cached_parse(text)
    if data is not None:
        return data
    import yaml

    try:
        data = safe_load(text)
    except RecursionError:
        raise ValidationError(f"{path}: YAML nested too deeply to be a profile") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise ValidationError(f"{path}: not valid YAML{where}: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(data, dict):
        raise ValidationError(
            f"{path}: a profile must be a YAML mapping of field: value, not {type(data).__name__}"
        )
    return data


def _validate(path: Path, kind: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """Check every field of ``data`` against the schema of ``kind``; return the cleaned values."""
    fields = {f.key: f for f in _FIELDS_BY_KIND[kind]}
    for key in data:
        if key not in fields:
            raise ValidationError(
                f"{path}: unknown field {excerpt(key)} (value {excerpt(data[key])}); allowed fields: "
                f"{', '.join(fields)}"
            )
    cleaned: dict[str, Any] = {}
    for key, spec in fields.items():
        if key not in data or data[key] is None:
            if spec.required:
                raise ValidationError(f"{path}: missing field {excerpt(key)}; it must be {spec.allowed}")
            cleaned[key] = None
            continue
        try:
            cleaned[key] = spec.check(data[key])
        except _Bad:
            raise ValidationError(
                f"{path}: field {excerpt(key)} = {excerpt(data[key])} is not allowed; it must be "
                f"{spec.allowed}"
            ) from None
    return cleaned


def _only_with(
    path: Path, cleaned: Mapping[str, Any], keys: Sequence[str], condition: str, holds: bool
) -> None:
    """Require ``keys`` when ``holds`` and forbid them otherwise."""
    for key in keys:
        if holds and cleaned[key] is None:
            raise ValidationError(f"{path}: missing field {excerpt(key)}; it is required when {condition}")
        if not holds and cleaned[key] is not None:
            raise ValidationError(
                f"{path}: field {excerpt(key)} = {excerpt(cleaned[key])} is not allowed; it applies only "
                f"when {condition}"
            )


def _model_from(path: Path, name: str, data: Mapping[str, Any]) -> ModelProfile:
    c = _validate(path, "models", data)
    is_mla = c["kv_formula"] == "mla"
    _only_with(path, c, ("kv_heads", "head_dim"), "kv_formula is gqa", not is_mla)
    _only_with(path, c, ("kv_lora_rank", "qk_rope_head_dim"), "kv_formula is mla", is_mla)
    total = c["parameters_total_billions"]
    active = c["parameters_active_billions"] if c["parameters_active_billions"] is not None else total
    if active > total:
        raise ValidationError(
            f"{path}: field 'parameters_active_billions' = {excerpt(data['parameters_active_billions'])} "
            "is not allowed; it must be ≤ parameters_total_billions "
            f"({excerpt(data['parameters_total_billions'])})"
        )
    return ModelProfile(
        name=name,
        display_name=c["display_name"] or name,
        source=c["source"],
        kv_formula=c["kv_formula"],
        layers=c["layers"],
        kv_heads=c["kv_heads"],
        head_dim=c["head_dim"],
        kv_lora_rank=c["kv_lora_rank"],
        qk_rope_head_dim=c["qk_rope_head_dim"],
        parameter_count_total=total * 1e9,
        parameter_count_active=active * 1e9,
        weight_dtype=c["weight_dtype"],
        kv_dtype=c["kv_dtype"],
        source_file=str(path),
        max_context_tokens=c["max_context_tokens"],
        huggingface_id=c["huggingface_id"],
        attention_heads=c["attention_heads"],
    )


def _gpu_from(path: Path, name: str, data: Mapping[str, Any]) -> GpuProfile:
    c = _validate(path, "gpus", data)
    if (c["memory_gb"] is None) == (c["memory_gib"] is None):
        raise ValidationError(
            f"{path}: give exactly one of 'memory_gb' (10^9 bytes) or 'memory_gib' (2^30 bytes), "
            f"got {'both' if c['memory_gb'] is not None else 'neither'}"
        )
    memory_bytes = (
        round(c["memory_gb"] * GB_BYTES) if c["memory_gb"] is not None else round(c["memory_gib"] * GIB_BYTES)
    )
    return GpuProfile(
        name=name,
        display_name=c["display_name"] or name,
        source=c["source"],
        memory_bytes=memory_bytes,
        memory_bandwidth_bytes_per_s=c["memory_bandwidth_gb_per_s"] * GB_BYTES,
        gpu_hour_usd=c["gpu_hour_usd"],
        price_source=c["price_source"],
        price_date=c["price_date"],
        source_file=str(path),
        peak_flops_bf16_per_s=None
        if c["peak_dense_tflops_bf16"] is None
        else c["peak_dense_tflops_bf16"] * 1e12,
        peak_flops_fp8_per_s=None
        if c["peak_dense_tflops_fp8"] is None
        else c["peak_dense_tflops_fp8"] * 1e12,
    )


def _serving_from(path: Path, name: str, data: Mapping[str, Any]) -> ServingProfile:
    c = _validate(path, "serving", data)
    blocks = c["kv_capacity"] == "blocks"
    _only_with(path, c, ("kv_blocks",), "kv_capacity is blocks", blocks)
    _only_with(
        path,
        c,
        ("gpu_memory_utilization", "activation_reserve_gb_per_gpu"),
        "kv_capacity is memory",
        not blocks,
    )
    if c["calibration"] == "derived" and c["derivation"] is None:
        raise ValidationError(
            f"{path}: missing field 'derivation'; it is required when calibration is derived"
        )
    reserve_gb = c["activation_reserve_gb_per_gpu"]
    return ServingProfile(
        name=name,
        model_name=c["model"],
        gpu_name=c["gpu"],
        tensor_parallel=c["tensor_parallel"],
        calibration=c["calibration"],
        source=c["source"],
        derivation=c["derivation"],
        iteration_base_s=c["iteration_base_ms"] / 1e3,
        iteration_per_slot_s=c["iteration_per_slot_ms"] / 1e3,
        prefill_chunk_tokens=c["prefill_chunk_tokens"],
        calibration_context_tokens=c["calibration_context_tokens"],
        kv_block_tokens=c["kv_block_tokens"],
        kv_capacity_method=c["kv_capacity"],
        kv_blocks=c["kv_blocks"],
        gpu_memory_utilization=c["gpu_memory_utilization"],
        activation_reserve_bytes_per_gpu=None if reserve_gb is None else reserve_gb * GB_BYTES,
        max_num_seqs=c["max_num_seqs"],
        weight_dtype=c["weight_dtype"],
        kv_dtype=c["kv_dtype"],
        kv_head_layout=c["kv_head_layout"] or "even",
        source_file=str(path),
        prefill_per_token_s=(c["prefill_per_token_us"] or 0.0) / 1e6,
        iteration_per_kv_token_s=(c["iteration_per_kv_token_ns"] or 0.0) / 1e9,
        ttft_overhead_s=(c["ttft_overhead_ms"] or 0.0) / 1e3,
        fit=c["fit"],
    )


_BUILDERS = {"models": _model_from, "gpus": _gpu_from, "serving": _serving_from}
_KIND_WORD = {"models": "model", "gpus": "GPU", "serving": "serving"}


# ---------------------------------------------------------------------------------------------
# Lookup


def _check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise ValidationError(f"profile kind {excerpt(kind)} is not known; use one of {', '.join(KINDS)}")
    return kind


def is_profile_path(name_or_path: str | Path) -> bool:
    """True when ``name_or_path`` is a file path (has a slash or a .yaml/.yml suffix), not a name."""
    text = str(name_or_path)
    return isinstance(name_or_path, Path) or "/" in text or "\\" in text or text.endswith((".yaml", ".yml"))


def _files_of(kind: str, dirs: Sequence[Path]) -> dict[str, Path]:
    """Profile name → file, earlier folders shadowing later ones."""
    found: dict[str, Path] = {}
    for folder in dirs:
        sub = Path(folder) / kind
        if not sub.is_dir():
            continue
        for path in sorted(sub.iterdir()):
            if path.suffix in (".yaml", ".yml") and path.is_file():
                found.setdefault(path.stem, path)
    return found


def profile_names(kind: str, dirs: Sequence[Path]) -> list[str]:
    """The names of every profile of ``kind`` on the search path, sorted."""
    return sorted(_files_of(_check_kind(kind), dirs))


def _find(kind: str, name_or_path: str | Path, dirs: Sequence[Path]) -> tuple[Path, str]:
    if is_profile_path(name_or_path):
        path = Path(name_or_path).expanduser()
        if not path.is_file():
            raise NotFoundError(f"{_KIND_WORD[kind]} profile file {excerpt(str(path))} does not exist")
        return path, path.stem
    files = _files_of(kind, dirs)
    name = str(name_or_path)
    if name not in files:
        known = ", ".join(sorted(files)) or "(none)"
        raise NotFoundError(f"no {_KIND_WORD[kind]} profile named {excerpt(name)}; known: {known}")
    return files[name], name


def _load(kind: str, name_or_path: str | Path, dirs: Sequence[Path]):
    path, name = _find(kind, name_or_path, dirs)
    return _BUILDERS[kind](path, name, _read_yaml(path))


def load_model(name_or_path: str | Path, dirs: Sequence[Path]) -> ModelProfile:
    """Load and validate a model profile by name (searched in ``dirs`` in order) or by file path."""
    return _load("models", name_or_path, dirs)


def load_gpu(name_or_path: str | Path, dirs: Sequence[Path]) -> GpuProfile:
    """Load and validate a GPU profile by name (searched in ``dirs`` in order) or by file path."""
    return _load("gpus", name_or_path, dirs)


def load_serving(name_or_path: str | Path, dirs: Sequence[Path]) -> ServingProfile:
    """Load and validate a serving profile by name or path (its model and GPU are not loaded)."""
    return _load("serving", name_or_path, dirs)


def load_profile(
    kind: str, name_or_path: str | Path, dirs: Sequence[Path]
) -> ModelProfile | GpuProfile | ServingProfile:
    """Load a profile of ``kind`` (models, gpus or serving)."""
    return _load(_check_kind(kind), name_or_path, dirs)


def list_profiles(kind: str, dirs: Sequence[Path]) -> list[ModelProfile | GpuProfile | ServingProfile]:
    """Every profile of ``kind`` on the search path (user folders shadow bundled ones), by name."""
    files = _files_of(_check_kind(kind), dirs)
    return [_BUILDERS[kind](path, name, _read_yaml(path)) for name, path in sorted(files.items())]


def find_serving(
    *, model: str, gpu: str, dirs: Sequence[Path], tensor_parallel: int | None = None
) -> ServingProfile:
    """The serving calibration of ``model`` on ``gpu`` (at ``tensor_parallel`` GPUs, if given).

    Raises NotFoundError listing the calibrations that exist when none matches, and
    ValidationError when several match and no tensor-parallel size picks one.
    """
    profiles = list_profiles("serving", dirs)
    matches = [
        p
        for p in profiles
        if p.model_name == model
        and p.gpu_name == gpu
        and (tensor_parallel is None or p.tensor_parallel == tensor_parallel)
    ]
    if len(matches) == 1:
        return matches[0]
    tp_text = "" if tensor_parallel is None else f" at TP {tensor_parallel}"
    if not matches:
        known = "; ".join(
            f"{p.name} ({p.model_name} on {p.gpu_name}, TP {p.tensor_parallel})" for p in profiles
        )
        raise NotFoundError(
            f"no serving profile for model {excerpt(model)} on GPU {excerpt(gpu)}{tp_text}; "
            f"known: {known or '(none)'}"
        )
    names = ", ".join(f"{p.name} (TP {p.tensor_parallel})" for p in matches)
    raise ValidationError(
        f"several serving profiles for model {excerpt(model)} on GPU {excerpt(gpu)}: {names}; pick one "
        "with --serving NAME"
    )


# ---------------------------------------------------------------------------------------------
# Resolution into the planner's PoolHardware


@dataclass(frozen=True)
class KvSizing:
    """The KV arithmetic of one (model, GPU, TP) instance, in bytes and tokens.

    ``kv_memory_bytes_per_gpu`` is what Eq. 2 leaves for KV (memory method) or what the
    block budget occupies (blocks method); all ``*_per_instance`` figures cover TP GPUs.
    """

    tensor_parallel: int
    weight_dtype: str
    kv_dtype: str
    kv_head_layout: str
    kv_bytes_per_token_model: int
    kv_bytes_per_token_per_instance: int
    kv_bytes_per_token_per_gpu: float
    gpu_memory_bytes: int
    gpu_memory_utilization: float | None
    weight_bytes_per_gpu: float
    activation_reserve_bytes_per_gpu: float | None
    kv_memory_bytes_per_gpu: float
    kv_capacity_method: str
    kv_capacity_tokens_per_instance: int
    kv_block_tokens: int


def kv_sizing(
    model: ModelProfile,
    gpu: GpuProfile,
    *,
    tensor_parallel: int,
    kv_block_tokens: int,
    gpu_memory_utilization: float | None = None,
    activation_reserve_bytes_per_gpu: float | None = None,
    kv_blocks: int | None = None,
    weight_dtype: str | None = None,
    kv_dtype: str | None = None,
    kv_head_layout: str = "even",
    context: str = "",
) -> KvSizing:
    """Apply pool-routing Eq. 1–2 (or a block budget when ``kv_blocks`` is given) to one instance.

    Raises ValidationError (naming ``context``) when weights and activations leave no KV memory.
    """
    check_tensor_parallel(model, tensor_parallel, context)
    weight_dtype = weight_dtype or model.weight_dtype
    kv_dtype = kv_dtype or model.kv_dtype
    per_token_model = model.kv_bytes_per_token(kv_dtype)
    per_token_instance = kv.kv_bytes_per_token_per_instance(
        per_token_model, model.kv_formula, tensor_parallel, model.kv_heads, kv_head_layout
    )
    weights = kv.weight_bytes_per_gpu(
        model.parameter_count_total, kv.DTYPE_BYTES[weight_dtype], tensor_parallel
    )
    if kv_blocks is not None:
        capacity_tokens = kv_blocks * kv_block_tokens
        kv_memory_per_gpu = capacity_tokens * per_token_instance / tensor_parallel
        method = "blocks"
    else:
        if gpu_memory_utilization is None or activation_reserve_bytes_per_gpu is None:
            raise ValidationError(f"{context}: memory utilization and activation reserve are needed")
        kv_memory_per_gpu = kv.kv_memory_bytes_per_gpu(
            gpu.memory_bytes, gpu_memory_utilization, weights, activation_reserve_bytes_per_gpu
        )
        if kv_memory_per_gpu <= 0:
            raise ValidationError(
                f"{context}: {model.name} does not fit on {tensor_parallel} × {gpu.name}: "
                f"{gpu.memory_bytes / GB_BYTES:g} GB × {gpu_memory_utilization:g} utilization − "
                f"{weights / GB_BYTES:.4g} GB weights − {activation_reserve_bytes_per_gpu / GB_BYTES:g} GB "
                f"activations = {kv_memory_per_gpu / GB_BYTES:.4g} GB per GPU for KV; it must be > 0 "
                f"(use more GPUs, a smaller weight dtype or a smaller reserve)"
            )
        capacity_tokens = kv.kv_capacity_tokens_from_memory(
            kv_memory_per_gpu, tensor_parallel, per_token_instance
        )
        method = "memory"
    return KvSizing(
        tensor_parallel=tensor_parallel,
        weight_dtype=weight_dtype,
        kv_dtype=kv_dtype,
        kv_head_layout=kv_head_layout,
        kv_bytes_per_token_model=per_token_model,
        kv_bytes_per_token_per_instance=per_token_instance,
        kv_bytes_per_token_per_gpu=kv.kv_bytes_per_token_per_gpu(per_token_instance, tensor_parallel),
        gpu_memory_bytes=gpu.memory_bytes,
        gpu_memory_utilization=gpu_memory_utilization if kv_blocks is None else None,
        weight_bytes_per_gpu=weights,
        activation_reserve_bytes_per_gpu=activation_reserve_bytes_per_gpu if kv_blocks is None else None,
        kv_memory_bytes_per_gpu=kv_memory_per_gpu,
        kv_capacity_method=method,
        kv_capacity_tokens_per_instance=capacity_tokens,
        kv_block_tokens=kv_block_tokens,
    )


def check_tensor_parallel(model: ModelProfile, tensor_parallel: int, context: str = "") -> None:
    """Refuse a tensor-parallel size vLLM refuses for ``model`` (fleetopt.core.kv.tensor_parallel_problem:
    TP divides the attention heads, and the KV heads or a multiple of them)."""
    problem = kv.tensor_parallel_problem(
        tensor_parallel, model.attention_heads, model.kv_heads, model.kv_formula
    )
    if problem is not None:
        sizes = kv.valid_tensor_parallel_sizes(model.attention_heads, model.kv_heads, model.kv_formula)
        where = f"{context}: " if context else ""
        raise ValidationError(
            f"{where}tensor parallel size {tensor_parallel} does not fit {model.name}: {problem}, and vLLM "
            f"refuses it; use {', '.join(map(str, sizes))} ({model.source_file})"
        )


def serving_kv_sizing(serving: ServingProfile, model: ModelProfile, gpu: GpuProfile) -> KvSizing:
    """The KV sizing a serving profile implies for its model and GPU."""
    return kv_sizing(
        model,
        gpu,
        tensor_parallel=serving.tensor_parallel,
        kv_block_tokens=serving.kv_block_tokens,
        gpu_memory_utilization=serving.gpu_memory_utilization,
        activation_reserve_bytes_per_gpu=serving.activation_reserve_bytes_per_gpu,
        kv_blocks=serving.kv_blocks,
        weight_dtype=serving.weight_dtype,
        kv_dtype=serving.kv_dtype,
        kv_head_layout=serving.kv_head_layout,
        context=serving.source_file,
    )


def resolve_serving(
    serving_name_or_path: str | Path, dirs: Sequence[Path]
) -> tuple[ServingProfile, ModelProfile, GpuProfile]:
    """Load a serving profile with the model and GPU profiles it names.

    A model/GPU reference ending in .yaml/.yml is a path relative to the serving file's folder.
    """
    serving = load_serving(serving_name_or_path, dirs)
    base = Path(serving.source_file).parent

    def ref(value: str) -> str | Path:
        return base / value if is_profile_path(value) and not Path(value).is_absolute() else value

    try:
        model = load_model(ref(serving.model_name), dirs)
        gpu = load_gpu(ref(serving.gpu_name), dirs)
    except NotFoundError as exc:
        raise NotFoundError(f"{serving.source_file}: {exc}") from None
    return serving, model, gpu


def pool_hardware(serving_name_or_path: str | Path, dirs: Sequence[Path]) -> PoolHardware:
    """The planner's :class:`PoolHardware` for a serving profile (W, H in seconds; KV in tokens).

    gpus_per_instance = TP; gpu_hour_usd from the GPU profile (cost = GPUs × $/GPU-hour).
    """
    serving, model, gpu = resolve_serving(serving_name_or_path, dirs)
    sizing = serving_kv_sizing(serving, model, gpu)
    return PoolHardware(
        serving_name=serving.name,
        model_name=model.name,
        gpu_name=gpu.name,
        gpus_per_instance=serving.tensor_parallel,
        gpu_hour_usd=gpu.gpu_hour_usd,
        iteration_base_s=serving.iteration_base_s,
        iteration_per_slot_s=serving.iteration_per_slot_s,
        prefill_chunk_tokens=serving.prefill_chunk_tokens,
        calibration_context_tokens=serving.calibration_context_tokens,
        kv_capacity_tokens=sizing.kv_capacity_tokens_per_instance,
        kv_block_tokens=serving.kv_block_tokens,
        max_num_seqs=serving.max_num_seqs,
        prefill_per_token_s=serving.prefill_per_token_s,
        iteration_per_kv_token_s=serving.iteration_per_kv_token_s,
        peak_flops_per_s=_times(serving.tensor_parallel, gpu.peak_flops_per_s(sizing.weight_dtype)),
        memory_bandwidth_bytes_per_s=serving.tensor_parallel * gpu.memory_bandwidth_bytes_per_s,
        parameters_active=model.parameter_count_active,
        weight_bytes=serving.tensor_parallel * sizing.weight_bytes_per_gpu,
        ttft_overhead_s=serving.ttft_overhead_s,
        kv_bytes_per_token=float(sizing.kv_bytes_per_token_per_instance),
        max_context_tokens=model.max_context_tokens,
        attention_flops_per_token_pair=model.attention_flops_per_token_pair(),
    )


def _times(factor: int, value: float | None) -> float | None:
    return None if value is None else factor * value
