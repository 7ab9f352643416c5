"""The gateway's counters: kept in memory, and exported to Prometheus when ``prometheus_client`` is
installed (the ``gateway`` extra installs it).

- ``fleetopt_gateway_requests_total{pool, outcome}``: requests sent to each pool; outcome routed,
  compressed, spilled, fallback (compression could not reach the target) or multimodal;
- ``fleetopt_gateway_spilled_total{from_pool, to_pool}``: requests spilled from a saturated pool;
- ``fleetopt_gateway_compressed_tokens_total``: prompt tokens removed by compression;
- ``fleetopt_gateway_not_compressed_total{reason}``: band requests left as they are: content (code,
  structured data), sentences (the first 3 and last 2 alone are too long), estimate, too_short, empty;
- ``fleetopt_gateway_rejected_total{category}``: requests longer than every pool;
- ``fleetopt_gateway_estimate_error_tokens{category}``: a histogram of estimated − actual prompt
  tokens (negative: the estimate was short);
- ``fleetopt_gateway_bytes_per_token{category}``: the estimator's ĉ;
- ``fleetopt_gateway_in_flight{pool}``: requests in flight;
- ``fleetopt_gateway_shadow_band_total{compressible}``: with ``shadow_compression``, band requests
  the plan does not compress, and whether the compressor could have (yes / no): their ratio is the
  p_c of this traffic for ``fleetopt plan --compressibility``.
"""

from __future__ import annotations

from collections import Counter

#: Histogram edges of the estimate error, tokens (negative: the estimate was short).
ERROR_BUCKETS = (-4096, -1024, -256, -64, -16, -1, 0, 16, 64, 256, 1024, 4096)


class GatewayMetrics:
    """Counters in memory (``counts``) and, when available, in a Prometheus registry of their own."""

    def __init__(self, prometheus: bool = True):
        self.counts: Counter[tuple] = Counter()
        self.registry = None
        if prometheus:
            try:
                import prometheus_client as p
            except ImportError:  # pragma: no cover - the gateway extra installs it
                return
            self.registry = p.CollectorRegistry()
            r = self.registry
            self._requests = p.Counter(
                "fleetopt_gateway_requests", "Requests sent to each pool", ["pool", "outcome"], registry=r
            )
            self._spilled = p.Counter(
                "fleetopt_gateway_spilled", "Requests spilled", ["from_pool", "to_pool"], registry=r
            )
            self._cut = p.Counter("fleetopt_gateway_compressed_tokens", "Prompt tokens removed", registry=r)
            self._not = p.Counter(
                "fleetopt_gateway_not_compressed", "Band requests not compressed", ["reason"], registry=r
            )
            self._rejected = p.Counter(
                "fleetopt_gateway_rejected", "Requests longer than every pool", ["category"], registry=r
            )
            self._error = p.Histogram(
                "fleetopt_gateway_estimate_error_tokens", "Estimated minus actual prompt tokens",
                ["category"], buckets=ERROR_BUCKETS, registry=r,
            )  # fmt: skip
            self._ratio = p.Gauge(
                "fleetopt_gateway_bytes_per_token", "The estimator's ratio", ["category"], registry=r
            )
            self._load = p.Gauge("fleetopt_gateway_in_flight", "Requests in flight", ["pool"], registry=r)
            self._shadow = p.Counter(
                "fleetopt_gateway_shadow_band", "Band requests and whether they could be compressed",
                ["compressible"], registry=r,
            )  # fmt: skip

    def routed(self, pool: str, outcome: str, in_flight: int) -> None:
        self.counts["requests", pool, outcome] += 1
        if self.registry is not None:
            self._requests.labels(pool, outcome).inc()
            self._load.labels(pool).set(in_flight)

    def in_flight(self, pool: str, value: int) -> None:
        if self.registry is not None:
            self._load.labels(pool).set(value)

    def spilled(self, from_pool: str, to_pool: str) -> None:
        self.counts["spilled", from_pool, to_pool] += 1
        if self.registry is not None:
            self._spilled.labels(from_pool, to_pool).inc()

    def compressed(self, before_tokens: int, after_tokens: int) -> None:
        self.counts["compressed_tokens"] += before_tokens - after_tokens
        if self.registry is not None:
            self._cut.inc(max(0, before_tokens - after_tokens))

    def not_compressed(self, reason: str) -> None:
        self.counts["not_compressed", reason] += 1
        if self.registry is not None:
            self._not.labels(reason).inc()

    def rejected(self, category: str) -> None:
        self.counts["rejected", category] += 1
        if self.registry is not None:
            self._rejected.labels(category).inc()

    def estimate_made(self, category: str) -> None:
        self.counts["estimates", category] += 1

    def estimate_error(self, category: str, error_tokens: int) -> None:
        self.counts["estimate_errors", category] += 1
        if error_tokens < 0:
            self.counts["underestimates", category] += 1
        if self.registry is not None:
            self._error.labels(category).observe(error_tokens)

    def ratio(self, category: str, bytes_per_token: float) -> None:
        if self.registry is not None:
            self._ratio.labels(category).set(bytes_per_token)

    def shadow(self, compressible: bool) -> None:
        self.counts["shadow_band", "yes" if compressible else "no"] += 1
        if self.registry is not None:
            self._shadow.labels("yes" if compressible else "no").inc()

    def serve(self, port: int, address: str = "127.0.0.1") -> None:
        """Serve ``/metrics`` on ``address:port`` (a thread of prometheus_client's)."""
        if self.registry is None:
            return
        import prometheus_client

        prometheus_client.start_http_server(port, addr=address, registry=self.registry)
