"""A real Prometheus on loopback, loaded with vLLM-format series whose every count is known.

:func:`make_fleet` draws requests per pod and scrape interval (seeded), keeps the truth (every
request's prompt and output tokens, TTFT, TPOT, queue time and finish time), and turns it into
the cumulative series vLLM publishes (names, labels and buckets as in vllm/v1/metrics/loggers.py:
``model_name``, ``engine``, ``finished_reason`` on the request counter, the 1-2-5 token buckets up
to ``max_model_len``). :func:`openmetrics` writes them with timestamps for
``promtool tsdb create-blocks-from openmetrics``; :func:`exposition` writes one instant as an
engine's ``/metrics`` page. :class:`PrometheusServer` backfills the blocks and starts the Debian
``prometheus`` binary on a free loopback port with a temporary data folder, and always stops it.

Used by tests/test_observe_prometheus.py, benchmarks/observe_prometheus.py and
scripts/gen_observe_docs.py.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

TTFT_EDGES = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
              20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)  # fmt: skip
TPOT_EDGES = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
              20.0, 40.0, 80.0)  # fmt: skip
LATENCY_EDGES = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0,
                 240.0, 480.0, 960.0, 1920.0, 7680.0)  # fmt: skip
MODEL = "meta-llama/Llama-3.1-70B-Instruct"


def one_two_five(limit: int) -> tuple[int, ...]:
    edges, scale = [], 1
    while True:
        for mantissa in (1, 2, 5):
            if mantissa * scale > limit:
                return tuple(edges)
            edges.append(mantissa * scale)
        scale *= 10


@dataclass
class Pod:
    """One engine's truth: per request its finish time, tokens and latencies; its restarts and gaps."""

    name: str
    pool: str
    max_model_len: int
    finish_s: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    ttft_s: np.ndarray
    tpot_s: np.ndarray
    queue_s: np.ndarray
    running: np.ndarray  # per scrape
    waiting: np.ndarray
    kv_usage: np.ndarray
    preempted_s: np.ndarray  # times of preemptions
    restart_at_s: float | None = None
    gap_s: tuple[float, float] | None = None
    legacy: bool = False  # an older vLLM: V0 names (gpu_cache_usage_perc, per-token TPOT only)


@dataclass
class Fleet:
    scrape_s: int
    start_s: float
    end_s: float
    pods: list[Pod] = field(default_factory=list)

    @property
    def times(self) -> np.ndarray:
        return np.arange(self.start_s, self.end_s + 0.5 * self.scrape_s, self.scrape_s)


def make_fleet(
    *,
    pools: dict[str, tuple[int, float, int, float, int]],
    legacy: tuple[str, ...] = (),
    start_s: float,
    hours: float,
    scrape_s: int = 15,
    seed: int = 7,
    restart: str | None = None,
    gap: str | None = None,
) -> Fleet:
    """``pools``: name → (pods, req/s per pod, max_model_len, median TTFT s, median prompt tokens).
    ``restart``: a pod that restarts (right after a scrape) halfway; ``gap``: a pod with 10 min of
    failed scrapes at a quarter of the span."""
    rng = np.random.default_rng(seed)
    fleet = Fleet(scrape_s, float(start_s), float(start_s + hours * 3600))
    times = fleet.times
    for pool, (pods, rate, max_len, ttft_median, prompt_median) in pools.items():
        for k in range(pods):
            name = f"fleetopt-{pool}-7d9c{k}-x{k}q"
            n = rng.poisson(rate * (fleet.end_s - fleet.start_s))
            # finishing strictly inside the span and never on a scrape instant
            finish = np.sort(fleet.start_s + rng.uniform(0.001, fleet.end_s - fleet.start_s - 0.001, n))
            prompt = np.clip(np.rint(rng.lognormal(np.log(prompt_median), 0.9, n)), 1, max_len // 2).astype(
                int
            )
            output = np.clip(np.rint(rng.lognormal(np.log(180), 0.8, n)), 1, max_len // 2).astype(int)
            ttft = rng.lognormal(np.log(ttft_median), 0.6, n)
            tpot = rng.lognormal(np.log(0.03), 0.3, n)
            queue = rng.exponential(ttft_median / 3, n)
            steps = times.size
            fleet.pods.append(
                Pod(
                    name, pool, max_len, finish, prompt, output, ttft, tpot, queue,
                    running=rng.integers(5, 60, steps).astype(float),
                    waiting=rng.integers(0, 8, steps).astype(float),
                    kv_usage=rng.uniform(0.2, 0.9, steps),
                    preempted_s=np.sort(rng.uniform(fleet.start_s, fleet.end_s, rng.poisson(0.05 * steps))),
                )
            )  # fmt: skip
    for pod in fleet.pods:
        pod.legacy = pod.pool in legacy
    if restart is not None:
        pod = next(p for p in fleet.pods if p.name == restart)
        middle = times[times.size // 2]
        pod.restart_at_s = float(middle + 0.0005)
    if gap is not None:
        pod = next(p for p in fleet.pods if p.name == gap)
        begin = times[times.size // 4]
        pod.gap_s = (float(begin), float(begin + 600))
    return fleet


def _cumulative_at(events_s: np.ndarray, weights: np.ndarray | None, times: np.ndarray) -> np.ndarray:
    order = np.searchsorted(events_s, times, side="right")
    if weights is None:
        return order.astype(float)
    cum = np.concatenate(([0.0], np.cumsum(weights)))
    return cum[order]


def pod_series(pod: Pod, times: np.ndarray) -> dict[tuple[str, tuple[tuple[str, str], ...]], np.ndarray]:
    """Every series of the pod at ``times``: (name, labels) → values, counters restarting at
    ``restart_at_s`` (counting from zero after it), NaN where a scrape failed."""

    def counter(events: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        values = _cumulative_at(events, weights, times)
        if pod.restart_at_s is not None:
            before = _cumulative_at(events, weights, np.array([pod.restart_at_s]))[0]
            values = np.where(times >= pod.restart_at_s, values - before, values)
        return values

    base = (("engine", "0"), ("model_name", MODEL))
    out: dict = {}
    out[("vllm:request_success_total", (*base, ("finished_reason", "stop")))] = counter(pod.finish_s)
    out[("vllm:request_success_total", (*base, ("finished_reason", "length")))] = np.zeros(times.size)
    out[("vllm:num_preemptions_total", base)] = counter(pod.preempted_s)
    for family, values, edges in (
        ("vllm:request_prompt_tokens", pod.prompt, one_two_five(pod.max_model_len)),
        ("vllm:request_generation_tokens", pod.output, one_two_five(pod.max_model_len)),
        ("vllm:time_to_first_token_seconds", pod.ttft_s, TTFT_EDGES),
        ("vllm:request_time_per_output_token_seconds", pod.tpot_s, TPOT_EDGES),
        ("vllm:request_queue_time_seconds", pod.queue_s, LATENCY_EDGES),
    ):
        for edge in (*edges, float("inf")):
            label = "+Inf" if edge == float("inf") else f"{float(edge)}"
            out[(family + "_bucket", (*base, ("le", label)))] = counter(pod.finish_s[values <= edge])
        out[(family + "_count", base)] = counter(pod.finish_s)
        out[(family + "_sum", base)] = counter(pod.finish_s, values.astype(float))
    out[("vllm:num_requests_running", base)] = pod.running
    out[("vllm:num_requests_waiting", base)] = pod.waiting
    out[("vllm:kv_cache_usage_perc", base)] = pod.kv_usage
    if pod.legacy:
        renamed = {
            "vllm:kv_cache_usage_perc": "vllm:gpu_cache_usage_perc",
            "vllm:request_time_per_output_token_seconds": "vllm:time_per_output_token_seconds",
        }
        out = {(_rename(name, renamed), labels): values for (name, labels), values in out.items()}
    if pod.gap_s is not None:
        failed = (times > pod.gap_s[0]) & (times <= pod.gap_s[1])
        for key in out:
            out[key] = np.where(failed, np.nan, out[key])
    return out


def _rename(name: str, renamed: dict[str, str]) -> str:
    for old, new in renamed.items():
        if name.startswith(old):
            return new + name[len(old) :]
    return name


_TYPES = {"_bucket": "histogram", "_count": "histogram", "_sum": "histogram", "_total": "counter"}


def _family(name: str) -> tuple[str, str]:
    for suffix, kind in _TYPES.items():
        if name.endswith(suffix):
            return name[: -len(suffix)], kind
    return name, "gauge"


def _labels(pod: Pod, labels: tuple[tuple[str, str], ...]) -> str:
    namespace = "legacy" if pod.legacy else "llm"
    every = (("instance", f"{pod.name}:8000"), ("job", "vllm"), ("namespace", namespace), ("pod", pod.name),
             *labels)  # fmt: skip
    return ",".join(f'{k}="{v}"' for k, v in every)


def openmetrics(fleet: Fleet, path: Path) -> None:
    """The fleet's series as OpenMetrics text with timestamps (one family at a time)."""
    times = fleet.times
    families: dict[str, tuple[str, list]] = {}
    for pod in fleet.pods:
        for (name, labels), values in pod_series(pod, times).items():
            family, kind = _family(name)
            families.setdefault(family, (kind, []))[1].append((name, _labels(pod, labels), values))
    stamps = [f"{t:.3f}" for t in times]
    with open(path, "w", encoding="utf-8") as out:
        for family, (kind, series) in families.items():
            out.write(f"# TYPE {family} {kind}\n")
            for name, labels, values in series:
                head = f"{name}{{{labels}}} "
                out.writelines(
                    f"{head}{v:.17g} {s}\n" for v, s in zip(values.tolist(), stamps, strict=True) if v == v
                )
        out.write("# EOF\n")


def exposition(fleet: Fleet, pod: Pod, at_s: float) -> str:
    """The pod's ``/metrics`` page at ``at_s`` (Prometheus text format 0.0.4, as vLLM serves it),
    its process started at the fleet's start."""
    lines = ["# TYPE process_start_time_seconds gauge", f"process_start_time_seconds {fleet.start_s:.3f}"]
    typed: set[str] = set()
    for (name, labels), values in pod_series(pod, np.array([at_s])).items():
        family, kind = _family(name)
        if family not in typed:
            typed.add(family)
            lines.append(f"# TYPE {family} {kind}")
        text = ",".join(f'{k}="{v}"' for k, v in labels)
        lines.append(f"{name}{{{text}}} {values[0]:.17g}")
    return "\n".join(lines) + "\n"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def prometheus_available() -> str | None:
    """Why a real Prometheus cannot run here (None when it can)."""
    if shutil.which("prometheus") is None or shutil.which("promtool") is None:
        return "Debian's prometheus package is not installed (apt-get install prometheus; .ci/run does)"
    return None


class PrometheusServer:
    """``prometheus`` on 127.0.0.1:<free port> over a temporary data folder holding ``fleet``'s
    blocks (backfilled with promtool). Use as a context manager; always stopped and removed."""

    def __init__(self, fleet: Fleet | None, *, config: str = "global:\n  scrape_interval: 15s\n",
                 start_timeout_s: float = 30.0, keep: Path | None = None):  # fmt: skip
        """``keep``: a folder kept between runs (its blocks are reused when present)."""
        self.fleet = fleet
        self.config = config
        self.start_timeout_s = start_timeout_s
        self.keep = keep
        self.folder = (
            Path(keep) if keep is not None else Path(tempfile.mkdtemp(prefix="fleetopt-prometheus-"))
        )
        self.process: subprocess.Popen | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> PrometheusServer:
        try:
            data = self.folder / "data"
            reuse = self.keep is not None and data.is_dir() and any(data.glob("01*"))
            data.mkdir(parents=True, exist_ok=True)
            if self.fleet is not None and not reuse:
                text = self.folder / "series.om"
                openmetrics(self.fleet, text)
                subprocess.run(
                    ["promtool", "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=168h",
                     str(text), str(data)],
                    check=True, capture_output=True, timeout=600,
                )  # fmt: skip
                text.unlink()
            (self.folder / "prometheus.yml").write_text(self.config, encoding="utf-8")
            self.port = free_port()
            self.process = subprocess.Popen(
                ["prometheus", f"--config.file={self.folder / 'prometheus.yml'}",
                 f"--storage.tsdb.path={data}", f"--web.listen-address=127.0.0.1:{self.port}",
                 "--storage.tsdb.retention.time=60d", "--query.max-samples=200000000"],
                stdout=subprocess.DEVNULL, stderr=open(self.folder / "log.txt", "wb"),
            )  # fmt: skip
            deadline = time.monotonic() + self.start_timeout_s
            while True:
                try:
                    with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as answer:
                        if answer.status == 200:
                            break
                except OSError:
                    pass
                if self.process.poll() is not None or time.monotonic() > deadline:
                    log = (self.folder / "log.txt").read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"prometheus did not start:\n{log}")
                time.sleep(0.1)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if self.keep is None:
            shutil.rmtree(self.folder, ignore_errors=True)
