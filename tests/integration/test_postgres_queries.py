"""PostgresMemoryQueries against real PostgreSQL (15 on the machine, 18 embedded).

Data goes in through the real write path (``PostgresMemoryRepository.record``), except the
10,000-version latency check, which COPYs rows in directly. Every test uses a fresh tenant id in
the session's migrated schema.
"""

from __future__ import annotations

import itertools
import json
import random
import statistics
import time
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta

import pytest

from memstream.services.adapters.postgres import PostgresMemoryRepository
from memstream.services.adapters.postgres_keyword import (
    Term,
    build_search,
    generators,
    query_terms,
    rarity,
)
from memstream.services.adapters.postgres_queries import PostgresMemoryQueries
from memstream.services.adapters.postgres_rows import search_text
from memstream.services.domain.model import Anchor, MemoryEvent, MemoryVersion, Op
from memstream.services.handlers.recording import record_event
from memstream.services.ports import KeywordHit, Position, VectorFilter

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
EVERYTHING = VectorFilter(current_only=False)
CURRENT = VectorFilter()
_offsets = itertools.count()


@pytest.fixture
async def repo(pg_dsn: str) -> AsyncIterator[PostgresMemoryRepository]:
    repository = await PostgresMemoryRepository.connect(pg_dsn)
    yield repository
    await repository.close()


@pytest.fixture
def queries(repo: PostgresMemoryRepository) -> PostgresMemoryQueries:
    return PostgresMemoryQueries(repo.pool)


async def put(
    repo: PostgresMemoryRepository,
    tenant: str,
    content: str,
    *,
    key: str | None = None,
    at: datetime = T0,
    attributes: Mapping[str, str] | None = None,
    fact_type: str = "order",
    status: str = "open",
    entity: tuple[str, str] = ("customer", "C-1"),
    entities: Sequence[Anchor] = (),
    op: Op = Op.UPSERT,
) -> MemoryVersion:
    event_id = uuid.uuid4().hex
    event = MemoryEvent(
        event_id=event_id,
        tenant_id=tenant,
        memory_key=key or event_id,
        entity_type=entity[0],
        entity_id=entity[1],
        fact_type=fact_type,
        content=content,
        source_system="crm",
        status=status,
        occurred_at=at,
        op=op,
        entities=tuple(entities),
        attributes=dict(attributes or {}),
    )
    recorded = await record_event(repo, event, {}, Position("t", 0, next(_offsets)), at + DAY)
    return recorded.version


def ids(hits: Sequence[KeywordHit]) -> list[str]:
    return [hit.version_id for hit in hits]


def assert_well_ordered(hits: Sequence[KeywordHit]) -> None:
    assert all(0.0 < hit.score <= 1.0 for hit in hits)
    assert list(hits) == sorted(hits, key=lambda h: (-h.score, h.version_id))


def test_query_terms_keep_hyphenated_words_exact_terms_and_cjk_bigrams() -> None:
    terms = {t.text: t for t in query_terms("Is the XR-500 with USB-C in red? 退货订单 它")}
    assert {"xr-500", "xr", "500", "usb-c", "usb", "red", "退货", "货订", "订单", "它"} == set(
        terms
    )
    assert terms["xr-500"].exact and terms["xr-500"].weight == 3.0
    assert terms["red"].exact and not terms["xr"].exact and terms["退货"].gram
    assert query_terms("the of and") == []


async def test_exact_model_port_and_colour_beat_loose_matches(
    repo: PostgresMemoryRepository, queries: PostgresMemoryQueries, tenant: str
) -> None:
    exact = await put(
        repo,
        tenant,
        "Customer bought the XR-500 headphones",
        attributes={"colour": "red", "port": "USB-C"},
    )
    near = await put(
        repo,
        tenant,
        "Customer bought the XR-5000 headphones",
        attributes={"colour": "blue", "port": "micro-USB"},
    )
    loose = await put(repo, tenant, "Customer asked which headphones to buy")
    substring = await put(repo, tenant, "A reduced price was offered")
    hits = await queries.keyword_search(tenant, "XR-500 headphones red USB-C", CURRENT, 10)
    assert ids(hits) == [exact.version_id, near.version_id, loose.version_id]
    assert hits[0].score == 1.0  # every term found
    assert substring.version_id not in ids(hits)  # "red" inside "reduced" is not the colour
    assert_well_ordered(hits)
    only_model = await queries.keyword_search(tenant, "XR-500", CURRENT, 10)
    assert ids(only_model)[0] == exact.version_id and only_model[0].score == 1.0


async def test_a_question_naming_a_memory_key_finds_that_memory(
    repo: PostgresMemoryRepository, queries: PostgresMemoryQueries, tenant: str
) -> None:
    # One utterance set two slots: it is the current value of "date" and, the city having
    # changed since, the old value of "city". Asked for the city, the key decides.
    said = "Book a table in Berkeley for the 3rd of March"
    date = await put(repo, tenant, said, key="dlg-7|Restaurants_1|date")
    await put(repo, tenant, said, key="dlg-7|Restaurants_1|city")
    city = await put(repo, tenant, "Make that Oakland instead", key="dlg-7|Restaurants_1|city")
    hits = await queries.keyword_search(tenant, "Which city does the user want now?", CURRENT, 10)
    assert ids(hits)[0] == city.version_id and hits[0].score == 1.0
    assert date.version_id not in ids(hits)
    both = await queries.keyword_search(tenant, "restaurants Berkeley", CURRENT, 10)
    assert ids(both) == [date.version_id, city.version_id]  # "restaurants" from the keys


async def test_chinese_and_mixed_queries_match_chinese_content(
    repo: PostgresMemoryRepository, queries: PostgresMemoryQueries, tenant: str
) -> None:
    refund = await put(repo, tenant, "客户申请退货，订单号 A-1001")
    shipping = await put(repo, tenant, "客户询问发货时间")
    english = await put(repo, tenant, "Customer asked for a refund of order A-1002")
    red = await put(repo, tenant, "XR-500 耳机（红色）已退货", attributes={"渠道": "天猫"})
    hits = await queries.keyword_search(tenant, "退货 订单", CURRENT, 10)
    assert ids(hits)[0] == refund.version_id and hits[0].score == 1.0
    assert shipping.version_id not in ids(hits) and english.version_id not in ids(hits)
    assert red.version_id in ids(hits)  # 退货 only: half the terms
    assert_well_ordered(hits)
    mixed = await queries.keyword_search(tenant, "A-1001 退货", CURRENT, 10)
    assert ids(mixed)[0] == refund.version_id and mixed[0].score == 1.0
    colour = await queries.keyword_search(tenant, "XR-500 红色 退货", CURRENT, 10)
    assert ids(colour)[0] == red.version_id and colour[0].score == 1.0
    attribute = await queries.keyword_search(tenant, "天猫", CURRENT, 10)
    assert ids(attribute) == [red.version_id]
    one_char = await queries.keyword_search(tenant, "询", CURRENT, 10)
    assert ids(one_char) == [shipping.version_id]
    # No spaces: the text-search parser glues "A-2002" to its neighbours; the trigram index
    # still finds it, and the Chinese around it does not count as part of a longer word.
    glued = await put(repo, tenant, "订单号A-2002已发货，客户说耳机是红色的")
    assert ids(await queries.keyword_search(tenant, "A-2002", CURRENT, 10)) == [glued.version_id]
    both = await queries.keyword_search(tenant, "A-2002 发货 红色", CURRENT, 10)
    assert ids(both)[0] == glued.version_id and both[0].score == 1.0


async def test_non_ascii_letters_match_whatever_their_case(
    repo: PostgresMemoryRepository, queries: PostgresMemoryQueries, tenant: str
) -> None:
    german = await put(repo, tenant, "Ärger mit der Lieferung, Größe XL")
    russian = await put(repo, tenant, "Клиент вернул ЗАКАЗ")
    assert ids(await queries.keyword_search(tenant, "ärger größe", CURRENT, 10)) == [
        german.version_id
    ]
    hits = await queries.keyword_search(tenant, "заказ клиент", CURRENT, 10)
    assert ids(hits) == [russian.version_id] and hits[0].score == 1.0


async def test_current_only_and_as_of(
    repo: PostgresMemoryRepository, queries: PostgresMemoryQueries, tenant: str
) -> None:
    old = await put(repo, tenant, "Shipping address is Berlin", key="addr", at=T0)
    new = await put(repo, tenant, "Shipping address is Munich", key="addr", at=T0 + 10 * DAY)
    current = await queries.keyword_search(tenant, "shipping address", CURRENT, 10)
    assert ids(current) == [new.version_id]
    assert await queries.keyword_search(tenant, "Berlin", CURRENT, 10) == []
    history = await queries.keyword_search(tenant, "shipping address", EVERYTHING, 10)
    assert set(ids(history)) == {old.version_id, new.version_id}
    then = VectorFilter(as_of=T0 + 5 * DAY)  # current_only is ignored with as_of
    assert ids(await queries.keyword_search(tenant, "shipping address", then, 10)) == [
        old.version_id
    ]
    at_change = VectorFilter(as_of=T0 + 10 * DAY)
    assert ids(await queries.keyword_search(tenant, "address", at_change, 10)) == [new.version_id]
    before = VectorFilter(as_of=T0 - DAY)
    assert await queries.keyword_search(tenant, "address", before, 10) == []


async def test_metadata_filters(
    repo: PostgresMemoryRepository, queries: PostgresMemoryQueries, tenant: str
) -> None:
    a = await put(repo, tenant, "laptop order", entity=("customer", "C-1"), at=T0)
    b = await put(
        repo,
        tenant,
        "laptop order",
        entity=("customer", "C-2"),
        entities=[Anchor("order", "O-9")],
        at=T0 + 5 * DAY,
        fact_type="complaint",
    )
    c = await put(repo, tenant, "laptop order", entity=("customer", "C-3"), status="cancelled")

    async def search(flt: VectorFilter) -> set[str]:
        return set(ids(await queries.keyword_search(tenant, "laptop", flt, 10)))

    assert await search(CURRENT) == {a.version_id, b.version_id, c.version_id}
    assert await search(VectorFilter(anchors=("customer:C-1", "order:O-9"))) == {
        a.version_id,
        b.version_id,
    }
    assert await search(VectorFilter(anchors=("customer:nobody",))) == set()
    window = VectorFilter(window=(T0 + DAY, T0 + 5 * DAY))  # inclusive bounds
    assert await search(window) == {b.version_id}
    assert await search(VectorFilter(fact_types=("complaint",))) == {b.version_id}
    assert await search(VectorFilter(exclude_statuses=("cancelled", "retracted"))) == {
        a.version_id,
        b.version_id,
    }


async def test_retracted_memories_are_never_returned(
    repo: PostgresMemoryRepository, queries: PostgresMemoryQueries, tenant: str
) -> None:
    kept = await put(repo, tenant, "Customer prefers the gold plan", key="plan", at=T0)
    tomb = await put(repo, tenant, "", key="plan", at=T0 + 10 * DAY, op=Op.RETRACT)
    assert tomb.op is Op.RETRACT and tomb.content == kept.content  # same searchable text
    assert await queries.keyword_search(tenant, "gold plan", CURRENT, 10) == []
    after = VectorFilter(as_of=T0 + 11 * DAY)
    assert await queries.keyword_search(tenant, "gold plan", after, 10) == []
    # History still holds the UPSERT version valid before the retraction; never the tombstone.
    before = VectorFilter(as_of=T0 + DAY)
    assert ids(await queries.keyword_search(tenant, "gold plan", before, 10)) == [kept.version_id]
    everything = await queries.keyword_search(tenant, "gold plan", EVERYTHING, 10)
    assert tomb.version_id not in ids(everything)


async def test_tenants_are_isolated(
    repo: PostgresMemoryRepository, queries: PostgresMemoryQueries, tenant: str
) -> None:
    other = f"other-{uuid.uuid4().hex}"
    mine = await put(repo, tenant, "客户申请退货 XR-500 red")
    theirs = await put(repo, other, "客户申请退货 XR-500 red")
    for query in ("退货", "XR-500", "red", "客户申请退货 XR-500 red"):
        assert ids(await queries.keyword_search(tenant, query, EVERYTHING, 10)) == [mine.version_id]
        assert ids(await queries.keyword_search(other, query, EVERYTHING, 10)) == [
            theirs.version_id
        ]
    asked = [theirs.version_id, "not-a-uuid", mine.version_id, str(uuid.uuid4())]
    assert await queries.versions(tenant, asked) == [mine]
    assert await queries.versions(other, asked) == [theirs]
    assert await queries.versions(tenant, []) == []


async def test_versions_come_back_whole_in_the_order_asked(
    repo: PostgresMemoryRepository, queries: PostgresMemoryQueries, tenant: str
) -> None:
    first = await put(repo, tenant, "one", attributes={"k": "v"}, entities=[Anchor("order", "1")])
    second = await put(repo, tenant, "two", key="two")
    third = await put(repo, tenant, "three", key="two", at=T0 + DAY)
    got = await queries.versions(tenant, [third.version_id, first.version_id, first.version_id])
    assert got == [third, first]
    changed = await queries.versions(tenant, [second.version_id])
    assert changed[0].is_current is False and changed[0].valid_to == third.valid_from


async def test_known_tenant(
    repo: PostgresMemoryRepository, queries: PostgresMemoryQueries, tenant: str
) -> None:
    assert await queries.known_tenant(tenant) is False  # negative answers are not cached
    await put(repo, tenant, "hello")
    assert await queries.known_tenant(tenant) is True
    assert await queries.known_tenant(tenant) is True  # from the in-process cache
    assert await queries.known_tenant(f"nobody-{uuid.uuid4().hex}") is False


def test_generators_take_exact_terms_then_the_rarest_words_within_the_budget() -> None:
    exact, rare, mid, broad = (
        Term("xr-500", 3, exact=True),
        Term("kettle", 1),
        Term("blue", 1),
        Term("order", 1),
    )
    frequencies = {"kettle": 2, "blue": 7, "order": 11}
    assert generators([broad, mid, rare, exact], frequencies, 10) == [exact, rare, mid]
    assert generators([broad, mid, rare, exact], frequencies, 5) == [exact, rare]
    # Without an exact term, the rarest word always makes candidates, whatever its frequency.
    assert generators([broad, mid], frequencies, 5) == [mid]
    assert generators([broad, Term("new", 1)], frequencies, 5) == [Term("new", 1)]  # unknown: 0


async def test_broad_words_score_but_make_no_candidates_of_their_own(
    repo: PostgresMemoryRepository, tenant: str
) -> None:
    queries = PostgresMemoryQueries(repo.pool, broad_after=3)
    common = [await put(repo, tenant, f"order shipped to customer {i}") for i in range(5)]
    target = await put(repo, tenant, "order A-77 for customer kettle")
    assert await queries.term_frequencies(tenant, "order kettle customer") == {
        "order": 4,  # counted up to broad_after + 1
        "customer": 4,
        "kettl": 1,  # a word's stem: the versions with any form of it
    }
    # An exact id: the versions that have only the broad words are not even candidates.
    hits = await queries.keyword_search(tenant, "order A-77", CURRENT, 10)
    assert ids(hits) == [target.version_id] and hits[0].score == 1.0
    # Broad words only: the rarest still makes candidates, and every term is scored.
    hits = await queries.keyword_search(tenant, "order shipped", CURRENT, 10)
    assert set(ids(hits)[:5]) == {v.version_id for v in common}
    assert [h.score for h in hits] == [1.0] * 5 + [0.5] and ids(hits)[5] == target.version_id
    # Narrowed to an entity, every term makes candidates within it.
    anchored = VectorFilter(anchors=("customer:C-1",))
    assert len(await queries.keyword_search(tenant, "order A-99", anchored, 10)) == 6
    # Without the frequencies (every term a generator), the same query finds them all.
    built = build_search(tenant, "order A-99", CURRENT, 10)
    assert built is not None
    async with repo.pool.connection() as conn:
        rows = await (await conn.execute(built.statement, built.params)).fetchall()
    assert len(rows) == 6
    assert await queries.keyword_search(tenant, "order A-99", CURRENT, 10) == []


async def test_a_rare_word_weighs_more_than_a_common_one(
    repo: PostgresMemoryRepository, queries: PostgresMemoryQueries, tenant: str
) -> None:
    # BM25's idf: finding a word that few of the tenant's memories contain says more than
    # finding one that most contain (a speaker's name in every one of their turns).
    common = [await put(repo, tenant, f"Dana said the kettle is fine, take {n}") for n in range(6)]
    rare = await put(repo, tenant, "Dana asked about descaling")
    hits = await queries.keyword_search(tenant, "Dana descaling kettle", CURRENT, 10)
    assert ids(hits)[0] == rare.version_id
    assert set(ids(hits)[1:]) == {v.version_id for v in common}
    dana, kettle, descaling = rarity(7), rarity(6), rarity(1)
    assert hits[0].score == pytest.approx((dana + descaling) / (dana + descaling + kettle))
    assert hits[1].score == pytest.approx((dana + kettle) / (dana + descaling + kettle))
    assert rarity(0) > rarity(1) > rarity(300) > rarity(5000) == rarity(1001) > 0


async def test_inflected_forms_match_at_the_start_of_a_word(
    repo: PostgresMemoryRepository, queries: PostgresMemoryQueries, tenant: str
) -> None:
    # An English word is searched by its stem as a word prefix: any form of it is found
    # ("hiking" finds "hiked", "adoption" finds "adopted"), a word that merely contains it
    # is not ("art" is not in "started"), and two forms of one word in the query are one term.
    hiked = await put(repo, tenant, "Caroline hiked up the ridge with her kids")
    adopted = await put(repo, tenant, "They adopted a puppy last spring")
    started = await put(repo, tenant, "She started a new job")
    hits = await queries.keyword_search(tenant, "hiking kid", CURRENT, 10)
    assert ids(hits) == [hiked.version_id] and hits[0].score == 1.0
    hits = await queries.keyword_search(tenant, "adoption adopting", CURRENT, 10)
    assert ids(hits) == [adopted.version_id] and hits[0].score == 1.0
    assert await queries.keyword_search(tenant, "art", CURRENT, 10) == []
    assert started.version_id in ids(await queries.keyword_search(tenant, "starting", CURRENT, 10))
    assert [t.text for t in query_terms("painting paints painted")] == ["paint"]


async def test_a_word_no_memory_holds_does_not_dilute_the_score(
    repo: PostgresMemoryRepository, queries: PostgresMemoryQueries, tenant: str
) -> None:
    # A word found in none of the tenant's memories (a typo, a word nobody used) says nothing
    # about which memory is meant: it weighs 0. An exact id nobody holds still counts against
    # every memory: it is what was asked for. Pronouns are stop words.
    kettle = await put(repo, tenant, "Dana descaled the kettle")
    hits = await queries.keyword_search(tenant, "kettle descalling", CURRENT, 10)
    assert ids(hits) == [kettle.version_id] and hits[0].score == 1.0
    hits = await queries.keyword_search(tenant, "kettle XR-900", CURRENT, 10)
    assert ids(hits) == [kettle.version_id] and hits[0].score < 0.5
    assert await queries.keyword_search(tenant, "zyzzyva", CURRENT, 10) == []
    assert [t.text for t in query_terms("what did she tell him of her kettle")] == [
        "tell",
        "kettl",
    ]


async def test_ids_narrow_the_search_and_keep_the_scores(
    repo: PostgresMemoryRepository, queries: PostgresMemoryQueries, tenant: str
) -> None:
    # Retrieval keyword-scores the candidates only the vector search found: limited to their
    # ids, every term makes candidates and each keeps the score it has in the open search.
    found = [await put(repo, tenant, f"blue kettle number {n}") for n in range(3)]
    other = await put(repo, tenant, "a red teapot")
    everything = {h.version_id: h.score for h in await queries.keyword_search(
        tenant, "blue kettle teapot", CURRENT, 10
    )}  # fmt: skip
    chosen = (found[0].version_id.upper(), other.version_id, "not-a-uuid")
    hits = await queries.keyword_search(tenant, "blue kettle teapot", VectorFilter(ids=chosen), 10)
    assert {h.version_id: h.score for h in hits} == {
        found[0].version_id: everything[found[0].version_id],
        other.version_id: everything[other.version_id],
    }
    assert await queries.keyword_search(tenant, "kettle", VectorFilter(ids=("x",)), 10) == []


async def test_scores_ties_limits_and_hostile_queries(
    repo: PostgresMemoryRepository, queries: PostgresMemoryQueries, tenant: str
) -> None:
    twins = [await put(repo, tenant, "blue kettle") for _ in range(3)]
    half = await put(repo, tenant, "blue teapot")
    hits = await queries.keyword_search(tenant, "blue kettle", CURRENT, 10)
    assert ids(hits) == [*sorted(v.version_id for v in twins), half.version_id]
    # blue is exact (three times the rarest word's weight), kettle is in 3 versions
    teapot = 3 * rarity(0) / (3 * rarity(0) + rarity(3))
    assert [h.score for h in hits] == [1.0, 1.0, 1.0, pytest.approx(teapot)]
    assert_well_ordered(hits)
    assert ids(await queries.keyword_search(tenant, "blue kettle", CURRENT, 2)) == ids(hits)[:2]
    assert await queries.keyword_search(tenant, "blue kettle", CURRENT, 0) == []
    for hostile in ("", "   ", "the of", "'; DROP TABLE memory_versions; --", '"%_\\"', "-or-"):
        assert await queries.keyword_search(tenant, hostile, CURRENT, 10) == []
    percent = await put(repo, tenant, "discount of 50% on the a_c unit")
    assert ids(await queries.keyword_search(tenant, '"a_c"', CURRENT, 10)) == [percent.version_id]
    assert await queries.keyword_search(tenant, '"a%c"', CURRENT, 10) == []


def synthetic_versions(tenant: str, n: int) -> list[MemoryVersion]:
    """A seeded corpus: random vocabulary, a few words common to every row ("order" is in all),
    model numbers, attributes (colour in 1/8 of the rows each) and Chinese in a third."""
    rnd = random.Random(7)
    syllables = ["ka", "lo", "mi", "ra", "te", "su", "no", "bi", "xe", "do", "pa", "ri", "ve"]
    vocab = ["".join(rnd.choices(syllables, k=rnd.randint(2, 4))) for _ in range(3000)]
    common = ["customer", "asked", "about", "delivery", "price", "support", "refund"]
    models = [
        f"{rnd.choice('ABCDHXZ')}{rnd.choice('KMRT')}-{rnd.randint(10, 999)}" for _ in range(200)
    ]
    colours = ["red", "blue", "black", "white", "green", "silver", "gold", "pink"]
    ports = ["USB-C", "HDMI", "Lightning", "micro-USB", "Thunderbolt"]
    hanzi = (
        "客户申请退货订单已发货投诉物流太慢询问保修政策要求换货耳机充电器电脑屏幕键盘价格退款地址"
    )
    versions = []
    for i in range(n):
        words = [*rnd.sample(vocab, 10), *rnd.sample(common, 2)]
        content = f"{' '.join(words)} {rnd.choice([*models, 'XR-500'])} order A-{i}"
        if i % 3 == 0:
            content += " " + "".join(rnd.choices(hanzi, k=12))
        at = T0 + i * timedelta(minutes=5)
        customer = f"C-{rnd.randint(1, 700)}"
        attributes = {"colour": rnd.choice(colours), "port": rnd.choice(ports)}
        versions.append(
            MemoryVersion(
                str(uuid.uuid4()),
                tenant,
                f"m{i}",
                1,
                None,
                f"e{i}",
                "customer",
                customer,
                "order",
                content,
                "crm",
                "open",
                Op.UPSERT,
                at,
                at,
                None,
                at,
                None,
                True,
                attributes=attributes,
            )
        )
    return versions


async def test_latency_for_ten_thousand_versions(
    repo: PostgresMemoryRepository, queries: PostgresMemoryQueries, tenant: str
) -> None:
    """Printed, not asserted: 10,000 versions COPYed in, then typical queries timed."""
    columns = (
        "version_id, tenant_id, memory_key, version, event_id, entity_type, entity_id, anchors,"
        " fact_type, content, attributes, search_text, source_system, status, op, occurred_at,"
        " valid_from, recorded_at, is_current"
    )
    async with repo.pool.connection() as conn:
        await conn.execute("INSERT INTO tenants (tenant_id) VALUES (%s)", (tenant,))
        async with conn.cursor().copy(f"COPY memory_versions ({columns}) FROM STDIN") as copy:
            for v in synthetic_versions(tenant, 10_000):
                await copy.write_row(
                    (
                        v.version_id,
                        tenant,
                        v.memory_key,
                        1,
                        v.event_id,
                        v.entity_type,
                        v.entity_id,
                        [f"{a.type}:{a.id}" for a in v.anchors],
                        v.fact_type,
                        v.content,
                        json.dumps(dict(v.attributes)),
                        search_text(v),
                        v.source_system,
                        v.status,
                        v.op.value,
                        v.occurred_at,
                        v.valid_from,
                        v.recorded_at,
                        v.is_current,
                    )
                )
        await conn.execute("ANALYZE memory_versions")
    cases = [
        ("XR-500 red headphones", CURRENT),
        ("kalomi teno", CURRENT),
        ("客户 退货", CURRENT),
        ("我的耳机退货了吗 A-4321", CURRENT),
        ("did customer C-17 return the XR-500?", VectorFilter(anchors=("customer:C-17",))),
        ("silver XR-500 last week", VectorFilter(window=(T0 + 20 * DAY, T0 + 27 * DAY))),
        ("order A-4321", CURRENT),  # "order" is in every row: every row is a candidate
    ]
    for query, flt in cases:
        hits = await queries.keyword_search(tenant, query, flt, 40)
        assert hits and len(hits) <= 40
        assert_well_ordered(hits)
        timings = []
        for _ in range(20):
            start = time.perf_counter()
            await queries.keyword_search(tenant, query, flt, 40)
            timings.append((time.perf_counter() - start) * 1000)
        narrowed = bool(flt.anchors) or flt.window is not None
        frequencies = None if narrowed else await queries.term_frequencies(tenant, query)
        built = build_search(tenant, query, flt, 40, frequencies)
        assert built is not None
        async with repo.pool.connection() as conn:
            cur = await conn.execute(
                b"EXPLAIN (ANALYZE) " + built.statement.as_bytes(conn), built.params
            )
            plan = [str(row[0]) for row in await cur.fetchall()]
        scans = {line.split(" on ")[1].split()[0] for line in plan if "Scan on memory_v" in line}
        print(
            f"\n[keyword search, 10k versions] {query!r}: median"
            f" {statistics.median(timings):.2f} ms, {len(hits)} hits, scans {sorted(scans)},"
            f" {plan[-1].strip()}"
        )
