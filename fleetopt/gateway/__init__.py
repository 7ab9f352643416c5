"""fleetopt's gateway plugin: the plan's routing on a real gateway (``pip install 'fleetopt[gateway]'``).

- :mod:`fleetopt.io.gateway_config`: the plugin's settings (``callback_settings.fleetopt`` of
  ``litellm.yaml``), checked into the planner's ``Routing``;
- :mod:`fleetopt.gateway.router`: the decision for each request (estimate or count the prompt,
  route by token budget, compress, spill), no LiteLLM needed;
- :mod:`fleetopt.gateway.metrics`: its counters (Prometheus when installed);
- :mod:`fleetopt.gateway.litellm_plugin`: the LiteLLM proxy callback (imports LiteLLM).

The compressor and the estimator themselves are pure core (:mod:`fleetopt.core.compressor`,
:mod:`fleetopt.core.estimator`), shared with the simulator and the benchmarks.
"""
