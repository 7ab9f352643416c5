"""The one integer search of fleetopt: bracket by doubling, then bisect, for a monotone test.

Sizing asks "the fewest instances whose P99 wait fits" (the wait is non-increasing in the
number of servers) and "the most slots whose prefill still fits" (non-increasing the other
way); both are the smallest n at which a monotone test starts to pass.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeVar

Value = TypeVar("Value")

#: Doublings before the bracket gives up (2⁶⁴ × the start is far past any fleet).
MAX_DOUBLINGS = 64


def smallest_passing(
    evaluate: Callable[[int], tuple[bool, Value]], failing: int, passing: int | None = None
) -> tuple[int, Value | None]:
    """The smallest n > ``failing`` whose test passes, and the value the test computed there.

    ``evaluate(n)`` returns (passes, value) and must be monotone in n (fails up to some n*,
    passes from n* on); it is known to fail at ``failing`` (≥ 1). Without ``passing`` (a known
    pass above ``failing``) the bracket doubles ``failing`` until a pass, then bisects. The value
    is None when ``passing`` was given and the answer is that same n (never evaluated).
    """
    value: Value | None = None
    lo = failing
    if passing is None:
        hi = failing * 2
        for _ in range(MAX_DOUBLINGS):
            passed, value = evaluate(hi)
            if passed:
                break
            lo, hi = hi, hi * 2
    else:
        hi = passing
    while hi - lo > 1:
        mid = (lo + hi) // 2
        passed, mid_value = evaluate(mid)
        if passed:
            hi, value = mid, mid_value
        else:
            lo = mid
    return hi, value


def smallest_passing_from(
    evaluate: Callable[[int], tuple[bool, float | None]], start: int, hint: int | None = None
) -> int:
    """The smallest n ≥ ``start`` whose monotone test passes.

    ``evaluate(n)`` returns (passes, margin): the margin, when it is a finite float, is a smooth
    measure of n's distance from the threshold that grows with n (< 0 failing, ≥ 0 passing); None
    or a non-finite value when there is none. Margins and the hint only place the next evaluation:
    the answer is where the bracket (the largest n known to fail, the smallest known to pass)
    closes, so it does not depend on them.

    With a ``hint`` above ``start`` (a similar pool's answer) the search starts there: n passes
    and n − 1 fails is two evaluations. Otherwise it starts at ``start``. Each next n lies strictly
    inside the bracket: the secant's estimate of the threshold from the last two margins, moved at
    least ``stride`` away from the last n (but a stride alone never past the bracket's midpoint),
    where ``stride`` is 1 and doubles from the third step in a row that finds no pass or leaves
    the bracket more than half its width (a gallop: at most a few times log₂ of the distance from
    the first n to the answer; a good estimate closes it in two or three). Once a pass is known,
    two steps in a row that leave more than half the bracket are followed by a bisection, so
    margins far from linear (a step across the threshold) cost at most three evaluations per
    halving.
    """
    failing = start - 1  # the answer is ≥ start: start − 1 counts as failing (never evaluated)
    passing: int | None = None
    n = hint if hint is not None and hint > start else start
    points: list[tuple[int, float]] = []  # the last two evaluated (n, finite margin)
    stride, slow = 1, 0
    while True:
        passed, margin = evaluate(n)
        before = None if passing is None else passing - failing
        if passed:
            passing = n
        else:
            failing = n
        if passing is not None and passing - failing <= 1:
            return passing
        points = [*points[-1:], (n, margin)] if margin is not None and math.isfinite(margin) else []
        if passing is not None and (before is None or 2 * (passing - failing) <= before):
            slow, stride = 0, 1  # the first pass, or the bracket halved
        else:
            slow += 1  # still no pass, or the bracket did not halve
            if slow >= 3:
                stride *= 2
        lower = failing + 1
        upper = passing - 1 if passing is not None else max(2 * failing, lower)
        # the secant's estimate (ignored outside the bracket), at least a stride away from the last n
        # towards the answer; a stride alone never goes past the bracket's midpoint
        guess = _secant_guess(points)
        if guess is not None:
            guess = min(max(guess, lower), upper)
        if guess is None and passing is not None:  # no estimate: one fewer after the first pass, else bisect
            guess = n - 1 if before is None else (failing + passing) // 2
        elif passed:
            step = max(n - stride, (failing + n) // 2)
            guess = step if guess is None else min(guess, step)
        else:
            step = n + stride if passing is None else min(n + stride, (failing + passing) // 2)
            guess = step if guess is None else max(guess, step)
        if passing is not None and slow >= 2:  # two steps that did not halve the bracket: bisect
            guess = (failing + passing) // 2
        n = min(max(guess, lower), upper)


def _secant_guess(points: list[tuple[int, float]]) -> int | None:
    """The smallest integer at or above the secant's zero through two (n, margin), or None."""
    if len(points) < 2:
        return None
    (n0, m0), (n1, m1) = points
    if n0 == n1 or m0 == m1:
        return None
    zero = n1 - m1 * (n1 - n0) / (m1 - m0)
    if not math.isfinite(zero) or abs(zero) > 2.0**62:
        return None
    return math.ceil(zero)
