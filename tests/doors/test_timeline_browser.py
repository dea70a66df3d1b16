"""The audit timeline page in a real browser (Debian's chromium, headless): a memory that was
queried, superseded by a late event and retracted; its versions and the audit row are in the
DOM; a memory erased over ``POST /v1/forget`` shows tombstones (when, erasure id, reason) and
none of its content. Screenshots are kept under results/ui/."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
import uuid
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

import httpx

from tests.doors.conftest import Doors, memory_event
from tests.e2e.processes import ROOT, guard

SHOTS = ROOT / "results" / "ui"


def chromium(*args: str) -> str:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    assert binary, "the tests need Debian's chromium: apt-get install -y chromium"
    done = subprocess.run(
        [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=guard(120),
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def login_url(doors: Doors, page: str) -> str:
    """A one-page link minted by the gateway: the credential goes in a header, never in a URL."""
    minted = httpx.post(
        f"{doors.url}/ui/links", json={"page": page}, headers=doors.headers(), timeout=guard(30)
    )
    assert minted.status_code == 200, minted.text
    link = minted.json()["url"]
    assert doors.keys["agent"] not in link and quote(doors.keys["agent"], safe="") not in link
    return f"{doors.url}{link}"


def test_the_timeline_of_a_queried_superseded_late_and_retracted_memory(doors: Doors) -> None:
    key = f"spec:TL{uuid.uuid4().hex[:6]}"
    product = key.split(":")[1]

    def spec(text: str, days: float, op: str = "UPSERT") -> dict[str, object]:
        return memory_event(
            doors.tenant,
            key,
            text,
            ago=timedelta(days=days),
            entity=f"product:{product}",
            fact="product_spec",
            source="catalog",
            op=op,
        )

    doors.ingest([spec(f"The {product} speaker has a 10 hour battery.", 40)])
    doors.ingest([spec(f"The {product} speaker has a 14 hour battery.", 10)])
    request_id = f"req-tl-{uuid.uuid4().hex[:8]}"
    asked = httpx.post(
        f"{doors.url}/v1/retrieve",
        json={
            "query": f"how long does the {product} battery last?",
            "force": True,
            "anchors": [{"type": "product", "id": product}],
            "request_id": request_id,
        },
        headers=doors.headers(),
        timeout=guard(30),
    )
    assert asked.status_code == 200 and asked.json()["results"][0]["version"] == 2, asked.text
    doors.ingest([spec(f"The {product} speaker has a 12 hour battery.", 25)])  # late
    doors.ingest([spec("", 1, op="RETRACT")])

    page = f"/ui/memories/{quote(key, safe='')}?tenant_id={doors.tenant}"
    dom = chromium("--dump-dom", login_url(doors, page))
    rows = re.findall(r"<tr class=\"version-row\" data-version=\"(\d+)\">(.*?)</tr>", dom, re.S)
    assert [n for n, _ in rows] == ["1", "2", "3", "4"], dom[:3000]
    by_version = dict(rows)
    assert "superseded" in by_version["1"] and "10 hour" in by_version["1"]
    assert "late" in by_version["3"] and "12 hour" in by_version["3"]
    assert "retraction" in by_version["4"]
    assert "0." in by_version["2"]  # trust components as served for v2
    assert 'id="timeline"' in dom and dom.count('class="version') >= 4
    audit = re.findall(r"<tr class=\"audit-row\">(.*?)</tr>", dom, re.S)
    assert len(audit) == 1 and request_id in audit[0] and "v2" in audit[0]

    request_dom = chromium("--dump-dom", login_url(doors, f"/ui/requests/{request_id}"))
    assert "forced" in request_dom and f"/ui/memories/{quote(key, safe='')}" in request_dom
    assert re.search(r"<tr class=\"result-row\">.*?v2", request_dom, re.S)

    SHOTS.mkdir(parents=True, exist_ok=True)
    for name, target in (("timeline", page), ("request", f"/ui/requests/{request_id}")):
        shot = SHOTS / f"{name}.png"
        chromium(f"--screenshot={shot}", "--window-size=1280,1000", login_url(doors, target))
        assert shot.stat().st_size > 10_000
        print(f"screenshot: {shot}")


def test_an_erased_memory_shows_tombstones_and_no_content(doors: Doors) -> None:
    tag = uuid.uuid4().hex[:8]
    key, canary = f"note:tl-{tag}", f"Quokka{tag}"

    def note(text: str, days: int) -> dict[str, object]:
        return memory_event(
            doors.tenant, key, text, ago=timedelta(days=days), entity=f"customer:T-{tag}"
        )

    doors.ingest([note(f"Ring {canary} at the side gate.", 6)])
    doors.ingest([note(f"Ring {canary} at the main gate.", 3)])
    erased = httpx.post(
        f"{doors.url}/v1/forget",
        params={"wait": "true"},
        json={"scope": {"memory_key": key}, "reason": "subject request 77"},
        headers=doors.headers("admin"),
        timeout=guard(90),
    )
    assert erased.status_code == 200 and erased.json()["status"] == "completed", erased.text
    erasure_id = erased.json()["erasure_id"]

    page = f"/ui/memories/{quote(key, safe='')}?tenant_id={doors.tenant}"
    dom = chromium("--dump-dom", login_url(doors, page))
    rows = re.findall(
        r"<tr class=\"version-row erased\" data-version=\"(\d+)\">(.*?)</tr>", dom, re.S
    )
    assert [n for n, _ in rows] == ["1", "2"], dom[:3000]
    for _, row in rows:
        assert "erased" in row and erasure_id in row and "subject request 77" in row
    assert canary not in dom and f"T-{tag}" not in dom
    assert len(re.findall(r"<g class=\"version erased\"", dom)) == 2
    assert re.search(rf"<title>v1 UPSERT: erased [^<]*{erasure_id}", dom), dom[:3000]

    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / "erased.png"
    chromium(f"--screenshot={shot}", "--window-size=1280,800", login_url(doors, page))
    assert shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")


def test_the_pages_refuse_without_a_credential(doors: Doors) -> None:
    page = httpx.get(f"{doors.url}/ui/memories/spec:X1", timeout=10)
    assert page.status_code == 401
    wrong = httpx.post(f"{doors.url}/ui/login", data={"credential": "nope"}, timeout=10)
    assert wrong.status_code == 401 and "no valid credential" in wrong.text
    assert Path(SHOTS).parent.name == "results"


def test_sign_in_keeps_the_credential_out_of_every_url_and_the_access_log(doors: Doors) -> None:
    key = doors.keys["agent"]
    page = "/ui/memories/spec:X1"
    # The old way is refused without being read (it is already in some log).
    in_url = httpx.get(f"{doors.url}/ui/login", params={"credential": key}, timeout=10)
    assert in_url.status_code == 400 and "never goes in a URL" in in_url.text
    assert "set-cookie" not in in_url.headers

    # The form: POST, then every page of the session without the credential.
    with httpx.Client(base_url=doors.url, timeout=guard(30), follow_redirects=True) as browser:
        form = browser.get("/ui/login", params={"next": page})
        assert form.status_code == 200 and "method='post'" in form.text
        signed = browser.post("/ui/login", data={"credential": key, "next": page})
        assert signed.status_code == 200 and "Timeline of" in signed.text, signed.text[:500]
        assert all(key not in str(r.url) for r in (*signed.history, signed))
        cookie = signed.history[0].headers["set-cookie"]
        assert key not in cookie and "httponly; " in cookie.lower() and "path=/ui" in cookie.lower()
        assert browser.get("/ui").status_code == 200
        browser.post("/ui/logout")
        assert browser.get("/ui").status_code == 401
        # off-site next: no open redirect
        elsewhere = browser.post("/ui/login", data={"credential": key, "next": "//evil.example/"})
        assert elsewhere.history[0].headers["location"] == "/ui"

    # A one-page link opens its page once.
    link = login_url(doors, page)
    with httpx.Client(timeout=guard(30), follow_redirects=True) as browser:
        opened = browser.get(link)
        assert opened.status_code == 200 and "Timeline of" in opened.text
    again = httpx.get(link, timeout=10)
    assert again.status_code == 401 and "used already or has expired" in again.text

    # The access log is on, and holds neither the credential nor a link's code.
    code = link.rsplit("/", 1)[1]
    deadline = time.monotonic() + 10
    while "/ui/open/" not in doors.gateway.output and time.monotonic() < deadline:
        time.sleep(0.1)
    log = doors.gateway.output
    assert '"GET /ui/open/… HTTP/1.1" 303' in log, log[-2000:]
    assert '"POST /ui/login HTTP/1.1" 303' in log and "/ui/login?credential=…" in log
    assert key not in log and quote(key, safe="") not in log and code not in log
