"""``text.stem``: the prefix an English word's inflected forms share (keyword search matches it
at the start of a word)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstream.services.domain.text import SAFE_PREFIX, inflections, stem

words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=14)


@pytest.mark.parametrize(
    ("forms", "expected"),
    [
        (("paint", "paints", "painted", "painting", "paintings"), "paint"),
        (("hiked", "hiking"), "hik"),
        (("hike", "hikes"), "hike"),
        (("dance", "dances", "danced", "dancing"), "danc"),
        (("run", "running"), "run"),
        (("shop", "shopping", "shopped", "shops"), "shop"),
        (("class", "classes"), "class"),
        (("watch", "watches", "watched", "watching"), "watch"),
        (("adopt", "adopted", "adopting", "adoption", "adopts"), "adopt"),
        (("hobbies",), "hobb"),
        (("play", "played", "playing", "plays"), "play"),
    ],
)
def test_the_forms_of_a_word_share_one_stem(forms: tuple[str, ...], expected: str) -> None:
    assert {stem(form) for form in forms} == {expected}


@pytest.mark.parametrize(
    "word",
    # the final "s" or "ed" belongs to the word; "-er", "-ly", "-ment" are not inflections;
    # too short to strip; not lower-case English letters
    [
        *("class", "campus", "tennis", "bread", "speed", "tied", "dinner", "early", "apartment"),
        *("go", "red", "care", "xr-500", "usb-c", "2023", "größe", "Paint", "订单"),
    ],
)
def test_words_that_are_not_inflected_forms_stay_whole(word: str) -> None:
    assert stem(word) == word


@given(words)
def test_a_stem_is_a_prefix_of_its_word_with_a_vowel_and_three_letters(word: str) -> None:
    stemmed = stem(word)
    assert word.startswith(stemmed)
    if stemmed != word:
        assert len(stemmed) >= 3
        assert any(c in "aeiouy" for c in stemmed)


def test_a_plural_finds_its_singular() -> None:
    assert stem("things") == "thing"
    assert stem("bringing") == "bring"


def test_a_short_stem_stands_for_its_whole_inflected_words() -> None:
    """Under four letters a prefix finds unrelated words ("go" in "gold"), so a short stem is
    searched as its inflected words; a silent "e" only where the stem lost letters."""
    assert {"go", "goes", "going"} <= set(inflections("go"))
    assert "gold" not in inflections("go") and "good" not in inflections("go")
    assert {"run", "runs", "running"} <= set(inflections("running"))
    assert {"hike", "hikes", "hiked", "hiking"} <= set(inflections("hiking"))
    assert "care" not in inflections("car") and "cars" in inflections("car")


@given(words)
def test_a_short_stems_words_start_with_it_and_hold_the_word(word: str) -> None:
    stemmed = stem(word)
    if len(stemmed) < SAFE_PREFIX:
        forms = inflections(word)
        assert stemmed in forms and word in forms
        assert all(form.startswith(stemmed) for form in forms)
