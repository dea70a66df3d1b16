"""Attributes a text names, canonical so that a question and a record compare them.

``attributes_in(text)``: colours (``colours``), ports, display panels, quantities with their
units, protection ratings ("IPX7") and models or ids — what tells a catalogue's variants apart
("the sand 128 GB one with USB-C"), in English and Chinese, written apart or together
("白色micro-USB30000mAh"). A rating is no model: "is it rated IPX5?" names no product.

Pure: stdlib only.
"""

from __future__ import annotations

import re
from functools import lru_cache

from memstream.services.domain.colours import colours_in

# Ports and connectors; "Type-C" is how USB-C is also called.
_PORTS = (
    (re.compile(r"(?<![a-z0-9])(?:usb[\s-]?c|type[\s-]?c)(?![a-z0-9])", re.IGNORECASE), "usb-c"),
    (re.compile(r"(?<![a-z0-9])micro[\s-]?usb(?![a-z0-9])", re.IGNORECASE), "micro-usb"),
    (re.compile(r"(?<![a-z0-9])usb[\s-]?a(?![a-z0-9])", re.IGNORECASE), "usb-a"),
    (re.compile(r"(?<![a-z0-9])lightning(?![a-z0-9])", re.IGNORECASE), "lightning"),
    (re.compile(r"(?<![a-z0-9])hdmi(?![a-z0-9])", re.IGNORECASE), "hdmi"),
    (re.compile(r"(?<![a-z0-9])thunderbolt(?![a-z0-9])", re.IGNORECASE), "thunderbolt"),
    (re.compile(r"(?<![a-z0-9])magsafe(?![a-z0-9])", re.IGNORECASE), "magsafe"),
)
# A quantity with a unit: storage, capacity, power, size ("256GB", "256 GB", "10000mAh", "15寸").
_UNITS = {
    "gb": "gb",
    "tb": "tb",
    "mb": "mb",
    "mah": "mah",
    "wh": "wh",
    "w": "w",
    "mm": "mm",
    "cm": "cm",
    "inch": "inch",
    "inches": "inch",
    '"': "inch",
    "英寸": "inch",
    "寸": "inch",
    "ml": "ml",
    "kg": "kg",
    "hz": "hz",
}
# "256G" is how storage is often written (in Chinese above all): G alone means gigabytes for
# the storage sizes, and grams otherwise ("500g").
_STORAGE_SIZES = frozenset({"8", "16", "32", "64", "128", "256", "512", "1024"})
_QUANTITY = re.compile(
    r"(?<![a-z0-9.])(\d+(?:\.\d+)?)\s*-?\s*(mah|gb|tb|mb|wh|hz|mm|cm|inches|inch|ml|kg|g|w|\"|英寸|寸)"
    r"(?![a-z0-9])",
    re.IGNORECASE,
)
# Panels, a display's variant dimension beside its size and refresh rate.
_PANELS = (
    (re.compile(r"(?<![a-z0-9])(?:amoled|oled)(?![a-z0-9])", re.IGNORECASE), "oled"),
    (re.compile(r"(?<![a-z0-9])ips(?![a-z0-9])", re.IGNORECASE), "ips"),
    (re.compile(r"(?<![a-z0-9])mini[\s-]?led(?![a-z0-9])", re.IGNORECASE), "mini-led"),
    (re.compile(r"(?<![a-z0-9])qled(?![a-z0-9])", re.IGNORECASE), "qled"),
    (
        re.compile(r"(?<![A-Za-z0-9])VA(?![A-Za-z0-9])|(?<![a-z0-9])va(?=\s+panel)", re.IGNORECASE),
        "va",
    ),
)
# Attributes written together, as Chinese text often has them ("白色micro-USB30000mAh",
# "128G4G", "165HzOLED24英寸"): a quantity followed by more, or a port or panel followed by a
# number, is two attributes.
_GLUED_QUANTITY = re.compile(
    r"(?<![A-Za-z])(\d+(?:\.\d+)?(?>mah|ghz|mhz|gb|tb|mb|wh|hz|mm|cm|ml|kg|g|w))(?=[A-Za-z0-9])",
    re.IGNORECASE,
)
_GLUED_NAME = re.compile(
    r"(?<![A-Za-z])(usb[\s-]?c|type[\s-]?c|micro[\s-]?usb|usb[\s-]?a|lightning|hdmi|thunderbolt"
    r"|magsafe|amoled|oled|ips|qled|mini[\s-]?led|VA)(?=\d)",
    re.IGNORECASE,
)


def _unglued(text: str) -> str:
    return _GLUED_NAME.sub(r"\1 ", _GLUED_QUANTITY.sub(r"\1 ", text))


# A model or id: letters and digits mixed ("XR-500", "S24", "WH-1000XM5").
_MODEL = re.compile(
    r"(?<![A-Za-z0-9])(?=[A-Za-z0-9-]*\d)(?=[A-Za-z0-9-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*"
    r"(?![A-Za-z0-9])"
)


def _squash(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.casefold())


# Memo for the texts one request ranks (a candidate's text is read by several rules); kept
# small: its keys are memory contents (up to 32 KiB each), held until evicted.
@lru_cache(maxsize=512)
def attributes_in(text: str) -> frozenset[str]:
    """The attributes a text names, canonical so that a question and a record compare: colour
    (``colour:blue`` for "blue", "Blue" or "蓝色"), port (``port:usb-c`` for "USB-C", "usb c",
    "Type-C"), display panel (``panel:oled``), quantity with its unit (``qty:256gb`` for
    "256GB", "256 GB"), model or id (``model:xr500`` for "XR-500", "xr500"; a quantity is not
    also a model). Attributes written together ("128G4G", "白色micro-USB30000mAh") are read
    one by one."""
    found: set[str] = set()
    found.update(f"colour:{name}" for name in colours_in(text))
    text = _unglued(text)
    for pattern, name in _PORTS:
        if pattern.search(text):
            found.add(f"port:{name}")
    for pattern, name in _PANELS:
        if pattern.search(text):
            found.add(f"panel:{name}")
    quantities: set[str] = set()
    for value, unit in _QUANTITY.findall(text):
        unit = unit.casefold()
        storage = value in _STORAGE_SIZES
        canonical = ("gb" if storage else "g") if unit == "g" else _UNITS[unit]
        found.add(f"qty:{value}{canonical}")
        quantities.add(f"{value}{unit}".casefold())
    for match in _MODEL.finditer(text):
        token = match.group(0)
        squashed = _squash(token)
        if squashed in quantities or re.fullmatch(r"\d+(?:\.\d+)?[a-z]{1,3}", squashed):
            continue  # a quantity ("256GB", "5G"), not a model
        if re.fullmatch(r"(?:usb|type)c?|usba|microusb", squashed):
            continue
        if re.fullmatch(r"ip[x\d][x\d]", squashed):  # a protection rating ("IPX5", "IP68")
            found.add(f"rating:{squashed}")
            continue
        found.add(f"model:{squashed}")
    return frozenset(found)
