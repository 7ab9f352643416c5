"""Write a synthetic multi-turn conversation trace in Mooncake's format, with block hashes.

    python scripts/make_prefix_trace.py tests/data/logs/mooncake-sessions.jsonl

No public trace with prefix identity is in ../shared, so this one is made (seeded, synthetic, not
a measurement). JSON lines of ``{"timestamp": ms, "input_length", "output_length", "hash_ids"}``
with 512-token blocks, as kvcache-ai/Mooncake's FAST25 traces: conversations of a few apps, each
app with its own system prompt; each turn's prompt is the previous prompt, its answer and a new
user message, so its hashes repeat the previous prompt's full blocks and add fresh ids for the
rest (a partly filled last block changes when extended, so it gets a new id).
"""

from __future__ import annotations

import json
import sys

import numpy as np

BLOCK_TOKENS = 512
SEED = 32
SESSIONS = 250
APPS = 5
SESSION_RATE_PER_S = 1.0
MEAN_TURNS = 8.0
MEAN_THINK_S = 20.0
MAX_INPUT_TOKENS = 60_000


def build(seed: int = SEED) -> list[dict]:
    rng = np.random.default_rng(seed)
    next_id = 0

    def fresh(count: int) -> list[int]:
        nonlocal next_id
        ids = list(range(next_id, next_id + count))
        next_id += count
        return ids

    system_tokens = [int(t) for t in rng.integers(1_000, 4_000, APPS)]
    system_blocks = [fresh(t // BLOCK_TOKENS) for t in system_tokens]  # the full blocks, shared
    rows = []
    start_s = 0.0
    for _ in range(SESSIONS):
        start_s += rng.exponential(1.0 / SESSION_RATE_PER_S)
        app = int(rng.integers(0, APPS))
        tokens, full = system_tokens[app], list(system_blocks[app])
        now_s = start_s
        for _turn in range(int(rng.geometric(1.0 / MEAN_TURNS))):
            tokens += int(rng.lognormal(6.5, 1.0)) + 1  # the new user message
            if tokens > MAX_INPUT_TOKENS:
                break
            hashes = full + fresh(-(-tokens // BLOCK_TOKENS) - len(full))
            output = int(min(4_000, rng.lognormal(4.5, 0.8))) + 1
            row = {"timestamp": int(now_s * 1000), "input_length": tokens, "output_length": output}
            rows.append({**row, "hash_ids": hashes})
            full = hashes[: tokens // BLOCK_TOKENS]
            tokens += output  # the answer joins the history
            full = full + fresh(tokens // BLOCK_TOKENS - len(full))
            now_s += rng.exponential(MEAN_THINK_S)
    rows.sort(key=lambda row: row["timestamp"])
    return rows


def main(path: str) -> None:
    rows = build()
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, separators=(", ", ": ")) + "\n")
    print(f"{path}: {len(rows)} requests")


if __name__ == "__main__":
    main(sys.argv[1])
