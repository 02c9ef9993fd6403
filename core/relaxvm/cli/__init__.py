"""The ``relaxvm`` command: ``compile``, ``run``, ``bench``, ``inspect``, ``plugins``, ``demo``.

:mod:`~relaxvm.cli.commands` parses the command line and holds the commands that read
executables; :mod:`~relaxvm.cli.build` the ones that compile model files;
:mod:`~relaxvm.cli.demo` is the main job the README runs.
"""

from __future__ import annotations

from .commands import main

__all__ = ["main"]
