"""The embedding model alone, as ``bench ingest`` measures it: texts/s and CPU per text, the
best of the ways it can run here."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

from memstream.services import bootstrap
from memstream.services.settings import Settings


def model_throughput(
    settings: Settings, encoders: list[str], texts: list[str], repeats: int = 3
) -> dict[str, tuple[str, float, float, dict[str, float]]]:
    """Per encoder: the encoder that loaded, its best texts/s and its least CPU milliseconds
    per text (this process's CPU time, every thread of the model), each the best of the two
    ways the model can run here — the worker's (ONNX: one-thread lanes, one per core) and one
    pass at a time on every core — and each way's best texts/s. The encoders and ways take
    turns, ``repeats`` rounds, and each keeps its best run: on a shared machine the load
    changes from one minute to the next, and turns spread it over all of them alike."""
    ways = {
        (e, way): bootstrap.load_embedder(replace(settings, encoder=e), lanes=lanes)
        for e in encoders
        for way, lanes in ((WAY_LANES, True), (WAY_SINGLE, False))
    }
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
            max(best[(e, WAY_LANES)], best[(e, WAY_SINGLE)]),
            min(cpu[(e, WAY_LANES)], cpu[(e, WAY_SINGLE)]),
            {way: best[(e, way)] for way in (WAY_LANES, WAY_SINGLE)},
        )
        for e in encoders
    }


WAY_LANES = "one-thread lanes"
WAY_SINGLE = "one pass on every core"
