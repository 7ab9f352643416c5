"""``fleetopt simulate --gateway``'s API: a plan's fleet simulated behind a gateway that estimates
prompt lengths (routing noise, misrouting, rejections, spillover), next to the exact routing."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fleetopt.errors import ValidationError


@dataclass(frozen=True)
class GatewayEffect:
    """The same fleet, seeds and requests simulated with exact routing and through the gateway.

    ``counts``: what the gateway did (:class:`fleetopt.core.gateway_sim.GatewayCounts`), summed over
    seeds; ``exact`` / ``gateway``: :class:`fleetopt.core.simulate.SimulationResult`."""

    pool_names: tuple[str, ...]
    exact: Any
    gateway: Any
    counts: Any
    model: Any


def simulate_gateway_effect(
    path: Path,
    *,
    model: Any = None,
    requests: int = 50_000,
    seeds: int = 2,
    spillover: bool = True,
    warmup_fraction: float = 0.3,
) -> GatewayEffect:
    """Simulate a plan file's fleet (Poisson at the rate it was sized for) twice on the same seeds:
    exact routing, and through a gateway estimating prompt tokens from bytes
    (:mod:`fleetopt.core.gateway_sim`; ``model``: a :class:`~fleetopt.core.gateway_sim.BytesModel`)."""
    from fleetopt.core.crosscheck import setup_from_planned, simulation_model_for
    from fleetopt.core.gateway_sim import BytesModel, GatewayCounts, gateway_route
    from fleetopt.core.simulate import simulate_fleet
    from fleetopt.io.plans import read_plan
    from fleetopt.io.workloads import load_workload

    if requests < 1000 or seeds < 1:
        raise ValidationError(f"--requests {requests}, --seeds {seeds}: at least 1,000 requests and 1 seed")
    plan_file = read_plan(path)
    setup = setup_from_planned(plan_file.fleet, plan_file.options)
    if plan_file.workload is None:
        raise ValidationError(f"plan {path}: inputs.workload = None is invalid; the plan names no workload")
    workload = load_workload(plan_file.workload, **plan_file.workload_reader)
    model = model or BytesModel()
    routing = setup.routing
    contexts = routing.context_tokens(setup.long_context_tokens)
    limits = (
        [p.simulated.instances * p.simulated.slots_per_instance for p in setup.pools] if spillover else None
    )
    services = [p.mean_service_s for p in setup.pools] if spillover else None
    counts = GatewayCounts()

    def through_gateway(rng, arrival, inputs, outputs, coin):
        pool, new_inputs, total, seen = gateway_route(
            routing, contexts, inputs, outputs, coin, rng, model, arrival, limits, services
        )
        counts.add(seen)
        return pool, new_inputs, total

    kwargs = dict(
        arrival_rate_per_s=setup.arrival_rate_per_s,
        service_model=simulation_model_for(plan_file.options.service_model),
        requests=requests,
        warmup_fraction=warmup_fraction,
        seeds=tuple(range(1, seeds + 1)),
    )
    exact = simulate_fleet(workload, setup.simulated_pools, routing, **kwargs)
    noisy = simulate_fleet(workload, setup.simulated_pools, routing, gateway=through_gateway, **kwargs)
    return GatewayEffect(tuple(p.name for p in setup.pools), exact, noisy, counts, model)
