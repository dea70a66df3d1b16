"""An operator asks a running worker where it is (docs/operations.md, "A worker that neither
answers nor stops"): SIGUSR1 prints its asyncio tasks, the producer's unsent batches and the
request generations' reader; SIGQUIT every thread's stack. Neither stops it; SIGTERM does."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from memstream.bench.kit import dump_worker, start_worker, stop_worker, worker_tail
from memstream.ops.stack import EmbeddedStack
from memstream.ops.up import prepare
from memstream.services.settings import Settings


def test_sigusr1_and_sigquit_say_where_the_worker_is_and_leave_it_running() -> None:
    base = Settings.from_env()
    data_dir = Path(tempfile.mkdtemp(prefix="memstream-dump-"))
    data_dir.chmod(0o755)  # the embedded PostgreSQL runs as another user
    settings = Settings(
        data_dir=data_dir,
        model_path=base.model_path,
        encoder=base.encoder,
        model_cache=base.model_cache,
        web_port=0,
    )
    stack = EmbeddedStack(settings)
    resolved = stack.start()
    try:
        prepare(resolved)
        worker = start_worker(resolved)
        try:
            dump_worker(worker)
            assert worker.poll() is None  # still running
            tail = worker_tail(worker)
            assert "asyncio tasks ---" in tail
            assert "generations reader: live" in tail  # the embedded broker rotates
            assert "producer: unsent batches" in tail
            assert "(most recent call first)" in tail  # faulthandler's thread stacks
            assert "index.py" in tail  # the indexer's task, named by its file
        finally:
            assert stop_worker(worker) == 0
    finally:
        stack.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
