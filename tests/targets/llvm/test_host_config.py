"""Host-aware code generation: the CPU configuration the schedules use comes from the host
(vector width, registers, sysfs cache sizes), target attributes override it, bad attributes
are refused naming themselves, and the choice is recorded in exports for ``relaxvm inspect``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from relaxvm.target import Target, TargetError
from relaxvm_llvm.schedule import config as config_module
from relaxvm_llvm.schedule import cpu_config, host, schedule_prim_func
from relaxvm_llvm.schedule import workloads as wl

HOST_WIDTH = cpu_config(None).vector_bits


def _cache_dir(root: Path, entries: list[tuple[str, str, str]]) -> Path:
    """A fake sysfs ``cpu0/cache`` directory: one ``index*`` per (level, type, size)."""
    for number, (level, kind, size) in enumerate(entries):
        index = root / f"index{number}"
        index.mkdir(parents=True)
        (index / "level").write_text(level + "\n")
        (index / "type").write_text(kind + "\n")
        (index / "size").write_text(size + "\n")
    return root


# -- sysfs --------------------------------------------------------------------------------------


def test_read_cache_sizes_from_a_sysfs_directory(tmp_path: Path) -> None:
    root = _cache_dir(
        tmp_path,
        [("1", "Data", "48K"), ("1", "Instruction", "32K"), ("2", "Unified", "2048K"),
         ("3", "Unified", "36608K")],
    )  # fmt: skip
    assert host.read_cache_sizes(root) == host.CacheSizes(48 * 1024, 2 << 20)


def test_read_cache_sizes_skips_what_it_cannot_read(tmp_path: Path) -> None:
    root = _cache_dir(tmp_path, [("1", "Instruction", "32K"), ("2", "Unified", "lots")])
    (root / "index9").mkdir()  # no files at all
    assert host.read_cache_sizes(root) == host.CacheSizes(None, None)
    assert host.read_cache_sizes(tmp_path / "absent") == host.CacheSizes(None, None)


@pytest.mark.parametrize(
    ("text", "size"),
    [("32K", 32768), ("1024K", 1 << 20), ("2M", 2 << 20), ("512", 512), ("1MiB", 1 << 20),
     ("", None), ("K", None), ("-4K", None), ("0K", None), ("12Q", None)],
)  # fmt: skip
def test_parse_size(text: str, size: int | None) -> None:
    assert host.parse_size(text) == size


def test_cache_sizes_reach_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host, "host_cache_sizes", lambda: host.CacheSizes(48 << 10, 2 << 20))
    config = cpu_config(None)
    # The blocking assumes half the reported L2 (CpuConfig.l2_bytes).
    assert (config.l1_bytes, config.l2_bytes, config.l2_cache_bytes) == (48 << 10, 1 << 20, 2 << 20)
    assert "L2 1 MiB of 2 MiB, L1d 48 KiB" in config.describe()
    monkeypatch.setattr(host, "host_cache_sizes", lambda: host.CacheSizes())
    config = cpu_config(None)  # nothing reported: the defaults
    assert (config.l1_bytes, config.l2_bytes, config.l2_cache_bytes) == (32 << 10, 512 << 10, None)


def test_this_host_keeps_its_kernels() -> None:
    """On a host whose sysfs reports a 1 MiB L2 (or none), the blocking stays at 512 KiB and
    the register tile is the one the schedules used before they read the host."""
    config = cpu_config(None)
    reported = host.host_cache_sizes().l2_bytes
    expected_l2 = max(64 << 10, reported // 2) if reported else 512 << 10
    assert config.l2_bytes == expected_l2
    assert config.register_tile == ((8, 2) if config.vector_registers == 32 else (6, 2))
    assert config.pack and not config.overridden


def test_aarch64_host_gets_neon(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host, "host_arch", lambda: "aarch64")
    monkeypatch.setattr(host, "host_cpu", lambda: ("neoverse-n1", "+neon,+fp-armv8"))
    config = cpu_config(None)
    assert (config.arch, config.isa, config.vector_bits) == ("aarch64", "neon", 128)
    assert config.vector_registers == 32 and config.register_tile == (8, 2)
    assert config.lanes("float32") == 4
    with pytest.raises(TargetError, match=r"-vector-bits='256'.*128-bit vectors at most"):
        cpu_config(Target("llvm -vector-bits=256"))


@pytest.mark.parametrize(
    ("cpu", "features", "bits", "isa"),
    [("cascadelake", "", 512, "avx512"), ("haswell", "", 256, "avx2"),
     ("sandybridge", "+avx,+sse4.2", 256, "avx"), ("x86-64", "+sse2", 128, "sse"),
     ("skylake-avx512", "-avx512f,+avx2", 256, "avx2")],
)  # fmt: skip
def test_vector_width_from_cpu(cpu: str, features: str, bits: int, isa: str) -> None:
    if host.host_arch() != "x86-64":
        pytest.skip("x86-64 CPU names")
    config = cpu_config({"mcpu": cpu, "mattr": features})
    assert (config.vector_bits, config.isa) == (bits, isa)


# -- overrides --------------------------------------------------------------------------------


def test_overrides_from_the_target_string() -> None:
    if HOST_WIDTH < 256:
        pytest.skip("the host has no 256-bit vectors")
    config = cpu_config(Target("llvm -vector-bits=256 -tile=4x3 -l2-bytes=1048576 -pack=0"))
    assert (config.vector_bits, config.vector_registers, config.tile) == (256, 16, (4, 3))
    assert (config.l2_bytes, config.pack) == (1 << 20, False)
    assert set(config.overridden) == {"vector-bits", "tile", "l2-bytes", "pack"}
    text = config.describe()
    assert "(256-bit vectors, 16 registers), register tile 4x3, L2 1 MiB," in text
    assert "pack off" in text and "set by the target" in text


def test_overrides_from_a_dict_target() -> None:
    config = cpu_config(
        Target({"kind": "llvm", "vector_bits": 128, "tile": (3, 2), "l2_bytes": "256K",
                "l1-bytes": "48K", "pack": "on", "num_threads": 3})
    )  # fmt: skip
    assert (config.vector_bits, config.tile, config.l2_bytes) == (128, (3, 2), 256 << 10)
    assert (config.l1_bytes, config.pack, config.num_threads) == (48 << 10, True, 3)


@pytest.mark.parametrize(
    ("target", "attr"),
    [("llvm -vector-bits=1024", "-vector-bits='1024'"),
     ("llvm -vector-bits=wide", "-vector-bits='wide'"),
     ("llvm -mcpu=haswell -vector-bits=512", "-vector-bits='512'"),
     ("llvm -tile=4", "-tile='4'"),
     ("llvm -tile=0x2", "-tile='0x2'"),
     ("llvm -tile=axb", "-tile='axb'"),
     ("llvm -vector-bits=128 -tile=8x2", "-tile='8x2'"),  # 19 registers of 16
     ("llvm -l2-bytes=12", "-l2-bytes='12'"),
     ("llvm -l2-bytes=big", "-l2-bytes='big'"),
     ("llvm -l1-bytes=-1", "-l1-bytes='-1'"),
     ("llvm -pack=maybe", "-pack='maybe'"),
     ("llvm -num-threads=0", "-num-threads='0'"),
     ("llvm -vectorbits=256", "unknown attribute -vectorbits='256'")],
)  # fmt: skip
def test_bad_attributes_are_refused_by_name(target: str, attr: str) -> None:
    with pytest.raises(TargetError) as info:
        cpu_config(Target(target))
    assert attr in str(info.value)


def test_a_flag_without_value_is_refused() -> None:
    with pytest.raises(TargetError, match=r"-tile=True is not valid"):
        cpu_config(Target("llvm -tile"))
    assert cpu_config(Target("llvm -pack")).pack is True  # a bare flag means on


def test_vector_bits_wider_than_the_host_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host, "host_arch", lambda: "x86-64")
    monkeypatch.setattr(host, "host_cpu", lambda: ("haswell", "+avx,+avx2,+fma,-avx512f"))
    with pytest.raises(TargetError, match=r"CPU 'haswell' has 256-bit vectors at most"):
        cpu_config({"vector-bits": 512})  # attributes alone: no host mattr default


def test_the_build_refuses_bad_attributes_too() -> None:
    from relaxvm_llvm.target import build

    with pytest.raises(TargetError, match="unknown attribute -fastmaths"):
        build(wl.add((4, 4)), Target("llvm -fastmaths=1"))
    with pytest.raises(TargetError, match="-fast-math='fast' is not valid: expected a boolean"):
        build(wl.add((4, 4)), Target("llvm -fast-math=fast"))


def test_the_plugin_declares_every_attribute() -> None:
    from relaxvm.registry import get_target_kind

    assert set(get_target_kind("llvm").options) == set(config_module.TARGET_ATTRS)


def test_describe_host() -> None:
    import relaxvm_llvm

    data = relaxvm_llvm.describe_host()
    assert data["text"] == cpu_config(None).describe()
    assert data["vector_bits"] == HOST_WIDTH and data["tile"] == list(cpu_config(None).tile or ())
    assert data["l2_bytes_source"] in ("sysfs", "default")
    assert data["text"].startswith(f"llvm schedule: {data['arch']} ")


# -- the overrides reach the schedule and the code --------------------------------------------


def test_tile_and_pack_reach_the_schedule() -> None:
    if HOST_WIDTH < 256:
        pytest.skip("the host has no 256-bit vectors")
    func = wl.matmul(64, 80, 96)
    text = schedule_prim_func(func, Target("llvm -vector-bits=256 -tile=4x3")).script()
    assert "T_matmul_acc = T.alloc_buffer((T.int64(4), T.int64(24))" in text  # 4 x 3*8
    assert "B_packed" in text
    text = schedule_prim_func(func, Target("llvm -vector-bits=256 -tile=4x3 -pack=0")).script()
    assert "T_matmul_acc = T.alloc_buffer((T.int64(4), T.int64(24))" in text
    assert "B_packed" not in text


def _matmul_module():  # type: ignore[no-untyped-def]
    from relaxvm.script import ir as I
    from relaxvm.script import relax as R

    @I.ir_module
    class Matmul:
        @R.function
        def main(a: R.Tensor((64, 96), "float32"), b: R.Tensor((96, 80), "float32")):
            return R.nn.relu(R.matmul(a, b))

    return Matmul


@pytest.mark.parametrize("pack", ["1", "0"])
def test_compiled_matmul_with_overrides_matches_numpy(pack: str) -> None:
    if HOST_WIDTH < 256:
        pytest.skip("the host has no 256-bit vectors")
    import relaxvm

    target = Target(f"llvm -vector-bits=256 -tile=4x3 -pack={pack}")
    ex = relaxvm.compile(_matmul_module(), target=target)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 96)).astype("float32")
    b = rng.standard_normal((96, 80)).astype("float32")
    out = relaxvm.VirtualMachine(ex, relaxvm.cpu())["main"](relaxvm.tensor(a), relaxvm.tensor(b))
    np.testing.assert_allclose(out.numpy(), np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)
    from relaxvm_llvm.target import LLVMModule

    (module,) = [m for kind, _, m in ex.kernel_libs if kind == "llvm"]
    assert isinstance(module, LLVMModule)
    # The matmul's tile is written in 8-lane vectors. (Elementwise stages are chunks of two
    # vectors, <16 x float>, which LLVM may still select as one 512-bit instruction on an
    # AVX-512 CPU: -vector-bits steers the schedules, not LLVM's instruction selection.)
    source = _function_ir(module.get_source(), "matmul")
    assert "<8 x float>" in source and "<16 x float>" not in source
    assert "register tile 4x3" in module.describe()


def _function_ir(source: str, name: str) -> str:
    """The LLVM IR of the functions whose symbol contains ``name``."""
    out, keep = [], False
    for line in source.splitlines():
        if line.startswith("define "):
            symbol = line.split("@", 1)[1].split("(", 1)[0]
            keep = name in symbol
        if keep:
            out.append(line)
        if line.startswith("}"):
            keep = False
    assert out, f"no function named like {name!r}"
    return "\n".join(out)


def test_compile_refuses_bad_attributes() -> None:
    import relaxvm

    with pytest.raises(TargetError, match=r"-tile='7'"):
        relaxvm.compile(_matmul_module(), target="llvm -tile=7")


# -- recorded at build time, shown by relaxvm inspect -------------------------------------------


def test_inspect_shows_the_schedule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import relaxvm
    from relaxvm.cli.commands import main

    target = "llvm -tile=3x2 -l2-bytes=1M" if HOST_WIDTH >= 256 else "llvm -tile=3x2"
    ex = relaxvm.compile(_matmul_module(), target=target)
    path = tmp_path / "model.rvm"
    ex.export_library(path)
    assert main(["inspect", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    (line,) = [line for line in lines if line.startswith("llvm schedule:")]
    assert f"({HOST_WIDTH}-bit vectors" in line and "register tile 3x2" in line
    assert "tile" in line.rsplit("set by the target:", 1)[1]
    assert main(["inspect", "--python", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\n# llvm schedule: " in out  # a comment: the Python view stays runnable
    # The program alone (Executable.save) carries no kernels and no schedule line.
    bare = tmp_path / "bare.rvm"
    ex.save(bare)
    assert main(["inspect", str(bare)]) == 0
    assert "llvm schedule" not in capsys.readouterr().out


def test_the_schedule_line_survives_serialization() -> None:
    from relaxvm_llvm.target import build, load, serialize

    module = build(wl.add((4, 4)), Target("llvm -tile=2x2"))
    assert "register tile 2x2" in module.describe()
    assert load(serialize(module)).describe() == module.describe()


def test_a_non_printable_schedule_line_is_refused() -> None:
    from relaxvm.errors import ExecutableFormatError
    from relaxvm_llvm.serialize import dumps, read
    from relaxvm_llvm.target import build

    compiled = build(wl.add((4, 4))).compiled
    assert read(dumps(compiled, b"", "llvm schedule: ok")).schedule == "llvm schedule: ok"
    assert read(dumps(compiled)).schedule == ""
    with pytest.raises(ExecutableFormatError, match="schedule must be printable"):
        read(dumps(compiled, b"", "llvm schedule: \x1b[2J"))


def test_tvm_attributes_are_accepted() -> None:
    config = cpu_config(Target("llvm -num-cores=3 -keys=cpu -opt-level=3 -mtriple=" + _triple()))
    assert config.num_threads == 3
    explicit = cpu_config(Target("llvm -num-cores=3 -num-threads=5"))
    assert explicit.num_threads == 5  # our own spelling wins


def test_a_foreign_triple_is_refused() -> None:
    arch = "aarch64" if _triple().startswith("x86_64") else "x86_64"
    with pytest.raises(TargetError, match=rf"-mtriple='{arch}-linux-gnu' is not this machine"):
        cpu_config(Target(f"llvm -mtriple={arch}-linux-gnu"))


def _triple() -> str:
    import llvmlite.binding as llvm

    return str(llvm.get_process_triple())
