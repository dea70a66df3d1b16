"""Colour names, English and Chinese, each read as one canonical colour.

A catalogue's variants differ in their colour ("Pavo HC27 sand", "Pavo HC27 ivory"), and makers
name colours beyond the basic ones: sand, ivory, coral, graphite, midnight blue, sage green,
"沙色", "象牙白", "午夜蓝". ``colours_in(text)`` returns the canonical names a text states, so
that a question and a record compare whatever their language ("sand" and "沙色" are one colour):

- the names of ``COLOURS`` (English as whole words, case-insensitive, except the names that
  are mostly something else: "cream", "midnight", "sage" alone; Chinese as substrings), the
  longest first: "midnight blue" is one colour, not also "blue";
- in Chinese, any other colour written "…色" ("咖啡色", "雾霾色"): the character before "色"
  names it (``colour:雾``), unless the two characters are a word that is no colour ("颜色",
  "特色", "角色", "出色", "深色" …). Both sides of a comparison read a name the same way, so
  a colour the table does not know still tells two variants apart.

Pure: stdlib only.
"""

from __future__ import annotations

import re
from functools import lru_cache

# canonical English name → its Chinese names (the first is the usual one)
COLOURS: dict[str, tuple[str, ...]] = {
    "black": ("黑色",),
    "white": ("白色",),
    "red": ("红色",),
    "blue": ("蓝色",),
    "green": ("绿色",),
    "yellow": ("黄色",),
    "orange": ("橙色",),
    "purple": ("紫色",),
    "pink": ("粉色", "粉红色"),
    "grey": ("灰色",),
    "silver": ("银色",),
    "gold": ("金色",),
    "brown": ("棕色", "褐色"),
    "navy": ("藏青色", "藏青", "海军蓝"),
    "beige": ("米色", "米白色"),
    "sand": ("沙色", "沙漠色"),
    "ivory": ("象牙白", "象牙色"),
    "cream": ("奶油色", "奶白色"),
    "coral": ("珊瑚色", "珊瑚红", "珊瑚粉"),
    "graphite": ("石墨色", "石墨黑", "石墨灰"),
    "charcoal": ("炭黑色", "炭灰色"),
    "space grey": ("深空灰",),
    "midnight blue": ("午夜蓝",),
    "midnight": ("午夜色",),
    "sky blue": ("天蓝色", "天蓝"),
    "sage green": ("鼠尾草绿",),
    "sage": ("鼠尾草色",),
    "mint green": ("薄荷绿",),
    "olive": ("橄榄色",),
    "olive green": ("橄榄绿",),
    "forest green": ("森林绿",),
    "emerald": ("祖母绿",),
    "teal": ("水鸭蓝", "蓝绿色"),
    "turquoise": ("绿松石色",),
    "cyan": ("青色",),
    "lavender": ("薰衣草紫",),
    "lilac": ("丁香紫",),
    "violet": ("紫罗兰色",),
    "indigo": ("靛蓝色", "靛蓝"),
    "burgundy": ("酒红色", "酒红"),
    "maroon": ("栗色",),
    "khaki": ("卡其色",),
    "champagne": ("香槟色", "香槟金"),
    "rose gold": ("玫瑰金",),
    "titanium": ("钛金色", "钛色"),
    "bronze": ("古铜色",),
    "copper": ("铜色",),
    "pearl white": ("珍珠白",),
    "obsidian": ("黑曜石色", "曜石黑"),
    "slate": ("石板灰",),
    "taupe": ("灰褐色",),
}
COLOUR_ALIASES = {
    "gray": "grey",
    "space gray": "space grey",
    "slate grey": "slate",
    "slate gray": "slate",
}

# Two characters ending in 色 that name no colour (or no one colour).
_NOT_COLOURS = frozenset(
    {
        "颜色", "特色", "角色", "出色", "脸色", "景色", "物色", "成色", "货色", "本色",
        "神色", "变色", "褪色", "夜色", "配色", "彩色", "音色", "肤色", "气色", "姿色",
        "春色", "暮色", "声色", "原色", "杂色", "染色", "调色", "换色", "选色", "双色",
        "纯色", "多色", "单色", "同色", "异色", "深色", "浅色", "亮色", "暗色", "底色",
        "三色", "四色", "五色", "七色", "各色", "什色", "失色", "逊色", "绝色", "好色",
        "女色", "酒色", "菜色", "花色", "退色", "着色", "上色", "润色", "特别色", "什么色",
    }
)  # fmt: skip

# English names that are mostly something else ("ice cream", "midnight", "sage advice", "a
# bronze medal"): a colour only in a longer name ("midnight blue", "sage green").
_NOT_ALONE_EN = frozenset(
    {
        "cream", "midnight", "sage", "champagne", "charcoal", "copper", "bronze", "titanium",
        "slate", "lavender", "violet", "emerald", "olive", "burgundy",
    }
)  # fmt: skip
EN_NAMES = tuple(
    sorted(
        (n for n in (*COLOURS, *COLOUR_ALIASES) if n not in _NOT_ALONE_EN),
        key=len,
        reverse=True,
    )
)
ZH_NAMES = tuple(sorted((n for names in COLOURS.values() for n in names), key=len, reverse=True))
_EN_NAMES = EN_NAMES
_EN = re.compile(
    r"(?<![a-z])(" + "|".join(r"\s+".join(map(re.escape, n.split())) for n in _EN_NAMES) + r")"
    r"(?![a-z])",
    re.IGNORECASE,
)
_ZH_NAMES = sorted(
    ((name, english) for english, names in COLOURS.items() for name in names),
    key=lambda pair: len(pair[0]),
    reverse=True,
)
_ZH_SE = re.compile(r"([\u4e00-\u9fff])色")


@lru_cache(maxsize=512)
def colours_in(text: str) -> frozenset[str]:
    """The canonical colours ``text`` names (see the module docstring)."""
    found: set[str] = set()
    for match in _EN.finditer(text):
        name = " ".join(match.group(1).casefold().split())
        found.add(COLOUR_ALIASES.get(name, name))
    taken: list[tuple[int, int]] = []
    for name, english in _ZH_NAMES:
        start = text.find(name)
        while start >= 0:
            end = start + len(name)
            if not any(start < e and s < end for s, e in taken):
                taken.append((start, end))
                found.add(english)
            start = text.find(name, end)
    for match in _ZH_SE.finditer(text):
        start, end = match.span()
        if any(start < e and s < end for s, e in taken) or match.group(0) in _NOT_COLOURS:
            continue
        if (
            text[max(0, start - 2) : end] in _NOT_COLOURS
            or text[max(0, start - 1) : end] == "什么色"
        ):
            continue
        found.add(match.group(1))
    return frozenset(found)
