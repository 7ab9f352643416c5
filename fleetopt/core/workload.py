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

from dataclasses import dataclass, field

import numpy as np

from fleetopt.errors import ValidationError

#: The reference implementation's input share: L_in = max(1, floor(0.8·L)) (FACTS §1).
FLEET_SIM_INPUT_FRACTION = 0.8

#: A CDF is expanded to one atom per integer length; beyond this many the expansion refuses.
MAX_CDF_TOKENS = 4_194_304


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

    @property
    def total_weight(self) -> float:
        """Sum of the atom weights."""
        return float(self.weights.sum())

    @property
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


def workload_from_requests(
    input_tokens: np.ndarray,
    output_tokens: np.ndarray,
    *,
    name: str,
    arrival_times_s: np.ndarray | None = None,
    source: str = "",
) -> Workload:
    """Aggregate raw requests into weighted atoms (one per distinct (input, output) pair).

    Lengths must be non-negative integers with input + output ≥ 1.
    """
    inputs = np.asarray(input_tokens, dtype=np.int64)
    outputs = np.asarray(output_tokens, dtype=np.int64)
    if inputs.shape != outputs.shape or inputs.ndim != 1:
        raise ValidationError("input and output token columns must be 1-D and of equal length")
    if inputs.size == 0:
        raise ValidationError(f"{name}: the workload has no requests")
    if (inputs < 0).any() or (outputs < 0).any() or ((inputs + outputs) < 1).any():
        raise ValidationError(f"{name}: token counts must be ≥ 0 with input + output ≥ 1")
    totals = inputs + outputs
    # One pass of lexsort groups equal pairs; the order (total, input) is the atom order.
    order = np.lexsort((inputs, totals))
    pairs = np.stack((totals[order], inputs[order]))
    is_new = np.empty(order.size, dtype=bool)
    is_new[0] = True
    is_new[1:] = (pairs[:, 1:] != pairs[:, :-1]).any(axis=0)
    starts = np.flatnonzero(is_new)
    counts = np.diff(np.append(starts, order.size)).astype(np.float64)
    unique_totals = pairs[0, starts]
    unique_inputs = pairs[1, starts]
    times = None
    if arrival_times_s is not None:
        times = np.sort(np.asarray(arrival_times_s, dtype=np.float64))
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
    )


def workload_from_cdf(
    breakpoints_tokens: np.ndarray,
    cumulative_fractions: np.ndarray,
    *,
    name: str,
    input_fraction: float = FLEET_SIM_INPUT_FRACTION,
    split_model: str = "fleet-sim",
    source: str = "",
) -> Workload:
    """Expand a CDF of total lengths exactly into one atom per integer length.

    F is piecewise linear between breakpoints with F(0) = 0 (the reference implementation's
    reading, FACTS §1), so the bucket (t_{k-1}, t_k] puts mass F(t_k) − F(t_{k-1}) uniformly on
    its integers t_{k-1}+1 … t_k. Each integer L then gets that share, and every expectation
    over the CDF is an exact finite sum.
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
