"""The pytest plugin behind ``pytest_plugins = ["relaxvm.testing.conformance"]``.

It does three things (``docs/testing.md`` is the user's guide):

* **Collection.** The suite's test modules ship inside this package, not in the user's tests
  directory, so pytest would never find them on its own. Every ``conftest.py`` that asks for
  the suite becomes their anchor: :func:`pytest_collect_file` turns it into a
  :class:`ConformanceSuite` whose children are the shipped modules (:data:`SUITE_MODULES`),
  with node ids such as ``tests/conftest.py::test_ops::test_op[llvm-add-float32-static-bytecode]``.
  A conftest asks for the suite by naming this plugin in ``pytest_plugins`` (the one line) or by
  defining ``relaxvm_conformance_targets`` (the way for a conftest below the top level, where
  pytest forbids ``pytest_plugins``; the plugin must then be loaded by a top-level conftest or
  ``-p relaxvm.testing.conformance``).
* **Target selection.** :func:`pytest_generate_tests` parametrizes the ``target`` fixture of
  every test below an anchor with :func:`selected_targets`: ``--relaxvm-target``, else the
  anchor's ``relaxvm_conformance_targets``, else the ini option of that name, else every
  registered target kind that is not a test double.
* **Fixtures.** ``target`` (the kind's name, skipped with a reason when its device is absent,
  an error when no plugin registered it), ``target_device``, ``exec_mode`` and ``make_vm``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import relaxvm

from ...errors import RegistryError
from ...registry import extensions
from ..targets import TEST_DOUBLES, missing_device_reason, real_target_kinds, registered_target

__all__ = [
    "PLUGIN_NAME",
    "SUITE_MODULES",
    "TARGETS_VARIABLE",
    "ConformanceSuite",
    "SuiteModule",
    "exec_mode",
    "make_vm",
    "pytest_addoption",
    "pytest_collect_file",
    "pytest_configure",
    "pytest_generate_tests",
    "selected_targets",
    "target",
    "target_device",
]

#: The name a conftest puts in ``pytest_plugins``.
PLUGIN_NAME = "relaxvm.testing.conformance"
#: The conftest variable (and ini option) that selects target kinds.
TARGETS_VARIABLE = "relaxvm_conformance_targets"
#: The shipped test modules, in collection order (submodules of this package).
SUITE_MODULES = ("test_ops", "test_edges", "test_e2e_basic", "test_e2e_control")

_GPU_MARK = "gpu: needs a GPU device (the relaxvm conformance matrix skips it otherwise)"


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--relaxvm-target NAME`` and the ``relaxvm_conformance_targets`` ini option."""
    group = parser.getgroup("relaxvm", "relaxvm conformance matrix")
    group.addoption(
        "--relaxvm-target",
        action="append",
        default=[],
        dest="relaxvm_targets",
        metavar="NAME",
        help="run the relaxvm conformance matrix on target kind NAME (repeatable or "
        "comma-separated; overrides relaxvm_conformance_targets)",
    )
    parser.addini(
        TARGETS_VARIABLE,
        type="args",
        default=[],
        help="target kinds the relaxvm conformance matrix runs on (default: every registered "
        "target kind that is not a test double)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Declare the ``gpu`` mark, which the plugin puts on target kinds whose device is CUDA."""
    config.addinivalue_line("markers", _GPU_MARK)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """Collect the suite at every ``conftest.py`` that asks for it."""
    if file_path.name != "conftest.py":
        return None
    conftest = parent.config.pluginmanager.get_plugin(str(file_path))
    if conftest is None or not _asks_for_suite(conftest):
        return None
    suite: ConformanceSuite = ConformanceSuite.from_parent(parent, path=file_path)
    return suite


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``target`` with the selected kinds for every test below an anchor."""
    if "target" not in metafunc.fixturenames:
        return
    # A test that parametrizes ``target`` itself keeps its own values.
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs.get("argnames", ())
        if "target" in (names.replace(" ", "").split(",") if isinstance(names, str) else names):
            return
    anchor = _anchor_of(metafunc.config, Path(metafunc.definition.path))
    if anchor is None:
        return
    names = selected_targets(metafunc.config, anchor)
    if not names:
        raise RegistryError(
            "the relaxvm conformance matrix has no target kind to run on: no installed plugin "
            "registered one (`relaxvm plugins` lists them); name one with --relaxvm-target"
        )
    params = [pytest.param(name, id=name, marks=_marks(name)) for name in names]
    metafunc.parametrize("target", params, indirect=True, scope="module")


def selected_targets(config: pytest.Config, conftest: ModuleType | None = None) -> list[str]:
    """The target kinds the suite runs on, in order, without duplicates.

    The first of these that names any kind wins: ``--relaxvm-target`` (repeatable,
    comma-separated), the variable ``relaxvm_conformance_targets`` of ``conftest``, the ini
    option of that name, every registered target kind that is not a test double.
    """
    for source in (
        config.getoption("relaxvm_targets", default=None),
        getattr(conftest, TARGETS_VARIABLE, None),
        config.getini(TARGETS_VARIABLE),
    ):
        names = _split(source)
        if names:
            return names
    return real_target_kinds()


class ConformanceSuite(pytest.File):
    """The suite anchored at one ``conftest.py``: one :class:`SuiteModule` per shipped module."""

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        for name in SUITE_MODULES:
            yield SuiteModule.from_parent(
                self, path=self.path, name=name, nodeid=f"{self.nodeid}::{name}"
            )


class SuiteModule(pytest.Module):
    """A shipped test module, collected from the imported module rather than from a file.

    Its ``path`` is the anchor's ``conftest.py``, so the anchor directory's conftest fixtures
    and hooks apply to it as to the user's own tests there; tracebacks still point at the
    shipped source.
    """

    def _getobj(self) -> ModuleType:
        return importlib.import_module(f"{__package__}.{self.name}")


# ---------------------------------------------------------------------------------------------
# Fixtures


@pytest.fixture(scope="module")
def target(request: pytest.FixtureRequest) -> Iterator[str]:
    """The name of the target kind under test.

    A test double named in ``relaxvm.testing.TEST_DOUBLES`` (``interp``) is registered for the
    duration when no plugin registered its name. The test is skipped, with the reason, when the
    kind's device is absent on this machine; it errors when no plugin registered the kind.
    """
    name = getattr(request, "param", None)
    if not isinstance(name, str):
        pytest.fail(
            f"{request.node.nodeid}: the `target` fixture is parametrized only below a "
            "conftest.py that enables the relaxvm conformance suite (see docs/testing.md)",
            pytrace=False,
        )
    if name in TEST_DOUBLES and name not in extensions.list_target_kinds():
        with registered_target(TEST_DOUBLES[name]()):
            yield _usable(name)
        return
    yield _usable(name)


@pytest.fixture(scope="module")
def target_device(target: str) -> relaxvm.Device:
    """The device the target's kernels run on (device 0 of the kind's device type)."""
    return relaxvm.device(extensions.get_target_kind(target).device)


@pytest.fixture(params=("bytecode", "compiled"))
def exec_mode(request: pytest.FixtureRequest) -> str:
    """Both VM execution modes: they must give identical results and errors."""
    return str(request.param)


@pytest.fixture
def make_vm(
    target: str, exec_mode: str, target_device: relaxvm.Device
) -> Callable[..., relaxvm.VirtualMachine]:
    """``make_vm(mod_or_source, **build_kwargs)``: compile for the target and exec mode, and
    return a VM on the target's device."""

    def make(mod: Any, **kwargs: Any) -> relaxvm.VirtualMachine:
        if isinstance(mod, str):
            from ...script import from_source

            mod = from_source(mod)
        ex = relaxvm.compile(mod, target, exec_mode=exec_mode, **kwargs)
        return relaxvm.VirtualMachine(ex, target_device)

    return make


# ---------------------------------------------------------------------------------------------
# Helpers


def _usable(name: str) -> str:
    # get_target_kind (inside) raises RegistryError for a kind nobody registered: the test
    # errors, naming the kinds that exist, rather than the kind silently dropping out.
    reason = missing_device_reason(name)
    if reason is not None:
        pytest.skip(reason)
    return name


def _asks_for_suite(conftest: object) -> bool:
    plugins = getattr(conftest, "pytest_plugins", ())
    if isinstance(plugins, str):
        plugins = (plugins,)
    return PLUGIN_NAME in plugins or hasattr(conftest, TARGETS_VARIABLE)


def _anchor_of(config: pytest.Config, path: Path) -> ModuleType | None:
    """The nearest ``conftest.py`` at or above ``path``'s directory that asks for the suite."""
    for directory in (path.parent, *path.parent.parents):
        conftest = config.pluginmanager.get_plugin(str(directory / "conftest.py"))
        if conftest is not None and _asks_for_suite(conftest):
            return conftest  # type: ignore[no-any-return]
    return None


def _split(value: object) -> list[str]:
    if not value:
        return []
    items = [value] if isinstance(value, str) else list(value)  # type: ignore[call-overload]
    names = [part.strip() for item in items for part in str(item).split(",")]
    return list(dict.fromkeys(name for name in names if name))


def _marks(name: str) -> list[pytest.MarkDecorator]:
    try:
        device = extensions.get_target_kind(name).device
    except RegistryError:  # unknown (or a test double): the fixture reports it
        return []
    return [pytest.mark.gpu] if device == "cuda" else []
