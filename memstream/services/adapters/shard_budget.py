"""How many Qdrant Edge shards one process may keep open: derived from its limits, not a constant.

Every open shard maps its segments, payload indexes and write-ahead log, and Linux bounds the
memory maps of a process (``vm.max_map_count``, 65,530 by default): a worker that had opened
~350 shards failed every further open with "Cannot allocate memory (os error 12)". Each open
shard also holds anonymous memory of its own. The budget is the smaller of

- maps: ``MAP_SHARE`` of ``vm.max_map_count``, less what the process maps already (the model,
  Python, the drivers) — the ``map_room`` — divided by ``MAPS_PER_SHARD``, what a shard without
  payload indexes maps (a small tenant's: the index creates them once a shard holds
  ``qdrant_edge.INDEX_FROM_POINTS`` points); the index also keeps the maps of its open shards,
  each ``MAPS_PER_INDEX`` more per payload index, within ``map_room``;
- memory: ``RAM_SHARE`` of the RAM this process may use (``MemTotal``, or the cgroup's
  ``memory.max`` when lower) divided by ``BYTES_PER_SHARD``;

bounded by ``[MIN_OPEN, MAX_OPEN]``. ``MEMSTREAM_MAX_OPEN_SHARDS`` replaces it. The per-shard
figures were measured on qdrant-edge-py 0.9 (``memstream bench scale`` prints them again on
every run), with one search thread a shard (``qdrant_edge._SEARCH_THREADS``; the engine's
default of 8 threads took 28 maps a small shard): a shard of one segment and no payload index
holds 12 maps once loaded (its files), 17 when it was created by this process; with the ten
payload indexes of ``qdrant_edge.PAYLOAD_INDEXES`` 103-105.
A reopened shard also maps its whole write-ahead log (~70 MiB of file pages): page cache the
kernel takes back under pressure, not counted here, shown by the bench.

Must not import ``services.handlers`` nor ``streams``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

MAPS_PER_SHARD = 18  # measured: 12-17 memory maps per open shard without payload indexes
MAPS_PER_INDEX = 9  # measured: 8.6-9.1 more per payload index (103-105 with the ten)
BYTES_PER_SHARD = 2 << 20  # measured: 0.1-0.9 MiB of anonymous memory per open shard; 2 MiB
# Of vm.max_map_count for shards. The rest is for everything else in the process: a worker
# with the model loaded maps 560-1,500 (measured by the scale bench), a tenth of that rest.
MAP_SHARE = 0.75
RAM_SHARE = 0.25  # of the process's RAM for open shards' own memory
MIN_OPEN, MAX_OPEN = 8, 4096
DEFAULT_MAX_MAP_COUNT = 65_530  # Linux's default, when /proc cannot be read


@dataclass(frozen=True, slots=True)
class ShardBudget:
    max_open: int
    by_maps: int
    map_room: int
    by_ram: int
    max_map_count: int
    maps_in_use: int
    ram_bytes: int
    override: bool = False

    def describe(self) -> str:
        if self.override:
            return f"vector shards: at most {self.max_open} open (MEMSTREAM_MAX_OPEN_SHARDS)"
        return (
            f"vector shards: at most {self.max_open} open — maps allow {self.by_maps} "
            f"({MAP_SHARE:.0%} of vm.max_map_count {self.max_map_count}, {self.maps_in_use} in "
            f"use, {MAPS_PER_SHARD} per shard and {MAPS_PER_INDEX} per payload index), memory "
            f"allows {self.by_ram} ({RAM_SHARE:.0%} of {self.ram_bytes / 2**30:.1f} GiB, "
            f"{BYTES_PER_SHARD / 2**20:.0f} MiB per shard)"
        )


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def max_map_count() -> int:
    return _read_int(Path("/proc/sys/vm/max_map_count")) or DEFAULT_MAX_MAP_COUNT


def maps_in_use() -> int:
    """Memory maps this process holds now."""
    try:
        with open("/proc/self/maps", "rb") as maps:
            return sum(1 for _ in maps)
    except OSError:
        return 0


def ram_bytes() -> int:
    """The RAM this process may use: the machine's, or its cgroup's limit when lower."""
    total = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                total = int(line.split()[1]) * 1024
                break
    except (OSError, ValueError, IndexError):
        total = 0
    limit = _read_int(Path("/sys/fs/cgroup/memory.max"))  # "max" when unbounded: None
    if limit and (not total or limit < total):
        return limit
    return total or 4 << 30


def shard_budget(override: int = 0) -> ShardBudget:
    """The open-shard limit of this process now; ``override`` > 0 replaces it."""
    maps, in_use, ram = max_map_count(), maps_in_use(), ram_bytes()
    room = max(0, int(maps * MAP_SHARE) - in_use)
    by_maps = room // MAPS_PER_SHARD
    by_ram = int(ram * RAM_SHARE) // BYTES_PER_SHARD
    if override > 0:
        return ShardBudget(override, by_maps, room, by_ram, maps, in_use, ram, override=True)
    chosen = max(MIN_OPEN, min(MAX_OPEN, by_maps, by_ram))
    return ShardBudget(chosen, by_maps, room, by_ram, maps, in_use, ram)


def shard_maps(payload_indexes: int) -> int:
    """The memory maps an open shard with this many payload indexes is counted for."""
    return MAPS_PER_SHARD + MAPS_PER_INDEX * payload_indexes
