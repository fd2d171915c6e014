"""Cross-validated choice of SMILE's w and A-VERT's model from precomputed scores."""

from __future__ import annotations

import numpy as np
import pytest

from qaeval_core.calibrate.select import cv_select, select_avert_model, select_smile_weight


def _subscores(n: int = 600, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lexical subscore informative, semantic subscore mostly noise: small w should win."""
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.5
    lexical = np.clip(y * 0.6 + rng.normal(0.2, 0.15, n), 0, 1)
    semantic = np.clip(rng.normal(0.5, 0.2, n) + 0.05 * y, 0, 1)
    return semantic, lexical, y


def test_smile_weight_follows_the_informative_subscore() -> None:
    sem, lex, y = _subscores()
    sel = select_smile_weight(sem, lex, y, groups=np.arange(len(y)) // 3)
    assert sel.best <= 0.3
    assert set(sel.table["candidate"]) >= {0.0, 0.3, 1.0}
    assert sel.table.set_index("candidate").loc[1.0, "accuracy"] < 0.65
    # Swapping the subscores flips the choice.
    flipped = select_smile_weight(lex, sem, y)
    assert flipped.best >= 0.7


def test_default_is_kept_when_nothing_is_clearly_better() -> None:
    rng = np.random.default_rng(1)
    y = rng.random(400) < 0.5
    base = y + rng.normal(0, 0.5, 400)
    same = {"default": base, "copy": base + 1e-9, "noisy": base + rng.normal(0, 2, 400)}
    sel = cv_select(same, y)
    assert sel.best == "default"
    assert sel.to_dict()["default"] == "default"


def test_avert_model_choice_uses_the_decision_without_a_threshold() -> None:
    rng = np.random.default_rng(2)
    y = rng.random(500) < 0.5
    good = np.where(rng.random(500) < 0.9, y, ~y) * 0.4 + 0.3  # decisions at 0.5 right 90%
    bad = np.where(rng.random(500) < 0.7, y, ~y) * 0.4 + 0.3
    sel = select_avert_model({"small": bad, "large": good}, y)
    assert sel.best == "large"
    row = sel.table.set_index("candidate").loc["large"]
    assert row["accuracy"] == pytest.approx(np.mean((good >= 0.5) == y))


def test_bad_inputs() -> None:
    y = np.array([0, 1] * 10)
    with pytest.raises(ValueError, match="No candidates"):
        cv_select({}, y)
    with pytest.raises(ValueError, match="not among the candidates"):
        cv_select({"a": np.zeros(20)}, y, default="b")
    with pytest.raises(ValueError, match="has"):
        cv_select({"a": np.zeros(5)}, y)
    with pytest.raises(ValueError, match=r"weights must lie in \[0, 1\]"):
        select_smile_weight(np.zeros(20), np.zeros(20), y, weights=(1.5,))
