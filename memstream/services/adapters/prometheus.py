"""PrometheusMetrics: the ``Metrics`` port on prometheus_client, one registry per worker.

Exposed by the worker at ``/metrics``: events ingested by outcome, dead letters by reason, the
ingest lag in seconds, versions indexed, retrievals by status, gate decisions, latency histograms
by stage, the trust score distribution of returned results, and the Redis cache's hit / miss /
error counters.
Must not import handlers or streams.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

# Up to a minute: the queue stage shows consumer-group stalls (seconds), not only work (ms).
_LATENCY_BUCKETS = (0.5, 1, 2, 5, 10, 20, 35, 50, 75, 100, 200, 500, 1000, 5000, 15000, 60000)


class _CacheCollector(Collector):
    def __init__(self, counters: Callable[[], Mapping[str, Mapping[str, int]]]) -> None:
        self._counters = counters

    def collect(self) -> Any:
        family = CounterMetricFamily(
            "memstream_cache_requests",
            "Redis cache lookups by kind and outcome",
            labels=["kind", "outcome"],
        )
        for outcome, by_kind in self._counters().items():
            for kind, value in by_kind.items():
                family.add_metric([kind, outcome], value)
        yield family


class PrometheusMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self._ingested = Counter(
            "memstream_events_ingested", "Events recorded, by outcome", ["outcome"], registry=r
        )
        self._dead = Counter(
            "memstream_events_dead_lettered",
            "Events dead-lettered, by reason",
            ["reason"],
            registry=r,
        )
        self._indexed = Counter(
            "memstream_versions_indexed",
            "Versions written to the vector store (points and payload re-syncs)",
            registry=r,
        )
        self._lag = Gauge(
            "memstream_ingest_lag_seconds",
            "Consumer lag in time: age of the oldest message of the last ingested batch"
            " (published -> recorded)",
            registry=r,
        )
        self._retrievals = Counter(
            "memstream_retrievals", "Retrieval replies, by status", ["status"], registry=r
        )
        self._gate = Counter("memstream_gate_decisions", "Gate decisions", ["decision"], registry=r)
        self._latency = Histogram(
            "memstream_retrieval_latency_ms",
            "Retrieval time per stage (ms, server side; stage queue: broker to worker)",
            ["stage"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self._trust = Histogram(
            "memstream_result_trust",
            "Trust score of returned results",
            buckets=tuple(i / 10 for i in range(1, 11)),
            registry=r,
        )

    def watch_cache(self, counters: Callable[[], Mapping[str, Mapping[str, int]]]) -> None:
        """Export a cache's counters ({"hits": {kind: n}, "misses": …, "errors": …})."""
        self.registry.register(_CacheCollector(counters))

    def ingested(self, outcome: str) -> None:
        self._ingested.labels(outcome).inc()

    def dead_lettered(self, reason: str) -> None:
        self._dead.labels(reason).inc()

    def indexed(self, versions: int) -> None:
        self._indexed.inc(versions)

    def ingest_lag(self, seconds: float) -> None:
        self._lag.set(max(0.0, seconds))

    def retrieval(self, reply: Mapping[str, Any]) -> None:
        self._retrievals.labels(str(reply.get("status", "error"))).inc()
        gate = reply.get("gate") or {}
        self._gate.labels(str(gate.get("decision", "unknown"))).inc()
        for stage, ms in (reply.get("latency_ms") or {}).items():
            if stage != "cache_hit":
                self._latency.labels(stage).observe(float(ms))
        for result in reply.get("results") or []:
            self._trust.observe(float(result["scores"]["trust"]))

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
