"""``memstream rules``: change a tenant's decay half-lives and source authorities at run time.

Rules live in Postgres (``tenant_rules``); workers read them on every uncached retrieval, so a
change takes effect without a restart. Setting a rule also invalidates the tenant's cached
replies. Examples::

    memstream rules set half_life complaint 3d --tenant acme
    memstream rules set authority forum 0.1 --tenant acme
    memstream rules show --tenant acme
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from memstream.ops.stack import resolve_settings
from memstream.services import bootstrap
from memstream.services.settings import Settings

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNIT = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_value(kind: str, text: str) -> float:
    """A half-life ("3d", "6h", "90m", "45s" or seconds) or an authority in (0, 1]."""
    if kind == "half_life":
        match = _DURATION.match(text)
        if not match or float(match[1]) <= 0:
            raise ValueError(f"half-life {text!r}: use a positive duration such as 3d, 6h, 90m")
        return float(match[1]) * _UNIT[match[2]]
    value = float(text)
    if not 0 < value <= 1:
        raise ValueError(f"authority {text!r} must be in (0, 1]")
    return value


async def _run(settings: Settings, args: Any) -> int:
    assert settings.postgres_dsn is not None
    redis_url = settings.redis_url if args.action == "set" else None
    async with bootstrap.stores(settings.postgres_dsn, redis_url) as stores:
        rules = stores.rules
        if args.action == "set":
            await rules.set_rule(
                args.tenant, args.kind, args.name, parse_value(args.kind, args.value)
            )
            if stores.cache is not None:
                await stores.cache.invalidate_tenant(args.tenant)
            print(f"{args.tenant}: {args.kind} {args.name.casefold()} = {args.value}")
        table = await rules.overrides(args.tenant)
        if args.action == "show":
            if not any(table.values()):
                print(f"{args.tenant}: default rules (no overrides)")
            for kind, values in table.items():
                for name, value in sorted(values.items()):
                    shown = f"{value / 86400:g}d" if kind == "half_life" else f"{value:g}"
                    print(f"{args.tenant}: {kind} {name} = {shown}")
        return 0


def rules(settings: Settings, args: Any) -> int:
    if args.action == "set":
        try:
            parse_value(args.kind, args.value)
        except ValueError as exc:
            raise SystemExit(f"memstream: rules: {exc}") from None
    return asyncio.run(_run(resolve_settings(settings), args))
