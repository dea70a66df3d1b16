"""Record timestamps from producers: a bad clock never stops a worker."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memstream.services.handlers.ingest import epoch_moment


def test_a_record_timestamp_becomes_a_utc_moment() -> None:
    assert epoch_moment(1_767_225_600.5) == datetime(2026, 1, 1, 0, 0, 0, 500_000, tzinfo=UTC)


@pytest.mark.parametrize("seconds", [None, 0, -1.0, 1e20, float("inf"), float("nan")])
def test_absent_or_absurd_timestamps_give_none(seconds: float | None) -> None:
    assert epoch_moment(seconds) is None
