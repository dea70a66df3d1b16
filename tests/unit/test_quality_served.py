"""The served LoCoMo bench sends what ``memstream ask --batch`` sends for the same line."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from memstream.bench.quality.served import served_request
from memstream.bench.quality.suite import Question
from memstream.ops.ask import read_batch
from memstream.schemas import codec

names = st.text(st.characters(categories=("L", "N")), min_size=1, max_size=12)


@given(query=st.text(min_size=1, max_size=60), speaker=st.none() | names, limit=st.integers(1, 50))
def test_a_served_request_is_the_ask_batch_request_of_the_same_line(
    tmp_path_factory: object, query: str, speaker: str | None, limit: int
) -> None:
    anchors = [] if speaker is None else [{"type": "person", "id": speaker}]
    request = {"anchors": anchors} if anchors else {}
    question = Question("q1", "locomo-x", query, "1 single-hop", frozenset(), request)
    line = {"tenant_id": "locomo-x", "query": query, "anchors": anchors, "limit": limit}
    path = Path(str(tmp_path_factory.mktemp("batch"))) / "batch.jsonl"  # type: ignore[attr-defined]
    path.write_text(json.dumps({**line, "force": True}) + "\n", encoding="utf-8")
    [from_ask] = list(read_batch(path))
    from_ask.pop("request_id")
    assert served_request(question, limit) == from_ask
    bare = served_request(question, limit, anchors=False)
    assert bare == {**from_ask, "anchors": []}
    addressed = {"request_id": "r", "reply_to": "t", "reply_partition": 0, "deadline_ms": None}
    assert codec.decode("RetrievalRequest", codec.encode("RetrievalRequest", {**bare, **addressed}))
