"""The demo's world: a multi-tenant shop history as MemoryEvents, and the questions that trap
plain vector search.

Two tenants run near-identical shops on the same catalogue: ``acme`` (the main story) and
``globex`` (a white-label shop whose customers have the *same ids* as acme's). The history
covers three years of CRM, ERP, ticketing, catalogue, clickstream, forum and review events, in
English and Chinese, with state changes (an order placed → shipped → delivered, a complaint
pending → resolved), a superseded spec, a retracted forum post and near-identical records of
different customers. Every ``occurred_at`` is relative to the ``now`` passed in, so the story
reads the same on any day. Events are returned in the order they are published (each memory's
versions in valid-time order, so version n is its n-th event).

Each ``Question`` names its tenant, its request fields, the memories that are a right answer
(``"spec:X1@2"``: version 2 of spec:X1) and one line on why similarity alone fails there.
Pure data: must not import I/O libraries, streams or handlers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

ACME = "acme"
GLOBEX = "globex"
TENANTS = (ACME, GLOBEX)
DAY = timedelta(days=1)

Event = dict[str, Any]


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
    never: tuple[str, ...] = ()  # memory keys that must not appear in memstream's results

    def is_right(self, memory_key: str, version: int) -> bool:
        return any(
            memory_key == key and (not wanted or version == int(wanted))
            for key, _, wanted in (answer.partition("@") for answer in self.answers)
        )


class _History:
    """Collects events; ``add`` builds one in the documented JSON shape."""

    def __init__(self, now: datetime, suffix: str) -> None:
        self.now = now
        self.suffix = suffix
        self.events: list[Event] = []

    def add(
        self,
        tenant: str,
        key: str,
        content: str,
        *,
        ago: timedelta,
        entity: str,
        fact: str,
        source: str,
        status: str = "active",
        also: tuple[str, ...] = (),
        attributes: dict[str, str] | None = None,
        op: str = "UPSERT",
    ) -> None:
        entity_type, entity_id = entity.split(":", 1)
        number = sum(1 for e in self.events if e["tenant_id"] == tenant + self.suffix)
        self.events.append(
            {
                "event_id": f"{source}-{tenant}-{number:04d}",
                "tenant_id": tenant + self.suffix,
                "memory_key": key,
                "entity_type": entity_type,
                "entity_id": entity_id,
                "entities": [
                    {"type": a.split(":", 1)[0], "id": a.split(":", 1)[1]} for a in also
                ],
                "fact_type": fact,
                "content": content,
                "attributes": attributes or {},
                "source_system": source,
                "status": status,
                "occurred_at": (self.now - ago).isoformat(),
                "op": op,
            }
        )


def _catalogue(h: _History, tenant: str) -> None:
    """Product specs, SKUs, the manual, a forum thread (later retracted) and a review."""
    h.add(tenant, "spec:X1", "X1 smartphone spec sheet: 6.1-inch OLED, 128 GB, charging over a "
          "micro-USB port, 18 W wired charging.", ago=400 * DAY, entity="product:X1",
          fact="product_spec", source="catalog", attributes={"port": "micro-USB"})
    h.add(tenant, "spec:X1", "X1 smartphone spec sheet (revision B): 6.1-inch OLED, 128 GB, "
          "the charging port is now USB-C, 25 W wired charging.", ago=30 * DAY,
          entity="product:X1", fact="product_spec", source="catalog",
          attributes={"port": "USB-C"})
    h.add(tenant, "spec:X1-battery", "X1 battery: 4,500 mAh, rated for up to 12 hours of mixed "
          "use.", ago=300 * DAY, entity="product:X1", fact="product_spec", source="catalog",
          attributes={"battery": "12 h"})
    h.add(tenant, "doc:X1-manual", "X1 user manual, section 4 (Power): the X1 has no wireless "
          "(Qi) charging coil; charge it with the cable and adapter in the box.",
          ago=60 * DAY, entity="product:X1", fact="official_doc", source="official")
    for model, colour, port, ago in (
        ("XR-300", "red", "USB-C", 200),
        ("XR-500", "black", "micro-USB", 380),
        ("XR-500", "blue", "USB-C", 150),
        ("XR-500", "red", "USB-C", 150),
    ):
        h.add(tenant, f"sku:{model}-{colour}", f"{model} wireless headphones, colour {colour}, "
              f"{port} charging port, 30 h battery.", ago=ago * DAY, entity=f"product:{model}",
              fact="product_spec", source="catalog",
              attributes={"model": model, "colour": colour, "port": port})
    h.add(tenant, "sku:RUNFAST-3", "RunFast 3 road running shoes, red, cushioned sole.",
          ago=1200 * DAY, entity="product:RUNFAST-3", fact="product_spec", source="catalog")
    h.add(tenant, "sku:TRAILMAX", "TrailMax GTX trail shoes, waterproof, grippy outsole.",
          ago=90 * DAY, entity="product:TRAILMAX", fact="product_spec", source="catalog")
    h.add(tenant, "forum:X1:t-77", "Can confirm: the X1 has wireless charging built in, I charge "
          "mine on a Qi pad every night!", ago=10 * DAY, entity="product:X1", fact="forum_post",
          source="forum")
    h.add(tenant, "review:X1:r-311", "Five stars. The X1 battery easily lasts 20 hours, way "
          "longer than any phone I had before.", ago=5 * DAY, entity="product:X1",
          fact="review", source="user_review")
    h.add(tenant, "forum:X1:t-77", "", ago=4 * DAY, entity="product:X1", fact="forum_post",
          source="forum", status="retracted", op="RETRACT")


def _acme_customers(h: _History) -> None:
    t = ACME
    # C-1001 Anna: coffee orders, headphones bought and returned, two complaints.
    h.add(t, "order:O-3301", "Order O-3301: BrewMaster CG-2 burr coffee grinder, 129 EUR.",
          ago=250 * DAY, entity="customer:C-1001", fact="order", source="erp",
          status="delivered", also=("order:O-3301",), attributes={"order_id": "O-3301"})
    h.add(t, "order:O-4410", "Order O-4410: gooseneck kettle for pour-over coffee, 59 EUR.",
          ago=170 * DAY, entity="customer:C-1001", fact="order", source="erp",
          status="delivered", also=("order:O-4410",), attributes={"order_id": "O-4410"})
    for ago, status, text in (
        (40, "placed", "placed, payment received"),
        (38, "shipped", "shipped with DHL"),
        (36, "delivered", "delivered to the customer"),
    ):
        h.add(t, "order:O-5512", f"Order O-5512: XR-500 wireless headphones, blue, 89 EUR — "
              f"{text}.", ago=ago * DAY, entity="customer:C-1001", fact="order", source="erp",
              status=status, also=("order:O-5512", "product:XR-500"),
              attributes={"order_id": "O-5512"})
    h.add(t, "return:O-5512", "Return of order O-5512 received: the blue XR-500 headphones; "
          "refund of 89 EUR issued.", ago=20 * DAY, entity="customer:C-1001", fact="return",
          source="erp", status="refunded", also=("order:O-5512", "product:XR-500"))
    h.add(t, "complaint:T-881", "Complaint T-881: order O-4410 arrived a week late. Status: "
          "pending, waiting for the carrier.", ago=165 * DAY, entity="customer:C-1001",
          fact="complaint", source="ticketing", status="pending", also=("ticket:T-881",))
    h.add(t, "complaint:T-881", "Complaint T-881: order O-4410 arrived a week late. Status: "
          "resolved, a 10 EUR voucher was sent.", ago=160 * DAY, entity="customer:C-1001",
          fact="complaint", source="ticketing", status="resolved", also=("ticket:T-881",))
    h.add(t, "complaint:T-940", "Complaint T-940: the X1 phone case from order O-6120 arrived "
          "cracked; a replacement was requested.", ago=4 * DAY, entity="customer:C-1001",
          fact="complaint", source="ticketing", status="pending", also=("ticket:T-940",))
    h.add(t, "pref:C-1001", "Anna prefers delivery to the DHL Packstation 112 in Berlin.",
          ago=500 * DAY, entity="customer:C-1001", fact="preference", source="crm")
    # C-1002 Ben: near-identical records of another customer.
    h.add(t, "order:O-5630", "Order O-5630: XR-500 wireless headphones, blue, 89 EUR.",
          ago=12 * DAY, entity="customer:C-1002", fact="order", source="erp",
          status="delivered", also=("order:O-5630", "product:XR-500"),
          attributes={"order_id": "O-5630"})
    h.add(t, "return:O-5630", "Customer returned the blue XR-500 wireless headphones they "
          "ordered; refund issued.", ago=3 * DAY, entity="customer:C-1002", fact="return",
          source="erp", status="refunded", also=("order:O-5630", "product:XR-500"))
    h.add(t, "complaint:T-951", "Complaint T-951: my complaint is still open, what is the "
          "status? The XR-500 refund has not arrived.", ago=2 * DAY, entity="customer:C-1002",
          fact="complaint", source="ticketing", status="pending", also=("ticket:T-951",))
    # C-1088 王芳 and C-1099 李伟: Chinese records, again near-identical.
    h.add(t, "order:O-5801", "订单 O-5801：红色 XR-300 无线耳机，79 欧元。", ago=45 * DAY,
          entity="customer:C-1088", fact="order", source="erp", status="delivered",
          also=("order:O-5801", "product:XR-300"), attributes={"order_id": "O-5801"})
    h.add(t, "return:O-5801", "退货：客户退回了订单 O-5801 的红色 XR-300 耳机，原因是左耳没有"
          "声音，已退款 79 欧元。", ago=25 * DAY, entity="customer:C-1088", fact="return",
          source="erp", status="refunded", also=("order:O-5801", "product:XR-300"))
    h.add(t, "complaint:T-902", "投诉 T-902：X1 手机配的是 micro-USB 充电线，插不进去。状态：待处理。",
          ago=28 * DAY, entity="customer:C-1088", fact="complaint", source="ticketing",
          status="pending", also=("ticket:T-902", "product:X1"))
    h.add(t, "complaint:T-902", "投诉 T-902：已补发 USB-C 充电线，客户确认收到，投诉已解决。",
          ago=26 * DAY, entity="customer:C-1088", fact="complaint", source="ticketing",
          status="resolved", also=("ticket:T-902", "product:X1"))
    h.add(t, "return:O-5877", "退货：客户退回了红色 XR-500 耳机，已退款。", ago=6 * DAY,
          entity="customer:C-1099", fact="return", source="erp", status="refunded",
          also=("order:O-5877", "product:XR-500"))


def _browsing(h: _History) -> None:
    """C-1001's page views over three years; C-1002 browses too."""
    views = (
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
        (9, "C-1001", "Phone cases for the X1 — category page"),
        (7, "C-1001", "TrailMax GTX trail shoes — product page"),
        (2, "C-1001", "Order history page"),
        (30, "C-1002", "Running shoes — category page"),
        (14, "C-1002", "XR-500 wireless headphones — product page"),
    )
    for number, (ago, customer, page) in enumerate(views):
        h.add(ACME, f"view:{customer}:{number}", f"Viewed: {page}.", ago=ago * DAY,
              entity=f"customer:{customer}", fact="page_view", source="clickstream")


def _globex(h: _History) -> None:
    """The white-label shop: same catalogue, and a customer C-1001 who is someone else."""
    t = GLOBEX
    _catalogue(h, t)
    h.add(t, "order:G-2207", "Order G-2207: XR-500 wireless headphones, black, 89 EUR.",
          ago=30 * DAY, entity="customer:C-1001", fact="order", source="erp",
          status="delivered", also=("order:G-2207", "product:XR-500"),
          attributes={"order_id": "G-2207"})
    h.add(t, "return:G-2207", "Return of order G-2207 received: the black XR-500 headphones; "
          "refund of 89 EUR issued.", ago=15 * DAY, entity="customer:C-1001", fact="return",
          source="erp", status="refunded", also=("order:G-2207", "product:XR-500"))
    h.add(t, "complaint:G-T-12", "Complaint G-T-12: the black XR-500 headphones crackle on the "
          "left side. Status: resolved, replacement sent.", ago=50 * DAY,
          entity="customer:C-1001", fact="complaint", source="ticketing", status="resolved")
    h.add(t, "order:G-2301", "Order G-2301: X1 smartphone, 449 EUR.", ago=20 * DAY,
          entity="customer:C-1004", fact="order", source="erp", status="delivered",
          also=("order:G-2301", "product:X1"), attributes={"order_id": "G-2301"})


def history(now: datetime, suffix: str = "") -> list[Event]:
    """Every event of the demo, in publishing order; tenant ids get ``suffix`` appended."""
    h = _History(now, suffix)
    _catalogue(h, ACME)
    _acme_customers(h)
    _browsing(h)
    _globex(h)
    return h.events


def questions(now: datetime, suffix: str = "") -> list[Question]:
    """The questions, each with its right answers and why plain vector search fails."""
    grinder_month = (now - 250 * DAY).strftime("%B")
    q: Callable[..., Question] = Question
    acme, globex = ACME + suffix, GLOBEX + suffix
    return [
        q("wrong customer", acme, "What headphones did I return?", ("return:O-5512",),
          "another customer's return of the same headphones reads almost the same",
          user="C-1001", never=()),
        q("superseded spec", acme, "Which charging port does the X1 have?", ("spec:X1@2",),
          "both revisions of the spec sheet are in the store; similarity cannot tell current "
          "from superseded"),
        q("as of a year ago", acme, "Which charging port did the X1 have a year ago?",
          ("spec:X1@1",), "a plain store keeps no valid time: 'a year ago' is just words",
          as_of=now - 365 * DAY),
        q("retracted post", acme, "Does the X1 support wireless charging?",
          ("doc:X1-manual",), "the retracted forum post is the closest text to the question",
          never=("forum:X1:t-77",)),
        q("3-year-old view", acme, "Which running shoes was I looking at?",
          ("view:C-1001:12",), "a page view from three years ago matches the words as well as "
          "last week's", user="C-1001"),
        q("resolved vs open", acme, "What is the status of my complaint?",
          ("complaint:T-940",), "the resolved complaint (and another customer's) talk about "
          "'status' just like the question", user="C-1001"),
        q("review vs spec", acme, "How long does the X1 battery last?",
          ("spec:X1-battery",), "an enthusiastic review answers the question more literally "
          "than the official spec"),
        q("exact attributes", acme, "Do you have the XR-500 in red with USB-C?",
          ("sku:XR-500-red",), "XR-300 red and XR-500 blue embed almost identically: the "
          "model number and colour are a few characters"),
        q("time window", acme, f"What coffee gear did I order in {grinder_month}?",
          ("order:O-3301",), "the month is a word to an embedding, not a filter on when it "
          "happened", user="C-1001", window=(now - 260 * DAY, now - 240 * DAY)),
        q("Chinese question", acme, "我上次退货的耳机是什么型号？", ("return:O-5801",),
          "another customer's Chinese return reads almost the same, and an English model "
          "embeds Chinese poorly", user="C-1088"),
        q("tenant isolation", globex, "What headphones did I return?", ("return:G-2207",),
          "globex's C-1001 is not acme's C-1001: a shared index without a tenant filter "
          "answers with acme's near-identical record", user="C-1001"),
    ]
