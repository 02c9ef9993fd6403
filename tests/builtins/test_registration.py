"""The builtins plugin registers exactly its names, each attributed to it."""

from __future__ import annotations

import relaxvm
import relaxvm_builtins
from relaxvm.registry.functions import function_source

EXPECTED = {
    "device_api.cpu",
    # shape.py
    "vm.builtin.alloc_shape_heap",
    "vm.builtin.match_shape",
    "vm.builtin.make_shape",
    "vm.builtin.match_prim_value",
    "vm.builtin.make_prim_value",
    # checks.py
    "vm.builtin.check_tensor_info",
    "vm.builtin.check_shape_info",
    "vm.builtin.check_prim_value_info",
    "vm.builtin.check_tuple_info",
    "vm.builtin.check_func_info",
    # memory.py
    "vm.builtin.alloc_storage",
    "vm.builtin.alloc_tensor",
    "vm.builtin.null_value",
    "vm.builtin.ensure_zero_offset",
    "vm.builtin.to_device",
    "vm.builtin.memory_manager.clear",
    # values.py
    "vm.builtin.copy",
    "vm.builtin.reshape",
    "vm.builtin.check_broadcast",
    "vm.builtin.make_tuple",
    "vm.builtin.tuple_getitem",
    "vm.builtin.shape_of",
    "vm.builtin.tensor_to_shape",
    "vm.builtin.read_if_cond",
    # calls.py
    "vm.builtin.make_closure",
    "vm.builtin.invoke_closure",
    "vm.builtin.call_tir_dyn",
}


def test_plugin_registers_exactly_the_expected_names() -> None:
    # Other installed plugins may add names of their own; only ours are compared.
    ours = {
        name
        for name in relaxvm.list_global_func_names()
        if function_source(name) == "plugin 'builtins'"
    }
    assert ours == EXPECTED


def test_every_expected_name_is_attributed_to_the_builtins_plugin() -> None:
    for name in sorted(EXPECTED):
        assert function_source(name) == "plugin 'builtins'", name


def test_registered_objects_are_the_module_functions() -> None:
    from relaxvm_builtins import calls, shape, values

    assert relaxvm.get_global_func("vm.builtin.match_shape") is shape.match_shape
    assert relaxvm.get_global_func("vm.builtin.copy") is values.copy
    assert relaxvm.get_global_func("vm.builtin.invoke_closure") is calls.invoke_closure


def test_code_enums_are_exported_with_tvm_values() -> None:
    match_code = relaxvm_builtins.MatchShapeCode
    make_code = relaxvm_builtins.MakeShapeCode
    assert [(c.name, int(c)) for c in match_code] == [
        ("ASSERT_EQUAL_TO_IMM", 0),
        ("STORE_TO_HEAP", 1),
        ("NO_OP", 2),
        ("ASSERT_EQUAL_TO_LOAD", 3),
    ]
    assert [(c.name, int(c)) for c in make_code] == [("USE_IMM", 0), ("LOAD_SHAPE", 1)]
