"""Reading workloads: request logs and CDF tables, detected from content, into a Workload.

One entry point, :func:`load_workload`, takes a bundled name (``workloads/<name>.yaml``) or a
path. Formats (docs/workloads.md):

* ``azure``    — Azure LLM inference trace CSV: ``TIMESTAMP,ContextTokens,GeneratedTokens``.
* ``csv``      — any CSV request log with a header; columns given or recognised by name.
* ``jsonl``    — one JSON object per line with ``input_length``, ``output_length`` and
  optionally ``timestamp`` (milliseconds, the Mooncake trace convention).
* ``cdf-json`` — ``[[total_tokens, F], ...]`` or ``{"cdf": [...], ...}`` (the reference's format).
* ``cdf-csv``  — CSV with header ``tokens,cdf``.

Any of them may be gzip-compressed (detected by its magic bytes). Numeric CSVs and the
Azure timestamps are parsed by numpy's C reader plus vectorized date arithmetic; anything
the fast path cannot take is re-read line by line, which also finds the line of any error.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime
import gzip
import io
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fleetopt.core.workload import Workload, parse_split_model, workload_from_cdf, workload_from_requests
from fleetopt.errors import NotFoundError, ValidationError
from fleetopt.io.yamlio import safe_load

#: The most tokens one side of one request may have (no model has a context near this; it keeps
#: every count far inside int64 and float64 arithmetic).
MAX_REQUEST_TOKENS = 100_000_000
INPUT_FORMATS = ("azure", "csv", "jsonl", "cdf-json", "cdf-csv")

AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")

# Column names recognised (case-insensitively) when a CSV's columns are not given.
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
_NUMBER_PATTERN = re.compile(r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$")


@dataclass(frozen=True)
class RequestLog:
    """Raw request columns as read from a file (before aggregation)."""

    input_tokens: np.ndarray
    output_tokens: np.ndarray
    # Seconds on the file's own clock (numbers as written, times scaled; date-times and
    # numbers beyond 2**53 relative to the file's earliest arrival), not yet shifted to 0.
    arrival_times_s: np.ndarray | None
    # The Unix time (UTC) of that clock's 0 when the file gives date-times, else None.
    clock_origin_epoch_s: float | None = None


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
) -> Workload:
    """Load a bundled workload by name, or a request log / CDF file by path.

    ``input_format`` overrides detection (one of :data:`INPUT_FORMATS`); the column options
    apply to CSV and JSONL logs; ``split`` is the input/output split model of a CDF
    (``fleet-sim``, ``input-fraction:F``, ``output-tokens:N``) and is ignored for logs, which
    carry their own split. Without ``split`` a CDF file that gives its mean input and output
    lengths (``mean_input_tokens``, ``mean_output_tokens``) is split in that proportion; a bare CDF
    gets the reference's 80/20 split, marked ``split_assumed``.
    """
    split_model = None if split is None else parse_split_model(split)
    if input_format is not None and input_format not in INPUT_FORMATS:
        raise ValidationError(f"unknown input format {input_format!r} (allowed: {', '.join(INPUT_FORMATS)})")
    path = Path(name_or_path).expanduser()
    if path.is_file():
        return _load_file(
            path, path.name, input_format, input_column, output_column, time_column, split_model
        )
    if path.is_dir():
        raise ValidationError(f"{name_or_path}: is a folder, not a workload file")
    names = bundled_workload_names()
    if name_or_path in names:
        return _load_bundled(name_or_path, split_model)
    raise NotFoundError(
        f"workload {name_or_path!r} is neither a file nor a bundled workload "
        f"(bundled: {', '.join(names) if names else 'none'})"
    )


def read_request_log(
    path: str | Path,
    *,
    input_format: str | None = None,
    input_column: str | None = None,
    output_column: str | None = None,
    time_column: str | None = None,
) -> RequestLog:
    """Read the raw request columns of a log file (``azure``, ``csv`` or ``jsonl``)."""
    path = Path(path)
    data = _read_bytes(path)
    fmt = input_format or detect_format(data, path)
    if fmt in ("cdf-json", "cdf-csv"):
        raise ValidationError(f"{path}: is a CDF table ({fmt}), not a request log")
    return _read_log(data, path, fmt, input_column, output_column, time_column)


def detect_format(data: bytes, path: Path | str = "<data>") -> str:
    """The input format of decompressed file content (rules in docs/workloads.md)."""
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
            return "cdf-json"  # a multi-line JSON document (or one the CDF reader refuses)
        if isinstance(first, dict) and "cdf" not in first:
            keys = {str(k).lower() for k in first}
            if keys & set(INPUT_COLUMN_NAMES):
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
    return "csv"


# --------------------------------------------------------------------------- files and manifests


_HEAD_BYTES = 1 << 16


def _read_head(path: Path) -> bytes:
    """The first 64 KiB of a file (for detection and the header)."""
    try:
        with open(path, "rb") as stream:
            return stream.read(_HEAD_BYTES)
    except OSError as exc:
        raise ValidationError(f"{path}: cannot read ({exc.strerror})") from None


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, gunzipped if they start with the gzip magic number."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise NotFoundError(f"{path}: no such file") from None
    except OSError as exc:
        raise ValidationError(f"{path}: cannot read ({exc.strerror})") from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise ValidationError(f"{path}: not a valid gzip file ({exc})") from None
    if not data or data.isspace():
        raise ValidationError(f"{path}: the file is empty")
    _check_text(data, path)
    return data


def _check_text(data: bytes, path: Path) -> None:
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
        if len(head) == len(data) or exc.start < len(head) - 4:  # not a character cut by the head
            raise ValidationError(
                f"{path}: not UTF-8 text (byte {exc.start:,} is 0x{head[exc.start]:02x}); save it as UTF-8"
            ) from None


def _load_file(
    path: Path,
    name: str,
    input_format: str | None,
    input_column: str | None,
    output_column: str | None,
    time_column: str | None,
    split_model,
    source: str | None = None,
) -> Workload:
    source = source if source is not None else str(path)
    head = _read_head(path)
    if len(head) < _file_size(path) and head[:2] != b"\x1f\x8b" and head.lstrip()[:1] not in (b"[", b"{"):
        # A large plain CSV: numpy reads it from disk; the whole text is read only if needed.
        fmt = input_format or detect_format(head, path)
        if fmt in ("azure", "csv"):
            log = _read_log(head, path, fmt, input_column, output_column, time_column, disk_path=path)
            return workload_from_requests(
                log.input_tokens,
                log.output_tokens,
                name=name,
                arrival_times_s=log.arrival_times_s,
                source=source,
                clock_origin_epoch_s=log.clock_origin_epoch_s,
            )
    data = _read_bytes(path)
    fmt = input_format or detect_format(data, path)
    if fmt == "cdf-json":
        tokens, fractions, extra = _parse_cdf_json(data, path)
        return _cdf_workload(tokens, fractions, name, split_model or _split_from_file(extra, path), source)
    if fmt == "cdf-csv":
        tokens, fractions = _parse_cdf_csv(data, path)
        return _cdf_workload(tokens, fractions, name, split_model, source)
    log = _read_log(data, path, fmt, input_column, output_column, time_column)
    return workload_from_requests(
        log.input_tokens, log.output_tokens, name=name, arrival_times_s=log.arrival_times_s, source=source,
        clock_origin_epoch_s=log.clock_origin_epoch_s,
    )  # fmt: skip


def _load_bundled(name: str, split_model) -> Workload:
    """A bundled workload: a YAML manifest naming one or more data files of one format."""

    from fleetopt.io.data import bundled_dir

    folder = bundled_dir("workloads")
    manifest_path = folder / f"{name}.yaml"
    manifest = safe_load(manifest_path.read_text(encoding="utf-8"))
    files = [folder / f for f in manifest["files"]]
    fmt = manifest["format"]
    source = f"bundled:{name} ({manifest.get('source', '')})".strip()
    if fmt in ("cdf-json", "cdf-csv"):
        return _load_file(files[0], name, fmt, None, None, None, split_model, source=source)
    logs = [
        _read_log(
            _read_bytes(f),
            f,
            fmt,
            manifest.get("input_column"),
            manifest.get("output_column"),
            manifest.get("time_column"),
        )
        for f in files
    ]
    times = None
    if all(log.arrival_times_s is not None for log in logs):
        times = np.concatenate([log.arrival_times_s for log in logs])
    origin = manifest.get("time_origin")  # the wall-clock time of the files' time 0
    return workload_from_requests(
        np.concatenate([log.input_tokens for log in logs]),
        np.concatenate([log.output_tokens for log in logs]),
        name=name,
        arrival_times_s=times,
        source=source,
        clock_origin_epoch_s=_epoch_s(origin) if isinstance(origin, str) else logs[0].clock_origin_epoch_s,
    )


def _epoch_s(text: str) -> float | None:
    """Unix seconds of a date-time such as ``2023-11-16 18:15:46.6805900`` (UTC unless it names a zone)."""
    try:
        kind, value = _parse_time(text, "time_origin", 1.0, Path("manifest"), 0)
    except ValidationError:
        return None
    return value * 1e-9 if kind == "ns" else None


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
        document = json.loads(data.decode("utf-8-sig"))
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
                raise ValidationError(f"{path}, line {number}: {column} {field!r} is not a number") from None
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
    return next(csv.reader([line])) if line.strip() else []


def _pick_column(
    header: list[str], given: str | None, candidates: tuple[str, ...], role: str, path: Path, required: bool
) -> int | None:
    """Index of the column named ``given`` (exact, then case-insensitive) or of the first candidate."""
    lowered = [c.strip().lower() for c in header]
    if given is not None:
        if given in header:
            return header.index(given)
        if given.strip().lower() in lowered:
            return lowered.index(given.strip().lower())
        raise ValidationError(f"{path}: no column {given!r} for {role} (columns found: {', '.join(header)})")
    for candidate in candidates:
        if candidate in lowered:
            return lowered.index(candidate)
    if required:
        raise ValidationError(
            f"{path}: no {role} column among {', '.join(header)} "
            f"(recognised: {', '.join(candidates)}; name one with --{role.replace(' ', '-')}-column)"
        )
    return None


def _time_scale_s(column: str, default_scale_s: float) -> float:
    lowered = column.strip().lower()
    for suffix, scale in _TIME_SUFFIX_SCALE_S:
        if lowered.endswith(suffix):
            return scale
    return default_scale_s


def _read_log(
    data: bytes,
    path: Path,
    fmt: str,
    input_column: str | None,
    output_column: str | None,
    time_column: str | None,
    disk_path: Path | None = None,
) -> RequestLog:
    """Read a log; with ``disk_path``, ``data`` is only the file's head and numpy reads the file."""
    if fmt == "jsonl":
        return _read_jsonl(data, path, input_column, output_column, time_column)
    if fmt == "azure":
        input_column = input_column or AZURE_COLUMNS[1]
        output_column = output_column or AZURE_COLUMNS[2]
        time_column = time_column or AZURE_COLUMNS[0]
    elif fmt != "csv":
        raise ValidationError(f"{path}: format {fmt!r} is not a request log")
    return _read_csv(data, path, input_column, output_column, time_column, disk_path)


def _read_csv(
    data: bytes,
    path: Path,
    input_column: str | None,
    output_column: str | None,
    time_column: str | None,
    disk_path: Path | None = None,
) -> RequestLog:
    text_start = _skip_leading_space(data)
    # numpy's reader is fastest on the file itself: use it when the bytes are the file's own.
    if disk_path is None and text_start is data and _file_size(path) == len(data):
        disk_path = path
    elif text_start is not data:
        disk_path = None  # numpy's reader would see the skipped bytes
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
    repeated = sorted({name for name in header if [c.lower() for c in header].count(name.lower()) > 1})
    if repeated:
        raise ValidationError(f"{path}: column {repeated[0]!r} appears more than once in the header")
    input_index = _pick_column(header, input_column, INPUT_COLUMN_NAMES, "input", path, True)
    output_index = _pick_column(header, output_column, OUTPUT_COLUMN_NAMES, "output", path, True)
    time_index = _pick_column(header, time_column, TIME_COLUMN_NAMES, "time", path, False)
    columns = (input_index, output_index, time_index)
    names = tuple(None if i is None else header[i] for i in columns)
    body_start = text_start.find(b"\n")
    if body_start < 0 or _NON_SPACE.search(text_start, body_start + 1) is None:
        raise ValidationError(f"{path}: no requests (only a header)")
    log = _read_csv_fast(text_start, disk_path, body_start + 1, len(header), columns, names)
    if log is None:
        if len(data) < _file_size(path) and data[:2] != b"\x1f\x8b":  # only the head was read so far
            text_start = _skip_leading_space(_read_bytes(path))
        log = _read_csv_slow(text_start, path, len(header), columns, names)
    return log


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


def _read_csv_fast(
    data: bytes, disk_path: Path | None, body_start: int, field_count: int, columns: tuple, names: tuple
) -> RequestLog | None:
    """numpy's C CSV reader on the chosen columns; ``None`` when the data needs the careful path."""
    input_index, output_index, time_index = columns
    first_row = _first_line(data, body_start).split(",")
    if len(first_row) != field_count:
        return None
    time_kind = None
    if time_index is not None:
        sample = first_row[time_index]
        if _INTEGER_PATTERN.match(sample):
            time_kind = "i8"
        elif _NUMBER_PATTERN.match(sample):
            time_kind = "f8"
        elif _DATETIME_PATTERN.match(sample) and _DATETIME_PATTERN.match(sample).group(8) is None:
            time_kind = "S32"
        else:
            return None
    usecols = [input_index, output_index] + ([time_index] if time_index is not None else [])
    all_columns = sorted(usecols) == list(range(field_count))
    dtype = [("input", "i8"), ("output", "i8")] + ([("time", time_kind)] if time_kind else [])
    # loadtxt returns fields in usecols order only when usecols is increasing.
    order = sorted(range(len(usecols)), key=lambda k: usecols[k])
    try:
        table = np.loadtxt(
            disk_path if disk_path is not None else io.BytesIO(data),
            delimiter=",",
            skiprows=1,
            usecols=None if all_columns else [usecols[k] for k in order],
            dtype=[dtype[k] for k in order],
            comments=None,
            encoding=None,
            ndmin=1,
        )
    except (ValueError, IndexError):
        return None
    inputs = table["input"]  # strided views into the table: copying them costs more than it saves
    outputs = table["output"]
    lowest_input, lowest_output = int(inputs.min()), int(outputs.min())
    if min(lowest_input, lowest_output) < 0:
        return None  # the careful path names the line
    if lowest_input == 0 and lowest_output == 0 and ((inputs == 0) & (outputs == 0)).any():
        return None
    times = None
    if time_kind is not None:
        if time_kind == "S32":
            parsed = _parse_datetimes_s(table["time"])
            if parsed is None:
                return None
            times, origin = parsed
        else:
            raw = table["time"]
            if time_kind == "i8" and np.abs(raw).max() > 2**53:  # epoch nanoseconds: shift to stay exact
                raw = raw - raw.min()
            times = raw.astype(np.float64)
            scale_s = _time_scale_s(names[2], 1.0)
            if scale_s != 1.0:
                times *= scale_s
            if not np.isfinite(times).all():
                return None
    return RequestLog(inputs, outputs, times, origin if time_kind == "S32" else None)


def _parse_datetimes_s(strings: np.ndarray) -> tuple[np.ndarray, float] | None:
    """ISO-8601 date-time bytes → (seconds since the earliest (exact to 1 ns), the earliest as Unix
    seconds), by numpy's C parser (naive date-times are UTC).

    Returns ``None`` when any value is not a plain date-time (numpy refuses it, or warns about
    a time zone): the careful path then reads the file and names the line.
    """
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            moments = strings.astype("datetime64[ns]").view(np.int64)
    except (ValueError, TypeError, OverflowError, Warning):
        return None
    if moments.size == 0 or (moments == np.iinfo(np.int64).min).any():  # NaT
        return None
    earliest = int(moments.min())
    moments -= earliest  # our own array: shift and scale in place
    seconds = moments.astype(np.float64)
    seconds *= 1e-9
    return seconds, earliest * 1e-9


def _days_from_civil(year: np.ndarray, month: np.ndarray, day: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm, vectorized)."""
    year = year - (month <= 2)
    era = np.floor_divide(year, 400)
    year_of_era = year - era * 400
    day_of_year = (153 * (month + np.where(month > 2, -3, 9)) + 2) // 5 + day - 1
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
                f"{path}, line {line}: {column} = {value!r} is not a whole number of tokens"
            ) from None
        number = int(as_float)
    if number < 0:
        raise ValidationError(f"{path}, line {line}: {column} = {number} is negative (token counts are ≥ 0)")
    if number > MAX_REQUEST_TOKENS:
        raise ValidationError(
            f"{path}, line {line}: {column} = {value.strip()} is too large "
            f"(at most {MAX_REQUEST_TOKENS:,} tokens per request)"
        )
    return number


def _parse_time(value: str, column: str, scale_s: float, path: Path, line: int) -> tuple[str, float | int]:
    """``("ns", integer ns since 1970)`` for a date-time, ``("s", seconds)`` for a number."""
    text = value.strip()
    match = _DATETIME_PATTERN.match(text)
    if match:
        year, month, day, hour, minute, second = (int(match.group(k)) for k in range(1, 7))
        try:
            datetime.date(year, month, day)
        except ValueError:
            raise ValidationError(f"{path}, line {line}: {column} = {value!r} is not a valid date") from None
        days = int(_days_from_civil(np.array([year]), np.array([month]), np.array([day]))[0])
        fraction = match.group(7) or ""
        seconds = ((days * 24 + hour) * 60 + minute) * 60 + second
        zone = match.group(8)
        if zone and zone != "Z":
            sign = 1 if zone[0] == "+" else -1
            digits = zone[1:].replace(":", "")
            seconds -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
        return "ns", seconds * 1_000_000_000 + (int(fraction.ljust(9, "0")) if fraction else 0)
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise ValidationError(
            f"{path}, line {line}: {column} = {value!r} is neither a number nor a date-time "
            "like 2023-11-16 18:15:46.680590"
        )
    return "s", number * scale_s


def _arrival_seconds(
    times: list, kinds: set[str], column: str, path: Path
) -> tuple[np.ndarray, float | None]:
    """(seconds, the clock's 0 as Unix seconds or None) from values all of one kind: date-times
    relative to the earliest, numbers as given."""
    if len(kinds) > 1:
        raise ValidationError(f"{path}: column {column!r} mixes date-times and numbers")
    if kinds == {"ns"}:
        earliest = min(times)
        return np.array([t - earliest for t in times], dtype=np.float64) * 1e-9, earliest * 1e-9
    return np.array(times, dtype=np.float64), None


def _read_csv_slow(data: bytes, path: Path, field_count: int, columns: tuple, names: tuple) -> RequestLog:
    """Line-by-line reading with exact errors (file, line, column, value)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    input_index, output_index, time_index = columns
    scale_s = 1.0 if time_index is None else _time_scale_s(names[2], 1.0)
    inputs: list[int] = []
    outputs: list[int] = []
    times: list = []
    kinds: set[str] = set()
    reader = csv.reader(io.StringIO(text))
    next(reader)  # header
    for row in reader:
        line = reader.line_num
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if len(row) != field_count:
            raise ValidationError(f"{path}, line {line}: expected {field_count} fields, found {len(row)}")
        number_in = _parse_token(row[input_index], names[0], path, line)
        number_out = _parse_token(row[output_index], names[1], path, line)
        if number_in + number_out < 1:
            raise ValidationError(
                f"{path}, line {line}: {names[0]} + {names[1]} is 0 (a request has ≥ 1 token)"
            )
        inputs.append(number_in)
        outputs.append(number_out)
        if time_index is not None:
            kind, moment = _parse_time(row[time_index], names[2], scale_s, path, line)
            kinds.add(kind)
            times.append(moment)
    if not inputs:
        raise ValidationError(f"{path}: no requests (only a header)")
    arrival, origin = (None, None) if time_index is None else _arrival_seconds(times, kinds, names[2], path)
    return RequestLog(np.array(inputs, dtype=np.int64), np.array(outputs, dtype=np.int64), arrival, origin)


def _read_jsonl(
    data: bytes, path: Path, input_column: str | None, output_column: str | None, time_column: str | None
) -> RequestLog:
    """Mooncake-style JSON lines; ``timestamp`` in ms unless ``time_column`` has a unit suffix."""
    input_key = input_column or "input_length"
    output_key = output_column or "output_length"
    time_key = time_column or "timestamp"
    scale_s = _time_scale_s(time_key, JSONL_TIMESTAMP_SCALE_S if time_key == "timestamp" else 1.0)
    inputs: list[int] = []
    outputs: list[int] = []
    times: list = []
    kinds: set[str] = set()
    has_time: bool | None = None
    for line_number, line in enumerate(data.decode("utf-8-sig", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            raise ValidationError(f"{path}, line {line_number}: not a JSON object") from None
        if not isinstance(record, dict):
            raise ValidationError(f"{path}, line {line_number}: not a JSON object")
        for key in (input_key, output_key):
            if key not in record:
                raise ValidationError(
                    f"{path}, line {line_number}: no field {key!r} (fields found: {', '.join(record)})"
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
        line_has_time = time_key in record
        if has_time is None:
            has_time = line_has_time
        if line_has_time != has_time:
            raise ValidationError(f"{path}, line {line_number}: {time_key!r} is present on some lines only")
        if line_has_time:
            kind, moment = _parse_time(str(record[time_key]), time_key, scale_s, path, line_number)
            kinds.add(kind)
            times.append(moment)
    if not inputs:
        raise ValidationError(f"{path}: the file is empty")
    if time_column is not None and not has_time:
        raise ValidationError(f"{path}: no field {time_column!r} for time")
    arrival, origin = _arrival_seconds(times, kinds, time_key, path) if has_time else (None, None)
    return RequestLog(np.array(inputs, dtype=np.int64), np.array(outputs, dtype=np.int64), arrival, origin)
