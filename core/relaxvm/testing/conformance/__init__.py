"""relaxvm's conformance suite for target kinds, as a pytest plugin.

A target package runs the whole suite (the per-op matrix and the end-to-end models, in both
exec modes) on its targets with one line in its tests' ``conftest.py``::

    pytest_plugins = ["relaxvm.testing.conformance"]

and, optionally, ``relaxvm_conformance_targets = ["mytarget"]`` or ``--relaxvm-target
mytarget`` to restrict it to its own kinds. See ``docs/testing.md``.

Modules
-------
plugin
    The hooks and fixtures (re-exported here, which makes this package the plugin).
cases, cases_tensor
    The op matrix's case table: one :class:`~.cases.OpTemplate` per op variant.
test_ops, test_edges, test_e2e_basic, test_e2e_control
    The shipped test modules, collected by the plugin (never from a tests directory).

Importing this package imports pytest; :mod:`relaxvm.testing` itself does not.
"""

from __future__ import annotations

from .plugin import (
    PLUGIN_NAME,
    SUITE_MODULES,
    TARGETS_VARIABLE,
    ConformanceSuite,
    SuiteModule,
    exec_mode,
    make_vm,
    pytest_addoption,
    pytest_collect_file,
    pytest_configure,
    pytest_generate_tests,
    selected_targets,
    target,
    target_device,
)

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
