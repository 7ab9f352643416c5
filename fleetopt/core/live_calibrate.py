"""Checking (and, where the load varied, refitting) a serving profile against production metrics.

Production metrics give, per window of time and per pool, *exact means* (histogram
``_sum``/``_count``): the prompt and output tokens of the requests that finished, their TPOT, their
TTFT and their time waiting in the queue; and the time-averaged number of running requests per
instance, c. In the mean field of :mod:`fleetopt.core.calibrate` a window is a benchmark row at
concurrency c with requests of the mean lengths:

    TPOT ≈ W + c·c₁,   TTFT − queue ≈ T0 + (P + 1)·(W + (c − 1)·c₁) + τ·isl

(c₁ the residence-averaged per-sequence cost; production arrivals are not in lock-step, so the
mean field holds better here than for a benchmark's identical requests). The check compares the
profile's predictions with the
observed means window by window (:func:`fleetopt.core.calibrate.predict`). The refit is the same
bounded least squares on relative errors as benchmark calibration, over (W, H, τ, T0) only, under
the same identifiability rule: at least two distinct concurrency levels (whole sequences per
instance), else W and H cannot be told apart and nothing is refitted. It is an approximation twice
over — mean lengths for a distribution, a time-average of c — and says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fleetopt.core.calibrate import PARAMETERS, Benchmark, design_rows, pct_errors, predict
from fleetopt.errors import ValidationError

#: The parameters a production refit may move (κ stays as it is).
REFIT_PARAMETERS = ("iteration_base_s", "iteration_per_slot_s", "prefill_per_token_s", "ttft_overhead_s")


@dataclass(frozen=True)
class ProductionCheck:
    """Per window: observed and predicted TPOT and TTFT − queue (seconds), their % errors; the refit
    θ (None when the windows do not identify it) and why not."""

    windows: Benchmark
    predicted_tpot_s: np.ndarray
    predicted_ttft_s: np.ndarray
    tpot_pct_errors: np.ndarray
    ttft_pct_errors: np.ndarray
    concurrency_levels: int
    refit: dict[str, float] | None
    refit_tpot_pct_errors: np.ndarray | None
    refit_ttft_pct_errors: np.ndarray | None
    not_identified: str | None


def check_production(theta: np.ndarray, windows: Benchmark, prefill_chunk_tokens: int) -> ProductionCheck:
    """The profile ``theta`` (:data:`fleetopt.core.calibrate.PARAMETERS`) against the
    windows, and the refit of (W, H, τ, T0) when at least two concurrency levels were observed."""
    if windows.rows == 0:
        raise ValidationError("calibration from metrics: no window with finished requests and a load")
    theta = np.asarray(theta, dtype=np.float64).copy()
    tpot, ttft = predict(theta, windows, prefill_chunk_tokens)
    levels = int(np.unique(np.rint(windows.concurrency)).size)
    refit = refit_tpot = refit_ttft = None
    reason = None
    if levels < 2:
        reason = (
            f"the load took {levels} concurrency level(s) (whole sequences per instance); at least 2 are "
            "needed to separate the per-iteration cost W from the per-sequence cost H"
        )
    else:
        from scipy.optimize import lsq_linear

        tpot_rows, ttft_rows = design_rows(
            windows.concurrency, windows.input_tokens, windows.output_tokens, prefill_chunk_tokens
        )
        used = [PARAMETERS.index(name) for name in REFIT_PARAMETERS]
        kept = [k for k in range(len(PARAMETERS)) if k not in used]
        fixed_tpot, fixed_ttft = tpot_rows[:, kept] @ theta[kept], ttft_rows[:, kept] @ theta[kept]
        matrix = np.concatenate(
            (tpot_rows[:, used] / windows.tpot_s[:, None], ttft_rows[:, used] / windows.ttft_s[:, None])
        )
        target = np.concatenate((1.0 - fixed_tpot / windows.tpot_s, 1.0 - fixed_ttft / windows.ttft_s))
        solution = lsq_linear(matrix, target, bounds=(0.0, np.inf), method="bvls").x
        fitted = theta.copy()
        fitted[used] = solution
        refit = {name: float(fitted[PARAMETERS.index(name)]) for name in REFIT_PARAMETERS}
        new_tpot, new_ttft = predict(fitted, windows, prefill_chunk_tokens)
        refit_tpot, refit_ttft = pct_errors(new_tpot, windows.tpot_s), pct_errors(new_ttft, windows.ttft_s)
    return ProductionCheck(
        windows, tpot, ttft, pct_errors(tpot, windows.tpot_s), pct_errors(ttft, windows.ttft_s), levels,
        refit, refit_tpot, refit_ttft, reason,
    )  # fmt: skip
