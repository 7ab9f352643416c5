"""The corrections the ``engine`` model makes to its core, each a named, switchable assumption.

The engine model's core is derived: the occupancy chain (:mod:`fleetopt.core.engine.occupancy`)
and the TTFT law of one instance (:mod:`fleetopt.core.engine.ttft`). Around it sit terms chosen by
comparison with the iteration-level simulation, each a cited function with its simplest
alternative beside it. :class:`EngineAssumptions` holds one field per term; the defaults are the
model as planned (:data:`DEFAULT_ASSUMPTIONS`). ``EngineModel(assumptions=...)`` plans with others,
and :meth:`EngineAssumptions.without` switches one term to its alternative, so measuring what a
term is worth (``python benchmarks/validate_engine.py --ablate``, docs/validation.md) needs no
patching.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

from fleetopt.core.engine.occupancy import (
    local_slot_queue,
    no_stall_widening,
    pooled_slot_queue,
    prefill_stall_variance_factor,
    two_moment_on_build_up,
    two_moment_on_whole_wait,
)
from fleetopt.core.engine.prompts import PromptPrice, attention_priced_prompts, unpriced_attention
from fleetopt.core.engine.router import (
    RouterState,
    even_first_order_share,
    least_loaded_first_order_share,
    least_loaded_intake_factor,
    least_loaded_time_share,
    no_company_factor,
    no_router_blindness,
    router_blindness_share,
)


@dataclass(frozen=True)
class EngineAssumptions:
    """One field per correction of the engine model, each a function (see its docstring for the
    formula and its source); the defaults are the model as planned.

    Attributes:
        first_order_share: f₁(u, n), the first-order share of an instance's intake that follows
            its own time behind a least-loaded router (:func:`.least_loaded_first_order_share`;
            alternative :func:`.even_first_order_share`, 1/n).
        router_blindness: the share of the intake the router's blindness adds, (1 − f₁)·e^{−m}·
            (1 − e^{−k₀}) (:func:`.router_blindness_share`; alternative :func:`.no_router_blindness`).
        company_factor: φ, the intake of the instance a request is routed to over λ/n
            (:func:`.least_loaded_intake_factor`; alternative :func:`.no_company_factor`, 1).
        stall_widening: how much prefill stalls widen the occupancy's variance
            (:func:`.prefill_stall_variance_factor`; alternative :func:`.no_stall_widening`, 1).
        slot_queue: the queue a request that waits for a slot joins, its drain rate and σᵏ
            (:func:`.local_slot_queue`, its instance's; alternative :func:`.pooled_slot_queue`).
        two_moment_factor: where the two-moment factor v = (C_a² + C_I²)/2 goes in the wait given a
            wait (:func:`.two_moment_on_build_up`; alternative :func:`.two_moment_on_whole_wait`).
        prompt_price: what a prompt token costs, with its attention over the context
            (:func:`.attention_priced_prompts`; alternative :func:`.unpriced_attention`, τ).
        first_token_iteration: o, where a request's first token comes (:func:`fleetopt.core.engine.
            ttft.ttft_cumulants`): 0, with its last prompt chunk, as vLLM's V1 engine samples it
            (vllm/v1/core/sched/scheduler.py at commit 00024d3, the ``vllm`` scheduler of the
            ``physical`` simulator); alternative 1, one decode iteration later (FleetOpt Eq. 7,
            the ``slots`` scheduler).
    """

    first_order_share: Callable[[float, float], float] = least_loaded_first_order_share
    router_blindness: Callable[[float, float, float], float] = router_blindness_share
    company_factor: Callable[[RouterState], float] = least_loaded_intake_factor
    stall_widening: Callable[[float, float, float], float] = prefill_stall_variance_factor
    slot_queue: Callable[[Any, float, float], tuple[Any, Any]] = local_slot_queue
    two_moment_factor: Callable[[float, Any], Any] = two_moment_on_build_up
    prompt_price: Callable[[Any, Any], PromptPrice] = attention_priced_prompts
    first_token_iteration: int = 0

    def intake_share(self, router: RouterState) -> float:
        """f: the share of an instance's intake that follows its own time
        (:func:`.least_loaded_time_share` with this f₁ and router-blindness term)."""
        return least_loaded_time_share(
            router, first_order=self.first_order_share, blindness=self.router_blindness
        )

    def without(self, term: str) -> EngineAssumptions:
        """The same assumptions with ``term`` (a field name) replaced by its simplest alternative
        (:data:`ALTERNATIVES`)."""
        return replace(self, **{term: ALTERNATIVES[term]})

    def changed_terms(self) -> tuple[str, ...]:
        """The fields that differ from :data:`DEFAULT_ASSUMPTIONS`."""
        return tuple(
            f.name for f in fields(self) if getattr(self, f.name) is not getattr(DEFAULT_ASSUMPTIONS, f.name)
        )


#: The model as planned.
DEFAULT_ASSUMPTIONS = EngineAssumptions()

#: Each term's simplest alternative (what ``--ablate`` switches it to).
ALTERNATIVES: dict[str, Any] = {
    "first_order_share": even_first_order_share,
    "router_blindness": no_router_blindness,
    "company_factor": no_company_factor,
    "stall_widening": no_stall_widening,
    "slot_queue": pooled_slot_queue,
    "two_moment_factor": two_moment_on_whole_wait,
    "prompt_price": unpriced_attention,
    "first_token_iteration": 1,
}

#: One line per term, for tables (``--ablate``).
TERM_LABELS: dict[str, str] = {
    "first_order_share": "intake share f₁ = 1 − (1 − 1/n)^b → 1/n",
    "router_blindness": "router view (1 − f₁)·e^{−m}·(1 − e^{−k₀}) → 0",
    "company_factor": "company factor φ → 1",
    "stall_widening": "prefill-stall widening of the chain → none",
    "slot_queue": "slot wait at the request's instance (JSQ) → pooled queue",
    "two_moment_factor": "two-moment factor on the queue's build-up → on the whole wait",
    "prompt_price": "prompt attention over the context, τ* and τ_k → τ",
    "first_token_iteration": "first token with the last prompt chunk (vLLM V1) → one iteration later",
}
