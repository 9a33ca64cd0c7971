"""One test per (architecture, scenario) case; the plugin parametrizes ``matrix_case`` with the selection."""

from collections.abc import Callable

from hf_neuron.matrix.selection import Case


def test_case(matrix_case: Case, run_matrix_case: Callable[[Case], None]) -> None:
    run_matrix_case(matrix_case)
