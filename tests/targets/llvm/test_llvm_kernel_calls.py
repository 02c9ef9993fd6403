"""Kernel calls: relaxvm.Tensor and numpy arguments, and every argument check."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import relaxvm_llvm
from relaxvm.errors import RelaxVMError
from relaxvm.ir import Var
from relaxvm.ir.tir import Buffer, BufferStore, For, ForKind, PrimFunc, te
from relaxvm.runtime import tensor
from relaxvm_llvm.errors import LLVMBuildError


@pytest.fixture(scope="module")
def module() -> Any:
    n, m = Var("n"), Var("m")
    a = te.placeholder((n, m), "float32", name="A")
    b = te.placeholder((n, m), "float32", name="B")
    c = te.compute((n, m), lambda i, j: a[i, j] + b[i, j], name="C")
    add = te.create_prim_func([a, b, c], name="add")
    x = te.placeholder((4,), "int64", name="X")
    twice = te.compute((8,), lambda i: x[i % 4] * 2, name="Y")
    tile = te.create_prim_func([x, twice], name="tile")
    k = Var("k", "int32")
    buf = Buffer("V", (k,), "int32")
    i = Var("i", "int32")
    body = For(i, 0, k, ForKind.SERIAL, BufferStore(buf, i * 3, [i]))
    count = PrimFunc([buf, k], body, attrs={"global_symbol": "count"})
    return relaxvm_llvm.build({"add": add, "tile": tile, "count": count})


def test_tensor_and_numpy_arguments(module: Any) -> None:
    a = np.arange(12, dtype="float32").reshape(3, 4)
    b = np.ones((3, 4), "float32")
    out = tensor(np.zeros((3, 4), "float32"))
    module["add"](tensor(a), tensor(b), out)
    np.testing.assert_array_equal(out.numpy(), a + 1)
    out_np = np.zeros((3, 4), "float32")
    module["add"](a, tensor(b), out_np)  # mixed
    np.testing.assert_array_equal(out_np, a + 1)


def test_tensor_views_use_their_byte_offset(module: Any) -> None:
    whole = tensor(np.arange(16, dtype="int64"))
    view = whole.view((4,), relative_byte_offset=8 * 4)
    out = tensor(np.zeros(8, "int64"))
    module["tile"](view, out)
    np.testing.assert_array_equal(out.numpy(), np.tile(np.arange(4, 8), 2) * 2)


def test_scalar_parameter_that_is_also_a_shape(module: Any) -> None:
    v = np.zeros(5, "int32")
    module["count"](v, 5)
    np.testing.assert_array_equal(v, np.arange(5) * 3)
    module["count"](v, np.int64(5))  # numpy integers are accepted (slow path)
    with pytest.raises(
        ValueError,
        match=r"'count': parameter 'V' dim 0 must be `k` = 4 "
        r"\(bound by scalar parameter 'k'\), but the argument has 5",
    ):
        module["count"](v, 4)


@pytest.mark.parametrize(
    ("args", "error", "pattern"),
    [
        (lambda: [np.zeros((3, 4), "float32")] * 2, TypeError, r"'add': expected 3 arguments"),
        (
            lambda: [
                np.zeros((3, 4), "float32"),
                np.zeros((3, 4), "float32"),
                np.zeros(12, "float32"),
            ],
            ValueError,
            r"'add': parameter 'C' is 2-d but the argument has shape \(12,\)",
        ),
        (
            lambda: [
                np.zeros((3, 4), "float32"),
                np.zeros((3, 4), "float64"),
                np.zeros((3, 4), "float32"),
            ],
            TypeError,
            r"'add': parameter 'B' holds float32 but the argument is float64",
        ),
        (
            lambda: [
                np.zeros((3, 4), "float32"),
                np.zeros((3, 5), "float32"),
                np.zeros((3, 4), "float32"),
            ],
            ValueError,
            r"'add': parameter 'B' dim 1 must be `m` = 4 \(bound by parameter 'A' dim 1\)",
        ),
        (
            lambda: [np.zeros((3, 4), "float32"), [[0.0] * 4] * 3, np.zeros((3, 4), "float32")],
            TypeError,
            r"'add': parameter 'B' needs a relaxvm.Tensor or numpy array, got list",
        ),
        (
            lambda: [
                np.zeros((4, 3), "float32").T,
                np.zeros((3, 4), "float32"),
                np.zeros((3, 4), "float32"),
            ],
            ValueError,
            r"'add': parameter 'A' needs a C-contiguous array",
        ),
        (
            lambda: [
                tensor(np.zeros((3, 4), "int32")),
                np.zeros((3, 4), "float32"),
                np.zeros((3, 4), "float32"),
            ],
            TypeError,
            r"'add': parameter 'A' holds float32 but the argument is int32",
        ),
    ],
)
def test_bad_arguments_raise_before_native_code(
    module: Any, args: Any, error: type, pattern: str
) -> None:
    values = args()
    with pytest.raises(error, match=pattern) as info:
        module["add"](*values)
    assert isinstance(info.value, RelaxVMError)


def test_bad_scalar_arguments(module: Any) -> None:
    v = np.zeros(5, "int32")
    with pytest.raises(TypeError, match=r"'count': scalar parameter 'k' needs an int, got float"):
        module["count"](v, 5.0)
    with pytest.raises(TypeError, match="needs an int, got bool"):
        module["count"](v, True)
    with pytest.raises(
        ValueError, match=r"scalar parameter 'k' = 4294967296 does not fit in int32"
    ):
        module["count"](v, 1 << 32)


def test_outputs_untouched_when_checks_fail(module: Any) -> None:
    out = np.full((3, 4), 7.0, "float32")
    with pytest.raises(ValueError):
        module["add"](np.zeros((3, 4), "float32"), np.zeros((2, 4), "float32"), out)
    assert (out == 7.0).all()


def test_kernel_metadata(module: Any) -> None:
    kernel = module["add"]
    assert kernel.name == "add"
    assert [p.name for p in kernel.signature.params] == ["A", "B", "C"]
    assert "add" in repr(kernel)
    assert module.list_functions() == ["add", "count", "tile"]


def test_unsupported_constructs_name_the_kernel() -> None:
    n = Var("n")
    a = Buffer("A", (n,), "float32")
    i = Var("i")
    gpu = For(
        i, 0, n, ForKind.THREAD_BINDING, BufferStore(a, 1.0, [i]), thread_binding="threadIdx.x"
    )
    func = PrimFunc([a], gpu, attrs={"global_symbol": "gpu_only"})
    with pytest.raises(LLVMBuildError, match=r"kernel 'gpu_only'.*threadIdx.x.*GPU target"):
        relaxvm_llvm.build(func)
    free = Var("free")
    loose = PrimFunc(
        [a],
        For(i, 0, n, ForKind.SERIAL, BufferStore(a, 1.0, [free])),
        attrs={"global_symbol": "loose"},
    )
    with pytest.raises(LLVMBuildError, match=r"kernel 'loose'.*'free' is used but not defined"):
        relaxvm_llvm.build(loose)
    # The process is fine and later builds work.
    ok = PrimFunc(
        [a], For(i, 0, n, ForKind.SERIAL, BufferStore(a, 1.0, [i])), attrs={"global_symbol": "ok"}
    )
    out = np.zeros(3, "float32")
    relaxvm_llvm.build(ok)["ok"](out)
    assert (out == 1.0).all()


def test_bad_fastmath_attribute() -> None:
    with pytest.raises(LLVMBuildError, match="fastmath flags"):
        relaxvm_llvm.build({}, {"fastmath": "nnan,fastest"})


def test_concurrent_builds() -> None:
    import threading

    results: list[Any] = []

    def work(k: int) -> None:
        try:
            a = te.placeholder((8,), "int32", name="A")
            b = te.compute((8,), lambda i: a[i] + k, name="B")
            module = relaxvm_llvm.build(te.create_prim_func([a, b], name=f"plus{k}"))
            out = np.zeros(8, "int32")
            module[f"plus{k}"](np.arange(8, dtype="int32"), out)
            results.append((k, out))
        except BaseException as err:
            results.append((k, err))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert len(results) == 6
    for k, out in results:
        np.testing.assert_array_equal(out, np.arange(8) + k)


def test_zero_dim_buffer_and_repeated_shape_variable() -> None:
    a = Buffer("A", (), "float32")
    n = Var("n")
    o = Buffer("O", (n, n), "float32")
    i, j = Var("i"), Var("j")
    body = For(
        i, 0, n, ForKind.SERIAL, For(j, 0, n, ForKind.SERIAL, BufferStore(o, a[()] * 2.0, [i, j]))
    )
    module = relaxvm_llvm.build(PrimFunc([a, o], body, attrs={"global_symbol": "fill"}))
    out = np.zeros((3, 3), "float32")
    module["fill"](np.array(1.5, "float32"), out)
    assert (out == 3.0).all()
    module["fill"](tensor(np.array(2.5, "float32")), out)
    assert (out == 5.0).all()
    with pytest.raises(
        ValueError, match=r"'O' dim 1 must be `n` = 3 \(bound by parameter 'O' dim 0\)"
    ):
        module["fill"](np.array(1.5, "float32"), np.zeros((3, 4), "float32"))
