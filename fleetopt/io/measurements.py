"""Reading measured benchmark results for calibration (``fleetopt calibrate``).

Four formats, detected from the content. Each row is one benchmark run of identical requests
under a protocol (:data:`fleetopt.core.calibrate.PROTOCOLS`: ``closed`` at concurrency c, a
``batch`` of c started together, ``open`` at a request rate, optionally capped at c in flight), with
its prompt and output tokens and its TTFT and TPOT (the mean, or where a file has no mean, the
median or a percentile, which the fit then takes of its simulated requests too):

* ``silicon-csv`` — the measured-results CSV of NVIDIA aiconfigurator (``silicon_sample.csv``:
  columns ``system, backend, model_path, precision, mode, isl, osl, batch_size, tp_size,
  silicon_ttft_ms, silicon_tpot_ms``; only ``mode == agg`` rows), closed loop at ``batch_size``
  unless ``--protocol batch`` says the runs started their requests together. Rows are selected
  with :class:`RowFilter`; rows of more than one (system, backend, model, TP, precision) are refused.
* ``plain-csv`` — columns ``input_tokens``, ``output_tokens``, ``concurrency`` and/or
  ``request_rate_per_s``, and TTFT and TPOT (or ITL) columns named as vLLM's
  (``mean_ttft_ms``, ``median_ttft_ms``, ``p99_ttft_ms``, ``mean_tpot_ms``, ``mean_itl_ms``, …);
  optional ``protocol`` and ``requests``. A row with a rate is open loop.
* ``vllm-bench`` — ``vllm bench serve --save-result`` JSON, or ``--append-result`` JSON lines (one
  run per line; vllm/benchmarks/serve.py at commit 009e6d4a1cd6): ``completed``,
  ``total_input_tokens``, ``total_output_tokens``, ``mean_ttft_ms``/``mean_tpot_ms`` (or the
  median or ``pNN`` ones), ``request_rate`` (``"inf"`` or a rate), ``max_concurrency``,
  ``burstiness``, ``model_id``. Rate ``inf`` with a concurrency is closed loop; ``inf`` without one
  sends every prompt at once (a batch); a finite rate is open loop (Poisson; other burstiness is
  refused). Runs of different ``model_id`` are refused.
* ``guidellm`` — GuideLLM's ``benchmarks.json`` (src/guidellm/benchmark/schemas/generative/
  metrics.py): per benchmark the strategy ``config.strategy`` (``synchronous``: closed at 1,
  ``concurrent``: closed at ``streams``, ``poisson``: open at ``rate``; others are refused) and
  ``metrics.prompt_token_count``, ``output_token_count``, ``time_to_first_token_ms``,
  ``inter_token_latency_ms``, each a summary by status whose ``successful.mean`` is used (the
  inter-token latency is TPOT without the first token, as vLLM's TPOT).
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

from fleetopt.core.calibrate import PARAMETERS, Benchmark
from fleetopt.errors import ValidationError, excerpt
from fleetopt.io.files import long_csv_fields, read_text
from fleetopt.io.yamlio import DuplicateKeyError, json_loads

MEASUREMENT_FORMATS = ("silicon-csv", "plain-csv", "vllm-bench", "guidellm")
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


@dataclass(frozen=True)
class _Point:
    concurrency: float  # inf: an open loop without a cap
    input_tokens: float
    output_tokens: float
    ttft_s: float
    tpot_s: float
    label: str
    protocol: str = "closed"
    rate_per_s: float = float("nan")
    requests: float = float("nan")
    statistic: str = "mean"
    identity: tuple[tuple[str, str], ...] = ()  # what ran: (field, value) pairs


def read_measurements(
    paths: Sequence[str | Path], row_filter: RowFilter | None = None, *, protocol: str | None = None
) -> Measurements:
    """Every benchmark point of ``paths`` (formats detected per file), filtered by ``row_filter``;
    ``protocol``: that of CSV rows that do not say (``closed`` or ``batch``; default closed).

    Raises ValidationError naming the file (and row and field) for unreadable files, unknown
    formats, missing fields, non-positive values, runs of different models or setups, protocols
    the fit does not simulate, and when nothing is left after filtering.
    """
    from fleetopt.core.calibrate import PROTOCOLS

    row_filter = row_filter or RowFilter()
    if not paths:
        raise ValidationError("calibrate: give at least one file of measured results")
    if protocol is not None and protocol not in ("closed", "batch"):
        raise ValidationError(f"--protocol: {excerpt(protocol)} is not one of closed, batch")
    points: list[_Point] = []
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
        if protocol is not None and not fmt.endswith("csv"):
            raise ValidationError(
                f"{path}: --protocol is for CSV rows; a {fmt} file says its own protocol: drop --protocol"
            )
        reader = {
            "silicon-csv": _silicon_points, "plain-csv": _plain_points, "vllm-bench": _vllm_points,
            "guidellm": _guidellm_points,
        }[fmt]  # fmt: skip
        points.extend(reader(text, path, row_filter, protocol or "closed"))
    if not points:
        raise ValidationError(
            f"calibrate: no usable rows in {', '.join(str(p) for p in paths)} ({row_filter.describe()})"
        )
    _refuse_mixed(points)
    for point in points:
        assert point.protocol in PROTOCOLS
        _check_plausible(point)
    benchmark = Benchmark(
        np.array([p.concurrency for p in points], dtype=np.float64),
        np.array([p.input_tokens for p in points], dtype=np.float64),
        np.array([p.output_tokens for p in points], dtype=np.float64),
        np.array([p.ttft_s for p in points], dtype=np.float64),
        np.array([p.tpot_s for p in points], dtype=np.float64),
        tuple(p.protocol for p in points),
        np.array([p.rate_per_s for p in points], dtype=np.float64),
        np.array([p.requests for p in points], dtype=np.float64),
        tuple(p.statistic for p in points),
    )
    return Measurements(
        benchmark, tuple(str(p) for p in paths), tuple(formats), row_filter, tuple(p.label for p in points)
    )


def _refuse_mixed(points: Sequence[_Point]) -> None:
    """Refuse runs of more than one model or setup in one fit (naming both rows and the field)."""
    first: dict[str, tuple[str, str]] = {}
    for point in points:
        for name, value in point.identity:
            if name not in first:
                first[name] = (value, point.label)
            elif first[name][0] != value:
                seen, where = first[name]
                raise ValidationError(
                    f"{point.label}: {name} {excerpt(value)} differs from {excerpt(seen)} of {where}: "
                    "one fit is of one model on one setup; give the files of one, or filter the CSV rows "
                    "(--system, --backend, --model, --tp, --precision)"
                )


#: The range a measured TTFT or TPOT must lie in, seconds (1 µs to 1 h): no engine serves a
#: model faster or slower; outside it the row is a unit error or a broken benchmark (one row of 1e308
#: or 1e-300 collapsed the least-squares fit to zeros).
PLAUSIBLE_LATENCY_S = (1e-6, 3600.0)
#: The most concurrent requests a benchmark row may claim, and the highest request rate, req/s.
MAX_CONCURRENCY = 1_000_000
MAX_RATE_PER_S = 1e6


def _check_plausible(point: _Point) -> None:
    """Refuse a benchmark point no engine could have produced (ValidationError naming the row)."""
    from fleetopt.io.logs import MAX_REQUEST_TOKENS

    low, high = PLAUSIBLE_LATENCY_S
    label = point.label
    for name, value in (("TTFT", point.ttft_s), ("TPOT", point.tpot_s)):
        if not low <= value <= high:
            raise ValidationError(
                f"{label}: {point.statistic} {name} {value * 1e3:.4g} ms is outside what any engine measures "
                "(1 µs to 1 h): a unit error or a broken benchmark; fix or drop the row"
            )
    if not (
        1 <= point.concurrency <= MAX_CONCURRENCY
        or (point.protocol == "open" and point.concurrency == np.inf)
    ):
        raise ValidationError(
            f"{label}: concurrency {point.concurrency:g} must be from 1 to {MAX_CONCURRENCY:,}"
        )
    if point.protocol == "open" and not 0 < point.rate_per_s <= MAX_RATE_PER_S:
        raise ValidationError(
            f"{label}: request rate {point.rate_per_s:g}/s must be in (0, {MAX_RATE_PER_S:g}]"
        )
    for name, value in (("prompt", point.input_tokens), ("output", point.output_tokens)):
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


_PLAIN_TOKENS = ("input_tokens", "output_tokens")
_PLAIN_LOAD = ("concurrency", "request_rate_per_s")


def detect_measurement_format(text: str, path: Path) -> str:
    """``silicon-csv``, ``plain-csv``, ``vllm-bench`` or ``guidellm`` from the content."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        first = _json_documents(text, path)[0][1]
        if isinstance(first, dict) and isinstance(first.get("benchmarks"), list):
            return "guidellm"
        if isinstance(first, dict) and any(key.endswith("_ttft_ms") for key in first):
            return "vllm-bench"
        raise ValidationError(
            f"{path}: a JSON file that is neither a `vllm bench serve --save-result` result "
            "(no mean_ttft_ms) "
            "nor a GuideLLM benchmarks.json (no benchmarks list)"
        )
    header = [h.strip() for h in stripped.splitlines()[0].split(",")] if stripped else []
    if all(column in header for column in _SILICON_COLUMNS):
        return "silicon-csv"
    if all(c in header for c in _PLAIN_TOKENS) and any(c in header for c in _PLAIN_LOAD):
        return "plain-csv"
    raise ValidationError(
        f"{path}: not a measured-results file: expected a CSV with the columns "
        f"{', '.join(_SILICON_COLUMNS)} (aiconfigurator's) or input_tokens, output_tokens, concurrency or "
        "request_rate_per_s and TTFT and TPOT columns, "
        "a vllm bench serve result JSON (or JSON lines) or a GuideLLM benchmarks.json"
    )


def _json_documents(text: str, path: Path) -> list[tuple[str, Any]]:
    """The JSON document of ``text``, or each line's of a JSON-lines file (``vllm bench serve
    --append-result``): (where, document) pairs."""
    try:
        return [(str(path), _json_document(text))]
    except json.JSONDecodeError as whole:
        if whole.msg != "Extra data":
            raise ValidationError(
                f"{path}: not valid JSON at line {whole.lineno}, column {whole.colno}: {whole.msg}"
            ) from None
    documents = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            documents.append((f"{path}, line {number}", _json_document(line)))
        except json.JSONDecodeError as exc:
            raise ValidationError(
                f"{path}, line {number}: not valid JSON at column {exc.colno}: {exc.msg}"
            ) from None
    return documents


def _json_document(text: str) -> Any:
    try:
        return json_loads(text)
    except RecursionError:
        raise ValidationError("JSON nested too deeply to be a benchmark result") from None
    except DuplicateKeyError as exc:
        raise ValidationError(str(exc)) from None


def _positive(value: Any, where: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValidationError(f"{where} = {excerpt(value)} is not a number") from None
    if not (number > 0 and np.isfinite(number)):
        raise ValidationError(f"{where} = {excerpt(value)} is invalid; expected a number > 0")
    return number


def _silicon_points(text: str, path: Path, row_filter: RowFilter, protocol: str) -> list[_Point]:
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
                identity = tuple(
                    (column, (row.get(column) or "").strip())
                    for column in ("system", "backend", "model_path", "tp_size", "precision")
                )
                points.append(
                    _Point(
                        concurrency,
                        isl,
                        osl,
                        ttft_ms / 1e3,
                        tpot_ms / 1e3,
                        f"{path.name}:{number}",
                        protocol,
                        identity=identity,
                    )  # fmt: skip
                )
        except csv.Error as exc:
            raise ValidationError(f"{path}, line {reader.line_num}: not valid CSV ({exc})") from None
    return points


def _latency_s(fields: dict[str, Any], metrics: Sequence[str], where: str) -> tuple[float, str] | None:
    """(seconds, statistic) of the first of ``metrics`` (e.g. ``ttft``, then ``itl``) with a mean, else
    a median, else a percentile (p90, p95, p99), in ``fields`` (``<stat>_<metric>_ms``); None if none."""
    from fleetopt.core.calibrate import STATISTICS

    for statistic in STATISTICS:
        for metric in metrics:
            key = f"{statistic}_{metric}_ms"
            if fields.get(key) not in (None, ""):
                return _positive(fields[key], f"{where}: {key}") / 1e3, statistic
    return None


def _two_latencies(fields: dict[str, Any], where: str) -> tuple[float, float, str]:
    """(TTFT s, TPOT s, statistic) of one statistic both are given in (the mean where there is one)."""
    from fleetopt.core.calibrate import STATISTICS

    for statistic in STATISTICS:
        ttft = _latency_s(
            {k: v for k, v in fields.items() if k.startswith(statistic + "_")}, ("ttft",), where
        )
        tpot = _latency_s(
            {k: v for k, v in fields.items() if k.startswith(statistic + "_")}, ("tpot", "itl"), where
        )
        if ttft is not None and tpot is not None:
            return ttft[0], tpot[0], statistic
    raise ValidationError(
        f"{where}: no TTFT and TPOT of one statistic (mean_ttft_ms and mean_tpot_ms, or median_, p90_, p95_, "
        "p99_; ITL stands in for TPOT)"
    )


def _plain_points(text: str, path: Path, row_filter: RowFilter, protocol: str) -> list[_Point]:
    from fleetopt.core.calibrate import PROTOCOLS

    points = []
    reader = csv.DictReader(io.StringIO(text))
    with long_csv_fields():
        try:
            for number, raw in enumerate(reader, start=2):
                row = {(k or "").strip(): (v or "").strip() for k, v in raw.items()}
                where = f"{path}, line {number}"
                isl, osl = (_positive(row[c], f"{where}: {c}") for c in _PLAIN_TOKENS)
                rate = row.get("request_rate_per_s", "")
                concurrency = row.get("concurrency", "")
                row_protocol = row.get("protocol") or ("open" if rate else protocol)
                if row_protocol not in PROTOCOLS:
                    raise ValidationError(
                        f"{where}: protocol = {excerpt(row_protocol)} is not one of {', '.join(PROTOCOLS)}"
                    )
                if row_protocol == "open" and not rate:
                    raise ValidationError(f"{where}: request_rate_per_s is needed for an open-loop row")
                if row_protocol != "open" and not concurrency:
                    raise ValidationError(f"{where}: concurrency is needed for a {row_protocol} row")
                ttft_s, tpot_s, statistic = _two_latencies(row, where)
                points.append(
                    _Point(
                        _positive(concurrency, f"{where}: concurrency") if concurrency else np.inf, isl, osl,
                        ttft_s, tpot_s, f"{path.name}:{number}", row_protocol,
                        _positive(rate, f"{where}: request_rate_per_s") if row_protocol == "open" else np.nan,
                        _positive(row["requests"], f"{where}: requests") if row.get("requests") else np.nan,
                        statistic,
                    )
                )  # fmt: skip
        except csv.Error as exc:
            raise ValidationError(f"{path}, line {reader.line_num}: not valid CSV ({exc})") from None
    return points


def _vllm_points(text: str, path: Path, row_filter: RowFilter, protocol: str) -> list[_Point]:
    points = []
    documents = _json_documents(text, path)
    for index, (where, document) in enumerate(documents):
        if not isinstance(document, dict):
            raise ValidationError(f"{where}: expected a JSON object (a vllm bench serve result)")
        missing = [
            key
            for key in ("completed", "total_input_tokens", "total_output_tokens")
            if document.get(key) is None
        ]
        if missing:
            raise ValidationError(f"{where}: missing {', '.join(missing)}")
        completed = _positive(document["completed"], f"{where}: completed")
        raw_rate = document.get("request_rate", "inf")
        rate = np.inf if raw_rate in ("inf", None) else _positive(raw_rate, f"{where}: request_rate")
        cap = document.get("max_concurrency")
        concurrency = np.inf if cap is None else _positive(cap, f"{where}: max_concurrency")
        burstiness = document.get("burstiness", 1.0)
        if np.isfinite(rate) and burstiness not in (None, 1, 1.0):
            raise ValidationError(
                f"{where}: burstiness = {excerpt(burstiness)}: only Poisson arrivals (burstiness 1) of an "
                "open-loop run are simulated; drop the run or rerun it with --burstiness 1"
            )
        if np.isfinite(rate):
            run_protocol = "open"
        elif np.isfinite(concurrency):
            run_protocol = "closed"
        else:  # every prompt sent at once: a batch of them all
            run_protocol, concurrency = "batch", completed
        ttft_s, tpot_s, statistic = _two_latencies(document, where)
        label = path.name if len(documents) == 1 else f"{path.name}:{index + 1}"
        identity = tuple(
            (key, str(document[key])) for key in ("model_id",) if document.get(key) not in (None, "")
        )
        points.append(
            _Point(
                concurrency,
                _positive(document["total_input_tokens"], f"{where}: total_input_tokens") / completed,
                _positive(document["total_output_tokens"], f"{where}: total_output_tokens") / completed,
                ttft_s, tpot_s, label, run_protocol, rate if run_protocol == "open" else np.nan, completed,
                statistic, identity,
            )
        )  # fmt: skip
    return points


def _successful_mean(metrics: dict, key: str, where: str) -> float:
    try:
        value = metrics[key]["successful"]["mean"]
    except (KeyError, TypeError):
        raise ValidationError(f"{where}: missing metrics.{key}.successful.mean") from None
    return _positive(value, f"{where}: metrics.{key}.successful.mean")


#: GuideLLM strategies the fit simulates, and what they are.
_GUIDELLM_STRATEGIES = {"synchronous": "closed", "concurrent": "closed", "poisson": "open"}


def _guidellm_points(text: str, path: Path, row_filter: RowFilter, protocol: str) -> list[_Point]:
    points = []
    for index, benchmark in enumerate(_json_document(text)["benchmarks"]):
        where = f"{path}, benchmarks[{index}]"
        metrics = benchmark.get("metrics") if isinstance(benchmark, dict) else None
        if not isinstance(metrics, dict):
            raise ValidationError(f"{where}: missing metrics")
        strategy = (
            ((benchmark.get("config") or {}).get("strategy") or {}) if isinstance(benchmark, dict) else {}
        )
        kind = strategy.get("type_") if isinstance(strategy, dict) else None
        if kind not in _GUIDELLM_STRATEGIES:
            raise ValidationError(
                f"{where}: config.strategy.type_ = {excerpt(kind)}: the fit simulates synchronous, "
                "concurrent and poisson runs (a throughput or constant-rate run has no protocol it "
                "reproduces); drop it"
            )
        run_protocol = _GUIDELLM_STRATEGIES[kind]
        concurrency = 1.0 if kind == "synchronous" else np.inf
        rate = np.nan
        if kind == "concurrent":
            concurrency = _positive(strategy.get("streams"), f"{where}: config.strategy.streams")
        if kind == "poisson":
            rate = _positive(strategy.get("rate"), f"{where}: config.strategy.rate")
        points.append(
            _Point(
                concurrency,
                _successful_mean(metrics, "prompt_token_count", where),
                _successful_mean(metrics, "output_token_count", where),
                _successful_mean(metrics, "time_to_first_token_ms", where) / 1e3,
                _successful_mean(metrics, "inter_token_latency_ms", where) / 1e3,
                f"{path.name}[{index}]", run_protocol, rate,
            )
        )  # fmt: skip
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
        f"relative TPOT and TTFT errors of the planner's iteration model run through fleetopt's "
        f"physical engine under each row's protocol (fleetopt/core/calibrate.py, docs/profiles.md). "
        f"Median |error| TPOT {tpot_med}% and TTFT {ttft_med}% on the fitted rows"
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
        "method": (
            "bounded least squares (scipy least_squares) on relative TPOT and TTFT errors of the "
            "physical engine under each row's protocol"
        ),
        "date": date,
        "protocols": ", ".join(sorted(set(measurements.benchmark.protocol))),
        "max_input_tokens": int(round(float(np.max(measurements.benchmark.input_tokens)))),
        "max_output_tokens": int(round(float(np.max(measurements.benchmark.output_tokens)))),
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
    for name, key, factor in PROFILE_PARAMETERS:
        if name in fit.fitted:
            low, high = fit.intervals_s[PARAMETERS.index(name)]
            fit_block[f"{key}_p10_p90"] = [_short(low * factor), _short(high * factor)]
    profile["fit"] = fit_block
    from fleetopt.errors import printable
    from fleetopt.io.yamlio import dump_yaml

    body = dump_yaml(profile, width=96)
    return f"# {printable(title)}\n{body}"


#: (parameter, profile key, factor from seconds) of the fitted parameters.
PROFILE_PARAMETERS = (
    ("iteration_base_s", "iteration_base_ms", 1e3),
    ("iteration_per_slot_s", "iteration_per_slot_ms", 1e3),
    ("prefill_per_token_s", "prefill_per_token_us", 1e6),
    ("iteration_per_kv_token_s", "iteration_per_kv_token_ns", 1e9),
    ("ttft_overhead_s", "ttft_overhead_ms", 1e3),
)


def _short(value: float) -> float:
    """``value`` to 4 significant digits, as a float (the serializer writes it so YAML reads a
    float back: ``1.0e-06``, where ``f"{value:g}"`` wrote ``1e-06``, which YAML 1.1 reads as text)."""
    return float(f"{value:.4g}")
