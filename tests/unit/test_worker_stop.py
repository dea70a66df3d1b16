"""A stopping worker closes its reader of the request generations before anything else stops
(``memstream.streams.app.Worker.on_stop``); the reader's hand-over itself is tested on a real
broker in ``tests/integration/test_generation_reader.py``."""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path

from memstream.services.settings import Settings, Topics
from memstream.streams.app import create_worker
from memstream.streams.generations import GenerationReader


async def test_the_worker_closes_its_generation_reader_first_when_it_stops(
    tmp_path: Path,
) -> None:
    interval = sys.getswitchinterval()  # create_worker sets it for its process
    settings = Settings(
        broker="127.0.0.1:9",  # nothing is connected: the worker is built, not started
        topics=Topics(prefix=f"t{uuid.uuid4().hex[:8]}."),
        app_id=f"app-{uuid.uuid4().hex[:8]}",
        data_dir=tmp_path,
        web_port=0,
    ).with_rotation(True)
    try:
        worker, _ = create_worker(settings)
    finally:
        sys.setswitchinterval(interval)
    (reader,) = worker.readers
    assert isinstance(reader, GenerationReader)
    await worker.on_stop()
    await asyncio.wait_for(reader.run(), 1.0)  # closed: returns at once, reads nothing
    assert not reader.live


def test_without_rotation_the_worker_has_no_generation_reader(tmp_path: Path) -> None:
    interval = sys.getswitchinterval()
    settings = Settings(
        broker="127.0.0.1:9", app_id=f"app-{uuid.uuid4().hex[:8]}", data_dir=tmp_path, web_port=0
    ).with_rotation(False)
    try:
        worker, _ = create_worker(settings)
    finally:
        sys.setswitchinterval(interval)
    assert worker.readers == ()
