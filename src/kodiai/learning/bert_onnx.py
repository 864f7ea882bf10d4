"""A BERT encoder as an ONNX graph, built from its ``config.json`` and safetensors weights without torch.

sentence-transformers models such as all-MiniLM-L6-v2 are a ``BertModel`` followed by pooling. The graph
here is that model's forward pass written out node by node (embeddings, ``num_hidden_layers`` blocks of
self-attention and a GELU feed-forward, post-layer-norm), so onnxruntime can run it with the weights the
model ships: no torch, no export step, nothing cached on disk. Its output is ``last_hidden_state``;
pooling and normalisation stay in :mod:`kodiai.learning.onnx_minilm`.

Only what that family uses is supported (absolute positions, exact GELU, no decoder, no cross-attention);
anything else is a clear :class:`ValueError` rather than silently different vectors.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

OPSET_VERSION = 17  # LayerNormalization is a standard op from 17
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT_NAME = "last_hidden_state"

_REQUIRED = ("hidden_size", "num_attention_heads", "num_hidden_layers", "intermediate_size")


class _Graph:
    """Collects nodes and initializers with unique names."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.helper = helper
        self.numpy_helper = numpy_helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0

    def const(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(self.numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, op_type: str, inputs: list[str], **attrs: Any) -> str:
        self._count += 1
        out = f"{op_type.lower()}_{self._count}"
        self.nodes.append(self.helper.make_node(op_type, inputs, [out], **attrs))
        return out


def _config(model_dir: Path) -> dict[str, Any]:
    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    if not isinstance(config, dict) or config.get("model_type") != "bert":
        raise ValueError(f"{model_dir}: only BERT models are supported (model_type 'bert')")
    missing = [key for key in _REQUIRED if key not in config]
    if missing:
        raise ValueError(f"{model_dir}/config.json lacks {missing}")
    if config.get("hidden_act", "gelu") != "gelu":
        raise ValueError(f"unsupported hidden_act {config.get('hidden_act')!r} (only exact gelu)")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError("only absolute position embeddings are supported")
    if config.get("is_decoder") or config.get("add_cross_attention"):
        raise ValueError("decoder models are not supported")
    if int(config["hidden_size"]) % int(config["num_attention_heads"]):
        raise ValueError("hidden_size is not a multiple of num_attention_heads")
    return config


def _weights(model_dir: Path) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    path = model_dir / "model.safetensors"
    if not path.is_file():
        raise FileNotFoundError(f"no model.safetensors in {model_dir} (needed to run without torch)")
    raw = load_file(str(path))
    # Checkpoints saved from BertModel have bare names; from a task head they carry "bert.".
    return {name.removeprefix("bert."): value for name, value in raw.items()}


def build_bert_onnx(model_path: str | Path) -> bytes:
    """The serialised ONNX model of the BERT encoder at ``model_path`` (inputs :data:`INPUT_NAMES`,
    dynamic batch and sequence axes; output :data:`OUTPUT_NAME`, float32 ``[batch, seq, hidden]``)."""
    from onnx import TensorProto

    model_dir = Path(model_path)
    config = _config(model_dir)
    w = _weights(model_dir)
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    head_dim = hidden // heads
    eps = float(config.get("layer_norm_eps", 1e-12))

    def weight(name: str) -> np.ndarray:
        if name not in w:
            raise ValueError(f"weight {name!r} missing from {model_dir}/model.safetensors")
        return w[name].astype(np.float32)

    g = _Graph()
    h = g.helper

    def linear(x: str, prefix: str) -> str:
        """``x @ W.T + b`` (torch's Linear keeps W as [out, in])."""
        wt = g.const(f"{prefix}.weight_t", weight(f"{prefix}.weight").T)
        return g.op("Add", [g.op("MatMul", [x, wt]), g.const(f"{prefix}.bias", weight(f"{prefix}.bias"))])

    def layer_norm(x: str, prefix: str) -> str:
        scale = g.const(f"{prefix}.weight", weight(f"{prefix}.weight"))
        bias = g.const(f"{prefix}.bias", weight(f"{prefix}.bias"))
        return g.op("LayerNormalization", [x, scale, bias], axis=-1, epsilon=eps)

    # Embeddings: word + absolute position (0..seq-1) + token type, then layer norm.
    # Position ids 0..seq-1 per row, as a running count (no shape arithmetic for the optimiser to fold).
    ones = g.op(
        "Add",
        [
            g.op("Mul", ["input_ids", g.const("zero_i64", np.array(0, dtype=np.int64))]),
            g.const("one_i64", np.array(1, dtype=np.int64)),
        ],
    )
    positions = g.op(
        "Sub", [g.op("CumSum", [ones, g.const("seq_axis", np.array(1, dtype=np.int64))]), "one_i64"]
    )
    word = g.op(
        "Gather", [g.const("word_embeddings", weight("embeddings.word_embeddings.weight")), "input_ids"]
    )
    pos = g.op(
        "Gather", [g.const("position_embeddings", weight("embeddings.position_embeddings.weight")), positions]
    )
    types = g.op(
        "Gather",
        [
            g.const("token_type_embeddings", weight("embeddings.token_type_embeddings.weight")),
            "token_type_ids",
        ],
    )
    x = layer_norm(g.op("Add", [g.op("Add", [word, pos]), types]), "embeddings.LayerNorm")

    # Padding mask as an additive bias [batch, 1, 1, seq]: 0 where attended, float32 min where padded.
    mask = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    inverted = g.op("Sub", [g.const("one_f32", np.array(1.0, dtype=np.float32)), mask])
    bias = g.op("Mul", [inverted, g.const("mask_min", np.array(np.finfo(np.float32).min, dtype=np.float32))])
    bias = g.op("Unsqueeze", [bias, g.const("mask_axes", np.array([1, 2], dtype=np.int64))])

    split_heads = g.const("split_heads", np.array([0, 0, heads, head_dim], dtype=np.int64))
    merge_heads = g.const("merge_heads", np.array([0, 0, hidden], dtype=np.int64))
    scale = g.const("attention_scale", np.array(1.0 / math.sqrt(head_dim), dtype=np.float32))
    half = g.const("half", np.array(0.5, dtype=np.float32))
    one = g.const("one_gelu", np.array(1.0, dtype=np.float32))
    sqrt2 = g.const("sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))

    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}"

        def heads_of(name: str, perm: list[int], p: str = p, x: str = x) -> str:
            projected = linear(x, f"{p}.attention.self.{name}")
            return g.op("Transpose", [g.op("Reshape", [projected, split_heads])], perm=perm)

        q = heads_of("query", [0, 2, 1, 3])  # [b, h, s, d]
        k = heads_of("key", [0, 2, 3, 1])  # [b, h, d, s]
        v = heads_of("value", [0, 2, 1, 3])
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), scale]), bias])
        context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        context = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]), merge_heads])
        x = layer_norm(
            g.op("Add", [linear(context, f"{p}.attention.output.dense"), x]),
            f"{p}.attention.output.LayerNorm",
        )
        inner = linear(x, f"{p}.intermediate.dense")
        gelu = g.op(
            "Mul",
            [g.op("Mul", [inner, half]), g.op("Add", [g.op("Erf", [g.op("Div", [inner, sqrt2])]), one])],
        )
        x = layer_norm(g.op("Add", [linear(gelu, f"{p}.output.dense"), x]), f"{p}.output.LayerNorm")

    g.nodes.append(h.make_node("Identity", [x], [OUTPUT_NAME]))
    dims = ["batch", "sequence"]
    graph = h.make_graph(
        g.nodes,
        "bert_encoder",
        [h.make_tensor_value_info(name, TensorProto.INT64, dims) for name in INPUT_NAMES],
        [h.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, [*dims, hidden])],
        g.initializers,
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", OPSET_VERSION)], producer_name="kodiai")
    model.ir_version = 8  # readable by every onnxruntime >= 1.14
    return bytes(model.SerializeToString())
