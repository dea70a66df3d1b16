"""The bitemporal chart of one memory, as inline SVG rendered on the server (no script).

x is valid time (when a version was true), y is transaction time (when memstream knew it,
growing downwards): each version is the rectangle valid_from→valid_to × recorded_at→
superseded_at, open edges running to "now". A retraction is a red cross where it begins; a late
event (recorded after a version that is valid later) is drawn hatched; an erased version is a
grey dashed tombstone labelled "erased", its title saying when and by which erasure (never what
it held).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from html import escape

from memstream.services.domain.model import MemoryVersion, Op

WIDTH, HEIGHT = 900, 320
LEFT, TOP, RIGHT, BOTTOM = 70, 20, 20, 50
PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#b279a2", "#72b7b2", "#eeca3b", "#9d755d")


def late_versions(chain: Sequence[MemoryVersion]) -> set[str]:
    """Versions recorded after another version whose valid time starts later."""
    return {
        v.version_id
        for v in chain
        if any(o.valid_from > v.valid_from and o.recorded_at < v.recorded_at for o in chain)
    }


def timeline_svg(
    chain: Sequence[MemoryVersion], now: datetime, erased: Mapping[str, str] | None = None
) -> str:
    """``erased``: by version id, the tombstone text of the erased versions."""
    erased = erased or {}
    if not chain:
        return ""
    valid = [v.valid_from for v in chain] + [v.valid_to or now for v in chain] + [now]
    known = [v.recorded_at for v in chain] + [v.superseded_at or now for v in chain] + [now]
    x0, x1 = min(valid), max(valid)
    y0, y1 = min(known), max(known)
    span_x = max((x1 - x0).total_seconds(), 1.0)
    span_y = max((y1 - y0).total_seconds(), 1.0)
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(moment: datetime) -> float:
        return LEFT + inner_w * (moment - x0).total_seconds() / span_x

    def y(moment: datetime) -> float:
        return TOP + inner_h * (moment - y0).total_seconds() / span_y

    late = late_versions(chain)
    y_format = "%H:%M:%S" if span_y < 86_400 else "%m-%d %H:%M"
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{HEIGHT}' "
        f"viewBox='0 0 {WIDTH} {HEIGHT}' role='img' aria-label='bitemporal timeline' "
        "id='timeline'>",
        "<defs><pattern id='late' width='6' height='6' patternUnits='userSpaceOnUse' "
        "patternTransform='rotate(45)'><line x1='0' y1='0' x2='0' y2='6' stroke='#333' "
        "stroke-width='1.5'/></pattern></defs>",
        f"<rect x='{LEFT}' y='{TOP}' width='{inner_w}' height='{inner_h}' fill='#fafbfc' "
        "stroke='#c9d0da'/>",
    ]
    for index, v in enumerate(chain):
        colour = PALETTE[index % len(PALETTE)]
        left, right = x(v.valid_from), x(v.valid_to or now)
        top, bottom = y(v.recorded_at), y(v.superseded_at or now)
        label = f"v{v.version}"
        title = escape(
            f"v{v.version} {v.op.value}: valid {v.valid_from:%Y-%m-%d %H:%M} → "
            f"{_short(v.valid_to)}, known {v.recorded_at:%Y-%m-%d %H:%M} → "
            f"{_short(v.superseded_at)}"
        )
        tombstone = erased.get(v.version_id)
        if tombstone is not None:
            title = escape(f"v{v.version} {v.op.value}: {tombstone}")
        if v.op is Op.RETRACT:
            cx, cy = x(v.valid_from), y(v.recorded_at)
            near_right = cx > WIDTH - RIGHT - 120
            tx, anchor = (cx - 9, "end") if near_right else (cx + 9, "start")
            parts.append(
                f"<g class='version retract' data-version='{v.version}'><title>{title}</title>"
                f"<path d='M{cx - 7:.1f},{cy - 7:.1f}L{cx + 7:.1f},{cy + 7:.1f}M{cx + 7:.1f},"
                f"{cy - 7:.1f}L{cx - 7:.1f},{cy + 7:.1f}' stroke='#c0392b' stroke-width='3'/>"
                f"<text x='{tx:.1f}' y='{cy + 18:.1f}' fill='#c0392b' text-anchor='{anchor}'>"
                f"{label} retracted{' · erased' if tombstone is not None else ''}"
                "</text></g>"
            )
            continue
        if tombstone is not None:
            width, height = max(right - left, 3.0), max(bottom - top, 3.0)
            parts.append(
                f"<g class='version erased' data-version='{v.version}'><title>{title}</title>"
                f"<rect x='{left:.1f}' y='{top:.1f}' width='{width:.1f}' height='{height:.1f}' "
                "fill='#d5d8dc' fill-opacity='0.7' stroke='#566573' stroke-width='2' "
                "stroke-dasharray='6 4'/>"
                f"<text x='{left + 4:.1f}' y='{top + 14:.1f}' font-size='12' fill='#34495e'>"
                f"{label} erased</text></g>"
            )
            continue
        width, height = max(right - left, 3.0), max(bottom - top, 3.0)
        fill = "url(#late)" if v.version_id in late else colour
        parts.append(
            f"<g class='version' data-version='{v.version}'><title>{title}</title>"
            f"<rect x='{left:.1f}' y='{top:.1f}' width='{width:.1f}' height='{height:.1f}' "
            f"fill='{fill}' fill-opacity='0.55' stroke='{colour}' stroke-width='2'/>"
            f"<text x='{left + 4:.1f}' y='{top + 14:.1f}' font-size='12'>{label}"
            f"{' (late)' if v.version_id in late else ''}</text></g>"
        )
    parts += [
        f"<text x='{LEFT}' y='{HEIGHT - 28}' font-size='11'>{x0:%Y-%m-%d %H:%M}</text>",
        f"<text x='{WIDTH - RIGHT}' y='{HEIGHT - 28}' font-size='11' text-anchor='end'>"
        f"{x1:%Y-%m-%d %H:%M}</text>",
        f"<text x='{LEFT + inner_w / 2:.0f}' y='{HEIGHT - 8}' font-size='12' "
        "text-anchor='middle'>valid time → (when it was true)</text>",
        f"<text x='12' y='{TOP + inner_h / 2:.0f}' font-size='12' text-anchor='middle' "
        f"transform='rotate(-90 12 {TOP + inner_h / 2:.0f})'>transaction time ↓ (when known)"
        "</text>",
        f"<text x='{LEFT - 4}' y='{TOP + 10}' font-size='10' text-anchor='end'>"
        f"{y0.strftime(y_format)}</text>",
        f"<text x='{LEFT - 4}' y='{TOP + inner_h}' font-size='10' text-anchor='end'>"
        f"{y1.strftime(y_format)}</text>",
        "</svg>",
    ]
    return "".join(parts)


def _short(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M") if moment is not None else "now"
