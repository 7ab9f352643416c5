"""Column presets of request logs (``--log-format``): which fields hold the prompt tokens, the
generated tokens and the arrival time in each gateway's or engine's log, checked against each
project's source (the file and commit are cited in each preset and in docs/workloads.md).

A preset names candidates, not one column: the first present is used (for ``otel`` the current and
the older attribute names are combined with COALESCE, span by span). ``filters`` keep the rows that
are LLM generations which reached a model (a filter on a column the file lacks is skipped).
``cached_fields`` say where a preset's rows report the prompt tokens served from the prefix cache
(OpenAI's ``usage.prompt_tokens_details.cached_tokens`` and each project's own name for it; the
candidates present are combined with COALESCE, row by row), a flat column or a path inside a
column of JSON (docs/workloads.md "Cached prompt tokens").
"""

from __future__ import annotations

from dataclasses import dataclass

from fleetopt.errors import ValidationError, excerpt


@dataclass(frozen=True)
class TimeUnit:
    """A numeric time column's unit (seconds per unit) and whether it counts from the Unix epoch."""

    seconds: float
    epoch: bool = False


@dataclass(frozen=True)
class CachedField:
    """Where a row reports its cached prompt tokens: ``column`` itself (``path`` empty), or the
    value at ``path`` (keys, outermost first) inside ``column``'s JSON (an object, or text of one)."""

    column: str
    path: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The field as messages name it (``metadata.usage_object.….cached_tokens``)."""
        return ".".join((self.column, *self.path))


#: ``--time-unit`` values: seconds per unit of a numeric time column.
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


@dataclass(frozen=True)
class LogFormat:
    """One preset: candidate columns for input, output and time; the unit of a numeric time
    column (date-time columns are read as UTC date-times whatever the preset says); row filters
    (``column``, DuckDB SQL condition); the file layout (``layout``: ``table`` for rows of
    CSV/JSON lines/JSON/Parquet, ``otlp`` for OpenTelemetry's nested OTLP JSON, ``arrays`` for a
    JSON document of parallel per-request arrays); and where the names come from."""

    name: str
    description: str
    input_columns: tuple[str, ...]
    output_columns: tuple[str, ...]
    time_columns: tuple[str, ...]
    time_unit: TimeUnit | None
    filters: tuple[tuple[str, str], ...] = ()
    layout: str = "table"
    source: str = ""
    #: The row filters of ``workload sql`` when they differ from ``filters`` (a warehouse table
    #: has one known schema, so a filter cannot depend on which columns are present).
    warehouse_filters: tuple[str, ...] | None = None
    #: Where rows report their cached prompt tokens (a part of the prompt; module docstring).
    cached_fields: tuple[CachedField, ...] = ()
    #: Columns added to the input column to make the whole prompt, where the input column counts
    #: only the tokens the provider computed (Helicone's prompt_tokens leaves the cache out).
    input_addends: tuple[str, ...] = ()


LOG_FORMATS: dict[str, LogFormat] = {
    f.name: f
    for f in (
        LogFormat(
            "azure",
            "Azure LLM inference traces 2023/2024 (CSV)",
            ("ContextTokens",),
            ("GeneratedTokens",),
            ("TIMESTAMP",),
            None,
            source="Azure/AzurePublicDataset AzureLLMInferenceDataset2023.md: "
            "TIMESTAMP,ContextTokens,GeneratedTokens",
        ),
        LogFormat(
            "mooncake",
            "Mooncake traces (JSON lines; timestamp in ms from the first request)",
            ("input_length",),
            ("output_length",),
            ("timestamp",),
            TimeUnit(1e-3),
            source="kvcache-ai/Mooncake FAST25-release/README.md @3b5a5941 ('timestamp: relative request "
            "arrival time in milliseconds', input_length, output_length)",
        ),
        LogFormat(
            "burstgpt",
            "BurstGPT (CSV; Timestamp in seconds from 0:00 of the first day)",
            ("Request tokens",),
            ("Response tokens",),
            ("Timestamp",),
            TimeUnit(1.0),
            source="HPMLL/BurstGPT README.md @e92f533b (Timestamp, Request tokens, Response tokens)",
        ),
        LogFormat(
            "litellm",
            "LiteLLM proxy: LiteLLM_SpendLogs export, or the StandardLoggingPayload JSON its S3/GCS "
            "loggers write (startTime: a date-time, or Unix seconds)",
            ("prompt_tokens",),
            ("completion_tokens",),
            ("startTime",),
            TimeUnit(1.0, epoch=True),
            filters=(("status", "\"status\" IS DISTINCT FROM 'failure'"),),
            source="BerriAI/litellm schema.prisma @029f645f (model LiteLLM_SpendLogs: prompt_tokens, "
            "completion_tokens, startTime DateTime, status, metadata Json); litellm/types/utils.py "
            "@001c64f2 (StandardLoggingPayload: prompt_tokens, completion_tokens, startTime: float, "
            "status; StandardLoggingMetadata.usage_object); "
            "litellm/proxy/spend_tracking/spend_tracking_utils.py @00907c60 (SpendLogs metadata: "
            "usage_object, additional_usage_values = the usage's keys but the three counts)",
            cached_fields=(
                CachedField("metadata", ("usage_object", "prompt_tokens_details", "cached_tokens")),
                CachedField(
                    "metadata", ("additional_usage_values", "prompt_tokens_details", "cached_tokens")
                ),
            ),
        ),
        LogFormat(
            "langfuse",
            "Langfuse observations export (CSV, JSON or JSON lines; GENERATION observations)",
            ("inputUsage",),
            ("outputUsage",),
            ("startTime",),
            None,
            filters=(("type", "\"type\" = 'GENERATION'"),),
            source="langfuse/langfuse packages/shared/src/domain/observations.ts @62751446 "
            "(ObservationSchema: type, startTime, inputUsage, outputUsage, usageDetails), exported rows "
            "built by worker/src/features/database-read-stream/observation-stream.ts; "
            "packages/shared/src/server/repositories/observations_converters.ts (inputUsage = the sum of "
            "the usageDetails keys containing 'input', cached ones included; their tests name "
            "input_cached_tokens, OpenAI's, and cache_read_input_tokens, Anthropic's); "
            "packages/shared/src/server/otel/OtelIngestionProcessor.ts (input_cache_read)",
            cached_fields=(
                CachedField("usageDetails", ("input_cached_tokens",)),
                CachedField("usageDetails", ("cache_read_input_tokens",)),
                CachedField("usageDetails", ("input_cache_read",)),
            ),
        ),
        LogFormat(
            "helicone",
            "Helicone request export or its request_response_rmt table (successful requests)",
            ("prompt_tokens",),
            ("completion_tokens",),
            ("request_created_at",),
            None,
            filters=(
                ("response_status", '"response_status" BETWEEN 200 AND 299'),
                ("status", '"status" BETWEEN 200 AND 299'),
            ),
            source="Helicone/helicone valhalla/jawn/src/lib/stores/request/request.ts @0003b753 "
            "(request_created_at, prompt_tokens, prompt_cache_read_tokens, prompt_cache_write_tokens, "
            "completion_tokens, response_status); "
            "clickhouse/migrations/20200101000041_request_response_replacing_merge_tree.sql; "
            "valhalla/jawn/src/lib/shared/bodyProcessors/openaiBodyProcessor.ts @8f8667da and "
            "anthropicBodyProcessor.ts @534f6b50 (prompt_tokens leaves the cached tokens out: OpenAI's "
            "prompt_tokens less cached_tokens, Anthropic's input_tokens)",
            warehouse_filters=('"response_status" BETWEEN 200 AND 299',),
            cached_fields=(CachedField("prompt_cache_read_tokens"),),
            input_addends=("prompt_cache_read_tokens", "prompt_cache_write_tokens"),
        ),
        LogFormat(
            "otel",
            "OpenTelemetry GenAI spans: OTLP JSON (JSON lines of resourceSpans) or a flat span table "
            "(start_time_unix_nano and the gen_ai.usage.* attributes as columns)",
            ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
            ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
            ("start_time_unix_nano",),
            TimeUnit(1e-9, epoch=True),
            layout="otlp",
            source="open-telemetry/semantic-conventions model/gen-ai/deprecated/registry-deprecated.yaml "
            "@384d6616 (gen_ai.usage.input_tokens/output_tokens; gen_ai.usage.prompt_tokens/"
            "completion_tokens, deprecated for them); open-telemetry/semantic-conventions-genai "
            "model/gen-ai/registry.yaml @e8fc5751 (gen_ai.usage.cache_read.input_tokens: 'input tokens "
            "served from a provider-managed cache', included in gen_ai.usage.input_tokens); "
            "open-telemetry/opentelemetry-proto examples/trace.json @ac2c4b5d (resourceSpans, "
            "scopeSpans, spans, startTimeUnixNano, attributes [{key, value: {intValue}}])",
            cached_fields=(CachedField("gen_ai.usage.cache_read.input_tokens"),),
        ),
        LogFormat(
            "sglang",
            "SGLang per-request metrics files (--export-metrics-to-file: JSON lines)",
            ("prompt_tokens",),
            ("completion_tokens",),
            ("request_received_ts",),
            TimeUnit(1.0, epoch=True),
            source="sgl-project/sglang python/sglang/srt/observability/request_metrics_exporter.py "
            "@0f6cc999 (one JSON line per request: request_parameters and the response's meta_info); "
            "python/sglang/srt/managers/tokenizer_manager.py (meta_info prompt_tokens, "
            "completion_tokens, cached_tokens = the prompt tokens found in the radix cache, "
            "request_received_ts = the request's wall-clock arrival)",
            cached_fields=(CachedField("cached_tokens"),),
        ),
        LogFormat(
            "vllm-bench",
            "vllm bench serve --save-result --save-detailed (one JSON document of per-request arrays; "
            "start_times on the benchmark's own clock, seconds; failed requests dropped)",
            ("input_lens",),
            ("output_lens",),
            ("start_times",),
            TimeUnit(1.0),
            filters=(("errors", "COALESCE(\"errors\", '') = ''"),),
            layout="arrays",
            source="vllm-project/vllm vllm/benchmarks/serve.py @009e6d4a (result: input_lens, "
            "output_lens, start_times, errors; kept by --save-detailed)",
        ),
    )
}


def log_format(name: str | None) -> LogFormat | None:
    """The preset called ``name`` (None for None); a ValidationError naming the presets otherwise."""
    if name is None:
        return None
    preset = LOG_FORMATS.get(name.strip().lower())
    if preset is None:
        raise ValidationError(f"unknown log format {excerpt(name)} (allowed: {', '.join(LOG_FORMATS)})")
    return preset


def time_unit_seconds(name: str | None) -> float | None:
    """Seconds per unit of ``--time-unit`` (s, ms, us, ns), or None when not given."""
    if name is None:
        return None
    unit = TIME_UNITS.get(name.strip().lower().replace("µs", "us"))
    if unit is None:
        raise ValidationError(
            f"--time-unit: {excerpt(name)} is not a time unit (allowed: {', '.join(TIME_UNITS)})"
        )
    return unit
