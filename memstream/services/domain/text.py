"""Text: the small token measures the domain compares texts and attributes with.

``tokens`` (Latin words and ids kept whole, single CJK characters), ``agreement`` (Jaccard
overlap of two texts' tokens) and ``attribute_clash`` (shared attribute keys with equal or
different values). Used by trust (cross-validation) and arbitration. ``stem``: the part of an
English word that its inflections share, which keyword search matches as a word prefix;
``inflections``: for a stem too short to be a safe prefix, the whole words it stands for.
``searchable``: what keyword search sees of a memory (content, attributes, the key's words).
``look_alike``: two entity ids that can be mistaken for one another.
Pure. Must not import any I/O library.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

# Latin words/ids (keeping "xr-500", "usb-c" whole) and single CJK characters, which carry a
# word's meaning in Chinese text that has no spaces.
_TOKEN = re.compile(r"[0-9a-z]+(?:[-_.][0-9a-z]+)*|[\u3400-\u9fff]", re.IGNORECASE)


def tokens(text: str) -> frozenset[str]:
    return frozenset(match.group(0).casefold() for match in _TOKEN.finditer(text))


def agreement(left: str, right: str) -> float:
    """Jaccard overlap of the two texts' tokens, in [0, 1] (two empty texts agree: 1)."""
    a, b = tokens(left), tokens(right)
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def _norm_value(value: str) -> str:
    return " ".join(value.casefold().split())


def attribute_clash(left: Mapping[str, str], right: Mapping[str, str]) -> tuple[int, int]:
    """(keys both share with equal values, keys both share with different values)."""
    same = differ = 0
    for key in left.keys() & right.keys():
        if _norm_value(left[key]) == _norm_value(right[key]):
            same += 1
        else:
            differ += 1
    return same, differ


# Inflectional endings, longest first. Derivational ones (-er, -ly, -ment, -ness) are left alone:
# they change the word ("dinner", "early", "apartment") more often than they inflect it.
_ENDINGS = ("ings", "ing", "ions", "ion", "ied", "ies", "ed", "es", "s")
_SIBILANT = ("ss", "sh", "ch", "x", "z")  # "-es" is a plural / 3rd-person ending only after these
_NOT_PLURAL = ("ss", "us", "is")  # "class", "campus", "tennis": the final "s" is the word's
_DOUBLED = frozenset("bdgmnprt")  # "running" → "run", "shopped" → "shop" (not "ll", "ss", "zz")
_LETTERS = re.compile(r"[a-z]+")


def _vowel(text: str) -> bool:
    return any(c in "aeiouy" for c in text)


def _strip(word: str) -> tuple[str, str]:
    """(the word without its inflectional ending, the ending), or (word, "")."""
    for ending in _ENDINGS:
        if not word.endswith(ending):
            continue
        base = word[: -len(ending)]
        if ending == "s" and word.endswith(_NOT_PLURAL):
            break
        if ending == "es" and not base.endswith(_SIBILANT):
            continue  # "races": only the "s" is the ending
        shortest = 4 if ending in ("ied", "ies") else 3  # "tied", "dies" stay
        if len(base) < shortest or not _vowel(base):
            continue  # "things": not "th" + "-ings", but "thing" + "-s"
        if ending == "ed" and base[-1] in "aeiou":
            continue  # "bread", "speed", "agreed": no verb + "-ed" here
        return base, ending
    return word, ""


def stem(word: str) -> str:
    """The prefix that ``word``'s inflected forms share: an inflectional ending (-ing, -ed, -s,
    -es, -ion, -ies) removed, then (after -ing/-ed) a doubled final consonant halved, and a
    final silent "e" after a consonant other than "r" dropped where four letters remain —
    "painting"/"painted"/"paints" → "paint", "dance"/"dancing" → "danc", "running" → "run",
    "hiking"/"hiked" → "hik", "classes" → "class", "hobbies" → "hobb", "adoption" → "adopt".
    A stem of four letters or more is searched as the start of a word ("danc" finds "dance",
    "danced", "dancing"), as a search engine's truncation does; a shorter one by its
    ``inflections``. Lower-case ASCII words only: anything else (an id, a number, a non-English
    word) is returned as it is; a stem keeps at least three letters and a vowel, and is never
    longer than the word."""
    if _LETTERS.fullmatch(word) is None:
        return word
    base, ending = _strip(word)
    doubled = len(base) >= 4 and base[-1] == base[-2] and base[-1] in _DOUBLED
    if doubled and ending in ("ing", "ings", "ed"):
        base = base[:-1]
    if len(base) >= 5 and base.endswith("e") and base[-2] not in "aeiouyr" and _vowel(base[:-1]):
        base = base[:-1]
    return base


SAFE_PREFIX = 4  # letters: a shorter stem as a prefix finds other words ("go" in "gold")


def inflections(word: str) -> tuple[str, ...]:
    """The whole words a short word or stem (under ``SAFE_PREFIX`` letters) stands for: itself
    and its regular inflections, with the last consonant doubled before -ing/-ed ("run" →
    "runs", "running"), and with a silent "e" restored when ``word`` is a stem shorter than
    the word it came from ("hik" of "hiking" → "hike", "hikes", "hiked", "hiking"; "car" alone
    never finds "care")."""
    stemmed = stem(word)
    base = stemmed if len(stemmed) < SAFE_PREFIX else word  # callers pass short stems only
    endings = ["", "s", "es", "ed", "ing", base[-1] + "ing", base[-1] + "ed"]
    if stemmed != word:
        endings.append("e")
    return tuple(dict.fromkeys((word, *(base + ending for ending in endings))))


KEY_WORD_MIN = 3  # letters: shorter parts of a key are ids or codes ("C-1", "D1:3"), not words
_KEY_WORD = re.compile(r"[A-Za-z]+")


def key_words(memory_key: str) -> tuple[str, ...]:
    """The words a memory key names its memory's subject with: its runs of ASCII letters of at
    least ``KEY_WORD_MIN``, lower-cased, each once, in order ("customer:C-1|contact_preference"
    → customer, contact, preference; "order:1042" → order; "D1:3" → none). A key is the
    integrator's name for what the memory is about — the attribute of an entity a state tracker
    updates, the kind of record — so a question that names it ("what contact preference …",
    "which city … now") finds the memory that holds it, not a neighbour whose text happens to
    say the same thing. Migration 0013 computes the same words in SQL for versions written
    before: keep the two equal."""
    found = (word.lower() for word in _KEY_WORD.findall(memory_key))
    return tuple(dict.fromkeys(word for word in found if len(word) >= KEY_WORD_MIN))


def searchable(content: str, attributes: Mapping[str, str], memory_key: str) -> str:
    """What keyword search sees of a memory: its content, every attribute as "name value", and
    its key's words (``key_words``), space-separated, empty parts left out."""
    values = " ".join(f"{k} {v}" for k, v in sorted(attributes.items()))
    text = f"{content} {values}".strip()
    return " ".join(part for part in (text, " ".join(key_words(memory_key))) if part)


_NAME_TOKEN = re.compile(r"[A-Za-z0-9]+|[\u3400-\u9fff]+")
_CJK = re.compile(r"[\u3400-\u9fff]")
_LATIN_RUN = re.compile(r"[A-Za-z0-9]+")


@lru_cache(maxsize=4096)
def name_tokens(name: str) -> tuple[str, ...]:
    """A name's tokens: runs of Latin letters and digits, and runs of Chinese characters."""
    return tuple(_NAME_TOKEN.findall(name))


def name_in(tokens: tuple[str, ...], text: str) -> bool:
    """Whether every token is in ``text``: a Latin one as a whole word, case aside (between
    characters that are not Latin letters or digits), a Chinese one as a part."""
    words = _latin_words(text)
    return all(token in text if _CJK.search(token) else token.casefold() in words
               for token in tokens)  # fmt: skip


@lru_cache(maxsize=256)
def _latin_words(text: str) -> frozenset[str]:
    """The runs of Latin letters and digits in ``text``, casefolded: a Latin token is in the
    text as a whole word exactly when it is one of them (no pattern compiled per name)."""
    return frozenset(run.casefold() for run in _LATIN_RUN.findall(text))


@lru_cache(maxsize=4096)
def _id_parts(entity_id: str) -> frozenset[str]:
    """An id's parts: runs of letters and runs of digits ("AX-310" → ax, 310)."""
    return frozenset(re.findall(r"[^\W\d_]+|\d+", entity_id.casefold()))


@lru_cache(maxsize=4096)
def _shape(entity_id: str) -> str:
    """ "88213" → "d5", "AX-310" → "l2-d3": the kinds and lengths of an id's runs."""
    runs = re.findall(r"[^\W\d_]+|\d+|[\W_]+", entity_id.casefold())
    return "".join(
        f"d{len(r)}" if r.isdigit() else ("-" if not r[0].isalnum() else f"l{len(r)}") for r in runs
    )


def look_alike(one: str, other: str) -> bool:
    """Two entity ids that can be mistaken for one another: they share a part ("AX-130" and
    "AX-310", "Nexa R71 Graphite" and "Nexa R71 Silver", "C-17" and "C-18"), or both are
    numbered alike ("88213" and "99120"). Two people's names that share no part ("Caroline",
    "Melanie") name different entities, not look-alikes."""
    if _id_parts(one) & _id_parts(other):
        return True
    return any(ch.isdigit() for ch in one + other) and _shape(one) == _shape(other)
