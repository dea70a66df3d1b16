"""The audit timeline pages at ``/ui``, rendered on the server (HTML + inline SVG, no script).

``/ui/memories/{memory_key}?tenant_id=`` — a memory's versions on the valid-time ×
transaction-time chart, each with its flags (current, superseded, retracted, late, erased) and the
trust components it was last served with, and the requests that returned it; an erased version is
a tombstone (erased when, erasure id, reason), its content gone. ``/ui/requests/{id}`` —
what the agent was told and why: the gate, every result's scores and conflicts, with a link to
each memory's timeline. A browser authenticates with the ``Authorization`` header, or signs in
once (a form, or a one-page link from ``memstream ui-link``: ``memstream.gateway.ui_auth``);
no credential ever travels in a URL.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from html import escape
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from memstream.gateway.auth import DoorError
from memstream.gateway.chart import late_versions, timeline_svg
from memstream.gateway.pages import frame
from memstream.gateway.service import Doors
from memstream.gateway.ui_auth import AuthHeader, SessionCookie, UiSessions, add_sign_in, viewer
from memstream.services.domain.model import MemoryVersion, Op
from memstream.services.ports import ErasureMark

COMPONENTS = ("authority", "recency", "binding", "state", "cross_validation", "trust", "final")


def _fmt(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S") if moment is not None else "now"


def _memory_link(key: str, tenant: str) -> str:
    return f"/ui/memories/{quote(key, safe='')}?tenant_id={quote(tenant, safe='')}"


def _flags(v: MemoryVersion, late: set[str]) -> list[str]:
    flags = []
    if v.op is Op.RETRACT:
        flags.append("retraction")
    if v.is_current:
        flags.append("current")
    if v.superseded_at is not None:
        flags.append("superseded")
    elif v.valid_to is not None and v.op is not Op.RETRACT:
        flags.append("closed")
    if v.version_id in late:
        flags.append("late")
    return flags


def tombstone(mark: ErasureMark) -> str:
    why = f" · {mark.reason}" if mark.reason else ""
    return f"erased {_fmt(mark.erased_at)} UTC · erasure {mark.erasure_id}{why}"


def _scores_by_version(answers: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Each version's scores as last served (answers come newest first)."""
    seen: dict[str, dict[str, float]] = {}
    for answer in answers:
        for result in answer["reply"].get("results", []):
            seen.setdefault(result["version_id"], result["scores"])
    return seen


def memory_page(
    tenant: str,
    key: str,
    chain: list[MemoryVersion],
    answers: list[dict[str, Any]],
    now: datetime,
    marks: Mapping[str, ErasureMark] | None = None,
) -> str:
    marks = marks or {}
    late = late_versions(chain)
    scores = _scores_by_version(answers)
    head = "".join(f"<th>{c.replace('_', ' ')}</th>" for c in COMPONENTS)
    rows = []
    for v in chain:
        served = scores.get(v.version_id)
        cells = "".join(
            f"<td>{served[c]:.3f}</td>" if served and c in served else "<td>·</td>"
            for c in COMPONENTS
        )
        mark = marks.get(v.version_id)
        names = _flags(v, late) + (["erased"] if mark is not None else [])
        flags = " ".join(f"<span class='tag'>{f}</span>" for f in names)
        content = (
            f"<td class='tombstone'>{escape(tombstone(mark))}</td>"
            if mark is not None
            else f"<td>{escape(v.content[:160])}</td>"
        )
        kind = "version-row erased" if mark is not None else "version-row"
        rows.append(
            f"<tr class='{kind}' data-version='{v.version}'><td class='m'>v{v.version}</td>"
            f"<td>{escape(v.op.value)}</td><td>{flags}</td>"
            f"<td>{_fmt(v.valid_from)} → {_fmt(v.valid_to)}</td>"
            f"<td>{_fmt(v.recorded_at)} → {_fmt(v.superseded_at)}</td>"
            f"<td>{escape(v.source_system)} · {escape(v.status)}</td>{cells}{content}</tr>"
        )
    audit = []
    for answer in answers:
        for rank, r in enumerate(answer["reply"].get("results", []), start=1):
            if r["memory_key"] != key:
                continue
            rid = answer["request_id"]
            audit.append(
                f"<tr class='audit-row'><td><a href='/ui/requests/{quote(rid, safe='')}'>"
                f"{escape(rid)}</a></td><td>{_fmt(answer['answered_at'])}</td>"
                f"<td>{escape(str(answer['request'].get('query', '')))}</td><td>#{rank}</td>"
                f"<td>v{r['version']}</td><td>{r['scores']['final']:.3f}</td>"
                f"<td>{r['scores']['trust']:.3f}</td></tr>"
            )
    erased_note = f" ({len(marks)} erased)" if marks else ""
    body = (
        f"<h1>Timeline of <code>{escape(key)}</code> · tenant {escape(tenant)}</h1>"
        f"<p>{len(chain)} versions{erased_note} · rendered {_fmt(now)} UTC · rectangles span "
        "valid time (across) and transaction time (down); hatched: late; red cross: retraction;"
        " grey dashed: erased.</p>"
        f"{timeline_svg(chain, now, {k: tombstone(m) for k, m in marks.items()})}"
        "<h2>Versions</h2><table id='versions'><tr><th>v</th><th>op</th><th></th>"
        f"<th>valid from → to</th><th>recorded → superseded</th><th>source · status</th>{head}"
        f"<th>content</th></tr>{''.join(rows)}</table>"
        "<p>Scores: the trust components of the last answer that served each version.</p>"
        "<h2>Requests that returned it</h2><table id='audit'><tr><th>request</th>"
        "<th>answered</th><th>question</th><th>rank</th><th>version</th><th>final</th>"
        f"<th>trust</th></tr>{''.join(audit) or '<tr><td colspan=7>none</td></tr>'}</table>"
    )
    return frame(f"memstream · {key}", body)


def request_page(request_id: str, answers: list[dict[str, Any]]) -> str:
    parts = [f"<h1>Request <code>{escape(request_id)}</code></h1>"]
    for answer in answers:
        request, reply, tenant = answer["request"], answer["reply"], answer["tenant_id"] or ""
        gate = reply.get("gate", {})
        parts.append(
            f"<p class='answer'>tenant {escape(tenant)} · answered "
            f"{_fmt(answer['answered_at'])} · status <b>{escape(answer['status'])}</b></p>"
            f"<table><tr><th>question</th><td>{escape(str(request.get('query')))}</td></tr>"
            f"<tr><th>user</th><td>{escape(str(request.get('user_id')))}</td></tr>"
            f"<tr><th>as of · known at</th><td>{escape(str(request.get('as_of')))} · "
            f"{escape(str(request.get('known_at')))}</td></tr>"
            f"<tr><th>gate</th><td id='gate'>{escape(str(gate.get('decision')))} — "
            f"{escape(str(gate.get('reason')))}</td></tr></table>"
        )
        if reply.get("error"):
            parts.append(
                f"<p class='bad'>error {escape(reply['error']['code'])}: "
                f"{escape(reply['error']['message'])}</p>"
            )
        head = "".join(f"<th>{c.replace('_', ' ')}</th>" for c in COMPONENTS)
        rows = []
        for rank, r in enumerate(reply.get("results", []), start=1):
            cells = "".join(f"<td>{r['scores'].get(c, 0):.3f}</td>" for c in COMPONENTS)
            conflicts = ", ".join(escape(c[:8]) for c in r.get("conflicts_with", [])) or "·"
            rows.append(
                f"<tr class='result-row'><td>#{rank}</td><td><a href='"
                f"{_memory_link(r['memory_key'], tenant)}'>{escape(r['memory_key'])}</a> "
                f"v{r['version']}</td><td>{escape(r['source_system'])} · "
                f"{escape(r['effective_status'])}</td><td>{escape(r['binding_kind'])}</td>"
                f"{cells}<td>{conflicts}</td><td>{escape(r['content'][:160])}</td></tr>"
            )
        parts.append(
            "<h2>What the agent was told</h2><table id='results'><tr><th>#</th><th>memory</th>"
            f"<th>source · status</th><th>binding</th>{head}<th>conflicts with</th>"
            f"<th>content</th></tr>{''.join(rows) or '<tr><td colspan=12>nothing</td></tr>'}"
            "</table>"
        )
        latency = ", ".join(f"{k} {v}" for k, v in reply.get("latency_ms", {}).items())
        parts.append(f"<p>latency ms: {escape(latency)}</p>")
    return frame(f"memstream · request {request_id}", "".join(parts))


def index_page() -> str:
    return frame(
        "memstream · audit",
        "<h1>memstream audit</h1>"
        "<form action='/ui/memory' method='get'>memory key <input name='memory_key'> tenant "
        "<input name='tenant_id'> <button>timeline</button></form>"
        "<form action='/ui/request' method='get'>request id <input name='request_id'> "
        "<button>what was the agent told</button></form>"
        "<form action='/ui/logout' method='post'><button>sign out</button></form>",
    )


def add_ui(app: FastAPI, doors: Doors, sessions: UiSessions | None = None) -> None:
    sessions = sessions or UiSessions()
    add_sign_in(app, doors, sessions)

    @app.get("/ui", include_in_schema=False)
    async def index(authorization: AuthHeader = None, cookie: SessionCookie = None) -> HTMLResponse:
        await viewer(doors, sessions, authorization, cookie)
        return HTMLResponse(index_page())

    @app.get("/ui/memory", include_in_schema=False)
    async def memory_form(memory_key: str, tenant_id: str = "") -> RedirectResponse:
        return RedirectResponse(_memory_link(memory_key, tenant_id), status_code=303)

    @app.get("/ui/request", include_in_schema=False)
    async def request_form(request_id: str) -> RedirectResponse:
        return RedirectResponse(f"/ui/requests/{quote(request_id, safe='')}", status_code=303)

    @app.get("/ui/memories/{memory_key}", include_in_schema=False)
    async def memory(
        memory_key: str,
        request: Request,
        tenant_id: str | None = None,
        authorization: AuthHeader = None,
        cookie: SessionCookie = None,
    ) -> HTMLResponse:
        principal = await viewer(doors, sessions, authorization, cookie)
        tenant, chain = await doors.history(principal, memory_key, tenant_id=tenant_id or None)
        if not chain:
            raise DoorError("not_found", f"no memory {memory_key!r} for tenant {tenant!r}", 404)
        answers = await doors.answers_about(principal, tenant, memory_key)
        marks = await doors.tombstones(tenant, memory_key)
        page = memory_page(tenant, memory_key, chain, answers, datetime.now(UTC), marks)
        return HTMLResponse(page)

    @app.get("/ui/requests/{request_id}", include_in_schema=False)
    async def request_view(
        request_id: str, authorization: AuthHeader = None, cookie: SessionCookie = None
    ) -> HTMLResponse:
        principal = await viewer(doors, sessions, authorization, cookie)
        answers = await doors.audit(principal, request_id)
        if not answers:
            raise DoorError("not_found", f"no request {request_id!r} in the query log", 404)
        return HTMLResponse(request_page(request_id, answers))
