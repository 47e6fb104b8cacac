"""Export small TF models with ragged / variable-length per-row map_fn patterns via tf2onnx.

Writes <stem>.onnx and <stem>.npz (sample inputs keyed by ONNX graph input names) into
sample_models/tf2onnx/ (or OUTDIR), checks onnxruntime output == TensorFlow output, and prints op
inventories (including Loop/If bodies). TensorFlow stays out of the project's environment: in a
separate venv with tensorflow-cpu==2.15.1 tf2onnx==1.16.1 onnx==1.16.2 protobuf==3.20.3
numpy==1.26.4 onnxruntime (tf2onnx 1.17.0 with protobuf 4.25 gives the same models):

    tfv/bin/python scripts/export_tf2onnx_models.py [--out OUTDIR] [stem ...]
"""

import os
import sys
import traceback
from collections import Counter

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import onnx
import onnxruntime as ort
import tensorflow as tf
import tf2onnx

OUT = "sample_models/tf2onnx"
OPSET = 15
SEQ_OPS = {
    "SequenceEmpty",
    "SequenceInsert",
    "ConcatFromSequence",
    "SequenceAt",
    "SequenceLength",
    "SplitToSequence",
    "SequenceConstruct",
    "SequenceErase",
}
D = 4
rng = np.random.default_rng(0)


# ---------------------------------------------------------------- models
def m_boolean_mask():
    """map_fn over rows of x[N,R]; keep x>0 per row (ragged output) -> flat_values."""

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32, name="x")])
    def f(x):
        r = tf.map_fn(
            lambda row: tf.boolean_mask(row, row > 0),
            x,
            fn_output_signature=tf.RaggedTensorSpec(shape=[None], dtype=tf.float32, ragged_rank=0),
        )
        return tf.identity(r.flat_values, name="values")

    x = rng.standard_normal((5, 7)).astype(np.float32)
    return f, [x], "map_fn(boolean_mask(row, row>0)) ragged -> .flat_values [sum k_i]"


def m_boolean_mask_concat():
    """per-row concat of two variable-length pieces (pos, 2*neg) -> values and row_splits."""

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32, name="x")])
    def f(x):
        def row_fn(row):
            return tf.concat(
                [tf.boolean_mask(row, row > 0), 2.0 * tf.boolean_mask(row, row < -0.5)], axis=0
            )

        r = tf.map_fn(
            row_fn,
            x,
            fn_output_signature=tf.RaggedTensorSpec(shape=[None], dtype=tf.float32, ragged_rank=0),
        )
        return tf.identity(r.flat_values, name="values"), tf.identity(
            r.row_splits, name="row_splits"
        )

    x = rng.standard_normal((6, 5)).astype(np.float32)
    return f, [x], "map_fn(concat(pos, 2*neg) per row) ragged -> flat_values + row_splits"


def m_rows_concat():
    """per-row variable-length 2-D blocks [k_i, D] (rows of x[i] whose sum>0), concatenated on axis 0."""

    @tf.function(input_signature=[tf.TensorSpec([None, None, D], tf.float32, name="x")])
    def f(x):
        def row_fn(blk):  # blk [R, D]
            return tf.boolean_mask(blk, tf.reduce_sum(blk, axis=1) > 0) * 3.0 + 1.0

        r = tf.map_fn(
            row_fn,
            x,
            fn_output_signature=tf.RaggedTensorSpec(
                shape=[None, D], dtype=tf.float32, ragged_rank=0
            ),
        )
        return tf.identity(r.flat_values, name="blocks")

    x = rng.standard_normal((4, 6, D)).astype(np.float32)
    return (
        f,
        [x],
        "map_fn -> [k_i, D] blocks per row, ragged .flat_values = concat axis 0 [sum k_i, D]",
    )


def m_to_tensor():
    """ragged rows (x>0 per row) padded back with .to_tensor()."""

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32, name="x")])
    def f(x):
        r = tf.map_fn(
            lambda row: tf.boolean_mask(row, row > 0),
            x,
            fn_output_signature=tf.RaggedTensorSpec(shape=[None], dtype=tf.float32, ragged_rank=0),
        )
        return tf.identity(r.to_tensor(default_value=-1.0), name="padded")

    x = rng.standard_normal((5, 6)).astype(np.float32)
    return f, [x], "map_fn(boolean_mask) ragged -> .to_tensor(-1) padded [N, max k_i]"


def m_prefix_by_length():
    """map_fn over (x, lengths): keep x[i, :len_i] -> flat_values (sequence-length style)."""

    @tf.function(
        input_signature=[
            tf.TensorSpec([None, None], tf.float32, name="x"),
            tf.TensorSpec([None], tf.int32, name="lengths"),
        ]
    )
    def f(x, lengths):
        r = tf.map_fn(
            lambda t: t[0][: t[1]] * 2.0,
            (x, lengths),
            fn_output_signature=tf.RaggedTensorSpec(shape=[None], dtype=tf.float32, ragged_rank=0),
        )
        return tf.identity(r.flat_values, name="values")

    x = rng.standard_normal((5, 8)).astype(np.float32)
    lengths = np.array([3, 0, 8, 1, 5], np.int32)
    return f, [x, lengths], "map_fn over (x, lengths) keeping x[i,:len_i]*2 -> .flat_values"


def m_prefix_rows_by_length():
    """map_fn over (x[N,L,D], lengths): keep x[i, :len_i, :] (a strided slice on two axes, one
    end run-time) -> flat_values [sum len_i, D]."""

    @tf.function(
        input_signature=[
            tf.TensorSpec([None, None, None], tf.float32, name="x"),
            tf.TensorSpec([None], tf.int32, name="lengths"),
        ]
    )
    def f(x, lengths):
        r = tf.map_fn(
            lambda t: t[0][: t[1], :] * 2.0,
            (x, lengths),
            fn_output_signature=tf.RaggedTensorSpec(
                shape=[None, None], dtype=tf.float32, ragged_rank=0
            ),
        )
        return tf.identity(r.flat_values, name="values")

    x = rng.standard_normal((5, 6, D)).astype(np.float32)
    lengths = np.array([3, 0, 6, 1, 5], np.int32)
    return f, [x, lengths], "map_fn over (x, lengths) keeping x[i,:len_i,:]*2 -> .flat_values"


def m_ragged_input():
    """ragged input (values, row_splits) mapped per row: keep elements >= row mean -> values + row_splits."""

    @tf.function(
        input_signature=[
            tf.TensorSpec([None], tf.float32, name="values"),
            tf.TensorSpec([None], tf.int64, name="row_splits"),
        ]
    )
    def f(values, row_splits):
        rt = tf.RaggedTensor.from_row_splits(values, row_splits, validate=False)
        r = tf.map_fn(
            lambda row: tf.boolean_mask(row, row >= tf.reduce_mean(row)),
            rt,
            fn_output_signature=tf.RaggedTensorSpec(shape=[None], dtype=tf.float32, ragged_rank=0),
        )
        return tf.identity(r.flat_values, name="out_values"), tf.identity(
            r.row_splits, name="out_row_splits"
        )

    values = rng.standard_normal(12).astype(np.float32)
    splits = np.array([0, 3, 4, 9, 12], np.int64)
    return (
        f,
        [values, splits],
        "map_fn over a ragged input (RaggedTensorFromVariant reads) -> ragged out",
    )


def m_tensorarray_concat():
    """tf.while_loop writing per-row boolean_mask into TensorArray(infer_shape=False), then .concat()."""

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32, name="x")])
    def f(x):
        n = tf.shape(x)[0]
        ta = tf.TensorArray(
            tf.float32, size=n, infer_shape=False, element_shape=tf.TensorShape(None)
        )

        def body(i, ta):
            row = x[i]
            return i + 1, ta.write(i, tf.boolean_mask(row, row > 0))

        _, ta = tf.while_loop(lambda i, ta: i < n, body, [tf.constant(0), ta])
        return tf.identity(ta.concat(), name="values")

    x = rng.standard_normal((5, 7)).astype(np.float32)
    return f, [x], "while_loop + TensorArray(infer_shape=False).write(boolean_mask) -> .concat()"


def m_while_grow_concat():
    """tf.while_loop carrying a growing tensor (shape_invariants) with tf.concat per iteration."""

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32, name="x")])
    def f(x):
        n = tf.shape(x)[0]

        def body(i, acc):
            row = x[i]
            return i + 1, tf.concat([acc, tf.boolean_mask(row, row > 0)], axis=0)

        _, acc = tf.while_loop(
            lambda i, acc: i < n,
            body,
            [tf.constant(0), tf.zeros([0], tf.float32)],
            shape_invariants=[tf.TensorShape([]), tf.TensorShape([None])],
        )
        return tf.identity(acc, name="values")

    x = rng.standard_normal((5, 7)).astype(np.float32)
    return (
        f,
        [x],
        "while_loop carrying growing 1-D tensor, tf.concat(acc, boolean_mask(row)) per step",
    )


def m_nested():
    """nested map_fn: outer over x[N,R,C], inner over rows (boolean_mask) -> ragged; outer row = inner flat_values."""

    @tf.function(input_signature=[tf.TensorSpec([None, None, None], tf.float32, name="x")])
    def f(x):
        spec = tf.RaggedTensorSpec(shape=[None], dtype=tf.float32, ragged_rank=0)

        def outer(m):
            inner = tf.map_fn(
                lambda row: tf.boolean_mask(row, row > 0), m, fn_output_signature=spec
            )
            return inner.flat_values

        r = tf.map_fn(outer, x, fn_output_signature=spec)
        return tf.identity(r.flat_values, name="values"), tf.identity(
            r.row_splits, name="row_splits"
        )

    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    return f, [x], "nested map_fn (ragged inner inside ragged outer) -> values + row_splits"


MODELS = [
    ("tf_ragged_boolean_mask", m_boolean_mask),
    ("tf_ragged_boolean_mask_concat", m_boolean_mask_concat),
    ("tf_ragged_rows_concat", m_rows_concat),
    ("tf_ragged_to_tensor", m_to_tensor),
    ("tf_ragged_prefix_by_length", m_prefix_by_length),
    ("tf_ragged_prefix_rows_by_length", m_prefix_rows_by_length),
    ("tf_ragged_input_map_fn", m_ragged_input),
    ("tf_ragged_nested_map_fn", m_nested),
    ("tf_tensorarray_concat", m_tensorarray_concat),
    ("tf_while_grow_concat", m_while_grow_concat),
]


# ---------------------------------------------------------------- inventory
def walk(graph, where, counts, seq_where):
    for node in graph.node:
        counts[node.op_type] += 1
        if node.op_type in SEQ_OPS:
            seq_where[node.op_type].add(where)
        for a in node.attribute:
            subs = []
            if a.type == onnx.AttributeProto.GRAPH:
                subs = [a.g]
            elif a.type == onnx.AttributeProto.GRAPHS:
                subs = list(a.graphs)
            for sg in subs:
                walk(sg, f"{where} > {node.op_type}({node.name}).{a.name}", counts, seq_where)


def inventory(model):
    counts, seq_where = Counter(), {}
    seq_where = __import__("collections").defaultdict(set)
    walk(model.graph, "main", counts, seq_where)
    return counts, seq_where


# ---------------------------------------------------------------- driver
def export_one(stem, builder):
    f, inputs, desc = builder()
    path = os.path.join(OUT, stem + ".onnx")
    tf_out = f(*[tf.constant(a) for a in inputs])
    if not isinstance(tf_out, (tuple, list)):
        tf_out = [tf_out]
    tf_out = [t.numpy() for t in tf_out]
    model_proto, _ = tf2onnx.convert.from_function(
        f, input_signature=f.input_signature, opset=OPSET, output_path=path
    )
    checks = []
    for full in (False, True):
        try:
            onnx.checker.check_model(model_proto, full_check=full)
            checks.append("pass")
        except Exception as e:  # report only; ORT is the real test
            checks.append("FAIL(" + str(e).splitlines()[0][:120] + ")")
    in_names = [i.name for i in model_proto.graph.input]
    feeds = dict(zip(in_names, inputs, strict=False))
    np.savez(os.path.join(OUT, stem + ".npz"), **feeds)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    ort_out = sess.run(None, feeds)
    ok = len(ort_out) == len(tf_out) and all(
        o.shape == t.shape and np.allclose(o, t, rtol=1e-5, atol=1e-6)
        for o, t in zip(ort_out, tf_out, strict=False)
    )
    counts, seq_where = inventory(model_proto)
    print(f"=== {stem}.onnx  ({os.path.getsize(path)} bytes)  {desc}")
    print(
        f"  inputs: {[(i.name, [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim]) for i in model_proto.graph.input]}"
    )
    print(
        f"  outputs: {[o.name for o in model_proto.graph.output]}  shapes TF={[t.shape for t in tf_out]} ORT={[o.shape for o in ort_out]}"
    )
    print(f"  ORT == TF: {ok}   onnx.checker basic/full_check: {checks[0]} / {checks[1]}")
    print("  ops: " + ", ".join(f"{k}:{v}" for k, v in sorted(counts.items())))
    if seq_where:
        for op, ws in sorted(seq_where.items()):
            print(f"  SEQ {op}: " + "; ".join(sorted(ws)))
    else:
        print("  SEQ: none")
    return ok


def main():
    global OUT
    args = sys.argv[1:]
    if args[:1] == ["--out"]:
        OUT, args = args[1], args[2:]
    os.makedirs(OUT, exist_ok=True)
    only = set(args)
    results = {}
    for stem, builder in MODELS:
        if only and stem not in only:
            continue
        try:
            results[stem] = "OK" if export_one(stem, builder) else "MISMATCH"
        except Exception as e:  # record and continue
            for ext in (".onnx", ".npz"):
                p = os.path.join(OUT, stem + ext)
                if os.path.exists(p):
                    os.remove(p)
            msg = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
            print(f"=== {stem}: EXPORT/RUN FAILED: {msg}")
            traceback.print_exc(limit=3)
            results[stem] = "FAILED " + msg
    print("\nSUMMARY")
    for k, v in results.items():
        print(f"  {k}: {v}")


if __name__ == "__main__":
    main()
