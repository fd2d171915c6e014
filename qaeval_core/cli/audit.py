"""``qaeval audit``: deal a seeded random audit sample of a dataset, as the Assign page does.

Why this exists (issue 32, item 6): PPI estimates (``qaeval report --calibration``, ``qaeval
estimate --dataset``, the Leaderboard) count only labels of items drawn at random, and the only
way to draw them was the Assign page. This command calls the same library function,
:func:`qaeval_core.store.deal` with an
:class:`~qaeval_core.store.AuditSample`: a seeded uniform sample of every item,
labelled or not, recorded item by item with its inclusion probability; the items it draws that
already carry a label count as random labels at once, the others go to the annotators' queues.
"""

from __future__ import annotations

from typing import Annotated

import typer

from qaeval_core.cli.common import DbOption, console


def add_commands(app: typer.Typer) -> None:
    @app.command("audit")
    def audit(
        dataset: Annotated[str, typer.Option("--dataset", "-d", help="Dataset to sample.")],
        annotator: Annotated[
            list[str],
            typer.Option(help="Who labels the sampled items that need a label (repeatable)."),
        ],
        n: Annotated[
            int | None, typer.Option("--n", help="Sample size in items (or --fraction).")
        ] = None,
        fraction: Annotated[
            float | None, typer.Option(help="Sample size as a share of the items, in (0, 1].")
        ] = None,
        seed: Annotated[int, typer.Option(help="Seed of the draw (same seed, same sample).")] = 0,
        db: DbOption = None,
    ) -> None:
        """Deal a seeded random audit sample (the labels PPI estimates need)."""
        from qaeval_core.store import AuditSample, DealOptions, deal
        from qaeval_core.store import session as store_session

        url = store_session.upgrade(db)
        result = deal(
            url, dataset, annotator, AuditSample(n=n, fraction=fraction), DealOptions(seed=seed)
        )
        console.print(
            f"Audit sample of {result.items} item(s) from {dataset!r} (seed {seed}): "
            f"{result.added} new assignment(s) "
            f"({', '.join(f'{k}: {v}' for k, v in result.per_annotator.items()) or 'none'}); "
            "drawn items that already have a label count as random labels now.",
            markup=False,
            soft_wrap=True,
        )
