"""Every script error: its type, its position (file:line:col), the quoted line and caret, and
a message that says what was expected."""

from __future__ import annotations

import traceback
from pathlib import Path

import pytest

from relaxvm.errors import RelaxVMError
from relaxvm.script import ScriptError, from_source
from relaxvm.script import relax as R

HEAD = '@R.function\ndef f(x: R.Tensor((3, 4), "float32"), y: R.Tensor((5,), "float32")):\n'


def relax_body(*lines: str) -> str:
    return HEAD + "".join(f"    {line}\n" for line in lines)


def test_script_error_types() -> None:
    assert issubclass(ScriptError, RelaxVMError)
    assert issubclass(ScriptError, ValueError)


# ---- Relax ----------------------------------------------------------------------------------
def test_unknown_op(script_error) -> None:
    err = script_error(relax_body("return R.addd(x, x)"), 3, 12, "unknown op", "R.addd")
    assert "did you mean R.add" in str(err)


def test_unknown_nn_op(script_error) -> None:
    script_error(relax_body("return R.nn.rel(x)"), 3, 12, "R.nn.rel", "R.nn.relu")


def test_wrong_arity(script_error) -> None:
    script_error(
        relax_body("return R.add(x)"), 3, 12, "wrong arguments to R.add", "x2", "expected R.add("
    )


def test_unknown_keyword(script_error) -> None:
    script_error(relax_body("return R.sum(x, axes=[1])"), 3, 12, "wrong arguments to R.sum", "axes")


def test_shape_mismatch_from_inference(script_error) -> None:
    script_error(relax_body("z = R.add(x, y)", "return z"), 3, 9, "relax.add", "(3, 4)", "(5,)")


def test_inference_error_points_at_the_nested_call(script_error) -> None:
    script_error(relax_body("return R.add(R.matmul(x, x), x)"), 3, 18, "relax.matmul")


def test_inference_error_in_return(script_error) -> None:
    script_error(relax_body("return R.multiply(x, y)"), 3, 12, "relax.multiply")


def test_undefined_name(script_error) -> None:
    err = script_error(relax_body("return R.add(x, zz)"), 3, 21, "undefined name 'zz'")
    assert "expected a variable defined earlier" in str(err)


def test_dataflow_var_is_not_visible_after_the_block(script_error) -> None:
    text = relax_body(
        "with R.dataflow():",
        "    lv = R.add(x, x)",
        "    gv = R.multiply(lv, x)",
        "    R.output(gv)",
        "return lv",
    )
    script_error(text, 7, 12, "undefined name 'lv'")


@pytest.mark.parametrize(
    ("line", "construct"),
    [
        ("while True:\n        pass", "`while` loop"),
        ("for i in range(3):\n        pass", "`for` loop"),
        ("try:\n        pass\n    except Exception:\n        pass", "`try` statement"),
        ("import os", "`import` statement"),
        ("del x", "`del` statement"),
        ("assert x", "`assert` statement"),
    ],
)
def test_unsupported_statements(script_error, line: str, construct: str) -> None:
    script_error(relax_body(line, "return x"), 3, 5, construct, "not supported")


def test_lambda_is_unsupported(script_error) -> None:
    script_error(relax_body("f = lambda a: a", "return x"), 3, 9, "`lambda`", "not supported")


def test_comprehension_is_unsupported(script_error) -> None:
    script_error(relax_body("f = [a for a in (x,)]", "return x"), 3, 9, "list comprehension")


def test_missing_parameter_annotation(script_error) -> None:
    text = "@R.function\ndef f(x):\n    return x\n"
    script_error(text, 2, 7, "parameter 'x'", "needs a struct info annotation")


def test_bad_annotation(script_error) -> None:
    text = "@R.function\ndef f(x: 3):\n    return x\n"
    script_error(text, 2, 10, "expected a struct info annotation")


def test_binding_annotation_mismatch(script_error) -> None:
    err = script_error(
        relax_body('z: R.Tensor((4, 4), "float32") = R.add(x, x)', "return z"),
        3,
        8,
        "does not match",
        "R.match_cast",
    )
    assert "(3, 4)" in str(err)


def test_return_annotation_mismatch(script_error) -> None:
    text = '@R.function\ndef f(x: R.Tensor((3,), "float32")) -> R.Tensor((4,), "float32"):\n    return x\n'
    script_error(text, 2, 40, "annotated to return", "(4,)", "(3,)")


def test_missing_return(script_error) -> None:
    script_error(relax_body("z = R.add(x, x)"), 3, 5, "must end with a return statement")


def test_return_not_last(script_error) -> None:
    script_error(
        relax_body("if x:", "    return x", "else:", "    return x", "return x"),
        4,
        9,
        "each branch of an `if` must end by assigning",
    )


def test_if_without_else(script_error) -> None:
    script_error(relax_body("if x:", "    z = x", "return x"), 3, 5, "needs an `else` branch")


def test_if_branches_assign_different_names(script_error) -> None:
    text = relax_body("if x:", "    a = x", "else:", "    b = x", "return x")
    script_error(text, 6, 9, "same variable", "'a'", "'b'")


def test_output_of_unassigned_name(script_error) -> None:
    text = relax_body("with R.dataflow():", "    lv = R.add(x, x)", "    R.output(gv)", "return x")
    script_error(text, 5, 18, "R.output names 'gv'")


def test_output_outside_dataflow(script_error) -> None:
    script_error(
        relax_body("R.output(x)", "return x"), 3, 5, "R.output may only be the last statement"
    )


def test_if_in_dataflow(script_error) -> None:
    text = relax_body(
        "with R.dataflow():",
        "    if x:",
        "        a = x",
        "    else:",
        "        a = x",
        "    R.output(a)",
        "return a",
    )
    script_error(text, 4, 9, "may not appear inside a dataflow block")


def test_unpack_non_tuple(script_error) -> None:
    script_error(relax_body("a, b = x", "return a"), 3, 5, "cannot unpack", "2 names")


def test_index_non_tuple(script_error) -> None:
    script_error(relax_body("return x[0]"), 3, 12, "only tuples can be indexed")


def test_calling_a_prim_func_directly(script_error) -> None:
    text = (
        '@I.ir_module\nclass M:\n    @T.prim_func\n    def k(A: T.Buffer((4,), "float32")):\n'
        "        A[0] = T.float32(1)\n\n    @R.function\n"
        '    def main(x: R.Tensor((4,), "float32")):\n        return cls.k(x)\n'
    )
    script_error(text, 9, 16, "is a prim_func", "R.call_tir")


def test_unknown_module_function(script_error) -> None:
    text = (
        "@I.ir_module\nclass M:\n    @R.function\n"
        '    def main(x: R.Tensor((4,), "float32")):\n        return cls.nope(x)\n'
    )
    script_error(text, 5, 16, "has no function 'nope'", "main")


def test_method_without_decorator(script_error) -> None:
    text = "@I.ir_module\nclass M:\n    def main(x):\n        return x\n"
    script_error(text, 3, 5, "needs @R.function or @T.prim_func")


def test_unknown_decorator_option(script_error) -> None:
    text = "@R.function(inline=True)\ndef f(x: R.Tensor):\n    return x\n"
    script_error(text, 1, 13, "unknown option 'inline'", "private")


def test_python_syntax_error(script_error) -> None:
    script_error(relax_body("return R.add(x,, x)"), 3, 20, "invalid Python syntax")


# ---- TIR ------------------------------------------------------------------------------------
TIR_HEAD = '@T.prim_func\ndef k(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "int32")):\n'


def tir_body(*lines: str) -> str:
    return TIR_HEAD + "".join(f"    {line}\n" for line in lines)


def test_tir_store_dtype_mismatch(script_error) -> None:
    script_error(tir_body("for i in range(4):", "    B[i] = A[i]"), 4, 9, "int32", "cast")


def test_tir_wrong_number_of_indices(script_error) -> None:
    script_error(tir_body("A[0, 1] = T.float32(1)"), 3, 5, "2 indices given for a 1-d buffer")


def test_tir_bad_loop_iterator(script_error) -> None:
    script_error(tir_body("for i in [1, 2]:", "    pass"), 3, 14, "expected a loop iterator")


def test_tir_loop_target_count(script_error) -> None:
    script_error(tir_body("for i in T.grid(2, 2):", "    pass"), 3, 9, "expected 2 loop variable")


def test_tir_undefined_name(script_error) -> None:
    script_error(tir_body("A[0] = C[0]"), 3, 12, "undefined name 'C'")


def test_tir_undefined_symbolic_var(script_error) -> None:
    text = '@T.prim_func\ndef k(A: T.Buffer((4,), "float32")):\n    n = T.int64()\n    for i in range(n):\n        A[0] = T.float32(1)\n'
    script_error(text, 2, 1, "uses n without defining it")


def test_tir_return_is_rejected(script_error) -> None:
    script_error(tir_body("return A"), 3, 5, "returns nothing")


def test_tir_while_is_rejected(script_error) -> None:
    script_error(tir_body("while True:", "    pass"), 3, 5, "`while` loop", "prim_func")


def test_tir_intrinsic_type_error(script_error) -> None:
    script_error(tir_body("B[0] = T.exp(B[1])"), 3, 12, "T.exp", "float")


def test_tir_bad_param_annotation(script_error) -> None:
    text = '@T.prim_func\ndef k(A: R.Tensor((4,), "float32")):\n    pass\n'
    script_error(text, 2, 10, "expected T.Buffer(...)")


def test_tir_thread_binding_needs_thread(script_error) -> None:
    script_error(tir_body("for i in T.thread_binding(4):", "    pass"), 3, 14, "thread=")


# ---- files, source text, REPL ---------------------------------------------------------------
def test_error_in_a_decorated_function_names_its_file_and_line() -> None:
    with pytest.raises(ScriptError) as info:

        @R.function
        def bad(x: R.Tensor((3,), "float32")):
            return R.addd(x, x)  # marker-for-the-error-test

    err = info.value
    path = Path(__file__)
    lines = path.read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "R.addd(x, x)  # marker" in text)
    assert err.source_name == str(path)
    assert (err.line, err.column) == (line, lines[line - 1].index("R.addd") + 1)
    assert str(err).startswith(f"{path}:{line}:{err.column}: error: unknown op")
    assert lines[line - 1].rstrip() in str(err)
    # The parser's internal frames are dropped: the traceback ends at the decorator.
    frames = traceback.extract_tb(err.__traceback__)
    internal = ("_relax_parser.py", "_tir_parser.py", "_eval.py", "_source.py")
    assert not any(frame.filename.endswith(internal) for frame in frames)


def test_function_without_source_suggests_from_source() -> None:
    namespace = {"R": R}
    code = '@R.function\ndef f(x: R.Tensor((3,), "float32")):\n    return x\n'
    with pytest.raises(ScriptError, match="from_source"):
        exec(compile(code, "<repl>", "exec"), namespace)


def test_from_source_without_definitions() -> None:
    with pytest.raises(ScriptError, match="no @I.ir_module class, @R.function or @T.prim_func"):
        from_source("x = 1\n")


def test_from_source_unknown_name() -> None:
    text = "@R.function\ndef f(x: R.Tensor):\n    return x\n"
    with pytest.raises(ScriptError, match="no definition named 'g'; the script defines f"):
        from_source(text, name="g")


def test_from_source_bad_top_level_statement(script_error) -> None:
    script_error("print(1)\n", 1, 1, "expected imports, assignments")


def test_from_source_needs_a_string() -> None:
    with pytest.raises(ScriptError, match="text must be a str"):
        from_source(b"@R.function")  # type: ignore[arg-type]
