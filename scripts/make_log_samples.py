"""Write the small request-log samples of tests/data/logs/, one per --log-format preset.

Every sample holds the same twelve requests (:data:`REQUESTS`: prompt tokens, generated tokens,
arrival in ms after the first), laid out as that gateway or engine writes them (field names from
the sources cited in fleetopt/io/log_formats.py), plus rows the preset must skip (failed requests,
non-generation observations, spans without token usage). The samples of presets whose format
reports cached prompt tokens report :data:`CACHED` (each under the names its project uses).
Made by this project: no third-party data.

Usage: python scripts/make_log_samples.py [FOLDER]   (default: tests/data/logs)
"""

from __future__ import annotations

import csv
import json
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

#: (input tokens, output tokens, ms after the first arrival) of the twelve sample requests.
REQUESTS = [(100 + 37 * k, 10 + 5 * k, 1000 * k + 250 * k * k) for k in range(12)]
#: The cached prompt tokens of the twelve requests (part of their prompts), where a format has them.
CACHED = [64 * (k % 4) for k in range(12)]
#: Tokens written to the cache (Anthropic's cache_creation_input_tokens) where Helicone reports them.
CACHE_WRITTEN = [32 if k % 4 == 0 else 0 for k in range(12)]
#: The wall-clock time of the first arrival in the samples with absolute clocks.
ORIGIN = datetime(2024, 5, 10, 12, 0, 0, tzinfo=timezone.utc)
ORIGIN_S = int(ORIGIN.timestamp())


def _at(ms: int) -> datetime:
    return ORIGIN + timedelta(milliseconds=ms)


def _iso(ms: int) -> str:
    return _at(ms).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def write_all(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)

    with open(folder / "azure.csv", "w", newline="") as stream:  # Azure 2023: 7 fractional digits
        stream.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
        for i, o, ms in REQUESTS:
            stream.write(f"{_at(ms).strftime('%Y-%m-%d %H:%M:%S.%f')}0,{i},{o}\n")

    with open(folder / "mooncake.jsonl", "w") as stream:
        for k, (i, o, ms) in enumerate(REQUESTS):
            record = {
                "timestamp": ms,
                "input_length": i,
                "output_length": o,
                "hash_ids": list(range(k, k + i // 512 + 1)),
            }
            stream.write(json.dumps(record) + "\n")

    with open(folder / "burstgpt.csv", "w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(
            ["Timestamp", "Model", "Request tokens", "Response tokens", "Total tokens", "Log Type"]
        )
        for i, o, ms in REQUESTS:  # seconds from 0:00 of the first day (noon here)
            writer.writerow([f"{43200 + ms / 1000:.3f}", "ChatGPT", i, o, i + o, "Conversation log"])

    with open(folder / "litellm-spendlogs.csv", "w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(
            [
                "request_id",
                "call_type",
                "api_key",
                "spend",
                "total_tokens",
                "prompt_tokens",
                "completion_tokens",
                "startTime",
                "endTime",
                "model",
                "status",
                "metadata",
            ]
        )
        rows = [(i, o, ms, "success", c) for (i, o, ms), c in zip(REQUESTS, CACHED, strict=True)] + [
            (0, 0, 500, "failure", None),
            (0, 0, 7000, "failure", None),
        ]
        for k, (i, o, ms, status, c) in enumerate(sorted(rows, key=lambda r: r[2])):
            start = _at(ms).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
            end = _at(ms + 900).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
            details = {"prompt_tokens_details": {"cached_tokens": c}}
            # spend_tracking_utils: the usage under usage_object, its other keys under
            # additional_usage_values (an older proxy writes only the latter)
            metadata = (
                {}
                if c is None
                else {"usage_object": {"prompt_tokens": i, "completion_tokens": o, **details},
                      "additional_usage_values": details}
                if k % 2 == 0
                else {"additional_usage_values": details}
            )  # fmt: skip
            writer.writerow(
                [
                    f"req-{k}",
                    "acompletion",
                    "hashed-key",
                    f"{(i + 3 * o) * 1e-6:.6f}",
                    i + o,
                    i,
                    o,
                    start,
                    end,
                    "llama-3.1-70b",
                    status,
                    json.dumps(metadata),
                ]
            )

    with open(folder / "litellm-payload.jsonl", "w") as stream:  # StandardLoggingPayload, one per line
        rows = [(i, o, ms, "success", c) for (i, o, ms), c in zip(REQUESTS, CACHED, strict=True)] + [
            (0, 0, 2000, "failure", 0)
        ]
        for k, (i, o, ms, status, c) in enumerate(rows):
            payload = {
                "id": f"chatcmpl-{k}",
                "call_type": "acompletion",
                "status": status,
                "total_tokens": i + o,
                "prompt_tokens": i,
                "completion_tokens": o,
                "startTime": ORIGIN_S + ms / 1000,
                "endTime": ORIGIN_S + ms / 1000 + 0.9,
                "model": "llama-3.1-70b",
                "cache_hit": False,
                "metadata": {
                    "usage_object": {
                        "prompt_tokens": i,
                        "completion_tokens": o,
                        "prompt_tokens_details": {"cached_tokens": c},
                    }
                },
            }
            stream.write(json.dumps(payload) + "\n")

    with open(folder / "langfuse-observations.jsonl", "w") as stream:  # the JSONL observations export
        # the cached tokens under each convention Langfuse keeps: OpenAI's, Anthropic's, LangChain's
        conventions = ("input_cached_tokens", "cache_read_input_tokens", "input_cache_read")
        for k, ((i, o, ms), c) in enumerate(zip(REQUESTS, CACHED, strict=True)):
            trace = f"trace-{k}"
            span = {
                "id": f"span-{k}",
                "traceId": trace,
                "type": "SPAN",
                "name": "handler",
                "startTime": _iso(ms),
                "inputUsage": 0,
                "outputUsage": 0,
                "totalUsage": 0,
                "usageDetails": {},
            }
            generation = {
                "id": f"gen-{k}",
                "traceId": trace,
                "type": "GENERATION",
                "name": "chat",
                "startTime": _iso(ms),
                "model": "llama-3.1-70b",
                "inputUsage": i,
                "outputUsage": o,
                "totalUsage": i + o,
                "usageDetails": {"input": i - c, conventions[k % 3]: c, "output": o, "total": i + o},
            }
            stream.write(json.dumps(span) + "\n" + json.dumps(generation) + "\n")

    with open(folder / "helicone.csv", "w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(
            [
                "request_id",
                "request_created_at",
                "response_status",
                "request_model",
                "prompt_tokens",
                "prompt_cache_read_tokens",
                "prompt_cache_write_tokens",
                "completion_tokens",
                "total_tokens",
            ]
        )
        for k, ((i, o, ms), c, w) in enumerate(zip(REQUESTS, CACHED, CACHE_WRITTEN, strict=True)):
            # Helicone's prompt_tokens leaves out the tokens read from and written to the cache
            writer.writerow([f"h-{k}", _iso(ms), 200, "llama-3.1-70b", i - c - w, c, w, o, i - c - w + o])
        writer.writerow(["h-err", _iso(3000), 500, "llama-3.1-70b", "", "", "", "", ""])

    with open(folder / "otel-spans.jsonl", "w") as stream:  # OTLP JSON lines (the collector's file exporter)
        for k, ((i, o, ms), c) in enumerate(zip(REQUESTS, CACHED, strict=True)):
            start = (ORIGIN_S * 1000 + ms) * 1_000_000
            names = (
                ("gen_ai.usage.prompt_tokens", "gen_ai.usage.completion_tokens")
                if k % 3 == 2
                else ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens")
            )
            llm = {
                "traceId": f"{k:032x}",
                "spanId": f"{2 * k + 1:016x}",
                "name": "chat llama-3.1-70b",
                "kind": 3,
                "startTimeUnixNano": str(start),
                "endTimeUnixNano": str(start + 900_000_000),
                "attributes": [
                    {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                    {"key": names[0], "value": {"intValue": str(i)}},
                    {"key": names[1], "value": {"intValue": o}},
                    {"key": "gen_ai.usage.cache_read.input_tokens", "value": {"intValue": str(c)}},
                ],
            }
            http = {
                "traceId": f"{k:032x}",
                "spanId": f"{2 * k + 2:016x}",
                "name": "POST /v1/chat/completions",
                "kind": 2,
                "startTimeUnixNano": str(start - 1_000_000),
                "attributes": [{"key": "http.request.method", "value": {"stringValue": "POST"}}],
            }
            document = {
                "resourceSpans": [
                    {
                        "resource": {
                            "attributes": [{"key": "service.name", "value": {"stringValue": "gateway"}}]
                        },
                        "scopeSpans": [{"scope": {"name": "gen-ai"}, "spans": [http, llm]}],
                    }
                ]
            }
            stream.write(json.dumps(document) + "\n")

    with open(folder / "sglang-request-metrics-20240510_12.log", "w") as stream:
        for k, ((i, o, ms), c) in enumerate(zip(REQUESTS, CACHED, strict=True)):
            record = {
                "request_parameters": json.dumps({"rid": f"r{k}", "sampling_params": {"max_new_tokens": o}}),
                "id": f"r{k}",
                "finish_reason": {"type": "length", "length": o},
                "prompt_tokens": i,
                "completion_tokens": o,
                "cached_tokens": c,
                "e2e_latency": 0.9,
                "request_received_ts": ORIGIN_S + ms / 1000,
            }
            stream.write(json.dumps(record) + "\n")

    rows = [(i, o, ms, "") for i, o, ms in REQUESTS] + [(640, 0, 4500, "HTTP 503: Service Unavailable")]
    rows.sort(key=lambda r: r[2])
    result = {
        "date": "20240510-120000",
        "backend": "vllm",
        "label": None,
        "model_id": "llama-3.1-70b",
        "num_prompts": len(rows),
        "request_rate": 2.0,
        "burstiness": 1.0,
        "max_concurrency": None,
        "duration": 42.5,
        "completed": len(REQUESTS),
        "failed": 1,
        "input_lens": [r[0] for r in rows],
        "output_lens": [r[1] for r in rows],
        "ttfts": [0.05 for _ in rows],
        "itls": [[] for _ in rows],
        "start_times": [1034.5 + r[2] / 1000 for r in rows],
        "generated_texts": ["" for _ in rows],
        "errors": [r[3] for r in rows],
    }
    (folder / "vllm-bench.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    write_all(
        Path(sys.argv[1])
        if len(sys.argv) > 1
        else Path(__file__).resolve().parents[1] / "tests" / "data" / "logs"
    )
