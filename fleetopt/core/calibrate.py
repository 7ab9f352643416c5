"""Fitting the iteration-time model of a serving instance to measured benchmarks.

The model (the ``engine`` service model's, docs/math.md): an iteration costs
t = W + H·d + τ·p + κ·K (d sequences decoding, p prompt tokens, K KV tokens held). A request
with ``isl`` prompt and ``osl`` output tokens holds a slot for I = P + osl iterations,
P = ⌈isl / chunk⌉.

A closed-loop benchmark at concurrency c keeps c requests in flight. In the mean field every
iteration then carries c sequences, each adding its residence-averaged cost

    c₁ = (H·osl + τ·isl + κ·k̄) / I,   k̄ = P·isl/2 + osl·isl + osl·(osl + 1)/2

(k̄: the KV tokens a request holds, summed over its I iterations), so

    TPOT ≈ W + c·c₁,
    TTFT ≈ (P + 1)·(W + (c − 1)·c₁) + τ·isl + κ·P·isl/2

(P prefill iterations and the first decode, with the other c − 1 requests alongside, plus the
request's own prompt compute). Two terms are added to the measured TTFT:

    TTFT ≈ T0 + … + ζ·(c − 1)·isl

T0 is a constant per-request overhead (API server, tokenization, scheduling; the planner adds it
to every TTFT) and ζ the benchmark's own prefill overlap: a closed-loop benchmark starts its c
requests together and identical requests stay in step, so a request waits behind part of the
others' prompts far more than Poisson arrivals would make it (measured: ζ ≈ 0.05–0.08·τ). ζ
describes the benchmark, not the engine, and is not used in planning. Everything is linear in
θ = (W, H, τ, κ, T0, ζ), so the fit is a bounded linear least squares (θ ≥ 0, scipy's BVLS) on
relative errors: each row contributes (pred − meas)/meas for TPOT and for TTFT.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fleetopt.errors import ValidationError

#: The parameters, in the order of the design matrix columns.
PARAMETERS = (
    "iteration_base_s",
    "iteration_per_slot_s",
    "prefill_per_token_s",
    "iteration_per_kv_token_s",
    "ttft_overhead_s",
    "benchmark_prefill_overlap_s",
)
_KV = 3


@dataclass(frozen=True)
class Benchmark:
    """Measured closed-loop results (arrays of one length; seconds and tokens)."""

    concurrency: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    ttft_s: np.ndarray
    tpot_s: np.ndarray

    def __post_init__(self) -> None:
        sizes = {
            a.size
            for a in (self.concurrency, self.input_tokens, self.output_tokens, self.ttft_s, self.tpot_s)
        }
        if len(sizes) != 1:
            raise ValueError("benchmark columns must have one length")

    @property
    def rows(self) -> int:
        return int(self.concurrency.size)


@dataclass(frozen=True)
class Fit:
    """A fitted calibration and how well it reproduces the rows it was fitted on.

    ``*_pct_errors``: (predicted − measured)/measured × 100 per row.
    """

    iteration_base_s: float
    iteration_per_slot_s: float
    prefill_per_token_s: float
    iteration_per_kv_token_s: float
    ttft_overhead_s: float
    benchmark_prefill_overlap_s: float
    prefill_chunk_tokens: int
    rows: int
    tpot_pct_errors: np.ndarray
    ttft_pct_errors: np.ndarray

    @property
    def parameters(self) -> np.ndarray:
        """θ in the order of :data:`PARAMETERS`."""
        return np.array([getattr(self, name) for name in PARAMETERS])


def design_rows(
    concurrency: np.ndarray, input_tokens: np.ndarray, output_tokens: np.ndarray, prefill_chunk_tokens: int
) -> tuple[np.ndarray, np.ndarray]:
    """(TPOT rows, TTFT rows) of the linear model: prediction = rows @ θ (:data:`PARAMETERS`)."""
    c = np.asarray(concurrency, dtype=np.float64)
    isl = np.asarray(input_tokens, dtype=np.float64)
    osl = np.asarray(output_tokens, dtype=np.float64)
    zero, one = np.zeros_like(c), np.ones_like(c)
    prefill = np.ceil(isl / prefill_chunk_tokens)
    iterations = prefill + osl
    kv_sum = prefill * isl / 2.0 + osl * isl + osl * (osl + 1.0) / 2.0
    per_sequence = np.stack((zero, osl, isl, kv_sum, zero, zero), axis=1) / iterations[:, None]
    base = np.stack((one, zero, zero, zero, zero, zero), axis=1)
    tpot = base + c[:, None] * per_sequence
    own = np.stack((zero, zero, isl, prefill * isl / 2.0, one, (c - 1.0) * isl), axis=1)
    ttft = (prefill + 1.0)[:, None] * (base + (c - 1.0)[:, None] * per_sequence) + own
    return tpot, ttft


def predict(
    fit_parameters: np.ndarray, benchmark: Benchmark, prefill_chunk_tokens: int
) -> tuple[np.ndarray, np.ndarray]:
    """(TPOT, TTFT) predicted per row, seconds."""
    tpot_rows, ttft_rows = design_rows(
        benchmark.concurrency, benchmark.input_tokens, benchmark.output_tokens, prefill_chunk_tokens
    )
    theta = np.asarray(fit_parameters, dtype=np.float64)
    return tpot_rows @ theta, ttft_rows @ theta


def pct_errors(predicted: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """(predicted − measured)/measured × 100."""
    return (predicted / measured - 1.0) * 100.0


def fit_iteration_model(
    benchmark: Benchmark,
    prefill_chunk_tokens: int,
    *,
    ttft_weight: float = 1.0,
    kv_term: bool = False,
    min_concurrencies: int = 2,
) -> Fit:
    """Least-squares θ ≥ 0 on relative TPOT and TTFT errors (scipy ``lsq_linear``, BVLS); κ only
    with ``kv_term`` (the bundled calibrations leave it at 0: the data do not separate it from H).

    Raises ValidationError when the rows cannot identify the parameters (fewer than
    ``min_concurrencies`` distinct concurrencies, or non-positive measurements).
    """
    from scipy.optimize import lsq_linear

    if benchmark.rows == 0:
        raise ValidationError("calibration: no usable rows")
    distinct = np.unique(benchmark.concurrency).size
    if distinct < min_concurrencies:
        raise ValidationError(
            f"calibration: {distinct} distinct concurrency value(s); at least {min_concurrencies} are needed "
            "to separate the per-iteration cost W from the per-sequence cost H"
        )
    if not (np.all(benchmark.tpot_s > 0) and np.all(benchmark.ttft_s > 0)):
        raise ValidationError("calibration: every measured TTFT and TPOT must be > 0")
    tpot_rows, ttft_rows = design_rows(
        benchmark.concurrency, benchmark.input_tokens, benchmark.output_tokens, prefill_chunk_tokens
    )
    used = [k for k in range(len(PARAMETERS)) if kv_term or k != _KV]
    matrix = np.concatenate(
        (
            tpot_rows[:, used] / benchmark.tpot_s[:, None],
            ttft_weight * ttft_rows[:, used] / benchmark.ttft_s[:, None],
        )
    )
    target = np.concatenate((np.ones(benchmark.rows), np.full(benchmark.rows, ttft_weight)))
    solution = lsq_linear(matrix, target, bounds=(0.0, np.inf), method="bvls").x
    theta = np.zeros(len(PARAMETERS))
    theta[used] = solution
    tpot, ttft = predict(theta, benchmark, prefill_chunk_tokens)
    return Fit(
        *(float(v) for v in theta), int(prefill_chunk_tokens), benchmark.rows,
        pct_errors(tpot, benchmark.tpot_s), pct_errors(ttft, benchmark.ttft_s),
    )  # fmt: skip


def physical_floors(
    benchmark: Benchmark,
    prefill_chunk_tokens: int,
    *,
    parameters_active: float | None,
    weight_bytes_active: float | None,
    peak_flops_per_s: float | None,
    memory_bandwidth_bytes_per_s: float | None,
) -> tuple[np.ndarray, np.ndarray]:
    """(TPOT floor, TTFT floor) of each row, seconds: what the instance cannot beat (0 where a
    number is unknown). Every iteration reads the active weights at least once, W ≥ active weight
    bytes / bandwidth, so TPOT ≥ W; a prompt takes P = ⌈isl / chunk⌉ iterations and 2 FLOPs per
    active parameter per token at the dense peak (Kaplan et al. 2020, §2.1 — the floors of the
    engine model's iteration_costs, with the active rather than all weights, so that they bound an
    MoE at low concurrency too), and the two overlap at best: TTFT ≥ max(P·W, 2·N_active·isl / F)."""
    isl = np.asarray(benchmark.input_tokens, dtype=np.float64)
    weights_s = (
        weight_bytes_active / memory_bandwidth_bytes_per_s
        if weight_bytes_active and memory_bandwidth_bytes_per_s
        else 0.0
    )
    flops_s_per_token = (
        2.0 * parameters_active / peak_flops_per_s if parameters_active and peak_flops_per_s else 0.0
    )
    prefill_iterations = np.ceil(isl / prefill_chunk_tokens)
    tpot_floor = np.full(isl.shape, weights_s)
    ttft_floor = np.maximum(prefill_iterations * weights_s, flops_s_per_token * isl)
    return tpot_floor, ttft_floor


def subset(benchmark: Benchmark, keep: np.ndarray) -> Benchmark:
    """The rows of ``benchmark`` where ``keep`` (a boolean mask) holds."""
    return Benchmark(
        benchmark.concurrency[keep], benchmark.input_tokens[keep], benchmark.output_tokens[keep],
        benchmark.ttft_s[keep], benchmark.tpot_s[keep],
    )  # fmt: skip


def leave_one_out_errors(
    benchmark: Benchmark, prefill_chunk_tokens: int, **fit_options: object
) -> tuple[np.ndarray, np.ndarray] | None:
    """(TPOT, TTFT) % errors of each row predicted by a fit of the other rows (rows the fit did not
    see), or None when dropping a row leaves too few concurrencies to fit."""
    tpot_errors, ttft_errors = [], []
    for k in range(benchmark.rows):
        keep = np.arange(benchmark.rows) != k
        try:
            fit = fit_iteration_model(subset(benchmark, keep), prefill_chunk_tokens, **fit_options)
        except ValidationError:
            return None
        tpot, ttft = predict(fit.parameters, subset(benchmark, ~keep), prefill_chunk_tokens)
        tpot_errors.append(float(pct_errors(tpot, benchmark.tpot_s[~keep])[0]))
        ttft_errors.append(float(pct_errors(ttft, benchmark.ttft_s[~keep])[0]))
    return np.array(tpot_errors), np.array(ttft_errors)
