"""Rendering: the XML block an LLM reads for each result, within a character budget.

One block per result::

    <memory id="…" key="…" score="0.83" source="erp" status="resolved" fact="order"
            entity="customer:C-17" version="3" occurred_at="…" valid_from="…" valid_to="…"
            conflicts_with="…">
    <summary>first sentence, up to 160 characters</summary>
    <details>the content, truncated to the budget</details>
    </memory>

Text and attributes are XML-escaped and stripped of characters XML 1.0 forbids; truncation never
splits an entity. ``render_all`` shares a total budget: each block gets at least a minimum and the
rest in proportion to its final score; room a short block does not use goes to the others.
Pure. Must not import any I/O library.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime

from memstream.services.domain.query import ScoredResult

SUMMARY_CHARS = 160
MIN_BLOCK_CHARS = 400
ELLIPSIS = "…"

_FORBIDDEN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;"}
_ESCAPE_TABLE = str.maketrans(_ESCAPES)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s|(?<=[。！？])")


def escape(text: str) -> str:
    """XML-escape ``text`` for both element content and double-quoted attributes."""
    return _FORBIDDEN.sub("", text).translate(_ESCAPE_TABLE)


def _fit(text: str, room: int) -> str:
    """The longest escaped prefix of ``text`` within ``room`` characters (ellipsis if cut)."""
    escaped = escape(text)
    if len(escaped) <= room:
        return escaped
    room -= len(ELLIPSIS)
    out: list[str] = []
    used = 0
    for ch in _FORBIDDEN.sub("", text):
        piece = _ESCAPES.get(ch, ch)
        if used + len(piece) > room:
            break
        out.append(piece)
        used += len(piece)
    return "".join(out).rstrip() + ELLIPSIS if room > 0 else ""


def summary_of(content: str) -> str:
    """The first sentence, cut to ``SUMMARY_CHARS`` (before escaping)."""
    text = " ".join(content.split())
    first = _SENTENCE_END.split(text, maxsplit=1)[0].strip()
    if len(first) > SUMMARY_CHARS:
        first = first[: SUMMARY_CHARS - len(ELLIPSIS)].rstrip() + ELLIPSIS
    return first


def _when(moment: datetime | None) -> str:
    if moment is None:
        return ""
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _open_tag(result: ScoredResult) -> str:
    c = result.candidate
    attributes = [
        ("id", c.version_id),
        ("key", c.memory_key),
        ("score", f"{result.scores.final:.2f}"),
        ("source", c.source_system),
        ("status", result.effective_status or c.status),
        ("fact", c.fact_type),
        ("entity", f"{c.entity_type}:{c.entity_id}"),
        ("version", str(c.version)),
        ("occurred_at", _when(c.occurred_at)),
        ("valid_from", _when(c.valid_from)),
        ("valid_to", _when(c.valid_to)),
    ]
    if result.conflicts_with:
        attributes.append(("conflicts_with", ",".join(result.conflicts_with)))
    body = " ".join(f'{name}="{escape(value)}"' for name, value in attributes if value)
    return f"<memory {body}>"


def render(result: ScoredResult, budget_chars: int) -> str:
    """The block for ``result`` in at most ``budget_chars`` characters.

    Room goes to the tag first, then the summary, then the details (left out when they would
    repeat the summary). A budget too small for the tag and a few words gives "": a block that
    cannot fit is left out rather than broken.
    """
    head = _open_tag(result) + "\n"
    tail = "</memory>"
    summary_tags = ("<summary>", "</summary>\n")
    room = budget_chars - len(head) - len(tail) - sum(map(len, summary_tags))
    content = " ".join(result.candidate.content.split())
    summary = summary_of(content)
    fitted = _fit(summary, room)
    if len(fitted) < min(len(escape(summary)), 20):
        return ""
    block = [head, summary_tags[0], fitted, summary_tags[1]]
    room -= len(fitted)
    details_tags = ("<details>", "</details>\n")
    if content != summary:
        details = _fit(content, room - sum(map(len, details_tags)))
        if len(details) > len(ELLIPSIS) + 20:
            block += [details_tags[0], details, details_tags[1]]
    block.append(tail)
    text = "".join(block)
    return text if len(text) <= budget_chars else ""


def _shares(scores: Sequence[float], budget: int, floor: int) -> list[int]:
    total = sum(scores)
    spare = budget - floor * len(scores)
    if total <= 0:
        return [floor + spare // len(scores) for _ in scores]
    return [floor + int(spare * score / total) for score in scores]


def render_all(
    results: Sequence[ScoredResult], total_budget: int, minimum: int = MIN_BLOCK_CHARS
) -> list[str]:
    """One block per result (same order), all together within ``total_budget`` characters.

    Each rendered block gets at least ``minimum`` characters, plus a share of the rest in
    proportion to its final score; a block that needs less than its share hands the surplus back
    to the others (water-filling). When the budget cannot give every result its minimum, the
    lowest-scored results (ties: later in the list) get "" — left out, never cut to nothing.
    """
    if not results or total_budget <= 0:
        return ["" for _ in results]
    order = sorted(range(len(results)), key=lambda i: (-results[i].scores.final, i))
    fits = max(1, min(len(results), total_budget // max(1, minimum)))
    chosen = order[:fits]
    floor = min(minimum, total_budget // fits)
    full = {i: len(render(results[i], 1 << 30)) for i in chosen}
    budgets: dict[int, int] = {}
    open_ = list(chosen)
    remaining = total_budget
    # Water-filling: blocks whose full length fits their share take only that; repeat with the
    # rest of the budget for the others until every share is used or every block is whole.
    while open_:
        shares = _shares([max(0.0, results[i].scores.final) for i in open_], remaining, floor)
        settled = [i for i, share in zip(open_, shares, strict=True) if full[i] <= share]
        if not settled:
            budgets.update(zip(open_, shares, strict=True))
            break
        for i in settled:
            budgets[i] = full[i]
            remaining -= full[i]
            open_.remove(i)
        floor = min(floor, remaining // len(open_)) if open_ else floor
    return [render(results[i], budgets[i]) if i in budgets else "" for i in range(len(results))]
