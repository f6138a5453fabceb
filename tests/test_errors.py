"""Every exception class of the product descends from the one root in ``orchestrator.errors``,
or is one of the signals its docstring names (and says so in its own docstring)."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator

import pytest

import orchestrator.errors
from orchestrator.errors import OrchestratorError

PRODUCT_PACKAGES = ("states", "orchestrator", "cli", "conformance")

SIGNALS = {
    "orchestrator.runtime.tool_runner.ToolsPaused",
    "orchestrator.capabilities.tools.search._Stopped",
    "orchestrator.core.safe_regex.SearchStopped",
    "orchestrator.adapters.mcp.elicitation.InputDeclined",
    "orchestrator.adapters.mcp.sampling.SamplingDeclined",
    "conformance.plugin.RowFailed",
    "conformance.recorder.Mismatch",
    "conformance.validation.Rejected",
    "conformance.transport.ClientGone",
    "conformance.transport.Stopping",
}
"""Control-flow signals and the conformance kit's verdicts: outside the tree on purpose (a
handler of failures that caught one would report a deliberate outcome as an error)."""


def _import_product() -> None:
    for package_name in PRODUCT_PACKAGES:
        package = importlib.import_module(package_name)
        for module in pkgutil.walk_packages(package.__path__, f"{package_name}."):
            if module.name.rsplit(".", 1)[-1] == "__main__":
                continue  # running it would start the CLI
            importlib.import_module(module.name)


def _subclasses(cls: type[BaseException]) -> Iterator[type[BaseException]]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def product_exceptions() -> dict[str, type[BaseException]]:
    """Every exception class defined in product code, by qualified name."""
    _import_product()
    found = {}
    for cls in _subclasses(BaseException):
        if cls.__module__.split(".", 1)[0] in PRODUCT_PACKAGES:
            found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return found


EXCEPTIONS = product_exceptions()


def test_the_walk_finds_the_product_exceptions() -> None:
    # A walk that imported nothing would pass every check below.
    assert "orchestrator.serving.host.control.HostError" in EXCEPTIONS
    assert "cli.errors.CliError" in EXCEPTIONS
    assert EXCEPTIONS.keys() >= SIGNALS, "a signal listed here no longer exists"


@pytest.mark.parametrize("name", sorted(EXCEPTIONS))
def test_each_exception_descends_from_the_root_or_is_a_signal(name: str) -> None:
    cls = EXCEPTIONS[name]
    if name in SIGNALS:
        assert not issubclass(cls, OrchestratorError), f"{name} is a signal inside the tree"
        assert "signal, not a failure" in (cls.__doc__ or "") or "verdict" in (cls.__doc__ or "")
        return
    assert issubclass(cls, OrchestratorError), (
        f"{name} subclasses {[b.__name__ for b in cls.__mro__[1:]]}, not OrchestratorError: "
        "give it its root in orchestrator/errors.py's tree, or (a control-flow signal) say so "
        "in its docstring and list it in SIGNALS here"
    )


def test_the_documented_tree_names_every_signal_and_feature_root() -> None:
    doc = orchestrator.errors.__doc__ or ""
    for name in SIGNALS:
        assert name.rsplit(".", 1)[-1] in doc
    for name, cls in EXCEPTIONS.items():
        # A class whose parent is one of the three roots is a feature root: the tree shows it.
        if cls.__bases__[0].__module__ == "orchestrator.errors" and name not in SIGNALS:
            assert cls.__name__ in doc, f"{name} is a feature root missing from the tree"
