"""``memstream rules``: change a tenant's decay half-lives and source authorities at run time.

Rules live in Postgres (``tenant_rules``); workers read them on every uncached retrieval, so a
change takes effect without a restart. Setting a rule also invalidates the tenant's cached
replies. Examples::

    memstream rules set half_life complaint 3d --tenant acme
    memstream rules set authority forum 0.1 --tenant acme
    memstream rules show --tenant acme          # the defaults in force, overrides marked
    memstream rules set authority wiki 0.5 --tenant new-co --create   # before its first event
"""

from __future__ import annotations

import asyncio
import difflib
import re
from typing import Any

from memstream.ops.ask import UsageError
from memstream.ops.stack import resolve_settings
from memstream.services import bootstrap
from memstream.services.domain.ranking import DEFAULT_RULES
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


def _shown(kind: str, value: float) -> str:
    if kind != "half_life":
        return f"{value:g}"
    for unit, seconds in (("d", 86400.0), ("h", 3600.0), ("m", 60.0)):
        if value >= seconds:
            return f"{value / seconds:g}{unit}"
    return f"{value:g}s"


def defaults() -> dict[str, dict[str, float]]:
    """The rules in force where a tenant overrides nothing (``(other)``: unlisted names)."""
    rules = DEFAULT_RULES
    half_lives = {k: v.total_seconds() for k, v in rules.decay.half_lives.items()}
    half_lives["(other)"] = rules.decay.default.total_seconds()
    authority = dict(rules.authority.authorities)
    authority["(other)"] = rules.authority.unknown
    return {"half_life": half_lives, "authority": authority}


async def _run(settings: Settings, args: Any) -> int:
    assert settings.postgres_dsn is not None
    redis_url = settings.redis_url if args.action == "set" else None
    async with bootstrap.stores(settings.postgres_dsn, redis_url) as stores:
        rules = stores.rules
        tenants = await rules.tenants()
        if args.tenant not in tenants and not (
            args.action == "set" and getattr(args, "create", False)
        ):
            close = difflib.get_close_matches(args.tenant, tenants, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            what = "--create to set rules before its first event" if args.action == "set" else ""
            raise UsageError(
                f"tenant {args.tenant!r} has no memories{hint}" + (f"; add {what}" if what else "")
            )
        if args.action == "set":
            await rules.set_rule(
                args.tenant, args.kind, args.name, parse_value(args.kind, args.value)
            )
            if stores.cache is not None:
                await stores.cache.invalidate_tenant(args.tenant)
            print(f"{args.tenant}: {args.kind} {args.name.casefold()} = {args.value}")
        table = await rules.overrides(args.tenant)
        if args.action == "show":
            for kind, values in defaults().items():
                overridden = table.get(kind, {})
                for name in sorted({*values, *overridden}):
                    if name in overridden:
                        default = (
                            f" (default {_shown(kind, values[name])})" if name in values else ""
                        )
                        print(f"{args.tenant}: {kind} {name} = {_shown(kind, overridden[name])}"
                              f" · override{default}")  # fmt: skip
                    else:
                        print(f"{args.tenant}: {kind} {name} = {_shown(kind, values[name])}")
        return 0


def rules(settings: Settings, args: Any) -> int:
    if args.action == "set":
        try:
            parse_value(args.kind, args.value)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    return asyncio.run(_run(resolve_settings(settings), args))
