"""The errors a ``MemoryClient`` caller sees (all ``MemoryClientError``), and how a request's
anchors are written. Re-exported by ``memstream.streams.client``."""

from __future__ import annotations

from collections.abc import Sequence


class MemoryClientError(Exception):
    """Root of the client's errors."""


class RetrievalTimeout(MemoryClientError):
    def __init__(self, request_id: str, seconds: float) -> None:
        super().__init__(
            f"no reply to request {request_id} within {seconds:.1f}s: is a memstream worker "
            "running and consuming the requests topic?"
        )
        self.request_id = request_id


class BrokerUnavailable(MemoryClientError):
    """The broker could not be reached, or refused a request (the driver's error is the
    ``__cause__``)."""


class ClientStopped(MemoryClientError):
    """The client was stopped while the call awaited its reply."""


def anchors_of(items: Sequence[tuple[str, str]] | Sequence[dict[str, str]]) -> list[dict[str, str]]:
    out = []
    for item in items:
        if isinstance(item, dict):
            out.append({"type": str(item["type"]), "id": str(item["id"])})
        else:
            out.append({"type": str(item[0]), "id": str(item[1])})
    return out
