"""Names (without the ``relax.`` prefix) of the unary/binary math, bitwise and shift ops legalized here, for :mod:`.catalog`."""

from __future__ import annotations

NAMES = (
    "sin cos tan asin acos atan sinh cosh asinh acosh atanh sign square trunc "
    "isnan isinf isfinite bitwise_not "
    "mod floor_mod bitwise_and bitwise_or bitwise_xor left_shift right_shift"
)
