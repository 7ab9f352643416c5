"""Fitting the iteration-time model of a serving instance to measured benchmarks.

The model is the planner's (the ``engine`` service model, docs/math.md): an iteration costs
W + H·d + τ·p (+ κ·K) — d sequences decoding, p prompt tokens, K KV tokens held — and, where the
model and GPU are known, a prompt chunk's attention over the cached context at τ's rate
(τ_a = τ·F_pair / 2·N_active) and a decoding sequence's KV read at the memory bandwidth
(max(H, L·kv_bytes / bandwidth)); T0 is added to every TTFT. The fit predicts every benchmark row by
running that iteration model through the project's physical engine
(:func:`fleetopt.core.engines.run_iteration_engine`, vLLM V1's scheduler: one token budget of
``prefill_chunk_tokens`` per iteration, the first token with the last prompt chunk) under the row's
own protocol:

* ``batch`` — c requests started together, each timed from the start;
* ``closed`` — c requests kept in flight (``vllm bench serve --max-concurrency c``): a request is
  sent when one finishes, and timed from then (the client's wait for a free slot is not in TTFT);
* ``open`` — requests sent at Poisson times at ``request_rate_per_s`` (seeded), optionally capped at
  c in flight, timed from when they are sent (from when they get a slot when capped).

Each row's statistic (mean, median, p90, p99) is taken over the simulated requests as over the
measured ones. Nothing is fitted that the planner does not use: the lock-step of a benchmark's
identical requests, which a mean-field closed form had to absorb in a separate overlap term ζ (and
with it part of τ), is simulated instead.

The fit is bounded nonlinear least squares on relative TPOT and TTFT errors (scipy's
``least_squares``, trust-region reflective, forward differences; the predictions are piecewise
linear in θ, exactly linear while the schedule does not change), from the mean-field closed-form
fit (:func:`design_rows`) as a start, with W and τ bounded below by the weight-streaming and FLOP
floors when they are known. Identifiability: the linearized standard error of each parameter
(relative residuals, their spread floored at :data:`NOISE_FLOOR`) must be at most
:data:`MAX_RELATIVE_SE` of the parameter (or of its reference size); else the rows do not determine
it and no profile is produced. Intervals: 10th and 90th percentiles of a bootstrap over rows of the
linearized problem at the fit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fleetopt.errors import ValidationError

#: The parameters, in the order of θ.
PARAMETERS = (
    "iteration_base_s",
    "iteration_per_slot_s",
    "prefill_per_token_s",
    "iteration_per_kv_token_s",
    "ttft_overhead_s",
)
_W, _H, _TAU, _KV, _T0 = range(5)
#: Short names for messages.
SYMBOLS = ("W (iteration_base)", "H (iteration_per_slot)", "τ (prefill_per_token)",
           "κ (iteration_per_kv_token)", "T0 (ttft_overhead)")  # fmt: skip
#: What rows determine each parameter (said when the data do not).
DETERMINING_ROWS = (
    "rows at two or more concurrencies with the same lengths (e.g. 1 and 32)",
    "rows at two or more concurrencies with the same lengths (e.g. 1 and 32)",
    "rows at concurrency 1 with two or more input lengths (e.g. 256 and 8,192 tokens)",
    "rows with long inputs (32K tokens or more) at two or more concurrencies",
    "rows at concurrency 1 with a short input (an idle engine's TTFT)",
)
PROTOCOLS = ("closed", "batch", "open")
STATISTICS = ("mean", "median", "p90", "p95", "p99")
#: Requests simulated per concurrency slot of a closed-loop row whose run length is not known, and
#: the most simulated for any row (the mean of a longer run changes by less than its noise).
CLOSED_LOOP_REQUESTS_PER_SLOT = 8
MAX_SIMULATED_REQUESTS = 2048
#: Requests of an open-loop row whose run length is not known.
OPEN_LOOP_REQUESTS = 500
#: The spread of relative errors a benchmark row carries at the least (run-to-run noise) when
#: judging identifiability, and the largest standard error, as a share of a parameter, that still
#: determines it.
NOISE_FLOOR = 0.02
MAX_RELATIVE_SE = 0.25
#: Bootstrap resamples for the intervals, and the percentiles reported.
BOOTSTRAP_RESAMPLES = 200
INTERVAL_PERCENTILES = (10.0, 90.0)


@dataclass(frozen=True)
class Benchmark:
    """Measured results, one entry per row (arrays of one length; seconds and tokens).

    ``protocol``: per row one of :data:`PROTOCOLS` (default ``closed``); ``request_rate_per_s``: the
    open-loop rate (NaN otherwise); ``requests``: requests in the run (NaN: not known);
    ``statistic``: per row one of :data:`STATISTICS` (default ``mean``). ``concurrency`` of an open
    row is its cap on requests in flight (inf: none)."""

    concurrency: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    ttft_s: np.ndarray
    tpot_s: np.ndarray
    protocol: tuple[str, ...] | None = None
    request_rate_per_s: np.ndarray | None = None
    requests: np.ndarray | None = None
    statistic: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        n = self.concurrency.size
        for name, default in (
            ("protocol", ("closed",) * n), ("request_rate_per_s", np.full(n, np.nan)),
            ("requests", np.full(n, np.nan)), ("statistic", ("mean",) * n),
        ):  # fmt: skip
            if getattr(self, name) is None:
                object.__setattr__(self, name, default)
        sizes = {
            len(a)
            for a in (self.concurrency, self.input_tokens, self.output_tokens, self.ttft_s, self.tpot_s,
                      self.protocol, self.request_rate_per_s, self.requests, self.statistic)
        }  # fmt: skip
        if len(sizes) != 1:
            raise ValueError("benchmark columns must have one length")

    @property
    def rows(self) -> int:
        return int(self.concurrency.size)


@dataclass(frozen=True)
class EngineTerms:
    """What the fit does not fit: the engine's scheduler and the hardware's floors (0: unknown).

    ``attention_per_tau``: τ_a / τ = F_pair / (2·N_active) (:func:`fleetopt.core.simulate.
    attention_s_per_token_pair`); ``kv_read_s_per_token``: KV bytes per token / bandwidth;
    ``base_floor_s``, ``tau_floor_s``: the lower bounds of W and τ."""

    prefill_chunk_tokens: int
    attention_per_tau: float = 0.0
    kv_read_s_per_token: float = 0.0
    base_floor_s: float = 0.0
    tau_floor_s: float = 0.0
    max_num_seqs: int = 1024


@dataclass(frozen=True)
class Fit:
    """A fitted calibration and how well it reproduces the rows it was fitted on.

    ``*_pct_errors``: (predicted − measured)/measured × 100 per row; ``standard_errors_s``: the
    linearized standard error of each parameter (0 for one not fitted); ``intervals_s``: per
    parameter its (10th, 90th) percentile over a bootstrap of rows."""

    iteration_base_s: float
    iteration_per_slot_s: float
    prefill_per_token_s: float
    iteration_per_kv_token_s: float
    ttft_overhead_s: float
    prefill_chunk_tokens: int
    rows: int
    tpot_pct_errors: np.ndarray
    ttft_pct_errors: np.ndarray
    fitted: tuple[str, ...] = PARAMETERS
    standard_errors_s: np.ndarray = field(default_factory=lambda: np.zeros(len(PARAMETERS)))
    intervals_s: np.ndarray = field(default_factory=lambda: np.zeros((len(PARAMETERS), 2)))
    jacobian: np.ndarray | None = None  # relative residuals by fitted parameter, at the fit

    @property
    def parameters(self) -> np.ndarray:
        """θ in the order of :data:`PARAMETERS`."""
        return np.array([getattr(self, name) for name in PARAMETERS])


# -- the mean-field closed form (production windows; the fit's starting point) -----------------


def design_rows(
    concurrency: np.ndarray, input_tokens: np.ndarray, output_tokens: np.ndarray, prefill_chunk_tokens: int
) -> tuple[np.ndarray, np.ndarray]:
    """(TPOT rows, TTFT rows) of the mean-field closed loop: prediction = rows @ θ.

    At concurrency c every iteration carries c sequences, each adding its residence-averaged cost
    c₁ = (H·osl + τ·isl + κ·k̄)/I (I = P + osl, P = ⌈isl/chunk⌉, k̄ = P·isl/2 + osl·isl +
    osl(osl + 1)/2), so TPOT ≈ W + c·c₁ and TTFT ≈ T0 + (P + 1)·(W + (c − 1)·c₁) + τ·isl + κ·P·isl/2.
    It ignores that a benchmark's identical requests run in step (which the engine simulates); the
    production check (:mod:`fleetopt.core.live_calibrate`), whose arrivals are not in step, uses it."""
    c = np.asarray(concurrency, dtype=np.float64)
    isl = np.asarray(input_tokens, dtype=np.float64)
    osl = np.asarray(output_tokens, dtype=np.float64)
    zero, one = np.zeros_like(c), np.ones_like(c)
    prefill = np.ceil(isl / prefill_chunk_tokens)
    iterations = prefill + osl
    kv_sum = prefill * isl / 2.0 + osl * isl + osl * (osl + 1.0) / 2.0
    per_sequence = np.stack((zero, osl, isl, kv_sum, zero), axis=1) / iterations[:, None]
    base = np.stack((one, zero, zero, zero, zero), axis=1)
    tpot = base + c[:, None] * per_sequence
    own = np.stack((zero, zero, isl, prefill * isl / 2.0, one), axis=1)
    ttft = (prefill + 1.0)[:, None] * (base + (c - 1.0)[:, None] * per_sequence) + own
    return tpot, ttft


def predict(
    fit_parameters: np.ndarray, benchmark: Benchmark, prefill_chunk_tokens: int
) -> tuple[np.ndarray, np.ndarray]:
    """(TPOT, TTFT) of the mean-field closed form per row, seconds (:func:`design_rows`)."""
    tpot_rows, ttft_rows = design_rows(
        benchmark.concurrency, benchmark.input_tokens, benchmark.output_tokens, prefill_chunk_tokens
    )
    theta = np.asarray(fit_parameters, dtype=np.float64)
    return tpot_rows @ theta, ttft_rows @ theta


def pct_errors(predicted: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """(predicted − measured)/measured × 100."""
    return (predicted / measured - 1.0) * 100.0


# -- the engine under each protocol ---------------------------------------------------------------


def _statistic(values: np.ndarray, statistic: str) -> float:
    if statistic == "mean":
        return float(np.mean(values))
    if statistic == "median":
        return float(np.median(values))
    return float(np.percentile(values, float(statistic[1:])))


def _row_arrivals(benchmark: Benchmark, k: int, residence_s: float) -> tuple[np.ndarray, int, bool, int]:
    """(send times, slots, timed from the slot, requests before the ones measured) of row ``k``'s
    simulated run; ``residence_s``: a request's time in the engine when c start together.

    A closed loop is taken in its steady state: its c first requests are sent one c-th of
    ``residence_s`` apart, each later one when a slot frees, and the c first are not measured.
    Requests of a real closed loop do not stay in step (client and server jitter spread them), and
    once spread an engine keeps them so; a ``batch`` is in step."""
    c = float(benchmark.concurrency[k])
    protocol = benchmark.protocol[k]
    known = benchmark.requests[k]
    if protocol == "batch":
        return np.zeros(int(c)), int(c), True, 0
    if protocol == "closed":
        slots = int(c)
        n = int(known) if np.isfinite(known) else CLOSED_LOOP_REQUESTS_PER_SLOT * slots
        n = max(2 * slots, min(n, MAX_SIMULATED_REQUESTS))
        arrivals = np.full(n, (slots - 1) * residence_s / slots)
        arrivals[:slots] = np.arange(slots) * residence_s / slots
        return arrivals, slots, True, slots
    n = int(min(known if np.isfinite(known) else OPEN_LOOP_REQUESTS, MAX_SIMULATED_REQUESTS))
    gaps = np.random.default_rng(k).exponential(1.0 / float(benchmark.request_rate_per_s[k]), n)
    capped = np.isfinite(c)
    return np.cumsum(gaps) - gaps[0], int(c) if capped else 0, bool(capped), 0


def simulate_rows(
    theta: np.ndarray, benchmark: Benchmark, terms: EngineTerms
) -> tuple[np.ndarray, np.ndarray]:
    """(TPOT, TTFT) of every row predicted by the physical engine under its protocol, seconds."""
    from fleetopt.core.engines import IterationSettings, run_iteration_engine

    w, h, tau, kappa, t0 = (float(v) for v in theta)
    settings = IterationSettings(
        token_budget=terms.prefill_chunk_tokens, prefill_cap_tokens=None, kv_blocks=None, kv_block_tokens=16,
        first_token_offset=0, attention_s_per_token_pair=tau * terms.attention_per_tau,
        prefill_kv_read_s_per_token=terms.kv_read_s_per_token,
    )  # fmt: skip
    tpot, ttft = np.empty(benchmark.rows), np.empty(benchmark.rows)
    for k in range(benchmark.rows):
        isl = max(1, int(round(float(benchmark.input_tokens[k]))))
        osl = max(2, int(round(float(benchmark.output_tokens[k]))))
        total = isl + osl
        extra = max(0.0, terms.kv_read_s_per_token * total - h) + kappa * total

        def run(
            arrivals: np.ndarray, slots: int, isl: int = isl, osl: int = osl, extra: float = extra
        ) -> Any:
            n = arrivals.size
            return run_iteration_engine(
                arrivals, np.full(n, isl), np.full(n, osl), np.full(n, extra), np.zeros(n),
                instances=1, slots=slots or terms.max_num_seqs, base_s=w, per_decode_s=h,
                per_prefill_token_s=tau, settings=settings, dispatch="pooled",
            )  # fmt: skip

        residence_s = 0.0
        if benchmark.protocol[k] == "closed":  # the steady state's spacing: from c started together
            c = int(benchmark.concurrency[k])
            residence_s = float(np.mean(run(np.zeros(c), c).departure_s))
        arrivals, slots, from_slot, warmup = _row_arrivals(benchmark, k, residence_s)
        result = run(arrivals, slots)
        sent = (result.slot_start_s if from_slot else arrivals)[warmup:]
        first, last = result.first_token_s[warmup:], result.departure_s[warmup:]
        statistic = benchmark.statistic[k]
        ttft[k] = _statistic(first - sent, statistic) + t0
        tpot[k] = _statistic((last - first) / (osl - 1), statistic)
    return tpot, ttft


# -- the fit --------------------------------------------------------------------------------------


def _check_rows(benchmark: Benchmark, min_concurrencies: int) -> None:
    if benchmark.rows == 0:
        raise ValidationError("calibration: no usable rows")
    if not (np.all(benchmark.tpot_s > 0) and np.all(benchmark.ttft_s > 0)):
        raise ValidationError("calibration: every measured TTFT and TPOT must be > 0")
    levels = {
        (
            benchmark.protocol[k],
            float(benchmark.concurrency[k]),
            float(np.nan_to_num(benchmark.request_rate_per_s[k])),
        )
        for k in range(benchmark.rows)
    }
    if len(levels) < min_concurrencies:
        raise ValidationError(
            f"calibration: {len(levels)} distinct concurrency value(s); at least {min_concurrencies} are "
            "needed to separate the per-iteration cost W from the per-sequence cost H"
        )


def _residuals(theta: np.ndarray, benchmark: Benchmark, terms: EngineTerms, ttft_weight: float) -> np.ndarray:
    tpot, ttft = simulate_rows(theta, benchmark, terms)
    return np.concatenate((tpot / benchmark.tpot_s - 1.0, ttft_weight * (ttft / benchmark.ttft_s - 1.0)))


def _lower_bounds(terms: EngineTerms) -> np.ndarray:
    lower = np.zeros(len(PARAMETERS))
    lower[_W], lower[_TAU] = terms.base_floor_s, terms.tau_floor_s
    return lower


def _start(benchmark: Benchmark, terms: EngineTerms, used: list[int], lower: np.ndarray) -> np.ndarray:
    """The mean-field fit (θ ≥ the floors), the least-squares start."""
    from scipy.optimize import lsq_linear

    # an open row's requests in flight by Little's law: rate × (TTFT + (osl − 1)·TPOT)
    in_flight = benchmark.request_rate_per_s * (
        benchmark.ttft_s + (benchmark.output_tokens - 1.0) * benchmark.tpot_s
    )
    open_rows = np.asarray(benchmark.protocol) == "open"
    c_rows = np.where(open_rows, np.minimum(np.maximum(in_flight, 1.0), benchmark.concurrency),
                      benchmark.concurrency)  # fmt: skip
    tpot_rows, ttft_rows = design_rows(
        c_rows, benchmark.input_tokens, benchmark.output_tokens, terms.prefill_chunk_tokens
    )
    matrix = np.concatenate(
        (tpot_rows[:, used] / benchmark.tpot_s[:, None], ttft_rows[:, used] / benchmark.ttft_s[:, None])
    )
    target = np.ones(matrix.shape[0])
    solution = lsq_linear(matrix, target, bounds=(lower[used], np.inf), method="bvls").x
    theta = lower.copy()
    theta[used] = solution
    # a start strictly positive in every fitted term (finite differences need a scale)
    scale = np.array([np.median(benchmark.tpot_s) / 2, np.median(benchmark.tpot_s) / 200, 1e-5, 1e-9,
                      np.min(benchmark.ttft_s) / 10])  # fmt: skip
    theta[used] = np.maximum(theta[used], np.maximum(lower[used], 0.01 * scale[used]))
    # H above every row's KV-read floor, where its derivative is not 0 (max(H, κ_read·L))
    longest = float(np.max(benchmark.input_tokens + benchmark.output_tokens))
    theta[_H] = max(theta[_H], 1.5 * terms.kv_read_s_per_token * longest)
    return theta


def fit_iteration_model(
    benchmark: Benchmark,
    terms: EngineTerms | int,
    *,
    ttft_weight: float = 1.0,
    kv_term: bool = False,
    min_concurrencies: int = 2,
    require_identified: bool = True,
    intervals: bool = True,
) -> Fit:
    """θ ≥ the floors minimizing the relative TPOT and TTFT errors of the engine's predictions
    (module docstring); κ only with ``kv_term``.

    Raises ValidationError when the rows cannot identify the parameters: fewer than
    ``min_concurrencies`` load levels, non-positive measurements, or (``require_identified``) a
    parameter whose standard error exceeds :data:`MAX_RELATIVE_SE` of it (naming the parameter and
    the rows that would determine it)."""
    from scipy.optimize import least_squares

    if isinstance(terms, int):
        terms = EngineTerms(terms)
    _check_rows(benchmark, min_concurrencies)
    used = [k for k in range(len(PARAMETERS)) if kv_term or k != _KV]
    lower = _lower_bounds(terms)
    start = _start(benchmark, terms, used, lower)
    scale = np.maximum(start[used], 1e-12)

    def residuals(x: np.ndarray) -> np.ndarray:
        theta = lower.copy()
        theta[used] = x * scale
        return _residuals(theta, benchmark, terms, ttft_weight)

    result = least_squares(
        residuals, start[used] / scale, bounds=(lower[used] / scale, np.inf), method="trf",
        diff_step=1e-4 if set(benchmark.protocol) == {"batch"} else 1e-2, x_scale=1.0,
        xtol=1e-10, ftol=1e-10, gtol=1e-10, max_nfev=200,
    )  # fmt: skip
    theta = lower.copy()
    theta[used] = result.x * scale
    jacobian = np.zeros((result.fun.size, len(PARAMETERS)))
    for k in used:  # forward differences at the fit, each a thousandth of the parameter's size
        step = 1e-3 * max(theta[k], scale[used.index(k)])
        moved = theta.copy()
        moved[k] += step
        jacobian[:, k] = (_residuals(moved, benchmark, terms, ttft_weight) - result.fun) / step
    tpot, ttft = simulate_rows(theta, benchmark, terms)
    standard_errors = _standard_errors(jacobian, result.fun, used)
    if require_identified:
        _require_identified(theta, standard_errors, used, lower, benchmark)
    bounds = (
        _bootstrap_intervals(theta, jacobian, result.fun, used, lower, benchmark.rows)
        if intervals
        else np.repeat(theta[:, None], 2, axis=1)
    )
    return Fit(
        *(float(v) for v in theta), int(terms.prefill_chunk_tokens), benchmark.rows,
        pct_errors(tpot, benchmark.tpot_s), pct_errors(ttft, benchmark.ttft_s),
        tuple(PARAMETERS[k] for k in used), standard_errors, bounds, jacobian,
    )  # fmt: skip


def _standard_errors(jacobian: np.ndarray, residuals: np.ndarray, used: list[int]) -> np.ndarray:
    """Linearized standard errors, σ²(JᵀJ)⁻¹ with σ the residuals' spread floored at NOISE_FLOOR
    (inf along a direction the rows do not constrain)."""
    j = jacobian[:, used]
    dof = max(1, residuals.size - len(used))
    sigma = max(float(np.sqrt(residuals @ residuals / dof)), NOISE_FLOOR)
    norms = np.linalg.norm(j, axis=0)
    out = np.zeros(len(PARAMETERS))
    if np.any(norms == 0):
        out[[u for u, n in zip(used, norms, strict=True) if n == 0]] = np.inf
        norms = np.where(norms == 0, 1.0, norms)
    _, singular, vt = np.linalg.svd(j / norms, full_matrices=False)
    with np.errstate(divide="ignore"):
        inverse = np.where(singular > 1e-10 * singular[0], 1.0 / singular, np.inf)
    variance = (vt.T**2) @ (inverse**2)
    se = sigma * np.sqrt(np.where(np.isnan(variance), np.inf, variance)) / norms
    out[used] = np.where(out[used] == np.inf, np.inf, se)
    return out


def _require_identified(
    theta: np.ndarray, standard_errors: np.ndarray, used: list[int], lower: np.ndarray, benchmark: Benchmark
) -> None:
    reference = np.maximum(theta, lower)
    # T0 may well be 0: determined when known to a twentieth of the fastest TTFT measured
    reference[_T0] = max(theta[_T0], 0.2 * float(np.min(benchmark.ttft_s)))
    reference[_H] = max(theta[_H], 0.01 * theta[_W])
    for k in used:
        if not standard_errors[k] <= MAX_RELATIVE_SE * reference[k]:
            raise ValidationError(
                f"calibration: the rows do not determine {SYMBOLS[k]} (standard error "
                f"{_seconds(standard_errors[k])} on {_seconds(theta[k])}): add {DETERMINING_ROWS[k]}"
            )


def _seconds(value: float) -> str:
    if not np.isfinite(value):
        return "unbounded"
    for unit, factor in (("ms", 1e3), ("µs", 1e6), ("ns", 1e9)):
        if abs(value) * factor >= 1 or unit == "ns":
            return f"{value * factor:.3g} {unit}"
    return f"{value:g} s"


def _bootstrap_intervals(
    theta: np.ndarray,
    jacobian: np.ndarray,
    residuals: np.ndarray,
    used: list[int],
    lower: np.ndarray,
    rows: int,
) -> np.ndarray:
    """(10th, 90th) percentile of each parameter over bootstrap resamples of rows, each the bounded
    linear least squares of the problem linearized at the fit (seeded; a row's TPOT and TTFT go
    together)."""
    from scipy.optimize import lsq_linear

    rng = np.random.default_rng(0)
    j = jacobian[:, used]
    bounds = (lower[used] - theta[used], np.inf)
    # the step of all rows (0 at an exact optimum; not quite 0 where the engine's schedule jumps)
    centre = lsq_linear(j, -residuals, bounds=bounds, method="bvls").x
    samples = np.repeat(theta[None, :], BOOTSTRAP_RESAMPLES, axis=0)
    for b in range(BOOTSTRAP_RESAMPLES):
        pick = rng.integers(0, rows, rows)
        index = np.concatenate((pick, pick + rows))
        step = lsq_linear(j[index], -residuals[index], bounds=bounds, method="bvls").x
        samples[b, used] = np.maximum(theta[used] + step - centre, lower[used])
    return np.percentile(samples, INTERVAL_PERCENTILES, axis=0).T


def leave_one_out_errors(
    benchmark: Benchmark, terms: EngineTerms | int, fit: Fit | None = None, **fit_options: object
) -> tuple[np.ndarray, np.ndarray] | None:
    """(TPOT, TTFT) % errors of each row predicted by a fit of the other rows (rows the fit did not
    see), or None when dropping a row leaves too few load levels to fit. Each refit is one bounded
    Gauss–Newton step from ``fit`` (the fit of all rows) on the other rows; the held-out row is then
    predicted by the engine."""
    from scipy.optimize import lsq_linear

    if isinstance(terms, int):
        terms = EngineTerms(terms)
    fit = fit or fit_iteration_model(
        benchmark, terms, intervals=False, require_identified=False, **fit_options
    )
    used = [PARAMETERS.index(name) for name in fit.fitted]
    theta, lower = fit.parameters, _lower_bounds(terms)
    residuals = np.concatenate((fit.tpot_pct_errors, fit.ttft_pct_errors)) / 100.0
    tpot_errors, ttft_errors = [], []
    for k in range(benchmark.rows):
        keep = np.arange(benchmark.rows) != k
        try:
            _check_rows(subset(benchmark, keep), int(fit_options.get("min_concurrencies", 2)))
        except ValidationError:
            return None
        index = np.concatenate((np.flatnonzero(keep), np.flatnonzero(keep) + benchmark.rows))
        step = lsq_linear(
            fit.jacobian[index][:, used], -residuals[index], bounds=(lower[used] - theta[used], np.inf),
            method="bvls",
        ).x  # fmt: skip
        refit = theta.copy()
        refit[used] += step
        tpot, ttft = simulate_rows(refit, subset(benchmark, ~keep), terms)
        tpot_errors.append(float(pct_errors(tpot, benchmark.tpot_s[~keep])[0]))
        ttft_errors.append(float(pct_errors(ttft, benchmark.ttft_s[~keep])[0]))
    return np.array(tpot_errors), np.array(ttft_errors)


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
    keep = np.asarray(keep, dtype=bool)
    return Benchmark(
        benchmark.concurrency[keep], benchmark.input_tokens[keep], benchmark.output_tokens[keep],
        benchmark.ttft_s[keep], benchmark.tpot_s[keep],
        tuple(np.asarray(benchmark.protocol)[keep]), benchmark.request_rate_per_s[keep],
        benchmark.requests[keep], tuple(np.asarray(benchmark.statistic)[keep]),
    )  # fmt: skip
