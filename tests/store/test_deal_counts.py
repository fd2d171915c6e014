"""What an audit-sample or triage deal says it left alone counts its own items only (issue 21,
item 6), on SQLite and PostgreSQL.

The Assign page reported "60 item(s) already had annotators" for an audit sample of 100 of
which 20 were held: the count was every held item of the dataset, not of the sample.
"""

from __future__ import annotations

from _annotation_store import make_store

from qaeval_core import store
from qaeval_core.store.queues.sampled import audit_sample_ids


def test_audit_sample_counts_only_its_own_held_items(db_url: str) -> None:
    ids = make_store(db_url, n_items=300, users=("ann1", "ann2", "ann3"))
    seed = 7
    sample = set(audit_sample_ids(ids, 100, seed))
    outside = [i for i in ids if i not in sample]
    inside = sorted(sample)
    # 60 items are held before the audit: 20 of the sample, 40 outside it.
    held = inside[:20] + outside[:40]
    store.deal(db_url, "ds", ["ann1"], store.TriageItems(held))

    result = store.deal(
        db_url, "ds", ["ann2", "ann3"], store.AuditSample(n=100), store.DealOptions(seed=seed)
    )

    assert set(result.item_ids) == sample
    assert result.already_covered == 20
    assert result.added == 80
    assert result.held_by[0].name == "ann1" and result.held_by[0].items == 20
    notes = " ".join(result.notes())
    assert "20 item(s) already had as many annotators as asked" in notes
    assert "ann1 (annotator) holds 20, 0 labelled" in notes


def test_triage_deal_reports_no_covered_items_for_the_rest_of_the_dataset(db_url: str) -> None:
    ids = make_store(db_url, n_items=30, users=("ann1", "ann2"))
    store.deal(db_url, "ds", ["ann1"], store.TriageItems(ids[:10]))

    result = store.deal(db_url, "ds", ["ann2"], store.TriageItems(ids[10:15]))

    assert result.added == 5
    assert result.already_covered == 0 and result.held_by == ()
    assert result.notes() == []
