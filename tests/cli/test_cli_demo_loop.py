"""``qaeval demo`` makes a dataset the app's loop can act on (issue 32, item 9): every NQ301
item carries imported labels, so routing found nothing to route ("Routed 0 of 63")."""

from __future__ import annotations

import pytest
from _triage_store import make_judge

from qaeval_core import store
from qaeval_core.cli.demo import DEMO_DATASET, LOOP_DATASET, LOOP_ITEMS
from qaeval_core.cli.main import main
from qaeval_core.workflows import estimation_frame, route_uncertain


@pytest.fixture(scope="module")
def demo_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('loop') / 'demo.sqlite'}"
    assert main(["demo", "--no-score", "--db", url]) == 0
    for dataset in (DEMO_DATASET, LOOP_DATASET):  # a judge on token F1, fitted elsewhere
        store.save_calibration(url, f"cal-{dataset}", make_judge().to_config(), dataset=dataset)
    return url


def test_the_loop_dataset_has_labelled_and_unlabelled_items(demo_url: str) -> None:
    assert store.get_dataset(demo_url, LOOP_DATASET).n_items == LOOP_ITEMS
    labelled = store.current_labels(demo_url, LOOP_DATASET)["item_id"].nunique()
    assert labelled == LOOP_ITEMS // 3
    assert main(["demo", "--no-score", "--db", demo_url]) == 0  # idempotent
    assert store.get_dataset(demo_url, LOOP_DATASET).n_items == LOOP_ITEMS


def test_routing_and_drawing_by_chance_find_items_on_the_loop_dataset(demo_url: str) -> None:
    full = route_uncertain(
        demo_url, DEMO_DATASET, f"cal-{DEMO_DATASET}", ["admin"], n_most_uncertain=20
    )
    assert full.deal.added == 0  # the study's dataset: every item is labelled already
    cal = f"cal-{LOOP_DATASET}"
    routed = route_uncertain(demo_url, LOOP_DATASET, cal, ["admin"], n_most_uncertain=20)
    assert routed.deal.added > 0
    drawn = route_uncertain(demo_url, LOOP_DATASET, cal, ["admin"], human_share=0.25, floor=0.05)
    assert drawn.deal.kind == "triage" and drawn.deal.added > 0


def test_an_audit_sample_on_the_loop_dataset_gives_random_labels_at_once(demo_url: str) -> None:
    store.deal(
        demo_url, LOOP_DATASET, ["admin"], store.AuditSample(n=60), store.DealOptions(seed=0)
    )
    frame = estimation_frame(demo_url, LOOP_DATASET, f"cal-{LOOP_DATASET}")
    random = frame[(frame["label_sample"] == "random") & frame["gold_label"].notna()]
    assert 0 < len(random) < 60  # the labelled part of the sample; the rest await people
