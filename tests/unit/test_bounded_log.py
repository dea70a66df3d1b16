"""What the query log stores of a request: never a NUL, never unbounded, sizes of cuts noted."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from memstream.services.handlers.respond import LOGGED_CHARS, LOGGED_ITEMS, bounded

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6000),
    lambda inner: st.lists(inner, max_size=80) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=40,
)


def _walk(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [value, *(x for v in value.values() for x in _walk(v))]
    if isinstance(value, list):
        return [value, *(x for v in value for x in _walk(v))]
    return [value]


@given(st.dictionaries(st.text(max_size=8), values, max_size=8))
def test_bounded_requests_hold_no_nul_and_nothing_longer_than_the_bounds(
    request: dict[str, Any],
) -> None:
    stored = bounded(request)
    for item in _walk({k: v for k, v in stored.items() if k != "_truncated"}):
        if isinstance(item, str):
            assert len(item) <= LOGGED_CHARS
            assert "\x00" not in item
        if isinstance(item, dict):
            assert not any("\x00" in key for key in item)
        if isinstance(item, list):
            assert len(item) <= LOGGED_ITEMS


def test_a_cut_is_noted_with_the_original_size() -> None:
    stored = bounded({"query": "q" * 5000, "anchors": [{"id": str(i)} for i in range(70)]})
    assert len(stored["query"]) == LOGGED_CHARS
    assert stored["_truncated"] == {"query": 5000, "anchors": 70}
    assert bounded({"query": "short"}) == {"query": "short"}
