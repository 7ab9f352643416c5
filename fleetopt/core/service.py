"""The service models of a pool, by name: what ``--service-model`` accepts.

FleetOpt Eq. 3–4: an iteration costs t_iter = W + H·n (n slots in lock step); a request holds
its slot for I = ⌈L_in / chunk⌉ + L_out iterations. Each service model is one
:class:`fleetopt.core.servicemodel.ServiceModel` implementation (the seam) in
:data:`SERVICE_MODEL_REGISTRY`; the rest of fleetopt asks the model, never its name. The M/G/c
models (``lockstep``, ``fleet-sim``) are :mod:`fleetopt.core.mgc`, the ``engine`` model is the
package :mod:`fleetopt.core.engine`. This module also gathers the names other code imports.
"""

from __future__ import annotations

from fleetopt.core.engine.assumptions import EngineAssumptions
from fleetopt.core.engine.model import ENGINE, EngineModel
from fleetopt.core.hardware import IterationCosts, PoolHardware, iteration_costs
from fleetopt.core.mgc import FLEET_SIM, LOCKSTEP, FleetSimModel, LockstepModel
from fleetopt.core.servicemodel import (
    PoolQueue,
    PoolShare,
    PoolTargets,
    ServiceModel,
    SlotServiceTime,
    SlotServiceTimes,
    one_slot_service_time,
    slot_service_times,
)
from fleetopt.errors import ValidationError

__all__ = [
    "ENGINE",
    "FLEET_SIM",
    "LOCKSTEP",
    "SERVICE_MODELS",
    "SERVICE_MODEL_REGISTRY",
    "EngineAssumptions",
    "EngineModel",
    "FleetSimModel",
    "IterationCosts",
    "LockstepModel",
    "PoolHardware",
    "PoolQueue",
    "PoolShare",
    "PoolTargets",
    "ServiceModel",
    "SlotServiceTime",
    "SlotServiceTimes",
    "get_service_model",
    "iteration_costs",
    "one_slot_service_time",
    "slot_service_times",
]

#: Every service model by name (what ``--service-model`` accepts). Add new models here.
SERVICE_MODEL_REGISTRY: dict[str, ServiceModel] = {m.name: m for m in (ENGINE, LOCKSTEP, FLEET_SIM)}
#: Their names, in order.
SERVICE_MODELS = tuple(SERVICE_MODEL_REGISTRY)


def get_service_model(model: ServiceModel | str) -> ServiceModel:
    """The registered model of that name (a model object is returned as is)."""
    if isinstance(model, ServiceModel):
        return model
    try:
        return SERVICE_MODEL_REGISTRY[model]
    except (KeyError, TypeError):
        raise ValidationError(f"service model: {model!r} is not one of {', '.join(SERVICE_MODELS)}") from None
