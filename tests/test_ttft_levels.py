"""The TTFT law at many prefill levels. Its two forms — plain-float loops up to
``PLAIN_FLOAT_MAX_LEVEL`` levels, numpy over levels and lags above — share the per-level law
(``_level_law``) and differ in how they get its pieces: the clusters Q_r and the marks of the
prompts still prefilling from before. Both forms of both pieces are checked against their
definitions, worked out here prompt by prompt (not from the levels' sums), and the whole law of one
form against the other's; the whole law itself, in either form, against the ``physical``
simulation and hand derivations is in ``tests/test_ttft.py``."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import fleetopt.core.engine.ttft as ttft
from fleetopt.core.engine.ttft import (
    PromptLevels,
    background_marks_array,
    cluster_moments,
    cluster_moments_array,
    ttft_cumulants,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_ttft import _levels_of  # noqa: E402

# ---- the definitions, prompt by prompt ----


def _raw_of(k1, k2, k3):
    """Raw moments E[X], E[X²], E[X³] from the cumulants κ₁, κ₂, κ₃."""
    return k1, k2 + k1 * k1, k3 + 3 * k1 * k2 + k1**3


def _chunks(prompts: np.ndarray, chunk: int) -> np.ndarray:
    """Every prompt's chunks c_0 … c_{P−1} (P = ⌈L/C⌉: P − 1 of C tokens, then the rest), a row each,
    zero past P."""
    levels = -(-prompts // chunk)
    width = max(int(levels.max()), 1)
    index = np.arange(width)
    chunks = np.where(index < levels[:, None] - 1, float(chunk), 0.0)
    rows = np.flatnonzero(levels >= 1)
    chunks[rows, levels[rows] - 1] = prompts[rows] - (levels[rows] - 1) * chunk
    return chunks


def _mean_raw_moments(x: np.ndarray, later: np.ndarray, lam: float) -> np.ndarray:
    """E over prompts of the raw moments of Σ_m [x_m + G(x_m)], G(x) compound Poisson with intensity
    λ·x and marks of raw moments ``later[m]``: given the prompt, independent terms with cumulants
    κ₁ = Σ x_m·(1 + λ·E[Q_m]), κ_j = Σ x_m·λ·E[Q_m^j] (j = 2, 3). ``x``: prompts × m, seconds."""
    k1 = (x * (1.0 + lam * later[:, 0])).sum(axis=1)
    k2 = (x * lam * later[:, 1]).sum(axis=1)
    k3 = (x * lam * later[:, 2]).sum(axis=1)
    return np.array([m.mean() for m in _raw_of(k1, k2, k3)])


def _clusters_by_definition(
    prompts: np.ndarray, chunk: int, tau: float, lam: float, depth: int
) -> np.ndarray:
    """E[Q_r^j] (rows r = 0 … ``depth``, j = 1, 2, 3) of Q_r = Σ_{m<r} [τc_m + G_{r−1−m}(τc_m)] over
    equally likely ``prompts`` (:func:`fleetopt.core.engine.ttft.cluster_moments`' definition)."""
    chunks = tau * _chunks(prompts, chunk)
    q = np.zeros((depth + 1, 3))
    for r in range(1, depth + 1):
        width = min(r, chunks.shape[1])
        q[r] = _mean_raw_moments(chunks[:, :width], q[r - 1 - np.arange(width)], lam)
    return q


def _background_by_definition(
    prompts: np.ndarray, chunk: int, tau: float, lam: float, q: np.ndarray, own_levels, offset: int
) -> np.ndarray:
    """For each own level p: Σ over lags j ≥ 1 of the raw moments of what a request admitted j
    iterations before the iteration in progress still adds to a window of m = max(p + offset, 1)
    iterations: its chunk j + i − 1 lands in iteration i, whose arrivals have m − i iterations left
    (:func:`fleetopt.core.engine.ttft.background_marks_array`' definition), over equally likely
    ``prompts``. A row per own level."""
    chunks = tau * _chunks(prompts, chunk)
    top = int((-(-prompts // chunk)).max())
    out = []
    for p in own_levels:
        total = np.zeros(3)
        for j in range(1, top):
            m = max(p + offset, 1)
            window = np.arange(1, m + 1)
            landing = j + window - 1
            inside = landing < chunks.shape[1]
            total += _mean_raw_moments(chunks[:, landing[inside]], q[m - window[inside]], lam)
        out.append(total)
    return np.array(out)


def _assert_pieces_are_their_definitions(
    prompts: np.ndarray, chunk: int, tau: float, lam_time: float
) -> None:
    """Both forms of the clusters and (with two levels or more) of the background marks equal their
    definitions to 10⁻¹⁰ (each is a sum of positive terms: no cancellation)."""
    levels = _levels_of(prompts, chunk)
    depth = levels.max_level + 1
    truth = _clusters_by_definition(prompts, chunk, tau, lam_time, depth)
    plain_q = np.array(cluster_moments(levels, tau, lam_time, depth))
    array_q = cluster_moments_array(levels, tau, lam_time, depth)
    np.testing.assert_allclose(plain_q, truth, rtol=1e-10, atol=0)
    np.testing.assert_allclose(array_q, truth, rtol=1e-10, atol=0)
    if levels.max_level >= 2:
        for offset in (0, 1):  # the first token with the last chunk (vLLM V1), or one iteration later
            marks = _background_by_definition(prompts, chunk, tau, lam_time, truth, levels.levels, offset)
            plain_bg = ttft._background_marks(levels, tau, lam_time, list(map(tuple, plain_q)), offset)
            array_bg = background_marks_array(
                levels, tau, lam_time, array_q, np.cumsum(array_q, axis=0), offset
            )
            np.testing.assert_allclose(
                np.array([plain_bg[p] for p in levels.levels]), marks, rtol=1e-10, atol=0
            )
            np.testing.assert_allclose(array_bg, marks, rtol=1e-10, atol=0)


# ---- comparisons ----


def _law_tuple(law) -> tuple:
    return (
        law.base_mean_s, law.base_variance_s2, law.base_third_s3, law.quiet_probability,
        law.quiet_mean_s, law.quiet_variance_s2, law.quiet_third_s3, law.level_parts,
    )  # fmt: skip


def _assert_cumulants_agree(new: tuple, old: tuple, rel: float) -> None:
    """(mean, variance, third cumulant) to ``rel``. A variance or third cumulant is a difference of
    raw moments (E[X²] − E[X]², …), which either implementation knows only to a few ε·E[X^j]
    (ε = 2.2·10⁻¹⁶), so the tolerance of the j-th cumulant is rel·|κ_j| + 10⁻¹⁴·|E[X^j]|. A quiet
    part of probability 0 has no moments (NaN over an array of t_d) in both."""
    old = tuple(np.asarray(x, dtype=float) for x in old)
    raw = _raw_of(*old)
    for j, (a, b) in enumerate(zip(new, old, strict=True)):
        a = np.asarray(a, dtype=float)
        both_nan = np.isnan(a) & np.isnan(b)
        tolerance = rel * np.abs(b) + (1e-14 * np.abs(raw[j]) if j else 0.0)
        assert np.all(both_nan | (np.abs(a - b) <= tolerance)), (j + 1, a, b)


def _assert_laws_agree(new: tuple, old: tuple, rel: float) -> None:
    """The whole law and its quiet part (:func:`_assert_cumulants_agree`), the quiet probability to
    ``rel``, and the same for the law of every own level (its share exactly)."""
    for part in (slice(0, 3), slice(4, 7)):
        _assert_cumulants_agree(new[part], old[part], rel)
    np.testing.assert_allclose(new[3], old[3], rtol=rel, atol=0)
    assert len(new[7]) == len(old[7])
    for new_row, old_row in zip(new[7], old[7], strict=True):
        assert new_row[0] == old_row[0]
        _assert_cumulants_agree(new_row[1:4], old_row[1:4], rel)
        np.testing.assert_allclose(new_row[4], old_row[4], rtol=rel, atol=0)
        _assert_cumulants_agree(new_row[5:8], old_row[5:8], rel)


def _prompts(seed: int, count: int, longest: int, spread: str) -> np.ndarray:
    """``count`` prompt lengths up to ``longest`` tokens: log-uniform (many short, a few long),
    uniform, or a few clusters (gaps between populated levels)."""
    rng = np.random.default_rng(seed)
    if spread == "log-uniform":
        x = np.exp(rng.uniform(0.0, np.log(longest), count))
    elif spread == "uniform":
        x = rng.uniform(0, longest, count)
    else:
        x = rng.choice(rng.uniform(0, longest, 4), count) + rng.normal(0, 50, count)
    return np.clip(x, 0, longest).astype(np.int64)


prompt_tables = st.tuples(
    st.integers(0, 2**32 - 1),
    st.integers(1, 400),
    st.sampled_from(["log-uniform", "uniform", "clusters"]),
    st.sampled_from([64, 256, 512, 1000, 2048]),
)
loads = st.tuples(st.floats(0.01, 0.95), st.floats(0.0, 1.0), st.floats(1e-3, 0.05))


def _rate(levels: PromptLevels, tau: float, share: float) -> float:
    return share / (tau * max(levels.mean_tokens, 1.0))


def _law_of(levels: PromptLevels, plain_max_level: int, **kwargs) -> tuple:
    """The law with the plain form up to ``plain_max_level`` levels (memo cleared)."""
    levels._clusters.clear()
    original = ttft.PLAIN_FLOAT_MAX_LEVEL
    ttft.PLAIN_FLOAT_MAX_LEVEL = plain_max_level
    try:
        return _law_tuple(ttft_cumulants(levels, **kwargs))
    finally:
        ttft.PLAIN_FLOAT_MAX_LEVEL = original


@settings(max_examples=50, deadline=None)
@given(prompt_tables, st.integers(1, 32), loads)
def test_the_pieces_are_their_definitions(table, top, load) -> None:
    """On random prompt tables of 1 to 32 levels (either side of ``PLAIN_FLOAT_MAX_LEVEL``) the
    clusters Q_r and the background marks, in the plain and the numpy form, equal their
    definitions worked out prompt by prompt."""
    seed, count, spread, chunk = table
    prompts = _prompts(seed, count, top * chunk, spread)
    prompts[0] = top * chunk
    share, f, _ = load
    tau = 30e-6
    lam = _rate(_levels_of(prompts, chunk), tau, share)
    _assert_pieces_are_their_definitions(prompts, chunk, tau, f * lam)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(prompt_tables, st.integers(1, 32), loads, st.booleans())
def test_plain_and_array_forms_give_the_same_law(table, top, load, sweep) -> None:
    """The plain and the numpy form of the whole law (the per-level law summed over levels one at a
    time, or as columns) agree to 10⁻¹², for one t_d and over an array of them."""
    seed, count, spread, chunk = table
    levels = _levels_of(_prompts(seed, count, top * chunk, spread), chunk)
    share, f, t_d = load
    tau = 30e-6
    lam = _rate(levels, tau, share)
    decode = np.array([t_d, 2 * t_d, 5 * t_d]) if sweep else t_d
    kwargs = dict(
        tau_s=tau, decode_iteration_s=decode, rate_per_instance_per_s=lam, time_share=f, overhead_s=0.015
    )
    plain, array = _law_of(levels, 10**9, **kwargs), _law_of(levels, -1, **kwargs)
    assert isinstance(plain[0], np.ndarray) == isinstance(array[0], np.ndarray) == sweep
    _assert_laws_agree(array, plain, rel=1e-12)


@pytest.mark.parametrize("chunk", [1024, pytest.param(512, marks=pytest.mark.slow)])
def test_the_papers_chunk_on_long_prompts(chunk) -> None:
    """LMSYS-like prompts to 52,428 tokens in the papers' 512-token chunks (103 levels: a plan took
    minutes before the numpy form) and in 1,024-token ones (52): the pieces are their definitions
    (400 prompts), and the law of the numpy form is finite with its P99 above its mean."""
    prompts = _prompts(3, 400, 52_428, "log-uniform")
    prompts[0] = 52_428
    tau = 30e-6
    levels = _levels_of(prompts, chunk)
    for share, f in ((0.3, 1.0), (0.8, 0.2)):
        lam = _rate(levels, tau, share)
        _assert_pieces_are_their_definitions(prompts, chunk, tau, f * lam)
        law = ttft_cumulants(
            levels, tau_s=tau, decode_iteration_s=0.01, rate_per_instance_per_s=lam, time_share=f
        )
        assert math.isfinite(law.variance_s2) and law.quantile_s(0.99) > law.mean_s > 0


@pytest.mark.slow
def test_a_thousand_levels_agree_with_the_plain_recursion_for_the_clusters() -> None:
    """At 1,000 levels (a 52-token chunk on 52K-token prompts) the plain background marks are out of
    reach (hours), but the plain cluster recursion is O(levels²): the numpy Q_r match it to 10⁻¹⁰,
    and the whole law is finite, its P99 above the mean."""
    rng = np.random.default_rng(7)
    prompts = np.append(np.exp(rng.uniform(np.log(20), np.log(52_000), 3000)).astype(int), 52_000)
    levels = _levels_of(prompts, 52)
    assert levels.max_level == 1000
    tau, lam = 30e-6, _rate(levels, 30e-6, 0.6)
    q = cluster_moments_array(levels, tau, 0.4 * lam, levels.max_level + 1)
    np.testing.assert_allclose(q, np.array(cluster_moments(levels, tau, 0.4 * lam, 1001)), rtol=1e-10, atol=0)
    law = ttft_cumulants(
        levels, tau_s=tau, decode_iteration_s=0.01, rate_per_instance_per_s=lam, time_share=0.4
    )
    assert math.isfinite(law.variance_s2) and law.quantile_s(0.99) > law.mean_s > 0


@settings(max_examples=40, deadline=None)
@given(
    prompt_tables,
    st.integers(ttft.PLAIN_FLOAT_MAX_LEVEL + 1, 60),
    loads,
    st.tuples(st.floats(0.0, 0.6), st.floats(1e-3, 0.3)),
    st.sampled_from([0.9, 0.99, 0.999]),
)
# found by a fresh clone's CI run: the two forms' survival at the quantile 1.6·10⁻⁹ apart (a part
# that is nearly a step there)
@pytest.mark.slow
@example(table=(0, 1, "log-uniform", 2048), top=12, load=(0.5, 0.0, 0.001), wait=(0.0, 0.25), q=0.9)
def test_the_mixture_by_columns_is_the_mixture_by_rows(table, top, load, wait, q) -> None:
    """A law of the numpy form keeps its levels as columns (LevelColumns) and evaluates its mixture
    with numpy over the parts; the same law with the same levels as rows (the plain form's
    representation) evaluates it part by part. Survival functions agree to 10⁻¹⁰ or 10⁻¹⁵ (a part's
    third cumulant is a difference of raw moments, and numpy's x³ and Python's can differ in the
    last bit: twice the quantile out, that moves the tail by up to ~10⁻¹¹ relative, more where the
    tail is below 10⁻³⁰; an SLO test compares it with 1 − q ≥ 10⁻³), quantiles to 10⁻⁹ (each is
    Newton's to 10⁻¹⁰), with and without the slot wait and T0, and the SLO tests over an array of
    t_d agree."""
    from dataclasses import replace

    seed, count, spread, chunk = table
    prompts = _prompts(seed, count, top * chunk, spread)
    prompts[0] = top * chunk
    levels = _levels_of(prompts, chunk)
    share, f, t_d = load
    tau = 30e-6
    kwargs = dict(
        tau_s=tau,
        rate_per_instance_per_s=_rate(levels, tau, share),
        time_share=f,
        overhead_s=0.02,
        slot_wait=wait,
    )
    law = ttft_cumulants(levels, decode_iteration_s=t_d, **kwargs)
    assert isinstance(law.level_parts, ttft.LevelColumns)
    for columns in (law, law.without_wait_and_overhead(0.02)):
        rows = replace(columns, level_parts=tuple(columns.level_parts))
        value = columns.quantile_s(q)
        assert math.isfinite(value)
        assert value == pytest.approx(rows.quantile_s(q), rel=1e-9)
        for x in (value, columns.mean_s, 2 * value):
            # within 10⁻¹⁰ of each other, or of the other form's value a relative 10⁻¹⁰ either side of
            # x: a part of tiny variance (no decode, no company) is nearly a step, where the last bit
            # of its mean moves its survival at x by far more than 10⁻¹⁰
            by_columns = columns.survival_one(x)
            low, high = rows.survival_one(x * (1.0 + 1e-10)), rows.survival_one(x * (1.0 - 1e-10))
            assert low * (1.0 - 1e-10) - 1e-15 <= by_columns <= high * (1.0 + 1e-10) + 1e-15
            assert by_columns == pytest.approx(rows.survival_one(x), rel=1e-6, abs=1e-15)
    sweep = ttft_cumulants(levels, decode_iteration_s=np.array([t_d, 1.5 * t_d, 3 * t_d]), **kwargs)
    assert isinstance(sweep.level_parts, ttft.LevelColumns)
    rows = replace(sweep, level_parts=tuple(sweep.level_parts))
    for level in (0.5 * value, value, 2 * value):
        np.testing.assert_array_equal(sweep.exceeds(level, q), rows.exceeds(level, q))
