import dataclasses
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


def test_a_fresh_version_is_material_only_when_its_state_moved() -> None:
    from memstream.services.domain.rescoring import is_material

    version = complaint()
    fresh = time_scores(version, T0 + timedelta(hours=1), DEFAULT_DECAY, DEFAULT_STATE_RULES)
    assert not is_material(fresh, None, version), "just recorded: nothing to announce"
    late = time_scores(version, T0 + timedelta(days=3), DEFAULT_DECAY, DEFAULT_STATE_RULES)
    assert is_material(late, None, version), "pending → escalated"
    assert not is_material(late, late, version)
    resolved = complaint("resolved")
    old = time_scores(resolved, T0 + timedelta(days=30), DEFAULT_DECAY, DEFAULT_STATE_RULES)
    assert old.recency < 0.1 and not is_material(old, None, resolved), "recency alone: no"


def test_only_open_matters_and_expiring_versions_have_transitions() -> None:
    from memstream.services.domain.rescoring import is_due, transitions

    rules = DEFAULT_STATE_RULES
    assert transitions(complaint(), rules) == (T0 + rules.escalate_after,)
    assert transitions(complaint("resolved"), rules) == ()
    note = dataclasses.replace(complaint("active"), fact_type="note")
    assert transitions(note, rules) == ()
    expiring = dataclasses.replace(note, valid_to=T0 + timedelta(days=5))
    assert transitions(expiring, rules) == (T0 + timedelta(days=5),)
    day3, day6 = T0 + timedelta(days=3), T0 + timedelta(days=6)
    assert not is_due(complaint(), None, T0 + timedelta(hours=1), rules)
    assert is_due(complaint(), None, day3, rules)
    assert not is_due(complaint(), day3, day6, rules), "escalated once: done"
    assert is_due(complaint(), T0 + timedelta(hours=1), day3, rules)
    assert not is_due(expiring, day3, day3, rules) and is_due(expiring, day3, day6, rules)


def test_the_due_indexes_repeat_the_state_rules() -> None:
    """The partial indexes of migrations 0014 and 0016 must match the rules the due query is built
    from, or the planner cannot use them (the pass would read every current version)."""
    from pathlib import Path

    import memstream.ops

    rules = DEFAULT_STATE_RULES
    opened = ", ".join(f"'{s}'" for s in sorted(rules.open_statuses))
    escalating = ", ".join(f"'{f}'" for f in sorted(rules.escalating_fact_types))
    for name in ("0014_rescore_due.sql", "0016_rescore_recorded.sql"):
        text = (Path(memstream.ops.__file__).parent / "migrations" / name).read_text()
        assert f"lower(btrim(status)) IN ({opened})" in text, name
        assert f"lower(fact_type) IN ({escalating})" in text, name
