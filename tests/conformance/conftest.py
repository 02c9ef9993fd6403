"""Run relaxvm's shipped conformance suite (:mod:`relaxvm.testing.conformance`) here.

The plugin is loaded for the whole repository by ``-p relaxvm.testing.conformance`` in
``pyproject.toml`` (pytest allows ``pytest_plugins`` only in a top-level conftest); defining
``relaxvm_conformance_targets`` is what collects the suite in this directory. It runs on every
registered target kind and on ``interp``, the TIR-interpreter test double, which checks the
compiler and VM independently of any code generator. ``--relaxvm-target NAME`` narrows it.
"""

from __future__ import annotations

from relaxvm.testing import real_target_kinds

relaxvm_conformance_targets = [*real_target_kinds(), "interp"]
