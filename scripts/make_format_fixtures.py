"""Write the harness-log fixtures of ``tests/data/formats/`` with each harness's own writer.

Run once per tool in a throwaway environment that has the tool installed (never the project's
own venv; see ``tests/data/formats/README.md`` for the exact installs)::

    python -m venv /tmp/fmtvenv
    /tmp/fmtvenv/bin/pip install inspect_ai lm_eval jinja2 evaluate rouge-score sacrebleu
    /tmp/fmtvenv/bin/python scripts/make_format_fixtures.py lm-eval inspect lighteval

Why a script and not hand-written files: the readers in ``qaeval_core/io/formats/`` must read
what the harnesses really write (field names, nesting, ``str()`` of lists, zstd zip members,
``attachment://`` strings), and a fixture typed from memory would only test our memory.
Each tool's part runs the tool's own code path that writes its logs:

* ``lm-eval``: ``lm_eval.simple_evaluate`` with a canned-answer LM and local JSON tasks
  (nq_open-like: a list of answers; triviaqa-like: ``answer.aliases``; two filters), then the
  CLI's own saving calls (``EvaluationTracker.save_results_aggregated`` /
  ``save_results_samples``); two models answer the same questions (the join test);
* ``inspect``: ``inspect_ai.eval`` with the built-in ``mockllm/model`` returning canned
  outputs (``.eval`` zip with zstd members, and ``log_format="json"``), two epochs;
* ``lighteval``: lighteval's ``EvaluationTracker.details_logger.log`` and ``save()`` (v0.11+
  struct columns). lighteval imports torch at module level but its writer never uses it, so
  torch is stubbed here (installing torch only to write a parquet file would be gigabytes).

Formats whose tools do not install here (HELM, OpenCompass, lighteval <= 0.10) are hand-made
by ``handmade`` from the tools' source; the README says so and why. The tool versions are
written to ``tests/data/formats/VERSIONS.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "formats"

#: Open-domain questions with their gold answers (nq_open's layout: ``answer`` is a list).
QUESTIONS: list[tuple[str, list[str]]] = [
    ("what is the capital of france", ["Paris"]),
    ("who wrote the play hamlet", ["William Shakespeare", "Shakespeare"]),
    ("how many continents are there on earth", ["seven", "7"]),
    ("what is the largest planet in the solar system", ["Jupiter"]),
    ("who painted the mona lisa", ["Leonardo da Vinci", "da Vinci"]),
    ("what is the chemical symbol for gold", ["Au"]),
    ("in which year did the berlin wall fall", ["1989"]),
    ("what is the longest river in africa", ["the Nile", "Nile"]),
    ("who was the first person to walk on the moon", ["Neil Armstrong"]),
    ("what is the boiling point of water in celsius", ["100", "100 degrees Celsius"]),
    ("which element has atomic number 1", ["hydrogen"]),
    ("what is the currency of japan", ["yen", "Japanese yen"]),
]
#: Model A: short answers, three wrong. Model B: every answer right but wordy, so exact match
#: undercounts it (the ranking flip the report must show).
ANSWERS: dict[str, list[str]] = {
    "acme/qa-small": [
        "Paris",
        "Shakespeare",
        "7",
        "Saturn",
        "da Vinci",
        "Ag",
        "1989",
        "Nile",
        "Buzz Aldrin",
        "100",
        "hydrogen",
        "yen",
    ],
    "acme/qa-large": [
        "It is Paris",
        "William Shakespeare",
        "There are seven continents",
        "Jupiter",
        "Leonardo da Vinci painted it",
        "Au",
        "It fell in 1989",
        "The Nile River",
        "Neil Armstrong",
        "100 degrees",
        "Hydrogen",
        "The Japanese yen",
    ],
}
TRIVIA: list[tuple[str, dict[str, Any], str]] = [
    (
        "Which planet is known as the Red Planet",
        {"value": "Mars", "aliases": ["Mars", "Planet Mars"]},
        "Mars",
    ),
    (
        "What is the hardest natural substance",
        {"value": "Diamond", "aliases": ["Diamond", "Diamonds"]},
        "diamonds",
    ),
    (
        "Which ocean is the largest",
        {"value": "Pacific", "aliases": ["Pacific", "Pacific Ocean"]},
        "Atlantic",
    ),
]


def _versions(update: dict[str, str]) -> None:
    path = OUT / "VERSIONS.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    data.update(update)
    path.write_text(json.dumps(dict(sorted(data.items())), indent=2) + "\n")


# -- lm-evaluation-harness -------------------------------------------------------------------

_NQ_YAML = """task: nq_local
dataset_path: json
dataset_kwargs:
  data_files:
    validation: {data}
validation_split: validation
output_type: generate_until
doc_to_text: "Q: {{{{question}}}}?\\nA:"
doc_to_target: "{{{{answer}}}}"
generation_kwargs:
  until: ["\\n"]
  do_sample: false
filter_list:
  - name: remove_whitespace
    filter:
      - function: remove_whitespace
      - function: take_first
  - name: lowercase
    filter:
      - function: lowercase
      - function: take_first
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
    ignore_case: true
    ignore_punctuation: true
    regexes_to_ignore:
    - "\\\\b(?:The |the |An |A |The |a |an )"
metadata:
  version: 4.0
"""
_TRIVIA_YAML = """task: triviaqa_local
dataset_path: json
dataset_kwargs:
  data_files:
    validation: {data}
validation_split: validation
output_type: generate_until
doc_to_text: "Question: {{{{question}}}}?\\nAnswer:"
doc_to_target: "{{{{answer.aliases}}}}"
generation_kwargs:
  until: ["\\n"]
  do_sample: false
filter_list:
  - name: remove_whitespace
    filter:
      - function: remove_whitespace
      - function: take_first
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
    ignore_case: true
    ignore_punctuation: true
metadata:
  version: 3.0
"""


def make_lm_eval() -> None:
    """Two models on an nq_open-like task (two filters), one of them on a triviaqa-like one."""
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    import lm_eval
    from lm_eval.api.model import LM
    from lm_eval.api.registry import register_model
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    trivia_answers = {q: a for q, _, a in TRIVIA}

    @register_model("canned")
    class CannedLM(LM):  # the answers of ANSWERS, looked up by the doc's question
        def __init__(self, pretrained: str = "", **_: Any) -> None:
            super().__init__()
            self.answers = dict(zip([q for q, _ in QUESTIONS], ANSWERS[pretrained], strict=True))
            self.answers.update(trivia_answers)

        def generate_until(self, requests: Any, disable_tqdm: bool = False) -> list[str]:
            return [self.answers[r.doc["question"]] for r in requests]

        def loglikelihood(self, requests: Any, disable_tqdm: bool = False) -> list[Any]:
            raise NotImplementedError

        def loglikelihood_rolling(self, requests: Any, disable_tqdm: bool = False) -> list[Any]:
            raise NotImplementedError

    target = OUT / "lm_eval"
    shutil.rmtree(target, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        nq = Path(tmp, "nq.jsonl")
        nq.write_text(
            "".join(json.dumps({"question": q, "answer": a}) + "\n" for q, a in QUESTIONS)
        )
        trivia = Path(tmp, "trivia.jsonl")
        trivia.write_text(
            "".join(json.dumps({"question": q, "answer": a}) + "\n" for q, a, _ in TRIVIA)
        )
        tasks = Path(tmp, "tasks")
        tasks.mkdir()
        (tasks / "nq_local.yaml").write_text(_NQ_YAML.format(data=nq))
        (tasks / "triviaqa_local.yaml").write_text(_TRIVIA_YAML.format(data=trivia))
        manager = TaskManager(include_path=str(tasks))
        for model, names in (
            ("acme/qa-small", ["nq_local", "triviaqa_local"]),
            ("acme/qa-large", ["nq_local"]),
        ):
            tracker = EvaluationTracker(output_path=str(target))
            results = lm_eval.simple_evaluate(
                model="canned",
                model_args=f"pretrained={model}",
                tasks=names,
                task_manager=manager,
                log_samples=True,
                evaluation_tracker=tracker,
                torch_random_seed=None,
                bootstrap_iters=0,
            )
            assert results is not None
            # what `lm_eval --log_samples --output_path` does after evaluating (_cli/run.py)
            samples = results.pop("samples")
            tracker.save_results_aggregated(results=results, samples=samples)
            for task_name in results["configs"]:
                tracker.save_results_samples(task_name=task_name, samples=samples[task_name])
    # the task configs name the temporary data files; keep the fixture free of this machine
    for path in target.rglob("*.json*"):
        path.write_text(path.read_text().replace(tmp, "/tmp/lm_eval_fixture"))
    _versions({"lm_eval": _dist("lm_eval")})


def _dist(name: str) -> str:
    from importlib.metadata import version

    return version(name)


# -- Inspect ---------------------------------------------------------------------------------

_PASSAGE = (
    "The Amazon rainforest covers much of the Amazon basin of South America. The basin spans "
    "about seven million square kilometres, of which about five and a half million are "
    "covered by the rainforest, across nine nations."
)


def make_inspect() -> None:
    """A .eval zip (zstd members; a long input stored as ``attachment://``) and a .json log."""
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate

    samples = [
        Sample(id="capital-fr", input="What is the capital of France?", target="Paris"),
        Sample(
            id="hamlet",
            input="Who wrote Hamlet?",
            target=["William Shakespeare", "Shakespeare"],
        ),
        Sample(
            id="amazon",
            input=f"{_PASSAGE}\n\nHow many nations does the Amazon rainforest span?",
            target=["nine", "9"],
        ),
    ]
    # one output per (sample, epoch); samples run in order within an epoch
    texts = ["Paris.", "Marlowe", "Nine nations.", "Paris", "Shakespeare", "seven"]

    def outputs() -> list[ModelOutput]:
        out = []
        for text in texts:
            output = ModelOutput.from_content(model="mockllm/model", content=text)
            # mockllm counts tokens with tiktoken, which downloads its tables; give usage
            output.usage = ModelUsage(input_tokens=12, output_tokens=3, total_tokens=15)
            out.append(output)
        return out

    target = OUT / "inspect"
    shutil.rmtree(target, ignore_errors=True)
    for log_format in ("eval", "json"):
        task = Task(dataset=samples, solver=generate(), scorer=includes(), name="trivia_qa")
        model = get_model("mockllm/model", custom_outputs=outputs())
        with tempfile.TemporaryDirectory() as tmp:
            logs = inspect_eval(
                task,
                model=model,
                epochs=2,
                log_dir=tmp,
                log_format=log_format,
                display="none",
                max_samples=1,  # one sample at a time, so the canned outputs meet their inputs
            )
            assert logs[0].status == "success", logs[0].error
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy(logs[0].location, target / f"trivia_qa.{log_format}")
    _versions({"inspect_ai": _dist("inspect_ai")})


# -- lighteval -------------------------------------------------------------------------------


def _stub_torch() -> None:
    """Let lighteval import without torch: its logging modules name torch but never call it.

    Every ``torch`` module is a stand-in whose capitalised attributes are empty classes (so
    ``isinstance``/``issubclass`` checks in datasets and scipy simply fail) and whose other
    attributes are mocks."""
    import importlib.abc
    import importlib.machinery
    import types
    from unittest import mock

    class Stub(types.ModuleType):
        def __getattr__(self, name: str) -> Any:
            if name.startswith("__"):
                raise AttributeError(name)
            value: Any = type(name, (), {}) if name[:1].isupper() else mock.MagicMock(name=name)
            setattr(self, name, value)
            return value

    class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
            if name == "torch" or name.startswith("torch."):
                return importlib.machinery.ModuleSpec(name, self, is_package=True)
            return None

        def create_module(self, spec: Any) -> Any:
            module = Stub(spec.name)
            module.__spec__, module.__path__ = spec, []
            return module

        def exec_module(self, module: Any) -> None:
            pass

    sys.meta_path.insert(0, Finder())


def make_lighteval() -> None:
    """Details of two models on one generative task, saved by lighteval's EvaluationTracker."""
    _stub_torch()
    from lighteval.logging.evaluation_tracker import EvaluationTracker
    from lighteval.models.model_output import ModelResponse
    from lighteval.tasks.requests import Doc

    target = OUT / "lighteval"
    shutil.rmtree(target / "details", ignore_errors=True)
    shutil.rmtree(target / "results", ignore_errors=True)
    task = "lighteval|nq_local|0"
    for model, answers in ANSWERS.items():
        tracker = EvaluationTracker(output_dir=str(target), save_details=True)
        tracker.general_config_logger.model_name = model
        for i, ((question, golds), answer) in enumerate(zip(QUESTIONS[:6], answers, strict=False)):
            doc = Doc(
                query=f"Question: {question}?\nAnswer:",
                original_query=question,
                choices=golds,
                gold_index=list(range(len(golds))),
                id=str(i),
                task_name=task,
            )
            response = ModelResponse(
                input=doc.query, text=[f" {answer}\n"], text_post_processed=[answer]
            )
            em = float(answer.lower() in {g.lower() for g in golds})
            tracker.details_logger.log(task, doc, response, {"em": em})
            tracker.metrics_logger.log(task, {"em": em})
        tracker.general_config_logger.model_config = None
        _save_lighteval(tracker)
    from importlib.metadata import version

    _versions({"lighteval": version("lighteval")})


def _save_lighteval(tracker: Any) -> None:
    """``EvaluationTracker.save()``; its results dict dumps ``model_config``, unset without a
    real model run, so that one property is given a dict while ``save`` runs unchanged."""
    cls = type(tracker)
    original = cls.results

    def results(self: Any) -> dict[str, Any]:
        from dataclasses import asdict

        config = asdict(self.general_config_logger)
        return {
            "config_general": config,
            "results": {},
            "versions": self.versions_logger.versions,
            "config_tasks": {},
            "summary_tasks": self.details_logger.compiled_details,
            "summary_general": asdict(self.details_logger.compiled_details_over_all_tasks),
        }

    cls.results = property(results)
    try:
        tracker.save()
    finally:
        cls.results = original


# -- hand-made: HELM, OpenCompass, lighteval <= 0.10 -----------------------------------------


def make_handmade() -> None:
    """The formats whose tools do not install here, from their source (README says why)."""
    _helm()
    _opencompass()
    _lighteval_flat()


def _helm() -> None:
    """A HELM run folder: ``scenario_state.json``, ``run_spec.json``, ``per_instance_stats.json``
    (field names from helm's ``ScenarioState``/``RequestState``/``Instance``/``Reference``/
    ``RequestResult``/``Sequence`` dataclasses and ``PerInstanceStats``)."""
    for model, answers in ANSWERS.items():
        run = f"natural_qa:mode=closedbook,model={model.replace('/', '_')}"
        folder = OUT / "helm" / run
        folder.mkdir(parents=True, exist_ok=True)
        states, stats = [], []
        for i, ((question, golds), answer) in enumerate(zip(QUESTIONS[:5], answers, strict=False)):
            instance = {
                "input": {"text": question},
                "references": [{"output": {"text": g}, "tags": ["correct"]} for g in golds],
                "split": "valid",
                "id": f"id{1000 + i}",
            }
            states.append(
                {
                    "instance": instance,
                    "train_trial_index": 0,
                    "request": {
                        "model_deployment": model,
                        "model": model,
                        "embedding": False,
                        "prompt": f"Question: {question}\nAnswer:",
                        "temperature": 0.0,
                        "num_completions": 1,
                        "max_tokens": 30,
                        "stop_sequences": ["\n"],
                    },
                    "result": {
                        "success": True,
                        "embedding": [],
                        "completions": [{"text": f" {answer}", "logprob": -1.5, "tokens": []}],
                        "cached": True,
                        "request_time": 0.01,
                    },
                    "num_train_instances": 0,
                    "prompt_truncated": False,
                }
            )
            em = float(answer.lower() in {g.lower() for g in golds})
            stats.append(
                {
                    "instance_id": instance["id"],
                    "train_trial_index": 0,
                    "stats": [
                        {
                            "name": {"name": "exact_match", "split": "valid"},
                            "count": 1,
                            "sum": em,
                            "sum_squared": em,
                            "min": em,
                            "max": em,
                            "mean": em,
                            "variance": 0.0,
                            "stddev": 0.0,
                        },
                    ],
                }
            )
        if model == "acme/qa-small":  # a row without a correct reference: refused by number
            states[-1]["instance"]["references"] = [{"output": {"text": "n/a"}, "tags": []}]
        spec = {
            "method": "generation",
            "instructions": "",
            "input_prefix": "Question: ",
            "output_prefix": "Answer: ",
            "max_train_instances": 0,
            "model_deployment": model,
            "model": model,
            "temperature": 0.0,
            "max_tokens": 30,
            "stop_sequences": ["\n"],
        }
        for name, data in (
            ("scenario_state.json", {"adapter_spec": spec, "request_states": states}),
            ("run_spec.json", {"name": run, "adapter_spec": spec, "groups": ["natural_qa"]}),
            ("per_instance_stats.json", stats),
        ):
            (folder / name).write_text(json.dumps(data, indent=2))


def _opencompass() -> None:
    """``outputs/<run>/predictions/<model>/<dataset>.json`` keyed "0".."n" (OpenCompass's
    ``GenInferencerOutputHandler.write_to_json``), the chat form of ``origin_prompt`` for one
    model; ``results/<model>/<dataset>.json`` with ``details`` (``--dump-eval-details``)."""
    for model, answers in ANSWERS.items():
        name = model.split("/")[1]
        preds, details = {}, {}
        for i, ((question, golds), answer) in enumerate(zip(QUESTIONS[:5], answers, strict=False)):
            prompt: Any = f"Question: {question}\nAnswer:"
            if name == "qa-large":
                prompt = [{"role": "HUMAN", "prompt": prompt}]
            preds[str(i)] = {"origin_prompt": prompt, "prediction": answer, "gold": golds}
            correct = answer.lower() in {g.lower() for g in golds}
            details[str(i)] = {"pred": answer, "answer": golds, "correct": correct}
        if name == "qa-small":  # OpenCompass leaves "gold" out when it is empty: refused
            preds["5"] = {"origin_prompt": "Question: who am I?\nAnswer:", "prediction": "you"}
        run = OUT / "opencompass" / "20250101_000000"
        for kind, data in (("predictions", preds), ("results", None)):
            folder = run / kind / name
            folder.mkdir(parents=True, exist_ok=True)
            payload = data or {"score": 0.0, "details": details}
            (folder / "nq_open.json").write_text(json.dumps(payload, indent=4, ensure_ascii=False))


def _lighteval_flat() -> None:
    """lighteval <= 0.10's flat details (``Detail``: example, full_prompt, predictions, gold,
    metrics, ...), written as that version's ``save()`` did: every value ``str()``-cast."""
    from dataclasses import asdict, dataclass, field

    from datasets import Dataset

    @dataclass
    class Detail:  # lighteval 0.6-0.10, logging/info_loggers.py
        example: str = ""
        instruction: str = ""
        full_prompt: str = ""
        num_effective_few_shots: int = 0
        num_asked_few_shots: int = 0
        predictions: list = field(default_factory=list)
        prediction_logits: list = field(default_factory=list)
        input_tokens: list = field(default_factory=list)
        cont_tokens: list = field(default_factory=list)
        truncated: list = field(default_factory=list)
        padded: list = field(default_factory=list)
        gold: list = field(default_factory=list)
        pred_logits: list = field(default_factory=list)
        choices: list = field(default_factory=list)
        gold_index: list = field(default_factory=list)
        metrics: dict = field(default_factory=dict)
        specifics: dict = field(default_factory=dict)

    rows = []
    answers = ANSWERS["acme/qa-small"]
    for (question, golds), answer in zip(QUESTIONS[:4], answers, strict=False):
        em = float(answer.lower() in {g.lower() for g in golds})
        rows.append(
            Detail(
                example=question,
                full_prompt=f"Question: {question}?\nAnswer:",
                predictions=[answer],
                gold=golds,
                metrics={"em": em},
            )
        )
    rows.append(Detail(example="a question with no gold", predictions=["x"], gold=[]))
    dataset = Dataset.from_list([{k: str(v) for k, v in asdict(d).items()} for d in rows])
    dataset = dataset.select_columns(sorted(dataset.column_names))
    folder = OUT / "lighteval_flat" / "details" / "acme" / "qa-small" / "2024-05-01T00-00-00"
    folder.mkdir(parents=True, exist_ok=True)
    dataset.to_parquet(str(folder / "details_lighteval|nq_local|0_2024-05-01T00-00-00.parquet"))


TOOLS = {
    "lm-eval": make_lm_eval,
    "inspect": make_inspect,
    "lighteval": make_lighteval,
    "handmade": make_handmade,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tools", nargs="+", choices=sorted(TOOLS))
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    for tool in args.tools:
        TOOLS[tool]()
        print(f"wrote the {tool} fixtures under {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
