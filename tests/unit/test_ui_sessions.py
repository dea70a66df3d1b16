"""The timeline's sign-in state: a one-page link opens once and within its minute; a session
ends when it expires or signs out; only /ui pages are redirect targets; the access log masks
secrets a caller put in a URL."""

from __future__ import annotations

import logging

from memstream.gateway.serve import AccessRedaction
from memstream.gateway.ui_auth import LINK_SECONDS, SESSION_SECONDS, UiSessions, ui_page


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_link_opens_its_page_once() -> None:
    sessions = UiSessions(Clock())
    code = sessions.mint("CRED", "/ui/memories/spec:X1")
    grant = sessions.redeem(code)
    assert grant is not None and grant.credential == "CRED"
    assert grant.page == "/ui/memories/spec:X1"
    assert sessions.redeem(code) is None


def test_a_link_is_worthless_after_its_minute() -> None:
    clock = Clock()
    sessions = UiSessions(clock)
    code = sessions.mint("CRED", "/ui")
    clock.now += LINK_SECONDS + 0.1
    assert sessions.redeem(code) is None


def test_a_session_expires_and_ends() -> None:
    clock = Clock()
    sessions = UiSessions(clock)
    first, second = sessions.start("A"), sessions.start("B")
    assert first != second and sessions.credential(first) == "A"
    sessions.end(second)
    assert sessions.credential(second) is None and sessions.credential(None) is None
    clock.now += SESSION_SECONDS
    assert sessions.credential(first) is None


def test_only_ui_pages_are_targets() -> None:
    assert ui_page("/ui/requests/r-1") == "/ui/requests/r-1"
    for outside in ("//evil.example/ui/", "https://evil.example/", "/v1/forget", "", None):
        assert ui_page(outside) == "/ui"


def test_the_access_log_masks_secrets_in_urls() -> None:
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        "",
        0,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5", "GET", "/ui/login?next=/ui&credential=ms1.SECRET&x=1", "1.1", 400),
        None,
    )
    AccessRedaction().filter(record)
    assert "SECRET" not in record.getMessage() and "credential=…&x=1" in record.getMessage()
    record.args = ("127.0.0.1:5", "GET", "/ui/open/CODE123", "1.1", 303)
    AccessRedaction().filter(record)
    assert "CODE123" not in record.getMessage() and "/ui/open/…" in record.getMessage()
