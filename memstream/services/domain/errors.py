"""Errors of the domain layer. Must not import anything outside the stdlib."""

from __future__ import annotations


class DomainError(Exception):
    """Root of every error raised by ``memstream.services.domain``."""


class InvalidEvent(DomainError):
    """A memory event that can never be ingested; ``reason`` is machine-readable."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class InvalidRequest(DomainError):
    """A retrieval request that cannot be answered; ``code`` is machine-readable."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail
