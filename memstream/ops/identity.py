"""``memstream tenants …`` / ``memstream keys …`` and the development tenant of ``memstream up``.

A secret is printed once, when its key is created or rotated, and never stored: Postgres keeps
its hash and public key only. ``memstream up`` provisions the development tenant and writes its
agent, producer and admin credentials to DATA_DIR/credentials.json (mode 0600), which ``ask``,
``publish``, ``demo`` and the tests read when no ``--key`` / ``MEMSTREAM_KEY`` is given.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memstream.schemas import envelope
from memstream.services import bootstrap
from memstream.services.bootstrap import CredentialError, PostgresCredentialStore
from memstream.services.domain.identity import Role
from memstream.services.settings import Settings

DEV_TENANT = "dev"
# The sources the development producer speaks for (the demo's and the examples').
#
# Why the development producer stays bound to named sources, like every producer key:
# a key is bound to sources so that one system (a forum scraper) cannot claim the authority of
# another (official_doc), and the demo and the examples show exactly that on this tenant. An
# "any source" producer would be a capability of the key store for every tenant, one copy of a
# development set-up away from production, and tenant names prove nothing about locality (any
# deployment may have a tenant called "dev"). So an event from a new source is dead-lettered
# like anywhere else, and its reason names the key, what it speaks for and the one command that
# makes a key speaking for those and the new source, saved as the tenant's producer here:
# `memstream keys create --tenant dev --role producer --source crm … --source catalogue --save`
# (``services.domain.identity.unbound_source``); the HTTP gateway answers 403 with the same.
DEV_SOURCES = (
    "crm",
    "erp",
    "ticketing",
    "catalog",
    "wiki",
    "official_doc",
    "support",
    "orders",
    "forum",
    "web",
)
_DURATION = re.compile(r"^(\d+)([smhd])$")


class CredentialsMissing(Exception):
    """No credential given and none in the data dir; the message says how to get one."""


def duration(text: str) -> timedelta:
    match = _DURATION.match(text.strip())
    if not match:
        raise ValueError(f"{text!r} is not a duration like 30m, 12h, 7d")
    unit = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}[match[2]]
    return timedelta(**{unit: int(match[1])})


def utcnow() -> datetime:
    return datetime.now(UTC)


def service_public(settings: Settings) -> bytes:
    return envelope.service_public(bootstrap.service_key(settings))


def write_private(path: Path, content: str) -> None:
    """Write ``content`` readable by the owner only (0600 from the first byte)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(content)
    tmp.replace(path)


async def provision(
    settings: Settings, tenants: Mapping[str, Sequence[str]]
) -> dict[str, dict[str, str]]:
    """Each tenant (created if new) with a fresh agent, producer (bound to its sources) and
    admin credential: {tenant: {role: credential}}."""
    assert settings.postgres_dsn is not None
    public = service_public(settings)
    store = await bootstrap.credential_store(settings, utcnow)
    try:
        issued: dict[str, dict[str, str]] = {}
        for tenant, sources in tenants.items():
            await store.create_tenant(tenant)
            issued[tenant] = {}
            for role in Role:
                bound = sources if role is Role.PRODUCER else ()
                credential, _ = await store.create_key(tenant, role, public, bound)
                issued[tenant][role.value] = str(credential)
        return issued
    finally:
        await store.close()


def write_credentials(settings: Settings, issued: Mapping[str, Mapping[str, str]]) -> Path:
    """DATA_DIR/credentials.json (0600): the first tenant is the default one."""
    path = settings.credentials_path
    document = {
        "default_tenant": next(iter(issued)),
        "service_public_key": envelope.b64(service_public(settings)),
        "tenants": {tenant: dict(keys) for tenant, keys in issued.items()},
    }
    write_private(path, json.dumps(document, indent=2) + "\n")
    return path


def provision_local(settings: Settings, tenants: Mapping[str, Sequence[str]]) -> Path:
    """Provision ``tenants`` and write their credentials to the data dir (demo, benches)."""
    return write_credentials(settings, asyncio.run(provision(settings, tenants)))


def ensure_dev_credentials(settings: Settings) -> Path:
    """``memstream up``: the development tenant's credentials, made once per data dir (kept
    while their keys still exist in the database)."""
    path = settings.credentials_path
    if path.exists() and _still_valid(settings, path):
        return path
    issued = asyncio.run(provision(settings, {DEV_TENANT: DEV_SOURCES}))
    return write_credentials(settings, issued)


def _still_valid(settings: Settings, path: Path) -> bool:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        text = document["tenants"][document["default_tenant"]]["agent"]
        credential = envelope.Credential.parse(text)
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if credential.service_public != service_public(settings):
        return False

    async def check() -> bool:
        assert settings.postgres_dsn is not None
        store = await bootstrap.credential_store(settings, utcnow)
        try:
            await store.authenticate(text)
        except Exception:
            return False
        finally:
            await store.close()
        return True

    return asyncio.run(check())


def credential_for(
    settings: Settings, role: str, explicit: str | None = None, tenant: str | None = None
) -> str:
    """The credential a command uses: ``--key``, else ``MEMSTREAM_KEY``, else the data dir's
    credentials.json (``tenant``'s, or the default tenant's, key of ``role``)."""
    if explicit:
        return explicit
    if settings.key:
        return settings.key
    path = settings.credentials_path
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        tenants = document["tenants"]
        wanted = tenant or document["default_tenant"]
    except (OSError, ValueError, KeyError, TypeError):
        raise CredentialsMissing(
            f"no {role} credential: pass --key, set MEMSTREAM_KEY, or start `memstream up` "
            f"(it writes {path})"
        ) from None
    try:
        return str(tenants[wanted][role])
    except (KeyError, TypeError):
        held = ", ".join(sorted(tenants)) if isinstance(tenants, dict) else "none"
        raise CredentialsMissing(
            f"no {role} credential for tenant {wanted!r} in {path} (it holds tenants: {held}). "
            f"Make one: {make_key_hint(wanted, role)}; or pass --key / set MEMSTREAM_KEY"
        ) from None


def make_key_hint(tenant: str, role: str) -> str:
    """The two commands that give ``tenant`` a credential of ``role`` this data dir keeps."""
    sources = " --source SOURCE (one per source_system it sends)" if role == "producer" else ""
    return (
        f"`memstream tenants create {tenant}` then "
        f"`memstream keys create --tenant {tenant} --role {role}{sources} --save`"
    )


def save_credential(settings: Settings, tenant: str, role: str, credential: str) -> Path:
    """Keep ``credential`` as ``tenant``'s key of ``role`` in DATA_DIR/credentials.json (0600),
    where ``publish``, ``ask`` and ``forget`` look when no ``--key`` is given. The first tenant
    saved into a new file becomes its default tenant."""
    path = settings.credentials_path
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(document.get("tenants"), dict):
            raise ValueError("no tenants")
    except (OSError, ValueError, AttributeError):
        document = {"default_tenant": tenant, "tenants": {}}
    document["tenants"].setdefault(tenant, {})[role] = credential
    write_private(path, json.dumps(document, indent=2) + "\n")
    return path


# --- the CLI ------------------------------------------------------------------------------


def add_parsers(sub: Any) -> None:
    tenants = sub.add_parser("tenants", help="the tenant registry: create, list, show")
    tenants.add_argument("action", choices=["create", "list", "show"])
    tenants.add_argument("tenant", nargs="?", help="tenant id (create, show)")
    tenants.add_argument("--name", default="", help="a display name (create)")

    keys = sub.add_parser("keys", help="credentials: create, list, rotate, revoke")
    keys.add_argument("action", choices=["create", "list", "rotate", "revoke"])
    keys.add_argument("key_id", nargs="?", help="the key (rotate, revoke)")
    keys.add_argument("--tenant", help="the key's tenant (create; list filters by it)")
    keys.add_argument("--role", choices=[r.value for r in Role], help="create: the role")
    keys.add_argument(
        "--source", action="append", default=[], help="producer: a source_system (repeatable)"
    )
    keys.add_argument("--expires", help="create: lifetime, e.g. 90d (default: none)")
    keys.add_argument(
        "--save",
        action="store_true",
        help="create: also keep the credential in DATA_DIR/credentials.json (0600), where "
        "publish, ask and forget find it for its tenant",
    )
    keys.add_argument(
        "--overlap", default="24h", help="rotate: how long the old key stays valid (24h)"
    )


def run(settings: Settings, args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_run(settings, args))
    except (CredentialError, ValueError) as exc:
        print(f"memstream: {args.command}: {exc}")
        return 2


async def _run(settings: Settings, args: argparse.Namespace) -> int:
    from memstream.ops.stack import resolve_settings

    settings = resolve_settings(settings)
    assert settings.postgres_dsn is not None
    store = await bootstrap.credential_store(settings, utcnow)
    try:
        if args.command == "tenants":
            return await _tenants(store, args)
        return await _keys(store, settings, args)
    finally:
        await store.close()


async def _tenants(store: PostgresCredentialStore, args: argparse.Namespace) -> int:
    if args.action == "list":
        for row in await store.tenants():
            print(f"{row['tenant_id']}\t{row['active_keys']} active of {row['keys']} keys")
        return 0
    if not args.tenant:
        raise ValueError(f"tenants {args.action} needs a TENANT")
    if args.action == "create":
        created = await store.create_tenant(args.tenant, args.name)
        print(f"tenant {args.tenant} {'created' if created else 'exists already'}")
        return 0
    found = await store.tenant(args.tenant)
    if found is None:
        print(f"memstream: tenants: no tenant {args.tenant!r}")
        return 1
    print(f"tenant {found['tenant_id']} {found['name']} · created {found['created_at']:%Y-%m-%d}")
    for key in await store.keys(args.tenant):
        print("  " + _key_line(key))
    return 0


def _key_line(key: Any) -> str:
    state = key.state(utcnow())
    sources = ",".join(sorted(key.sources)) or "-"
    expires = key.expires_at.isoformat() if key.expires_at else "never"
    replaced = f" → {key.replaced_by}" if key.replaced_by else ""
    return "\t".join(
        [key.key_id, key.tenant_id, str(key.role), sources, state, f"expires {expires}{replaced}"]
    )


async def _keys(
    store: PostgresCredentialStore, settings: Settings, args: argparse.Namespace
) -> int:
    if args.action == "list":
        for key in await store.keys(args.tenant):
            print(_key_line(key))
        return 0
    public = service_public(settings)
    if args.action == "create":
        if not args.tenant or not args.role:
            raise ValueError("keys create needs --tenant and --role")
        expires = utcnow() + duration(args.expires) if args.expires else None
        credential, key = await store.create_key(
            args.tenant, Role(args.role), public, args.source, expires
        )
        if getattr(args, "save", False):
            path = save_credential(settings, args.tenant, args.role, str(credential))
            print(f"# {_key_line(key)}\n# saved in {path} for tenant {args.tenant}")
            return 0
        print(f"# {_key_line(key)}\n# the secret is shown once: store it now")
        print(credential)
        return 0
    if not args.key_id:
        raise ValueError(f"keys {args.action} needs a KEY_ID")
    if args.action == "rotate":
        credential, key = await store.rotate(args.key_id, public, duration(args.overlap))
        print(f"# {_key_line(key)} (replaces {args.key_id}, valid {args.overlap} more)")
        print("# the secret is shown once: store it now")
        print(credential)
        return 0
    if await store.revoke(args.key_id):
        print(f"key {args.key_id} revoked")
        return 0
    print(f"memstream: keys: no active key {args.key_id!r}")
    return 1
