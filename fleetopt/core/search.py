"""The one integer search of fleetopt: bracket by doubling, then bisect, for a monotone test.

Sizing asks "the fewest instances whose P99 wait fits" (the wait is non-increasing in the
number of servers) and "the most slots whose prefill still fits" (non-increasing the other
way); both are the smallest n at which a monotone test starts to pass.
"""

from __future__ import annotations

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
    evaluate: Callable[[int], tuple[bool, Value]], start: int, hint: int | None = None
) -> int:
    """The smallest n ≥ ``start`` whose monotone test passes. With a ``hint`` above ``start`` (a
    similar pool's answer) the bracket starts there: n passes and n − 1 fails is two evaluations,
    and ``start`` is then known to fail without evaluating it."""
    if hint is not None and hint > start:
        if evaluate(hint)[0]:
            if not evaluate(hint - 1)[0]:
                return hint
            if evaluate(start)[0]:
                return start
            return smallest_passing(evaluate, failing=start, passing=hint - 1)[0]
        return smallest_passing(evaluate, failing=hint)[0]
    if evaluate(start)[0]:
        return start
    return smallest_passing(evaluate, failing=start)[0]
