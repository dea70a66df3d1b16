"""How a large tenant's Qdrant Edge store keeps each subject's points together, on disk.

The engine places a point in the segment that is appendable when it is written and never
splits a segment, so a shard that is never optimised is one segment, and an erasure's vacuum
rewrites all of it: 95 s for one customer in a tenant of 10^6 memories (docs/erasure.md).

So, with parts on (``MEMSTREAM_VECTOR_PARTS``: 16 by default, 0 off), a tenant's store
is a *hot* shard (``<root>/<slug>/``), which every write goes to, and, once the hot shard has
held ``SPLIT_FROM`` points, that many parts (``<slug>/parts/NNN/``):
each time the hot shard reaches ``SPLIT_FROM`` points they are moved ("spilled") to the part of
their *subject* (the primary entity, ``part_of``) and the hot shard starts empty. One subject's
memories then sit in one part (1/32 of a tenant with 32 parts) and in the hot shard (at most
``SPLIT_FROM`` points), and forgetting it rewrites those two only; a memory that names the
subject as an extra anchor sits in its own subject's part. A write flushes the hot shard alone
(a flush costs ~12 ms a shard: writing each batch across the parts would cost as many). A
search asks the hot shard and every part, and merges. What it costs (measured, 2-core VM,
qdrant-edge-py 0.9, 384-d vectors at 16 bits): an engine call ~0.15 ms at 1,500 points and
0.8 at 15,600 per part and search; a flush ~5 ms a part after a payload write; ~32-70 MiB of
mapped file pages a loaded part; a vacuum ~48 µs a point.

On disk, in order, so that a crash at any point loses nothing and duplicates nothing for long:

1. the first spill writes ``<slug>/parts.new/parts.json`` (the manifest) and renames
   ``parts.new`` to ``parts``;
2. every spill writes ``parts/spilling.json``, copies the hot shard's points to their parts
   (an upsert: copying again is harmless) and flushes them, removes the hot shard's files
   (everything in ``<slug>/`` but ``parts``), then removes ``spilling.json``.

A crash in 1 leaves ``parts.new`` (removed on the next open); a crash in 2 leaves
``spilling.json``, and the next process to touch the tenant finishes the spill before anything
else. ``dirty.json`` lists the shards (parts, or the hot one as -1) a deletion touched and that
an erasure has not rewritten yet (written before the delete, cleared after the rewrite), so an
erasure that a crash interrupted is finished by the next.

Pure file handling: no engine calls here.
"""

from __future__ import annotations

import json
import os
import shutil
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# The hot shard spills to the parts once it holds this many points: its vacuum then costs at
# most ~1 s (48-83 µs a point, measured at 10^5 on the 2-core VM), and a spill moves them once
# (scroll and rewrite, one flush a part).
SPLIT_FROM = 20_000
# Parts a tenant may have (``MEMSTREAM_VECTOR_PARTS``' range): a manifest naming more is refused.
MAX_PARTS = 256

PARTS_DIR = "parts"
_NEW_DIR = "parts.new"
MANIFEST = "parts.json"
_DIRTY = "dirty.json"
_SPILLING = "spilling.json"


def parts_dir(shard_dir: Path) -> Path:
    return shard_dir / PARTS_DIR


def part_name(part: int) -> str:
    return f"{part:03d}"


def part_dir(shard_dir: Path, part: int) -> Path:
    return shard_dir / PARTS_DIR / part_name(part)


def new_parts_dir(shard_dir: Path) -> Path:
    return shard_dir / _NEW_DIR


def stored_parts(shard_dir: Path) -> int:
    """How many parts the tenant at ``shard_dir`` is split into: 0 if it is one shard."""
    try:
        manifest = json.loads((parts_dir(shard_dir) / MANIFEST).read_text())
    except FileNotFoundError:
        return 0
    except (OSError, ValueError) as exc:
        raise ValueError(f"unreadable parts manifest under {shard_dir}: {exc}") from exc
    parts = manifest.get("parts") if isinstance(manifest, dict) else None
    if not isinstance(parts, int) or not 2 <= parts <= MAX_PARTS:
        raise ValueError(f"the parts manifest under {shard_dir} names no part count: {manifest}")
    return parts


def part_of(payload: Mapping[str, Any], point_id: str, parts: int) -> int:
    """The part of a point: its subject's (``entity_type:entity_id``), else its memory's, else
    its own. A stable hash (crc32), the same in every process and release."""
    entity_id = payload.get("entity_id")
    if entity_id:
        subject = f"{payload.get('entity_type') or ''}:{entity_id}"
    else:
        subject = str(payload.get("memory_key") or point_id)
    return zlib.crc32(subject.encode("utf-8")) % parts


def write_manifest(parts_root: Path, parts: int) -> None:
    _write_synced(parts_root / MANIFEST, {"parts": parts, "by": "subject"})


def commit_split(shard_dir: Path) -> None:
    """The parts' directory, written as ``parts.new``, becomes the tenant's."""
    new = new_parts_dir(shard_dir)
    sync_dir(new)
    new.rename(parts_dir(shard_dir))
    sync_dir(shard_dir)


def hot_files(shard_dir: Path) -> list[Path]:
    """The hot shard's files: everything in the tenant's directory but its parts."""
    try:
        return [p for p in shard_dir.iterdir() if p.name != PARTS_DIR]
    except FileNotFoundError:
        return []


def remove(paths: list[Path]) -> None:
    for path in paths:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=False)
        else:
            path.unlink(missing_ok=True)


def discard_unfinished_split(shard_dir: Path) -> None:
    """A first spill a crash interrupted before the parts' directory was made: drop it."""
    new = new_parts_dir(shard_dir)
    if new.exists():
        shutil.rmtree(new)


def mark_spill(shard_dir: Path) -> None:
    _write_synced(parts_dir(shard_dir) / _SPILLING, True)


def spill_pending(shard_dir: Path) -> bool:
    return (parts_dir(shard_dir) / _SPILLING).exists()


def clear_spill(shard_dir: Path) -> None:
    (parts_dir(shard_dir) / _SPILLING).unlink(missing_ok=True)
    sync_dir(parts_dir(shard_dir))


def dirty_parts(shard_dir: Path) -> set[int]:
    try:
        listed = json.loads((parts_dir(shard_dir) / _DIRTY).read_text())
    except FileNotFoundError:
        return set()
    except (OSError, ValueError) as exc:
        raise ValueError(f"unreadable list of parts to compact under {shard_dir}: {exc}") from exc
    return {int(p) for p in listed}


def set_dirty_parts(shard_dir: Path, parts: set[int]) -> None:
    path = parts_dir(shard_dir) / _DIRTY
    if parts:
        _write_synced(path, sorted(parts))
    else:
        path.unlink(missing_ok=True)


def sync_dirs(root: Path) -> None:
    """fsync every directory under ``root`` (the engine syncs its files, not their names)."""
    for folder, _dirs, _files in os.walk(root):
        sync_dir(Path(folder))


def _write_synced(path: Path, value: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        json.dump(value, out)
        out.flush()
        os.fsync(out.fileno())
    tmp.replace(path)
    sync_dir(path.parent)


def sync_dir(path: Path) -> None:
    """fsync the directory ``path`` (its entries: names made, renamed or removed)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
