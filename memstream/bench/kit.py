"""What the benchmarks share: synthetic events, a worker process, publishing to the broker.

Must not import the benchmarks themselves (``bench``, ``bench_query``, ``bench_replay``).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from memstream.ops.identity import provision_local
from memstream.ops.publish import Signers
from memstream.services.domain.validation import validate_event
from memstream.services.settings import Settings
from memstream.streams.producer import EventProducer

_SUBJECTS = ["order", "return", "complaint", "delivery", "invoice", "subscription", "warranty"]
_ITEMS = [
    "XR-500 headphones",
    "X1 phone",
    "trail shoes",
    "coffee grinder",
    "USB-C charger",
    "standing desk",
    "rain jacket",
    "smart watch",
    "espresso machine",
    "backpack",
]
_VERBS = [
    "asked about",
    "reported a problem with",
    "requested a refund for",
    "praised",
    "ordered",
    "returned",
    "was charged twice for",
    "changed the address for",
]


def synthetic_text(rng: random.Random, n: int) -> str:
    return (
        f"Customer C-{rng.randint(1, 5000)} {rng.choice(_VERBS)} the {rng.choice(_ITEMS)} "
        f"({rng.choice(_SUBJECTS)} #{n}); agent noted follow-up in {rng.randint(1, 14)} days "
        f"and tagged it {rng.choice(['urgent', 'routine', 'vip', 'billing'])}."
    )


def synthetic_events(tenant: str, count: int, seed: int = 1) -> list[dict[str, Any]]:
    rng = random.Random(seed)  # noqa: S311 - synthetic data, not crypto
    base = datetime(2026, 1, 1, tzinfo=UTC)
    memories = max(1, count // 4)  # ~4 versions per memory: supersession on the hot path
    return [
        {
            "event_id": f"bench-{i}",
            "tenant_id": tenant,
            "memory_key": f"m:{i % memories}",
            "entity_type": "customer",
            "entity_id": f"C-{i % memories}",
            "fact_type": "note",
            "content": synthetic_text(rng, i),
            "source_system": "crm",
            "occurred_at": (base + timedelta(seconds=i)).isoformat(),
        }
        for i in range(count)
    ]


def start_worker(settings: Settings) -> subprocess.Popen[str]:
    """A ``memstream worker`` process on resolved settings, returned once it is ready."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
    env.update(settings.to_env())
    worker = subprocess.Popen(
        [sys.executable, "-m", "memstream.cli", "worker"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert worker.stdout is not None
    for line in worker.stdout:
        if "memstream ready" in line:
            return worker
    raise RuntimeError("the worker exited before it was ready")


def publish_events(settings: Settings, raws: list[dict[str, Any]]) -> None:
    """Validate, encode and publish ``raws`` with the idempotent producer; waits for acks."""
    sources: dict[str, set[str]] = {}
    for raw in raws:
        sources.setdefault(str(raw["tenant_id"]), set()).add(str(raw["source_system"]))
    provision_local(settings, {t: sorted(s) for t, s in sources.items()})
    signers = Signers(settings)  # the worker verifies every event: signed like `publish`
    producer = EventProducer(settings.broker or "", signers.headers)
    now = datetime.now(UTC)
    for raw in raws:
        producer.send(settings.topics.events, validate_event(raw, now))
    if producer.finish(60):
        raise RuntimeError("the broker did not acknowledge every event")


def with_encoder(settings: Settings, encoder: str) -> Settings:
    """``settings`` with ``encoder``, the model cache of this user's environment."""
    base = Settings.from_env()
    return replace(settings, encoder=encoder, model_cache=base.model_cache_dir)
