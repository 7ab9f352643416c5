"""Reading workloads: request logs, summaries and CDF tables, detected from content, into a Workload.

One entry point, :func:`load_workload`, takes a bundled name (``workloads/<name>.yaml``), a path,
a glob (``logs/*.csv.gz``) or a URL (``s3://…``, ``https://…``). Formats (docs/workloads.md):

* ``azure``    — Azure LLM inference trace CSV: ``TIMESTAMP,ContextTokens,GeneratedTokens``.
* ``csv``      — any CSV request log with a header; columns given, from a ``--log-format`` preset,
  or recognised by name.
* ``jsonl``    — one JSON object per line (Mooncake-style ``input_length``/``output_length``/
  ``timestamp`` in ms, or any preset's fields).
* ``json``     — a JSON document of request records (or a preset's nested layout).
* ``parquet``  — a Parquet table of requests.
* ``summary``  — a workload summary (fleetopt/io/summaries.py): Parquet, CSV or JSON.
* ``cdf-json`` — ``[[total_tokens, F], ...]`` or ``{"cdf": [...], ...}`` (the reference's format).
* ``cdf-csv``  — CSV with header ``tokens,cdf``.

Logs are read by DuckDB (fleetopt/io/logs.py), gzip-compressed or not. When a local CSV or JSON
lines file has a row DuckDB cannot take or that is not a valid request, the careful line-by-line
reader here re-reads it and names the line, the field and the value.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import io
import json
import math
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from fleetopt.core.workload import (
    MICROSECONDS_PER_S,
    ArrivalSpan,
    Workload,
    parse_split_model,
    workload_from_cdf,
    workload_from_counts,
    workload_from_requests,
)
from fleetopt.errors import NotFoundError, ValidationError, excerpt
from fleetopt.io.files import gunzip_checked, long_csv_fields
from fleetopt.io.yamlio import DuplicateKeyError, json_loads, safe_load

if TYPE_CHECKING:  # the log modules load only when a log is read (start-up of CDF commands)
    from fleetopt.io.log_formats import LogFormat
    from fleetopt.io.logs import LogSource

INPUT_FORMATS = ("azure", "csv", "jsonl", "json", "parquet", "summary", "cdf-json", "cdf-csv")
LOG_INPUT_FORMATS = ("azure", "csv", "jsonl", "json", "parquet")

AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")

# Column names recognised (case-insensitively) when a log's columns are not given.
INPUT_COLUMN_NAMES = ("input_tokens", "input_length", "prompt_tokens", "contexttokens", "request tokens")
OUTPUT_COLUMN_NAMES = (
    "output_tokens",
    "output_length",
    "completion_tokens",
    "generatedtokens",
    "response tokens",
)
TIME_COLUMN_NAMES = (
    "arrival_offset_us",
    "arrival_offset_ms",
    "arrival_time_s",
    "timestamp_s",
    "timestamp_ms",
    "timestamp",
    "time",
)
#: Columns recognised (case-insensitively) as the cached prompt tokens of a log without a preset:
#: OpenAI's name (``usage.prompt_tokens_details.cached_tokens``, a part of the prompt) and a plain one.
CACHED_COLUMN_NAMES = ("cached_tokens", "cached_prompt_tokens")
CDF_TOKEN_COLUMN_NAMES = ("tokens", "total_tokens")
CDF_FRACTION_COLUMN_NAMES = ("cdf", "f")

# Seconds per unit of a numeric time column, from its name's suffix (no suffix: seconds).
_TIME_SUFFIX_SCALE_S = (("_ns", 1e-9), ("_us", 1e-6), ("_ms", 1e-3), ("_s", 1.0))
#: Mooncake's JSONL ``timestamp`` is in milliseconds since the first request.
JSONL_TIMESTAMP_SCALE_S = 1e-3

_DATETIME_PATTERN = re.compile(
    r"^\s*(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?\s*(Z|[+-]\d{2}:?\d{2})?\s*$"
)
_INTEGER_PATTERN = re.compile(r"^\s*[+-]?\d+\s*$")


@dataclass(frozen=True)
class RequestLog:
    """Raw request columns as read from a log, one entry per request in file order (before
    aggregation). ``arrival_us``: arrival on the log's clock in whole µs (UTC µs since the epoch
    when ``utc``), or None without a time column. ``cached_tokens``: the cached prompt tokens
    each row reports (-1 where it reports none), None for a log without the field;
    ``cached_field``: that field's name."""

    input_tokens: np.ndarray
    output_tokens: np.ndarray
    arrival_us: np.ndarray | None
    utc: bool = False
    cached_tokens: np.ndarray | None = None
    cached_field: str | None = None

    @property
    def arrival_times_s(self) -> np.ndarray | None:
        """Seconds from the log's earliest arrival, in file order."""
        if self.arrival_us is None:
            return None
        return (self.arrival_us - self.arrival_us.min()) * 1e-6


@dataclass(frozen=True)
class ReaderOptions:
    """How to read a log: the layout (``input_format``), the column preset (``log_format``),
    explicit columns, the unit of a numeric time column, and an absolute origin for offsets."""

    input_format: str | None = None
    log_format: LogFormat | None = None
    input_column: str | None = None
    output_column: str | None = None
    time_column: str | None = None
    time_unit_s: float | None = None
    time_origin_us: int | None = None


# --------------------------------------------------------------------------- public API


def bundled_workload_names() -> list[str]:
    """Names of the bundled workloads (``workloads/<name>.yaml`` manifests), sorted."""
    from fleetopt.io.data import bundled_dir

    folder = bundled_dir("workloads")
    return sorted(p.name[: -len(".yaml")] for p in folder.glob("*.yaml")) if folder.is_dir() else []


def load_workload(
    name_or_path: str,
    *,
    input_format: str | None = None,
    input_column: str | None = None,
    output_column: str | None = None,
    time_column: str | None = None,
    split: str | None = None,
    log_format: str | None = None,
    time_unit: str | None = None,
) -> Workload:
    """Load a bundled workload by name, or a request log / summary / CDF by path, glob or URL.

    ``input_format`` overrides detection (one of :data:`INPUT_FORMATS`); ``log_format`` names a
    column preset (:data:`fleetopt.io.log_formats.LOG_FORMATS`); the column options and
    ``time_unit`` (s, ms, us, ns: the unit of a numeric time column) apply to logs; ``split`` is
    the input/output split model of a CDF (``fleet-sim``, ``input-fraction:F``,
    ``output-tokens:N``) and is ignored for logs, which carry their own split. Without ``split`` a
    CDF file that gives its mean input and output lengths (``mean_input_tokens``,
    ``mean_output_tokens``) is split in that proportion; a bare CDF gets the reference's 80/20
    split, marked ``split_assumed``.
    """
    split_model = None if split is None else parse_split_model(split)
    options = reader_options_for(
        input_format, log_format, input_column, output_column, time_column, time_unit
    )
    place = _locate(name_or_path, options)
    if place.kind == "bundled":
        return _load_bundled(name_or_path, split_model)
    if place.kind == "cdf-json":
        tokens, fractions, extra = _parse_cdf_json(_read_bytes(place.path), place.path)
        split_model = split_model or _split_from_file(extra, place.path)
        return _cdf_workload(tokens, fractions, place.name, split_model, place.label)
    if place.kind == "cdf-csv":
        tokens, fractions = _parse_cdf_csv(_read_bytes(place.path), place.path)
        return _cdf_workload(tokens, fractions, place.name, split_model, place.label)
    if place.kind == "summary":
        from fleetopt.core.summary import workload_from_summary

        return workload_from_summary(place.read_summary(), place.name, place.label)
    return _log_workload(_read_source(place.source, place.options, place.careful), place.name, place.label)


def reader_options_for(
    input_format: str | None,
    log_format: str | None,
    input_column: str | None,
    output_column: str | None,
    time_column: str | None,
    time_unit: str | None,
) -> ReaderOptions:
    """Checked reader options (an unknown format, preset or unit is a ValidationError)."""
    if input_format is not None and input_format not in INPUT_FORMATS:
        raise ValidationError(
            f"unknown input format {excerpt(input_format)} (allowed: {', '.join(INPUT_FORMATS)})"
        )
    return ReaderOptions(
        input_format=input_format,
        log_format=log_format_option(log_format, input_format),
        input_column=input_column,
        output_column=output_column,
        time_column=time_column,
        time_unit_s=_time_unit_s(time_unit),
    )


def _time_unit_s(name: str | None) -> float | None:
    if name is None:
        return None
    from fleetopt.io.log_formats import time_unit_seconds

    return time_unit_seconds(name)


def log_format_option(name: str | None, input_format: str | None) -> LogFormat | None:
    """The ``--log-format`` preset; ``--input-format azure`` implies the ``azure`` preset."""
    if name is None and input_format != "azure":
        return None
    from fleetopt.io.log_formats import LOG_FORMATS, log_format

    preset = log_format(name)
    if preset is None and input_format == "azure":
        return LOG_FORMATS["azure"]
    return preset


def read_request_log(
    path: str | Path,
    *,
    input_format: str | None = None,
    input_column: str | None = None,
    output_column: str | None = None,
    time_column: str | None = None,
    log_format: str | None = None,
    time_unit: str | None = None,
) -> RequestLog:
    """Read the raw request columns of a local log file, one entry per request in file order."""
    path = Path(path)
    options = reader_options_for(
        input_format, log_format, input_column, output_column, time_column, time_unit
    )
    place = _locate_file(path, str(path), path.name, options)
    if place.kind in ("cdf-json", "cdf-csv"):
        raise ValidationError(f"{path}: is a CDF table ({place.kind}), not a request log")
    if place.kind == "summary":
        raise ValidationError(f"{path}: is a workload summary, not a request log (it has no rows to read)")
    return _read_rows(place)


def detect_format(data: bytes, path: Path | str = "<data>") -> str:
    """The input format of decompressed file content (rules in docs/workloads.md)."""
    if data[:4] == b"PAR1":
        return "parquet"
    if not data or data.isspace():
        raise ValidationError(f"{path}: the file is empty")
    text = _skip_leading_space(data)
    if text[:1] == b"[":
        return "cdf-json"
    if text[:1] == b"{":
        first_line = text[: text.find(b"\n")] if b"\n" in text[:65536] else text
        try:
            first = json.loads(first_line)
        except (ValueError, RecursionError):
            if _SUMMARY_KEY in text[:4096]:
                return "summary"
            return _json_document_kind(text)
        if isinstance(first, dict) and first.get("fleetopt_summary") is not None:
            return "summary"
        from fleetopt.io.summaries import is_summary_header

        if isinstance(first, dict) and is_summary_header([str(k) for k in first]):
            return "summary"
        if isinstance(first, dict) and "cdf" not in first:
            keys = {str(k).lower() for k in first}
            if keys & set(INPUT_COLUMN_NAMES) or keys & _PRESET_KEYS:
                return "jsonl"
            try:  # one whole JSON document that is not a request: let the CDF reader say why
                json.loads(text)
                return "cdf-json"
            except (ValueError, RecursionError):
                return "jsonl"
        return "cdf-json"
    header = [c.strip().lower() for c in _split_header(_first_line(text))]
    if [c.lower() for c in AZURE_COLUMNS] == header:
        return "azure"
    if len(header) == 2 and header[0] in CDF_TOKEN_COLUMN_NAMES and header[1] in CDF_FRACTION_COLUMN_NAMES:
        return "cdf-csv"
    from fleetopt.io.summaries import is_summary_header

    if is_summary_header(header):
        return "summary"
    return "csv"


_SUMMARY_KEY = b'"fleetopt_summary"'
# Top-level keys of the presets' JSON layouts (a multi-line document of one of them is a log).
_PRESET_KEYS = {"resourcespans", "input_lens", "prompt_tokens", "inputusage", "request_received_ts"}


def _json_document_kind(text: bytes) -> str:
    """A multi-line JSON document: a preset's log layout when its keys say so, else a CDF (whose
    reader says why it is not one)."""
    head = text[:65536].lower()
    if any(f'"{key}"'.encode() in head for key in _PRESET_KEYS):
        return "json"
    return "cdf-json"


# --------------------------------------------------------------------------- files and manifests


_HEAD_BYTES = 1 << 16


def _read_head(path: Path, size: int = _HEAD_BYTES) -> bytes:
    """The first ``size`` bytes of a file's content (of its decompressed content when
    gzip-compressed; a truncated gzip stream gives what it holds)."""
    try:
        with open(path, "rb") as stream:
            head = stream.read(size)
            if head[:2] != b"\x1f\x8b":
                return head
            decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
            out, data = bytearray(), head
            while len(out) < size and not decompressor.eof:
                out += decompressor.decompress(data, size - len(out))
                data = decompressor.unconsumed_tail or stream.read(_HEAD_BYTES)
                if not data:
                    break
            return bytes(out)
    except FileNotFoundError:
        raise NotFoundError(f"{path}: no such file") from None
    except zlib.error as exc:
        raise ValidationError(f"{path}: not a valid gzip file ({exc})") from None
    except OSError as exc:
        raise ValidationError(f"{path}: cannot read ({exc.strerror})") from None


def _is_gzip(path: Path) -> bool:
    try:
        with open(path, "rb") as stream:
            return stream.read(2) == b"\x1f\x8b"
    except OSError:
        return False


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, gunzipped if they start with the gzip magic number."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise NotFoundError(f"{path}: no such file") from None
    except OSError as exc:
        raise ValidationError(f"{path}: cannot read ({exc.strerror})") from None
    if data[:2] == b"\x1f\x8b":
        data = gunzip_checked(path, data)
    if not data or data.isspace():
        raise ValidationError(f"{path}: the file is empty")
    _check_text(data, path)
    return data


def _check_text(data: bytes, path: Path, whole: bool = True) -> None:
    """Refuse UTF-16/32 and binary files by name (their headers would read as garbage)."""
    for bom, encoding in (
        (b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
        (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"),
    ):  # fmt: skip
        if data.startswith(bom):
            raise ValidationError(f"{path}: the file is {encoding}-encoded; save it as UTF-8")
    head = data[:65536]
    if b"\x00" in head:
        raise ValidationError(
            f"{path}: not a text file (it contains NUL bytes: binary data, or UTF-16 without a BOM)"
        )
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if (whole and len(head) == len(data)) or exc.start < len(head) - 4:  # not a character cut by the head
            raise ValidationError(
                f"{path}: not UTF-8 text (byte {exc.start:,} is 0x{head[exc.start]:02x}); save it as UTF-8"
            ) from None


def _detect_file(path: Path, input_format: str | None) -> tuple[str, bytes]:
    """(format, head) of a local file: the given ``input_format``, else detected on its content."""
    head = _read_head(path)
    if head[:4] != b"PAR1":
        if not head or head.isspace():
            raise ValidationError(f"{path}: the file is empty")
        _check_text(head, path, whole=len(head) < _HEAD_BYTES)
    fmt = input_format or detect_format(head, path)
    if fmt == "parquet" and input_format is None and _parquet_is_summary(path):
        fmt = "summary"
    return fmt, head


def _parquet_is_summary(path: Path) -> bool:
    """Whether a Parquet file's columns are a summary table's."""
    from fleetopt.io.logs import connect, sql_string
    from fleetopt.io.summaries import is_summary_header

    try:
        columns = (
            connect().execute(f"DESCRIBE SELECT * FROM read_parquet({sql_string(str(path))})").fetchall()
        )
    except Exception:  # noqa: BLE001 - not readable: the log reader says why
        return False
    return is_summary_header([c[0] for c in columns])


@dataclass(frozen=True)
class _Place:
    """What a workload argument names, resolved before any reading: ``kind`` is ``log``,
    ``summary``, ``cdf-json``, ``cdf-csv`` or ``bundled``; a log has its DuckDB ``source`` and, for
    a local text file, the ``careful`` line-by-line reader; a summary its reader."""

    kind: str
    label: str
    name: str
    options: ReaderOptions
    path: Path | None = None
    source: LogSource | None = None
    careful: Callable[[], RequestLog] | None = None
    read_summary: Callable[[], object] | None = None


def _locate(name_or_path: str, options: ReaderOptions) -> _Place:
    """Resolve a workload argument: a local file (detected on its content), a folder (refused), a
    glob or URL, a bundled name, or nothing (a NotFoundError listing the bundled names)."""
    path = Path(name_or_path).expanduser()
    if path.is_file():
        return _locate_file(path, str(path), path.name, options)
    if path.is_dir():
        raise ValidationError(f"{name_or_path}: is a folder, not a workload file")
    names = bundled_workload_names()
    if name_or_path in names:  # (a bundled name is never a glob or a URL)
        return _Place("bundled", name_or_path, name_or_path, options)
    from fleetopt.io.logs import is_pattern, is_remote

    if is_remote(name_or_path) or is_pattern(name_or_path):
        return _locate_many(name_or_path, options)
    raise NotFoundError(
        f"workload {excerpt(name_or_path)} is neither a file nor a bundled workload "
        f"(bundled: {', '.join(names) if names else 'none'})"
    )


def _locate_file(path: Path, label: str, name: str, options: ReaderOptions) -> _Place:
    fmt, head = _detect_file(path, options.input_format)
    if fmt in ("cdf-json", "cdf-csv"):
        return _Place(fmt, label, name, options, path=path)
    if fmt == "summary":
        return _Place(
            "summary", label, name, options, path=path, read_summary=lambda: read_summary_file(path, head)
        )
    if fmt not in LOG_INPUT_FORMATS:
        raise ValidationError(f"{path}: format {excerpt(fmt)} is not a request log")
    if fmt == "azure" and options.log_format is None:
        options = dataclasses.replace(options, log_format=log_format_option(None, "azure"))
    source = _log_source(label, [str(path)], fmt, _is_gzip(path))
    if source.container == "csv":
        _check_csv_head(head, path)
    preset = options.log_format
    careful = None
    if source.container in ("csv", "jsonl") and (
        preset is None or (not preset.filters and preset.layout == "table")
    ):
        careful = lambda: _read_careful(path, source.container, options)  # noqa: E731
    return _Place("log", label, name, options, path=path, source=source, careful=careful)


def _locate_many(location: str, options: ReaderOptions) -> _Place:
    """A glob (expanded, detected on its first file's content) or a URL (by its name or
    ``--input-format``): a log read as one, or summaries merged."""
    from fleetopt.io.logs import container_from_name, expand_local, is_remote

    name = location.rstrip("/").split("/")[-1] or location
    if is_remote(location):
        paths, files = [], [location]
        fmt = options.input_format or container_from_name(location)
        if fmt is None:
            raise ValidationError(
                f"{location}: cannot tell the format from the name; give --input-format "
                f"({', '.join(LOG_INPUT_FORMATS)} or summary)"
            )
        gzip_compressed = location.lower().split("?")[0].endswith(".gz")
    else:
        paths = expand_local(location)
        fmt, _ = _detect_file(paths[0], options.input_format)
        files = [str(p) for p in paths]
        gzip_compressed = _is_gzip(paths[0])
    if fmt in ("cdf-json", "cdf-csv"):
        raise ValidationError(f"{location}: CDF tables are read one file at a time, not by pattern or URL")
    if fmt == "summary":
        return _Place("summary", location, name, options, read_summary=lambda: read_summary_source(location))
    if fmt == "azure" and options.log_format is None:
        options = dataclasses.replace(options, log_format=log_format_option(None, "azure"))
    return _Place("log", location, name, options, source=_log_source(location, files, fmt, gzip_compressed))


def read_summary_file(path: Path, head: bytes | None = None):
    """A summary from a local file: its JSON document, or its table in Parquet, CSV or JSON lines."""
    from fleetopt.io.summaries import read_summary_json, read_summary_table

    head = _read_head(path) if head is None else head
    if head[:4] == b"PAR1":
        return read_summary_table([str(path)], "parquet", str(path))
    if _is_gzip(path):
        gunzip_checked(path)  # its size, checked before DuckDB reads it
    text = _skip_leading_space(head)
    if text[:1] == b"{":
        first_line = text[: text.find(b"\n")] if b"\n" in text else text
        try:
            first = json.loads(first_line)
        except (ValueError, RecursionError):
            first = None
        if isinstance(first, dict) and "record" in {str(k).lower() for k in first}:
            return read_summary_table([str(path)], "jsonl", str(path))
        return read_summary_json(_read_bytes(path), str(path))
    return read_summary_table([str(path)], "csv", str(path))


def _log_source(label: str, files: list[str], fmt: str, gzip_compressed: bool) -> LogSource:
    """The DuckDB source of local files or URLs; local gzip-compressed files are measured first
    (their decompressed size, refused past :data:`fleetopt.io.files.MAX_GZIP_RATIO`× their own)."""
    container = "csv" if fmt in ("azure", "csv") else fmt
    if container not in ("csv", "jsonl", "json", "parquet"):
        raise ValidationError(f"{label}: format {excerpt(fmt)} is not a request log")
    from fleetopt.io.logs import LogSource, is_remote

    content_bytes = None
    if gzip_compressed and not any(is_remote(f) for f in files):
        content_bytes = tuple(
            gunzip_checked(Path(f)) if _is_gzip(Path(f)) else Path(f).stat().st_size for f in files
        )
    return LogSource(
        label=label,
        files=tuple(files),
        container=container,
        gzip=gzip_compressed,
        content_bytes=content_bytes,
    )


def _load_bundled(name: str, split_model) -> Workload:
    """A bundled workload: a YAML manifest naming one or more data files of one format. Bundled data
    is read once per process (the API plans a bundled workload many times over in a notebook or a
    sweep): the copy returned shares that read's arrays, which are read-only, and has its own
    metadata."""
    from fleetopt.io.data import bundled_dir

    workload = _read_bundled(bundled_dir("workloads"), name, split_model)
    return dataclasses.replace(workload, metadata=dict(workload.metadata))


@functools.lru_cache(maxsize=16)
def _read_bundled(folder: Path, name: str, split_model) -> Workload:
    workload = _parse_bundled(folder, name, split_model)
    for field in dataclasses.fields(workload):
        value = getattr(workload, field.name)
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
    return workload


def _parse_bundled(folder: Path, name: str, split_model) -> Workload:
    manifest_path = folder / f"{name}.yaml"
    manifest = safe_load(manifest_path.read_text(encoding="utf-8"))
    files = [folder / f for f in manifest["files"]]
    fmt = manifest["format"]
    source = f"bundled:{name} ({manifest.get('source', '')})".strip()
    if fmt in ("cdf-json", "cdf-csv"):
        parse = _parse_cdf_json if fmt == "cdf-json" else _parse_cdf_csv
        tokens, fractions, *extra = parse(_read_bytes(files[0]), files[0])
        split_model = split_model or (_split_from_file(extra[0], files[0]) if extra else None)
        return _cdf_workload(tokens, fractions, name, split_model, source)
    origin = manifest.get("time_origin")
    options = ReaderOptions(
        input_column=manifest.get("input_column"),
        output_column=manifest.get("output_column"),
        time_column=manifest.get("time_column"),
        time_origin_us=None if origin is None else _datetime_us(str(origin), manifest_path),
    )
    log_source = _log_source(name, [str(f) for f in files], fmt, _is_gzip(files[0]))
    return _log_workload(_read_source(log_source, options, careful=None), name, source)


def _datetime_us(text: str, where: Path) -> int:
    kind, moment = _parse_time(text, "time_origin", 1.0, where, 0)
    if kind != "utc":
        raise ValidationError(f"{where}: time_origin = {excerpt(text)} is not a date-time")
    return moment


def _log_workload(log: RequestLog | LogRequestsLike, name: str, source: str) -> Workload:
    """A Workload from a log's requests: atoms, arrival times from the first (s) and the clock."""
    span = None
    times = None
    metadata: dict = {}
    if log.arrival_us is not None and log.arrival_us.size:
        first, last = int(log.arrival_us.min()), int(log.arrival_us.max())
        span = ArrivalSpan(first, last, log.utc)
        if log.utc:
            from fleetopt.core.summary import utc_iso

            metadata["origin_utc"] = utc_iso(first)
    if isinstance(log, RequestLog):
        if log.arrival_us is not None:
            times = (np.sort(log.arrival_us) - span.first_us) * 1e-6
        if log.cached_tokens is not None:
            from fleetopt.core.summary import reported_cache

            rows = np.stack([log.input_tokens, log.output_tokens, log.cached_tokens], axis=1)
            triples, counts = np.unique(rows, axis=0, return_counts=True)
            reported = reported_cache(triples[:, 0], triples[:, 1], triples[:, 2], counts, log.cached_field)
            if reported is not None:
                metadata["reported_cache"] = reported
        return workload_from_requests(
            log.input_tokens, log.output_tokens, name=name, arrival_times_s=times, source=source,
            arrival_span=span, metadata=metadata,
        )  # fmt: skip
    if getattr(log, "cached", None) is not None:
        metadata["reported_cache"] = log.cached
    workload = workload_from_counts(
        log.input_tokens, log.output_tokens, log.counts, name=name, source=source, arrival_span=span,
        metadata=metadata,
    )  # fmt: skip
    if log.arrival_us is None or span is None:
        return workload
    ticks = log.arrival_us  # sorted by the reader
    ticks.flags.writeable = False
    if max(abs(span.first_us), abs(span.last_us)) < 2**53:  # exact in float64: the same differences
        times = np.subtract(ticks, float(span.first_us), dtype=np.float64)
        times *= 1e-6
    else:
        times = (ticks - span.first_us) * 1e-6
    return dataclasses.replace(workload, arrival_times_s=times, arrival_us=ticks)


LogRequestsLike = object  # fleetopt.io.logs.LogRequests (histogram form), imported lazily


def _cdf_workload(tokens: np.ndarray, fractions: np.ndarray, name: str, split_model, source: str) -> Workload:
    """A CDF workload; with no split model (none given, none in the file) the reference's 80/20
    split, marked as assumed."""
    if split_model is None:
        workload = workload_from_cdf(tokens, fractions, name=name, split="fleet-sim", source=source)
        return dataclasses.replace(workload, split_assumed=True)
    return workload_from_cdf(tokens, fractions, name=name, split=split_model, source=source)


def _split_from_file(extra: dict, path: Path):
    """The split a CDF JSON object carries: ``mean_input_tokens`` and ``mean_output_tokens`` give the
    input share f = E[in] / (E[in] + E[out]) (input-fraction:f keeps that ratio of the means), or
    None when the file gives neither."""
    keys = ("mean_input_tokens", "mean_output_tokens")
    present = [k for k in keys if k in extra]
    if not present:
        return None
    if len(present) == 1:
        raise ValidationError(f"{path}: {present[0]} is given without {(set(keys) - set(present)).pop()}")
    means = []
    for key in keys:
        value = extra[key]
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not (value > 0 and math.isfinite(value))
        ):
            raise ValidationError(f"{path}: {key} = {json.dumps(value)} is invalid; expected a number > 0")
        means.append(float(value))
    fraction = means[0] / (means[0] + means[1])
    return parse_split_model(f"input-fraction:{fraction:.6g}")


# --------------------------------------------------------------------------- CDF tables


def _parse_cdf_json(data: bytes, path: Path) -> tuple[np.ndarray, np.ndarray, dict]:
    not_a_cdf = (
        f"{path}: not a CDF: expected a JSON list of [total_tokens, F] pairs "
        'or an object with a "cdf" list of such pairs'
    )
    try:
        document = json_loads(data.decode("utf-8-sig"))
    except json.JSONDecodeError as exc:
        raise ValidationError(
            f"{path}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValidationError(f"{path}: not valid JSON ({exc})") from None
    except RecursionError:
        raise ValidationError(f"{path}: JSON nested too deeply to be a CDF") from None
    extra: dict = {}
    if isinstance(document, dict):
        if "cdf" not in document:
            raise ValidationError(not_a_cdf)
        extra = {k: v for k, v in document.items() if k != "cdf"}
        document = document["cdf"]
    if not isinstance(document, list) or not document:
        raise ValidationError(not_a_cdf)
    rows = []
    for number, entry in enumerate(document, start=1):
        if (
            not isinstance(entry, list)
            or len(entry) != 2
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in entry)
        ):
            raise ValidationError(f"{not_a_cdf}; entry {number} is {json.dumps(entry)}")
        rows.append((entry[0], entry[1], f"entry {number}"))
    tokens, fractions = _validate_cdf_rows(rows, path)
    return tokens, fractions, extra


def _parse_cdf_csv(data: bytes, path: Path) -> tuple[np.ndarray, np.ndarray]:
    lines = data.decode("utf-8-sig").splitlines()
    header = [c.strip() for c in _split_header(lines[0])]
    lowered = [c.lower() for c in header]
    if (
        len(header) != 2
        or lowered[0] not in CDF_TOKEN_COLUMN_NAMES
        or lowered[1] not in CDF_FRACTION_COLUMN_NAMES
    ):
        raise ValidationError(f"{path}: a CDF CSV needs the header 'tokens,cdf' (found: {', '.join(header)})")
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != 2:
            raise ValidationError(
                f"{path}, line {number}: expected 2 fields (tokens, cdf), found {len(fields)}"
            )
        values = []
        for field, column in zip(fields, header, strict=True):
            try:
                values.append(float(field))
            except ValueError:
                raise ValidationError(
                    f"{path}, line {number}: {column} {excerpt(field)} is not a number"
                ) from None
        rows.append((values[0], values[1], f"line {number}"))
    if not rows:
        raise ValidationError(f"{path}: the CDF has no rows (only a header)")
    return _validate_cdf_rows(rows, path)


def _validate_cdf_rows(rows: list[tuple[float, float, str]], path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Check breakpoints (whole, ≥ 1, increasing) and F (within [0, 1], non-decreasing, ending at 1)."""
    previous_tokens, previous_fraction = 0.0, 0.0
    kept: list[tuple[float, float]] = []
    for tokens, fraction, where in rows:
        if not math.isfinite(fraction) or not 0.0 <= fraction <= 1.0:
            raise ValidationError(f"{path}, {where}: F = {fraction:g} leaves [0, 1]")
        if not math.isfinite(tokens) or tokens != round(tokens) or tokens < 0:
            raise ValidationError(f"{path}, {where}: total_tokens = {tokens:g} is not a whole number ≥ 0")
        if tokens == 0:
            if fraction > 0:
                raise ValidationError(f"{path}, {where}: F(0) = {fraction:g}; a request has at least 1 token")
            continue
        if tokens <= previous_tokens:
            raise ValidationError(
                f"{path}, {where}: total_tokens {tokens:g} is not above the previous breakpoint "
                f"{previous_tokens:g} (breakpoints must increase)"
            )
        if fraction < previous_fraction:
            raise ValidationError(
                f"{path}, {where}: F decreases from {previous_fraction:g} to {fraction:g} "
                "(a CDF must be non-decreasing)"
            )
        kept.append((tokens, fraction))
        previous_tokens, previous_fraction = tokens, fraction
    if not kept or abs(kept[-1][1] - 1.0) > 1e-6:
        last = kept[-1][1] if kept else 0.0
        raise ValidationError(f"{path}: the CDF ends at F = {last:g}; it must reach 1 at its last breakpoint")
    table = np.array(kept, dtype=np.float64)
    return table[:, 0], np.minimum(table[:, 1], 1.0)


# --------------------------------------------------------------------------- request logs


def _default_names(container: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """Recognised column names (input, output, time) when no preset or column is given; JSON lines
    put Mooncake's names first (its ``timestamp`` is in ms)."""
    if container == "jsonl":
        return (
            ("input_length",) + INPUT_COLUMN_NAMES,
            ("output_length",) + OUTPUT_COLUMN_NAMES,
            ("timestamp",) + TIME_COLUMN_NAMES,
        )
    return INPUT_COLUMN_NAMES, OUTPUT_COLUMN_NAMES, TIME_COLUMN_NAMES


def _name_units(container: str) -> dict[str, float]:
    """Units of time columns known by name: Mooncake's JSON lines ``timestamp`` is in ms."""
    return {"timestamp": JSONL_TIMESTAMP_SCALE_S} if container == "jsonl" else {}


#: The longest first line (header) of a CSV log fleetopt reads, bytes.
MAX_HEADER_BYTES = 16 << 20


def _check_csv_head(head: bytes, path: Path) -> None:
    """A CSV's header problems and an empty body, named before any reading (docs/workloads.md).
    A header (or first row) that runs past the 64 KiB head is read further, up to
    :data:`MAX_HEADER_BYTES`, so a wide file is judged on its whole header."""
    text_start = _skip_leading_space(head)
    body_start = text_start.find(b"\n")
    if (body_start < 0 or _NON_SPACE.search(text_start, body_start + 1) is None) and len(head) >= _HEAD_BYTES:
        head = _read_head(path, MAX_HEADER_BYTES)
        text_start = _skip_leading_space(head)
        body_start = text_start.find(b"\n")
        if body_start < 0 and len(head) >= MAX_HEADER_BYTES:
            raise ValidationError(
                f"{path}: the first line (the header) is longer than {MAX_HEADER_BYTES >> 20} MiB; not a "
                "CSV request log fleetopt reads"
            )
    header = [c.strip() for c in _split_header(_first_line(text_start))]
    if not header:
        raise ValidationError(f"{path}: the file is empty")
    if len(header) == 1:
        for separator, word in ((";", "semicolons"), ("\t", "tabs"), ("|", "vertical bars")):
            if separator in header[0]:
                raise ValidationError(
                    f"{path}: the columns are separated by {word}, not commas; fleetopt reads "
                    "comma-separated files (convert it, e.g. with `tr`)"
                )
    lowered = [c.lower() for c in header]
    if len(set(lowered)) < len(lowered):
        seen: set[str] = set()
        repeated = next(
            name for name, low in zip(header, lowered, strict=True) if low in seen or seen.add(low)
        )
        raise ValidationError(f"{path}: column {excerpt(repeated)} appears more than once in the header")
    if body_start < 0 or _NON_SPACE.search(text_start, body_start + 1) is None:
        raise ValidationError(f"{path}: no requests (only a header)")


def _resolve(source: LogSource, options: ReaderOptions, careful, connection):
    """The log's columns (fleetopt.io.logs.resolve_log with this module's recognised names), or
    None when DuckDB cannot read it and a careful reader will."""
    from fleetopt.io import logs

    return logs.resolve_log(
        connection, source, preset=options.log_format, input_column=options.input_column,
        output_column=options.output_column, time_column=options.time_column,
        time_unit_s=options.time_unit_s, default_names=_default_names(source.container),
        name_units=_name_units(source.container), time_origin_us=options.time_origin_us,
        fallback=careful is not None, default_cached=_default_cached(),
    )  # fmt: skip


def _default_cached():
    """The cached-token fields of a log without a preset (:data:`CACHED_COLUMN_NAMES`)."""
    from fleetopt.io.log_formats import CachedField

    return tuple(CachedField(name) for name in CACHED_COLUMN_NAMES)


def _cached_candidates(options: ReaderOptions) -> tuple[str, ...]:
    """The flat columns the careful reader takes the cached prompt tokens from (a preset's, or the
    recognised names; none when the prompt column is named by hand, as the DuckDB reader)."""
    if options.input_column is not None:
        return ()
    preset = options.log_format
    fields = preset.cached_fields if preset is not None else _default_cached()
    return tuple(f.column for f in fields if not f.path)


def _parse_cached(value, name: str, prompt_tokens: int, path: Path, line: int) -> int:
    """A reported count of cached prompt tokens, checked as a token count and against its prompt."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValidationError(
            f"{path}, line {line}: {name} = {json.dumps(value)} is not a whole number of tokens"
        )
    number = _parse_token(str(value), name, path, line)
    if number > prompt_tokens:
        from fleetopt.io.logs import cached_problem

        raise ValidationError(
            f"{path}, line {line}: {name} = {cached_problem(number, str(number), prompt_tokens)}"
        )
    return number


def _with_duckdb(source: LogSource, options: ReaderOptions, careful, read, *, ordered: bool = False):
    """``read(resolved, connection)`` by DuckDB; on a row DuckDB cannot take or that is not a
    request, ``careful()`` (a local text file) re-reads the file and names the line (or returns
    its rows, which the caller then uses), else DuckDB names the first bad row."""
    from fleetopt.io import logs

    connection = logs.connect(ordered=ordered)
    resolved = _resolve(source, options, careful, connection)
    if resolved is None:  # DuckDB cannot read it: the careful reader says why (or reads it)
        return careful()
    try:
        return read(resolved, connection)
    except logs.InvalidRows:
        if careful is not None:
            return careful()
        raise ValidationError(logs.first_invalid_row(resolved)) from None
    except logs.UnreadableLog:
        if careful is not None:
            return careful()
        raise


def _read_source(source: LogSource, options: ReaderOptions, careful):
    """A log's requests: the histogram and the arrivals (fleetopt.io.logs.load_requests), or the
    careful reader's rows."""
    from fleetopt.io import logs

    return _with_duckdb(source, options, careful, logs.load_requests)


def _read_rows(place: _Place) -> RequestLog:
    """Every request of a local log in file order (DuckDB; the careful reader on any problem)."""
    from fleetopt.io import logs

    def rows(resolved, connection) -> RequestLog:
        found = logs.load_rows(resolved, connection)
        return RequestLog(found["input"], found["output"], found.get("arrival"), resolved.utc)

    return _with_duckdb(place.source, place.options, place.careful, rows, ordered=True)


# --------------------------------------------------------------------------- the careful reader


def _read_careful(path: Path, container: str, options: ReaderOptions) -> RequestLog:
    """Line-by-line reading of a local CSV or JSON lines log with exact errors (file, line, field,
    value): the reference the DuckDB path agrees with, used whenever DuckDB finds a problem."""
    data = _read_bytes(path)
    if container == "jsonl":
        return _read_jsonl(data, path, options)
    text_start = _skip_leading_space(data)
    header = [c.strip() for c in _split_header(_first_line(text_start))]
    if not header:
        raise ValidationError(f"{path}: the file is empty")
    candidates = _candidates(options, container)
    from fleetopt.io.logs import pick_column

    input_index = pick_column(header, options.input_column, candidates[0], "input", str(path), True)
    output_index = pick_column(header, options.output_column, candidates[1], "output", str(path), True)
    time_index = pick_column(header, options.time_column, candidates[2], "time", str(path), False)
    names = tuple(None if i is None else header[i] for i in (input_index, output_index, time_index))
    lowered = [c.lower() for c in header]
    cached = tuple(
        (lowered.index(c.lower()), header[lowered.index(c.lower())])
        for c in _cached_candidates(options)
        if c.lower() in lowered
    )
    return _read_csv_slow(
        text_start, path, len(header), (input_index, output_index, time_index), names, options, cached
    )


def _candidates(options: ReaderOptions, container: str) -> tuple[tuple[str, ...], ...]:
    preset = options.log_format
    if preset is not None:
        return preset.input_columns, preset.output_columns, preset.time_columns
    return _default_names(container)


def _time_unit(column: str, options: ReaderOptions, container: str) -> tuple[float, bool]:
    """(seconds per unit, counts from the Unix epoch) of a numeric time column (docs/workloads.md):
    ``--time-unit``, else the preset's, else the name's suffix, else JSON lines' ``timestamp`` (ms),
    else seconds."""
    from fleetopt.io.logs import time_scale_from_name

    preset = options.log_format
    preset_unit = preset.time_unit if preset is not None and options.time_column is None else None
    epoch = preset_unit.epoch if preset_unit is not None else False
    if options.time_unit_s is not None:
        return options.time_unit_s, epoch
    if preset_unit is not None:
        return preset_unit.seconds, epoch
    default = _name_units(container).get(column.strip().lower(), 1.0)
    return time_scale_from_name(column, default), False


_NON_SPACE = re.compile(rb"\S")


def _skip_leading_space(data: bytes) -> bytes:
    """``data`` without a UTF-8 byte-order mark and leading white space (no copy when there is none)."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    match = _NON_SPACE.search(data)
    return data if match is None or match.start() == 0 else data[match.start() :]


def _first_line(text: bytes | str, start: int = 0) -> str:
    """The line starting at ``start`` (without copying the rest of a large text)."""
    newline = b"\n" if isinstance(text, bytes) else "\n"
    end = text.find(newline, start)
    line = text[start : end if end >= 0 else len(text)]
    if isinstance(line, bytes):
        line = line.decode("utf-8-sig", errors="replace")
    return line.rstrip("\r")


def _split_header(line: str) -> list[str]:
    """The fields of a header line (CSV quoting); a line csv refuses (a stray carriage return) is
    split on commas, so the caller names the columns it does not find."""
    if not line.strip():
        return []
    import csv

    try:
        return next(csv.reader([line]))
    except csv.Error:
        return [field.strip('"') for field in line.replace("\r", " ").split(",")]


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def _parse_token(value: str, column: str, path: Path, line: int) -> int:
    text = value.strip()
    try:
        number = int(text)
    except ValueError:
        try:
            as_float = float(text)
        except ValueError:
            as_float = math.nan
        if not (math.isfinite(as_float) and as_float.is_integer()):
            raise ValidationError(
                f"{path}, line {line}: {column} = {excerpt(value)} is not a whole number of tokens"
            ) from None
        number = int(as_float)
    if number < 0:
        raise ValidationError(f"{path}, line {line}: {column} = {number} is negative (token counts are ≥ 0)")
    from fleetopt.io.logs import MAX_REQUEST_TOKENS

    if number > MAX_REQUEST_TOKENS:
        raise ValidationError(
            f"{path}, line {line}: {column} = {value.strip()} is too large "
            f"(at most {MAX_REQUEST_TOKENS:,} tokens per request)"
        )
    return number


def _parse_time(value: str, column: str, scale_s: float, path: Path, line: int) -> tuple[str, int]:
    """``("utc", µs since 1970)`` for a date-time (sub-µs digits dropped, an offset applied), or
    ``("number", µs)`` for a number in ``scale_s`` seconds per unit (integers in µs or coarser
    units exact, others rounded half away from zero, as DuckDB's ROUND)."""
    text = value.strip()
    match = _DATETIME_PATTERN.match(text)
    if match:
        year, month, day, hour, minute, second = (int(match.group(k)) for k in range(1, 7))
        try:
            datetime.date(year, month, day)
        except ValueError:
            raise ValidationError(
                f"{path}, line {line}: {column} = {excerpt(value)} is not a valid date"
            ) from None
        if hour > 23 or minute > 59 or second > 60:
            raise ValidationError(
                f"{path}, line {line}: {column} = {excerpt(value)} is not a valid time of day"
            )
        fraction = (match.group(7) or "")[:6].ljust(6, "0")
        seconds = ((_days_from_civil(year, month, day) * 24 + hour) * 60 + minute) * 60 + second
        zone = match.group(8)
        if zone and zone != "Z":
            sign = 1 if zone[0] == "+" else -1
            digits = zone[1:].replace(":", "")
            seconds -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
        return "utc", seconds * MICROSECONDS_PER_S + int(fraction)
    per_unit_us = scale_s * MICROSECONDS_PER_S
    if _INTEGER_PATTERN.match(text):
        # a number of more digits than any clock's (2⁶² ns has 22) is out of range before int() sees
        # it: Python refuses more than 4,300 digits, and converts in quadratic time
        number = int(text) if len(text) <= 40 else 2**80
        moment = number * round(per_unit_us) if per_unit_us >= 1 else int(number / round(1 / per_unit_us))
        if abs(moment) > 2**62:
            raise ValidationError(
                f"{path}, line {line}: {column} = {excerpt(value)} is out of range for an arrival time "
                "(at most 2⁶² µs, about 146,000 years, from the clock's zero)"
            )
        return "number", moment
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or abs(number * per_unit_us) > 2**62:
        raise ValidationError(
            f"{path}, line {line}: {column} = {excerpt(value)} is neither a number nor a date-time "
            "like 2023-11-16 18:15:46.680590"
        )
    scaled = number * per_unit_us
    return "number", int(math.copysign(math.floor(abs(scaled) + 0.5), scaled))


def _arrival_ticks(moments: list[int], kinds: set[str], column: str, path: Path) -> np.ndarray:
    if len(kinds) > 1:
        raise ValidationError(f"{path}: column {excerpt(column)} mixes date-times and numbers")
    return np.array(moments, dtype=np.int64)


def _read_csv_slow(
    data: bytes,
    path: Path,
    field_count: int,
    columns: tuple,
    names: tuple,
    options: ReaderOptions,
    cached_columns: tuple[tuple[int, str], ...] = (),
) -> RequestLog:
    """Line-by-line reading with exact errors (file, line, column, value); ``cached_columns``:
    (index, name) of the columns that may report a row's cached prompt tokens (the first with a
    value is read; none: the row does not report them)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    input_index, output_index, time_index = columns
    scale_s, epoch = (1.0, False) if time_index is None else _time_unit(names[2], options, "csv")
    inputs: list[int] = []
    outputs: list[int] = []
    times: list[int] = []
    cached: list[int] = []
    kinds: set[str] = set()
    import csv

    reader = csv.reader(io.StringIO(text))
    with long_csv_fields():
        try:
            next(reader)  # header
            for row in reader:
                line = reader.line_num
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue
                if len(row) != field_count:
                    raise ValidationError(
                        f"{path}, line {line}: expected {field_count} fields, found {len(row)}"
                    )
                number_in = _parse_token(row[input_index], names[0], path, line)
                number_out = _parse_token(row[output_index], names[1], path, line)
                if number_in + number_out < 1:
                    raise ValidationError(
                        f"{path}, line {line}: {names[0]} + {names[1]} is 0 (a request has ≥ 1 token)"
                    )
                inputs.append(number_in)
                outputs.append(number_out)
                if cached_columns:
                    reported = next(((row[k], name) for k, name in cached_columns if row[k].strip()), None)
                    cached.append(
                        -1
                        if reported is None
                        else _parse_cached(reported[0], reported[1], number_in, path, line)
                    )
                if time_index is not None:
                    kind, moment = _parse_time(row[time_index], names[2], scale_s, path, line)
                    kinds.add(kind)
                    times.append(moment)
        except csv.Error as exc:
            raise ValidationError(f"{path}, line {reader.line_num}: not valid CSV ({exc})") from None
    if not inputs:
        raise ValidationError(f"{path}: no requests (only a header)")
    return _careful_log(
        inputs, outputs, times if time_index is not None else None, kinds, names[2], path, epoch, options,
        cached if cached_columns else None, " or ".join(name for _, name in cached_columns) or None,
    )  # fmt: skip


def _careful_log(
    inputs, outputs, times, kinds, column, path, epoch, options, cached=None, cached_field=None
) -> RequestLog:
    arrival = None
    if times is not None:
        arrival = _arrival_ticks(times, kinds, column, path)
        if options.time_origin_us is not None:
            arrival = arrival + options.time_origin_us
    utc = times is not None and (kinds == {"utc"} or epoch or options.time_origin_us is not None)
    return RequestLog(
        np.array(inputs, dtype=np.int64), np.array(outputs, dtype=np.int64), arrival, utc,
        None if cached is None else np.array(cached, dtype=np.int64), cached_field,
    )  # fmt: skip


def _read_jsonl(data: bytes, path: Path, options: ReaderOptions) -> RequestLog:
    """JSON lines: the fields given, the preset's, or Mooncake's (``timestamp`` in ms) and the
    recognised names, chosen on the first line; every line must have them."""
    candidates = _candidates(options, "jsonl")
    cached_keys = {c.lower() for c in _cached_candidates(options)}
    cached_order = [c.lower() for c in _cached_candidates(options)]
    cached: list[int] = []
    cached_seen: list[str] = []
    inputs: list[int] = []
    outputs: list[int] = []
    times: list[int] = []
    kinds: set[str] = set()
    keys: tuple[str, str, str | None] | None = None
    has_time: bool | None = None
    scale_s, epoch = 1.0, False
    for line_number, line in enumerate(data.decode("utf-8-sig", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json_loads(line)
        except DuplicateKeyError as exc:
            raise ValidationError(f"{path}, line {line_number}: {exc}") from None
        except (ValueError, RecursionError):
            raise ValidationError(f"{path}, line {line_number}: not a JSON object") from None
        if not isinstance(record, dict):
            raise ValidationError(f"{path}, line {line_number}: not a JSON object")
        if keys is None:
            keys = (
                _json_key(record, options.input_column, candidates[0]),
                _json_key(record, options.output_column, candidates[1]),
                _json_key(record, options.time_column, candidates[2], optional=True),
            )
            if keys[2] is not None:
                scale_s, epoch = _time_unit(keys[2], options, "jsonl")
        input_key, output_key, time_key = keys
        for key in (input_key, output_key):
            if key not in record:
                raise ValidationError(
                    f"{path}, line {line_number}: no field {excerpt(key)} (fields found: {', '.join(record)})"
                )
        values = []
        for key in (input_key, output_key):
            value = record[key]
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise ValidationError(
                    f"{path}, line {line_number}: {key} = {json.dumps(value)} is not a whole number of tokens"
                )
            values.append(_parse_token(str(value), key, path, line_number))
        if values[0] + values[1] < 1:
            raise ValidationError(f"{path}, line {line_number}: {input_key} + {output_key} is 0")
        inputs.append(values[0])
        outputs.append(values[1])
        if cached_keys:
            present = {str(k).lower(): k for k in record if str(k).lower() in cached_keys}
            cached_seen.extend(k for k in present.values() if k not in cached_seen)
            reported = next(
                (present[c] for c in cached_order if c in present and record[present[c]] is not None), None
            )
            cached.append(
                -1 if reported is None
                else _parse_cached(record[reported], reported, values[0], path, line_number)
            )  # fmt: skip
        line_has_time = time_key is not None and time_key in record
        if has_time is None:
            has_time = line_has_time
        if line_has_time != has_time:
            raise ValidationError(
                f"{path}, line {line_number}: {excerpt(time_key)} is present on some lines only"
            )
        if line_has_time:
            kind, moment = _parse_time(str(record[time_key]), time_key, scale_s, path, line_number)
            kinds.add(kind)
            times.append(moment)
    if not inputs:
        raise ValidationError(f"{path}: the file is empty")
    if options.time_column is not None and not has_time:
        raise ValidationError(f"{path}: no field {excerpt(options.time_column)} for time")
    return _careful_log(
        inputs, outputs, times if has_time else None, kinds, keys[2], path, epoch, options,
        cached if cached_seen else None, " or ".join(cached_seen) or None,
    )  # fmt: skip


def _json_key(
    record: dict, given: str | None, candidates: tuple[str, ...], optional: bool = False
) -> str | None:
    """The key of a field on the first line: the given name, else the first candidate present
    (case-insensitive), else the first candidate (its absence is then named)."""
    if given is not None:
        return given
    lowered = {str(k).lower(): k for k in record}
    for candidate in candidates:
        if candidate.lower() in lowered:
            return lowered[candidate.lower()]
    return None if optional else candidates[0]


# --------------------------------------------------------------------------- summaries of logs


def summarize_source(
    name_or_path: str,
    window_us: int,
    *,
    input_format: str | None = None,
    input_column: str | None = None,
    output_column: str | None = None,
    time_column: str | None = None,
    log_format: str | None = None,
    time_unit: str | None = None,
):
    """The summary (:class:`~fleetopt.core.summary.LogSummary`) of one log — a path, a glob, a URL
    or a bundled name — aggregated where it is read (:func:`fleetopt.io.logs.summarize_log`: sorted in
    memory up to :data:`~fleetopt.io.logs.IN_MEMORY_SUMMARY_ROWS` requests, else streamed through one
    DuckDB query that keeps only the aggregates). A summary given here is read as it is; a CDF is
    refused (it has no request counts)."""
    from fleetopt.core.summary import summary_from_workload
    from fleetopt.io import logs

    options = reader_options_for(
        input_format, log_format, input_column, output_column, time_column, time_unit
    )
    place = _locate(name_or_path, options)
    not_a_log = f"{name_or_path}: is a CDF table, not a request log; a summary counts requests"
    if place.kind in ("cdf-json", "cdf-csv"):
        raise ValidationError(not_a_log)
    if place.kind == "summary":
        return place.read_summary()
    if place.kind == "bundled":
        workload = _load_bundled(name_or_path, None)
        if workload.kind != "requests":
            raise ValidationError(not_a_log)
        return summary_from_workload(workload, name_or_path, window_us)
    summary = _with_duckdb(
        place.source,
        place.options,
        place.careful,
        lambda resolved, connection: logs.summarize_log(resolved, window_us, name_or_path, connection),
    )
    if isinstance(summary, RequestLog):  # the careful reader read what DuckDB could not
        return summary_from_workload(
            _log_workload(summary, place.name, name_or_path), name_or_path, window_us
        )
    return summary


def read_summary_source(location: str):
    """A summary named by a path, a glob (its files merged) or a URL; anything else is refused."""
    from fleetopt.core.summary import merge_summaries
    from fleetopt.io import logs

    if logs.is_remote(location):
        from fleetopt.io.summaries import read_summary_table

        container = logs.container_from_name(location) or "parquet"
        return read_summary_table([location], "jsonl" if container == "json" else container, location)
    paths = [Path(location).expanduser()] if Path(location).expanduser().is_file() else None
    if paths is None:
        if not logs.is_pattern(location):
            raise NotFoundError(f"{location}: no such file")
        paths = logs.expand_local(location)
    parts = []
    for path in paths:
        fmt, head = _detect_file(path, None)
        if fmt != "summary":
            raise ValidationError(
                f"{path}: is not a workload summary (it reads as {fmt}); summarize it first with "
                "fleetopt workload summarize"
            )
        parts.append(read_summary_file(path, head))
    return parts[0] if len(parts) == 1 else merge_summaries(parts, [str(p) for p in paths])
