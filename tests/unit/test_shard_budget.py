"""The open-shard budget: derived from this process's real limits, or the operator's number."""

from __future__ import annotations

from pathlib import Path

from memstream.services.adapters import shard_budget as sb


def test_the_budget_is_the_smaller_of_what_maps_and_memory_allow() -> None:
    budget = sb.shard_budget()
    assert budget.max_map_count == sb.max_map_count() > 0
    assert budget.maps_in_use > 0  # this process maps its interpreter and libraries
    expected_maps = (int(budget.max_map_count * sb.MAP_SHARE) - budget.maps_in_use) // (
        sb.MAPS_PER_SHARD
    )
    # Maps may come and go between the two readings (threads, imports): a little either way.
    assert abs(budget.by_maps - expected_maps) <= 2
    assert budget.by_ram == int(budget.ram_bytes * sb.RAM_SHARE) // sb.BYTES_PER_SHARD
    bounded = max(sb.MIN_OPEN, min(sb.MAX_OPEN, budget.by_maps, budget.by_ram))
    assert budget.max_open == bounded and not budget.override
    line = budget.describe()
    assert f"at most {budget.max_open} open" in line and "vm.max_map_count" in line


def test_an_operators_number_replaces_the_derived_one() -> None:
    budget = sb.shard_budget(5)
    assert budget.max_open == 5 and budget.override
    assert budget.describe() == "vector shards: at most 5 open (MEMSTREAM_MAX_OPEN_SHARDS)"


def test_ram_is_the_machines_or_the_cgroups_when_lower() -> None:
    ram = sb.ram_bytes()
    assert ram > 0
    meminfo = Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0]
    assert ram <= int(meminfo) * 1024
