"""How a browser signs in to the timeline pages without a secret in any URL.

A URL is written to browser history, bookmarks, the access log and any proxy's log, so no
credential ever travels in one:

- ``GET /ui/login`` is a form; ``POST /ui/login`` (form body ``credential``, ``next``) checks
  the credential and starts a session.
- ``POST /ui/links`` (``Authorization: Bearer``, JSON ``{"page": "/ui/…"}``) mints a one-page
  link ``/ui/open/<code>`` (``memstream ui-link`` calls it): the code opens that page once,
  within ``LINK_SECONDS``, then is worth nothing — a log that records it records a spent code.
- ``GET /ui/login?credential=…`` (the old way) is refused without looking at the credential.

A session is a random id in an HttpOnly, SameSite=Strict cookie scoped to ``/ui``; the
credential stays in this process (never in the cookie), and is checked again on every page, so a
revoked or expired key ends its sessions. Sessions and codes live in the gateway process: a
restart signs everyone out; several gateway processes behind one address need sticky sessions
(or the form on each).
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from typing import Annotated, Any
from urllib.parse import parse_qsl

from fastapi import Cookie, FastAPI, Header, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse

from memstream.gateway.auth import DoorError, Principal
from memstream.gateway.pages import frame
from memstream.gateway.service import Doors

COOKIE = "memstream_session"
SESSION_SECONDS = 8 * 3600.0
LINK_SECONDS = 60.0
MAX_SESSIONS = 1000  # the least recently made goes first
MAX_FORM_BYTES = 16_384

AuthHeader = Annotated[str | None, Header()]
SessionCookie = Annotated[str | None, Cookie(alias=COOKIE)]


@dataclass(frozen=True, slots=True)
class Grant:
    credential: str
    expires: float  # monotonic seconds
    page: str = "/ui"


class UiSessions:
    """Sessions (id → credential) and one-page link codes (code → credential, page), each with
    an expiry on ``clock`` (monotonic seconds)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._sessions: OrderedDict[str, Grant] = OrderedDict()
        self._links: dict[str, Grant] = {}

    def start(self, credential: str) -> str:
        session = secrets.token_urlsafe(32)
        self._sessions[session] = Grant(credential, self._clock() + SESSION_SECONDS)
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return session

    def credential(self, session: str | None) -> str | None:
        grant = self._sessions.get(session or "")
        if grant is None or grant.expires <= self._clock():
            self._sessions.pop(session or "", None)
            return None
        return grant.credential

    def end(self, session: str | None) -> None:
        self._sessions.pop(session or "", None)

    def mint(self, credential: str, page: str) -> str:
        now = self._clock()
        for code in [c for c, g in self._links.items() if g.expires <= now]:
            del self._links[code]
        code = secrets.token_urlsafe(24)
        self._links[code] = Grant(credential, now + LINK_SECONDS, page)
        return code

    def redeem(self, code: str) -> Grant | None:
        """The link's grant, once: a second use, or one after ``LINK_SECONDS``, gets None."""
        grant = self._links.pop(code, None)
        if grant is None or grant.expires <= self._clock():
            return None
        return grant


def ui_page(target: object) -> str:
    """A page of the timeline UI to go to: only ``/ui`` paths (no open redirect)."""
    text = str(target or "")
    if text == "/ui" or (text.startswith("/ui/") and not text.startswith("//")):
        return text
    return "/ui"


def login_page(next_page: str, problem: str = "") -> str:
    note = f"<p class='bad'>{escape(problem)}</p>" if problem else ""
    return frame(
        "memstream · sign in",
        "<h1>memstream audit · sign in</h1>"
        f"{note}<form action='/ui/login' method='post'>"
        "credential <input type='password' name='credential' autocomplete='off' size='60'>"
        f"<input type='hidden' name='next' value='{escape(next_page, quote=True)}'>"
        "<button>sign in</button></form>"
        "<p>Or open a one-page link: <code>memstream ui-link /ui/…</code></p>",
    )


def add_sign_in(app: FastAPI, doors: Doors, sessions: UiSessions) -> None:
    """The sign-in routes; ``app.state.ui_sessions`` is ``sessions``."""
    app.state.ui_sessions = sessions

    def with_session(target: str, session: str) -> RedirectResponse:
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(
            COOKIE,
            session,
            max_age=int(SESSION_SECONDS),
            path="/ui",
            httponly=True,
            samesite="strict",
        )
        return response

    @app.get("/ui/login", include_in_schema=False)
    async def login_form(request: Request, next: str = "/ui") -> HTMLResponse:
        if "credential" in request.query_params:  # never read: it is already in some log
            problem = (
                "a credential never goes in a URL: sign in with this form, or open a link "
                "from `memstream ui-link` (and rotate that key if the URL was shared)"
            )
            return HTMLResponse(login_page(ui_page(next), problem), status_code=400)
        return HTMLResponse(login_page(ui_page(next)))

    @app.post("/ui/login", include_in_schema=False)
    async def login(request: Request) -> Any:
        body = await request.body()
        if len(body) > MAX_FORM_BYTES:
            raise DoorError("bad_field", "the sign-in form is too large", 413)
        form = dict(parse_qsl(body.decode("utf-8", errors="replace")))
        credential = form.get("credential", "").strip()
        target = ui_page(form.get("next"))
        try:
            await doors.authenticate(f"Bearer {credential}")
        except DoorError as exc:
            return HTMLResponse(login_page(target, exc.message), status_code=exc.status)
        return with_session(target, sessions.start(credential))

    @app.post("/ui/links", summary="Mint a one-page link to a timeline page (no secret in it)")
    async def links(request: Request, authorization: AuthHeader = None) -> JSONResponse:
        _, credential = await doors.authenticate(authorization)
        try:
            asked = await request.json()
        except ValueError:
            asked = {}
        page = ui_page(asked.get("page") if isinstance(asked, dict) else None)
        code = sessions.mint(credential, page)
        return JSONResponse(
            {"url": f"/ui/open/{code}", "page": page, "expires_in": int(LINK_SECONDS)}
        )

    @app.get("/ui/open/{code}", include_in_schema=False)
    async def open_link(code: str) -> Any:
        grant = sessions.redeem(code)
        if grant is None:
            problem = "that link was used already or has expired: mint another"
            return HTMLResponse(login_page("/ui", problem), status_code=401)
        return with_session(grant.page, sessions.start(grant.credential))

    @app.post("/ui/logout", include_in_schema=False)
    async def logout(session: SessionCookie = None) -> RedirectResponse:
        sessions.end(session)
        response = RedirectResponse("/ui/login", status_code=303)
        response.delete_cookie(COOKIE, path="/ui")
        return response


async def viewer(
    doors: Doors, sessions: UiSessions, authorization: str | None, session: str | None
) -> Principal:
    """Who looks at a page: the ``Authorization`` header, else the session's credential
    (checked again, so a revoked key ends its sessions)."""
    if not authorization:
        credential = sessions.credential(session)
        authorization = f"Bearer {credential}" if credential else None
    principal, _ = await doors.authenticate(authorization)
    return principal
