"""Ranking metrics for the quality benchmark: small pure functions over ranked id lists.

Conventions: a ranking is a sequence of ids, best first; positions are taken as given (a
repeated id keeps its slot, but is counted once). A metric that is undefined for the input (no
relevant ids, no questions) returns ``None``; ``mean`` skips ``None``. Pure; stdlib only.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence


def recall_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float | None:
    """Fraction of the relevant ids in the first ``k`` positions; None when none is relevant."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    wanted = set(relevant)
    if not wanted:
        return None
    return len(wanted.intersection(ranked[:k])) / len(wanted)


def hit_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float | None:
    """1.0 when at least one relevant id is in the first ``k`` positions, else 0.0 (None: none)."""
    wanted = set(relevant)
    if not wanted:
        return None
    return 1.0 if wanted.intersection(ranked[:k]) else 0.0


def reciprocal_rank(ranked: Sequence[str], relevant: Collection[str]) -> float | None:
    """1 / (1-based position of the first relevant id), 0.0 if none is ranked; None: no relevant."""
    wanted = set(relevant)
    if not wanted:
        return None
    for position, item in enumerate(ranked, start=1):
        if item in wanted:
            return 1.0 / position
    return 0.0


def mean(values: Iterable[float | None]) -> float | None:
    """The mean of the defined values; None when there are none."""
    defined = [v for v in values if v is not None]
    return sum(defined) / len(defined) if defined else None


def mean_reciprocal_rank(
    rankings: Iterable[tuple[Sequence[str], Collection[str]]],
) -> float | None:
    """MRR over (ranking, relevant ids) pairs; pairs with no relevant ids are skipped."""
    return mean(reciprocal_rank(ranked, relevant) for ranked, relevant in rankings)


def answer_is_wrong(
    ranked: Sequence[str], right: Collection[str], forbidden: Collection[str] = ()
) -> bool:
    """Whether an answer is wrong: its top id is not a right one (or there is none), or it
    returns a forbidden id anywhere (a retracted memory, another tenant's record)."""
    if not ranked or ranked[0] not in set(right):
        return True
    banned = set(forbidden)
    return any(item in banned for item in ranked)


def wrong_memory_rate(answers: Sequence[tuple[str | None, Collection[str]]]) -> float | None:
    """Fraction of (top answer, right answers) pairs whose top answer is missing or not right."""
    if not answers:
        return None
    wrong = sum(1 for top, right in answers if top is None or top not in set(right))
    return wrong / len(answers)


def current_above_superseded(
    ranked: Sequence[str], current: Collection[str], superseded: Collection[str]
) -> bool:
    """Whether a current id is ranked, and before every superseded id that is ranked."""
    now, old = set(current), set(superseded)
    for item in ranked:
        if item in now:
            return True
        if item in old:
            return False
    return False
