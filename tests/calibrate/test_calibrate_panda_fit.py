"""PANDA refitted on collected labels: mixing, CV choice of alpha, JSON round trip."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from qaeval_core.calibrate import model_from_dict
from qaeval_core.judge.combiners.panda_refit import (
    PandaFitClassifier,
    _mix,
    item_triples,
    panda_item_scores,
    shipped_training_data,
)
from qaeval_core.schema import Item

FACTS = [
    ("capital of France?", "Paris", "Lyon"),
    ("largest planet?", "Jupiter", "Saturn"),
    ("author of Hamlet?", "Shakespeare", "Marlowe"),
    ("chemical symbol of gold?", "Au", "Ag"),
    ("first man on the moon?", "Neil Armstrong", "Buzz Aldrin"),
    ("tallest mountain?", "Everest", "K2"),
]


def _frame(n: int = 120, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    rows, y, groups = [], [], []
    for i in range(n):
        q, right, wrong = FACTS[i % len(FACTS)]
        ok = bool(rng.random() < 0.5)
        cand = right if ok else wrong
        if rng.random() < 0.5:
            cand = f"I believe the answer is {cand}."
        rows.append({"question": f"{q} ({i // 2})", "references": [right], "candidate": cand})
        y.append(ok)
        groups.append(i // 2)
    return pd.DataFrame(rows), np.array(y), np.array(groups)


def test_training_pairs_take_the_best_matching_reference() -> None:
    item = Item("q?", ("Katherine Mulgrew", "Kate Mulgrew"), "It was Kate Mulgrew.")
    assert item_triples([item]) == [("It was Kate Mulgrew.", "Kate Mulgrew", "q?")]


def test_collected_labels_only_learns_the_task() -> None:
    frame, y, groups = _frame()
    clf = PandaFitClassifier(shipped=False, cv=3).fit(frame, y, groups=groups)
    assert clf.alpha_ == 1.0
    test, y_test, _ = _frame(seed=1)
    assert clf.score(test, y_test) > 0.9
    p = clf.predict_proba(test)[:, 1]
    assert ((p >= 0.5) == clf.predict(test)).all()


def test_round_trip_is_exact_and_json_only() -> None:
    frame, y, groups = _frame()
    clf = PandaFitClassifier(shipped=False, cv=3).fit(frame, y, groups=groups)
    data = json.loads(json.dumps(clf.to_dict()))
    again = model_from_dict(data)
    np.testing.assert_array_equal(again.predict_proba(frame), clf.predict_proba(frame))
    assert data["panda"]["format"] == "qaeval-panda"


def test_scores_take_the_max_over_references() -> None:
    frame, y, groups = _frame()
    clf = PandaFitClassifier(shipped=False, cv=3, calibrate_threshold=False).fit(frame, y)
    one = Item("capital of France?", ("Paris",), "Paris")
    two = Item("capital of France?", ("Marseille", "Paris"), "Paris")
    s1, s2 = panda_item_scores(clf.model_, [one, two])
    assert s2 >= s1 - 1e-12


def test_mixing_weights_follow_alpha() -> None:
    pytest.importorskip("qaeval_core.metrics.panda")
    try:
        Xs, _ = shipped_training_data()
    except Exception as exc:  # the shared data is not next to this checkout
        pytest.skip(f"no PANDA training data: {exc}")
    own = [("a", "a", "q")] * 10
    y = np.ones(10, dtype=bool)
    X0, _ = _mix(own, y, 0.0, True)
    assert len(X0) == len(Xs)
    X1, _ = _mix(own, y, 1.0, True)
    assert own == X1
    Xh, _ = _mix(own, y, 0.5, True)  # equal total weight: own rows repeated
    assert len(Xh) - len(Xs) == pytest.approx(len(Xs), rel=0.01)
    Xl, _ = _mix(own, y, 1e-6, True)  # below the natural share: one copy of each
    assert len(Xl) == len(Xs) + len(own)


def test_bad_alphas_and_one_class() -> None:
    frame, y, _ = _frame()
    with pytest.raises(ValueError, match=r"alphas must lie in \[0, 1\]"):
        PandaFitClassifier(alphas=(2.0,)).fit(frame, y)
    with pytest.raises(ValueError, match="one class only"):
        PandaFitClassifier(shipped=False).fit(frame, np.ones(len(y), dtype=bool))


def test_the_shipped_training_data_is_looked_for_beside_the_checkout(monkeypatch) -> None:
    """The default path must not depend on where the module sits in the package (a move once
    broke it while the test above skipped)."""
    from pathlib import Path

    import qaeval_core
    from qaeval_core.judge.combiners.panda_refit import training_data_path

    monkeypatch.delenv("QAEVAL_PANDA_TRAIN", raising=False)
    checkout = Path(qaeval_core.__file__).resolve().parents[1]
    expected = checkout.parent / "shared" / "data" / "pedants_ae_augmented_train.jsonl"
    assert training_data_path() == expected
    monkeypatch.setenv("QAEVAL_PANDA_TRAIN", "/elsewhere/train.jsonl")
    assert training_data_path() == Path("/elsewhere/train.jsonl")
