"""One request's way through a gateway: pool-routing Algorithm 1 on the planner's :class:`Routing`.

The pool comes from :meth:`fleetopt.core.routing.Routing.route` itself (one implementation: the
planner sized the pools for exactly this rule), on the request's token budget L = prompt tokens +
``max_tokens``; around it, what a gateway must add:

- a request without ``max_tokens`` may generate up to the context, so it goes to the last pool
  (the router file's ``without_max_tokens: last_pool``);
- a request longer than the last pool's context is rejected (no instance can hold it);
- a request the routing compresses (the C&R band, the coin below p_c, the cut within the cap)
  keeps a fallback: the pool its own budget names, where it goes when the compressor cannot
  reach the target (code, structured data, too few sentences);
- load-aware spillover (Algorithm 1, lines 15–18): when the chosen pool is saturated (its
  in-flight requests at or above its limit), the request goes to the next larger pool that is
  not, uncompressed. It never goes to a smaller pool, so a spilled request always fits.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fleetopt.core.routing import Routing


class Outcome(str, enum.Enum):
    """What the gateway does with a request."""

    ROUTED = "routed"  # to the pool its budget names
    COMPRESS = "compress"  # compress to ``compress_to_tokens``, then the first pool
    SPILLED = "spilled"  # its pool was saturated: the next larger one
    REJECTED = "rejected"  # longer than every pool


@dataclass(frozen=True)
class Decision:
    """Where one request goes.

    Attributes:
        outcome: see :class:`Outcome`.
        pool_index: the pool to send it to (None when rejected).
        planned_index: the pool the routing named before spillover (None when rejected).
        fallback_index: when compressing, the pool to use if the compressor cannot reach the target.
        compress_to_tokens: the prompt's target after compression (B − max_tokens), or None.
        budget_tokens: the budget routed on (prompt + max_tokens; None without max_tokens).
    """

    outcome: Outcome
    pool_index: int | None
    planned_index: int | None
    fallback_index: int | None = None
    compress_to_tokens: int | None = None
    budget_tokens: int | None = None


def decide(
    routing: Routing,
    context_tokens: Sequence[int],
    prompt_tokens: int,
    max_tokens: int | None,
    coin: float,
    saturated: Sequence[bool] | None = None,
) -> Decision:
    """Algorithm 1's dispatch of one request (module docstring).

    ``context_tokens``: each pool's context window (``Routing.context_tokens``), shortest first;
    ``saturated``: whether each pool is at its in-flight limit (None: none is)."""
    last = len(context_tokens) - 1
    budget = None if max_tokens is None else prompt_tokens + max_tokens
    if budget is None:
        if prompt_tokens >= context_tokens[last]:
            return Decision(Outcome.REJECTED, None, None)
        planned = Decision(Outcome.ROUTED, last, last)
    else:
        index, inputs, _ = routing.route(
            np.array([budget]), np.array([prompt_tokens]), np.array([max_tokens]), np.array([coin])
        )
        pool = int(index[0])
        if pool == 0 and budget > context_tokens[0]:  # compressed into the first pool
            own = int(np.searchsorted(np.asarray(routing.boundaries_tokens), budget, side="left"))
            planned = Decision(Outcome.COMPRESS, 0, 0, own, int(inputs[0]), budget)
        elif budget > context_tokens[pool]:
            return Decision(Outcome.REJECTED, None, None, budget_tokens=budget)
        else:
            planned = Decision(Outcome.ROUTED, pool, pool, budget_tokens=budget)
    if saturated is None or not saturated[planned.pool_index]:
        return planned
    # load-aware spillover: the next larger pool that is not saturated (a compressed request
    # goes uncompressed, from the pool its own budget names)
    start = planned.fallback_index if planned.outcome is Outcome.COMPRESS else planned.pool_index + 1
    for larger in range(start, last + 1):
        if not saturated[larger]:
            return Decision(Outcome.SPILLED, larger, planned.pool_index, budget_tokens=budget)
    return planned
