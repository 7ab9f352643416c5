"""Prompt tokens without a tokenizer: pool-routing Algorithm 1's self-calibrating byte estimate.

A request's prompt of |r| UTF-8 bytes in content category k is estimated at ⌈|r| / c*⌉ tokens with
the conservative ratio c* = ĉ_k − γσ̂_k (pool-routing Eq. 3 and 5; γ = 1 there): ĉ_k is an EMA of
the bytes per token observed in responses (``usage.prompt_tokens``; Eq. 4, decay β = 0.95) and
σ̂_k an EMA of |c_obs − ĉ_k| (Algorithm 1, line 24: the mean absolute deviation, which the paper
calls the EMA standard deviation). Over-estimating sends a borderline request to the larger pool,
which only wastes a little throughput; under-estimating sends it to a pool that cannot hold it.

Categories come from a cheap classifier of the text (:func:`classify_text`): ``code``, ``cjk``
(Chinese, Japanese, Korean), ``structured`` (JSON, YAML, XML, tables, logs) and ``prose``.

Our choices where the paper is silent (docs/gateway.md):

- cold start: ĉ_k starts at the paper's per-category averages (§2.1: prose 4.5, code 3.5, CJK 2.0
  bytes per token; structured 3.5, as code) and σ̂_k at :data:`COLD_START_DEVIATION_FRACTION` of
  it, so that before any feedback c* = 0.75·ĉ_k leans toward the larger pool; the paper's own
  cold start (c₀ = 4.0 for every category, σ̂ = 0) is ``TokenEstimator(cold_start=PAPER_COLD_START,
  cold_start_deviation_fraction=0)``;
- prompts shorter than :data:`MIN_OBSERVED_BYTES` are not learned from: the chat template's few
  tokens dominate their count, and they are far from any pool boundary;
- c* is never below :data:`MIN_BYTES_PER_TOKEN` (a byte-level BPE never has more tokens than bytes).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

CATEGORIES = ("prose", "code", "cjk", "structured")
#: Pool-routing §2.1's per-category bytes per token (English prose ~4.5, code ~3.5, CJK ~2.0);
#: structured data (JSON, YAML, logs) as code.
COLD_START_BYTES_PER_TOKEN: Mapping[str, float] = {"prose": 4.5, "code": 3.5, "cjk": 2.0, "structured": 3.5}
#: The paper's cold start: c₀ = 4.0 (the English-prose average) for every category.
PAPER_COLD_START: Mapping[str, float] = dict.fromkeys(CATEGORIES, 4.0)
#: σ̂ before any feedback, as a fraction of the cold-start ratio (our choice: lean to the larger pool).
COLD_START_DEVIATION_FRACTION = 0.25
#: Pool-routing Eq. 4's EMA decay β and Eq. 5's conservative bias γ.
DEFAULT_DECAY = 0.95
DEFAULT_BIAS = 1.0
#: Prompts shorter than this (bytes) do not update the EMA (the template's tokens dominate).
MIN_OBSERVED_BYTES = 256
#: The least bytes per token the estimate ever uses.
MIN_BYTES_PER_TOKEN = 1.0
#: Observed ratios are clipped to this range before they enter the EMA (a wrong usage figure, an
#: empty prompt with a long template, must not throw the estimate off by orders of magnitude).
OBSERVED_RATIO_RANGE = (0.5, 16.0)

#: The classifier reads at most this many characters: the start, middle and end of the text.
_SAMPLE_CHARS = 6000
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]")
_CODE_LINE = re.compile(
    r"^\s*(?:def |class |import |from \S+ import|#include|function\b|return\b|public |private |"
    r"static |const |let |var |fn |func |package |using |if\s*\(|for\s*\(|while\s*\(|}|\{|//|/\*|\*/|"
    r"#!|#\s|@\w+|\"\"\"|elif\b|else\b|try:|except\b|finally:|with |async |await |raise |yield\b|"
    r"assert |lambda\b|SELECT |select |CREATE |[A-Za-z_][\w.\[\]]*\s*(?:=|\+=|-=|:=)\s*\S)"
    r"|^\s{2,}\S.*(?:[:(\[{,;]|\)|\]|})\s*$",
)
_STRUCTURED_LINE = re.compile(
    r'^\s*(?:[\[\]{}],?|"[^"\n]{1,80}"\s*:|[\w.-]{1,40}:\s|-\s+[\w"\'].*:|<[/!?]?[A-Za-z][^>\n]*>|\|.*\||'
    r"[^,\n]*(?:,[^,\n]*){3,}$|\d{4}-\d\d-\d\d[ T]\d\d:\d\d)",
    re.M,
)
_FENCE = "```"
#: Texts up to this long that look like a JSON document are parsed to make sure.
_JSON_PARSE_CHARS = 1_000_000


def _sample(text: str) -> str:
    if len(text) <= _SAMPLE_CHARS:
        return text
    third = _SAMPLE_CHARS // 3
    middle = len(text) // 2
    return "\n".join((text[:third], text[middle - third // 2 : middle + third // 2], text[-third:]))


def classify_text(text: str) -> str:
    """The content category of ``text``: ``cjk``, ``code``, ``structured`` or ``prose``.

    O(1) in the text's length (it reads a sample of at most 6,000 characters): CJK when a fifth of
    the non-space characters are CJK; code when a fenced block is present, when lines that look
    like code (keywords, braces, assignments, comments, indented lines ending in code punctuation) hold
    25% of the characters, or when code
    symbols ({ } ; = ( ) [ ] < >) are 8% of them; structured when lines of JSON, YAML, XML, tables,
    CSV or logs (each at most 300 characters) hold half of the characters, or the text is a JSON
    object or array; prose otherwise.
    """
    sample = _sample(text)
    letters = len(sample) - sample.count(" ") - sample.count("\n")
    if letters <= 0:
        return "prose"
    if len(_CJK.findall(sample)) >= 0.2 * letters:
        return "cjk"
    if _FENCE in sample:
        return "code"
    code_chars = structured_chars = total = 0
    for line in sample.split("\n"):
        size = len(line.strip())
        if not size:
            continue
        total += size
        if _CODE_LINE.match(line):
            code_chars += size
        elif size <= 300 and _STRUCTURED_LINE.match(line):
            structured_chars += size
    stripped = text.strip()
    if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]") and _is_json(stripped):
        return "structured"  # a JSON object or array
    symbols = sum(sample.count(c) for c in "{};=()[]<>")
    if code_chars >= 0.25 * total or symbols > 0.08 * letters:
        return "code"
    if structured_chars >= 0.5 * total:
        return "structured"
    return "prose"


def _is_json(text: str) -> bool:
    if len(text) > _JSON_PARSE_CHARS:
        return True  # a large bracketed document: parsing it would cost more than routing it
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@dataclass
class CategoryState:
    """One category's EMA: ĉ (bytes per token), σ̂ (mean absolute deviation) and observations."""

    ratio: float
    deviation: float
    observations: int = 0


class TokenEstimator:
    """Pool-routing Algorithm 1's estimator: per-category EMA of bytes per token, biased conservative.

    Not thread-safe by itself; the gateway calls it from one event loop.
    """

    def __init__(
        self,
        *,
        decay: float = DEFAULT_DECAY,
        bias: float = DEFAULT_BIAS,
        cold_start: Mapping[str, float] = COLD_START_BYTES_PER_TOKEN,
        cold_start_deviation_fraction: float = COLD_START_DEVIATION_FRACTION,
        min_observed_bytes: int = MIN_OBSERVED_BYTES,
    ):
        if not (0.0 <= decay < 1.0):
            raise ValueError(f"decay: {decay!r} must be in [0, 1)")
        if not (bias >= 0 and math.isfinite(bias)):
            raise ValueError(f"bias: {bias!r} must be ≥ 0")
        unknown = sorted(set(cold_start) - set(CATEGORIES))
        if unknown:
            raise ValueError(f"cold start: unknown categories {unknown}; known: {', '.join(CATEGORIES)}")
        for category, ratio in cold_start.items():
            if not (ratio >= MIN_BYTES_PER_TOKEN and math.isfinite(ratio)):
                raise ValueError(f"cold start {category}: {ratio!r} bytes per token must be ≥ 1")
        self.decay = float(decay)
        self.bias = float(bias)
        self.min_observed_bytes = int(min_observed_bytes)
        base = {**COLD_START_BYTES_PER_TOKEN, **cold_start}
        self.states = {
            k: CategoryState(float(base[k]), float(base[k]) * cold_start_deviation_fraction)
            for k in CATEGORIES
        }

    def route_ratio(self, category: str) -> float:
        """c* = ĉ_k − γσ̂_k (Eq. 5), at least :data:`MIN_BYTES_PER_TOKEN`."""
        state = self.states[category]
        return max(MIN_BYTES_PER_TOKEN, state.ratio - self.bias * state.deviation)

    def estimate(self, prompt_bytes: int, category: str) -> int:
        """⌈|r| / c*⌉ prompt tokens (Eq. 3's L_in)."""
        return math.ceil(prompt_bytes / self.route_ratio(category))

    def observe(self, prompt_bytes: int, category: str, prompt_tokens: int) -> bool:
        """Learn from a response's ``usage.prompt_tokens`` (Algorithm 1, OnResponse); False if ignored."""
        if prompt_bytes < self.min_observed_bytes or not prompt_tokens or prompt_tokens <= 0:
            return False
        lo, hi = OBSERVED_RATIO_RANGE
        observed = min(hi, max(lo, prompt_bytes / prompt_tokens))
        state = self.states[category]
        state.ratio = self.decay * state.ratio + (1.0 - self.decay) * observed
        state.deviation = self.decay * state.deviation + (1.0 - self.decay) * abs(observed - state.ratio)
        state.observations += 1
        return True


def estimate_tokens(prompt_bytes: np.ndarray, route_ratio: np.ndarray) -> np.ndarray:
    """⌈bytes / c*⌉ element-wise (the simulator's vectorized estimate)."""
    return np.ceil(
        np.asarray(prompt_bytes, dtype=float) / np.maximum(route_ratio, MIN_BYTES_PER_TOKEN)
    ).astype(np.int64)
