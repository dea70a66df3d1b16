"""The errors a ``MemoryClient`` caller sees (all ``MemoryClientError``), and how a request's
anchors are written. Re-exported by ``memstream.streams.client``."""

from __future__ import annotations

from collections.abc import Sequence


class MemoryClientError(Exception):
    """Root of the client's errors."""


class RetrievalTimeout(MemoryClientError):
    """No reply within the timeout. ``sent``: whether the broker had acknowledged the request
    (else it never left this client: the broker, not the worker, is what to look at)."""

    def __init__(
        self, request_id: str, seconds: float, *, sent: bool = True, topic: str | None = None
    ) -> None:
        if sent:
            where = f" (sent to {topic})" if topic else ""
            text = (
                f"no reply to request {request_id}{where} within {seconds:.1f}s: is a memstream "
                "worker running and consuming the requests topic?"
            )
        else:
            text = (
                f"request {request_id} was not acknowledged by the broker within {seconds:.1f}s "
                "(never sent): is the broker overloaded or stuck?"
            )
        super().__init__(text)
        self.request_id = request_id
        self.sent = sent


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
