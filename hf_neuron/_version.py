"""hf-neuron's version, written once: the package, the records' environment block and ``pyproject.toml`` read it."""

__version__ = "0.1.0"
