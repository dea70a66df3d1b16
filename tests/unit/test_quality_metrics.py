"""The quality benchmark's metrics on hand-computed examples, and its BM25 baseline."""

from __future__ import annotations

import numpy as np
import pytest

from memstream.bench.quality import metrics
from memstream.bench.quality.baselines import BM25, TenantCorpus, tokenize


def test_recall_at_k_counts_relevant_ids_in_the_first_k() -> None:
    ranked = ["a", "b", "c", "d"]
    assert metrics.recall_at_k(ranked, {"b", "d", "x"}, 2) == pytest.approx(1 / 3)
    assert metrics.recall_at_k(ranked, {"b", "d", "x"}, 4) == pytest.approx(2 / 3)
    assert metrics.recall_at_k(ranked, {"a"}, 10) == 1.0  # k beyond the ranking
    assert metrics.recall_at_k(ranked, {"a"}, 0) == 0.0


def test_relevant_beyond_k_is_not_recalled_but_still_has_a_reciprocal_rank() -> None:
    assert metrics.recall_at_k(["a", "b", "c"], {"c"}, 2) == 0.0
    assert metrics.hit_at_k(["a", "b", "c"], {"c"}, 2) == 0.0
    assert metrics.hit_at_k(["a", "b", "c"], {"c"}, 3) == 1.0
    assert metrics.reciprocal_rank(["a", "b", "c"], {"c"}) == pytest.approx(1 / 3)
    assert metrics.reciprocal_rank(["a", "b"], {"z"}) == 0.0


def test_no_relevant_ids_is_undefined_and_skipped_by_the_means() -> None:
    assert metrics.recall_at_k(["a"], set(), 5) is None
    assert metrics.hit_at_k(["a"], [], 5) is None
    assert metrics.reciprocal_rank(["a"], ()) is None
    assert metrics.mean([None, 1.0, 0.0, None]) == 0.5
    assert metrics.mean([None]) is None
    rankings = [(["a", "b"], {"b"}), (["c"], {"c"}), (["d"], set())]
    assert metrics.mean_reciprocal_rank(rankings) == pytest.approx((0.5 + 1.0) / 2)


def test_duplicates_keep_their_slot_and_count_once() -> None:
    # "a" twice takes both of the first two slots: "b" is not within k = 2.
    assert metrics.recall_at_k(["a", "a", "b"], {"a", "b"}, 2) == 0.5
    assert metrics.recall_at_k(["a", "a", "b"], {"a", "b"}, 3) == 1.0
    assert metrics.recall_at_k(["a"], ["a", "a"], 1) == 1.0  # relevant ids are a set
    assert metrics.reciprocal_rank(["x", "a", "a"], {"a"}) == 0.5


def test_negative_k_is_an_error() -> None:
    with pytest.raises(ValueError, match="k must be"):
        metrics.recall_at_k(["a"], {"a"}, -1)


def test_wrong_memory_rate_is_the_share_of_wrong_or_missing_top_answers() -> None:
    answers = [("a", {"a"}), ("b", {"a"}), (None, {"a"}), ("c", {"c", "d"})]
    assert metrics.wrong_memory_rate(answers) == 0.5
    assert metrics.wrong_memory_rate([("a", {"a"})]) == 0.0
    assert metrics.wrong_memory_rate([("a", set())]) == 1.0  # nothing is right
    assert metrics.wrong_memory_rate([]) is None


def test_an_answer_is_wrong_when_its_top_is_wrong_or_it_returns_a_forbidden_memory() -> None:
    assert not metrics.answer_is_wrong(["a", "b"], {"a"})
    assert metrics.answer_is_wrong(["b", "a"], {"a"})
    assert metrics.answer_is_wrong([], {"a"})
    assert metrics.answer_is_wrong(["a", "x"], {"a"}, forbidden={"x"})  # retracted, 2nd place
    assert not metrics.answer_is_wrong(["a", "b"], {"a"}, forbidden={"x"})


def test_current_above_superseded() -> None:
    assert metrics.current_above_superseded(["n", "o"], {"n"}, {"o"})
    assert metrics.current_above_superseded(["z", "n"], {"n"}, {"o"})  # old one not returned
    assert not metrics.current_above_superseded(["o", "n"], {"n"}, {"o"})
    assert not metrics.current_above_superseded(["z"], {"n"}, {"o"})  # current not returned
    assert not metrics.current_above_superseded([], {"n"}, {"o"})


# --- the BM25 baseline --------------------------------------------------------------------


def test_tokenize_splits_words_and_cjk_into_characters_and_bigrams() -> None:
    assert tokenize("The XR-500, red!") == ["the", "xr", "500", "red"]
    assert tokenize("XR-500 退货单") == ["xr", "500", "退", "货", "单", "退货", "货单"]
    assert tokenize("  ") == []


def test_bm25_matches_the_okapi_formula_by_hand() -> None:
    index = BM25.build(["d1", "d2", "d3"], ["red shoes", "blue shoes shoes", "green hat"])
    # N = 3, df(red) = 1: idf = ln(1 + 2.5 / 1.5); avgdl = 7/3; d1 has length 2, tf 1.
    idf = np.log(1 + 2.5 / 1.5)
    norm = 1.5 * (1 - 0.75 + 0.75 * 2 / (7 / 3))
    expected = idf * 1 * 2.5 / (1 + norm)
    scores = index.scores("red")
    assert scores[0] == pytest.approx(expected)
    assert scores[1] == scores[2] == 0.0


def test_bm25_ranking_prefers_rare_terms_and_drops_non_matches() -> None:
    corpus = TenantCorpus(
        ["a", "b", "c"],
        ["the blue XR-500 headphones", "the red XR-300 headphones", "a coffee grinder"],
        np.eye(3, dtype=np.float32),
    )
    assert corpus.bm25_rank("red headphones", 10) == ["b", "a"]
    assert corpus.bm25_rank("nothing here", 10) == []
    assert corpus.bm25_rank("red headphones", 10, allowed={"a"}) == ["a"]
    assert corpus.vector(np.array([0, 0, 1], dtype=np.float32), 2) == ["c", "a"]
    # RRF: "b" is first for BM25 and for the vector (the only one with cosine 1): it leads.
    assert corpus.rrf("red headphones", np.array([0, 1, 0], dtype=np.float32), 1) == ["b"]
