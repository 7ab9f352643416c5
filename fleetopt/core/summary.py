"""Workload summaries: the exact, additive aggregates of a request log that the planner needs.

A :class:`LogSummary` holds

* the exact joint histogram of (input tokens, output tokens) → requests,
* the arrivals counted per window of the log's clock (window start → requests), and
* provenance: one :class:`SummarySource` per summarized log (its name, requests, first and last
  arrival on its clock, and whether that clock is UTC);
* for a log that reports cached prompt tokens, a third key of the histogram: (input, output,
  cached) → requests, cached = -1 on rows that do not report it
  (:class:`fleetopt.core.prefix.ReportedCache`).

Every part is a sum over requests, so summaries of disjoint parts of a log merge by adding counts
(:func:`merge_summaries`), and a summary gives the planner the same workload as its log
(:func:`workload_from_summary`): the same atoms, the same request count, the same span and mean
rate, and the same per-window counts for any multiple of the window. What a summary cannot give is
what needs each arrival: the inter-arrival variance, a sliding-window peak, a replay.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fleetopt.core.prefix import NOT_REPORTED, ReportedCache
from fleetopt.core.workload import (
    MICROSECONDS_PER_S,
    ArrivalSpan,
    ArrivalWindows,
    Workload,
    workload_from_counts,
)
from fleetopt.errors import ValidationError

#: The default summary window: one second, so any whole-second rate window re-bins exactly.
DEFAULT_SUMMARY_WINDOW_US = MICROSECONDS_PER_S


@dataclass(frozen=True)
class SummarySource:
    """One summarized log: what it was, how many requests, where its arrivals lie.

    ``first_us``/``last_us``: first and last arrival on the log's clock (µs; ``None`` without
    times); ``utc``: that clock is UTC (µs since the Unix epoch), else the log's own zero.
    """

    source: str
    requests: int
    first_us: int | None = None
    last_us: int | None = None
    utc: bool = False

    @property
    def has_times(self) -> bool:
        return self.first_us is not None


@dataclass(frozen=True, eq=False)
class LogSummary:
    """The exact aggregates of one or more request logs (module docstring).

    ``input_tokens``/``output_tokens``/``counts``: the joint histogram, one row per distinct pair
    (int64). ``window_us``: the arrival window (µs; ``None`` without times); ``window_starts_us``
    /``window_counts``: arrivals per clock window, only windows with arrivals, ascending.
    ``cached_tokens``: the reported cached prompt tokens of each histogram row (a third key, -1
    where not reported), or None when the log reports none.
    """

    input_tokens: np.ndarray
    output_tokens: np.ndarray
    counts: np.ndarray
    window_us: int | None
    window_starts_us: np.ndarray
    window_counts: np.ndarray
    sources: tuple[SummarySource, ...]
    cached_tokens: np.ndarray | None = None

    @property
    def request_count(self) -> int:
        return int(self.counts.sum())

    @property
    def has_times(self) -> bool:
        return self.window_us is not None

    @property
    def span(self) -> ArrivalSpan | None:
        """First and last arrival over every source (on their shared clock)."""
        if not self.has_times:
            return None
        return ArrivalSpan(
            first_us=min(s.first_us for s in self.sources),
            last_us=max(s.last_us for s in self.sources),
            utc=self.sources[0].utc,
        )

    def check(self, where: str) -> None:
        """Raise ValidationError (naming ``where``) unless the parts agree with each other."""
        for name in ("input_tokens", "output_tokens", "counts", "window_starts_us", "window_counts"):
            array = getattr(self, name)
            if array.ndim != 1 or array.dtype.kind not in "iu":
                raise ValidationError(f"{where}: {name} must be a column of whole numbers")
        if not self.input_tokens.size == self.output_tokens.size == self.counts.size:
            raise ValidationError(f"{where}: the token histogram's columns differ in length")
        if self.counts.size == 0:
            raise ValidationError(f"{where}: the summary has no requests")
        if (self.counts < 1).any():
            raise ValidationError(f"{where}: a histogram count is below 1")
        if (self.input_tokens < 0).any() or (self.output_tokens < 0).any():
            raise ValidationError(f"{where}: a token count is negative (token counts are ≥ 0)")
        if ((self.input_tokens + self.output_tokens) < 1).any():
            raise ValidationError(
                f"{where}: a histogram row has input + output = 0 (a request has ≥ 1 token)"
            )
        cached = self.cached_tokens
        if cached is not None:
            if cached.ndim != 1 or cached.dtype.kind not in "iu" or cached.size != self.counts.size:
                raise ValidationError(
                    f"{where}: cached_tokens must be a column of whole numbers, one per row"
                )
            if (cached < NOT_REPORTED).any() or (cached > self.input_tokens).any():
                raise ValidationError(
                    f"{where}: a histogram row's cached_tokens is negative or larger than its input_tokens "
                    "(cached prompt tokens are part of the prompt)"
                )
        if not self.sources:
            raise ValidationError(f"{where}: the summary names no source log")
        for source in self.sources:
            if (source.first_us is None) != (source.last_us is None):
                raise ValidationError(
                    f"{where}: the source {source.source!r} has a first arrival without a last, or a last "
                    "without a first"
                )
            if source.requests < 1:
                raise ValidationError(
                    f"{where}: the source {source.source!r} counts {source.requests} requests"
                )
        total = self.request_count
        if sum(s.requests for s in self.sources) != total:
            raise ValidationError(
                f"{where}: the sources count {sum(s.requests for s in self.sources):,} requests but the "
                f"token histogram {total:,}"
            )
        timed = {s.has_times for s in self.sources}
        if len(timed) > 1 or (timed == {True}) != self.has_times:
            raise ValidationError(f"{where}: some sources have arrival times and others do not")
        if not self.has_times:
            if self.window_counts.size:
                raise ValidationError(f"{where}: arrival windows without a window length")
            return
        if self.window_us < 1:
            raise ValidationError(f"{where}: the window is {self.window_us} µs; it must be ≥ 1 µs")
        if len({s.utc for s in self.sources}) > 1:
            raise ValidationError(f"{where}: some sources are on a UTC clock and others on their own")
        if any(s.last_us < s.first_us for s in self.sources):
            raise ValidationError(f"{where}: a source's last arrival is before its first")
        if self.window_starts_us.size != self.window_counts.size:
            raise ValidationError(f"{where}: the arrival windows' columns differ in length")
        if (self.window_counts < 1).any() or (self.window_starts_us % self.window_us).any():
            raise ValidationError(
                f"{where}: an arrival window is empty or does not start on a multiple of the window"
            )
        if int(self.window_counts.sum()) != total:
            raise ValidationError(
                f"{where}: the arrival windows count {int(self.window_counts.sum()):,} requests but the "
                f"token histogram {total:,}"
            )
        span = self.span
        if self.window_starts_us.size and (
            int(self.window_starts_us.min()) > span.first_us
            or int(self.window_starts_us.max()) + self.window_us <= span.last_us
            or int(self.window_starts_us.min()) + self.window_us <= span.first_us
            or int(self.window_starts_us.max()) > span.last_us
        ):
            raise ValidationError(f"{where}: the arrival windows do not cover the first and last arrival")


def _sum_by_key(
    keys: tuple[np.ndarray, ...], counts: np.ndarray
) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """Distinct key tuples (lexicographic order, last key first) and their summed counts."""
    order = np.lexsort(keys[::-1])
    sorted_keys = tuple(k[order] for k in keys)
    counts = counts[order]
    if counts.size == 0:
        return sorted_keys, counts
    change = np.zeros(counts.size, dtype=bool)
    change[0] = True
    for key in sorted_keys:
        change[1:] |= key[1:] != key[:-1]
    starts = np.flatnonzero(change)
    return tuple(k[starts] for k in sorted_keys), np.add.reduceat(counts, starts)


def make_summary(
    input_tokens: np.ndarray,
    output_tokens: np.ndarray,
    counts: np.ndarray,
    window_us: int | None,
    window_starts_us: np.ndarray,
    window_counts: np.ndarray,
    sources: tuple[SummarySource, ...],
    cached_tokens: np.ndarray | None = None,
) -> LogSummary:
    """A summary in canonical form: histogram rows sorted by (input, output[, cached]) and window
    rows by start, equal keys added together (so a summary read back, merged or re-summarized
    compares equal to the same data summarized at once); a cached column no row reports is
    dropped (the summary of a log without the field)."""
    keys = (np.asarray(input_tokens, dtype=np.int64), np.asarray(output_tokens, dtype=np.int64))
    if cached_tokens is not None and not (np.asarray(cached_tokens) != NOT_REPORTED).any():
        cached_tokens = None
    if cached_tokens is not None:
        keys += (np.asarray(cached_tokens, dtype=np.int64),)
    sorted_keys, summed = _sum_by_key(keys, np.asarray(counts, dtype=np.int64))
    (starts,), window_summed = _sum_by_key(
        (np.asarray(window_starts_us, dtype=np.int64),), np.asarray(window_counts, dtype=np.int64)
    )
    cached = sorted_keys[2] if cached_tokens is not None else None
    return LogSummary(
        sorted_keys[0], sorted_keys[1], summed, window_us, starts, window_summed, tuple(sources), cached
    )


def merge_summaries(summaries: list[LogSummary], names: list[str] | None = None) -> LogSummary:
    """The summary of the union of the summarized logs: counts add, sources are listed together.

    The parts must share a window length and a clock (all UTC, or all their own zero), and all or
    none must have arrival times. The same log twice (an identical source) is refused: its
    requests would count double.
    """
    names = names or [f"summary {k + 1}" for k in range(len(summaries))]
    if not summaries:
        raise ValidationError("merge: no summaries given")
    first = summaries[0]
    for summary, name in zip(summaries[1:], names[1:], strict=True):
        if summary.has_times != first.has_times:
            raise ValidationError(
                f"merge: {name} {'has' if summary.has_times else 'has no'} arrival times and {names[0]} "
                f"{'has' if first.has_times else 'has no'}; a merged summary needs them in every part"
            )
        if summary.has_times and summary.window_us != first.window_us:
            raise ValidationError(
                f"merge: {name} counts arrivals per {summary.window_us / MICROSECONDS_PER_S:g} s and "
                f"{names[0]} per {first.window_us / MICROSECONDS_PER_S:g} s; summarize them with the same "
                "--window"
            )
        if summary.has_times and summary.sources[0].utc != first.sources[0].utc:
            raise ValidationError(
                f"merge: {name} and {names[0]} are on different clocks (one UTC, one the log's own zero); "
                "their windows cannot be added"
            )
    seen: dict[SummarySource, str] = {}
    for summary, name in zip(summaries, names, strict=True):
        for source in summary.sources:
            if source in seen:
                raise ValidationError(
                    f"merge: {name} and {seen[source]} both contain the log {source.source!r} "
                    f"({source.requests:,} requests): its requests would count twice"
                )
            seen[source] = name
    cached = None
    if any(s.cached_tokens is not None for s in summaries):  # a part without: its rows do not report
        cached = np.concatenate([
            s.cached_tokens if s.cached_tokens is not None else np.full(s.counts.size, NOT_REPORTED)
            for s in summaries
        ])  # fmt: skip
    return make_summary(
        np.concatenate([s.input_tokens for s in summaries]),
        np.concatenate([s.output_tokens for s in summaries]),
        np.concatenate([s.counts for s in summaries]),
        first.window_us,
        np.concatenate([s.window_starts_us for s in summaries]),
        np.concatenate([s.window_counts for s in summaries]),
        tuple(source for s in summaries for source in s.sources),
        cached,
    )


def summary_from_workload(
    workload: Workload, source: str, window_us: int = DEFAULT_SUMMARY_WINDOW_US
) -> LogSummary:
    """The summary of a request log loaded as a Workload (its atoms and its arrival times)."""
    if workload.kind != "requests" or workload.request_count is None:
        raise ValidationError(
            f"{workload.name}: a CDF has no request counts to summarize; summaries are made from request logs"
        )
    reported = workload.metadata.get("reported_cache")
    if reported is not None:  # the histogram by (input, output, cached): the same requests, finer
        inputs, outputs, counts = reported.input_tokens, reported.output_tokens, reported.counts
        cached = reported.cached_tokens
    else:
        inputs, outputs = workload.input_tokens, workload.output_tokens
        counts, cached = workload.weights.astype(np.int64), None
    if workload.arrival_times_s is None and workload.arrival_windows is not None:  # already a summary
        windows, sources = workload.arrival_windows, tuple(workload.metadata.get("summary_sources", ()))
        if cached is not None:
            return make_summary(
                inputs, outputs, counts, windows.window_us, windows.starts_us, windows.counts, sources, cached
            )
        return LogSummary(
            inputs.copy(),
            outputs.copy(),
            counts,
            windows.window_us,
            windows.starts_us,
            windows.counts,
            sources,
        )
    from fleetopt.core.workload_stats import arrival_ticks_us, clock_counts_from_ticks

    ticks = arrival_ticks_us(workload)
    if ticks is None:
        return make_summary(
            inputs, outputs, counts, None, np.zeros(0, np.int64), np.zeros(0, np.int64),
            (SummarySource(source, int(counts.sum())),), cached,
        )  # fmt: skip
    starts, window_counts = clock_counts_from_ticks(ticks, window_us)
    utc = workload.arrival_span.utc if workload.arrival_span is not None else False
    record = SummarySource(source, int(counts.sum()), int(ticks[0]), int(ticks[-1]), utc)
    return make_summary(inputs, outputs, counts, window_us, starts, window_counts, (record,), cached)


def workload_from_summary(summary: LogSummary, name: str, source: str = "") -> Workload:
    """The Workload a summary stands for: the log's atoms, request count, span and windows."""
    span = summary.span
    windows = (
        ArrivalWindows(summary.window_us, summary.window_starts_us, summary.window_counts)
        if summary.has_times
        else None
    )
    metadata = {"summary_sources": summary.sources}
    reported = reported_cache(
        summary.input_tokens, summary.output_tokens, summary.cached_tokens, summary.counts
    )
    if reported is not None:
        metadata["reported_cache"] = reported
    if span is not None and span.utc:
        metadata["origin_utc"] = utc_iso(span.first_us)
    return workload_from_counts(
        summary.input_tokens, summary.output_tokens, summary.counts, name=name, source=source,
        arrival_span=span, arrival_windows=windows, metadata=metadata,
    )  # fmt: skip


def reported_cache(
    input_tokens: np.ndarray,
    output_tokens: np.ndarray,
    cached_tokens: np.ndarray | None,
    counts: np.ndarray,
    field: str | None = None,
) -> ReportedCache | None:
    """The :class:`~fleetopt.core.prefix.ReportedCache` of a histogram with a cached column, or None
    when there is no column or no row reports (a log without the evidence)."""
    if cached_tokens is None or not (np.asarray(cached_tokens) != NOT_REPORTED).any():
        return None
    return ReportedCache(
        np.asarray(input_tokens, dtype=np.int64), np.asarray(output_tokens, dtype=np.int64),
        np.asarray(cached_tokens, dtype=np.int64), np.asarray(counts, dtype=np.int64), field,
    )  # fmt: skip


def utc_iso(moment_us: int) -> str:
    """An instant in µs since the Unix epoch as ISO 8601 UTC (``2023-11-16T18:15:46.680590Z``)."""
    seconds, micros = divmod(int(moment_us), MICROSECONDS_PER_S)
    text = str(np.datetime64(seconds, "s").astype("datetime64[s]"))
    return f"{text}.{micros:06d}Z" if micros else f"{text}Z"
