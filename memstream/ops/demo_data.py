"""The demo's world: a multi-tenant shop history as MemoryEvents, and the questions that trap
plain vector search.

Two tenants run near-identical shops on one catalogue: ``acme`` (the main story) and ``globex``
(a white-label shop whose customer ``C-1001`` is someone else than acme's ``C-1001``). Three
years of CRM, ERP, ticketing, catalogue, clickstream, forum and review events, in English and
Chinese, with state changes (an order placed → shipped → delivered, complaints pending →
resolved), a superseded spec, a forum post that is retracted, a review that contradicts the
spec, and near-identical records of different customers.

The history is written as a ledger, two lines per event, because that is how it reads best::

    memory_key  days-ago  entity  fact_type  source_system  status  [type:id …] [k=v …] [RETRACT]
        content

``type:id`` tokens are extra anchors (``entities``), ``k=v`` tokens attributes. ``history``
turns it into MemoryEvent dicts (the JSON shape of README "Memory events") with ``occurred_at``
relative to the ``now`` passed in, in publishing order: each memory's versions in valid-time
order, so version n of a memory is its n-th event.

Each ``Question`` names its tenant and request fields, the memories that are a right answer
(``"spec:X1@2"``: version 2 of spec:X1) and why similarity alone fails there.
Pure data: must not import I/O libraries, streams or handlers.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

ACME = "acme"
GLOBEX = "globex"
DAY = timedelta(days=1)

Event = dict[str, Any]

# Sold by both shops.
CATALOGUE = """
spec:X1  400  product:X1  product_spec  catalog  active  port=micro-USB
    X1 smartphone spec sheet: 6.1-inch OLED, 128 GB, charging over a micro-USB port, 18 W.
spec:X1-battery  300  product:X1  product_spec  catalog  active  battery=12h
    X1 battery: 4,500 mAh, rated for up to 12 hours of mixed use.
sku:XR-500-black  380  product:XR-500  product_spec  catalog  active  model=XR-500 colour=black
    XR-500 wireless headphones, colour black, micro-USB charging port, 30 h battery.
sku:XR-300-red  200  product:XR-300  product_spec  catalog  active  model=XR-300 colour=red
    XR-300 wireless headphones, colour red, USB-C charging port, 30 h battery.
sku:XR-500-blue  150  product:XR-500  product_spec  catalog  active  model=XR-500 colour=blue
    XR-500 wireless headphones, colour blue, USB-C charging port, 30 h battery.
sku:XR-500-red  150  product:XR-500  product_spec  catalog  active  model=XR-500 colour=red
    XR-500 wireless headphones, colour red, USB-C charging port, 30 h battery.
sku:RUNFAST-3  1200  product:RUNFAST-3  product_spec  catalog  active
    RunFast 3 road running shoes, red, cushioned sole.
sku:TRAILMAX  90  product:TRAILMAX  product_spec  catalog  active
    TrailMax GTX trail shoes, waterproof, grippy outsole.
doc:X1-manual  60  product:X1  official_doc  official  active
    X1 user manual, section 4 (Power): the X1 has no wireless (Qi) charging coil; charge it
    with the cable and adapter in the box.
spec:X1  30  product:X1  product_spec  catalog  active  port=USB-C
    X1 smartphone spec sheet (revision B): 6.1-inch OLED, 128 GB, the charging port is now
    USB-C, 25 W.
forum:X1:t-77  10  product:X1  forum_post  forum  active
    Can confirm: the X1 has wireless charging built in, I charge mine on a Qi pad every night!
review:X1:r-311  5  product:X1  review  user_review  active
    Five stars. The X1 battery easily lasts 20 hours, way longer than any phone I had before.
forum:X1:t-77  4  product:X1  forum_post  forum  retracted  RETRACT
price:X1  200  product:X1  price  erp  active  price=499
    X1 smartphone price: 499 EUR.
price:X1  21  product:X1  price  erp  active  price=449
    X1 smartphone price: 449 EUR (autumn promotion).
stock:XR-500-red  0.5  product:XR-500  stock  erp  active  sku=XR-500-red
    Warehouse Leipzig: 14 units of XR-500 red headphones in stock.
"""

ACME_CUSTOMERS = """
address:C-1001  900  customer:C-1001  address  crm  active
    Anna Keller, Leopoldstraße 12, 80802 Munich.
pref:C-1001  500  customer:C-1001  preference  crm  active
    Anna prefers delivery to the DHL Packstation 112 in Berlin.
address:C-1001  480  customer:C-1001  address  crm  active
    Anna Keller moved: Kastanienallee 5, 10435 Berlin.
order:O-2210  800  customer:C-1001  order  erp  delivered  order:O-2210 order_id=O-2210
    Order O-2210: RunFast 3 road running shoes, red, size 39, 119 EUR.
order:O-2980  640  customer:C-1003  order  erp  delivered  order:O-2980 order_id=O-2980
    Order O-2980: two-person camping tent and camping stove, 310 EUR.
chat:C-1003:1  630  customer:C-1003  support_chat  support_chat  closed
    Chat: customer asked whether the tent fits in a 40 l backpack; agent said yes, 2.1 kg.
order:O-3120  330  customer:C-1002  order  erp  delivered  order:O-3120 order_id=O-3120
    Order O-3120: X1 smartphone, 128 GB, black, 499 EUR.
order:O-3350  240  customer:C-1003  order  erp  delivered  order:O-3350 order_id=O-3350
    Order O-3350: espresso machine Barista Pro, 389 EUR.
email:C-1002:1  120  customer:C-1002  email  email  active
    Email from Ben: please send invoices to ben.carter@example.com from now on.
order:O-3301  250  customer:C-1001  order  erp  delivered  order:O-3301 order_id=O-3301
    Order O-3301: BrewMaster CG-2 burr coffee grinder, 129 EUR.
order:O-4410  170  customer:C-1001  order  erp  delivered  order:O-4410 order_id=O-4410
    Order O-4410: gooseneck kettle for pour-over coffee, 59 EUR.
complaint:T-881  165  customer:C-1001  complaint  ticketing  pending  ticket:T-881
    Complaint T-881: order O-4410 arrived a week late. Status: pending, waiting for the carrier.
complaint:T-881  160  customer:C-1001  complaint  ticketing  resolved  ticket:T-881
    Complaint T-881: order O-4410 arrived a week late. Status: resolved, a 10 EUR voucher sent.
order:O-5801  45  customer:C-1088  order  erp  delivered  order:O-5801 order_id=O-5801
    订单 O-5801：红色 XR-300 无线耳机，79 欧元。
order:O-5512  40  customer:C-1001  order  erp  placed  order:O-5512 product:XR-500
    Order O-5512: XR-500 wireless headphones, blue, 89 EUR — placed, payment received.
order:O-5512  38  customer:C-1001  order  erp  shipped  order:O-5512 product:XR-500
    Order O-5512: XR-500 wireless headphones, blue, 89 EUR — shipped with DHL.
order:O-5512  36  customer:C-1001  order  erp  delivered  order:O-5512 product:XR-500
    Order O-5512: XR-500 wireless headphones, blue, 89 EUR — delivered.
complaint:T-902  28  customer:C-1088  complaint  ticketing  pending  ticket:T-902 product:X1
    投诉 T-902：X1 手机配的是 micro-USB 充电线，插不进去。状态：待处理。
complaint:T-902  26  customer:C-1088  complaint  ticketing  resolved  ticket:T-902 product:X1
    投诉 T-902：已补发 USB-C 充电线，客户确认收到，投诉已解决。
return:O-5801  25  customer:C-1088  return  erp  refunded  order:O-5801 product:XR-300
    退货：客户退回了订单 O-5801 的红色 XR-300 耳机，原因是左耳没有声音，已退款 79 欧元。
return:O-5512  20  customer:C-1001  return  erp  refunded  order:O-5512 product:XR-500
    Return of order O-5512 received: the blue XR-500 headphones; refund of 89 EUR issued.
order:O-5630  12  customer:C-1002  order  erp  delivered  order:O-5630 product:XR-500
    Order O-5630: XR-500 wireless headphones, blue, 89 EUR.
return:O-5877  6  customer:C-1099  return  erp  refunded  order:O-5877 product:XR-500
    退货：客户退回了红色 XR-500 耳机，已退款。
order:O-6120  8  customer:C-1001  order  erp  delivered  order:O-6120 order_id=O-6120
    Order O-6120: X1 phone case, transparent, 19 EUR.
order:O-6188  5  customer:C-1003  order  erp  shipped  order:O-6188 order_id=O-6188
    Order O-6188: XR-300 wireless headphones, red, 69 EUR — shipped.
complaint:T-940  4  customer:C-1001  complaint  ticketing  pending  ticket:T-940
    Complaint T-940: the X1 phone case from order O-6120 arrived cracked; replacement requested.
return:O-5630  3  customer:C-1002  return  erp  refunded  order:O-5630 product:XR-500
    Customer returned the blue XR-500 wireless headphones they ordered; refund issued.
complaint:T-951  2  customer:C-1002  complaint  ticketing  pending  ticket:T-951
    Complaint T-951: what is the status of my refund? The XR-500 refund has not arrived.
"""

# Page views over three years (clickstream): memory_key view:<customer>:<n>.
ACME_VIEWS = (
    (1100, "C-1001", "RunFast 3 road running shoes, red — product page"),
    (1090, "C-1001", "Running shoes buying guide: how to choose your running shoes"),
    (900, "C-1001", "Two-person camping tent, 2.1 kg — product page"),
    (720, "C-1001", "X1 smartphone — product page"),
    (700, "C-1001", "X1 smartphone reviews tab"),
    (540, "C-1001", "Espresso machines — category page"),
    (400, "C-1001", "Camping stove — product page"),
    (260, "C-1001", "BrewMaster CG-2 burr coffee grinder — product page"),
    (180, "C-1001", "Pour-over kettles — category page"),
    (60, "C-1001", "Wireless headphones — category page"),
    (45, "C-1001", "XR-500 wireless headphones — product page"),
    (30, "C-1002", "Running shoes — category page"),
    (14, "C-1002", "XR-500 wireless headphones — product page"),
    (9, "C-1001", "Phone cases for the X1 — category page"),
    (7, "C-1001", "TrailMax GTX trail shoes — product page"),
    (2, "C-1001", "Order history page"),
)

# globex: same catalogue, and its own C-1001 (another person) with a near-identical return.
GLOBEX_CUSTOMERS = """
complaint:G-T-12  50  customer:C-1001  complaint  ticketing  resolved  ticket:G-T-12
    Complaint G-T-12: the black XR-500 headphones crackle on the left side. Resolved, replaced.
order:G-2207  30  customer:C-1001  order  erp  delivered  order:G-2207 order_id=G-2207
    Order G-2207: XR-500 wireless headphones, black, 89 EUR.
order:G-2301  20  customer:C-1004  order  erp  delivered  order:G-2301 order_id=G-2301
    Order G-2301: X1 smartphone, 449 EUR.
return:G-2207  15  customer:C-1001  return  erp  refunded  order:G-2207 product:XR-500
    Return of order G-2207 received: the black XR-500 headphones; refund of 89 EUR issued.
order:G-2350  9  customer:C-1002  order  erp  delivered  order:G-2350 order_id=G-2350
    Order G-2350: RunFast 3 road running shoes, red, 119 EUR.
view:C-1001:g1  3  customer:C-1001  page_view  clickstream  active
    Viewed: XR-500 wireless headphones — product page.
"""


@dataclass(frozen=True, slots=True)
class Question:
    trap: str  # the kind of trap, e.g. "wrong customer"
    tenant: str
    query: str
    answers: tuple[str, ...]  # right answers: "memory_key" or "memory_key@version"
    why: str  # why plain vector search fails here
    user: str | None = None
    as_of: datetime | None = None
    window: tuple[datetime, datetime] | None = None
    never: tuple[str, ...] = ()  # memory keys that must not appear among memstream's results

    def is_right(self, memory_key: str, version: int) -> bool:
        for answer in self.answers:
            key, _, wanted = answer.partition("@")
            if memory_key == key and (not wanted or version == int(wanted)):
                return True
        return False


@dataclass(frozen=True, slots=True)
class _Row:
    key: str
    days: float
    entity: str
    fact: str
    source: str
    status: str
    extras: tuple[str, ...]
    content: str


def _rows(ledger: str) -> list[_Row]:
    rows: list[_Row] = []
    for line in ledger.strip("\n").splitlines():
        if line.startswith(" "):  # content, possibly continued over several lines
            last = rows[-1]
            content = f"{last.content} {line.strip()}".strip()
            rows[-1] = replace(last, content=content)
            continue
        key, days, entity, fact, source, status, *extras = line.split()
        rows.append(_Row(key, float(days), entity, fact, source, status, tuple(extras), ""))
    return rows


def _event(tenant: str, number: int, row: _Row, now: datetime) -> Event:
    entity_type, entity_id = row.entity.split(":", 1)
    anchors = [t.split(":", 1) for t in row.extras if ":" in t and "=" not in t]
    attributes = dict(t.split("=", 1) for t in row.extras if "=" in t)
    return {
        "event_id": f"{row.source}-{number:04d}",
        "tenant_id": tenant,
        "memory_key": row.key,
        "entity_type": entity_type,
        "entity_id": entity_id,
        "entities": [{"type": kind, "id": ident} for kind, ident in anchors],
        "fact_type": row.fact,
        "content": row.content,
        "attributes": attributes,
        "source_system": row.source,
        "status": row.status,
        "occurred_at": (now - row.days * DAY).isoformat(),
        "op": "RETRACT" if "RETRACT" in row.extras else "UPSERT",
    }


def _views() -> str:
    return "\n".join(
        f"view:{customer}:{n}  {days}  customer:{customer}  page_view  clickstream  active\n"
        f"    Viewed: {page}."
        for n, (days, customer, page) in enumerate(ACME_VIEWS)
    )


def history(now: datetime, suffix: str = "") -> list[Event]:
    """Every event of the demo in publishing order; ``suffix`` is appended to tenant ids."""
    ledgers = {
        ACME: (CATALOGUE, ACME_CUSTOMERS, _views()),
        GLOBEX: (CATALOGUE, GLOBEX_CUSTOMERS),
    }
    events: list[Event] = []
    for tenant, parts in ledgers.items():
        rows = [row for part in parts for row in _rows(part)]
        rows.sort(key=lambda row: -row.days)  # stable: valid-time order, ledger order on ties
        events += [_event(tenant + suffix, n, row, now) for n, row in enumerate(rows)]
    return events


def questions(now: datetime, suffix: str = "") -> list[Question]:
    """The questions, each with its right answers and why plain vector search fails."""
    acme, globex = ACME + suffix, GLOBEX + suffix
    month = (now - 250 * DAY).strftime("%B")
    return [
        Question(
            "wrong customer",
            acme,
            "What headphones did I return?",
            ("return:O-5512",),
            "another customer returned the same headphones, in almost the same words",
            user="C-1001",
        ),
        Question(
            "superseded spec",
            acme,
            "Which charging port does the X1 have?",
            ("spec:X1@2",),
            "the superseded micro-USB sheet and a retracted forum post sit next to the current "
            "sheet, all within 0.06 of its cosine: similarity cannot tell which is true now",
        ),
        Question(
            "as of a year ago",
            acme,
            "Which charging port did the X1 have a year ago?",
            ("spec:X1@1",),
            "a plain store keeps no valid time: 'a year ago' is just words",
            as_of=now - 365 * DAY,
        ),
        Question(
            "retracted post",
            acme,
            "Does the X1 support wireless charging?",
            ("doc:X1-manual",),
            "the retracted forum post is the closest text to the question",
            never=("forum:X1:t-77",),
        ),
        Question(
            "3-year-old view",
            acme,
            "Which running shoes was I looking at?",
            ("view:C-1001:14",),
            "page views from three years ago, and another customer's, match the words better "
            "than last week's",
            user="C-1001",
        ),
        Question(
            "resolved vs open",
            acme,
            "What is the status of my complaint?",
            ("complaint:T-940",),
            "the resolved complaint and another customer's say 'status' just like the question",
            user="C-1001",
        ),
        Question(
            "review vs spec",
            acme,
            "How long does the X1 battery last?",
            ("spec:X1-battery",),
            "an enthusiastic review answers the question more literally than the official spec",
        ),
        Question(
            "exact attributes",
            acme,
            "Do you have the XR-500 in red with USB-C?",
            ("sku:XR-500-red",),
            "the XR-300 in red and the XR-500 in blue differ from it by a "
            "few characters, which embeddings blur",
        ),
        Question(
            "time window",
            acme,
            f"What coffee gear did I order in {month}?",
            ("order:O-3301",),
            "the month is a word to an embedding, not a filter on when things happened",
            user="C-1001",
            window=(now - 260 * DAY, now - 240 * DAY),
        ),
        Question(
            "Chinese question",
            acme,
            "我上次退货的耳机是什么型号？",
            ("return:O-5801",),
            "another customer's Chinese return reads almost the same, and an English model "
            "embeds Chinese poorly",
            user="C-1088",
        ),
        Question(
            "tenant isolation",
            globex,
            "What headphones did I return?",
            ("return:G-2207",),
            "globex's C-1001 is not acme's C-1001: an index without a tenant filter answers "
            "with acme's near-identical record",
            user="C-1001",
        ),
    ]
