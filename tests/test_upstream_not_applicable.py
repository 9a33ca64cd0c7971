"""The reviewed list of upstream tests not applicable on neuron: validated entry by entry, matched by test name,
architecture and the failure it expects."""

from __future__ import annotations

from pathlib import Path

import pytest

from hf_neuron.compat.upstream_not_applicable import NOT_APPLICABLE_PATH, NotApplicableList, load_not_applicable
from hf_neuron.vocabulary.datafiles import DataFileError

ENTRY_TEMPLATE = """
[[not_applicable]]
suite = "transformers"
test = ["test_generate_compile_*", "test_static_cache_no_recompile*"]
reason = "Inductor has no neuron lowering"
message = "InductorError"
{extra}
"""
ENTRY = ENTRY_TEMPLATE.format(extra="")


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "upstream_not_applicable.toml"
    path.write_text(text)
    return path


def test_the_project_file_is_valid_and_every_entry_has_a_reason() -> None:
    entries = load_not_applicable(NOT_APPLICABLE_PATH).entries
    assert entries and all(entry.reason.strip() for entry in entries)


def test_a_missing_file_is_an_empty_list(tmp_path: Path) -> None:
    assert load_not_applicable(tmp_path / "none.toml").entries == ()


def _listed(listed: NotApplicableList, model_type: str, test: str, failure: str | None) -> object:
    return listed.match(failure, suite="transformers", model_type=model_type, test=test)


def test_an_entry_matches_by_name_pattern_architecture_and_expected_failure(tmp_path: Path) -> None:
    listed = load_not_applicable(_write(tmp_path, ENTRY_TEMPLATE.format(extra='model_type = ["llama", "gpt2"]')))
    inductor = "torch._inductor.exc.InductorError: LoweringException"
    assert _listed(listed, "llama", "test_generate_compile_model_forward_fullgraph", inductor)
    assert _listed(listed, "gpt2", "test_static_cache_no_recompile_with_smaller_length", inductor)
    # another architecture, another test, another suite: not listed
    assert _listed(listed, "mistral", "test_generate_compile_model_forward_fullgraph", inductor) is None
    assert _listed(listed, "llama", "test_generate_from_inputs_embeds", inductor) is None
    # the listed test failing another way is not excused
    assert _listed(listed, "llama", "test_generate_compile_model_forward_fullgraph",
                   "AssertionError: tokens differ") is None
    # a passing test (no failure) matches on its name: it can come off the list
    assert _listed(listed, "llama", "test_generate_compile_model_forward_fullgraph", None)


def test_without_model_type_an_entry_applies_to_every_architecture(tmp_path: Path) -> None:
    listed = load_not_applicable(_write(tmp_path, ENTRY_TEMPLATE.format(extra="")))
    assert _listed(listed, "an_arch_never_seen", "test_generate_compile_x", "InductorError: x")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("not toml [", ":1: not valid TOML"),
        ('[[entry]]\ntest = "x"', r"unknown top-level key\(s\) entry"),
        ("not_applicable = 3", "not_applicable must be an array of tables"),
        (ENTRY_TEMPLATE.format(extra='owner = "me"'), r"#1: unknown key\(s\) owner; allowed: suite, test"),
        (ENTRY.replace('message = "InductorError"', ""), r"#1: missing message \(every entry needs suite, test"),
        (ENTRY.replace('reason = "Inductor has no neuron lowering"', 'reason = " "'), "#1 reason: must be a non-empty"),
        (ENTRY.replace('"transformers"', '"vllm"'), "#1 suite: 'vllm' is not one of transformers, peft, accelerate"),
        (ENTRY.replace('message = "InductorError"', 'message = "("'), "#1 message: not a valid regular expression"),
        (ENTRY_TEMPLATE.format(extra="model_type = []"), "model_type: must be a non-empty string or a list of dist"),
        (ENTRY.replace("test_static_cache_no_recompile*", "test_generate_compile_*"),
         "test: must be a non-empty"),
    ],
)
def test_a_malformed_file_names_the_file_and_the_problem(tmp_path: Path, text: str, problem: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(DataFileError, match=problem) as error:
        load_not_applicable(path)
    assert str(error.value).startswith(f"{path}"), "it names the file (and, where it can, the line)"
