"""The TTFT law at many prefill levels: the numpy form over levels and lags (used above
``PLAIN_FLOAT_MAX_LEVEL``) against the plain-float loops (used at or below it), and against the
implementation the numpy form replaced, copied below verbatim as the reference (fleetopt 54318f4,
fleetopt/core/ttft.py: ``cluster_moments``, ``_background_marks`` and the per-level loop of
``ttft_cumulants`` with its law by level, the memo and the dataclass plumbing taken out)."""

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

# ---- the reference: the previous implementation, copied (do not "fix" it: it is the yardstick) ----


def _ref_conditional_raw(a1, b1, a2, b2, a3, b3, y1, y2, y3):
    m1 = a1 + b1 * y1
    sq = a1 * a1 + 2 * a1 * b1 * y1 + b1 * b1 * y2
    cu = a1**3 + 3 * a1 * a1 * b1 * y1 + 3 * a1 * b1 * b1 * y2 + b1**3 * y3
    cross = a1 * a2 + (a1 * b2 + a2 * b1) * y1 + b1 * b2 * y2
    return m1, (a2 + b2 * y1) + sq, (a3 + b3 * y1) + 3 * cross + cu


def _ref_rows(levels):
    return tuple(
        zip(
            levels.levels,
            levels.weights,
            levels.last_chunk_1,
            levels.last_chunk_2,
            levels.last_chunk_3,
            strict=True,
        )
    )


def _ref_cluster_moments(levels, tau_s, time_rate_per_s, depth):
    lam = time_rate_per_s
    tc = tau_s * levels.chunk_tokens
    rows = _ref_rows(levels)
    q = [(0.0, 0.0, 0.0)]
    pre = [(0.0, 0.0, 0.0)]  # pre[x] = Σ_{i<x} Q_i
    for r in range(1, depth + 1):
        last = pre[-1]
        pre.append((last[0] + q[r - 1][0], last[1] + q[r - 1][1], last[2] + q[r - 1][2]))
        t1 = t2 = t3 = 0.0
        for k, w, y1, y2, y3 in rows:
            if k == 0:
                continue
            full = min(r, k - 1)
            hi, lo = pre[r], pre[r - full]
            a1 = tc * (full + lam * (hi[0] - lo[0]))
            a2 = tc * lam * (hi[1] - lo[1])
            a3 = tc * lam * (hi[2] - lo[2])
            if k <= r:
                qm = q[r - k]
                b1, b2, b3 = tau_s * (1.0 + lam * qm[0]), tau_s * lam * qm[1], tau_s * lam * qm[2]
            else:
                b1 = b2 = b3 = 0.0
            m1, m2, m3 = _ref_conditional_raw(a1, b1, a2, b2, a3, b3, y1, y2, y3)
            t1 += w * m1
            t2 += w * m2
            t3 += w * m3
        q.append((t1, t2, t3))
    return q


def _ref_background_marks(levels, tau_s, lam_time, q):
    tc = tau_s * levels.chunk_tokens
    out = {}
    for p in levels.levels:
        t1 = t2 = t3 = 0.0
        for j in range(1, levels.max_level):
            for k, w, y1, y2, y3 in _ref_rows(levels):
                if k <= j:  # no chunk j: its prefill ended before the window
                    continue
                a1 = a2 = a3 = b1 = b2 = b3 = 0.0
                for i in range(1, p + 2):
                    m = j + i - 1
                    if m >= k:
                        break
                    qm = q[p + 1 - i]
                    if m < k - 1:
                        a1 += tc * (1.0 + lam_time * qm[0])
                        a2 += tc * lam_time * qm[1]
                        a3 += tc * lam_time * qm[2]
                    else:
                        b1 += tau_s * (1.0 + lam_time * qm[0])
                        b2 += tau_s * lam_time * qm[1]
                        b3 += tau_s * lam_time * qm[2]
                r1, r2, r3 = _ref_conditional_raw(a1, b1, a2, b2, a3, b3, y1, y2, y3)
                t1 += w * r1
                t2 += w * r2
                t3 += w * r3
        out[p] = (t1, t2, t3)
    return out


def _ref_cumulants(m1, m2, m3):
    return m1, m2 - m1 * m1, m3 - 3 * m1 * m2 + 2 * m1**3


def _ref_raw(k1, k2, k3):
    return k1, k2 + k1 * k1, k3 + 3 * k1 * k2 + k1**3


def _ref_ttft(levels, *, tau_s, decode_iteration_s, rate_per_instance_per_s, time_share):
    """(mean, variance, third cumulant, quiet probability, quiet mean, variance, third, the law by
    level), T0 = 0 and no slot wait, as the previous ttft_cumulants computed them."""
    lam = rate_per_instance_per_s
    u = lam * tau_s * levels.mean_tokens
    t_d = decode_iteration_s
    f = time_share
    lam_time = f * lam
    u_time = f * u
    tbar = t_d / (1.0 - u)
    per_boundary = (1.0 - f) * lam * tbar
    tc = tau_s * levels.chunk_tokens
    s2, s3 = levels.chunk_power_means()
    b_ = tau_s**2 * lam * s2 / (1.0 - u_time * u_time)
    if b_ > 0:
        a_ = (tau_s**3 * lam * s3 + 3.0 * u_time * tau_s**2 * lam_time * s2 * b_) / (1.0 - u_time**3)
        c_ = 1.5 * a_ * a_ / b_
    else:
        a_ = c_ = 0.0
    e_t = b_ + tbar
    e_t2 = a_ + 3.0 * b_ * tbar + tbar * tbar
    e_t3 = c_ + (4.0 * a_ + 3.0 * b_ * b_) * tbar + 6.0 * b_ * tbar * tbar + tbar**3
    var_t = e_t2 - e_t * e_t
    k3_t = e_t3 - 3 * e_t * e_t2 + 2 * e_t**3
    depth = levels.max_level + 1
    q = _ref_cluster_moments(levels, tau_s, lam_time, depth)
    q_sum = [(0.0, 0.0, 0.0)]
    for r in range(1, depth + 1):
        prev = q_sum[-1]
        q_sum.append((prev[0] + q[r][0], prev[1] + q[r][1], prev[2] + q[r][2]))
    background = _ref_background_marks(levels, tau_s, lam_time, q) if levels.max_level >= 2 else None
    q1 = q[1]
    m1 = m2 = m3 = 0.0
    z1 = z2 = z3 = 0.0
    quiet = 0.0
    rows = []
    exp = math.exp if isinstance(tbar, float) else np.exp
    in_progress = lam * tbar * levels.mean_prefill_iterations + u
    for k, w, y1, y2, y3 in _ref_rows(levels):
        p = k
        qp = q[p + 1]
        own_tokens = max(p - 1, 0) * levels.chunk_tokens + y1
        others = in_progress + per_boundary * (p + 1) + lam_time * (e_t + p * tbar + tau_s * own_tokens)
        still = exp(-others)
        quiet_mean = t_d / 2.0 + (p + 1) * t_d + tau_s * own_tokens
        quiet_var = t_d * t_d / 12.0 + tau_s**2 * (y2 - y1 * y1)
        quiet_third = tau_s**3 * (y3 - 3 * y1 * y2 + 2 * y1**3)
        r = _ref_raw(quiet_mean, quiet_var, quiet_third)
        quiet = quiet + w * still
        z1 = z1 + w * still * r[0]
        z2 = z2 + w * still * r[1]
        z3 = z3 + w * still * r[2]
        g = 0.5 + lam_time * qp[0]
        c1 = g * e_t
        c2 = e_t2 / 12.0 + lam_time * qp[1] * e_t + g * g * var_t
        c3 = (
            lam_time * qp[2] * e_t
            + 3.0 * g * ((e_t3 - e_t * e_t2) / 12.0 + lam_time * qp[1] * var_t)
            + g**3 * k3_t
        )
        qs = q_sum[p + 1]
        c1 = c1 + per_boundary * qs[0]
        c2 = c2 + per_boundary * qs[1]
        c3 = c3 + per_boundary * qs[2]
        own = q_sum[p]
        a1 = (p + 1) * t_d + lam_time * t_d * own[0]
        a2 = lam_time * t_d * own[1]
        a3 = lam_time * t_d * own[2]
        b1 = b2 = b3 = 0.0
        if p >= 1:
            a1 = a1 + tc * ((p - 1) + lam_time * (own[0] - q1[0]))
            a2 = a2 + tc * lam_time * (own[1] - q1[1])
            a3 = a3 + tc * lam_time * (own[2] - q1[2])
            b1, b2, b3 = tau_s * (1.0 + lam_time * q1[0]), tau_s * lam_time * q1[1], tau_s * lam_time * q1[2]
        o1, o2, o3 = _ref_conditional_raw(a1, b1, a2, b2, a3, b3, y1, y2, y3)
        c1 = c1 + o1
        c2 = c2 + o2 - o1 * o1
        c3 = c3 + o3 - 3 * o1 * o2 + 2 * o1**3
        if background is not None:
            bg = background[p]
            joint = lam * tc * bg[0]
            cov = joint * (tbar - b_) + lam * tc * tc * bg[0]
            c1 = c1 + lam * tbar * bg[0] + joint
            c2 = c2 + lam * tbar * bg[1] + lam * tc * bg[1] - joint * joint + 2.0 * g * cov
            c3 = c3 + lam * tbar * bg[2]
        rows.append((w, c1, c2, c3, still, quiet_mean, quiet_var, quiet_third))
        r1 = c1
        r2 = c2 + c1 * c1
        r3 = c3 + 3 * c1 * c2 + c1**3
        m1 = m1 + w * r1
        m2 = m2 + w * r2
        m3 = m3 + w * r3
    mean, var, third = _ref_cumulants(m1, m2, m3)
    if isinstance(quiet, float) and quiet == 0.0:
        q_mean = q_var = q_third = 0.0
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            q_mean, q_var, q_third = _ref_cumulants(z1 / quiet, z2 / quiet, z3 / quiet)
    return mean, var, third, quiet, q_mean, q_var, q_third, tuple(rows)


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
    raw = _ref_raw(*old)
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


@settings(max_examples=100, deadline=None)
@given(prompt_tables, st.integers(1, 20), loads, st.booleans())
def test_plain_and_array_forms_agree(table, top, load, sweep) -> None:
    """On random prompt-level tables of 1 to 20 levels both forms of every piece (the clusters Q_r,
    the background marks) agree to 10⁻¹², and so does the whole law, for one t_d and over an array
    of them."""
    seed, count, spread, chunk = table
    levels = _levels_of(_prompts(seed, count, top * chunk, spread), chunk)
    share, f, t_d = load
    tau = 30e-6
    lam = _rate(levels, tau, share)
    depth = levels.max_level + 1
    plain_q = cluster_moments(levels, tau, f * lam, depth)
    array_q = cluster_moments_array(levels, tau, f * lam, depth)
    np.testing.assert_allclose(array_q, np.array(plain_q), rtol=1e-12, atol=0)
    if levels.max_level >= 2:
        plain_bg = ttft._background_marks(levels, tau, f * lam, plain_q)
        array_bg = background_marks_array(levels, tau, f * lam, array_q, np.cumsum(array_q, axis=0))
        expected = np.array([plain_bg[p] for p in levels.levels])
        np.testing.assert_allclose(array_bg, expected, rtol=1e-12, atol=0)
    decode = np.array([t_d, 2 * t_d, 5 * t_d]) if sweep else t_d
    kwargs = dict(
        tau_s=tau, decode_iteration_s=decode, rate_per_instance_per_s=lam, time_share=f, overhead_s=0.015
    )
    plain, array = _law_of(levels, 10**9, **kwargs), _law_of(levels, -1, **kwargs)
    assert isinstance(plain[0], np.ndarray) == isinstance(array[0], np.ndarray) == sweep
    _assert_laws_agree(array, plain, rel=1e-12)


@settings(max_examples=50, deadline=None)
@given(prompt_tables, st.integers(ttft.PLAIN_FLOAT_MAX_LEVEL + 1, 32), loads)
def test_many_levels_against_the_previous_implementation(table, top, load) -> None:
    """Pools of 9 to 32 prefill levels (the numpy form, the default there) against the copied
    previous implementation: the whole law and its quiet part to 10⁻¹⁰."""
    seed, count, spread, chunk = table
    prompts = _prompts(seed, count, top * chunk, spread)
    prompts[0] = top * chunk  # the longest prompt sets the form
    levels = _levels_of(prompts, chunk)
    assert levels.max_level == top
    share, f, t_d = load
    tau = 30e-6
    kwargs = dict(
        tau_s=tau, decode_iteration_s=t_d, rate_per_instance_per_s=_rate(levels, tau, share), time_share=f
    )
    _assert_laws_agree(_law_tuple(ttft_cumulants(levels, **kwargs)), _ref_ttft(levels, **kwargs), rel=1e-10)


@pytest.mark.parametrize("chunk", [1024, pytest.param(512, marks=pytest.mark.slow)])
def test_the_papers_chunk_on_long_prompts_against_the_previous_implementation(chunk) -> None:
    """LMSYS-like prompts to 52,428 tokens in the papers' 512-token chunks (103 levels: a plan took
    minutes before this form) and in 1,024-token ones (52): as above, to 10⁻¹⁰ (the reference takes
    0.3 s and 4 s here: the 512 case is marked slow)."""
    prompts = _prompts(3, 3000, 52_428, "log-uniform")
    prompts[0] = 52_428
    levels = _levels_of(prompts, chunk)
    tau = 30e-6
    for share, f in ((0.3, 1.0), (0.8, 0.2)):
        kwargs = dict(
            tau_s=tau,
            decode_iteration_s=0.01,
            rate_per_instance_per_s=_rate(levels, tau, share),
            time_share=f,
        )
        _assert_laws_agree(
            _law_tuple(ttft_cumulants(levels, **kwargs)), _ref_ttft(levels, **kwargs), rel=1e-10
        )


def test_a_thousand_levels_agree_with_the_plain_recursion_for_the_clusters() -> None:
    """At 1,000 levels (a 52-token chunk on 52K-token prompts) the reference's background marks are
    out of reach (hours), but its cluster recursion is O(levels²): the numpy Q_r match it to 10⁻¹⁰,
    and the whole law is finite, its P99 above the mean."""
    rng = np.random.default_rng(7)
    prompts = np.append(np.exp(rng.uniform(np.log(20), np.log(52_000), 3000)).astype(int), 52_000)
    levels = _levels_of(prompts, 52)
    assert levels.max_level == 1000
    tau, lam = 30e-6, _rate(levels, 30e-6, 0.6)
    q = cluster_moments_array(levels, tau, 0.4 * lam, levels.max_level + 1)
    np.testing.assert_allclose(
        q, np.array(_ref_cluster_moments(levels, tau, 0.4 * lam, 1001)), rtol=1e-10, atol=0
    )
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
