"""A tiny local dataset: a few dozen short chats (``messages``) and the same exchanges as plain ``text``.

:func:`materialize` lays it out as a folder that ``datasets.load_dataset(folder)`` reads without a hub (the
README's ``configs`` metadata names both formats; ``messages`` is the default), so that
``trl sft --dataset_name <folder>`` trains on it; ``--dataset_config text`` picks the plain-text form.
:func:`tiny_dataset` returns it in memory. :func:`trl_formats` gives the same exchanges in every dataset format
TRL's trainers take (preference pairs for DPO, prompts alone for GRPO, ...): the matrix's TRL scenarios and the
stand-in of TRL's own test dataset read them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from datasets import DatasetDict

__all__ = ["FORMATS", "TRL_FORMATS", "Format", "examples", "materialize", "tiny_dataset", "trl_formats"]

Format = Literal["messages", "text"]
FORMATS: tuple[Format, ...] = ("messages", "text")

_FACTS = (
    ("What is the capital of France?", "The capital of France is Paris."),
    ("What is the capital of Japan?", "The capital of Japan is Tokyo."),
    ("What is the capital of Italy?", "The capital of Italy is Rome."),
    ("How many legs does a spider have?", "A spider has eight legs."),
    ("How many days are in a week?", "A week has seven days."),
    ("What color is the sky on a clear day?", "The sky is blue on a clear day."),
    ("What do bees make?", "Bees make honey."),
    ("Which planet is closest to the sun?", "Mercury is the planet closest to the sun."),
    ("What is water made of?", "Water is made of hydrogen and oxygen."),
    ("Say hello.", "Hello!"),
    ("Name a primary color.", "Red is a primary color."),
    ("What is the opposite of hot?", "The opposite of hot is cold."),
    ("Translate 'bonjour' to English.", "'Bonjour' means 'hello'."),
    ("Write a Python expression that adds one and two.", "1 + 2"),
    ("What does a tokenizer do?", "A tokenizer turns text into token ids."),
    ("What is a NeuronCore?", "A NeuronCore is a compute core of an AWS Trainium device."),
)
_NUMBERS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_SYSTEM = "You are a concise assistant."
#: Examples from this index on form the test split.
_TEST_FROM = 40
_SPLITS = ("train", "test")


def _exchanges() -> list[tuple[str, str]]:
    """Questions and answers: the facts, then sums in words, products in digits, and parity."""
    sums = [
        (f"What is {_NUMBERS[a]} plus {_NUMBERS[b]}?", f"{_NUMBERS[a].capitalize()} plus {_NUMBERS[b]} is {a + b}.")
        for a, b in ((1, 2), (2, 2), (3, 4), (5, 1), (6, 3), (7, 2), (4, 4), (8, 1), (0, 9), (2, 5), (3, 3), (1, 1))
    ]
    products = [(f"Compute {a} * {b}.", f"{a} * {b} = {a * b}")
                for a, b in ((2, 3), (4, 5), (6, 7), (3, 9), (8, 8), (7, 1), (9, 2), (5, 5), (6, 6), (4, 7))]
    parity = [(f"Is {n} even or odd?", f"{n} is {'even' if n % 2 == 0 else 'odd'}.")
              for n in (10, 13, 21, 42, 57, 64, 99, 100)]
    return [*_FACTS, *sums, *products, *parity]


def examples(fmt: Format = "messages") -> list[dict[str, object]]:
    """Every example in ``fmt``: ``{"messages": [system, user, assistant]}`` or ``{"text": "..."}``."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown dataset format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt == "text":
        return [{"text": f"Question: {question}\nAnswer: {answer}"} for question, answer in _exchanges()]
    return [
        {"messages": [
            {"role": "system", "content": _SYSTEM},
            {"role": "user", "content": question},
            {"role": "assistant", "content": answer},
        ]}
        for question, answer in _exchanges()
    ]


def _user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def _assistant(text: str) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": text}]


#: TRL's dataset formats, named as TRL's own test dataset (``trl-internal-testing/zen``) names its configs:
#: ``standard_*`` plain text, ``conversational_*`` chat messages.
TRL_FORMATS = (
    "standard_language_modeling", "standard_prompt_only", "standard_prompt_completion", "standard_preference",
    "standard_implicit_prompt_preference", "standard_unpaired_preference", "standard_stepwise_supervision",
    "conversational_language_modeling", "conversational_prompt_only", "conversational_prompt_completion",
    "conversational_preference", "conversational_implicit_prompt_preference", "conversational_unpaired_preference",
)


def trl_formats() -> dict[str, list[dict[str, Any]]]:
    """Every exchange in each of :data:`TRL_FORMATS` (format -> rows, in the exchanges' order): a question with its
    answer, and a wrong answer (the next question's) where a format needs a rejected one; unpaired formats label
    every other row's completion good."""
    pairs = _exchanges()
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in TRL_FORMATS}
    for index, (question, answer) in enumerate(pairs):
        wrong = pairs[(index + 1) % len(pairs)][1]
        good = index % 2 == 0
        rows["standard_language_modeling"].append({"text": f"{question} {answer}"})
        rows["standard_prompt_only"].append({"prompt": question})
        rows["standard_prompt_completion"].append({"prompt": question, "completion": f" {answer}"})
        rows["standard_preference"].append({"prompt": question, "chosen": f" {answer}", "rejected": f" {wrong}"})
        rows["standard_implicit_prompt_preference"].append(
            {"chosen": f"{question} {answer}", "rejected": f"{question} {wrong}"})
        rows["standard_unpaired_preference"].append(
            {"prompt": question, "completion": f" {answer if good else wrong}", "label": good})
        rows["standard_stepwise_supervision"].append(
            {"prompt": question, "completions": [f" {answer}", f" {wrong}"], "labels": [True, False]})
        rows["conversational_language_modeling"].append({"messages": _user(question) + _assistant(answer)})
        rows["conversational_prompt_only"].append({"prompt": _user(question)})
        rows["conversational_prompt_completion"].append({"prompt": _user(question), "completion": _assistant(answer)})
        rows["conversational_preference"].append(
            {"prompt": _user(question), "chosen": _assistant(answer), "rejected": _assistant(wrong)})
        rows["conversational_implicit_prompt_preference"].append(
            {"chosen": _user(question) + _assistant(answer), "rejected": _user(question) + _assistant(wrong)})
        rows["conversational_unpaired_preference"].append(
            {"prompt": _user(question), "completion": _assistant(answer if good else wrong), "label": good})
    return rows


def _readme() -> str:
    lines = ["---", "configs:"]
    for fmt in FORMATS:
        lines += [f"- config_name: {fmt}", "  data_files:"]
        for split in _SPLITS:
            lines += [f"  - split: {split}", f"    path: {fmt}/{split}.jsonl"]
        if fmt == "messages":
            lines.append("  default: true")
    lines += ["---", "", "# hf-neuron tiny dataset", "",
              "Short question-and-answer chats written by `hf_neuron.tiny.dataset`, for smoke-testing training.", ""]
    return "\n".join(lines)


def materialize(out_dir: Path) -> Path:
    """Write both formats as JSON lines (train and test splits) with a README naming them; return ``out_dir``."""
    out_dir = Path(out_dir)
    for fmt in FORMATS:
        rows = examples(fmt)
        for split, part in zip(_SPLITS, (rows[:_TEST_FROM], rows[_TEST_FROM:]), strict=True):
            path = out_dir / fmt / f"{split}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in part), encoding="utf-8")
    (out_dir / "README.md").write_text(_readme(), encoding="utf-8")
    return out_dir


def tiny_dataset(fmt: Format = "messages") -> DatasetDict:
    """The dataset in memory, as ``datasets.DatasetDict`` with ``train`` and ``test`` splits."""
    from datasets import Dataset, DatasetDict

    rows = examples(fmt)
    return DatasetDict({"train": Dataset.from_list(rows[:_TEST_FROM]), "test": Dataset.from_list(rows[_TEST_FROM:])})
