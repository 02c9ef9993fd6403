"""Module-level global infos and virtual devices: ``IRModule.global_infos``,
``update_global_info``, ``I.module_global_infos`` / ``I.vdevice`` in scripts, ``"cuda:1"``
references in tensor annotations, the printer's round trip and structural equality."""

from __future__ import annotations

import numpy as np
import pytest

import relaxvm
from relaxvm.errors import VMTypeError, VMValueError
from relaxvm.ir import DummyGlobalInfo, GlobalInfo, IntImm
from relaxvm.ir.relax import (
    BlockBuilder,
    IRModule,
    TensorStructInfo,
    Var,
    structural_equal,
    structural_hash,
)
from relaxvm.ir.relax.vdevice import VDevice, lookup_vdevice
from relaxvm.script import ScriptError, from_source
from relaxvm.script import ir as I
from relaxvm.script import relax as R
from relaxvm.target import Target

F32 = "float32"

# One module used by several tests: two cuda vdevices, so "cuda:1" is the sm_80 one.
SCRIPT = """
@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [
        I.vdevice("llvm"),
        I.vdevice("cuda", 0),
        I.vdevice("cuda -arch=sm_80", 0),
        I.vdevice("metal", 0, "global"),
    ]})

    @R.function
    def main(
        x: R.Tensor((2,), "float32", "cuda:1"), y: R.Tensor((2,), "float32", "llvm")
    ) -> R.Tensor((2,), "float32", "cuda:1"):
        z = R.to_vdevice(y, "cuda:1")
        w = R.add(x, z)
        return w
"""


def _identity_module() -> IRModule:
    builder = BlockBuilder()
    x = Var("x", TensorStructInfo([2], F32))
    with builder.function("main", [x]):
        builder.emit_func_output(x)
    return builder.get()


# ---- VDevice as a global info --------------------------------------------------------------


def test_vdevice_is_a_global_info_and_compares_by_target() -> None:
    assert isinstance(VDevice("llvm"), GlobalInfo)
    # The three spellings of one target are one device; unset attributes are not defaults.
    assert VDevice("cuda -arch=sm_80") == VDevice({"kind": "cuda", "arch": "sm_80"})
    # A Target fills in its kind's defaults; those are left out again.
    assert VDevice("cuda -arch=sm_90") == VDevice(Target("cuda -arch=sm_90"))
    assert VDevice(Target("llvm")) == VDevice("llvm")
    assert VDevice("cuda") != VDevice("cuda -arch=sm_80")
    assert VDevice("cuda", 0, "global") != VDevice("cuda", 0, "shared")
    assert DummyGlobalInfo() == DummyGlobalInfo() and DummyGlobalInfo() != VDevice("llvm")


def test_vdevice_prints_its_target_as_tvm_config() -> None:
    assert VDevice("cuda -arch=sm_80", 1).script() == (
        'I.vdevice({"arch": "sm_80", "kind": "cuda"}, 1, "global")'
    )
    assert VDevice("metal", 0, "shared").script() == 'I.vdevice({"kind": "metal"}, 0, "shared")'


def test_lookup_counts_devices_of_the_kind() -> None:
    listed = (VDevice("llvm"), VDevice("cuda"), VDevice("cuda -arch=sm_80"))
    assert lookup_vdevice(listed, "cuda", 1) is listed[2]
    assert lookup_vdevice(listed, "llvm", 0) is listed[0]
    assert lookup_vdevice(listed, "vdevice", 1) is listed[1]  # the whole list
    assert lookup_vdevice(listed, "metal", 0) is None
    with pytest.raises(VMValueError, match=r"lists 2 cuda virtual device\(s\)"):
        lookup_vdevice(listed, "cuda", 2)


# ---- the IRModule API ----------------------------------------------------------------------


def test_constructor_keyword_and_read_only_view() -> None:
    devices = [VDevice("llvm"), VDevice("cuda")]
    mod = IRModule(attrs={"a": 1}, global_infos={"vdevice": devices})
    assert mod.global_infos["vdevice"] == tuple(devices)
    devices.append(VDevice("metal"))  # the module keeps its own copy
    assert len(mod.global_infos["vdevice"]) == 2
    with pytest.raises(TypeError):
        mod.global_infos["other"] = ()  # type: ignore[index]


def test_update_global_info_is_in_place_and_survives_copies() -> None:
    mod = _identity_module()
    assert dict(mod.global_infos) == {}
    mod.update_global_info("dummy", [DummyGlobalInfo(), DummyGlobalInfo()])
    mod.update_global_info("vdevice", [VDevice("llvm")])
    assert len(mod.global_infos["dummy"]) == 2
    copied = mod.with_attr("attr", 3)
    assert copied.global_infos["vdevice"] == (VDevice("llvm"),)
    # A BlockBuilder started from the module keeps its infos in what it builds.
    builder = BlockBuilder(mod)
    y = Var("y", TensorStructInfo([2], F32))
    with builder.function("other", [y]):
        builder.emit_func_output(y)
    built = builder.get()
    assert "other" in built and built.global_infos["dummy"] == mod.global_infos["dummy"]


@pytest.mark.parametrize(
    ("name", "infos", "message"),
    [
        (3, [], "a global info name must be a str"),
        ("dummy", DummyGlobalInfo(), "must be a list of GlobalInfo, got DummyGlobalInfo"),
        ("dummy", [1], r"dummy\[0\] must be a GlobalInfo, got int"),
        ("vdevice", [DummyGlobalInfo()], r"vdevice\[0\] must be a VDevice"),
    ],
)
def test_update_global_info_checks_its_arguments(name: object, infos: object, message: str) -> None:
    mod = _identity_module()
    with pytest.raises(VMTypeError, match=message):
        mod.update_global_info(name, infos)  # type: ignore[arg-type]
    assert dict(mod.global_infos) == {}


def test_structural_equality_and_hash_see_global_infos() -> None:
    plain = _identity_module()
    first = plain.copy()
    first.update_global_info("vdevice", [VDevice("llvm"), VDevice("cuda")])
    second = plain.copy()
    second.update_global_info("vdevice", [VDevice("llvm"), VDevice({"kind": "cuda"})])
    third = plain.copy()
    third.update_global_info("vdevice", [VDevice("llvm"), VDevice("cuda -arch=sm_80")])
    assert structural_equal(first, second)
    assert structural_hash(first) == structural_hash(second)
    assert not structural_equal(first, third)
    assert not structural_equal(first, plain)
    assert structural_hash(first) != structural_hash(plain)


def test_int32_intimm_attribute_is_the_python_int() -> None:
    # TVM stores a Python int attribute as an int32 IntImm: the two spellings are one value.
    mod = _identity_module()
    assert structural_equal(mod.with_attr("n", IntImm("int32", 10)), mod.with_attr("n", 10))
    assert mod.with_attr("n", IntImm("int64", 10)).attrs["n"] == IntImm("int64", 10)


# ---- script: parse, print, round trip ------------------------------------------------------


def test_annotations_refer_to_the_listed_devices() -> None:
    mod = from_source(SCRIPT)
    listed = mod.global_infos["vdevice"]
    main = mod["main"]
    assert main.params[0].struct_info.vdevice is listed[2]  # the second cuda device
    assert main.params[1].struct_info.vdevice is listed[0]  # "llvm" means "llvm:0"
    assert main.ret_struct_info.vdevice is listed[2]


def test_printer_writes_tvm_form_and_parses_back() -> None:
    mod = from_source(SCRIPT)
    text = mod.script()
    assert (
        '    I.module_global_infos({"vdevice": [I.vdevice({"kind": "llvm"}, 0, "global"), '
        'I.vdevice({"kind": "cuda"}, 0, "global"), '
        'I.vdevice({"arch": "sm_80", "kind": "cuda"}, 0, "global"), '
        'I.vdevice({"kind": "metal"}, 0, "global")]})'
    ) in text
    assert 'y: R.Tensor((2,), dtype="float32", vdevice="llvm:0")' in text
    assert 'R.to_vdevice(y, dst_vdevice="cuda:1")' in text
    back = from_source(text)
    assert structural_equal(mod, back)
    assert back["main"].params[0].struct_info.vdevice is back.global_infos["vdevice"][2]


def test_round_trip_tells_same_kind_devices_apart() -> None:
    # Swapping which cuda device an annotation uses must change the module.
    mod = from_source(SCRIPT)
    other = from_source(SCRIPT.replace('"cuda:1"', '"cuda:0"'))
    assert not structural_equal(mod, other)
    assert structural_equal(other, from_source(other.script()))


def test_tvm_printed_target_config_parses() -> None:
    text = (
        "@I.ir_module\nclass Module:\n"
        '    I.module_global_infos({"vdevice": [I.vdevice({"keys": ["cpu"], "kind": "llvm", '
        '"mtriple": "x86_64-unknown-linux-gnu", "tag": ""}, 0, "global")]})\n'
        "    @R.function\n"
        '    def f(x: R.Tensor((2,), dtype="float32", vdevice="llvm:0")):\n'
        "        return x\n"
    )
    mod = from_source(text)
    device = mod.global_infos["vdevice"][0]
    assert device.target_kind == "llvm" and device.target["mtriple"].startswith("x86_64")
    assert mod["f"].params[0].struct_info.vdevice is device
    assert structural_equal(mod, from_source(mod.script()))


def test_decorated_class_with_dummy_infos_and_plain_device() -> None:
    @I.ir_module
    class Mod:
        I.module_attrs({"attr": 10})
        I.module_global_infos({"dummy": [I.dummy_global_info()], "vdevice": [I.vdevice("cuda", 0)]})

        @R.function
        def main(x: R.Tensor((2,), "float32", "cpu:0")) -> R.Tensor((2,), "float32", "cpu:0"):
            return x

    assert Mod.global_infos["dummy"] == (DummyGlobalInfo(),)
    # A runtime device kind that no listed vdevice has stays the plain device.
    assert Mod["main"].params[0].struct_info.vdevice == relaxvm.cpu(0)
    text = Mod.script()
    assert '"dummy": [I.dummy_global_info()]' in text and 'vdevice="cpu:0"' in text
    assert structural_equal(Mod, from_source(text))


def test_module_global_infos_outside_a_class() -> None:
    with pytest.raises(RuntimeError, match="may only appear as a statement of an @I.ir_module"):
        I.module_global_infos({"vdevice": []})


# ---- errors ----------------------------------------------------------------------------------


def _module_text(infos: str, annotation: str = '"cuda:0"') -> str:
    return (
        "@I.ir_module\nclass Module:\n"
        f"    I.module_global_infos({infos})\n"
        "    @R.function\n"
        f'    def f(x: R.Tensor((2,), "float32", {annotation})):\n'
        "        return x\n"
    )


def test_reference_past_the_listed_devices_names_them() -> None:
    text = _module_text('{"vdevice": [I.vdevice("llvm"), I.vdevice("cuda", 0)]}', '"cuda:3"')
    with pytest.raises(ScriptError) as info:
        from_source(text)
    message = str(info.value)
    assert "'cuda:3'" in message and "lists 1 cuda virtual device(s)" in message
    assert 'I.vdevice({"kind": "llvm"}, 0, "global")' in message
    assert 'I.vdevice({"kind": "cuda"}, 0, "global")' in message
    assert ":5:" in message  # the line of the annotation


@pytest.mark.parametrize(
    ("infos", "message"),
    [
        ('{"vdevice": [I.vdevice("tpu")]}', "target kind 'tpu' has no known device"),
        ('{"vdevice": [I.vdevice("llvm", "0")]}', "vdevice_id must be an int"),
        ('{"vdevice": [I.vdevice("llvm", 0, 3)]}', "memory_scope must be a str"),
        ('{"vdevice": [I.vdevice("llvm", -1)]}', "vdevice_id must be an int >= 0"),
        ('{"vdevice": [I.dummy_global_info()]}', r"vdevice\[0\] must be a VDevice"),
        ('[I.vdevice("llvm")]', "expects one dict of name -> list of global infos"),
    ],
)
def test_bad_global_infos_are_script_errors(infos: str, message: str) -> None:
    with pytest.raises(ScriptError, match=message):
        from_source(_module_text(infos, '"cpu:0"'))


def test_malformed_reference() -> None:
    text = _module_text('{"vdevice": [I.vdevice("cuda", 0)]}', '"cuda:x"')
    with pytest.raises(ScriptError, match="vdevice must be 'kind', 'kind:index'"):
        from_source(text)
    text = _module_text('{"vdevice": [I.vdevice("cuda", 0)]}', '"cuda:0:shared"')
    with pytest.raises(ScriptError, match="has memory scope 'global'"):
        from_source(text)


# ---- running -------------------------------------------------------------------------------


def test_module_with_llvm_vdevice_runs() -> None:
    pytest.importorskip("relaxvm_llvm")

    @I.ir_module
    class Mod:
        I.module_global_infos({"vdevice": [I.vdevice("llvm")]})

        @R.function
        def main(
            x: R.Tensor((3,), "float32", "llvm:0"), y: R.Tensor((3,), "float32", "llvm:0")
        ) -> R.Tensor((3,), "float32", "llvm:0"):
            z = R.multiply(R.add(x, y), x)
            return z

    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(3).astype(F32) for _ in range(2))
    vm = relaxvm.VirtualMachine(relaxvm.compile(Mod, "llvm"), relaxvm.cpu())
    out = vm["main"](a, b)
    np.testing.assert_allclose(out.numpy(), (a + b) * a, rtol=1e-6)
