"""Source authority: how far a source system is believed, per tenant.

``AuthorityTable`` maps a source system's name (case-insensitive) to a standing in [0, 1]; a
tenant's table is the default merged with its overrides (``merged``). Pure: stdlib only. Must
not import any I/O library.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from memstream.services.domain.errors import DomainError

# Systems of record first, then internal knowledge, then what people say, then the open web —
# the ladders a support team already ranks by (an internal CRM 0.95, a user's chat log 0.65, a
# third-party forum 0.3; an official document above a press release above a user review). The
# common spellings of one kind of source share its standing; a tenant overrides any of them. A
# compound name not in the table ("community_forum", "erp_export") takes the lowest standing
# among its listed parts: a forum run by anyone is still a forum.
DEFAULT_AUTHORITIES: Mapping[str, float] = MappingProxyType(
    {
        "erp": 1.0,
        "official": 0.95,
        "official_doc": 0.95,
        "official_document": 0.95,
        "catalog": 0.95,
        "catalogue": 0.95,
        "billing": 0.95,
        "crm": 0.9,
        "ticketing": 0.85,
        "wiki": 0.85,
        "internal_wiki": 0.85,
        "knowledge_base": 0.85,
        "press_release": 0.7,
        "press": 0.7,
        "chat_log": 0.65,
        "support_chat": 0.6,
        "email": 0.6,
        "user_input": 0.6,
        "browsing": 0.5,
        "clickstream": 0.5,
        "user_review": 0.4,
        "review": 0.4,
        "forum": 0.3,
        "blog": 0.3,
        "social": 0.3,
        "social_media": 0.3,
        "third_party": 0.3,
        "web": 0.3,
    }
)
UNKNOWN_AUTHORITY = 0.5


def unit_value(name: str, value: float) -> float:
    if not 0.0 <= value <= 1.0:
        raise DomainError(f"{name} must lie in [0, 1], got {value}")
    return float(value)


@dataclass(frozen=True, slots=True)
class AuthorityTable:
    """Authority in [0, 1] per source system (case-insensitive); ``unknown`` for the rest."""

    authorities: Mapping[str, float] = field(default_factory=lambda: DEFAULT_AUTHORITIES)
    unknown: float = UNKNOWN_AUTHORITY

    def __post_init__(self) -> None:
        table = {
            k.casefold(): unit_value(f"authority of {k!r}", v) for k, v in self.authorities.items()
        }
        object.__setattr__(self, "authorities", MappingProxyType(table))
        unit_value("unknown authority", self.unknown)

    def authority(self, source_system: str) -> float:
        folded = source_system.strip().casefold()
        exact = self.authorities.get(folded)
        if exact is not None:
            return exact
        parts = [self.authorities[p] for p in re.split(r"[\W_]+", folded) if p in self.authorities]
        return min(parts) if parts else self.unknown

    def merged(self, overrides: Mapping[str, float]) -> AuthorityTable:
        """A tenant's table: this one with ``overrides`` taking precedence."""
        table = dict(self.authorities)
        table.update({k.casefold(): v for k, v in overrides.items()})
        return AuthorityTable(table, self.unknown)


DEFAULT_AUTHORITY = AuthorityTable()
