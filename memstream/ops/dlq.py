"""``memstream dlq list|show|redrive``: the dead letters, and sending them through again.

Reads the ``dead_letters`` table (every dead letter is kept there as well as on the DLQ topic).
``redrive`` publishes a dead letter's original bytes to the events topic again, keyed as
``publish`` keys it (so it lands on its memory's partition), and stamps ``redriven_at``; the
worker then ingests it, or dead-letters it again with the reason — nothing is lost. A letter
whose bytes are not a MemoryEvent cannot be redriven (fix the producer and publish again).
"""

from __future__ import annotations

import json
from typing import Any

from memstream.ops.ask import UsageError, to_json
from memstream.schemas import codec
from memstream.services import bootstrap
from memstream.services.settings import Settings


def _rows(settings: Settings, args: Any) -> list[dict[str, Any]]:
    assert settings.postgres_dsn is not None
    ids = None
    if getattr(args, "ids", None):
        try:
            ids = [int(i) for i in args.ids]
        except ValueError:
            raise UsageError(f"dead letter ids are numbers, got {' '.join(args.ids)}") from None
    with bootstrap.dead_letters(settings.postgres_dsn) as letters:
        return letters.find(
            ids,
            getattr(args, "tenant", None),
            getattr(args, "reason", None),
            include_redriven=getattr(args, "include_redriven", True),
            limit=getattr(args, "limit", None),
        )


def _event(original: bytes | None) -> dict[str, Any] | None:
    if not original:
        return None
    try:
        return dict(codec.decode("MemoryEvent", bytes(original)))
    except codec.CodecError:
        return None


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in row.items() if k != "original"}
    for key in ("failed_at", "redriven_at"):
        if out.get(key) is not None:
            out[key] = out[key].isoformat()
    return out


def dlq(settings: Settings, args: Any) -> int:
    from memstream.ops.stack import resolve_settings

    settings = resolve_settings(settings)
    if args.action == "list":
        rows = _rows(settings, args)
        for row in rows:
            if args.json:
                print(json.dumps(_plain(row), ensure_ascii=False))
                continue
            redriven = " · redriven" if row["redriven_at"] else ""
            print(
                f"{row['id']}  {row['failed_at']:%Y-%m-%d %H:%M:%S}  {row['reason']}  "
                f"{row['tenant_id'] or '-'}/{row['event_id'] or '-'}  "
                f"{row['topic']}:{row['partition']}@{row['offset']}{redriven}  "
                f"{row['detail'][:100]}"
            )
        if not rows and not args.json:
            print("no dead letters")
        return 0
    if not args.ids and not getattr(args, "all", False):
        raise UsageError(f"dlq {args.action} needs dead letter ids (from `memstream dlq list`)")
    if args.action == "show":
        rows = _rows(settings, args)
        if not rows:
            print(f"memstream: dlq: no dead letter {', '.join(args.ids)}")
            return 1
        for row in rows:
            shown = _plain(row)
            shown["event"] = to_json(_event(row["original"]))
            if shown["event"] is None:
                raw = bytes(row["original"] or b"")
                shown["original"] = raw[:2000].decode("utf-8", errors="replace")
            print(json.dumps(shown, ensure_ascii=False, indent=2))
        return 0
    return _redrive(settings, args)


def _redrive(settings: Settings, args: Any) -> int:
    from memstream.ops.identity import CredentialsMissing
    from memstream.ops.publish import Signers, probe_broker
    from memstream.streams.producer import EventProducer

    assert settings.broker is not None and settings.postgres_dsn is not None
    args.include_redriven = bool(args.ids)  # --all takes only what was not redriven yet
    rows = _rows(settings, args)
    producer = EventProducer(settings.broker)
    probe_broker(producer, settings.broker)
    signers = Signers(settings, getattr(args, "key", None))
    sent, skipped = [], 0
    for row in rows:
        event = _event(row["original"])
        if event is None:
            print(f"{row['id']}: not redriven: its bytes are not a MemoryEvent ({row['reason']})")
            skipped += 1
            continue
        key = f"{event['tenant_id']}|{event.get('memory_key') or event['event_id']}".encode()
        value = bytes(row["original"])
        try:  # signed again, as publish signs: the worker refuses unsigned events
            headers = signers.headers(str(event["tenant_id"]), value, str(event["event_id"]))
        except CredentialsMissing as exc:
            print(f"{row['id']}: not redriven: {exc}")
            skipped += 1
            continue
        producer.send_raw(settings.topics.events, key, value, headers)
        sent.append(row["id"])
    if producer.finish(30):
        print("memstream: dlq: the broker did not acknowledge every redriven event")
        return 1
    with bootstrap.dead_letters(settings.postgres_dsn) as letters:
        letters.mark_redriven(sent)
    print(f"redrove {len(sent)} dead letters to {settings.topics.events}; {skipped} skipped")
    return 1 if skipped else 0
