"""Reading a serving fleet's metrics from Prometheus' HTTP API (``fleetopt observe``, live drift).

**The metrics** are vLLM's (names and buckets from vllm-project/vllm: V1 engine
``vllm/v1/metrics/loggers.py`` at 005a810bc40f and ``vllm/v1/metrics/buckets.py`` at 139b1c3f1772;
the V0 engine's ``vllm/engine/metrics.py`` at 00c33e81b526). Every family carries the labels
``model_name`` and (V1) ``engine``; ``vllm:request_success_total`` also ``finished_reason``. Where
vLLM renamed a metric, :data:`VLLM_METRICS` lists the names newest first and the first one the
server has is read: ``vllm:kv_cache_usage_perc`` (V1) before ``vllm:gpu_cache_usage_perc`` (V0,
deprecated in 0.9); the per-request ``vllm:request_time_per_output_token_seconds`` (0.11+)
before the per-token ``vllm:inter_token_latency_seconds`` (0.11+) and
``vllm:time_per_output_token_seconds`` (its older name, per token despite the name). Bucket
edges are read from the data, never assumed: they changed between versions (V0's TTFT buckets
stopped at 10 s, V1's go to 2,560 s; token buckets are 1-2-5 steps up to ``--max-model-len``).

**Exact counts.** Prometheus' ``increase()`` extrapolates to the range's ends, so it is not a
whole number of requests. A counter sampled at both ends without a reset rose by exactly end −
start (one server-side pass over its raw samples); the others, and the request counter (for its
windows), are read at every step S and their rises added here, a drop being a reset after which
the counter counted up from zero (:func:`exact_increases`, :func:`request_windows`). With S no
longer than the scrape interval this is exact through restarts and failed scrapes; what a series
counted before its first sample in the span is not seen, and the reader says how many engines
started during the span. Load windows for calibration use the same rule in a subquery
(:func:`counted`).

**Pools.** Series are mapped to a plan's pools by one label: the pod name by default, as
``fleetopt export`` names pods (``<prefix>-<pool>-…``, the selector of its KEDA queries), or a
label of the user's choice whose value is the pool name (``--pool-label``). The mapping is done
in the query (``label_replace`` into ``fleetopt_pool``), so each metric is one query for all pools.

**Security.** The bearer token comes from an environment variable or a file (never the command
line), is sent only in the ``Authorization`` header and never appears in an error; the URL is
shown without user information or query; TLS certificates are verified (``--ca-file`` adds a CA);
every request has a timeout, and every query a server-side ``timeout``.
"""

from __future__ import annotations

import json
import math
import os
import re
import ssl
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fleetopt.core.histograms import Histogram, make_histogram
from fleetopt.core.observed import PoolObservation
from fleetopt.errors import FleetoptError, ValidationError

#: The environment variable read for a bearer token when no other is named.
DEFAULT_TOKEN_ENV = "PROMETHEUS_TOKEN"
#: Seconds a request may take (connect + answer) unless told otherwise.
DEFAULT_TIMEOUT_S = 30.0
#: Prometheus refuses a range query of more than 11,000 points per series; stay below it.
MAX_POINTS_PER_QUERY = 10_000
#: The label the queries put the pool name in.
POOL_LABEL = "fleetopt_pool"
#: The pool name of series that no pool claims, and of the whole fleet without a mapping.
ALL_POOLS = "all"

#: Role → vLLM metric names, newest first (module docstring). Histograms are named by family.
VLLM_METRICS: dict[str, tuple[str, ...]] = {
    "requests": ("vllm:request_success_total",),
    "prompt_tokens": ("vllm:request_prompt_tokens",),
    "generation_tokens": ("vllm:request_generation_tokens",),
    "ttft": ("vllm:time_to_first_token_seconds",),
    "tpot": (
        "vllm:request_time_per_output_token_seconds",
        "vllm:inter_token_latency_seconds",
        "vllm:time_per_output_token_seconds",
    ),
    "queue_time": ("vllm:request_queue_time_seconds",),
    "preemptions": ("vllm:num_preemptions_total",),
    "running": ("vllm:num_requests_running",),
    "waiting": ("vllm:num_requests_waiting",),
    "kv_usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
}
HISTOGRAM_ROLES = ("prompt_tokens", "generation_tokens", "ttft", "tpot", "queue_time")
#: The TPOT histogram that holds one value per request (the others hold one per output token).
PER_REQUEST_TPOT = "vllm:request_time_per_output_token_seconds"
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


class PrometheusError(FleetoptError):
    """Prometheus could not be read (unreachable, refused, a failed query): nothing usable came back."""


# -- the client ------------------------------------------------------------------------------------


def public_url(url: str) -> str:
    """``url`` without user information, query or fragment (what errors and documents show)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def read_bearer_token(token_env: str | None, token_file: Path | None) -> str | None:
    """The bearer token: the file's first line when given, else the named environment variable
    (default :data:`DEFAULT_TOKEN_ENV`) when set, else None. Never echoed."""
    if token_file is not None:
        try:
            text = Path(token_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or type(exc).__name__
            raise ValidationError(f"--token-file {token_file}: cannot read it ({reason})") from None
        token = text.strip().splitlines()[0].strip() if text.strip() else ""
        if not token:
            raise ValidationError(f"--token-file {token_file}: the file is empty")
        return token
    name = token_env or DEFAULT_TOKEN_ENV
    if token_env is not None and not os.environ.get(name):
        raise ValidationError(f"--token-env {name}: that environment variable is not set or empty")
    token = os.environ.get(name, "").strip()
    return token or None


@dataclass(frozen=True)
class PrometheusClient:
    """Prometheus' HTTP API at ``url`` (queries are POSTed as forms, answers read as JSON)."""

    url: str
    token: str | None = field(default=None, repr=False)
    timeout_s: float = DEFAULT_TIMEOUT_S
    ca_file: str | None = None
    what: str = "Prometheus"

    def __post_init__(self) -> None:
        parts = urllib.parse.urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValidationError(
                f"--prometheus {public_url(self.url) or self.url!r}: not an http(s) URL of a Prometheus "
                "server (e.g. http://prometheus:9090)"
            )
        if not (self.timeout_s > 0 and math.isfinite(self.timeout_s)):
            raise ValidationError(f"--timeout: {self.timeout_s!r} s must be positive")

    @property
    def shown(self) -> str:
        return public_url(self.url)

    def _context(self) -> ssl.SSLContext | None:
        if urllib.parse.urlsplit(self.url).scheme != "https":
            return None
        try:
            return ssl.create_default_context(cafile=self.ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise ValidationError(f"--ca-file {self.ca_file}: not a readable CA bundle ({exc})") from None

    def fetch(self, path: str, params: dict[str, Any] | None = None, *, post: bool = True) -> bytes:
        """The body of ``path`` under the URL (``params`` POSTed as a form, or in the URL when not
        ``post``); every failure a :class:`PrometheusError` that names the server, not the token."""
        base = self.url.rstrip("/")
        form = urllib.parse.urlencode(params or {}, doseq=True)
        if post:
            request = urllib.request.Request(f"{base}{path}", data=form.encode(), method="POST")
            request.add_header("Content-Type", "application/x-www-form-urlencoded")
        else:
            request = urllib.request.Request(f"{base}{path}{'?' + form if form else ''}", method="GET")
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        where = f"{self.what} at {self.shown}"
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s, context=self._context()) as answer:
                return answer.read()
        except urllib.error.HTTPError as exc:
            raise self._http_error(exc, path) from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, ssl.SSLCertVerificationError):
                raise PrometheusError(
                    f"{where}: its TLS certificate does not verify ({reason.verify_message}); "
                    "give the CA that signed it with --ca-file"
                ) from None
            if isinstance(reason, TimeoutError):
                raise PrometheusError(
                    f"{where} did not answer within {self.timeout_s:g} s (--timeout)"
                ) from None
            text = getattr(reason, "strerror", None) or str(reason)
            raise PrometheusError(f"cannot reach {where} ({text})") from None
        except TimeoutError:
            raise PrometheusError(f"{where} did not answer within {self.timeout_s:g} s (--timeout)") from None
        except OSError as exc:
            raise PrometheusError(f"cannot reach {where} ({exc.strerror or type(exc).__name__})") from None

    def get(self, path: str, params: dict[str, Any], *, post: bool = True) -> Any:
        """The ``data`` of Prometheus' JSON answer to ``path``."""
        raw = self.fetch(path, params, post=post)
        where = f"{self.what} at {self.shown}"
        try:
            document = json.loads(raw)
        except ValueError:
            raise PrometheusError(
                f"{where}: {path} did not answer with Prometheus' JSON (is the URL the server's base URL?)"
            ) from None
        if not isinstance(document, dict) or document.get("status") != "success":
            raise PrometheusError(f"{where}: {path} failed: {_api_error(document)}")
        return document.get("data")

    def _http_error(self, exc: urllib.error.HTTPError, path: str) -> PrometheusError:
        where = f"{self.what} at {self.shown}"
        if exc.code in (401, 403):
            how = (
                "the bearer token was refused"
                if self.token
                else f"it needs a bearer token (${DEFAULT_TOKEN_ENV}, --token-env or --token-file)"
            )
            return PrometheusError(f"{where} answered HTTP {exc.code} ({exc.reason}): {how}")
        if exc.code == 404:
            return PrometheusError(
                f"{where} has no {path} (HTTP 404): give the server's base URL, e.g. http://prometheus:9090"
            )
        try:
            detail = _api_error(json.loads(exc.read()))
        except (ValueError, OSError):
            detail = str(exc.reason)
        if exc.code == 503 and "timeout" in detail.lower():
            return PrometheusError(f"{where}: the query timed out on the server ({detail}); shorten --since")
        return PrometheusError(f"{where}: {path} answered HTTP {exc.code}: {detail}")

    def instant(self, query: str, at_s: float) -> list[tuple[dict[str, str], float]]:
        """An instant vector: (labels, value) per series."""
        data = self.get(
            "/api/v1/query", {"query": query, "time": f"{at_s:.3f}", "timeout": f"{self.timeout_s:g}s"}
        )
        if not isinstance(data, dict) or data.get("resultType") != "vector":
            raise PrometheusError(f"Prometheus at {self.shown}: an instant query did not return a vector")
        return [(item["metric"], float(item["value"][1])) for item in data["result"]]

    def range(
        self, query: str, start_s: float, end_s: float, step_s: float
    ) -> list[tuple[dict[str, str], np.ndarray, np.ndarray]]:
        """A range query (split into pieces of at most :data:`MAX_POINTS_PER_QUERY` steps, asked
        together): (labels, times, values) per series, times ascending."""
        steps = int(round((end_s - start_s) / step_s)) + 1
        pieces = []
        first = 0
        while first < steps:
            last = min(steps, first + MAX_POINTS_PER_QUERY) - 1
            pieces.append((start_s + first * step_s, start_s + last * step_s))
            first = last + 1

        def ask(piece: tuple[float, float]) -> Any:
            return self.get(
                "/api/v1/query_range",
                {"query": query, "start": f"{piece[0]:.3f}", "end": f"{piece[1]:.3f}",
                 "step": f"{step_s:g}", "timeout": f"{self.timeout_s:g}s"},
            )  # fmt: skip

        with ThreadPoolExecutor(max_workers=min(4, len(pieces))) as pool:
            answers = list(pool.map(ask, pieces))
        series: dict[tuple, tuple[dict[str, str], list[np.ndarray]]] = {}
        for data in answers:
            if not isinstance(data, dict) or data.get("resultType") != "matrix":
                raise PrometheusError(f"Prometheus at {self.shown}: a range query did not return a matrix")
            for item in data["result"]:
                key = tuple(sorted(item["metric"].items()))
                values = np.array(item["values"], dtype=np.float64).reshape(-1, 2)
                series.setdefault(key, (item["metric"], []))[1].append(values)
        out = []
        for labels, parts in series.values():
            values = np.concatenate(parts)
            out.append((labels, values[:, 0], values[:, 1]))
        return out

    def metric_names(self, selector: str, start_s: float, end_s: float) -> set[str]:
        """The names of the ``vllm:`` series that ``selector`` matches between start and end."""
        inner = selector_matchers(selector)
        match = '{__name__=~"vllm:.+"' + (f",{inner}" if inner else "") + "}"
        data = self.get(
            "/api/v1/label/__name__/values",
            {"match[]": match, "start": f"{start_s:.3f}", "end": f"{end_s:.3f}"},
            post=False,
        )
        if not isinstance(data, list):
            raise PrometheusError(f"Prometheus at {self.shown}: the label values did not come back as a list")
        return {str(name) for name in data}


def _api_error(document: Any) -> str:
    if isinstance(document, dict):
        kind, text = document.get("errorType"), document.get("error")
        if text:
            return f"{kind}: {str(text)[:300]}" if kind else str(text)[:300]
    return "not a Prometheus API answer"


# -- queries ---------------------------------------------------------------------------------------


def selector_matchers(selector: str | None) -> str:
    """The matchers inside ``--selector '{namespace="llm"}'`` (empty for none)."""
    if selector is None or not selector.strip():
        return ""
    text = selector.strip()
    if not (text.startswith("{") and text.endswith("}")):
        raise ValidationError(
            f"--selector {selector!r}: write label matchers in braces, e.g. '{{namespace=\"llm\"}}'"
        )
    return text[1:-1].strip().rstrip(",")


def promql_string(value: str) -> str:
    """``value`` as a PromQL double-quoted string literal."""
    return json.dumps(str(value), ensure_ascii=False)


@dataclass(frozen=True)
class PoolMapping:
    """How series map to pools: the source ``label`` and the ``regex`` whose group 1 is the pool
    (PromQL ``label_replace``), and the pools expected (None: whatever values the label has)."""

    label: str
    regex: str
    pools: tuple[str, ...] | None

    @staticmethod
    def by_pod_prefix(prefix: str, pools: tuple[str, ...]) -> PoolMapping:
        """Pods named as ``fleetopt export`` names them: ``<prefix>-<pool>-<hash>-<hash>``."""
        alternatives = "|".join(re.escape(p) for p in pools)
        return PoolMapping("pod", f"{re.escape(prefix)}-({alternatives})-.*", pools)

    @staticmethod
    def by_label(label: str, pools: tuple[str, ...] | None) -> PoolMapping:
        if not _LABEL_NAME.match(label):
            raise ValidationError(
                f"--pool-label {label!r}: not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)"
            )
        return PoolMapping(label, "(.+)", pools)

    @staticmethod
    def whole_fleet() -> PoolMapping:
        return PoolMapping("__fleetopt_no_label__", "(.+)", None)


def _series(name: str, matchers: str) -> str:
    return f"{name}{{{matchers}}}" if matchers else name


def counted(series: str, step_s: int) -> str:
    """Each series' rise between consecutive steps, a drop counting as a reset from zero."""
    before = f"({series} offset {step_s}s)"
    # "+ 0" drops the metric name on both sides: one series per label set across the steps
    return f"((({series} - {before}) >= 0) or (({series} + 0) < {before}))"


def by_pool(expression: str, mapping: PoolMapping, extra: str = "") -> str:
    """``sum by (fleetopt_pool[, extra])`` of ``expression`` with the pool label set from the mapping."""
    relabeled = (
        f'label_replace({expression}, {promql_string(POOL_LABEL)}, "$1", '
        f"{promql_string(mapping.label)}, {promql_string(mapping.regex)})"
    )
    return f"sum by ({POOL_LABEL}{', ' + extra if extra else ''}) ({relabeled})"


# -- reading a fleet -------------------------------------------------------------------------------


@dataclass(frozen=True)
class FleetRead:
    """What was read: per pool its observation, the metric names used per role, the span, and
    warnings naming what was missing or doubtful."""

    pools: tuple[PoolObservation, ...]
    metrics: dict[str, str]
    start_s: float
    end_s: float
    step_s: int
    window_s: int
    warnings: tuple[str, ...]
    source: str


def _key(labels: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in labels.items() if k != "__name__"))


def _pool_of(labels: dict[str, str], mapping: PoolMapping) -> str:
    """The pool a series belongs to, by the mapping's regex on its label (PromQL regexes are
    anchored at both ends, as ``re.fullmatch``)."""
    match = re.fullmatch(mapping.regex, labels.get(mapping.label, ""))
    return match.group(1) if match and match.group(1) else ALL_POOLS


def exact_increases(
    client: PrometheusClient,
    series: str,
    mapping: PoolMapping,
    extra: str,
    start: float,
    end: float,
    step_s: int,
    irregular_instances: frozenset[str] | None = None,
) -> list[tuple[dict[str, str], float]]:
    """Each pool's exact increase of the counters ``series`` selects over (start, end], summed by
    pool (and ``extra``, e.g. ``le``), as an instant vector with the pool in :data:`POOL_LABEL`.

    A series sampled at both ends without a reset in between rose by exactly end − start (two
    instant lookups on the server). The others — of engines that restarted, started, stopped or
    missed scrapes within the span (``irregular_instances``, known from the request counter read
    at every step; when None, found by ``resets`` and ``count_over_time`` passes over the span) —
    are read at every step (``query_range``, step ≤ the scrape interval) and their rises added
    here, a drop counting as a restart from zero (:func:`fleetopt.core.histograms.counter_increase`):
    exact across restarts and failed scrapes, from each series' first sample in the span.
    """
    from fleetopt.core.histograms import counter_increase

    span = int(end - start)
    window = f"[{span * 1000 - 1}ms]"
    totals: dict[tuple[str, str], float] = {}

    def add(labels: dict[str, str], value: float) -> None:
        key = (_pool_of(labels, mapping), labels.get(extra, "") if extra else "")
        totals[key] = totals.get(key, 0.0) + value

    irregular: list[dict[str, str]] = []
    if irregular_instances is None:
        regular = client.instant(
            f"({series} - ({series} offset {span}s)) unless (resets({series}{window}) > 0)", end
        )
        present = client.instant(f"count_over_time({series}{window})", end)
        seen = {_key(labels) for labels, _ in regular}
        irregular = [labels for labels, _ in present if _key(labels) not in seen]
    else:
        regular = [
            (labels, value)
            for labels, value in client.instant(f"{series} - ({series} offset {span}s)", end)
            if labels.get("instance") not in irregular_instances
        ]
        irregular = [{"instance": i} for i in sorted(irregular_instances)]
    for labels, value in regular:
        add(labels, value)
    if irregular:
        instances = sorted({labels.get("instance", "") for labels in irregular})
        narrowed = series
        if all(instances):
            inner = f"instance=~{promql_string('|'.join(re.escape(i) for i in instances))}"
            narrowed = series[:-1] + f",{inner}}}" if series.endswith("}") else f"{series}{{{inner}}}"
        wanted = {_key(labels) for labels in irregular}
        for labels, _, values in client.range(narrowed, start, end, step_s):
            if _key(labels) in wanted or labels.get("instance") in (irregular_instances or ()):
                add(labels, counter_increase(values)[0])
    out = []
    for (pool, extra_value), value in totals.items():
        labels = {POOL_LABEL: pool}
        if extra:
            labels[extra] = extra_value
        out.append((labels, value))
    return out


@dataclass(frozen=True)
class RequestWindows:
    """Per pool: finished requests per window (window k covers (start + k·W, start + (k+1)·W]),
    and how many series restarted, started after the span's start, or missed scrapes for longer
    than the lookback."""

    counts: dict[str, np.ndarray]
    resets: dict[str, int]
    appeared: dict[str, int]
    gaps: dict[str, int]
    irregular_instances: frozenset[str] | None = None


def request_windows(
    client: PrometheusClient,
    series: str,
    mapping: PoolMapping,
    start: float,
    end: float,
    step_s: int,
    window_s: int,
) -> RequestWindows:
    """The request counter of every engine read at every step (summed over ``finished_reason``
    within the engine, which restarts as one), its rises added per window — a drop counting as a
    restart from zero, a rise across missed scrapes credited to the window where they resume — so
    the windows add up to the exact count of every engine from its first sample in the span."""
    from fleetopt.core.histograms import counter_increase

    windows = int(round((end - start) / window_s))
    counts: dict[str, np.ndarray] = {}
    resets: dict[str, int] = {}
    appeared: dict[str, int] = {}
    gaps: dict[str, int] = {}
    irregular: set[str] | None = set()
    for labels, times, values in client.range(
        f"sum without (finished_reason) ({series})", start, end, step_s
    ):
        pool = _pool_of(labels, mapping)
        instance = labels.get("instance")
        if instance is None:
            irregular = None
        elif irregular is not None and (
            values.size < 2 or times[0] > start + 0.5 * step_s or times[-1] < end - 0.5 * step_s
            or np.any(np.diff(times) > 1.5 * step_s) or np.any(np.diff(values) < 0)
        ):  # fmt: skip
            irregular.add(instance)
        if values.size < 2:
            continue
        rises = np.diff(values)
        rises = np.where(rises < 0, values[1:], rises)
        index = np.clip(np.ceil((times[1:] - start) / window_s).astype(np.int64) - 1, 0, windows - 1)
        counts[pool] = counts.get(pool, np.zeros(windows)) + np.bincount(index, rises, minlength=windows)
        resets[pool] = resets.get(pool, 0) + counter_increase(values)[1]
        appeared[pool] = appeared.get(pool, 0) + int(times[0] > start + 0.5 * step_s)
        gaps[pool] = gaps.get(pool, 0) + int(np.any(np.diff(times) > 1.5 * step_s))
    return RequestWindows(counts, resets, appeared, gaps, None if irregular is None else frozenset(irregular))


def resolve_metric(role: str, present: set[str]) -> str | None:
    """The first of the role's names (:data:`VLLM_METRICS`, newest first) that the server has."""
    names = VLLM_METRICS[role]
    sample = (lambda n: n + "_bucket") if role in HISTOGRAM_ROLES else (lambda n: n)
    return next((n for n in names if sample(n) in present), None)


def aligned_span(end_s: float, since_s: float, window_s: int) -> tuple[float, float]:
    """(start, end) with both on multiples of the window (end rounded down)."""
    end = math.floor(end_s / window_s) * window_s
    start = end - math.ceil(since_s / window_s) * window_s
    return float(start), float(end)


def read_fleet(
    client: PrometheusClient,
    *,
    since_s: float,
    end_s: float,
    mapping: PoolMapping,
    selector: str | None = None,
    step_s: int = 15,
    window_s: int = 60,
) -> FleetRead:
    """Read every pool's counts, histograms and gauges over the ``since_s`` seconds before ``end_s``.

    Raises PrometheusError when the server cannot be read or has no vLLM metric under the selector.
    """
    if step_s < 1 or window_s < step_s or window_s % step_s:
        raise ValidationError(
            f"--step {step_s} s and --window {window_s} s: whole seconds, the window a multiple of the step"
        )
    start, end = aligned_span(end_s, since_s, window_s)
    range_s = int(end - start)
    if range_s < window_s:
        raise ValidationError(f"--since: {since_s:g} s is shorter than one window ({window_s} s)")
    matchers = selector_matchers(selector)
    present = client.metric_names(selector or "", start, end)
    if not present:
        raise PrometheusError(
            f"Prometheus at {client.shown} has no vLLM metric (vllm:*) matching "
            f"{selector or 'any series'} between {_iso(start)} and {_iso(end)}: is this another engine, "
            "another selector, or a span without data?"
        )
    metrics: dict[str, str] = {}
    warnings: list[str] = []
    for role, names in VLLM_METRICS.items():
        probe = {n + "_bucket" for n in names} if role in HISTOGRAM_ROLES else set(names)
        found = resolve_metric(role, present)
        if found is None:
            warnings.append(
                f"no {' or '.join(sorted(probe))} under the selector: {_ROLE_WORDS[role]} not reported"
            )
        else:
            metrics[role] = found
    if "requests" not in metrics:
        raise PrometheusError(
            f"Prometheus at {client.shown}: no vllm:request_success_total matching "
            f"{selector or 'any series'}; "
            f"it has {', '.join(sorted(present)[:8])}{'…' if len(present) > 8 else ''} (another vLLM version "
            "or engine?)"
        )
    requests_series = _series(metrics["requests"], matchers)
    queries: dict[str, tuple[str, ...]] = {"requests": ("windows", requests_series, "")}
    for role in HISTOGRAM_ROLES:
        if role in metrics:
            for part, extra in (("_bucket", "le"), ("_sum", "")):
                series = _series(metrics[role] + part, matchers)
                queries[role + part] = ("increase", series, extra)
    if "preemptions" in metrics:
        queries["preemptions"] = ("increase", _series(metrics["preemptions"], matchers), "")
    for role in ("running", "waiting", "kv_usage"):
        if role in metrics:
            series = _series(metrics[role], matchers)
            queries[role + "_mean"] = ("instant", by_pool(f"avg_over_time({series}[{range_s}s])", mapping))
            queries[role + "_count"] = (
                "instant",
                by_pool(f"count_over_time({series}[{range_s}s]) > 0 ", mapping).replace(
                    "sum by", "count by", 1
                ),
            )
    if "waiting" in metrics:
        series = _series(metrics["waiting"], matchers)
        queries["waiting_max"] = (
            "instant",
            by_pool(f"max_over_time({series}[{range_s}s])", mapping).replace("sum by", "max by", 1),
        )
    if "kv_usage" in metrics:
        series = _series(metrics["kv_usage"], matchers)
        queries["kv_usage_max"] = (
            "instant",
            by_pool(f"max_over_time({series}[{range_s}s])", mapping).replace("sum by", "max by", 1),
        )

    def run(item: tuple[str, tuple[str, ...]]) -> tuple[str, Any]:
        key, (kind, query, *extra) = item
        if kind == "instant":
            return key, client.instant(query, end)
        if kind == "increase":
            return key, exact_increases(client, query, mapping, extra[0], start, end, step_s)
        if kind == "windows":
            return key, request_windows(client, query, mapping, start, end, step_s, window_s)
        return key, client.range(query, start + window_s, end, window_s)

    first = dict([run(("requests", queries.pop("requests")))])
    irregular = first["requests"].irregular_instances

    def run_rest(item: tuple[str, tuple[str, ...]]) -> tuple[str, Any]:
        key, (kind, query, *extra) = item
        if kind == "increase":
            return key, exact_increases(client, query, mapping, extra[0], start, end, step_s, irregular)
        return run(item)

    with ThreadPoolExecutor(max_workers=6) as pool_executor:
        answers = {**first, **dict(pool_executor.map(run_rest, queries.items()))}
    pools = _assemble(answers, metrics, mapping, start, end, window_s, warnings)
    source = f"prometheus {client.shown} {selector or '{}'} {_iso(start)}..{_iso(end)}"
    return FleetRead(tuple(pools), metrics, start, end, step_s, window_s, tuple(warnings), source)


_ROLE_WORDS = {
    "requests": "requests",
    "prompt_tokens": "prompt lengths (the workload)",
    "generation_tokens": "output lengths (the workload)",
    "ttft": "TTFT and SLO attainment",
    "tpot": "TPOT",
    "queue_time": "queueing time",
    "preemptions": "preemptions",
    "running": "running requests",
    "waiting": "waiting requests",
    "kv_usage": "KV-cache usage",
}


def _iso(moment_s: float) -> str:
    return str(np.datetime64(int(moment_s), "s")) + "Z"


def _by_pool(vector: list[tuple[dict[str, str], float]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for labels, value in vector:
        name = labels.get(POOL_LABEL) or ALL_POOLS
        out[name] = out.get(name, 0.0) + value
    return out


def _histograms(
    buckets: list[tuple[dict[str, str], float]], sums: list[tuple[dict[str, str], float]], what: str
) -> dict[str, Histogram]:
    edges: dict[str, dict[float, float]] = {}
    for labels, value in buckets:
        pool = labels.get(POOL_LABEL) or ALL_POOLS
        le = float(labels.get("le", "nan").replace("+Inf", "inf"))
        edges.setdefault(pool, {})
        edges[pool][le] = edges[pool].get(le, 0.0) + value
    totals = _by_pool(sums)
    out = {}
    for pool, counts in edges.items():
        ordered = sorted(counts)
        out[pool] = make_histogram(
            ordered, [counts[e] for e in ordered], totals.get(pool), f"{what}, pool {pool}"
        )
    return out


def _assemble(
    answers: dict[str, Any],
    metrics: dict[str, str],
    mapping: PoolMapping,
    start: float,
    end: float,
    window_s: int,
    warnings: list[str],
) -> list[PoolObservation]:
    counted_windows: RequestWindows = answers["requests"]
    requests = {pool: float(c.sum()) for pool, c in counted_windows.counts.items()}
    names = list(mapping.pools) if mapping.pools is not None else sorted(requests)
    if mapping.pools is not None and ALL_POOLS in requests and ALL_POOLS not in mapping.pools:
        warnings.append(
            f"{requests[ALL_POOLS]:,.0f} requests came from series that match no pool "
            f"({mapping.label} not matching {mapping.regex}); they are left out"
        )
    hist = {
        role: _histograms(answers[role + "_bucket"], answers[role + "_sum"], metrics[role])
        for role in HISTOGRAM_ROLES
        if role in metrics
    }
    gauges = {key: _by_pool(answers[key]) for key in answers if key.endswith(("_mean", "_max", "_count"))}
    preemptions = _by_pool(answers["preemptions"]) if "preemptions" in answers else {}
    resets, appeared, gaps = counted_windows.resets, counted_windows.appeared, counted_windows.gaps
    windows: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for pool, values in counted_windows.counts.items():
        windows[pool] = (start + window_s * np.arange(values.size, dtype=np.float64), values)
    pools = []
    for name in names:
        if name not in requests:
            warnings.append(f"pool {name}: no series of it under the selector (no instance reported)")
        missing = tuple(
            metrics[role] for role in HISTOGRAM_ROLES if role in metrics and name not in hist[role]
        )
        notes = []
        if resets.get(name):
            notes.append(f"{resets[name]:.0f} counter reset(s) (an engine restarted): counted from zero")
        if appeared.get(name):
            notes.append(
                f"{appeared[name]} engine(s) started during the span: what they counted before their "
                "first sample is not seen"
            )
        if gaps.get(name):
            notes.append(
                f"{gaps[name]} engine(s) missed scrapes for longer than the lookback: their requests "
                "across the gap are counted in the window where the scrapes resumed"
            )
        times, counts = windows.get(name, (np.zeros(0), np.zeros(0)))
        instances = gauges.get("running_count", {}).get(name)
        kv_count = gauges.get("kv_usage_count", {}).get(name)
        kv_mean = gauges.get("kv_usage_mean", {}).get(name)
        tpot_name = metrics.get("tpot")
        pools.append(
            PoolObservation(
                pool=name,
                span_s=end - start,
                end_s=end,
                instances=int(instances or 0),
                requests=requests.get(name, 0.0),
                window_s=float(window_s),
                window_starts_s=times,
                window_counts=counts,
                ttft=hist.get("ttft", {}).get(name),
                tpot=hist.get("tpot", {}).get(name),
                tpot_per_request=tpot_name == PER_REQUEST_TPOT,
                prompt_tokens=hist.get("prompt_tokens", {}).get(name),
                generation_tokens=hist.get("generation_tokens", {}).get(name),
                queue_time=hist.get("queue_time", {}).get(name),
                preemptions=preemptions.get(name) if "preemptions" in metrics else None,
                running_mean=gauges.get("running_mean", {}).get(name),
                waiting_mean=gauges.get("waiting_mean", {}).get(name),
                waiting_max=gauges.get("waiting_max", {}).get(name),
                kv_usage_mean=None if not kv_count or kv_mean is None else kv_mean / kv_count,
                kv_usage_max=gauges.get("kv_usage_max", {}).get(name),
                resets=int(resets.get(name, 0)),
                missing=missing,
                notes=tuple(notes),
            )
        )
    return pools


def read_load_windows(
    client: PrometheusClient,
    *,
    since_s: float,
    end_s: float,
    mapping: PoolMapping,
    selector: str | None = None,
    step_s: int = 15,
    window_s: int = 600,
) -> tuple[dict[str, Any], list[str]]:
    """Per pool, per window with finished requests: the exact means (``_sum``/``_count`` increases)
    of prompt and output tokens, TPOT and TTFT − queue time, and the time-averaged running requests
    per instance, as a :class:`fleetopt.core.calibrate.Benchmark` (one row per window)."""
    from fleetopt.core.calibrate import Benchmark

    start, end = aligned_span(end_s, since_s, window_s)
    matchers = selector_matchers(selector)
    present = client.metric_names(selector or "", start, end)
    needed = ("prompt_tokens", "generation_tokens", "ttft", "tpot", "queue_time", "running")
    metrics: dict[str, str] = {}
    for role in needed:
        found = resolve_metric(role, present)
        if found is None:
            raise PrometheusError(
                f"Prometheus at {client.shown}: no {' or '.join(VLLM_METRICS[role])} under "
                f"{selector or 'any series'}; "
                "calibration needs token, TTFT, TPOT and queue-time histograms and the running gauge"
            )
        metrics[role] = found
    warnings = []
    if metrics["tpot"] != PER_REQUEST_TPOT:
        warnings.append(f"TPOT is {metrics['tpot']} (per output token): its mean is token-weighted")
    window = f"[{window_s * 1000 - 1}ms:{step_s}s]"
    queries = {}
    for role in needed[:-1]:
        for part in ("_sum", "_count"):
            series = _series(metrics[role] + part, matchers)
            queries[role + part] = by_pool(f"sum_over_time({counted(series, step_s)}{window})", mapping)
    running = _series(metrics["running"], matchers)
    queries["running"] = by_pool(f"avg_over_time({running}[{window_s}s])", mapping)
    queries["instances"] = by_pool(f"count_over_time({running}[{window_s}s]) > 0", mapping).replace(
        "sum by", "count by", 1
    )

    def run(item: tuple[str, str]) -> tuple[str, dict[str, dict[float, float]]]:
        key, query = item
        out: dict[str, dict[float, float]] = {}
        for labels, times, values in client.range(query, start + window_s, end, window_s):
            pool = labels.get(POOL_LABEL) or ALL_POOLS
            row = out.setdefault(pool, {})
            for t, v in zip(times.tolist(), values.tolist(), strict=True):
                row[t] = row.get(t, 0.0) + v
        return key, out

    with ThreadPoolExecutor(max_workers=6) as executor:
        answers = dict(executor.map(run, queries.items()))
    pools: dict[str, Any] = {}
    for pool, counts in answers["ttft_count"].items():
        times = sorted(t for t, n in counts.items() if n > 0)

        def mean(role: str, times=times, pool=pool) -> np.ndarray:
            sums, counts = answers[role + "_sum"].get(pool, {}), answers[role + "_count"].get(pool, {})
            return np.array([sums.get(t, np.nan) / counts[t] if counts.get(t) else np.nan for t in times])

        running, instances = answers["running"].get(pool, {}), answers["instances"].get(pool, {})
        per_instance = np.array([running.get(t, np.nan) / instances.get(t, np.nan) for t in times])
        columns = (per_instance, mean("prompt_tokens"), mean("generation_tokens"),
                   mean("ttft") - mean("queue_time"), mean("tpot"))  # fmt: skip
        usable = np.all([np.isfinite(c) for c in columns], axis=0) & (columns[3] > 0) & (columns[4] > 0)
        pools[pool] = Benchmark(*(np.asarray(c)[usable] for c in columns))
    return pools, warnings
