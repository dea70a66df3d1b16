"""PostgresHeldTerms against real PostgreSQL: the gate's look at the asker's own memories.

Only the asker's memories count: another user's in the same tenant, the same user id in
another tenant, a superseded version, a retracted memory never do. Words are matched as
keyword search matches them (stem prefixes, short stems by their whole inflected words, CJK
grams). Data goes in through the real write path.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from memstream.services.adapters.postgres import PostgresMemoryRepository
from memstream.services.adapters.postgres_held import PostgresHeldTerms, build_held
from memstream.services.domain.gating import own_terms
from memstream.services.domain.model import Op
from memstream.services.ports import TermCounts, VectorFilter
from tests.conftest import unique
from tests.integration.test_postgres_queries import put

MINE = VectorFilter(anchors=("customer:U-1", "user:U-1"), exclude_statuses=("retracted",))


@pytest.fixture
async def repo(pg_dsn: str) -> AsyncIterator[PostgresMemoryRepository]:
    repository = await PostgresMemoryRepository.connect(pg_dsn)
    yield repository
    await repository.close()


@pytest.fixture
def held(repo: PostgresMemoryRepository) -> PostgresHeldTerms:
    return PostgresHeldTerms(repo.pool)


async def test_only_the_askers_own_current_memories_count(
    repo: PostgresMemoryRepository, held: PostgresHeldTerms, tenant: str
) -> None:
    await put(
        repo,
        tenant,
        "Blender sent back: the motor was returned as faulty.",
        entity=("customer", "U-1"),
    )
    await put(
        repo, tenant, "Returns desk note: blender refund approved.", entity=("customer", "U-1")
    )
    # Another user of the tenant, and the same user id in another tenant, hold other words.
    await put(repo, tenant, "Espresso machine descaled under warranty.", entity=("customer", "U-2"))
    other_tenant = unique("held-other")
    await put(repo, other_tenant, "Espresso grinder replaced.", entity=("customer", "U-1"))
    # A superseded version and a retracted memory of the asker hold words no longer true.
    await put(repo, tenant, "Kettle warranty claim opened.", key="k", entity=("customer", "U-1"))
    await put(repo, tenant, "Toaster warranty claim opened.", key="k", entity=("customer", "U-1"))
    await put(repo, tenant, "Ladder order placed.", key="gone", entity=("customer", "U-1"))
    await put(repo, tenant, "", key="gone", entity=("customer", "U-1"), op=Op.RETRACT)

    terms = own_terms("why the return? blender, espresso, kettle, toaster, ladder?")
    counts = await held.held_terms(tenant, terms, MINE)
    assert counts.memories == 3  # the two returns notes and the toaster: current, not retracted
    assert counts.held == {
        "blender": 2,
        "espresso": 0,  # another user's word
        "kettle": 0,  # superseded
        "ladder": 0,  # retracted
        "return": 2,  # "returned", "Returns": the stem as a word prefix
        "toaster": 1,
    }
    # The same user id in another tenant: only that tenant's rows.
    elsewhere = await held.held_terms(other_tenant, ["espresso", "blender"], MINE)
    assert elsewhere == TermCounts(1, {"espresso": 1, "blender": 0})


async def test_short_stems_match_whole_inflected_words_and_chinese_grams(
    repo: PostgresMemoryRepository, held: PostgresHeldTerms, tenant: str
) -> None:
    await put(repo, tenant, "The comet photo print is coming on Friday.", entity=("user", "U-1"))
    await put(repo, tenant, "换货申请已受理，新的音箱已寄出。", entity=("customer", "U-1"))
    counts = await held.held_terms(tenant, ["come", "音箱", "换货", "退款"], MINE)
    assert counts == TermCounts(2, {"come": 1, "音箱": 1, "换货": 1, "退款": 0})
    # "run" is a short stem: its whole words count, not a word that merely starts with it.
    await put(repo, tenant, "Runway lights checked.", entity=("customer", "U-1"))
    assert (await held.held_terms(tenant, ["running"], MINE)).held == {"running": 0}


async def test_without_anchors_nothing_is_counted(
    repo: PostgresMemoryRepository, held: PostgresHeldTerms, tenant: str
) -> None:
    await put(repo, tenant, "Blender returned.", entity=("customer", "U-1"))
    assert (await held.held_terms(tenant, ["blender"], VectorFilter())) == TermCounts(0, {})
    assert build_held(tenant, ["blender"], VectorFilter()) is None
    # No word to look for: still how many memories the asker has (a broad record or not).
    assert (await held.held_terms(tenant, [], MINE)) == TermCounts(1, {})


async def test_user_text_is_a_parameter_never_sql(
    repo: PostgresMemoryRepository, held: PostgresHeldTerms, tenant: str
) -> None:
    await put(repo, tenant, "Blender returned.", entity=("customer", "U-1"))
    hostile = ["blender'); DROP TABLE memory_versions; --", "x' OR '1'='1", "a:*|b", "%_\\"]
    counts = await held.held_terms(tenant, hostile, MINE)
    assert set(counts.held) <= set(hostile)
    assert (await held.held_terms(tenant, ["blender"], MINE)).held == {"blender": 1}
