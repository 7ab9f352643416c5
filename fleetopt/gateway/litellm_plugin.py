"""The LiteLLM proxy plugin: token-budget routing, Compress-and-Route and spillover (docs/gateway.md).

``litellm.yaml`` (``fleetopt export --to litellm``) names it as a callback::

    litellm_settings:
      callbacks: [fleetopt.gateway.litellm_plugin.handler]
    callback_settings:
      fleetopt: {kind: fleetopt-gateway, schema_version: 1, model: …, pools: […], …}

LiteLLM's documented extension point is a ``CustomLogger``: ``async_pre_call_hook`` runs before the
proxy picks a deployment and may change the request (here: ``model`` becomes the pool's model
group, and a compressed prompt replaces the original), ``async_log_success_event`` /
``async_log_failure_event`` see each response (here: the in-flight count and
``usage.prompt_tokens``). Supported LiteLLM versions: see ``pyproject.toml``'s ``gateway`` extra.
"""

from __future__ import annotations

import logging
from typing import Any

import litellm
from fastapi import HTTPException
from litellm.integrations.custom_logger import CustomLogger

from fleetopt.errors import ValidationError
from fleetopt.gateway.router import GatewayError, TokenBudgetRouter
from fleetopt.io.gateway_config import gateway_config

log = logging.getLogger("fleetopt.gateway")
_ID_KEY = "fleetopt_request_id"
_LEARN_KEY = "fleetopt_learn"


class FleetoptRouter(CustomLogger):
    """LiteLLM's callback around :class:`~fleetopt.gateway.router.TokenBudgetRouter`."""

    def __init__(self, settings: Any = None):
        super().__init__()
        self._settings = settings
        self._router: TokenBudgetRouter | None = None
        if settings is not None or (getattr(litellm, "callback_settings", None) or {}).get("fleetopt"):
            self.router  # noqa: B018 - the proxy loads its callbacks at start-up: a bad config fails there

    @property
    def router(self) -> TokenBudgetRouter:
        """The router, built from ``callback_settings.fleetopt`` on first use (errors name the field)."""
        if self._router is None:
            settings = self._settings
            if settings is None:
                settings = (getattr(litellm, "callback_settings", None) or {}).get("fleetopt")
            if settings is None:
                raise ValidationError(
                    "fleetopt gateway: litellm.yaml has no callback_settings.fleetopt (export it with "
                    "fleetopt export --to litellm)"
                )
            config = gateway_config(settings)
            router = TokenBudgetRouter(config)
            if config.metrics_port is not None:
                router.metrics.serve(config.metrics_port, config.metrics_address)
            self._router = router
        return self._router

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict, call_type: str
    ) -> dict:
        try:
            routed = self.router.route(data, str(call_type))
        except GatewayError as exc:
            raise HTTPException(status_code=exc.status, detail=str(exc)) from None
        if routed is None:
            return data
        data.update(routed.body_updates)
        data["model"] = routed.model_group
        metadata = data.get("metadata")
        if not isinstance(metadata, dict):
            metadata = data["metadata"] = {}
        metadata[_ID_KEY] = routed.request_id
        # learn from a stream's usage only when the client asked the backend for it: otherwise the
        # count LiteLLM reports is its own tokenizer's, not the model's
        streaming = bool(data.get("stream"))
        include_usage = isinstance(data.get("stream_options"), dict) and data["stream_options"].get(
            "include_usage"
        )
        metadata[_LEARN_KEY] = (not streaming) or bool(include_usage)
        metadata["fleetopt_pool"] = routed.pool
        metadata["fleetopt_outcome"] = routed.outcome
        return data

    @staticmethod
    def _metadata(kwargs: dict) -> dict:
        params = kwargs.get("litellm_params") or {}
        metadata = params.get("metadata") or kwargs.get("metadata") or {}
        return metadata if isinstance(metadata, dict) else {}

    async def async_log_success_event(
        self, kwargs: dict, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        metadata = self._metadata(kwargs)
        request_id = metadata.get(_ID_KEY)
        if request_id is None or self._router is None:
            return
        tokens = None
        if metadata.get(_LEARN_KEY):
            usage = getattr(response_obj, "usage", None)
            if usage is None and isinstance(response_obj, dict):
                usage = response_obj.get("usage")
            tokens = getattr(usage, "prompt_tokens", None)
            if tokens is None and isinstance(usage, dict):
                tokens = usage.get("prompt_tokens")
        self._router.complete(request_id, tokens)

    async def async_log_failure_event(
        self, kwargs: dict, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        request_id = self._metadata(kwargs).get(_ID_KEY)
        if request_id is not None and self._router is not None:
            self._router.complete(request_id, None)

    async def async_post_call_failure_hook(
        self, request_data: dict, original_exception: Exception, *args, **kwargs
    ):
        metadata = request_data.get("metadata") if isinstance(request_data, dict) else None
        if isinstance(metadata, dict) and self._router is not None:
            self._router.complete(metadata.get(_ID_KEY), None)


#: The instance ``litellm.yaml`` names (``fleetopt.gateway.litellm_plugin.handler``).
handler = FleetoptRouter()
