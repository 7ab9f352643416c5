"""Two backends for one set of formulas: plain floats for one point, numpy for many.

Every formula that core evaluates both at one point (the sizing loops call it thousands of times,
and a numpy call costs ~1 µs of overhead per operation) and over arrays (a sweep over slot counts
or prefill levels) is written once, over a backend ``xp``: :class:`FLOATS` evaluates one point
with ``math`` functions and Python branches, :class:`ARRAYS` many points with numpy and scipy
ufuncs. So the point path stays what ``math`` gives (``math.exp`` and ``numpy.exp`` differ in the
last bit on a few percent of arguments) and the array path what numpy gives, from one source.

``xp.where`` picks between two already-computed values (both sides must be cheap and safe to
compute), ``xp.piecewise`` between two functions (a float computes only its own side; an array
computes each side on the points that take it).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

#: The modified Lentz algorithm replaces a vanishing numerator or denominator by this.
TINY = 1e-300


_SPECIAL: Any = None


def _special() -> Any:
    """scipy.special, imported on first use (~0.1 s of start-up that kv, profiles, … never need)."""
    global _SPECIAL
    if _SPECIAL is None:
        from scipy import special

        _SPECIAL = special
    return _SPECIAL


class _Silent:
    """A context that does nothing (``math`` raises rather than warns: nothing to silence)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_SILENT = _Silent()


class FLOATS:
    """Math on one point: ``math`` functions, Python branches."""

    @staticmethod
    def quiet() -> _Silent:
        """A context for the formulas' arithmetic (nothing to silence on floats)."""
        return _SILENT

    log = staticmethod(math.log)
    log1p = staticmethod(math.log1p)
    expm1 = staticmethod(math.expm1)
    ceil = staticmethod(math.ceil)
    exp = staticmethod(math.exp)
    sqrt = staticmethod(math.sqrt)
    lgamma = staticmethod(math.lgamma)
    isfinite = staticmethod(math.isfinite)
    abs = staticmethod(abs)

    @staticmethod
    def minimum(x: float, y: float) -> float:
        return y if y < x else x  # min(x, y), without the builtin's iterator (2× faster)

    @staticmethod
    def maximum(x: float, y: float) -> float:
        return y if y > x else x  # max(x, y)

    @staticmethod
    def clip(x: float, lo: float, hi: float) -> float:
        """x limited to [lo, hi] (x itself when inside)."""
        return hi if x > hi else (lo if x < lo else x)

    @staticmethod
    def power(x: float, y: float) -> float:
        return x**y

    @staticmethod
    def gammainc(s: float, x: float) -> float:
        return float(_special().gammainc(s, x))

    @staticmethod
    def gammaincc(s: float, x: float) -> float:
        return float(_special().gammaincc(s, x))

    @staticmethod
    def betainc(a: float, b: float, x: float) -> float:
        return float(_special().betainc(a, b, x))

    @staticmethod
    def ndtri(p: float) -> float:
        return float(_special().ndtri(p))

    @staticmethod
    def log_or_minus_inf(x: float) -> float:
        """ln x, −inf at x = 0 (as numpy's log, without its warning)."""
        return math.log(x) if x > 0 else -math.inf

    @staticmethod
    def not_tiny(x: float) -> float:
        """x, or 1e-300 where |x| < 1e-300 (the guard of the modified Lentz algorithm)."""
        return TINY if abs(x) < TINY else x

    @staticmethod
    def where(condition: bool, if_true: float, if_false: float) -> float:
        return if_true if condition else if_false

    @staticmethod
    def all(condition: bool) -> bool:
        return condition

    @staticmethod
    def any(condition: bool) -> bool:
        return condition

    @staticmethod
    def full_like(like: Any, value: float) -> float:
        """``value`` (one point)."""
        return value

    @staticmethod
    def as_int(x: float) -> int:
        return int(x)

    @staticmethod
    def logical_not(x: bool) -> bool:
        return not x

    @staticmethod
    def largest(x: float) -> float:
        return x

    @staticmethod
    def piecewise(
        condition: bool, if_true: Callable[..., Any], if_false: Callable[..., Any], *args: float
    ) -> Any:
        return (if_true if condition else if_false)(FLOATS, *args)


class ARRAYS:
    """Math on arrays of points: numpy and scipy ufuncs, branches by mask."""

    @staticmethod
    def quiet() -> np.errstate:
        """numpy's warnings off (division by zero, invalid values, overflow) for masked formulas."""
        return np.errstate(divide="ignore", invalid="ignore", over="ignore")

    log = np.log
    log1p = np.log1p
    expm1 = np.expm1
    ceil = np.ceil
    exp = np.exp
    sqrt = np.sqrt
    isfinite = np.isfinite
    power = np.power
    clip = np.clip

    @staticmethod
    def lgamma(x: np.ndarray) -> np.ndarray:
        return _special().gammaln(x)

    abs = np.abs
    minimum = np.minimum
    maximum = np.maximum

    @staticmethod
    def gammainc(s: np.ndarray, x: np.ndarray) -> np.ndarray:
        return _special().gammainc(s, x)

    @staticmethod
    def gammaincc(s: np.ndarray, x: np.ndarray) -> np.ndarray:
        return _special().gammaincc(s, x)

    @staticmethod
    def betainc(a: Any, b: Any, x: Any) -> np.ndarray:
        return _special().betainc(a, b, x)

    @staticmethod
    def ndtri(p: Any) -> np.ndarray:
        return _special().ndtri(p)

    where = np.where
    all = staticmethod(np.all)
    any = staticmethod(np.any)

    @staticmethod
    def full_like(like: Any, value: float) -> np.ndarray:
        """An array of ``value`` shaped as ``like``."""
        return np.full(np.shape(like), value)

    @staticmethod
    def as_int(x: np.ndarray) -> np.ndarray:
        return x.astype(np.int64)

    logical_not = np.logical_not

    @staticmethod
    def log_or_minus_inf(x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(x)

    @staticmethod
    def not_tiny(x: np.ndarray) -> np.ndarray:
        return np.where(np.abs(x) < TINY, TINY, x)

    @staticmethod
    def largest(x: np.ndarray) -> float:
        return float(x.max(initial=0.0))

    @staticmethod
    def piecewise(
        condition: np.ndarray, if_true: Callable[..., Any], if_false: Callable[..., Any], *args: np.ndarray
    ) -> Any:
        """``if_true`` on the points where ``condition`` holds, ``if_false`` on the others; the
        functions take (xp, *args) and return one array or a tuple of arrays. ``args``: arrays of
        the shape of ``condition``, or floats (passed as they are)."""
        out: tuple[np.ndarray, ...] | None = None
        single = True
        for mask, function in ((condition, if_true), (~condition, if_false)):
            if not mask.any():
                continue
            value = function(ARRAYS, *(arg if isinstance(arg, float) else arg[mask] for arg in args))
            single = not isinstance(value, tuple)
            values = (value,) if single else value
            if out is None:
                out = tuple(np.empty(condition.shape) for _ in values)
            for target, part in zip(out, values, strict=True):
                target[mask] = part
        if out is None:  # no points at all
            return if_true(ARRAYS, *args)
        return out[0] if single else out


def backend_of(value: Any) -> type[FLOATS] | type[ARRAYS]:
    """:class:`ARRAYS` for a numpy array, else :class:`FLOATS`."""
    return ARRAYS if isinstance(value, np.ndarray) else FLOATS
