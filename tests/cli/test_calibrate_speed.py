"""``qaeval calibrate`` prints the judge's predicted seconds per 1,000 rows beside PEDANTS'
class of inputs (issue 35, item 5): the lexical and PANDA families of the same cost table."""

from __future__ import annotations

import pytest

from qaeval_core.calibrate.cost import CostTable, InputCost
from qaeval_core.cli.calibrate_tables import print_speed

COSTS = CostTable(
    inputs=(
        InputCost("f1", "lexical", 0.2, 0.01),
        InputCost("em", "lexical", 0.05),
        InputCost("panda", "panda", 2.75, 1.0),
        InputCost("embed_cosine", "encoder:minilm", 60.0, 5.0),
        InputCost("smile", "encoder:minilm", 15.0, 2.0),
        InputCost("static_cosine", "static", 0.6, 0.4),
    ),
    rows=300,
)


def test_the_judge_cost_is_printed_beside_pedants_class(capsys: pytest.CaptureFixture) -> None:
    print_speed(COSTS, ["f1", "embed_cosine"])
    out = " ".join(capsys.readouterr().out.split())
    assert "75.250 s per 1,000 rows for its inputs (+ 7.0 s to load them once)" in out
    assert "(lexical 0.250 + panda 2.750) 3.000 s, 25.1x that" in out


def test_a_static_judge_is_cheaper_than_pedants_class(capsys: pytest.CaptureFixture) -> None:
    print_speed(COSTS, ["f1", "static_cosine"])
    out = " ".join(capsys.readouterr().out.split())
    assert "0.850 s per 1,000 rows" in out and "0.3x that" in out


def test_no_pedants_class_family_prints_nothing(capsys: pytest.CaptureFixture) -> None:
    only = CostTable(inputs=(InputCost("smile", "encoder:minilm", 15.0),), rows=10)
    print_speed(only, ["smile"])
    assert capsys.readouterr().out == ""
