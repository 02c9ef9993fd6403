"""Real-model-shaped ONNX graphs with random weights, written the way exporters write them.

Used by the importer's model tests, by ``examples/onnx_import.py`` and by
``benchmarks/bench_onnx.py``:

* :func:`mlp_model`: ``Gemm`` then ``MatMul + Add`` layers with ``Relu``;
* :func:`cnn_model`: a small ResNet (``Conv + BatchNormalization + Relu``, basic blocks with an
  ``Add`` skip, ``MaxPool``, ``GlobalAveragePool``, ``Flatten``, ``Gemm``);
* :func:`resnet18_model`: ResNet-18 itself, 224x224, 1000 classes (about 11.7M weights);
* :func:`transformer_encoder_model`: one post-norm encoder layer (BERT style) whose batch and
  sequence length are symbolic; the head split computes its shapes with ``Shape -> Gather ->
  Unsqueeze -> Concat -> Reshape``, as ``torch.onnx.export`` does;

and :func:`random_inputs`, inputs for any of them with the symbolic dims given by name.
Weights are drawn from a seeded generator and scaled so activations stay of order one.
Needs the ``onnx`` package (imported when a builder is called).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "cnn_model",
    "mlp_model",
    "random_inputs",
    "resnet18_model",
    "transformer_encoder_model",
]

Dim = int | str

#: ONNX element type codes (fixed by the spec) for the dtypes these models use.
_FLOAT = 1
_INT64 = 7


class _GraphBuilder:
    """Accumulates nodes and initializers with unique names, in topological order."""

    def __init__(self, seed: int) -> None:
        from onnx import helper, numpy_helper

        self.helper = helper
        self.numpy_helper = numpy_helper
        self.rng = np.random.default_rng(seed)
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._counts: dict[str, int] = {}

    def name(self, prefix: str) -> str:
        count = self._counts.get(prefix, 0)
        self._counts[prefix] = count + 1
        return f"{prefix}_{count}"

    def node(self, op_type: str, inputs: Sequence[str], n_out: int = 1, **attrs: Any) -> Any:
        """Add a node; returns its output name (or the list of names when ``n_out > 1``)."""
        node_name = self.name(op_type.lower())
        outputs = [f"{node_name}_out{i}" if n_out > 1 else f"{node_name}_out" for i in range(n_out)]
        self.nodes.append(
            self.helper.make_node(op_type, list(inputs), outputs, name=node_name, **attrs)
        )
        return outputs if n_out > 1 else outputs[0]

    def weight(self, prefix: str, array: np.ndarray) -> str:
        """Add an initializer."""
        name = self.name(prefix)
        self.initializers.append(self.numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def constant(self, values: int | Sequence[int] | np.ndarray, dtype: str = "int64") -> str:
        """A ``Constant`` node (how exporters write small shape constants)."""
        name = self.name("const")
        tensor = self.numpy_helper.from_array(np.asarray(values, dtype=dtype), f"{name}_value")
        self.nodes.append(self.helper.make_node("Constant", [], [name], name=name, value=tensor))
        return name

    def normal(self, shape: Sequence[int], fan_in: int, gain: float = 1.0) -> np.ndarray:
        return (self.rng.standard_normal(shape) * (gain / math.sqrt(fan_in))).astype("float32")

    def uniform(self, shape: Sequence[int], low: float, high: float) -> np.ndarray:
        return self.rng.uniform(low, high, shape).astype("float32")

    def model(
        self,
        name: str,
        inputs: Sequence[tuple[str, int, Sequence[Dim]]],
        outputs: Sequence[tuple[str, int, Sequence[Dim] | None]],
        opset: int,
    ) -> Any:
        helper = self.helper
        graph = helper.make_graph(
            self.nodes,
            name,
            [helper.make_tensor_value_info(n, t, list(s)) for n, t, s in inputs],
            [
                helper.make_tensor_value_info(n, t, None if s is None else list(s))
                for n, t, s in outputs
            ],
            self.initializers,
        )
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", opset)],
            producer_name="relaxvm.testing.onnx_models",
        )
        model.ir_version = min(model.ir_version, 10)  # onnxruntime releases lag the newest IR
        from onnx import checker

        checker.check_model(model, full_check=True)  # types inferred and checked too
        return model


# ---- MLP ----------------------------------------------------------------------------------------
def mlp_model(
    batch: Dim = "N",
    in_features: int = 256,
    hidden: Sequence[int] = (512, 512),
    out_features: int = 10,
    seed: int = 0,
    opset: int = 17,
) -> Any:
    """An MLP: ``Gemm`` (``transB=1``, as PyTorch's ``Linear`` exports) for the first layer,
    ``MatMul + Add`` for the others, ``Relu`` between; input ``x`` ``[batch, in_features]``,
    output ``logits``."""
    g = _GraphBuilder(seed)
    sizes = [in_features, *hidden, out_features]
    h = "x"
    for layer, (fan_in, fan_out) in enumerate(itertools.pairwise(sizes)):
        bias = g.weight("bias", g.normal([fan_out], 1, 0.1))
        if layer == 0:
            w = g.weight("weight", g.normal([fan_out, fan_in], fan_in, math.sqrt(2)))
            h = g.node("Gemm", [h, w, bias], transB=1)
        else:
            w = g.weight("weight", g.normal([fan_in, fan_out], fan_in, math.sqrt(2)))
            h = g.node("Add", [g.node("MatMul", [h, w]), bias])
        if layer < len(sizes) - 2:
            h = g.node("Relu", [h])
    g.nodes.append(g.helper.make_node("Identity", [h], ["logits"], name="output"))
    return g.model(
        "mlp",
        [("x", _FLOAT, [batch, in_features])],
        [("logits", _FLOAT, [batch, out_features])],
        opset,
    )


# ---- ResNet ---------------------------------------------------------------------------------
def _conv_bn(
    g: _GraphBuilder, x: str, cin: int, cout: int, kernel: int, stride: int, relu: bool
) -> str:
    pad = kernel // 2
    w = g.weight("conv_w", g.normal([cout, cin, kernel, kernel], cin * kernel * kernel, 1.4))
    y = g.node(
        "Conv",
        [x, w],
        kernel_shape=[kernel, kernel],
        strides=[stride, stride],
        pads=[pad, pad, pad, pad],
    )
    scale = g.weight("bn_scale", g.uniform([cout], 0.5, 1.5))
    shift = g.weight("bn_bias", g.normal([cout], 1, 0.1))
    mean = g.weight("bn_mean", g.normal([cout], 1, 0.1))
    var = g.weight("bn_var", g.uniform([cout], 0.5, 1.5))
    y = g.node("BatchNormalization", [y, scale, shift, mean, var], epsilon=1e-5)
    return g.node("Relu", [y]) if relu else y


def _basic_block(g: _GraphBuilder, x: str, cin: int, cout: int, stride: int) -> str:
    y = _conv_bn(g, x, cin, cout, 3, stride, relu=True)
    y = _conv_bn(g, y, cout, cout, 3, 1, relu=False)
    skip = x if stride == 1 and cin == cout else _conv_bn(g, x, cin, cout, 1, stride, relu=False)
    return g.node("Relu", [g.node("Add", [y, skip])])


def _resnet(
    name: str,
    batch: Dim,
    size: int,
    stem: tuple[int, int, int],
    stages: Sequence[tuple[int, int]],
    classes: int,
    seed: int,
    opset: int,
    fc_gain: float = 1.0,
) -> Any:
    g = _GraphBuilder(seed)
    width, kernel, stride = stem
    h = _conv_bn(g, "input", 3, width, kernel, stride, relu=True)
    h = g.node("MaxPool", [h], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = width
    for index, (cout, blocks) in enumerate(stages):
        for block in range(blocks):
            h = _basic_block(g, h, cin, cout, 2 if block == 0 and index > 0 else 1)
            cin = cout
    h = g.node("Flatten", [g.node("GlobalAveragePool", [h])], axis=1)
    w = g.weight("fc_w", g.normal([classes, cin], cin, fc_gain))
    b = g.weight("fc_b", g.normal([classes], 1, 0.1))
    g.nodes.append(g.helper.make_node("Gemm", [h, w, b], ["logits"], name="fc", transB=1))
    return g.model(
        name,
        [("input", _FLOAT, [batch, 3, size, size])],
        [("logits", _FLOAT, [batch, classes])],
        opset,
    )


def cnn_model(
    batch: Dim = "N",
    size: int = 32,
    widths: Sequence[int] = (16, 32),
    blocks: int = 1,
    classes: int = 10,
    seed: int = 0,
    opset: int = 17,
) -> Any:
    """A small ResNet: 3x3 stem ``Conv + BatchNormalization + Relu``, ``MaxPool``, then per
    width ``blocks`` basic blocks (the first of each later stage strided, with a 1x1 projection
    on the skip), ``GlobalAveragePool``, ``Flatten``, ``Gemm``; input ``input``
    ``[batch, 3, size, size]``, output ``logits``."""
    return _resnet(
        "cnn", batch, size, (widths[0], 3, 1), [(w, blocks) for w in widths], classes, seed, opset
    )


def resnet18_model(
    batch: Dim = 1, size: int = 224, classes: int = 1000, seed: int = 0, opset: int = 17
) -> Any:
    """ResNet-18 (torchvision's layout: 7x7/2 stem, max pool, four stages of two basic blocks,
    64 to 512 channels), random weights; input ``input`` ``[batch, 3, size, size]``."""
    stages = [(64, 2), (128, 2), (256, 2), (512, 2)]
    # The residual sums grow the features to ~50 by the last stage (the random running
    # statistics do not normalize them): a small classifier gain keeps the logits near one.
    return _resnet("resnet18", batch, size, (64, 7, 2), stages, classes, seed, opset, 0.03)


# ---- transformer encoder layer --------------------------------------------------------------
def transformer_encoder_model(
    batch: Dim = "batch",
    seq: Dim = "seq",
    d_model: int = 64,
    heads: int = 4,
    ffn: int = 256,
    gelu: str = "erf",
    seed: int = 0,
    opset: int | None = None,
) -> Any:
    """One post-norm encoder layer: multi-head self-attention (``MatMul`` projections, heads
    split with ``Reshape``/``Transpose`` to shapes computed from ``Shape``/``Gather``/
    ``Unsqueeze``/``Concat``, scaled ``MatMul``, ``Softmax``), residual ``Add``,
    ``LayerNormalization``, a GELU feed-forward and a second residual and norm.

    ``gelu="erf"`` writes GELU as ``0.5 * x * (1 + Erf(x / sqrt(2)))`` (how exporters write it
    before opset 20), ``gelu="op"`` as the ``Gelu`` operator (opset 20; the default opset then
    becomes 20). Input ``x`` ``[batch, seq, d_model]``, output ``y``.
    """
    if d_model % heads:
        raise ValueError(f"d_model {d_model} is not a multiple of heads {heads}")
    if gelu not in ("erf", "op"):
        raise ValueError(f"gelu must be 'erf' or 'op', got {gelu!r}")
    opset = opset if opset is not None else (20 if gelu == "op" else 17)
    g = _GraphBuilder(seed)
    head_dim = d_model // heads

    def linear(x: str, fan_in: int, fan_out: int, gain: float = 1.0) -> str:
        w = g.weight("linear_w", g.normal([fan_in, fan_out], fan_in, gain))
        b = g.weight("linear_b", g.normal([fan_out], 1, 0.02))
        return g.node("Add", [g.node("MatMul", [x, w]), b])

    def layer_norm(x: str) -> str:
        scale = g.weight("ln_scale", g.uniform([d_model], 0.8, 1.2))
        bias = g.weight("ln_bias", g.normal([d_model], 1, 0.05))
        return g.node("LayerNormalization", [x, scale, bias], axis=-1, epsilon=1e-5)

    # The dims as tensors, the way torch.onnx.export computes them.
    shape = g.node("Shape", ["x"])
    zero_axis = g.constant([0])
    dims = [
        g.node("Unsqueeze", [g.node("Gather", [shape, g.constant(i)], axis=0), zero_axis])
        for i in (0, 1)
    ]
    heads_shape = g.node("Concat", [*dims, g.constant([heads]), g.constant([head_dim])], axis=0)
    model_shape = g.node("Concat", [*dims, g.constant([d_model])], axis=0)

    def split_heads(x: str, perm: Sequence[int]) -> str:
        return g.node("Transpose", [g.node("Reshape", [x, heads_shape])], perm=list(perm))

    q = split_heads(linear("x", d_model, d_model), [0, 2, 1, 3])  # [b, h, s, dh]
    k = split_heads(linear("x", d_model, d_model), [0, 2, 3, 1])  # [b, h, dh, s]
    v = split_heads(linear("x", d_model, d_model), [0, 2, 1, 3])
    scale = g.weight("attn_scale", np.array(math.sqrt(head_dim), "float32"))
    scores = g.node("Div", [g.node("MatMul", [q, k]), scale])
    probs = g.node("Softmax", [scores], axis=-1)
    context = g.node("Transpose", [g.node("MatMul", [probs, v])], perm=[0, 2, 1, 3])
    context = g.node("Reshape", [context, model_shape])
    attn = linear(context, d_model, d_model)
    h = layer_norm(g.node("Add", ["x", attn]))

    f = linear(h, d_model, ffn, math.sqrt(2))
    if gelu == "op":
        f = g.node("Gelu", [f])
    else:
        sqrt2 = g.weight("sqrt2", np.array(math.sqrt(2), "float32"))
        one = g.weight("one", np.array(1.0, "float32"))
        half = g.weight("half", np.array(0.5, "float32"))
        erf = g.node("Erf", [g.node("Div", [f, sqrt2])])
        f = g.node("Mul", [g.node("Mul", [f, g.node("Add", [erf, one])]), half])
    f = linear(f, ffn, d_model)
    out = layer_norm(g.node("Add", [h, f]))
    g.nodes.append(g.helper.make_node("Identity", [out], ["y"], name="output"))
    return g.model(
        "transformer_encoder",
        [("x", _FLOAT, [batch, seq, d_model])],
        [("y", _FLOAT, [batch, seq, d_model])],
        opset,
    )


# ---- inputs ---------------------------------------------------------------------------------
def random_inputs(
    model: Any, dims: Mapping[str, int] | None = None, seed: int = 0
) -> dict[str, np.ndarray]:
    """Standard-normal float inputs (zeros for other dtypes) for every graph input that is
    not an initializer; ``dims`` gives the size of each symbolic dim by name."""
    from onnx import helper

    dims = dict(dims or {})
    rng = np.random.default_rng(seed)
    initializers = {init.name for init in model.graph.initializer}
    out = {}
    for value_info in model.graph.input:
        if value_info.name in initializers:
            continue
        tensor_type = value_info.type.tensor_type
        shape = []
        for dim in tensor_type.shape.dim:
            if dim.HasField("dim_value"):
                shape.append(int(dim.dim_value))
            elif dim.dim_param in dims:
                shape.append(int(dims[dim.dim_param]))
            else:
                raise ValueError(
                    f"input '{value_info.name}' has the symbolic dim '{dim.dim_param}': give "
                    "its size in dims"
                )
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor_type.elem_type))
        if dtype.kind == "f":
            out[value_info.name] = rng.standard_normal(shape).astype(dtype)
        else:
            out[value_info.name] = np.zeros(shape, dtype)
    return out
