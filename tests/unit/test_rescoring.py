from datetime import UTC, datetime, timedelta

from memstream.services.domain.decay import DEFAULT_DECAY
from memstream.services.domain.model import MemoryVersion, Op
from memstream.services.domain.rescoring import TimeScores, time_scores
from memstream.services.domain.trust import DEFAULT_STATE_RULES

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def complaint(status: str = "pending") -> MemoryVersion:
    return MemoryVersion(
        version_id="v1",
        tenant_id="t",
        memory_key="c:1",
        version=1,
        parent_id=None,
        event_id="e1",
        entity_type="customer",
        entity_id="C-1",
        fact_type="complaint",
        content="parcel damaged",
        source_system="ticketing",
        status=status,
        op=Op.UPSERT,
        occurred_at=T0,
        valid_from=T0,
        valid_to=None,
        recorded_at=T0,
        superseded_at=None,
        is_current=True,
    )


def test_a_pending_complaint_escalates_and_stays_live_until_resolved() -> None:
    fresh = time_scores(complaint(), T0 + timedelta(hours=1), DEFAULT_DECAY, DEFAULT_STATE_RULES)
    later = time_scores(complaint(), T0 + timedelta(days=7), DEFAULT_DECAY, DEFAULT_STATE_RULES)
    assert fresh.effective_status == "pending"
    assert later.effective_status == "escalated"
    assert fresh.recency == later.recency == 1.0  # an open matter does not go stale
    assert later.differs(fresh)


def test_a_resolved_complaint_decays_by_its_half_life() -> None:
    fresh = time_scores(complaint("resolved"), T0, DEFAULT_DECAY, DEFAULT_STATE_RULES)
    later = time_scores(
        complaint("resolved"), T0 + timedelta(days=7), DEFAULT_DECAY, DEFAULT_STATE_RULES
    )
    assert fresh.recency == 1.0
    assert abs(later.recency - 0.5) < 1e-9  # one half-life (complaints: 7 days)


def test_a_changed_half_life_changes_recency() -> None:
    moment = T0 + timedelta(days=7)
    faster = DEFAULT_DECAY.merged({"complaint": timedelta(days=1)})
    slow = time_scores(complaint("resolved"), moment, DEFAULT_DECAY, DEFAULT_STATE_RULES)
    fast = time_scores(complaint("resolved"), moment, faster, DEFAULT_STATE_RULES)
    assert fast.recency < slow.recency / 10


def test_immaterial_changes_are_not_changes() -> None:
    base = TimeScores(0.5, 1.0, "active")
    assert not TimeScores(0.505, 1.0, "active").differs(base)
    assert TimeScores(0.52, 1.0, "active").differs(base)
    assert TimeScores(0.5, 1.0, "escalated").differs(base)
    assert base.differs(None)


def test_a_fresh_version_is_material_only_when_its_state_or_recency_moved() -> None:
    from memstream.services.domain.rescoring import is_material

    version = complaint()
    fresh = time_scores(version, T0 + timedelta(hours=1), DEFAULT_DECAY, DEFAULT_STATE_RULES)
    assert not is_material(fresh, None, version), "just recorded: nothing to announce"
    late = time_scores(version, T0 + timedelta(days=3), DEFAULT_DECAY, DEFAULT_STATE_RULES)
    assert is_material(late, None, version), "pending → escalated"
    assert not is_material(late, late, version)
