"""The public suites: LoCoMo (conversational memory) and SGD slot updates (current vs stale).

Read from ``../shared/datasets`` next to the repository (``MEMSTREAM_DATASETS`` overrides);
nothing is copied into the repository. See each folder's README for source and licence.

LoCoMo (``locomo10_turns.jsonl``, ``locomo10_qa_qrels.jsonl``): each dialogue turn is a
MemoryEvent in the conversation's tenant (``locomo-<sample_id>``): memory_key = the turn id (each
turn its own memory), entity ``person:<speaker>``, occurred_at = the session's date (+ the turn's
position in seconds), content ``"<speaker>: <text>"`` (+ ``[shares a photo: <caption>]``).
Questions: the evidence turn ids are the right documents; the 4 questions without evidence are
left out. memstream's request carries the speaker named in the question as an anchor
(``person:<name>``) when exactly one of the two speakers is named — what an agent talking to or
about that person knows; the baselines get the question text in the conversation's tenant.

SGD (``derived_slot_update_probes.jsonl``): the probes of one dialogue, service and slot form a
chain of values (old → new → …); a case is a chain, its right documents are the turn of the
last value, its stale ones the turns of the earlier values (any document of those turns counts).
A tenant per SGD file (``sgd-dev-dialogues_001``); entity ``customer:<split>/<dialogue_id>``
(memstream's ``user_id``; the baselines filter to that dialogue's documents too, as a per-user
store would); occurred_at follows the turn index. Two ingestions of the same utterances:

- ``sgd`` — the dialogue state as events: every value of a chain is a version of one memory
  (memory_key = dialogue|service|slot), as a state tracker publishing updates would send them;
- ``sgd_turns`` — every user turn its own memory (memory_key = dialogue|turn): no versioning,
  so only ranking can put the current value first.

Query (both): ``"What <slot> does the user want now (for <service>)?"``.
"""

from __future__ import annotations

import json
import os
import random
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memstream.bench.quality.suite import Question, Suite, doc_id

SGD_EPOCH = datetime(2024, 1, 1, tzinfo=UTC)


class DatasetError(RuntimeError):
    """A dataset is missing or malformed; the message names the path."""


def datasets_root() -> Path:
    """``$MEMSTREAM_DATASETS``, else ``../shared/datasets`` next to the repository."""
    override = os.environ.get("MEMSTREAM_DATASETS")
    if override:
        return Path(override)
    return (Path(__file__).resolve().parents[3] / ".." / "shared" / "datasets").resolve()


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    if not path.is_file():
        raise DatasetError(f"{path} not found (set MEMSTREAM_DATASETS to the datasets folder)")
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def session_time(text: str) -> datetime:
    """LoCoMo's ``"1:56 pm on 8 May, 2023"`` as an aware UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def locomo_suite(
    root: Path, conversations: int | None = None, questions: int | None = None, seed: int = 7
) -> Suite:
    """LoCoMo as a suite: the first ``conversations`` (None: all 10) and a seeded sample of
    ``questions`` of them (None: all, in order)."""
    folder = root / "locomo"
    turns = list(_lines(folder / "locomo10_turns.jsonl"))
    samples = list(dict.fromkeys(t["sample_id"] for t in turns))[:conversations]
    chosen = set(samples)
    suite = Suite("locomo", limit=10)
    speakers: dict[str, set[str]] = defaultdict(set)
    position: dict[str, int] = defaultdict(int)
    for turn in turns:
        sample = turn["sample_id"]
        if sample not in chosen:
            continue
        speakers[sample].add(turn["speaker"])
        # memstream keeps content stripped: so does every system here (same texts, same vectors)
        content = f"{turn['speaker']}: {turn['text'].strip()}"
        if turn.get("blip_caption"):
            content += f" [shares a photo: {turn['blip_caption'].strip()}]"
        position[sample] += 1
        at = session_time(turn["session_date_time"]) + timedelta(seconds=position[sample])
        suite.events.append(
            {
                "event_id": f"{sample}:{turn['dia_id']}",
                "tenant_id": f"locomo-{sample}",
                "memory_key": turn["dia_id"],
                "entity_type": "person",
                "entity_id": turn["speaker"],
                "fact_type": "dialogue_turn",
                "content": content,
                "source_system": "conversation",
                "occurred_at": at.isoformat(),
            }
        )
    known = {e["event_id"] for e in suite.events}
    rows = [q for q in _lines(folder / "locomo10_qa_qrels.jsonl") if q["sample_id"] in chosen]
    usable = [q for q in rows if any(f"{q['sample_id']}:{e}" in known for e in q["evidence"])]
    with_evidence = len(usable)
    if questions is not None and questions < len(usable):
        rng = random.Random(seed)  # noqa: S311 - sampling, not crypto
        usable = sorted(
            rng.sample(usable, questions), key=lambda q: (q["sample_id"], q["qa_index"])
        )
    anchored = 0
    for q in usable:
        sample, tenant = q["sample_id"], f"locomo-{q['sample_id']}"
        right = [doc_id(tenant, f"{sample}:{e}") for e in q["evidence"] if f"{sample}:{e}" in known]
        named = sorted(
            s for s in speakers[sample] if re.search(rf"\b{re.escape(s)}\b", q["question"])
        )
        request: dict[str, Any] = {}
        if len(named) == 1:
            request["anchors"] = [{"type": "person", "id": named[0]}]
            anchored += 1
        suite.questions.append(
            Question(
                f"{sample}#{q['qa_index']}",
                tenant,
                q["question"].strip(),
                f"{q['category']} {q['category_name']}",
                frozenset(right),
                request,
            )
        )
    suite.notes.append(
        f"{len(samples)} conversation(s), {len(suite.events)} turns, {len(suite.questions)} "
        f"questions asked of {len(rows)} ({len(rows) - with_evidence} have no evidence turn); "
        f"{anchored} carry the one speaker they name as memstream's anchor"
    )
    return suite


@dataclass(frozen=True, slots=True)
class SlotChain:
    """One dialogue's values of one slot, in order: turns[-1] holds the current value."""

    file: str
    dialogue_id: str
    service: str
    slot: str
    turns: tuple[int, ...]

    @property
    def user(self) -> str:
        return f"{self.file.split('/')[0]}/{self.dialogue_id}"

    @property
    def tenant_suffix(self) -> str:
        return re.sub(r"[^a-z0-9]+", "-", self.file.removesuffix(".json").lower())


def sgd_chains(root: Path) -> tuple[list[SlotChain], dict[tuple[str, str, int], str], int]:
    """Every slot chain, the utterance of every (file, dialogue, turn), and the probe count."""
    utterances: dict[tuple[str, str, int], str] = {}
    grouped: dict[tuple[str, str, str, str], set[int]] = defaultdict(set)
    probes = 0
    for p in _lines(root / "sgd" / "derived_slot_update_probes.jsonl"):
        probes += 1
        key = (p["file"], p["dialogue_id"], p["service"], p["slot"])
        for side in ("old", "new"):
            turn = int(p[f"{side}_turn_index"])
            grouped[key].add(turn)
            utterances[(p["file"], p["dialogue_id"], turn)] = p[f"{side}_utterance"].strip()
    chains = [SlotChain(*key, tuple(sorted(turns))) for key, turns in grouped.items()]
    return chains, utterances, probes


def _words(name: str) -> str:
    return re.sub(r"_\d+$", "", name).replace("_", " ").lower()


def sgd_suites(root: Path, cases: int | None = None, seed: int = 7) -> tuple[Suite, Suite]:
    """(versions, separate turns) suites over all chains, or a seeded sample of ``cases``
    chains; every chain of the sampled chains' dialogues is ingested (distractors)."""
    chains, utterances, probes = sgd_chains(root)
    asked = chains
    if cases is not None and cases < len(chains):
        asked = random.Random(seed).sample(chains, cases)  # noqa: S311 - sampling
    dialogues = {(c.file, c.dialogue_id) for c in asked}
    ingested = [c for c in chains if (c.file, c.dialogue_id) in dialogues]
    order = {d: n for n, d in enumerate(sorted(dialogues))}
    versions, separate = Suite("sgd", limit=10), Suite("sgd_turns", limit=10)
    docs: dict[tuple[str, str, str, int], list[str]] = defaultdict(list)

    def add(suite: Suite, chain: SlotChain, turn: int, key: str, event_id: str) -> None:
        tenant = f"{suite.name.replace('_', '-')}-{chain.tenant_suffix}"
        at = SGD_EPOCH + timedelta(hours=order[(chain.file, chain.dialogue_id)], minutes=turn)
        suite.events.append(
            {
                "event_id": event_id,
                "tenant_id": tenant,
                "memory_key": key,
                "entity_type": "customer",
                "entity_id": chain.user,
                "fact_type": "dialogue_state",
                "content": utterances[(chain.file, chain.dialogue_id, turn)],
                "source_system": "dialogue",
                "occurred_at": at.isoformat(),
            }
        )
        docs[(suite.name, chain.file, chain.dialogue_id, turn)].append(doc_id(tenant, event_id))

    seen_turns: set[tuple[str, str, int]] = set()
    for chain in sorted(ingested, key=lambda c: (c.file, c.dialogue_id, c.service, c.slot)):
        memory = f"{chain.user}|{chain.service}|{chain.slot}"
        for turn in chain.turns:
            add(versions, chain, turn, memory, f"{memory}|{turn}")
            if (chain.file, chain.dialogue_id, turn) not in seen_turns:
                seen_turns.add((chain.file, chain.dialogue_id, turn))
                add(separate, chain, turn, f"{chain.user}|{turn}", f"{chain.user}|{turn}")
    by_dialogue: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for (name, file, dialogue, _), ids in docs.items():
        by_dialogue[(name, file, dialogue)].update(ids)
    for suite in (versions, separate):
        suite.events.sort(key=lambda e: (e["tenant_id"], e["occurred_at"]))
        for chain in asked:
            suite.questions.append(_sgd_question(suite.name, chain, docs, by_dialogue))
        suite.notes.append(
            f"{probes} probes → {len(chains)} slot chains; {len(asked)} asked, "
            f"{len(suite.events)} events from {len(dialogues)} dialogues"
        )
    return versions, separate


def _sgd_question(
    name: str,
    chain: SlotChain,
    docs: dict[tuple[str, str, str, int], list[str]],
    by_dialogue: dict[tuple[str, str, str], set[str]],
) -> Question:
    def ids(turns: tuple[int, ...]) -> frozenset[str]:
        return frozenset(d for t in turns for d in docs[(name, chain.file, chain.dialogue_id, t)])

    return Question(
        f"{chain.user}|{chain.service}|{chain.slot}",
        f"{name.replace('_', '-')}-{chain.tenant_suffix}",
        f"What {_words(chain.slot)} does the user want now (for {_words(chain.service)})?",
        name,
        ids(chain.turns[-1:]),
        {"user_id": chain.user},
        stale=ids(chain.turns[:-1]),
        baseline_filter=frozenset(by_dialogue[(name, chain.file, chain.dialogue_id)]),
    )
