"""The libraries' bugs (``compat/library_bugs.toml``): the reader checks the file's rules, the check before a run reads
it against the run's catalog, every reproduction of the project's file still fails with the installed libraries, and
the report shows an entry on its architectures' pages beside the cases it fails."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _helpers_report import a_catalog

from hf_neuron.compat.baselines import load_baseline
from hf_neuron.compat.catalog import load_catalog, write_catalog
from hf_neuron.compat.known_failures import KNOWN_FAILURES_PATH
from hf_neuron.compat.library_bugs import LIBRARY_BUGS_PATH, LibraryBugs, affects, load_library_bugs
from hf_neuron.compat.preflight import check_reviewed_data
from hf_neuron.errors import InputError
from hf_neuron.matrix.scenarios.registry import load_scenarios
from hf_neuron.report.site import build_site

SCENARIO_NAMES = load_scenarios().names
CATALOG_TYPES = set(load_catalog().by_type())

ENTRY = '''
[[library_bug]]
library = "transformers"
versions = ">=5.24,<5.25"
model_type = "{model_type}"
scenario = "{scenario}"
reason = "generate builds a static cache the model cannot use"
message = "index out of range"
reproduction = """
import torch
torch.zeros(2)[5]
"""
{extra}
'''


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "library_bugs.toml"
    path.write_text(text)
    return path


def _load(path: Path) -> LibraryBugs:
    return load_library_bugs(path, scenario_names=SCENARIO_NAMES, model_types=CATALOG_TYPES)


def test_the_project_file_follows_its_rules() -> None:
    bugs = load_library_bugs(LIBRARY_BUGS_PATH, scenario_names=SCENARIO_NAMES, model_types=CATALOG_TYPES,
                             required=True)
    assert bugs.entries
    assert bugs.match("IndexError: index_copy_(): index 17 is out of bounds for dimension 2 with size 17",
                      model_type="cpmant", scenario="generate") is not None
    assert bugs.match("IndexError: index_copy_(): index 17 is out of bounds", model_type="cpmant",
                      scenario="train") is None, "an entry names its scenarios"


def test_a_well_formed_entry_is_read_with_its_fields(tmp_path: Path) -> None:
    text = ENTRY.format(model_type="cpmant", scenario="generate",
                        extra='fixed_in = "5.26.0"\nupstream = "https://github.com/huggingface/transformers/pull/1"')
    (entry,) = _load(_write(tmp_path, text)).entries
    assert entry.fields["library"] == "transformers" and entry.fields["fixed_in"] == "5.26.0"
    assert entry.fields["reproduction"].strip() == "import torch\ntorch.zeros(2)[5]"
    assert affects(entry, "5.24.0") and affects(entry, None) and not affects(entry, "5.26.0")


@pytest.mark.parametrize(
    ("model_type", "scenario", "extra", "problem"),
    [
        ("cpmant-9000", "generate", "", r"model_type: 'cpmant-9000' is not one of"),
        ("cpmant", "generates", "", r"scenario: 'generates' is not one of load, forward"),
        ("cpmant", "generate", 'fixed_in = "5.24.1"', r"fixed_in 5.24.1 is inside the affected versions"),
        ("cpmant", "generate", 'fixed_in = "soon"', r"fixed_in 'soon' is not a version"),
        ("cpmant", "generate", 'upstream = "transformers#1"', r"upstream must be a link"),
        ("cpmant", "generate", 'owner = "me"', r"unknown key\(s\) owner"),
    ],
)
def test_a_malformed_entry_is_named_with_what_is_wrong(tmp_path: Path, model_type: str, scenario: str, extra: str,
                                                       problem: str) -> None:
    path = _write(tmp_path, ENTRY.format(model_type=model_type, scenario=scenario, extra=extra))
    with pytest.raises(InputError, match=problem) as error:
        _load(path)
    assert str(error.value).startswith(f"{path}:2: [[library_bug]] #1"), "it names the file, line and entry"


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        ('library = "transformers"', 'library = "tensorflow"', r"library 'tensorflow' is not one of accelerate"),
        ('versions = ">=5.24,<5.25"', 'versions = "5.24 and later"', r"versions '5.24 and later' is not a version"),
        ('message = "index out of range"\n', "", r"missing message"),
        ('reproduction = """\nimport torch\ntorch.zeros(2)[5]\n"""', "", r"missing reproduction"),
        ("torch.zeros(2)[5]", "torch.zeros(2)[5", r"reproduction is not Python: .* \(its line 2\)"),
        ("torch.zeros(2)[5]", "\n".join(["x = 1"] * 16), r"reproduction has 17 lines; a minimal one has at most 15"),
    ],
)
def test_a_malformed_field_is_named_with_what_is_wrong(tmp_path: Path, old: str, new: str, problem: str) -> None:
    text = ENTRY.format(model_type="cpmant", scenario="generate", extra="")
    assert old in text
    with pytest.raises(InputError, match=problem):
        _load(_write(tmp_path, text.replace(old, new)))


def test_a_missing_file_is_empty_unless_asked_for(tmp_path: Path) -> None:
    assert _load(tmp_path / "none.toml").entries == ()
    with pytest.raises(InputError, match=r"none\.toml: no such file"):
        load_library_bugs(tmp_path / "none.toml", scenario_names=SCENARIO_NAMES, required=True)


def test_the_check_before_a_run_reads_the_file_against_the_checkouts_catalog(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Every matrix run reads the file first, checked against the checkout's catalog whatever catalog the run reads
    (a run of a fake catalog is not refused for the project's entries)."""
    from hf_neuron.compat import preflight

    catalog = load_catalog()
    fake = type(catalog)(catalog.transformers, catalog.diffusers, catalog.generated, catalog.entries[:1])
    smaller = write_catalog(fake, tmp_path / "catalog.json")
    check_reviewed_data(catalog=smaller, known_failures=KNOWN_FAILURES_PATH, known_failures_required=True,
                        scenario_names=SCENARIO_NAMES)
    unknown = _write(tmp_path, ENTRY.format(model_type="cpmant-9000", scenario="generate", extra=""))
    monkeypatch.setattr(preflight, "LIBRARY_BUGS_PATH", unknown)
    with pytest.raises(InputError, match=r"library_bugs\.toml:2: \[\[library_bug\]\] #1 model_type: 'cpmant-9000'"):
        check_reviewed_data(catalog=None, known_failures=KNOWN_FAILURES_PATH, known_failures_required=True,
                            scenario_names=SCENARIO_NAMES)


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(_load(LIBRARY_BUGS_PATH).entries)))
def test_every_reproduction_still_fails_with_the_installed_library(index: int, tmp_path: Path) -> None:
    """The evidence of each entry: its reproduction fails in a fresh interpreter with the installed library, whose
    version the entry's range holds. When one passes, the library fixed the bug: take the entry off (or narrow its
    versions and give fixed_in)."""
    entry = _load(LIBRARY_BUGS_PATH).entries[index]
    library = entry.fields["library"]
    assert affects(entry, importlib.metadata.version(library)), f"{library}'s installed version is not in its range"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_NEURON_EMULATOR": "0"}
    done = subprocess.run([sys.executable, "-c", entry.fields["reproduction"]], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode != 0, f"the reproduction of #{index + 1} ({entry.names['model_type']}) passes now"
    assert "Traceback" in done.stderr, done.stderr[-2000:]


def test_the_report_shows_a_bug_on_its_architectures_page_beside_the_cases_it_fails(tmp_path: Path) -> None:
    records = Path(__file__).parent / "fixtures" / "records" / "run-2"
    text = ENTRY.format(model_type="falcon", scenario="generate", extra='fixed_in = "5.26.0"').replace(
        'scenario = "generate"', 'scenario = ["generate", "forward"]').replace(
        'message = "index out of range"', 'message = "index out of range|parity"')  # forward: parity 0.5 > 1e-4
    bugs = load_library_bugs(_write(tmp_path, text), scenario_names=SCENARIO_NAMES)
    baseline = load_baseline(Path(__file__).parents[1] / "compat" / "baselines" / "optimum-neuron-0.4.5.json")
    build_site([records], tmp_path / "site", baseline=baseline, catalog=a_catalog(falcon="decoder"),
               library_bugs=bugs)
    page = (tmp_path / "site" / "arch" / "falcon.html").read_text()
    section = page[page.index('id="library-bugs"'):]
    assert "transformers &gt;=5.24,&lt;5.25" in section and "(this run: 5.24.0)" in section
    assert "transformers 5.26.0" in section and "torch.zeros(2)[5]" in section
    assert "generate builds a static cache the model cannot use" in section
    row = page[page.index('<tr id="case-generate">'):]
    row = row[:row.index("</tr>")]
    assert "fails-on-cpu-too" in row and 'href="#library-bug-1">bug of transformers' in row, "the cell stays"
    detail = page[page.index('id="detail-generate"'):]
    assert "fixed in transformers 5.26.0" in detail[:detail.index("</section>")]
    forward = page[page.index('<tr id="case-forward">'):]
    assert "library-bug" not in forward[:forward.index("</tr>")], "a failure the CPU does not share is not explained"
    fixed = load_library_bugs(_write(tmp_path, text.replace('"5.26.0"', '"5.24.0"').replace("<5.25", "<5.24")),
                              scenario_names=SCENARIO_NAMES)
    build_site([records], tmp_path / "site", baseline=baseline, library_bugs=fixed)
    assert 'id="library-bugs"' not in (tmp_path / "site" / "arch" / "falcon.html").read_text(), \
        "a bug fixed in the run's version is not shown"


def test_the_report_command_reads_the_project_file(tmp_path: Path) -> None:
    records = tmp_path / "records.jsonl"
    fixture = Path(__file__).parent / "fixtures" / "records" / "run-2"
    lines = [json.loads(line) for path in sorted(fixture.glob("*.jsonl")) for line in path.read_text().splitlines()
             if line.strip().startswith("{")]
    cpmant = [{**record, "model_type": "cpmant", "case_id": f"cpmant::{record['scenario']}"}
              for record in lines if record["model_type"] == "falcon"]
    for record in cpmant:
        if record["scenario"] == "generate":
            record["failure"] = {**record["failure"], "type": "IndexError",
                                 "message": "index_copy_(): index 17 is out of bounds for dimension 2 with size 17"}
    records.write_text("".join(json.dumps(record) + "\n" for record in cpmant))
    done = subprocess.run([sys.executable, "-m", "hf_neuron.cli", "report", "build", "--results", str(records),
                           "--out", str(tmp_path / "site")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "site" / "arch" / "cpmant.html").read_text()
    assert "static cache" in page[page.index('id="library-bugs"'):] and 'href="#library-bug-1"' in page
