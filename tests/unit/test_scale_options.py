"""``memstream bench scale``'s options: a wrong one is refused in one line before anything runs."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from memstream.cli import main


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--rescore-budget", "0"], "--rescore-budget > 0"),
        (["--rescore-budget", "-5"], "--rescore-budget > 0"),
        (["--tenants", "-1"], "--tenants ≥ 0"),
        (["--scale-questions", "1"], "--scale-questions ≥ 2"),
        (["--sizes", "50"], "each ≥ 100"),
        (["--sizes", "ten"], "comma-separated"),
    ],
)
def test_a_wrong_option_is_refused_before_any_store_is_built(
    flags: list[str], said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where a store would be made
    with pytest.raises(SystemExit) as refused:
        main(["bench", "scale", *flags])
    assert said in str(refused.value.code)
    assert not list(tmp_path.iterdir())


def test_the_catch_up_may_take_fifteen_minutes_unless_told_otherwise() -> None:
    from memstream.bench.scale import ScaleOptions
    from memstream.cli import _parser

    args, _ = _parser().parse_known_args(["bench", "scale"])
    assert args.rescore_budget == ScaleOptions().rescore_budget_s == 900.0
    args, _ = _parser().parse_known_args(["bench", "scale", "--rescore-budget", "30"])
    assert args.rescore_budget == 30.0
