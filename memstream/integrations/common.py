"""What both framework adapters put beside a memory's text: its key, version, validity, scores
and trust. Must not import a framework."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from memstream.services.domain.reply import MemoryResult


def metadata(result: MemoryResult) -> dict[str, Any]:
    return {
        "memory_key": result.memory_key,
        "version": result.version,
        "version_id": result.version_id,
        "entity": result.entity,
        "fact_type": result.fact_type,
        "source_system": result.source_system,
        "status": result.effective_status,
        "valid_from": result.valid_from.isoformat(),
        "valid_to": result.valid_to.isoformat() if result.valid_to else None,
        "trust": result.scores.trust,
        "trust_components": result.scores.trust_components,
        "scores": asdict(result.scores),
        "conflicts_with": list(result.conflicts_with),
        "factors": dict(result.factors),
    }
