"""Named pipelines: ``register_pipeline`` / ``get_pipeline`` (TVM's ``relax.pipeline``).

A pipeline is a factory ``factory(target=None, **options) -> Pass``. Core registers
``"default"`` (the full build pipeline, with fusion), ``"default_build"`` (its alias) and
``"zero"`` (legalize + fuse only) in :mod:`relaxvm.transform.pipelines`; users and plugins add
their own. Targets contribute passes through ``TargetKind.relax_passes``, which the default
pipeline inserts after fusion.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

from ..errors import CompileError
from .pass_infra import Pass

__all__ = ["get_pipeline", "list_pipelines", "register_pipeline"]

PipelineFactory = Callable[..., Pass]
_pipelines: dict[str, PipelineFactory] = {}


def register_pipeline(
    name: str, factory: PipelineFactory | None = None, *, override: bool = False
) -> Any:
    """Register ``factory(target=None, **options) -> Pass`` as pipeline ``name``.

    Usable as ``register_pipeline("mine", factory)`` or as a decorator
    ``@register_pipeline("mine")``.

    Raises
    ------
    CompileError
        ``name`` is taken (unless ``override``) or ``factory`` is not callable.
    """
    if not isinstance(name, str) or not name:
        raise CompileError(f"register_pipeline: name must be a non-empty string, got {name!r}")

    def add(func: PipelineFactory) -> PipelineFactory:
        if not callable(func):
            raise CompileError(f"register_pipeline({name!r}): the factory must be callable")
        if name in _pipelines and not override:
            raise CompileError(
                f"register_pipeline: pipeline {name!r} is already registered "
                "(pass override=True to replace it)"
            )
        _pipelines[name] = func
        return func

    return add if factory is None else add(factory)


def get_pipeline(name: str = "default", target: Any = None, **options: Any) -> Pass:
    """Build the pipeline ``name`` for ``target``.

    Raises
    ------
    CompileError
        No pipeline of that name; the message lists the registered ones.
    """
    _ensure_builtin_pipelines()
    factory = _pipelines.get(name)
    if factory is None:
        close = difflib.get_close_matches(str(name), sorted(_pipelines), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise CompileError(
            f"get_pipeline: unknown pipeline {name!r}; registered pipelines are "
            f"{sorted(_pipelines)}{hint}"
        )
    made = factory(target=target, **options)
    if not isinstance(made, Pass):
        raise CompileError(
            f"get_pipeline: the factory of pipeline {name!r} returned "
            f"{type(made).__name__}, not a Pass"
        )
    return made


def list_pipelines() -> list[str]:
    """The registered pipeline names."""
    _ensure_builtin_pipelines()
    return sorted(_pipelines)


def _ensure_builtin_pipelines() -> None:
    # The built-in pipelines import every pass; load them only when a pipeline is asked for.
    from . import pipelines  # noqa: F401
