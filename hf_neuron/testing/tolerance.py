"""Tolerance rows for ``neuron`` in a test's lookup by device type.

Some upstream tests choose their tolerances with a chain such as::

    if torch_device in ["cpu", "cuda"]:
        atol = atols[torch_device, enable_kernels, dtype]
    elif torch_device in ["hpu", "npu", "tpu"]:
        atol = atols["cuda", enable_kernels, dtype]
    else:
        atol = 1e-7

so a device the chain does not name gets 1e-7, even in float16. :func:`route_tolerance_lookup` rebuilds such a
function from its source with every ``torch_device`` *inside that chain* read through :func:`tolerance_row`, which
answers ``cpu`` for ``neuron`` on the reference device (it computes with the CPU's kernels) and ``cuda`` (the row
the chain gives accelerators) on the real backend. The rest of the function, and so the device it runs on, is
unchanged. A function without such a chain is refused with :class:`LookupError`, so a changed upstream test
shows up as not adapted rather than silently half-adapted.
"""

from __future__ import annotations
import __future__

import ast
import functools
import inspect
import textwrap
import types
from collections.abc import Callable
from typing import Any

from hf_neuron import backends

__all__ = ["DEVICE_VARIABLE", "ROUTER_NAME", "route_tolerance_lookup", "tolerance_row"]

#: The name the tests give their device type.
DEVICE_VARIABLE = "torch_device"
#: The module-level name the rebuilt function calls to map a device to its tolerance row.
ROUTER_NAME = "_hf_neuron_tolerance_row"
#: The tolerance chain is recognised by the first row it names.
_FIRST_ROW = "cpu"
_FUTURE_FLAGS = functools.reduce(
    lambda flags, name: flags | getattr(__future__, name).compiler_flag, __future__.all_feature_names, 0
)


def tolerance_row(device: str) -> str:
    """The row of an upstream tolerance table that ``device`` uses: for ``neuron``, the CPU's on the reference
    device, the accelerators' (``cuda``) on the real backend; any other device keeps its own."""
    if device.partition(":")[0] != "neuron":
        return device
    return "cpu" if backends.reference_device_active() else "cuda"


def _is_tolerance_chain(node: ast.AST) -> bool:
    """``if torch_device in ["cpu", ...]:``"""
    if not isinstance(node, ast.If) or not isinstance(test := node.test, ast.Compare):
        return False
    if not (isinstance(test.left, ast.Name) and test.left.id == DEVICE_VARIABLE and len(test.ops) == 1):
        return False
    names = test.comparators[0]
    return (isinstance(test.ops[0], ast.In) and isinstance(names, (ast.List, ast.Tuple, ast.Set))
            and any(isinstance(e, ast.Constant) and e.value == _FIRST_ROW for e in names.elts))


class _ReadThroughRouter(ast.NodeTransformer):
    """``torch_device`` -> ``_hf_neuron_tolerance_row(torch_device)`` wherever it is read."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id != DEVICE_VARIABLE or not isinstance(node.ctx, ast.Load):
            return node
        return ast.copy_location(
            ast.Call(ast.Name(ROUTER_NAME, ast.Load()), [ast.Name(DEVICE_VARIABLE, ast.Load())], []), node
        )


def route_tolerance_lookup(
    function: types.FunctionType, row: Callable[[str], str] = tolerance_row
) -> types.FunctionType:
    """``function`` rebuilt from its source, with the device in its tolerance chain read through ``row``.

    The new function shares the module's globals (so the tests' own monkeypatching still reaches it) and keeps
    file name and line numbers, so tracebacks point at the upstream source. Raises :class:`LookupError` when the
    function has no ``if torch_device in ["cpu", ...]`` chain.
    """
    filename = inspect.getsourcefile(function) or function.__code__.co_filename
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)), filename=filename)
    chains = [node for node in ast.walk(tree) if _is_tolerance_chain(node)]
    if not chains:
        raise LookupError(
            f"{function.__module__}.{function.__qualname__} has no `if {DEVICE_VARIABLE} in [\"{_FIRST_ROW}\", ...]` "
            "tolerance lookup (the upstream test changed): it is left as it is"
        )
    for chain in chains:
        _ReadThroughRouter().visit(chain)
    ast.increment_lineno(tree, function.__code__.co_firstlineno - 1)
    ast.fix_missing_locations(tree)
    flags = function.__code__.co_flags & _FUTURE_FLAGS
    code = compile(tree, filename, "exec", flags=flags, dont_inherit=True)
    module_globals: dict[str, Any] = function.__globals__
    module_globals[ROUTER_NAME] = row
    defined: dict[str, Any] = {}
    exec(code, module_globals, defined)
    rebuilt: types.FunctionType = defined[function.__name__]
    rebuilt.__qualname__ = function.__qualname__
    return rebuilt
