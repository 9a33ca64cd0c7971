"""What a case did on the device besides its result: peak memory, what Dynamo compiled, which operators would run on
the CPU on Trainium.

:class:`Observer` brackets the device's attempt of a case (:meth:`~Observer.start`, :meth:`~Observer.finish`). It
looks only at modules the case imported itself (torch, Dynamo): a case that never imported torch allocated and
compiled nothing, and observing it costs nothing.

- **Compile facts** (every case that compiled): the backends ``torch.compile`` was asked for (recorded by a wrapper
  around ``torch.compile``, installed in the worker when torch is imported, so it sees transformers' own calls, but
  not torch's own compiles of its higher-order operators' bodies, such as eager FlexAttention's), the
  graphs Dynamo compiled, its graph breaks with their first reasons (what Dynamo's explanation names: the operator)
  and where in the user's code each broke (the file and function, from Dynamo's ``graph_breaks`` log), its
  recompilations with theirs (from Dynamo's ``recompiles`` log), and the seconds it spent compiling (Dynamo's
  own timer). On a neuron device the backend must be ``neuron``, or Inductor where the device selects ``neuron`` in
  its place (``HF_NEURON_EMULATOR_COMPILE_BACKEND=auto``, as TorchNeuron 2.33 and later do): :func:`wrong_backend`
  says when it was not, and the case fails for it, never silently substituted.
  A scenario's reference computation on the CPU that might compile runs inside :func:`not_the_device`, so that its
  backend, graphs and compile seconds are not counted as the device's.
- **Fallback operators**: ``get_fallback_ops()`` counted over the case. On the reference device, from its op log: the
  operators the case dispatched on the device that are not native on Trainium by ``hf_neuron/device/trainium_ops.toml``
  (read from TorchNeuron's source, or measured by a Trainium run), with their calls. On the real backend, the
  backend's own report (``torch.neuron.get_fallback_ops()``, else ``torch_neuronx.get_fallback_ops()``), cleared at
  the start of the case when the backend can clear it; a backend that reports names without calls gives each the
  count 0 ("fell back, calls not counted").
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import logging
import os
import re
import sys
import sysconfig
from collections.abc import Callable, Iterator, Mapping
from types import ModuleType
from typing import Any

from hf_neuron import backends, settings
from hf_neuron.matrix.case.verdict import Observations
from hf_neuron.vocabulary.records import CompileFacts

__all__ = ["BACKEND_FOR_NEURON", "CompileMark", "Observer", "compile_mark", "compile_seconds", "compiled_since",
           "device_graphs", "fresh_dynamo", "not_the_device", "watch_torch_compile", "wrong_backend"]

#: The ``torch.compile`` backend a case on a neuron device must use.
BACKEND_FOR_NEURON = "neuron"
#: The backend torch.compile means when it names none: on a graph on the device, TorchNeuron 2.33 and later compile
#: with ``neuron`` instead (rule compile-backend-selection), so asking for it there is not a substitute.
_SELECTED_INSTEAD = "inductor"
#: How many reasons (first lines) a record keeps of recompilations.
_REASONS = 3
#: How many graph break reasons a record keeps: every place a model breaks (each a distinct reason and location; a
#: vision-language model breaks at five or six), so that the page names each, and a bound.
_BREAK_REASONS = 12
_RECOMPILES_LOGGER = "torch._dynamo.guards.__recompiles"
_GRAPH_BREAKS_LOGGER = "torch._dynamo.symbolic_convert.__graph_breaks"
#: The first line of Dynamo's log of a graph break: the user's file and line where it broke.
_BREAK_AT = re.compile(r"in user code at (?P<file>.+):(?P<line>\d+)$")
#: A frame of the log's "User code traceback:" (the last one is where it broke).
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)', re.MULTILINE)

#: Dynamo's timer of one frame's compilation (its tracing and the backend), in ``compilation_time_metrics``.
_COMPILE_TIMER = "_compile.compile_inner"

_backends_asked: list[str] = []
_recompiles: list[str] = []
#: The device's graph breaks as Dynamo logged them: (the reason it logged, where in the user's code).
_break_sites: list[tuple[str, str]] = []
#: The location named for each (file, line) where a break was logged with its traceback: Dynamo logs a break again
#: at the same place without it.
_break_locations: dict[tuple[str, str], str] = {}
#: Compile seconds of the case's reference computations (:func:`not_the_device`), not the device's.
_not_the_device_s: list[float] = []
#: Compile seconds Dynamo's timer held when :func:`fresh_dynamo` reset it (``torch._dynamo.reset()`` clears it).
_seconds_before_resets: list[float] = []


class _RecompileLog(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        _recompiles.append(record.getMessage())


def _break_location(frames: list[re.Match[str]]) -> str | None:
    """Where a traceback's ``frames`` broke, as "file.py:function": the innermost frame outside Python's standard
    library (a ``copy.deepcopy`` or a ``logging`` call breaks in the library; the model's line that called it is the
    place to name), named for the function it is in (a comprehension's frame, ``<listcomp>``, for the function
    around it)."""
    paths = sysconfig.get_paths()
    packages = (paths["purelib"], paths["platlib"])  # under the standard library's folder outside a virtualenv
    user = [frame for frame in frames
            if not frame["file"].startswith(paths["stdlib"]) or frame["file"].startswith(packages)] or frames
    if not user:
        return None
    named = next((frame["function"] for frame in reversed(user)
                  if frame["file"] == user[-1]["file"] and not frame["function"].startswith("<")), user[-1]["function"])
    return f"{os.path.basename(user[-1]['file'])}:{named}"


class _GraphBreakLog(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        head, _, rest = message.partition("\n")
        at = _BREAK_AT.search(head)
        if at is None:
            return
        place = (at["file"], at["line"])
        location = _break_location(list(_FRAME.finditer(message)))
        if location is not None:
            _break_locations[place] = location
        reason = rest.partition("Graph Break Reason:")[2].partition("User code traceback:")[0]
        _break_sites.append((reason, _break_locations.get(place, f"{os.path.basename(place[0])}:{place[1]}")))


def _backend_name(backend: Any) -> str:
    if isinstance(backend, str):
        return backend
    return str(getattr(backend, "__name__", None) or type(backend).__name__)


def _inside_torch_operator_compile() -> bool:
    """Whether torch itself is compiling one of its higher-order operators' bodies (eager FlexAttention compiles its
    wrapper with Dynamo's eager backend): torch's implementation on every device, not a backend the case asked for."""
    hop_utils = sys.modules.get("torch._higher_order_ops.utils")
    return bool(getattr(getattr(hop_utils, "_hop_compile_tls", None), "in_hop_compile", False))


def _record_compiles(torch: ModuleType) -> None:
    """Wrap ``torch.compile`` so that every backend asked for is noted (idempotent), and collect Dynamo's
    recompilation and graph break messages without printing them."""
    if getattr(torch.compile, "_hf_neuron_recorded", False):
        return
    original: Callable[..., Any] = torch.compile

    def compile(model: Any = None, *args: Any, backend: Any = "inductor", **kwargs: Any) -> Any:  # noqa: A001
        if not _inside_torch_operator_compile():
            _backends_asked.append(_backend_name(backend))
        return original(model, *args, backend=backend, **kwargs)

    compile._hf_neuron_recorded = True  # type: ignore[attr-defined]
    torch.compile = compile  # type: ignore[attr-defined]
    torch._logging.set_logs(recompiles=True, graph_breaks=True)
    for name, handler in ((_RECOMPILES_LOGGER, _RecompileLog()), (_GRAPH_BREAKS_LOGGER, _GraphBreakLog())):
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.propagate = False


def watch_torch_compile() -> None:
    """Note every ``torch.compile`` of this process, from the moment torch is imported (now if it is)."""
    from hf_neuron import import_hooks

    import_hooks.when_imported("torch", _record_compiles)


@contextlib.contextmanager
def not_the_device() -> Iterator[None]:
    """Leave out of the case's compile facts what runs inside: the backends asked for, the graphs, graph breaks and
    recompilations of a reference computation on the CPU."""
    counters = _dynamo_counters()
    saved = None if counters is None else copy.deepcopy(dict(counters))
    asked, recompiles, breaks, seconds = len(_backends_asked), len(_recompiles), len(_break_sites), compile_seconds()
    try:
        yield
    finally:
        del _backends_asked[asked:], _recompiles[recompiles:], _break_sites[breaks:]
        _not_the_device_s.append((compile_seconds() or 0.0) - (seconds or 0.0))
        counters = _dynamo_counters()
        if counters is not None:
            counters.clear()
            counters.update(copy.deepcopy(saved or {}))


def _first_lines(reasons: Any, keep: int = _REASONS) -> list[str]:
    lines = [str(reason).strip().splitlines()[0] for reason in reasons if str(reason).strip()]
    return list(dict.fromkeys(lines))[:keep]


def _break_reason(reason: str) -> str:
    """A graph break's ``reason``: its first line and what its ``Explanation:`` line names (the operator or call
    behind a "Dynamic shape operator" or a "Data dependent operator")."""
    lines = [line.strip() for line in reason.strip().splitlines()]
    explained = next((line.removeprefix("Explanation:").strip() for line in lines[1:]
                      if line.startswith("Explanation:")), "")
    return f"{lines[0]}: {explained}" if explained else lines[0] if lines else ""


def _break_reasons(breaks: Any, sites: list[tuple[str, str]]) -> list[str]:
    """The reasons of Dynamo's graph ``breaks`` (its counter: reason → count), at most :data:`_BREAK_REASONS`, each
    with where in the user's code it broke ("... at modeling_qwen2_vl.py:get_rope_index") when Dynamo logged one of
    its ``sites`` with it; a break logged at two places is two reasons."""
    reasons = [str(reason).strip() for reason in breaks if str(reason).strip()]
    logged_as = [(next((reason for reason in reasons if reason in logged), None), location)
                 for logged, location in sites]
    located = [f"{_break_reason(reason)} at {location}" for reason, location in logged_as if reason is not None]
    unlocated = [_break_reason(reason) for reason in reasons if reason not in {reason for reason, _ in logged_as}]
    return _first_lines(located + unlocated, _BREAK_REASONS)


def _dynamo_counters() -> Any:
    dynamo_utils = sys.modules.get("torch._dynamo.utils")
    return None if dynamo_utils is None else dynamo_utils.counters


def _dynamo_timer() -> float | None:
    """The seconds in Dynamo's compile timer (since the last ``torch._dynamo.reset()``, which clears it); None before
    Dynamo is imported, or when this torch keeps no such timer."""
    dynamo_utils = sys.modules.get("torch._dynamo.utils")
    metrics = getattr(dynamo_utils, "compilation_time_metrics", None)
    return None if metrics is None else float(sum(metrics.get(_COMPILE_TIMER, ())))


def compile_seconds() -> float | None:
    """Seconds this process has spent compiling (Dynamo's tracing and the backend, every frame so far, across the
    resets of :func:`fresh_dynamo`); None before Dynamo is imported, or when this torch keeps no such timer."""
    timer = _dynamo_timer()
    return None if timer is None else timer + sum(_seconds_before_resets)


def fresh_dynamo() -> None:
    """``torch._dynamo.reset()``, for a case that compiles afresh (no cache entries or recompile counts left by
    another case), keeping the seconds compiled so far: the reset clears Dynamo's timer, which the case's compile
    facts read (the time compiled before it, then none, would be a case that took negative time)."""
    import torch._dynamo

    _seconds_before_resets.append(_dynamo_timer() or 0.0)
    torch._dynamo.reset()


def device_graphs() -> int:
    """The graphs Dynamo has compiled for the device so far in this case (what :func:`not_the_device` ran is not
    counted): a scenario's part that must compile tells by the difference across it."""
    counters = _dynamo_counters()
    return 0 if counters is None else int(counters["stats"]["unique_graphs"])


@dataclasses.dataclass(frozen=True)
class CompileMark:
    """Where the device's compile facts stood at one moment of a case (:func:`compile_mark`)."""

    graphs: int
    recompiles: int
    seconds: float | None
    #: the seconds :func:`not_the_device` left out so far
    not_the_device_s: float


def compile_mark() -> CompileMark:
    """The device's graphs, recompilations and compile seconds so far in this case: :func:`compiled_since` says what
    a part of a scenario compiled after it."""
    return CompileMark(device_graphs(), len(_recompiles), compile_seconds(), sum(_not_the_device_s))


def compiled_since(mark: CompileMark) -> dict[str, Any]:
    """What the device compiled since ``mark``, as a scenario's facts: ``graphs``, ``recompiles``, the first
    ``recompile_reasons`` (Dynamo's guard that failed) and the ``compile_seconds`` (None: Dynamo keeps no timer)."""
    now = compile_seconds()
    left_out = sum(_not_the_device_s) - mark.not_the_device_s
    return {"graphs": device_graphs() - mark.graphs, "recompiles": len(_recompiles) - mark.recompiles,
            "recompile_reasons": _recompile_reasons(_recompiles[mark.recompiles:]),
            "compile_seconds": None if now is None else round(max(0.0, now - (mark.seconds or 0.0) - left_out), 3)}


def _recompile_reasons(messages: list[str]) -> list[str]:
    """The first reasons of Dynamo's recompilation ``messages``, which name it after "triggered by the following
    guard failure(s):"."""
    return _first_lines(message.split("guard failure(s):", 1)[-1].strip().lstrip("- ") for message in messages)


def _compile_facts(seconds_before: float | None) -> CompileFacts | None:
    counters = _dynamo_counters()
    graphs = device_graphs()
    if not _backends_asked and not graphs:
        return None
    breaks = {} if counters is None else dict(counters["graph_break"])
    return CompileFacts(
        backends=list(dict.fromkeys(_backends_asked)),
        graphs=graphs,
        graph_breaks=sum(breaks.values()),
        break_reasons=_break_reasons(breaks, _break_sites),
        recompiles=len(_recompiles),
        recompile_reasons=_recompile_reasons(_recompiles),
        seconds=None if (now := compile_seconds()) is None
        else max(0.0, now - (seconds_before or 0.0) - sum(_not_the_device_s)),
    )


def wrong_backend(facts: CompileFacts | None, device: str) -> str | None:
    """Why the case compiled with a backend it must not use on ``device`` (None when it did not)."""
    if facts is None or device.split(":")[0] != "neuron":
        return None
    allowed = {BACKEND_FOR_NEURON}
    if settings.read("HF_NEURON_EMULATOR_COMPILE_BACKEND") == "auto":
        allowed.add(_SELECTED_INSTEAD)
    others = [name for name in facts["backends"] if name not in allowed]
    if not others:
        return None
    return (f"compiled with backend {others[0]!r} on a neuron device: the neuron backend is {BACKEND_FOR_NEURON!r} "
            "(a substitute would make the case say nothing about neuron)")


class Observer:
    """Brackets the device's attempt of one case on ``device``."""

    def __init__(self, device: str) -> None:
        self._device = device
        self._on_neuron = device.split(":")[0] == "neuron"
        self._fallbacks_before: dict[str, int] = {}
        self._compile_s_before: float | None = None

    def _fallback_reporter(self) -> Any | None:
        """The module whose ``get_fallback_ops()`` reports this case's fallbacks (None when nothing reports them)."""
        if not self._on_neuron or "torch" not in sys.modules:
            return None
        if backends.reference_device_active():
            if not (settings.read("HF_NEURON_EMULATOR_OP_LOG") or settings.read("HF_NEURON_EMULATOR_WARN_FALLBACK")):
                return None  # the reference device logs operators only when asked to
            return getattr(sys.modules["torch"], "neuron", None)
        for module in (getattr(sys.modules["torch"], "neuron", None), sys.modules.get(backends.REAL_PACKAGE)):
            if callable(getattr(module, "get_fallback_ops", None)):
                return module
        return None

    def _device_module(self) -> Any | None:
        torch = sys.modules.get("torch")  # a case that never imported torch allocated no device memory
        module = getattr(torch, self._device.split(":")[0], None) if torch is not None else None
        if not hasattr(module, "max_memory_allocated") or not hasattr(module, "reset_peak_memory_stats"):
            return None
        return module

    def _fallbacks(self) -> dict[str, int] | None:
        reporter = self._fallback_reporter()
        if reporter is None:
            return None
        reported = reporter.get_fallback_ops()
        if isinstance(reported, Mapping):
            return {str(name): int(count) for name, count in reported.items()}
        return dict.fromkeys(map(str, reported), 0)  # names without calls

    def start(self) -> None:
        """Start observing: peak memory, compile notes and Dynamo's counters afresh; fallback counts from now."""
        module = self._device_module()
        if module is not None:
            with contextlib.suppress(RuntimeError, ValueError):  # an unusable device: the case will say why
                module.reset_peak_memory_stats(self._device)
        _backends_asked.clear()
        _recompiles.clear()
        _break_sites.clear()
        _not_the_device_s.clear()
        self._compile_s_before = compile_seconds()
        counters = _dynamo_counters()
        if counters is not None:
            counters.clear()
        reporter = self._fallback_reporter()
        if reporter is not None and not backends.reference_device_active():
            clear = getattr(reporter, "clear_op_tracking", None)
            if callable(clear):
                clear()  # the real backend reports each operator once per process unless cleared
        self._fallbacks_before = self._fallbacks() or {}

    def finish(self) -> Observations:
        """What the attempt did since :meth:`start`."""
        peak = None
        module = self._device_module()
        if module is not None:
            try:
                peak = int(module.max_memory_allocated(self._device))
            except (RuntimeError, ValueError):
                peak = None
        fallbacks = self._fallbacks()
        if fallbacks is not None:
            before = self._fallbacks_before
            fallbacks = {name: count - before.get(name, 0) for name, count in fallbacks.items()
                         if count > before.get(name, 0) or (count == 0 and name not in before)}
        return Observations(peak_memory_bytes=peak, compile=_compile_facts(self._compile_s_before),
                            fallback_ops=fallbacks)
