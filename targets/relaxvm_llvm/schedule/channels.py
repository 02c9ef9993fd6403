"""Convolutions tiled over output channels: the ``NCHW`` reduction seen as a matmul whose
columns are the channels and whose rows are the output pixels.

The default tile runs along the output's last axis (``x`` of ``Y[b, oc, y, x]``). For a
convolution that axis is often a poor vector axis: with stride 2 the input is read with a
stride along it (every vector load a gather), and deep in a network it is narrow (4 or 8
pixels, a fraction of an AVX-512 tile). The output channels are neither: the weight
``W[oc, rc, ry, rx]`` packs into contiguous channel vectors (as ``W`` of a dense ``x @ W.T``)
and the input pixel is one broadcast per row. So the stage is rewritten as

    for b, p, oc:  S[b, p, oc] = sum_{rc, ry, rx} In[b, rc, f(p // X) + ry, g(p % X) + rx]
                                                  * W[oc, rc, ry, rx]

with the pixel axes after the channel fused into one row axis ``p`` (so a tile's rows do not
depend on the image width), tiled by :mod:`.tile` with ``W`` packed. A second, injective
stage then writes the output in its own layout, ``Y[b, oc, y, x] = epilogue(S[b, y * X + x,
oc])`` (bias, activation, residual applied there): one pass over the output, where storing
each tile straight into ``NCHW`` would scatter every lane (slow to compile, and no faster).
The sums keep their order, so results equal the default schedule's up to FMA contraction.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from relaxvm.ir import IntImm, PrimExpr, Var
from relaxvm.ir.expr_functor import free_vars, substitute
from relaxvm.ir.op import floordiv, floormod
from relaxvm.ir.tir import Buffer, BufferStore, For, ForKind, Stmt, seq
from relaxvm.ir.tir.stage_epilogue import Epilogue
from relaxvm.ir.tir.stages import (
    COMBINE,
    Stage,
    loads_of,
    parse_stage,
    static_extent,
    vector_access,
)

from .config import CpuConfig
from .plan import TilePlan, plan_tile, transposed_operand

__all__ = ["ChannelTiles", "channel_tiles"]

#: Spatial loops after the channel axis that fuse into the row axis (``y, x`` of NCHW).
MIN_PIXEL_AXES = 2


def _channel_axis(stage: Stage) -> int | None:
    """The position of the channel loop: the outermost spatial loop, with at least two loops
    after it, along which some load is a packable weight (strided along it, contiguous along
    the innermost reduction, reading nothing but it and the reduction variables)."""
    assert stage.init is not None
    for position, loop in enumerate(stage.loops[:-MIN_PIXEL_AXES]):
        probe = Buffer("channel_probe", [loop.extent], stage.init.buffer.dtype)
        trial = replace(stage, init=BufferStore(probe, stage.init.value, [loop.loop_var]))
        if transposed_operand(trial) is not None:
            return position
    return None


def _poor_columns(stage: Stage, config: CpuConfig) -> bool:
    """Whether the default tile along the output's last axis would be slow: some input is
    read with a stride along it (gathers), or it is narrower than one vector. (A row of one
    or two vectors is still a fair tile, and the channel tiles take longer to compile.)"""
    assert stage.init is not None and stage.source is not None
    col = stage.init.indices[-1]
    assert isinstance(col, Var)
    if any(vector_access(load, col) == "strided" for load in loads_of(stage.source)):
        return True
    extent = static_extent(stage.loops[-1].extent)
    return extent is not None and extent < config.lanes(stage.init.buffer.dtype)


@dataclass
class ChannelTiles:
    """A convolution rewritten to tile over its output channels: the reduction into the
    scratch ``S[..., pixel, channel]`` and its tile plan, then the stage that stores the
    epilogue into the original output from ``S``."""

    stage: Stage
    plan: TilePlan
    scratch: Buffer
    copy: Stage


def channel_tiles(stage: Stage, epilogue: Epilogue, config: CpuConfig) -> ChannelTiles | None:
    """The convolution ``stage`` rewritten to tile over output channels (module docstring);
    None when the stage is not of that form or its default tile is good enough."""
    if stage.kind != "reduction" or stage.combiner != "sum" or stage.condition is not None:
        return None
    assert stage.init is not None and stage.source is not None
    if not config.pack or len(stage.loops) < MIN_PIXEL_AXES + 1:
        return None
    if stage.init.indices[-1] is not stage.loops[-1].loop_var:
        return None
    if not _poor_columns(stage, config):
        return None
    position = _channel_axis(stage)
    if position is None:
        return None
    channel = stage.loops[position]
    channels = static_extent(channel.extent)
    if channels is None or channels < config.lanes(stage.init.buffer.dtype):
        return None  # not one full vector of channels: the default tile is no worse
    before, pixels = stage.loops[:position], stage.loops[position + 1 :]
    maybe = [static_extent(loop.extent) for loop in pixels]
    extents = [extent for extent in maybe if extent is not None]
    if len(extents) != len(pixels):
        return None
    # The input must move with the pixels and not with the channel (it is the broadcast
    # operand); the output must be written once per (pixel, channel).
    pixel_vars = {loop.loop_var for loop in pixels}
    reads_pixels = [load for load in loads_of(stage.source) if set(free_vars(load)) & pixel_vars]
    if not reads_pixels or any(channel.loop_var in free_vars(load) for load in reads_pixels):
        return None
    dtype = str(pixels[-1].loop_var.dtype)
    row = Var("pixel", dtype)
    mapping: dict[Var, PrimExpr] = {}
    stride = 1
    for loop, extent in zip(reversed(pixels), reversed(extents), strict=True):
        quotient = floordiv(row, stride) if stride > 1 else row
        is_outer = loop is pixels[0]
        mapping[loop.loop_var] = quotient if is_outer else floormod(quotient, extent)
        stride *= extent
    spatial = [*(loop.loop_var for loop in before), row, channel.loop_var]
    shape: list[PrimExpr] = [loop.extent for loop in before]
    shape += [IntImm(str(row.dtype), stride), channel.extent]
    scratch = Buffer(f"{stage.init.buffer.name}_by_channel", shape, stage.init.buffer.dtype)
    value = substitute(stage.source, mapping)
    update: Stmt = BufferStore(
        scratch, COMBINE[stage.combiner](scratch[tuple(spatial)], value), spatial
    )
    for loop in reversed(stage.reduce_loops):
        update = For(loop.loop_var, 0, loop.extent, ForKind.SERIAL, update)
    body: Stmt = seq(BufferStore(scratch, substitute(stage.init.value, mapping), spatial), update)
    loops = [(loop.loop_var, loop.extent) for loop in before]
    loops += [(row, shape[-2]), (channel.loop_var, channel.extent)]
    for var, bound in reversed(loops):
        body = For(var, 0, bound, ForKind.SERIAL, body)
    new_stage = parse_stage(body)
    if new_stage.kind != "reduction":
        return None
    direct = Epilogue(scratch, tuple(spatial), epilogue.acc, epilogue.acc, [], [])
    plan = plan_tile(new_stage, direct, config, dense=True)
    if plan is None or plan.row_var is not row:
        return None
    return ChannelTiles(new_stage, plan, scratch, _copy_out(stage, epilogue, scratch))


def _copy_out(stage: Stage, epilogue: Epilogue, scratch: Buffer) -> Stage:
    """The stage storing ``epilogue`` (the original output and its inlined consumers) from
    the channel-major scratch ``S[..., pixel, channel]``, in the original loop order."""
    fresh = {loop.loop_var: Var(loop.loop_var.name, loop.loop_var.dtype) for loop in stage.loops}
    position = len(scratch.shape) - 2
    before = [fresh[loop.loop_var] for loop in stage.loops[:position]]
    channel = fresh[stage.loops[position].loop_var]
    pixel: PrimExpr = fresh[stage.loops[position + 1].loop_var]
    for loop in stage.loops[position + 2 :]:
        pixel = pixel * loop.extent + fresh[loop.loop_var]
    element = scratch[tuple([*before, pixel, channel])]
    value = substitute(epilogue.value, {**fresh, epilogue.acc: element})
    indices = [substitute(index, fresh) for index in epilogue.indices]
    body: Stmt = BufferStore(epilogue.buffer, value, indices)
    for loop in reversed(stage.loops):
        body = For(fresh[loop.loop_var], 0, loop.extent, ForKind.SERIAL, body)
    return parse_stage(body)
