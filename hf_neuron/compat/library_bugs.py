"""Library bugs: the reviewed list of bugs of the Hugging Face stack (or of torch) that make matrix cases fail on
every device, the CPU included (``compat/library_bugs.toml``, read by the one reader of expected-failure lists,
:mod:`.expected_failures`)::

    [[library_bug]]
    library = "transformers"           # whose bug: one of LIBRARIES
    versions = ">=5.0,<5.25"           # the library versions known to have it (PEP 440 specifiers)
    model_type = ["cpmant", "xlm"]     # the architectures whose cases it fails (a string or a list)
    scenario = "generate"              # the scenario(s) it fails (a string or a list)
    reason = "what fails, and why, in the library's code (file and function)"
    message = "The size of tensor a"   # regex searched in the cases' "Type: message": the failure it causes
    reproduction = '''                 # a few lines of Python that fail with the installed version, nothing else
    import torch
    ...
    '''
    fixed_in = "5.26.0"                # optional: the first release that fixes it
    upstream = "https://github.com/huggingface/transformers/pull/NNNNN"   # optional: the issue or fix upstream

A case that fails as an entry says (its failure matches ``message``) and fails the same way on the CPU keeps its
verdict, "fails on the CPU too"; the report shows the entry on the architecture's page as the library's bug, with
the version that fixes it when one is known. Unlike ``compat/known_failures.toml`` (failures on neuron expected
ahead of a run), nothing here changes how a case is recorded. The file's own rules are checked when it is read
(:func:`load_library_bugs`, and before every matrix run): the architectures are the catalog's and the scenarios the
run's, the library is one of :data:`LIBRARIES`, ``versions`` is a specifier set and ``fixed_in`` a version outside
it, ``upstream`` a link, and ``reproduction`` Python that compiles, at most :data:`REPRODUCTION_LINES` lines.
``tests/test_library_bugs.py`` runs every reproduction of the project's file and checks that it still fails: when one
passes, the library fixed it and the entry comes off.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from hf_neuron.compat.expected_failures import ExpectedFailure, ExpectedFailures, ListSchema, Selector, load_expected
from hf_neuron.compat.files import COMPAT_DIR

__all__ = [
    "LIBRARIES",
    "LIBRARY_BUGS_PATH",
    "REPRODUCTION_LINES",
    "LibraryBugs",
    "affects",
    "library_bugs_schema",
    "load_library_bugs",
]

LIBRARY_BUGS_PATH = COMPAT_DIR / "library_bugs.toml"
#: The libraries whose bugs the file may record: the stack the matrix runs, and torch beneath it.
LIBRARIES: tuple[str, ...] = ("accelerate", "datasets", "diffusers", "peft", "safetensors", "torch", "transformers",
                              "trl")
#: The longest reproduction the file accepts: a minimal one is a few lines.
REPRODUCTION_LINES = 15
LibraryBugs = ExpectedFailures


def _check(entry: ExpectedFailure) -> str | None:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    fields = entry.fields
    if fields["library"] not in LIBRARIES:
        return f"library {fields['library']!r} is not one of {', '.join(LIBRARIES)}"
    try:
        affected = SpecifierSet(fields["versions"])
    except InvalidSpecifier:
        return f"versions {fields['versions']!r} is not a version range (PEP 440 specifiers, e.g. '>=5.0,<5.25')"
    if "fixed_in" in fields:
        try:
            fixed = Version(fields["fixed_in"])
        except InvalidVersion:
            return f"fixed_in {fields['fixed_in']!r} is not a version (e.g. '5.26.0')"
        if affected.contains(fixed, prereleases=True):
            return f"fixed_in {fixed} is inside the affected versions {affected}: one of them is wrong"
    if "upstream" in fields and not fields["upstream"].startswith(("https://", "http://")):
        return "upstream must be a link (https://...) to the issue or the change that fixes it"
    reproduction = fields["reproduction"]
    if len(lines := reproduction.strip().splitlines()) > REPRODUCTION_LINES:
        return (f"reproduction has {len(lines)} lines; a minimal one has at most {REPRODUCTION_LINES}: keep what it "
                "takes to fail")
    try:
        compile(reproduction, "<reproduction>", "exec")
    except SyntaxError as error:
        return f"reproduction is not Python: {error.msg} (its line {error.lineno})"
    return None


def library_bugs_schema(scenario_names: Collection[str], model_types: Collection[str] | None = None) -> ListSchema:
    """The shape of the file's entries, for a run whose scenarios are ``scenario_names`` over the architectures
    ``model_types`` (None: any name)."""
    return ListSchema("library_bug", {"model_type": Selector(allowed=model_types),
                                      "scenario": Selector(allowed=tuple(scenario_names))},
                      required=("library", "versions", "reproduction"), optional=("fixed_in", "upstream"),
                      check=_check)


def load_library_bugs(path: Path = LIBRARY_BUGS_PATH, *, scenario_names: Collection[str],
                      model_types: Collection[str] | None = None, required: bool = False) -> LibraryBugs:
    """Read and check ``path`` (its scenarios among ``scenario_names``, its architectures among ``model_types``
    when given); a missing file is an empty list unless ``required``."""
    return load_expected(path, library_bugs_schema(scenario_names, model_types), required=required)


def affects(entry: ExpectedFailure, version: str | None) -> bool:
    """Whether ``entry``'s bug is in ``version`` of its library (None, an unknown version: it may be)."""
    from packaging.specifiers import SpecifierSet

    return version is None or SpecifierSet(entry.fields["versions"]).contains(version, prereleases=True)
