"""How `memstream ask` prints a reply: an error reply reads as an error, not as a gate
decision."""

from __future__ import annotations

import pytest

from memstream.ops.ask import print_reply


def reply(status: str, **extra: object) -> dict[str, object]:
    return {
        "request_id": "r-1",
        "status": status,
        "gate": {"decision": "skip", "reason": "error"},
        "latency_ms": {"total": 1.5},
        "results": [],
        **extra,
    }


def test_an_error_reply_prints_as_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    error = {"code": "forbidden", "message": "the credential does not allow this"}
    print_reply(reply("error", error=error))
    printed = capsys.readouterr().out
    assert printed.startswith("error forbidden: the credential does not allow this")
    assert "gate" not in printed and "r-1" in printed


def test_a_skipped_reply_still_shows_its_gate(capsys: pytest.CaptureFixture[str]) -> None:
    print_reply(reply("skipped", gate={"decision": "skip", "reason": "no memory cue"}))
    printed = capsys.readouterr().out
    assert "gate skip: no memory cue" in printed and "--force" in printed
