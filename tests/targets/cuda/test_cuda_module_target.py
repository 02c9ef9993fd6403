"""The ``cuda`` target kind: registration, attributes, default architecture, and that the
plugin loads without llvmlite or a driver."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

import relaxvm
from relaxvm.registry.extensions import get_target_kind, list_target_kinds
from relaxvm.target import Target, TargetError
from relaxvm_cuda.target import CUDATargetInfo, default_arch, target_info


def test_target_kind_is_registered() -> None:
    assert list_target_kinds()["cuda"] == "plugin 'cuda'"
    kind = get_target_kind("cuda")
    assert kind.device == "cuda" and kind.serialize is not None and kind.load is not None
    assert "arch" in kind.options and "max_threads_per_block" in kind.options
    assert "device_api.cuda" in relaxvm.registry.list_global_func_names()


def test_target_strings_parse() -> None:
    target = Target("cuda -arch=sm_90")
    assert target.kind_name == "cuda" and target.device == "cuda"
    assert target.attrs["arch"] == "sm_90" and target.attrs["thread_warp_size"] == 32
    info = target_info(Target("cuda -arch=sm_86 -max_threads_per_block=256 -libs=cublas"))
    assert info == CUDATargetInfo("sm_86", max_threads_per_block=256)
    assert (
        target_info(Target({"kind": "cuda", "arch": "sm_90a", "mcpu": "sm_90a"})).arch == "sm_90a"
    )


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("cuda -arch=gfx90a", r"-arch must name a CUDA architecture such as 'sm_80'.*'gfx90a'"),
        ("cuda -arch", r"-arch must name a CUDA architecture.*True"),
        ("cuda -mattr=+ptx80", r"unknown attribute\(s\) -mattr; accepted: -arch"),
        ("cuda -thread_warp_size=64", r"-thread_warp_size must be 32, got 64"),
        ("cuda -max_threads_per_block=2048", r"at most 1024 threads per block, got 2048"),
        ("cuda -max_num_threads=0", r"-max_num_threads must be a positive integer, got '0'"),
        ("cuda -arch=sm_80 -mcpu=sm_75", r"-mcpu=sm_75 differs from -arch=sm_80"),
    ],
)
def test_bad_attributes_are_named(text: str, match: str) -> None:
    with pytest.raises(TargetError, match=match):
        target_info(Target(text))


def test_default_arch_follows_the_device_and_environment(
    fake_driver: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_driver.capability = (9, 0)
    assert default_arch() == "sm_90" and Target("cuda").attrs["arch"] == "sm_90"
    monkeypatch.setenv("RELAXVM_CUDA_DEVICE", "3")  # no such device: the default
    assert default_arch() == "sm_80"
    monkeypatch.setenv("RELAXVM_CUDA_DEVICE", "x")
    with pytest.raises(TargetError, match="RELAXVM_CUDA_DEVICE must be a device ordinal"):
        default_arch()
    monkeypatch.setenv("RELAXVM_CUDA_ARCH", "sm_75")
    assert Target("cuda").attrs["arch"] == "sm_75"
    monkeypatch.setenv("RELAXVM_CUDA_ARCH", "volta")
    with pytest.raises(TargetError, match=r"\$RELAXVM_CUDA_ARCH must name a CUDA architecture"):
        default_arch()


def test_default_arch_without_a_driver(no_driver: None) -> None:
    assert default_arch() == "sm_80"


def test_plugin_and_runtime_import_without_llvmlite_or_driver() -> None:
    code = (
        "import sys, relaxvm, numpy\n"
        "from relaxvm.registry.extensions import list_target_kinds\n"
        "assert 'cuda' in list_target_kinds()\n"
        "import relaxvm_cuda, relaxvm_cuda.device, relaxvm_cuda.module, relaxvm_cuda.target\n"
        "assert relaxvm.cuda(0).exist is False\n"
        "relaxvm.target.Target('cuda')\n"
        "print('llvmlite' in sys.modules)\n"
    )
    env = {"RELAXVM_CUDA_LIBRARY": "libcuda-relaxvm-test-missing.so.1", "PATH": "/usr/bin"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_lazy_package_api() -> None:
    import relaxvm_cuda

    assert relaxvm_cuda.CUDAModule.__name__ == "CUDAModule"
    assert "build" in dir(relaxvm_cuda)
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        relaxvm_cuda.nope  # noqa: B018
