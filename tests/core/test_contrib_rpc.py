"""relaxvm.contrib (utils, popen_pool, cc, cblas), relaxvm.rpc.LocalSession and relax.testing.nn."""

from __future__ import annotations

import gc
import math
import operator
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import relaxvm
from relaxvm import relax, tir
from relaxvm.contrib import cblas, cc, popen_pool, utils
from relaxvm.errors import FunctionNotFoundError, RelaxVMError
from relaxvm.ir.relax.block_builder import BlockBuilderError
from relaxvm.relax.testing import nn

# -- package wiring -------------------------------------------------------------------------


def test_rpc_and_contrib_are_lazy_submodules():
    code = (
        "import sys, relaxvm\n"
        "assert 'relaxvm.rpc' not in sys.modules and 'relaxvm.contrib' not in sys.modules\n"
        "assert relaxvm.rpc.LocalSession is not None and 'relaxvm.rpc' in sys.modules\n"
        "assert relaxvm.contrib.utils.tempdir is not None\n"
        "import relaxvm.contrib.cblas, relaxvm.relax.testing.nn\n"
        "assert 'rpc' in dir(relaxvm) and 'contrib' in dir(relaxvm)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- contrib.utils --------------------------------------------------------------------------


def test_tempdir_paths_listing_and_remove():
    temp = utils.tempdir()
    root = temp.temp_dir
    assert root is not None and os.path.isdir(root)
    Path(temp.relpath("a.txt")).write_text("x")
    (temp / "b.txt").write_text("y")
    assert sorted(temp.listdir()) == ["a.txt", "b.txt"]
    assert temp.path == Path(root) and os.fspath(temp) == root
    temp.remove()
    assert not os.path.exists(root)
    temp.remove()  # a second remove does nothing
    with pytest.raises(ValueError, match="removed"):
        temp.relpath("a.txt")


def test_tempdir_is_removed_when_collected_or_leaving_a_with_block():
    temp = utils.tempdir()
    root = temp.temp_dir
    Path(temp.relpath("f")).write_bytes(b"1")
    del temp
    gc.collect()
    assert root is not None and not os.path.exists(root)
    with utils.tempdir() as inner:
        inner_root = inner.temp_dir
        assert inner_root is not None and os.path.isdir(inner_root)
    assert not os.path.exists(inner_root)


def test_tempdir_custom_path_and_keep_for_debug(tmp_path):
    custom = tmp_path / "mine"
    temp = utils.tempdir(custom)
    assert custom.is_dir() and temp.temp_dir == str(custom)
    with pytest.raises(FileExistsError):
        utils.tempdir(custom)  # TVM creates the custom directory; it must not exist
    temp.remove()
    assert not custom.exists()

    kept = utils.tempdir(keep_for_debug=True)
    kept_root = kept.temp_dir
    assert kept.keep_for_debug and "relaxvm-debug-mode-tempdirs" in str(kept_root)
    del kept
    gc.collect()
    assert kept_root is not None and os.path.isdir(kept_root)
    os.rmdir(kept_root)

    with utils.TempDirectory.set_keep_for_debug():
        scoped = utils.tempdir()
    assert scoped.keep_for_debug and not utils.tempdir().keep_for_debug
    scoped_root = scoped.temp_dir
    scoped.remove()
    assert scoped_root is not None and os.path.isdir(scoped_root)
    os.rmdir(scoped_root)


def test_tempdirs_are_removed_at_interpreter_exit():
    code = (
        "from relaxvm.contrib import utils\n"
        "t = utils.tempdir()\n"
        "open(t.relpath('f'), 'w').write('x')\n"
        "utils._keep_alive = t\n"  # alive at exit: only the exit hook can remove it
        "print(t.temp_dir)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    path = done.stdout.strip()
    assert path and not os.path.exists(path)


def test_filelock_and_which(tmp_path):
    with utils.filelock(tmp_path / "lock") as lock:
        assert lock.lock_file is not None
    assert lock.lock_file is None
    sh = utils.which("sh")
    assert sh is not None and os.access(sh, os.X_OK)
    assert utils.which("relaxvm-no-such-program") is None
    assert utils.is_source_path("kernel.cu") and not utils.is_source_path("int f();\nint g();")


# -- rpc.LocalSession -----------------------------------------------------------------------


def _add_module() -> relaxvm.IRModule:
    x = relax.Var("x", relax.TensorStructInfo([4], "float32"))
    y = relax.Var("y", relax.TensorStructInfo([4], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        bb.emit_func_output(bb.emit(relax.op.add(x, y)))
    return bb.get()


def test_local_session_files_round_trip(tmp_path):
    session = relaxvm.rpc.LocalSession()
    source = tmp_path / "data.bin"
    source.write_bytes(b"\x00\x01\x02")
    session.upload(str(source))
    session.upload(b"hello", target="sub/greeting.txt")
    assert session.listdir(".") == "data.bin,sub,"
    assert session.listdir("sub") == "greeting.txt,"
    assert session.download("data.bin") == bytearray(b"\x00\x01\x02")
    assert session.download("sub/greeting.txt") == bytearray(b"hello")
    session.remove("data.bin")
    assert session.listdir() == "sub,"
    with pytest.raises(FileNotFoundError):
        session.download("data.bin")
    with pytest.raises(ValueError, match="target"):
        session.upload(b"x")


@pytest.mark.parametrize("bad", ["../escape", "/etc/passwd", "sub/../../x"])
def test_local_session_stays_inside_its_directory(bad):
    session = relaxvm.rpc.LocalSession()
    with pytest.raises(ValueError, match="session directory"):
        session.upload(b"x", target=bad)
    with pytest.raises(ValueError):
        session.remove(".")


def test_local_session_runs_an_uploaded_executable(tmp_path):
    path = tmp_path / "lib.rvm"
    relaxvm.compile(_add_module(), "llvm").export_library(path)
    session = relaxvm.rpc.LocalSession()
    session.upload(path)
    remote_exec = session.load_module("lib.rvm")
    device = session.cpu()
    assert device == relaxvm.cpu(0) and session.device("cpu", 0) == device
    vm = relaxvm.VirtualMachine(remote_exec, device)
    a = np.arange(4, dtype="float32")
    b = np.full(4, 0.5, dtype="float32")
    out = vm["main"](relaxvm.tensor(a, device), relaxvm.tensor(b, device))
    np.testing.assert_array_equal(out.numpy(), a + b)
    root = session.temp.temp_dir
    del session, remote_exec
    gc.collect()
    assert root is not None and not os.path.exists(root)


def test_local_session_get_function_uses_the_registry():
    name = "test.contrib_rpc.triple"
    relaxvm.register_func(name, lambda v: v * 3, override=True)
    try:
        assert relaxvm.rpc.LocalSession().get_function(name)(5) == 15
    finally:
        relaxvm.remove_global_func(name)
    with pytest.raises(FunctionNotFoundError):
        relaxvm.rpc.LocalSession().get_function(name)


@pytest.mark.parametrize(
    "call",
    [
        lambda rpc: rpc.connect("127.0.0.1", 9090),
        lambda rpc: rpc.connect_tracker("127.0.0.1", 9190),
        lambda rpc: rpc.Server("127.0.0.1"),
        lambda rpc: rpc.Tracker("127.0.0.1"),
        lambda rpc: rpc.PopenSession("minrpc"),
    ],
)
def test_remote_rpc_raises_and_points_to_local_session(call):
    with pytest.raises(relaxvm.rpc.RPCNotSupportedError, match="LocalSession") as info:
        call(relaxvm.rpc)
    # Not a RuntimeError: code expecting a remote call's RuntimeError must not pass by accident.
    assert isinstance(info.value, RelaxVMError) and not isinstance(info.value, RuntimeError)


# -- contrib.popen_pool ---------------------------------------------------------------------


def test_popen_worker_runs_in_a_fresh_process_and_reports_failures():
    worker = popen_pool.PopenWorker()
    try:
        worker.send(os.getpid)
        child = worker.recv()
        assert child != os.getpid() and worker.is_alive()
        worker.send(operator.add, (2, 3))
        assert worker.recv() == 5
        worker.send(math.sqrt, (-1.0,))
        with pytest.raises(ValueError, match="math domain"):
            worker.recv()
        worker.send(time.sleep, (30,), timeout=0.3)
        with pytest.raises(TimeoutError):
            worker.recv()
        assert not worker.is_alive()
        worker.send(os._exit, (3,))
        with pytest.raises(ChildProcessError):
            worker.recv()
        worker.send(os.getpid)  # restarted lazily
        assert worker.recv() not in (child, os.getpid())
    finally:
        worker.kill()


def test_popen_worker_initializer_and_maximum_uses(tmp_path):
    worker = popen_pool.PopenWorker(os.chdir, (str(tmp_path),), maximum_uses=1)
    try:
        worker.send(os.getcwd)
        assert os.path.samefile(worker.recv(), tmp_path)
        worker.send(os.getpid)
        first = worker.recv()
        worker.send(os.getpid)
        assert worker.recv() != first  # one task per process
    finally:
        worker.kill()


def test_popen_pool_executor_submit_and_map():
    with popen_pool.PopenPoolExecutor(max_workers=2, timeout=5) as pool:
        futures = [pool.submit(operator.mul, i, 10) for i in range(4)]
        assert [f.result() for f in futures] == [0, 10, 20, 30]
        results = list(pool.map_with_error_catching(math.sqrt, [4.0, -1.0]))
    assert results[0] == popen_pool.MapResult(popen_pool.StatusKind.COMPLETE, 2.0)
    assert results[1].status == popen_pool.StatusKind.EXCEPTION
    assert isinstance(results[1].value, ValueError)


# -- contrib.cc -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["create_shared", "create_staticlib", "create_executable"])
def test_cc_compilers_raise_with_advice(name):
    with pytest.raises(cc.CompilerNotSupportedError, match="export_library"):
        getattr(cc, name)("out", ["a.o"])


# -- contrib.cblas --------------------------------------------------------------------------


@pytest.mark.parametrize(("transa", "transb"), [(False, False), (True, False), (False, True)])
def test_cblas_matmul_through_emit_te(transa, transb):
    n, m = tir.Var("n", "int64"), tir.Var("m", "int64")
    x = relax.Var("x", relax.TensorStructInfo([m, n] if transa else [n, m], "float32"))
    y = relax.Var("y", relax.TensorStructInfo([n, m] if transb else [m, n], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        out = bb.emit_te(cblas.matmul, x, y, transa=transa, transb=transb)
        bb.emit_func_output(out)
    mod = bb.get()
    call = mod["main"].body.blocks[0].bindings[0].value
    assert call.args[0].name_hint == "matmul"
    assert list(call.sinfo_args[0].shape.values) == [n, n]
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3), dtype="float32")
    b = rng.standard_normal((3, 2), dtype="float32")
    a_in, b_in = (a.T.copy() if transa else a), (b.T.copy() if transb else b)
    vm = relaxvm.VirtualMachine(relaxvm.compile(mod, "llvm"), relaxvm.cpu())
    got = vm["main"](relaxvm.tensor(a_in), relaxvm.tensor(b_in)).numpy()
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-6)


def test_cblas_batch_matmul():
    x = relax.Var("x", relax.TensorStructInfo([2, 3, 4], "float32"))
    y = relax.Var("y", relax.TensorStructInfo([2, 5, 4], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        bb.emit_func_output(bb.emit_te(cblas.batch_matmul, x, y, transb=True))
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 3, 4), dtype="float32")
    b = rng.standard_normal((2, 5, 4), dtype="float32")
    vm = relaxvm.VirtualMachine(relaxvm.compile(bb.get(), "llvm"), relaxvm.cpu())
    got = vm["main"](relaxvm.tensor(a), relaxvm.tensor(b)).numpy()
    np.testing.assert_allclose(got, a @ b.transpose(0, 2, 1), rtol=1e-5, atol=1e-6)


# -- relax.testing.nn and BlockBuilder.current ----------------------------------------------


def test_block_builder_current_follows_function_scopes():
    assert relax.BlockBuilder.current() is None
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo([2], "float32"))
    with bb.function("f", [x]):
        assert relax.BlockBuilder.current() is bb
        bb.emit_func_output(x)
    assert relax.BlockBuilder.current() is None
    with pytest.raises(RuntimeError, match="boom"), bb.function("g", [x]):
        raise RuntimeError("boom")
    assert relax.BlockBuilder.current() is None


def test_nn_vars_are_plain_relax_vars_with_unique_names():
    outside = nn.Placeholder((2, 3), name="data")
    assert type(outside) is relax.Var and isinstance(outside, nn.Placeholder)
    assert not isinstance(outside, nn.Parameter)
    assert not isinstance(relax.Var("v", relax.ObjectStructInfo()), nn.Placeholder)
    assert not isinstance(None, nn.Parameter) and not isinstance(None, nn.Placeholder)
    assert outside.struct_info.dtype == "float32"
    with pytest.raises(TypeError, match="list or a tuple"):
        nn.Parameter(3)
    bb = relax.BlockBuilder()
    with bb.function("f"):
        first = nn.Parameter((2,), name="w")
        second = nn.Parameter((2,), dtype="float16", name="w")
        assert (first.name_hint, second.name_hint) == ("w", "w1")
        assert second.struct_info.dtype == "float16"
        bb.emit_func_output(first, params=[first, second])


def test_nn_module_parameters_and_init_params():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3, bias=False))
    params = model.parameters()
    assert [p.name_hint for p in params] == ["linear_weight", "linear_bias", "linear_weight"]
    assert [list(p.struct_info.shape.values) for p in params] == [[4, 8], [8], [8, 3]]
    bb = relax.BlockBuilder()
    with bb.function("main"):
        data = nn.Placeholder((1, 4), name="data")
        bb.emit_func_output(model(data), params=[data, *params])
    values = nn.init_params(bb.get())
    assert [v.shape for v in values] == [(4, 8), (8,), (8, 3)]
    assert all(not v.numpy().any() and v.dtype == "float32" for v in values)

    n = tir.Var("n", "int64")
    bb = relax.BlockBuilder()
    with bb.function("main"):
        w = nn.Parameter((n,), name="w")
        bb.emit_func_output(w, params=[w])
    with pytest.raises(TypeError, match="unknown shape"):
        nn.init_params(bb.get())


def test_nn_mlp_matches_numpy():
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3), nn.LogSoftmax())
    bb = relax.BlockBuilder()
    with bb.function("main"):
        data = nn.Placeholder((2, 4), name="data")
        out = model(data)
        bb.emit_func_output(out, params=[data, *model.parameters()])
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 4), dtype="float32")
    w1, b1 = rng.standard_normal((4, 6), dtype="float32"), rng.standard_normal(6, dtype="float32")
    w2, b2 = rng.standard_normal((6, 3), dtype="float32"), rng.standard_normal(3, dtype="float32")
    vm = relaxvm.VirtualMachine(relaxvm.compile(bb.get(), "llvm"), relaxvm.cpu())
    got = vm["main"](*(relaxvm.tensor(v) for v in (x, w1, b1, w2, b2))).numpy()
    logits = np.maximum(x @ w1 + b1, 0) @ w2 + b2
    shifted = logits - logits.max(axis=1, keepdims=True)
    expected = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_nn_emit_needs_an_open_function_scope():
    x = relax.Var("x", relax.TensorStructInfo([2], "float32"))
    with pytest.raises(BlockBuilderError, match="bb.function"):
        nn.emit(relax.op.add(x, x))
    with pytest.raises(BlockBuilderError, match="bb.function"):
        nn.ReLU()(x)
    bb = relax.BlockBuilder()
    with bb.function("f", [x]):
        y = nn.emit(relax.op.add(x, x), name_hint="doubled")
        assert y.name_hint == "doubled"
        bb.emit_func_output(y)
