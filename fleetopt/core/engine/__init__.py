"""The ``engine`` service model: token-aware iterations, load-driven batches (docs/math.md).

- :mod:`.model`: :class:`~.model.EngineModel` (the service model) and :class:`~.model.EngineQueue`
  (one pool under it: the figures at n instances of s slots, in floats or over a sweep of s);
- :mod:`.assumptions`: :class:`~.assumptions.EngineAssumptions`, the corrections around the derived
  core, one switchable field per term;
- :mod:`.occupancy`: the occupancy chain (a state-dependent birth–death queue) and the slot wait;
- :mod:`.ttft`: the TTFT law of one instance (three cumulants and a quiet part, by prefill level);
- :mod:`.router`: what a least-loaded router does to one instance's intake.

(The modules import each other one way: router, occupancy, ttft ← assumptions ← model. This file
imports none of them, so :mod:`fleetopt.core.poolstats` can take
:class:`~.ttft.PromptLevels` without loading the model.)
"""
