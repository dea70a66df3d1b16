"""The memory.changes topic in both its forms: one ``MemoryChanges`` per batch and tenant, or
(written by an older worker) one ``MemoryVersioned`` per version.

A message says which it is with the ``memstream-schema`` header (``CHANGES_HEADER``): a worker
writes ``MemoryChanges`` there; a message without the header is a ``MemoryVersioned``. Both are
schemaless Avro with no framing, so the header, not the bytes, tells them apart; a message that
lost its headers on the way (a mirror that drops them) is still read: as a ``MemoryVersioned``
first, then as a ``MemoryChanges``.

Consumers call ``read_changes`` and get the list of ``MemoryVersioned`` records either way, so
they can be upgraded before the workers that produce the new form (see README.md, Changes).

Imports the codec and the stdlib only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from memstream.schemas.codec import (
    INVALID_RECORD,
    UNKNOWN_SCHEMA,
    CodecError,
    decode,
    encode,
)

CHANGES_HEADER: Final = "memstream-schema"
BATCH: Final = "MemoryChanges"
SINGLE: Final = "MemoryVersioned"
# One message's changes at most: ~250 bytes each, well under a broker's 1 MiB message limit.
MAX_CHANGES: Final = 1000


def encode_changes(tenant_id: str, changes: Sequence[Mapping[str, Any]]) -> tuple[bytes, bytes]:
    """One ``MemoryChanges`` record of ``changes`` (``MemoryVersioned`` records, all of
    ``tenant_id``) and the value of its ``CHANGES_HEADER``: (value, header value)."""
    if not changes:
        raise CodecError(INVALID_RECORD, "MemoryChanges: no changes", schema=BATCH)
    strays = {c["tenant_id"] for c in changes} - {tenant_id}
    if strays:
        raise CodecError(
            INVALID_RECORD,
            f"MemoryChanges of tenant {tenant_id!r} holds changes of {sorted(strays)!r}",
            schema=BATCH,
            field="tenant_id",
        )
    return encode(BATCH, {"tenant_id": tenant_id, "changes": list(changes)}), BATCH.encode()


def read_changes(
    value: bytes | bytearray | memoryview | None, headers: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The ``MemoryVersioned`` records a memory.changes message carries, whichever form it has.

    ``headers`` maps header names to values (bytes or str). Raises ``CodecError`` when the
    bytes are neither form."""
    named = _schema_named(headers)
    if named == BATCH:
        return list(decode(BATCH, value)["changes"])
    if named == SINGLE:
        return [decode(SINGLE, value)]
    if named is not None:
        raise CodecError(UNKNOWN_SCHEMA, f"memory.changes: a message of {named!r}", schema=named)
    try:  # no header: an older worker's single change (or a batch that lost its headers)
        return [decode(SINGLE, value)]
    except CodecError as single_error:
        try:
            return list(decode(BATCH, value)["changes"])
        except CodecError:
            raise single_error from None


def _schema_named(headers: Mapping[str, Any] | None) -> str | None:
    if not headers:
        return None
    raw = headers.get(CHANGES_HEADER)
    if raw is None:
        return None
    return raw.decode() if isinstance(raw, bytes | bytearray) else str(raw)
