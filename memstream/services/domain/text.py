"""Text: the small token measures the domain compares texts and attributes with.

``tokens`` (Latin words and ids kept whole, single CJK characters), ``agreement`` (Jaccard
overlap of two texts' tokens) and ``attribute_clash`` (shared attribute keys with equal or
different values). Used by trust (cross-validation) and arbitration.
Pure. Must not import any I/O library.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

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
