"""The gateway's decision for each request, without LiteLLM: estimate, route, compress, spill.

:class:`TokenBudgetRouter` reads an OpenAI-style request body, counts or estimates its prompt
tokens, asks :func:`fleetopt.core.dispatch.decide` (the planner's ``Routing``) for a pool,
compresses the prompt when the routing says so and the content gate allows it, tracks the
requests in flight per pool for spillover, and learns bytes per token from the responses'
``usage.prompt_tokens`` (pool-routing Algorithm 1). The LiteLLM hook
(:mod:`fleetopt.gateway.litellm_plugin`) is a thin shell around it; the benchmarks time it in process.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fleetopt.core.compressor import compress_text
from fleetopt.core.dispatch import Decision, Outcome, decide
from fleetopt.core.estimator import CATEGORIES, TokenEstimator, classify_text
from fleetopt.gateway.metrics import GatewayMetrics
from fleetopt.io.gateway_config import GatewayConfig

log = logging.getLogger("fleetopt.gateway")

#: Content-part types that carry no text the estimator can count (their tokens are unknown).
MEDIA_PARTS = frozenset({"image_url", "input_image", "image", "input_audio", "audio", "file", "video_url"})
TEXT_PARTS = frozenset({"text", "input_text"})
#: Call types (LiteLLM's ``call_type``) the router handles; others pass through untouched.
CHAT_CALLS = frozenset({"completion", "acompletion"})
TEXT_CALLS = frozenset({"text_completion", "atext_completion"})


class GatewayError(Exception):
    """A request the gateway refuses: ``status`` is the HTTP status the client gets."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass
class _Text:
    """A piece of prompt text and where it sits in the body (to put a compressed copy back)."""

    text: str
    message: int | None  # index in messages (None: a text completion's prompt)
    part: int | None  # index in the message's content list (None: the content is a string)


@dataclass(frozen=True)
class Routed:
    """A request the router decided on.

    Attributes:
        request_id: the key :meth:`TokenBudgetRouter.complete` takes back.
        model_group: the LiteLLM model group (pool) to send it to.
        pool: the pool's name.
        decision: the dispatch decision (before a failed compression fell back).
        outcome: ``routed``, ``compressed``, ``spilled``, ``fallback`` (compression could not reach
            the target), ``multimodal`` (media: the last pool).
        body_updates: keys of the request body to replace (``messages`` or ``prompt`` when compressed).
        prompt_tokens: the prompt's tokens as routed on (estimated or counted).
        category: the content category.
    """

    request_id: str
    model_group: str
    pool: str
    decision: Decision | None
    outcome: str
    body_updates: dict[str, Any]
    prompt_tokens: int
    category: str


@dataclass
class _InFlight:
    pool: int
    started_s: float
    prompt_bytes: int
    category: str
    estimated_tokens: int | None
    learn: bool


@dataclass
class TokenBudgetRouter:
    """The gateway's state: configuration, estimator, requests in flight, counters."""

    config: GatewayConfig
    metrics: GatewayMetrics = field(default_factory=GatewayMetrics)
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        c = self.config
        kwargs: dict[str, Any] = {"decay": c.decay, "bias": c.bias}
        if c.cold_start_bytes_per_token is not None:
            kwargs["cold_start"] = c.cold_start_bytes_per_token
        if c.cold_start_deviation_fraction is not None:
            kwargs["cold_start_deviation_fraction"] = c.cold_start_deviation_fraction
        self.estimator = TokenEstimator(**kwargs)
        self.count_tokens = _tokenizer(c)
        self._coin = random.Random(c.seed)
        self._ids = itertools.count(1)
        self._in_flight: dict[str, _InFlight] = {}
        self._pool_load = [0] * len(c.pools)
        self._swept_s = self.clock()

    # -- reading a request ---------------------------------------------------------------------
    def _texts(self, body: dict, call_type: str) -> tuple[list[_Text], bool, int]:
        """The prompt's texts, whether it holds media, and the bytes of its tool definitions."""
        texts: list[_Text] = []
        media = False
        if call_type in TEXT_CALLS:
            prompt = body.get("prompt")
            if isinstance(prompt, str):
                return [_Text(prompt, None, None)], False, 0
            if isinstance(prompt, list) and all(isinstance(p, str) for p in prompt):
                return [_Text(p, None, k) for k, p in enumerate(prompt)], False, 0
            raise GatewayError(400, "fleetopt gateway: 'prompt' must be a string or a list of strings")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise GatewayError(400, "fleetopt gateway: 'messages' must be a non-empty list of messages")
        for m, message in enumerate(messages):
            if not isinstance(message, dict):
                raise GatewayError(
                    400, f"fleetopt gateway: messages[{m}] must be an object with role and content"
                )
            content = message.get("content")
            if content is None or isinstance(content, str):
                if content:
                    texts.append(_Text(content, m, None))
                continue
            if not isinstance(content, list):
                raise GatewayError(
                    400,
                    f"fleetopt gateway: messages[{m}].content must be a string or a list of content parts",
                )
            for p, part in enumerate(content):
                kind = part.get("type") if isinstance(part, dict) else None
                if kind in TEXT_PARTS:
                    text = part.get("text")
                    if not isinstance(text, str):
                        raise GatewayError(
                            400, f"fleetopt gateway: messages[{m}].content[{p}].text must be a string"
                        )
                    texts.append(_Text(text, m, p))
                elif kind in MEDIA_PARTS:
                    media = True
                else:
                    raise GatewayError(
                        400,
                        f"fleetopt gateway: messages[{m}].content[{p}] has type {kind!r}; expected text or "
                        f"one of {', '.join(sorted(MEDIA_PARTS))}",
                    )
        tools = body.get("tools") or body.get("functions")
        tool_bytes = len(json.dumps(tools, ensure_ascii=False).encode("utf-8")) if tools else 0
        return texts, media, tool_bytes

    @staticmethod
    def _max_tokens(body: dict) -> int | None:
        value = body.get("max_tokens", body.get("max_completion_tokens"))
        if value is None:
            return None
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise GatewayError(400, f"fleetopt gateway: max_tokens = {value!r} must be a whole number ≥ 1")
        return value

    def _prompt_tokens(self, texts: list[_Text], messages: int, prompt_bytes: int, category: str) -> int:
        if self.count_tokens is not None:
            return sum(self.count_tokens(t.text) for t in texts) + self.config.tokens_per_message * messages
        return self.estimator.estimate(prompt_bytes, category)

    # -- the decision ----------------------------------------------------------------------------
    def route(self, body: Any, call_type: str = "completion") -> Routed | None:
        """Decide where ``body`` goes (None: not a request for the served model; pass it through).

        Raises :class:`GatewayError` for a request the gateway refuses (malformed, longer than
        every pool)."""
        if call_type not in CHAT_CALLS and call_type not in TEXT_CALLS:
            return None
        if not isinstance(body, dict) or body.get("model") != self.config.model:
            return None
        self._sweep()
        texts, media, tool_bytes = self._texts(body, call_type)
        max_tokens = self._max_tokens(body)
        joined = "\n".join(t.text for t in texts)
        prompt_bytes = len(joined.encode("utf-8")) + tool_bytes
        category = classify_text(joined) if joined else "prose"
        messages = len(body.get("messages") or ()) if call_type in CHAT_CALLS else 1
        prompt_tokens = self._prompt_tokens(texts, messages, prompt_bytes, category)
        pools = self.config.pools
        last = len(pools) - 1
        saturated = [
            p.max_in_flight is not None and self._pool_load[k] >= p.max_in_flight for k, p in enumerate(pools)
        ]
        if media:
            # a media part's tokens are unknown: only the last pool surely holds the request
            return self._admit(last, None, "multimodal", {}, prompt_bytes, category, prompt_tokens, False)
        decision = decide(
            self.config.routing,
            self.config.context_tokens,
            prompt_tokens,
            max_tokens,
            self._coin.random(),
            saturated,
        )
        self.metrics.estimate_made(category)
        if decision.outcome is Outcome.REJECTED:
            optimistic = self._optimistic_tokens(prompt_bytes, category)
            if optimistic is not None and optimistic + (max_tokens or 0) < pools[last].max_budget_tokens:
                # the estimate leans long on purpose; only the largest pool can tell
                return self._admit(last, decision, "routed", {}, prompt_bytes, category, prompt_tokens, True)
            self.metrics.rejected(category)
            raise GatewayError(
                400,
                f"fleetopt gateway: the request needs about {prompt_tokens + (max_tokens or 0):,} tokens "
                f"(prompt {prompt_tokens:,} + max_tokens {max_tokens or 0:,}), more than the largest pool's "
                f"context of {pools[last].max_budget_tokens:,}",
            )
        if decision.outcome is Outcome.COMPRESS:
            assert decision.compress_to_tokens is not None and max_tokens is not None
            updates, new_bytes, new_tokens = self._compress(
                body, call_type, texts, prompt_tokens, decision.compress_to_tokens, category, tool_bytes
            )
            budget = pools[0].max_budget_tokens
            if updates is not None and new_tokens + max_tokens <= budget:
                self.metrics.compressed(prompt_tokens, new_tokens)
                return self._admit(0, decision, "compressed", updates, new_bytes, category, new_tokens, True)
            fallback = decision.fallback_index
            assert fallback is not None
            return self._admit(
                fallback, decision, "fallback", {}, prompt_bytes, category, prompt_tokens, True
            )
        if self.config.shadow_gamma is not None and max_tokens is not None:
            self._shadow(body, call_type, texts, prompt_tokens, max_tokens, category, tool_bytes)
        outcome = "spilled" if decision.outcome is Outcome.SPILLED else "routed"
        assert decision.pool_index is not None
        return self._admit(
            decision.pool_index, decision, outcome, {}, prompt_bytes, category, prompt_tokens, True
        )

    def _shadow(
        self, body: dict, call_type: str, texts: list[_Text], prompt_tokens: int, max_tokens: int,
        category: str, tool_bytes: int,
    ) -> None:  # fmt: skip
        """Shadow compression (``shadow_compression`` in the settings): for a request in the band
        (B, ⌊γB⌋] that the plan does not compress, count whether the compressor could have brought it
        to B − max_tokens within the cap — the p_c of this traffic, measured — without changing it."""
        b = self.config.pools[0].max_budget_tokens
        budget = prompt_tokens + max_tokens
        gamma = self.config.shadow_gamma
        assert gamma is not None
        if not (b < budget <= math.floor(gamma * b)):
            return
        cut_ok = max_tokens < b and budget - b <= self.config.shadow_max_cut_fraction * prompt_tokens
        updates = None
        if cut_ok:
            updates, _, _ = self._compress(
                body, call_type, texts, prompt_tokens, b - max_tokens, category, tool_bytes
            )
        self.metrics.shadow(updates is not None)

    def _optimistic_tokens(self, prompt_bytes: int, category: str) -> int | None:
        """The estimate with the bias the other way (ĉ + γσ̂): None with an exact tokenizer."""
        if self.count_tokens is not None:
            return None
        state = self.estimator.states[category]
        return math.ceil(prompt_bytes / (state.ratio + self.estimator.bias * state.deviation))

    def _compress(
        self, body: dict, call_type: str, texts: list[_Text], prompt_tokens: int, target_tokens: int,
        category: str, tool_bytes: int,
    ) -> tuple[dict[str, Any] | None, int, int]:  # fmt: skip
        """Compress the longest text so that the prompt fits ``target_tokens``; (body updates or
        None, the new prompt's bytes, its tokens)."""
        if not texts:
            self.metrics.not_compressed("empty")
            return None, 0, prompt_tokens
        longest = max(texts, key=lambda t: len(t.text))
        if category != "prose" or classify_text(longest.text) != "prose":
            self.metrics.not_compressed("content")  # the content gate: never code or structured data
            return None, 0, prompt_tokens
        count = self.count_tokens or self._sentence_counter(category)
        own = count(longest.text)
        keep = own - (prompt_tokens - target_tokens)
        if keep <= 0:
            self.metrics.not_compressed("too_short")
            return None, 0, prompt_tokens
        result = compress_text(longest.text, keep, count)
        if not result.fits:
            self.metrics.not_compressed("sentences")
            return None, 0, prompt_tokens
        updates = _replace_text(body, call_type, longest, result.text)
        new_texts = [t if t is not longest else _Text(result.text, t.message, t.part) for t in texts]
        joined = "\n".join(t.text for t in new_texts)
        new_bytes = len(joined.encode("utf-8")) + tool_bytes
        messages = len(body.get("messages") or ()) if call_type in CHAT_CALLS else 1
        new_tokens = self._prompt_tokens(new_texts, messages, new_bytes, category)
        if new_tokens > target_tokens:
            self.metrics.not_compressed("estimate")
            return None, 0, prompt_tokens
        return updates, new_bytes, new_tokens

    def _sentence_counter(self, category: str) -> Callable[[str], int]:
        ratio = self.estimator.route_ratio(category)
        return lambda text: math.ceil(len(text.encode("utf-8")) / ratio)

    def _admit(
        self, pool: int, decision: Decision | None, outcome: str, updates: dict[str, Any], prompt_bytes: int,
        category: str, prompt_tokens: int, learn: bool,
    ) -> Routed:  # fmt: skip
        request_id = f"fleetopt-{next(self._ids)}"
        estimated = None if self.count_tokens is not None else prompt_tokens
        self._in_flight[request_id] = _InFlight(pool, self.clock(), prompt_bytes, category, estimated, learn)
        self._pool_load[pool] += 1
        name = self.config.pools[pool].name
        self.metrics.routed(name, outcome, self._pool_load[pool])
        if outcome == "spilled" and decision is not None and decision.planned_index is not None:
            self.metrics.spilled(self.config.pools[decision.planned_index].name, name)
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "fleetopt route %s: %s prompt %d tokens (%s, %d bytes) max_tokens budget %s -> %s [%s]",
                request_id, outcome, prompt_tokens, category, prompt_bytes,
                None if decision is None else decision.budget_tokens, name, decision,
            )  # fmt: skip
        return Routed(
            request_id,
            self.config.pools[pool].model_group,
            name,
            decision,
            outcome,
            updates,
            prompt_tokens,
            category,
        )

    # -- responses ---------------------------------------------------------------------------------
    def complete(self, request_id: str | None, prompt_tokens: int | None) -> None:
        """A request finished (``prompt_tokens``: its response's ``usage.prompt_tokens``, or None when
        it failed or the count is not the backend's): free its slot and learn from the count."""
        entry = self._in_flight.pop(request_id, None) if request_id else None
        if entry is None:
            return
        self._pool_load[entry.pool] = max(0, self._pool_load[entry.pool] - 1)
        self.metrics.in_flight(self.config.pools[entry.pool].name, self._pool_load[entry.pool])
        if prompt_tokens is None or not entry.learn or isinstance(prompt_tokens, bool):
            return
        if not isinstance(prompt_tokens, int) or prompt_tokens <= 0:
            return
        if entry.estimated_tokens is not None:
            self.metrics.estimate_error(entry.category, entry.estimated_tokens - prompt_tokens)
            learned = self.estimator.observe(entry.prompt_bytes, entry.category, prompt_tokens)
            if learned:
                self.metrics.ratio(entry.category, self.estimator.states[entry.category].ratio)

    def _sweep(self) -> None:
        """Forget requests in flight longer than the timeout (a client that went away, a lost event)."""
        now = self.clock()
        if now - self._swept_s < 1.0:
            return
        self._swept_s = now
        limit = self.config.in_flight_timeout_s
        for request_id in [k for k, v in self._in_flight.items() if now - v.started_s > limit]:
            self.complete(request_id, None)

    def in_flight(self) -> dict[str, int]:
        """Requests in flight per pool."""
        return {p.name: self._pool_load[k] for k, p in enumerate(self.config.pools)}


def _replace_text(body: dict, call_type: str, where: _Text, text: str) -> dict[str, Any]:
    """The body keys to replace so that ``where`` holds ``text`` (the rest is shared, not copied)."""
    if call_type in TEXT_CALLS:
        prompt = body["prompt"]
        if where.part is None:
            return {"prompt": text}
        new_prompt = list(prompt)
        new_prompt[where.part] = text
        return {"prompt": new_prompt}
    messages = list(body["messages"])
    assert where.message is not None
    message = dict(messages[where.message])
    if where.part is None:
        message["content"] = text
    else:
        parts = list(message["content"])
        parts[where.part] = {**parts[where.part], "text": text}
        message["content"] = parts
    messages[where.message] = message
    return {"messages": messages}


def _tokenizer(config: GatewayConfig) -> Callable[[str], int] | None:
    """The configured tokenizer's counter (None: estimate from bytes)."""
    if config.tiktoken_encoding is not None:
        import tiktoken

        encoding = tiktoken.get_encoding(config.tiktoken_encoding)
        return lambda text: len(encoding.encode(text, disallowed_special=()))
    if config.huggingface_file is not None:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(config.huggingface_file)
        return lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids)
    return None


__all__ = ["CATEGORIES", "GatewayError", "Routed", "TokenBudgetRouter"]
