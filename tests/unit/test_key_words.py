"""``text.key_words`` and ``text.searchable``: a memory key's words are part of what keyword
search sees of the memory."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstream.services.domain.text import KEY_WORD_MIN, key_words, searchable

keys = st.text(alphabet=st.sampled_from("abcXYZ_-:|/.0123 é订单K"), max_size=40) | st.text(
    max_size=40
)


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("customer:C-1|contact_preference", ("customer", "contact", "preference")),
        ("order:1042", ("order",)),
        ("D1:3", ()),
        ("dev/1_00000|Restaurants_1|city", ("dev", "restaurants", "city")),
        ("Order:ORDER:order", ("order",)),
        ("ab:xy-12", ()),
        ("café:menu", ("caf", "menu")),  # ASCII letters only: the SQL backfill sees the same
        ("订单:A-2002", ()),
        ("", ()),
    ],
)
def test_key_words_examples(key: str, expected: tuple[str, ...]) -> None:
    assert key_words(key) == expected


@given(keys)
def test_key_words_are_lowercase_ascii_words_of_the_key_each_once(key: str) -> None:
    words = key_words(key)
    assert len(set(words)) == len(words)
    for word in words:
        assert word.isascii() and word.isalpha() and word == word.lower()
        assert len(word) >= KEY_WORD_MIN
        assert word in key.lower()


@given(keys, keys)
def test_separators_and_ids_do_not_change_the_words(key: str, other: str) -> None:
    # Any run of non-letters separates the same way; what a key says is its letters' runs.
    assert key_words(f"{key}:{other}") == tuple(dict.fromkeys((*key_words(key), *key_words(other))))
    assert key_words(f"{key}-42") == key_words(key)


@given(st.text(max_size=60), st.dictionaries(st.text(max_size=8), st.text(max_size=8)), keys)
def test_searchable_holds_content_attributes_and_key_words(
    content: str, attributes: dict[str, str], key: str
) -> None:
    text = searchable(content, attributes, key)
    assert content.strip() in text
    for name, value in attributes.items():
        assert f"{name} {value}".strip() in text
    words = " ".join(key_words(key))
    assert text.endswith(words)
    if not words:  # a key without words adds nothing: the text of before
        values = " ".join(f"{k} {v}" for k, v in sorted(attributes.items()))
        assert text == f"{content} {values}".strip()
