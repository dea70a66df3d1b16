"""The typed reply: from the codec's record and from JSON, and back; bad records refused."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstream.schemas import codec
from memstream.services.domain.reply import MalformedReply, RetrievalReply

SCORES = (
    "vector",
    "keyword",
    "fused",
    "authority",
    "recency",
    "binding",
    "state",
    "cross_validation",
    "trust",
    "final",
)


def result(n: int, score: float = 0.5) -> dict[str, Any]:
    return {
        "memory_key": f"spec:X{n}",
        "version": n,
        "version_id": f"v-{n}",
        "content": f"X{n} charges over USB-C",
        "entity_type": "product",
        "entity_id": f"X{n}",
        "fact_type": "product_spec",
        "source_system": "catalog",
        "status": "active",
        "effective_status": "active",
        "occurred_at": datetime(2026, 1, n, tzinfo=UTC),
        "valid_from": datetime(2026, 1, n, tzinfo=UTC),
        "valid_to": None,
        "scores": dict.fromkeys(SCORES, score),
        "binding_kind": "exact",
        "conflicts_with": ["v-9"],
        "rendered": f"<memory key='spec:X{n}'/>",
    }


def reply(results: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "request_id": "r-1",
        "status": "ok",
        "gate": {"decision": "forced", "reason": "force"},
        "results": results,
        "latency_ms": {"total": 12.5},
        "error": None,
        "served_at": datetime(2026, 2, 1, tzinfo=UTC),
    }


def test_a_decoded_avro_reply_becomes_typed_values() -> None:
    record = codec.decode("RetrievalReply", codec.encode("RetrievalReply", reply([result(1)])))
    typed = RetrievalReply.from_record(record)
    assert typed.ok and typed.gate.decision == "forced"
    first = typed.results[0]
    assert first.memory_key == "spec:X1" and first.version == 1
    assert first.scores.final == 0.5 and first.conflicts_with == ("v-9",)
    assert first.valid_to is None and first.valid_from == datetime(2026, 1, 1, tzinfo=UTC)
    assert set(first.scores.trust_components) == {
        "authority",
        "recency",
        "binding",
        "state",
        "cross_validation",
    }
    assert typed.rendered == "<memory key='spec:X1'/>"


def test_json_round_trip_gives_the_same_reply() -> None:
    typed = RetrievalReply.from_record(reply([result(1), result(2, 0.25)]))
    again = RetrievalReply.from_record(typed.to_json())
    assert again == typed
    assert typed.to_json()["results"][0]["valid_from"] == "2026-01-01T00:00:00+00:00"


def test_an_error_reply_carries_its_code() -> None:
    record = {**reply([]), "status": "error", "error": {"code": "missing_tenant", "message": "m"}}
    typed = RetrievalReply.from_record(record)
    assert not typed.ok and typed.error is not None and typed.error.code == "missing_tenant"


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"gate": None}, "decision"),
        ({"results": [{**result(1), "valid_from": "yesterday"}]}, "valid_from"),
        ({"results": [{**result(1), "version": "two"}]}, "version"),
        ({"results": [{k: v for k, v in result(1).items() if k != "scores"}]}, "scores"),
    ],
)
def test_a_malformed_record_is_refused_naming_the_field(
    change: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(MalformedReply, match=fragment):
        RetrievalReply.from_record({**reply([result(1)]), **change})


@given(st.lists(st.floats(0, 1, allow_nan=False), min_size=0, max_size=5))
def test_scores_and_order_survive_json(finals: list[float]) -> None:
    typed = RetrievalReply.from_record(reply([result(i + 1, f) for i, f in enumerate(finals)]))
    again = RetrievalReply.from_record(typed.to_json())
    assert [r.scores.final for r in again.results] == finals
    assert again == typed


def test_the_client_imports_without_torch_or_faust() -> None:
    code = (
        "import sys\n"
        "for name in ('torch', 'faust', 'mode', 'sentence_transformers', 'qdrant_edge',"
        " 'fastapi', 'uvicorn'):\n"
        "    sys.modules[name] = None\n"
        "import memstream.client as c\n"
        "assert c.Memory and c.AsyncMemory and c.RetrievalReply\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
