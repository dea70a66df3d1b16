"""The embedding model alone, as ``bench ingest`` measures it: texts/s and CPU per text, the
best of the ways it can run here."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any

from memstream.services import bootstrap
from memstream.services.settings import Settings

WAY_LANES = "the worker's way (ONNX: one-thread lanes)"
WAY_SINGLE = "one pass on every core"


def model_throughput(
    settings: Settings, encoders: list[str], texts: list[str], repeats: int = 3
) -> dict[str, tuple[str, float, float, dict[str, float]]]:
    """Per encoder: the encoder that loaded, its best texts/s and its least CPU milliseconds
    per text (this process's CPU time, every thread of the model), each the best of the ways
    the model can run here — the worker's (ONNX: one-thread lanes, one per core) and, where
    that is lanes, one pass at a time on every core — and each way's best texts/s. The
    encoders and ways take turns, ``repeats`` rounds, and each keeps its best run: on a shared
    machine the load changes from one minute to the next, and turns spread it over all of them
    alike."""
    ways: dict[tuple[str, str], Any] = {}  # (encoder, way): the embedder
    for e in encoders:
        ways[(e, WAY_LANES)] = bootstrap.load_embedder(replace(settings, encoder=e))
        if ways[(e, WAY_LANES)].lanes > 1:  # else the same way twice
            ways[(e, WAY_SINGLE)] = bootstrap.load_embedder(
                replace(settings, encoder=e), lanes=False
            )
    best = dict.fromkeys(ways, 0.0)
    cpu = dict.fromkeys(ways, float("inf"))
    for embedder in ways.values():
        asyncio.run(embedder.embed(texts[:64]))  # warm-up
    for _ in range(repeats):
        for key, embedder in ways.items():
            started, cpu_started = time.perf_counter(), time.process_time()
            asyncio.run(embedder.embed(texts))  # all at once: passes of BATCH_SIZE, longest first
            best[key] = max(best[key], len(texts) / (time.perf_counter() - started))
            spent_ms = (time.process_time() - cpu_started) * 1000 / len(texts)
            cpu[key] = min(cpu[key], spent_ms)
    return {
        e: (
            ways[(e, WAY_LANES)].encoder,
            max(r for (o, _), r in best.items() if o == e),
            min(c for (o, _), c in cpu.items() if o == e),
            {way: r for (o, way), r in best.items() if o == e},
        )
        for e in encoders
    }
