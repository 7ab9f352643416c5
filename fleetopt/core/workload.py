"""The one workload representation: a discrete distribution of requests.

A :class:`Workload` is a set of *atoms* ``(total_tokens, input_tokens, output_tokens)`` with
non-negative weights. A request log becomes one atom per distinct (input, output) pair,
weighted by its count; a CDF of total lengths becomes one atom per integer length, weighted
by the exact mass the piecewise-uniform distribution puts on it. Every expectation fleetopt
computes is a finite weighted sum over these atoms: exact, never sampled.

``total_tokens`` is the routing key (the papers' ``L_total``). For a request log it equals
``input + output``; for a CDF it is the CDF's length ``L``, and the input/output split is an
explicit model (:func:`split_total_tokens`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from fleetopt.errors import ValidationError

#: The reference implementation's input share: L_in = max(1, floor(0.8·L)) (FACTS §1).
FLEET_SIM_INPUT_FRACTION = 0.8

#: A CDF is expanded to one atom per integer length; beyond this many the expansion refuses.
MAX_CDF_TOKENS = 4_194_304

#: Arrival times are kept to the microsecond: a log's clock is counted in whole µs.
MICROSECONDS_PER_S = 1_000_000


@dataclass(frozen=True)
class ArrivalSpan:
    """Where a log's arrivals lie on its own clock, in whole microseconds.

    ``utc``: the clock is UTC, counted from the Unix epoch (date-times, epoch numbers); otherwise it
    is the log's own zero (offsets as written). ``first_us``/``last_us``: the first and last
    arrival. A log's arrival times in seconds are ``(t_us − first_us) · 10⁻⁶``, so the span is
    ``(last_us − first_us) · 10⁻⁶`` whether the log or its summary is read.
    """

    first_us: int
    last_us: int
    utc: bool = False

    @property
    def span_s(self) -> float:
        """Seconds from the first to the last arrival."""
        return (self.last_us - self.first_us) * 1e-6


@dataclass(frozen=True)
class ArrivalWindows:
    """Arrivals counted per window of the log's clock (what a summary keeps instead of times).

    Window ``k`` covers ``[starts_us[k], starts_us[k] + window_us)`` µs; every start is a multiple
    of ``window_us`` on the clock of the workload's :class:`ArrivalSpan`; only windows with
    arrivals are listed, ascending.
    """

    window_us: int
    starts_us: np.ndarray
    counts: np.ndarray


@dataclass(frozen=True, eq=False)
class Workload:
    """Weighted request atoms, sorted by ``total_tokens`` (ascending), plus optional arrivals.

    Attributes:
        name: a short label (bundled name or file name).
        total_tokens: routing length of each atom, tokens (int64, ascending).
        input_tokens: prompt length of each atom, tokens (int64).
        output_tokens: generated length of each atom, tokens (int64).
        weights: non-negative weight of each atom (request counts, or probability mass).
        kind: ``"requests"`` (a log) or ``"cdf"`` (a table of total lengths).
        request_count: number of raw requests behind a log, ``None`` for a CDF.
        arrival_times_s: sorted arrival times in seconds from the first, or ``None``.
        split_model: how totals were split into input/output (CDF only), e.g. ``"fleet-sim"``.
        source: where the data came from (path, provenance).
        split_assumed: a CDF of total tokens only, split by the default assumption (nobody chose it,
            and the file carried no input/output information); every output warns about it.
        arrival_span: where the arrivals lie on the log's clock (first and last, µs), or ``None``
            (a CDF, a log without times, or times given without their clock).
        arrival_windows: arrivals per clock window, for a workload read from a summary (which
            has no ``arrival_times_s``); ``None`` otherwise.
        arrival_us: the same arrivals as ``arrival_times_s`` on the log's clock in whole µs (sorted,
            read-only; ``arrival_times_s`` = (arrival_us − arrival_span.first_us) · 10⁻⁶), when the
            reader had them as integers; ``None`` otherwise.
    """

    name: str
    total_tokens: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    weights: np.ndarray
    kind: str
    request_count: int | None = None
    arrival_times_s: np.ndarray | None = None
    split_model: str | None = None
    source: str = ""
    metadata: dict = field(default_factory=dict)
    split_assumed: bool = False
    arrival_span: ArrivalSpan | None = None
    arrival_windows: ArrivalWindows | None = None
    arrival_us: np.ndarray | None = field(default=None, repr=False)

    @property
    def has_arrivals(self) -> bool:
        """Whether the workload knows when its requests arrived (times, or a summary's windows)."""
        return self.arrival_times_s is not None or self.arrival_span is not None

    @cached_property
    def total_weight(self) -> float:
        """Sum of the atom weights."""
        return float(self.weights.sum())

    @cached_property
    def max_total_tokens(self) -> int:
        """The longest routing length with positive weight."""
        return int(self.total_tokens[self.weights > 0][-1])

    def cdf_at(self, tokens: float) -> float:
        """F(tokens): the fraction of traffic with total length ≤ ``tokens``."""
        index = int(np.searchsorted(self.total_tokens, tokens, side="right"))
        return float(self.weights[:index].sum()) / self.total_weight


def split_total_tokens(
    total_tokens: np.ndarray, input_fraction: float = FLEET_SIM_INPUT_FRACTION
) -> tuple[np.ndarray, np.ndarray]:
    """Split total lengths L into (L_in, L_out) = (max(1, ⌊f·L⌋), max(1, L − L_in)).

    With f = 0.8 this is the reference implementation's split (FACTS §1). Note that for
    L = 1 it gives L_in = L_out = 1 (the reference's choice, kept as is).
    """
    if not 0.0 < input_fraction < 1.0:
        raise ValidationError(f"input fraction: {input_fraction!r} must be in (0, 1)")
    total = np.asarray(total_tokens, dtype=np.int64)
    input_tokens = np.maximum(1, np.floor(input_fraction * total).astype(np.int64))
    output_tokens = np.maximum(1, total - input_tokens)
    return input_tokens, output_tokens


#: The split-model names users may give (``--split``); the value after ``:`` is a parameter.
SPLIT_MODEL_FORMS = ("fleet-sim", "input-fraction:F", "output-tokens:N")


@dataclass(frozen=True)
class SplitModel:
    """How a CDF's total length L is split into prompt and generated tokens.

    * ``fleet-sim`` — the reference implementation: L_in = max(1, ⌊0.8·L⌋), L_out = max(1, L − L_in).
    * ``input-fraction:F`` — the same rule with share F in (0, 1): L_in = max(1, ⌊F·L⌋).
    * ``output-tokens:N`` — a fixed generation length: L_in = max(1, L − N), L_out = max(1, L − L_in),
      i.e. L_out = N whenever L > N (short requests keep one prompt token).

    Every form keeps L_in, L_out ≥ 1, so L = 1 gives (1, 1) like the reference.
    """

    kind: str  # "input-fraction" or "output-tokens"
    value: float
    name: str

    def apply(self, total_tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(L_in, L_out) arrays for the total lengths ``total_tokens``."""
        if self.kind == "input-fraction":
            return split_total_tokens(total_tokens, self.value)
        total = np.asarray(total_tokens, dtype=np.int64)
        input_tokens = np.maximum(1, total - int(self.value))
        return input_tokens, np.maximum(1, total - input_tokens)


def parse_split_model(spec: str) -> SplitModel:
    """Parse ``fleet-sim``, ``input-fraction:F`` or ``output-tokens:N`` into a :class:`SplitModel`."""
    text = spec.strip().lower()
    if text == "fleet-sim":
        return SplitModel("input-fraction", FLEET_SIM_INPUT_FRACTION, "fleet-sim")
    kind, _, value_text = text.partition(":")
    allowed = ", ".join(SPLIT_MODEL_FORMS)
    if kind == "input-fraction":
        try:
            fraction = float(value_text)
        except ValueError:
            fraction = float("nan")
        if not 0.0 < fraction < 1.0:
            raise ValidationError(f"split model {spec!r}: the input fraction must be a number in (0, 1)")
        return SplitModel("input-fraction", fraction, f"input-fraction:{fraction:g}")
    if kind == "output-tokens":
        if not value_text.isdigit() or int(value_text) < 1:
            raise ValidationError(f"split model {spec!r}: the output length must be a whole number ≥ 1")
        return SplitModel("output-tokens", float(int(value_text)), f"output-tokens:{int(value_text)}")
    raise ValidationError(f"unknown split model {spec!r} (allowed: {allowed})")


def workload_from_requests(
    input_tokens: np.ndarray,
    output_tokens: np.ndarray,
    *,
    name: str,
    arrival_times_s: np.ndarray | None = None,
    source: str = "",
    arrival_span: ArrivalSpan | None = None,
    metadata: dict | None = None,
) -> Workload:
    """Aggregate raw requests into weighted atoms (one per distinct (input, output) pair).

    Lengths must be non-negative integers with input + output ≥ 1. ``arrival_span`` (with
    ``arrival_times_s``) says where the times lie on the log's clock.
    """
    inputs = np.asarray(input_tokens, dtype=np.int64)
    outputs = np.asarray(output_tokens, dtype=np.int64)
    if inputs.shape != outputs.shape or inputs.ndim != 1:
        raise ValidationError("input and output token columns must be 1-D and of equal length")
    if inputs.size == 0:
        raise ValidationError(f"{name}: the workload has no requests")
    totals = inputs + outputs
    if min(int(inputs.min()), int(outputs.min())) < 0 or int(totals.min()) < 1:
        raise ValidationError(f"{name}: token counts must be ≥ 0 with input + output ≥ 1")
    unique_totals, unique_inputs, counts = _count_pairs(inputs, outputs)
    times = None
    if arrival_times_s is not None:
        times = np.asarray(arrival_times_s, dtype=np.float64)
        if times.shape != inputs.shape:
            raise ValidationError(f"{name}: arrival times and token columns must have equal length")
        if times.size > 1 and (times[1:] < times[:-1]).any():  # logs are usually sorted: skip the sort
            times = np.sort(times)
        if times[0] != 0.0:
            times = times - times[0]
    return Workload(
        name=name,
        total_tokens=unique_totals,
        input_tokens=unique_inputs,
        output_tokens=unique_totals - unique_inputs,
        weights=counts,
        kind="requests",
        request_count=int(inputs.size),
        arrival_times_s=times,
        source=source,
        arrival_span=arrival_span if times is not None else None,
        metadata=dict(metadata or {}),
    )


def workload_from_counts(
    input_tokens: np.ndarray,
    output_tokens: np.ndarray,
    counts: np.ndarray,
    *,
    name: str,
    source: str = "",
    arrival_span: ArrivalSpan | None = None,
    arrival_windows: ArrivalWindows | None = None,
    metadata: dict | None = None,
) -> Workload:
    """A request workload from an exact histogram: ``counts[k]`` requests of (input, output)
    = (``input_tokens[k]``, ``output_tokens[k]``) — what a summary holds. The same atoms, in the
    same order and with the same weights, as :func:`workload_from_requests` of the requests."""
    inputs = np.asarray(input_tokens, dtype=np.int64)
    outputs = np.asarray(output_tokens, dtype=np.int64)
    weights = np.asarray(counts, dtype=np.int64)
    if not (inputs.shape == outputs.shape == weights.shape) or inputs.ndim != 1:
        raise ValidationError(f"{name}: token and count columns must be 1-D and of equal length")
    keep = weights > 0
    inputs, outputs, weights = inputs[keep], outputs[keep], weights[keep]
    if inputs.size == 0:
        raise ValidationError(f"{name}: the workload has no requests")
    totals = inputs + outputs
    if min(int(inputs.min()), int(outputs.min())) < 0 or int(totals.min()) < 1:
        raise ValidationError(f"{name}: token counts must be ≥ 0 with input + output ≥ 1")
    input_bits = max(1, int(inputs.max()).bit_length())
    if input_bits + max(1, int(totals.max()).bit_length()) <= 62:  # one packed key sorts faster
        keys = (totals << input_bits) | inputs
        if keys.size > 1 and not bool((keys[1:] > keys[:-1]).all()):  # a log's reader sorts them
            order = np.argsort(keys)
            totals, inputs, weights = totals[order], inputs[order], weights[order]
    else:
        order = np.lexsort((inputs, totals))
        totals, inputs, weights = totals[order], inputs[order], weights[order]
    changes = (totals[1:] != totals[:-1]) | (inputs[1:] != inputs[:-1])
    if not changes.all():  # the same pair twice (merged parts): add their counts
        starts = np.flatnonzero(np.concatenate(([True], changes)))
        weights = np.add.reduceat(weights, starts)
        totals, inputs = totals[starts], inputs[starts]
    return Workload(
        name=name,
        total_tokens=totals,
        input_tokens=inputs,
        output_tokens=totals - inputs,
        weights=weights.astype(np.float64),
        kind="requests",
        request_count=int(weights.sum()),
        source=source,
        arrival_span=arrival_span,
        arrival_windows=arrival_windows,
        metadata=dict(metadata or {}),
    )


def _count_pairs(inputs: np.ndarray, outputs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (input, output) pairs as (totals, inputs, counts) in ascending (total, input) order.

    When the pair space is small (at most 4M cells) the pairs are
    counted with one bincount and only the distinct pairs are sorted; otherwise the pair is
    packed into one integer key (32-bit when it fits: twice as fast to sort) and sorted.
    """
    max_input = int(inputs.max())
    max_output = int(outputs.max())
    cells = (max_input + 1) * (max_output + 1)
    if cells <= 1 << 22:  # 32 MiB of counters: beyond that, cache misses make a sort faster
        width = max_output + 1
        counts_by_cell = np.bincount(inputs * width + outputs, minlength=cells)
        cells_seen = np.flatnonzero(counts_by_cell)
        counts = counts_by_cell[cells_seen].astype(np.float64)
        unique_inputs = cells_seen // width
        unique_totals = unique_inputs + (cells_seen - unique_inputs * width)
        order = np.lexsort((unique_inputs, unique_totals))
        return unique_totals[order], unique_inputs[order], counts[order]
    totals = inputs + outputs
    max_total = int(totals.max())
    input_bits = max(1, max_input.bit_length())
    key_bits = input_bits + max(1, max_total.bit_length())
    if key_bits > 62:
        raise ValidationError(f"token counts up to {max_total} are too large to aggregate")
    key_dtype = np.uint32 if key_bits <= 32 else np.uint64
    keys = (totals.astype(key_dtype) << key_dtype(input_bits)) | inputs.astype(key_dtype)
    keys.sort()
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    counts = np.diff(np.append(starts, keys.size)).astype(np.float64)
    unique_keys = keys[starts].astype(np.uint64)
    unique_totals = (unique_keys >> np.uint64(input_bits)).astype(np.int64)
    unique_inputs = (unique_keys & np.uint64((1 << input_bits) - 1)).astype(np.int64)
    return unique_totals, unique_inputs, counts


def workload_from_cdf(
    breakpoints_tokens: np.ndarray,
    cumulative_fractions: np.ndarray,
    *,
    name: str,
    input_fraction: float = FLEET_SIM_INPUT_FRACTION,
    split_model: str = "fleet-sim",
    source: str = "",
    split: SplitModel | str | None = None,
) -> Workload:
    """Expand a CDF of total lengths exactly into one atom per integer length.

    F is piecewise linear between breakpoints with F(0) = 0 (the reference implementation's
    reading, FACTS §1), so the bucket (t_{k-1}, t_k] puts mass F(t_k) − F(t_{k-1}) uniformly on
    its integers t_{k-1}+1 … t_k. Each integer L then gets that share, and every expectation
    over the CDF is an exact finite sum. ``split`` (a :class:`SplitModel` or its text form)
    overrides ``input_fraction``/``split_model``.
    """
    tokens = np.asarray(breakpoints_tokens, dtype=np.float64)
    fractions = np.asarray(cumulative_fractions, dtype=np.float64)
    if tokens.ndim != 1 or tokens.size == 0 or tokens.shape != fractions.shape:
        raise ValidationError(f"{name}: a CDF needs matching, non-empty token and fraction columns")
    if (tokens != np.round(tokens)).any() or tokens[0] < 1 or (np.diff(tokens) <= 0).any():
        raise ValidationError(f"{name}: CDF token breakpoints must be whole numbers ≥ 1, strictly increasing")
    if tokens[-1] > MAX_CDF_TOKENS:
        raise ValidationError(
            f"{name}: CDF breakpoint {int(tokens[-1])} exceeds the supported maximum {MAX_CDF_TOKENS} tokens"
        )
    if (fractions < 0).any() or (fractions > 1).any() or (np.diff(fractions) < 0).any():
        raise ValidationError(f"{name}: CDF fractions must be non-decreasing and within [0, 1]")
    if fractions[-1] <= 0:
        raise ValidationError(f"{name}: the CDF puts no mass anywhere (last fraction is 0)")
    edges = np.concatenate(([0], tokens.astype(np.int64)))
    masses = np.diff(np.concatenate(([0.0], fractions)))
    widths = np.diff(edges)
    per_token_mass = np.repeat(masses / widths, widths)
    totals = np.arange(1, edges[-1] + 1, dtype=np.int64)
    keep = per_token_mass > 0
    totals, per_token_mass = totals[keep], per_token_mass[keep]
    if split is not None:
        model = parse_split_model(split) if isinstance(split, str) else split
        inputs, outputs = model.apply(totals)
        split_model = model.name
    else:
        inputs, outputs = split_total_tokens(totals, input_fraction)
    return Workload(
        name=name,
        total_tokens=totals,
        input_tokens=inputs,
        output_tokens=outputs,
        weights=per_token_mass,
        kind="cdf",
        split_model=split_model,
        source=source,
        metadata={"breakpoints_tokens": edges[1:].tolist(), "cumulative_fractions": fractions.tolist()},
    )


def weighted_sum(values: np.ndarray, weights: np.ndarray) -> float:
    """Σ wᵢ·xᵢ by numpy's pairwise sum, not the BLAS dot: OpenBLAS runs a long dot on its worker
    threads, which then spin for a while and double the CPU time of the command around it."""
    return float((np.asarray(values, dtype=np.float64) * weights).sum())


def window_microseconds(window_s: float, field: str = "rate window") -> int:
    """A window length in whole microseconds (the resolution of a log's clock)."""
    if not (window_s > 0 and math.isfinite(window_s)):
        raise ValidationError(f"{field}: {window_s!r} s must be a positive, finite duration")
    window_us = round(window_s * MICROSECONDS_PER_S)
    if window_us < 1 or abs(window_us - window_s * MICROSECONDS_PER_S) > 1e-6 * window_us:
        raise ValidationError(f"{field}: {window_s!r} s is not a whole number of microseconds")
    return window_us
