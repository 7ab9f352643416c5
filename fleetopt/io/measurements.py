"""Reading measured benchmark results for calibration (``fleetopt calibrate``).

Three formats, detected from the content (each row or file is one closed-loop benchmark point:
concurrency c, mean prompt and output tokens, mean TTFT and TPOT):

* ``silicon-csv`` — the measured-results CSV of NVIDIA aiconfigurator (``silicon_sample.csv``:
  columns ``system, backend, model_path, precision, mode, isl, osl, batch_size, tp_size,
  silicon_ttft_ms, silicon_tpot_ms``; only ``mode == agg`` rows). Rows are selected with
  :class:`RowFilter`.
* ``vllm-bench`` — a ``vllm bench serve --save-result`` JSON file (vllm/benchmarks/serve.py at
  commit 009e6d4a1cd6): ``max_concurrency``, ``completed``, ``total_input_tokens``,
  ``total_output_tokens``, ``mean_ttft_ms``, ``mean_tpot_ms``; with ``--save-detailed`` the
  per-request lists are there too and ignored. One file is one point; give several.
* ``guidellm`` — GuideLLM's ``benchmarks.json`` (src/guidellm/benchmark/schemas/generative/
  metrics.py): per benchmark ``metrics.request_concurrency``, ``prompt_token_count``,
  ``output_token_count``, ``time_to_first_token_ms``, ``inter_token_latency_ms``, each a summary
  by status whose ``successful.mean`` is used (the inter-token latency is TPOT without the first
  token, as vLLM's TPOT).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fleetopt.core.calibrate import Benchmark
from fleetopt.errors import ValidationError, excerpt
from fleetopt.io.files import long_csv_fields, read_text
from fleetopt.io.yamlio import DuplicateKeyError, json_loads

MEASUREMENT_FORMATS = ("silicon-csv", "vllm-bench", "guidellm")
_SILICON_COLUMNS = ("batch_size", "isl", "osl", "silicon_ttft_ms", "silicon_tpot_ms")


@dataclass(frozen=True)
class RowFilter:
    """Which rows of a measured-results CSV to use (None: any). Matched exactly against the
    columns ``system``, ``backend``, ``model_path``, ``tp_size`` and ``precision``."""

    system: str | None = None
    backend: str | None = None
    model: str | None = None
    tp: int | None = None
    precision: str | None = None

    @property
    def selects_csv_rows(self) -> bool:
        """A filter that only a measured-results CSV can apply (``tp`` is also the profile's TP)."""
        return any(v is not None for v in (self.system, self.backend, self.model, self.precision))

    def describe(self) -> str:
        parts = [
            f"{name}={value}"
            for name, value in (
                ("system", self.system), ("backend", self.backend), ("model", self.model),
                ("tp", self.tp), ("precision", self.precision),
            )
            if value is not None
        ]  # fmt: skip
        return " ".join(parts) or "all rows"

    def matches(self, row: dict[str, str]) -> bool:
        checks = (
            (self.system, "system"), (self.backend, "backend"), (self.model, "model_path"),
            (None if self.tp is None else str(self.tp), "tp_size"), (self.precision, "precision"),
        )  # fmt: skip
        return all(want is None or (row.get(column) or "").strip() == want for want, column in checks)


@dataclass(frozen=True)
class Measurements:
    """Benchmark points read from files, with where they came from."""

    benchmark: Benchmark
    sources: tuple[str, ...]
    formats: tuple[str, ...]
    row_filter: RowFilter
    labels: tuple[str, ...]  # one per point: file and row/benchmark


def read_measurements(paths: Sequence[str | Path], row_filter: RowFilter | None = None) -> Measurements:
    """Every benchmark point of ``paths`` (formats detected per file), filtered by ``row_filter``.

    Raises ValidationError naming the file for unreadable files, unknown formats, missing fields,
    non-positive values, and when nothing is left after filtering.
    """
    row_filter = row_filter or RowFilter()
    if not paths:
        raise ValidationError("calibrate: give at least one file of measured results")
    points: list[tuple[float, float, float, float, float, str]] = []
    formats: list[str] = []
    for raw in paths:
        path = Path(raw)
        text = read_text(path)
        fmt = detect_measurement_format(text, path)
        formats.append(fmt)
        if fmt != "silicon-csv" and row_filter.selects_csv_rows:
            raise ValidationError(
                f"{path}: --system/--backend/--model/--precision select rows of a measured-results CSV; "
                f"this file is {fmt} (one benchmark per file or entry): drop them or give the CSV"
            )
        reader = {"silicon-csv": _silicon_points, "vllm-bench": _vllm_points, "guidellm": _guidellm_points}[
            fmt
        ]
        points.extend(reader(text, path, row_filter))
    if not points:
        raise ValidationError(
            f"calibrate: no usable rows in {', '.join(str(p) for p in paths)} ({row_filter.describe()})"
        )
    for concurrency, isl, osl, ttft_s, tpot_s, label in points:
        _check_plausible(concurrency, isl, osl, ttft_s, tpot_s, label)
    columns = list(zip(*points, strict=True))
    benchmark = Benchmark(*(np.asarray(c, dtype=np.float64) for c in columns[:5]))
    return Measurements(
        benchmark, tuple(str(p) for p in paths), tuple(formats), row_filter, tuple(columns[5])
    )


#: The range a measured mean TTFT or TPOT must lie in, seconds (1 µs to 1 h): no engine serves a
#: model faster or slower; outside it the row is a unit error or a broken benchmark (one row of 1e308
#: or 1e-300 collapsed the least-squares fit to zeros).
PLAUSIBLE_LATENCY_S = (1e-6, 3600.0)
#: The most concurrent requests a benchmark row may claim.
MAX_CONCURRENCY = 1_000_000


def _check_plausible(
    concurrency: float, isl: float, osl: float, ttft_s: float, tpot_s: float, label: str
) -> None:
    """Refuse a benchmark point no engine could have produced (ValidationError naming the row)."""
    from fleetopt.io.logs import MAX_REQUEST_TOKENS

    low, high = PLAUSIBLE_LATENCY_S
    for name, value in (("TTFT", ttft_s), ("TPOT", tpot_s)):
        if not low <= value <= high:
            raise ValidationError(
                f"{label}: mean {name} {value * 1e3:.4g} ms is outside what any engine measures (1 µs to "
                "1 h): a unit error or a broken benchmark; fix or drop the row"
            )
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise ValidationError(f"{label}: concurrency {concurrency:g} must be from 1 to {MAX_CONCURRENCY:,}")
    for name, value in (("prompt", isl), ("output", osl)):
        if not 1 <= value <= MAX_REQUEST_TOKENS:
            raise ValidationError(
                f"{label}: mean {name} length {value:g} tokens must be from 1 to {MAX_REQUEST_TOKENS:,}"
            )


def check_physical(measurements: Measurements, floors: tuple[np.ndarray, np.ndarray], what: str) -> None:
    """Refuse a row faster than the hardware can be (``floors``: fleetopt.core.calibrate.physical_floors
    per row; ``what`` names the instance and model for the message)."""
    benchmark = measurements.benchmark
    for name, measured, floor in (
        ("TPOT", benchmark.tpot_s, floors[0]),
        ("TTFT", benchmark.ttft_s, floors[1]),
    ):
        below = np.flatnonzero(measured < floor)
        if below.size:
            k = int(below[0])
            detail = (
                "every iteration reads the active weights once"
                if name == "TPOT"
                else f"a {benchmark.input_tokens[k]:,.0f}-token prompt at 2 FLOPs per active parameter per "
                "token"
            )
            raise ValidationError(
                f"{measurements.labels[k]}: mean {name} {measured[k] * 1e3:.4g} ms is below the "
                f"{floor[k] * 1e3:.4g} ms {what} needs at the least ({detail}, at the GPU's peak): a "
                "measurement error, or the row of another model or GPU; fix or drop it"
            )


def detect_measurement_format(text: str, path: Path) -> str:
    """``silicon-csv``, ``vllm-bench`` or ``guidellm`` from the content."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            document = json_loads(text)
        except RecursionError:
            raise ValidationError(f"{path}: JSON nested too deeply to be a benchmark result") from None
        except json.JSONDecodeError as exc:
            raise ValidationError(
                f"{path}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            ) from None
        except DuplicateKeyError as exc:
            raise ValidationError(f"{path}: {exc}") from None
        if isinstance(document, dict) and isinstance(document.get("benchmarks"), list):
            return "guidellm"
        if isinstance(document, dict) and "mean_ttft_ms" in document:
            return "vllm-bench"
        raise ValidationError(
            f"{path}: a JSON file that is neither a `vllm bench serve --save-result` result "
            "(no mean_ttft_ms) "
            "nor a GuideLLM benchmarks.json (no benchmarks list)"
        )
    header = stripped.splitlines()[0].split(",") if stripped else []
    if all(column in [h.strip() for h in header] for column in _SILICON_COLUMNS):
        return "silicon-csv"
    raise ValidationError(
        f"{path}: not a measured-results file: expected a CSV with the columns "
        f"{', '.join(_SILICON_COLUMNS)}, "
        "a vllm bench serve result JSON or a GuideLLM benchmarks.json"
    )


def _positive(value: Any, where: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValidationError(f"{where} = {excerpt(value)} is not a number") from None
    if not (number > 0 and np.isfinite(number)):
        raise ValidationError(f"{where} = {excerpt(value)} is invalid; expected a number > 0")
    return number


def _silicon_points(text: str, path: Path, row_filter: RowFilter) -> list[tuple]:
    points = []
    reader = csv.DictReader(io.StringIO(text))
    with long_csv_fields():
        try:
            for number, row in enumerate(reader, start=2):
                if (row.get("mode") or "").strip() != "agg" or not row_filter.matches(row):
                    continue
                where = f"{path}, line {number}"
                concurrency, isl, osl, ttft_ms, tpot_ms = (
                    _positive(row[column], f"{where}: {column}") for column in _SILICON_COLUMNS
                )
                points.append((concurrency, isl, osl, ttft_ms / 1e3, tpot_ms / 1e3, f"{path.name}:{number}"))
        except csv.Error as exc:
            raise ValidationError(f"{path}, line {reader.line_num}: not valid CSV ({exc})") from None
    return points


def _vllm_points(text: str, path: Path, row_filter: RowFilter) -> list[tuple]:
    document = json_loads(text)
    missing = [
        key
        for key in (
            "max_concurrency",
            "completed",
            "total_input_tokens",
            "total_output_tokens",
            "mean_ttft_ms",
            "mean_tpot_ms",
        )
        if document.get(key) is None
    ]
    if missing:
        hint = (
            " (run vllm bench serve with --max-concurrency: a closed-loop benchmark)"
            if "max_concurrency" in missing
            else ""
        )
        raise ValidationError(f"{path}: missing {', '.join(missing)}{hint}")
    completed = _positive(document["completed"], f"{path}: completed")
    return [
        (
            _positive(document["max_concurrency"], f"{path}: max_concurrency"),
            _positive(document["total_input_tokens"], f"{path}: total_input_tokens") / completed,
            _positive(document["total_output_tokens"], f"{path}: total_output_tokens") / completed,
            _positive(document["mean_ttft_ms"], f"{path}: mean_ttft_ms") / 1e3,
            _positive(document["mean_tpot_ms"], f"{path}: mean_tpot_ms") / 1e3,
            path.name,
        )
    ]


def _successful_mean(metrics: dict, key: str, where: str) -> float:
    try:
        value = metrics[key]["successful"]["mean"]
    except (KeyError, TypeError):
        raise ValidationError(f"{where}: missing metrics.{key}.successful.mean") from None
    return _positive(value, f"{where}: metrics.{key}.successful.mean")


def _guidellm_points(text: str, path: Path, row_filter: RowFilter) -> list[tuple]:
    points = []
    for index, benchmark in enumerate(json_loads(text)["benchmarks"]):
        where = f"{path}, benchmarks[{index}]"
        metrics = benchmark.get("metrics") if isinstance(benchmark, dict) else None
        if not isinstance(metrics, dict):
            raise ValidationError(f"{where}: missing metrics")
        points.append(
            (
                _successful_mean(metrics, "request_concurrency", where),
                _successful_mean(metrics, "prompt_token_count", where),
                _successful_mean(metrics, "output_token_count", where),
                _successful_mean(metrics, "time_to_first_token_ms", where) / 1e3,
                _successful_mean(metrics, "inter_token_latency_ms", where) / 1e3,
                f"{path.name}[{index}]",
            )
        )
    return points


def _median_max(errors: np.ndarray) -> tuple[float, float]:
    return round(float(np.median(np.abs(errors))), 1), round(float(np.abs(errors).max()), 1)


def measured_profile_yaml(
    *,
    title: str,
    model: str,
    gpu: str,
    tensor_parallel: int,
    fit: Any,
    leave_one_out: tuple[np.ndarray, np.ndarray] | None,
    measurements: Measurements,
    description: str,
    date: str,
    max_num_seqs: int | None = None,
    weight_dtype: str | None = None,
    memory_utilization: float = 0.9,
    activation_reserve_gb: float = 10.0,
) -> str:
    """A serving profile (``calibration: measured``) for a fitted calibration, with its provenance.

    ``fit``: a :class:`fleetopt.core.calibrate.Fit`; ``leave_one_out``: per-row (TPOT, TTFT) %
    errors of each row predicted from the others, or None; ``description``: what the rows are."""
    tpot_med, tpot_max = _median_max(fit.tpot_pct_errors)
    ttft_med, ttft_max = _median_max(fit.ttft_pct_errors)
    text = (
        f"Fitted to {fit.rows} measured benchmark points ({description}) by bounded least squares on "
        f"relative TPOT and TTFT errors of the closed-loop model in fleetopt/core/calibrate.py "
        f"(docs/profiles.md). Median |error| TPOT {tpot_med}% and TTFT {ttft_med}% on the fitted rows"
    )
    if leave_one_out is not None:
        text += f", {_median_max(leave_one_out[0])[0]}% and {_median_max(leave_one_out[1])[0]}% leave-one-out"
    text += (
        f". KV capacity from memory with {memory_utilization:g} utilization and a "
        f"{activation_reserve_gb:g} GB "
        "per-GPU activation reserve (assumed)."
    )
    profile: dict[str, Any] = {
        "model": model,
        "gpu": gpu,
        "tensor_parallel": int(tensor_parallel),
        "calibration": "measured",
        "source": text,
        "iteration_base_ms": _short(fit.iteration_base_s * 1e3),
        # (> 0: the profile's reader requires a positive H)
        "iteration_per_slot_ms": _short(max(fit.iteration_per_slot_s * 1e3, 1e-6)),
        "prefill_per_token_us": _short(fit.prefill_per_token_s * 1e6),
    }
    if fit.iteration_per_kv_token_s > 0:
        profile["iteration_per_kv_token_ns"] = _short(fit.iteration_per_kv_token_s * 1e9)
    profile |= {
        "ttft_overhead_ms": _short(fit.ttft_overhead_s * 1e3),
        "prefill_chunk_tokens": int(fit.prefill_chunk_tokens),
        "calibration_context_tokens": 8192,
        "kv_block_tokens": 16,
        "kv_capacity": "memory",
        "gpu_memory_utilization": float(memory_utilization),
        "activation_reserve_gb_per_gpu": float(activation_reserve_gb),
    }
    if max_num_seqs is not None:
        profile["max_num_seqs"] = int(max_num_seqs)
    if weight_dtype is not None:
        profile["weight_dtype"] = weight_dtype
    fit_block = {
        "source": ", ".join(Path(source).name for source in measurements.sources),
        "formats": ", ".join(sorted(set(measurements.formats))),
        "rows": fit.rows,
        "filter": measurements.row_filter.describe(),
        "method": "bounded linear least squares (scipy lsq_linear, BVLS) on relative TPOT and TTFT errors",
        "date": date,
        "benchmark_prefill_overlap_us": _short(fit.benchmark_prefill_overlap_s * 1e6),
        "tpot_median_abs_pct_error": tpot_med,
        "tpot_max_abs_pct_error": tpot_max,
        "ttft_median_abs_pct_error": ttft_med,
        "ttft_max_abs_pct_error": ttft_max,
    }
    if leave_one_out is not None:
        fit_block |= {
            "leave_one_out_tpot_median_abs_pct_error": _median_max(leave_one_out[0])[0],
            "leave_one_out_tpot_max_abs_pct_error": _median_max(leave_one_out[0])[1],
            "leave_one_out_ttft_median_abs_pct_error": _median_max(leave_one_out[1])[0],
            "leave_one_out_ttft_max_abs_pct_error": _median_max(leave_one_out[1])[1],
        }
    profile["fit"] = fit_block
    from fleetopt.errors import printable
    from fleetopt.io.yamlio import dump_yaml

    body = dump_yaml(profile, width=96)
    return f"# {printable(title)}\n{body}"


def _short(value: float) -> float:
    """``value`` to 4 significant digits, as a float (the serializer writes it so YAML reads a
    float back: ``1.0e-06``, where ``f"{value:g}"`` wrote ``1e-06``, which YAML 1.1 reads as text)."""
    return float(f"{value:.4g}")
