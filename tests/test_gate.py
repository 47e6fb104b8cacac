"""The gate (seqpasses.checks.wellformed) refuses every member of each class it is for, found
by walking onnx's own schema rather than by listing cases: every string field of every kind
of message, every place a data type sits, ranks and nesting past the bounds."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import onnx
import pytest
from google.protobuf.descriptor import FieldDescriptor
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

import seqpasses
from seqpasses.checks.wellformed import MAX_GRAPH_DEPTH, MAX_RANK, MAX_TYPE_DEPTH, check_wellformed
from seqpasses.errors import BadInputError

PLACEHOLDER = "QQQQZZZZ"
NOT_UTF8 = b"\xff\xfeQQZZZZ"


def _repeated(field: FieldDescriptor) -> bool:
    if hasattr(field, "is_repeated"):
        return bool(field.is_repeated)
    return bool(field.label == FieldDescriptor.LABEL_REPEATED)


def _string_fields(descriptor: object, seen: set[str] | None = None) -> set[tuple[str, str]]:
    """Every (message, string field) reachable from ``descriptor`` in onnx's schema."""
    seen = set() if seen is None else seen
    found: set[tuple[str, str]] = set()
    name = descriptor.full_name  # type: ignore[attr-defined]
    if name in seen:
        return found
    seen.add(name)
    for field in descriptor.fields:  # type: ignore[attr-defined]
        if field.type == FieldDescriptor.TYPE_STRING:
            found.add((name, field.name))
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            found |= _string_fields(field.message_type, seen)
    return found


def _template() -> onnx.ModelProto:
    """A valid model holding at least one message of every kind onnx defines (but maps)."""
    body = h.make_graph(
        [h.make_node("Identity", ["x"], ["b"])],
        "body",
        [],
        [h.make_tensor_value_info("b", T.FLOAT, [2])],
    )
    sparse = h.make_sparse_tensor(
        numpy_helper.from_array(np.array([1.0], np.float32), "sv"),
        numpy_helper.from_array(np.array([0], np.int64), "si"),
        [2],
    )
    node = h.make_node(
        "If",
        ["c"],
        ["y"],
        then_branch=body,
        else_branch=body,
        name="n",
        doc_string="d",
        domain="",
    )
    node.attribute.append(h.make_attribute("t", numpy_helper.from_array(np.ones(2, np.float32))))
    node.attribute.append(h.make_attribute("sp", sparse))
    node.attribute.append(h.make_attribute("tp", h.make_tensor_type_proto(T.FLOAT, ["N"])))
    node.attribute.append(h.make_attribute("g", body))
    ref = onnx.AttributeProto(name="r", ref_attr_name="a", type=onnx.AttributeProto.INT)
    node.attribute.append(ref)
    entry = node.metadata_props.add()
    entry.key, entry.value = "k", "v"
    config = node.device_configurations.add()
    config.configuration_id = "c0"
    spec = config.sharding_spec.add()
    spec.tensor_name = "x"
    dim = spec.sharded_dim.add()
    dim.simple_sharding.add().dim_param = "N"
    x = h.make_tensor_value_info("x", T.FLOAT, ["N"], doc_string="x")
    x.type.denotation = "TENSOR"
    x.type.tensor_type.shape.dim[0].denotation = "DATA_BATCH"
    entry = x.metadata_props.add()
    entry.key, entry.value = "k", "v"
    opaque = onnx.ValueInfoProto(name="o")
    opaque.type.opaque_type.domain = "d"
    opaque.type.opaque_type.name = "o"
    weight = numpy_helper.from_array(np.ones(2, np.float32), "w")
    weight.doc_string = "w"
    entry = weight.external_data.add()  # (the text gate comes before the data gate)
    entry.key, entry.value = "k", "v"
    entry = weight.metadata_props.add()
    entry.key, entry.value = "k", "v"
    graph = h.make_graph(
        [node],
        "g",
        [x, h.make_tensor_value_info("c", T.BOOL, [])],
        [h.make_tensor_value_info("y", T.FLOAT, [2])],
        [weight],
        value_info=[opaque],
        sparse_initializer=[sparse],
        doc_string="g",
    )
    annotation = graph.quantization_annotation.add()
    annotation.tensor_name = "x"
    entry = annotation.quant_parameter_tensor_names.add()
    entry.key, entry.value = "k", "v"
    entry = graph.metadata_props.add()
    entry.key, entry.value = "k", "v"
    function = h.make_function(
        "local",
        "F",
        ["a"],
        ["b"],
        [h.make_node("Identity", ["a"], ["b"])],
        [h.make_opsetid("", 18)],
        attributes=["p"],
        doc_string="f",
    )
    function.attribute_proto.append(h.make_attribute("q", 1))
    function.value_info.append(h.make_tensor_value_info("b", T.FLOAT, [2]))
    entry = function.metadata_props.add()
    entry.key, entry.value = "k", "v"
    function.overload = "o"
    model = h.make_model(
        graph,
        opset_imports=[h.make_opsetid("", 18), h.make_opsetid("local", 1)],
        functions=[function],
        producer_name="p",
        producer_version="1",
        domain="d",
        doc_string="m",
    )
    entry = model.metadata_props.add()
    entry.key, entry.value = "k", "v"
    training = model.training_info.add()
    training.initialization.CopyFrom(body)
    training.algorithm.CopyFrom(body)
    entry = training.initialization_binding.add()
    entry.key, entry.value = "k", "v"
    entry = training.update_binding.add()
    entry.key, entry.value = "k", "v"
    configuration = model.configuration.add()
    configuration.name = "c0"
    configuration.device.append("cpu")
    return model


def _messages(message: object) -> Iterator[object]:
    """Every message held by ``message`` (itself first), set fields only."""
    yield message
    for field, value in message.ListFields():  # type: ignore[attr-defined]
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            for item in value if _repeated(field) else [value]:
                yield from _messages(item)


def _not_utf8_cases() -> Iterator[tuple[str, str, bytes]]:
    """For every string field of every kind of message the template holds: the template
    with that field (of the first message of its kind) made of bytes that are not UTF-8."""
    template = _template()
    done: set[tuple[str, str]] = set()
    for message in _messages(template):
        descriptor = message.DESCRIPTOR  # type: ignore[attr-defined]
        for field in descriptor.fields:
            key = (descriptor.full_name, field.name)
            if field.type != FieldDescriptor.TYPE_STRING or key in done:
                continue
            done.add(key)
            values = getattr(message, field.name)
            if _repeated(field):  # (the first replaced: the node's arity stays as it was)
                previous = values[0] if values else None
                if previous is None:
                    values.append(PLACEHOLDER)
                else:
                    values[0] = PLACEHOLDER
            else:
                previous = values
                setattr(message, field.name, PLACEHOLDER)
            data = template.SerializeToString()
            if not _repeated(field):
                setattr(message, field.name, previous)
            elif previous is None:
                del values[-1]
            else:
                values[0] = previous
            assert data.count(PLACEHOLDER.encode()) == 1
            yield key[0], key[1], data.replace(PLACEHOLDER.encode(), NOT_UTF8)


CASES = list(_not_utf8_cases())


def test_the_template_holds_every_string_field_onnx_defines() -> None:
    wanted = _string_fields(onnx.ModelProto.DESCRIPTOR)
    assert {(message, name) for message, name, _ in CASES} == wanted


def test_the_template_itself_passes() -> None:
    check_wellformed(_template(), "template")


@pytest.mark.parametrize(("message", "name", "data"), CASES, ids=[f"{m}.{n}" for m, n, _ in CASES])
def test_text_that_is_not_utf8_is_refused_in_every_string_field(
    message: str, name: str, data: bytes
) -> None:
    model = onnx.ModelProto()
    model.ParseFromString(data)
    with pytest.raises(BadInputError, match="not UTF-8"):
        check_wellformed(model, "m.onnx")


def _graph(
    *nodes: onnx.NodeProto, inputs: list[onnx.ValueInfoProto] | None = None
) -> onnx.ModelProto:
    x = h.make_tensor_value_info("x", T.FLOAT, [2])
    y = h.make_tensor_value_info("y", T.FLOAT, [2])
    graph = h.make_graph(list(nodes), "g", inputs if inputs is not None else [x], [y])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 18)])


def _refused(model: onnx.ModelProto, text: str) -> None:
    with pytest.raises(BadInputError, match=text) as raised:
        check_wellformed(model, "m.onnx")
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("dtype", [0, -1, 29, 65, 2**31 - 1])
@pytest.mark.parametrize("where", ["Cast.to", "SequenceEmpty.dtype", "EyeLike.dtype", "input"])
def test_a_data_type_onnx_does_not_define_is_refused_wherever_it_sits(
    where: str, dtype: int
) -> None:
    if where == "input":
        if dtype == 0:  # (an input of unknown element type is a declaration left out)
            return
        inputs = [h.make_tensor_value_info("x", T.FLOAT, [2])]
        inputs[0].type.tensor_type.elem_type = dtype
        model = _graph(h.make_node("Identity", ["x"], ["y"]), inputs=inputs)
    else:
        op, attr = where.split(".")
        ins = [] if op == "SequenceEmpty" else ["x"]
        model = _graph(h.make_node(op, ins, ["y"], **{attr: dtype}))
    _refused(model, "data type")


@pytest.mark.parametrize("dtype", [0, 65, 27])
def test_a_tensor_of_a_data_type_that_cannot_be_held_is_refused(dtype: int) -> None:
    tensor = T(name="c", data_type=dtype, dims=[2], raw_data=bytes(2))
    model = _graph(h.make_node("Constant", [], ["y"], value=tensor))
    _refused(model, "data type|cannot write")


def test_ranks_past_numpy_are_refused_in_types_and_tensors() -> None:
    wide = h.make_tensor_value_info("x", T.FLOAT, [1] * (MAX_RANK + 1))
    _refused(_graph(h.make_node("Identity", ["x"], ["y"]), inputs=[wide]), "rank")
    tensor = T(name="c", data_type=T.FLOAT, dims=[1] * (MAX_RANK + 1), raw_data=bytes(4))
    _refused(_graph(h.make_node("Constant", [], ["y"], value=tensor)), "rank")
    fine = h.make_tensor_value_info("x", T.FLOAT, [1] * MAX_RANK)
    check_wellformed(_graph(h.make_node("Identity", ["x"], ["y"]), inputs=[fine]), "m")


@pytest.mark.parametrize("dims", [[-1], [0, 2**62], [2**62, 0], [2**40, 2**40]])
def test_tensor_dims_that_cannot_be_counted_are_refused(dims: list[int]) -> None:
    tensor = T(name="c", data_type=T.FLOAT, dims=dims)
    _refused(_graph(h.make_node("Constant", [], ["y"], value=tensor)), "dim")


def test_types_and_bodies_nested_past_the_bounds_are_refused() -> None:
    kind = h.make_tensor_type_proto(T.FLOAT, [2])
    for _ in range(MAX_TYPE_DEPTH):
        kind = h.make_sequence_type_proto(kind)
    deep = h.make_value_info("x", kind)
    _refused(_graph(h.make_node("Identity", ["x"], ["y"]), inputs=[deep]), "nested")
    leaf = h.make_graph(
        [h.make_node("Identity", ["x"], ["y"])], "b", [], [h.make_tensor_value_info("y", 1, [2])]
    )
    graph = leaf
    for level in range(MAX_GRAPH_DEPTH + 1):  # (one branch nests: the size stays linear)
        node = h.make_node("If", ["c"], ["y"], then_branch=graph, else_branch=leaf)
        graph = h.make_graph([node], f"b{level}", [], [h.make_tensor_value_info("y", 1, [2])])
    _refused(_graph(*graph.node), "nested")


def test_arities_that_do_not_match_are_refused() -> None:
    _refused(_graph(h.make_node("SequenceAt", [], ["y"])), "inputs")
    _refused(_graph(h.make_node("Relu", ["x"], ["y", "z"])), "outputs")
    body = h.make_graph(
        [h.make_node("Identity", ["c"], ["c_out"]), h.make_node("Identity", ["v"], ["v_out"])],
        "body",
        [
            h.make_tensor_value_info("i", T.INT64, []),
            h.make_tensor_value_info("c", T.BOOL, []),
            h.make_tensor_value_info("v", T.FLOAT, [2]),
        ],
        [h.make_tensor_value_info("c_out", T.BOOL, []), h.make_tensor_value_info("v_out", 1, [2])],
    )
    _refused(_graph(h.make_node("Loop", ["", ""], ["y"], body=body)), "carries")
    branch = h.make_graph([], "b", [], [])
    _refused(
        _graph(h.make_node("If", ["x"], ["y"], then_branch=branch, else_branch=branch)),
        "then_branch",
    )


@pytest.mark.parametrize("names", [["F"], ["F", "G"], ["F", "G", "H"]])
def test_functions_that_call_themselves_are_refused(names: list[str]) -> None:
    functions = [
        h.make_function(
            "local",
            name,
            ["a"],
            ["b"],
            [h.make_node(names[(k + 1) % len(names)], ["a"], ["b"], domain="local")],
            [h.make_opsetid("local", 1)],
        )
        for k, name in enumerate(names)
    ]
    model = _graph(h.make_node("F", ["x"], ["y"], domain="local"))
    model.functions.extend(functions)
    model.opset_import.append(h.make_opsetid("local", 1))
    _refused(model, "call themselves")


def test_a_split_whose_outputs_are_not_its_num_outputs_is_refused() -> None:
    """onnx's inference reads past the end of a vector on it (a native abort, not an error)."""
    node = h.make_node("Split", ["x"], ["a", "b", "c"], axis=0, num_outputs=2)
    model = _graph(node)
    model.opset_import[0].version = 18
    _refused(model, "num_outputs")


@pytest.mark.parametrize(
    ("dtype", "dims", "data"),
    [
        (T.BFLOAT16, [], {"raw_data": bytes(4)}),  # (an int32's bytes, now two bfloat16s)
        (T.INT32, [1], {"raw_data": bytes(8)}),
        (T.BOOL, [], {"raw_data": bytes(4)}),
        (T.FLOAT, [3], {"float_data": [1.0, 2.0]}),
        (T.INT64, [2], {}),
        (T.COMPLEX64, [1], {"float_data": [1.0]}),
        (T.STRING, [2], {"string_data": [b"a"]}),
    ],
)
def test_a_tensor_that_does_not_hold_what_its_dims_say_is_refused(
    dtype: int, dims: list[int], data: dict[str, object]
) -> None:
    tensor = T(name="c", data_type=dtype, dims=dims, **data)  # type: ignore[arg-type]
    _refused(_graph(h.make_node("Constant", [], ["y"], value=tensor)), "holds")


def test_a_tensor_holding_what_its_dims_say_passes() -> None:
    for dtype, dims, data in (
        (T.INT4, [3], {"raw_data": bytes(2)}),
        (T.COMPLEX64, [1], {"float_data": [1.0, 0.0]}),
        (T.STRING, [2], {"string_data": [b"a", b"b"]}),
        (T.FLOAT, [0, 5], {}),
    ):
        tensor = T(name="c", data_type=dtype, dims=dims, **data)  # type: ignore[arg-type]
        check_wellformed(_graph(h.make_node("Constant", [], ["y"], value=tensor)), "m")


def test_the_checkers_missing_shape_line_names_the_values() -> None:
    # onnx's checker says which field is missing, not where: the warning names the values
    from seqpasses.checks.admission import admit

    graph = h.make_graph(
        [h.make_node("Relu", ["x"], ["y"]), h.make_node("Neg", ["x"], ["z"])],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [2])],
        [h.make_tensor_value_info("y", T.FLOAT, None), h.make_tensor_value_info("z", T.FLOAT, [2])],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 18)])
    warnings = admit(model, "m.onnx").warnings
    assert len(warnings) == 1
    assert "required but missing (graph output 'y')" in warnings[0], warnings


def _no_output_shape(ir_version: int | None = None) -> onnx.ModelProto:
    graph = h.make_graph(
        [h.make_node("Relu", ["x"], ["y"])],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [2])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 18)])
    if ir_version is not None:
        model.ir_version = ir_version
    return model


def test_a_model_whose_only_fault_is_a_missing_shape_field_is_checked_as_a_declared_one() -> None:
    # ONNX Runtime is asked once (it may lack a kernel the checker cannot see); the result's
    # self-check is then a declared model's, without a second session
    from seqpasses.checks.admission import admit

    admitted = admit(_no_output_shape(), "m.onnx")
    assert not admitted.by_runtime
    assert len(admitted.warnings) == 1
    assert "ONNX Runtime loads the model" in admitted.warnings[0], admitted.warnings
    assert "(graph output 'y')" in admitted.warnings[0]
    # a fault only ONNX Runtime sees: no Gemm kernel for int32
    gemm = h.make_graph(
        [h.make_node("Gemm", ["a", "b"], ["y"])],
        "g",
        [
            h.make_tensor_value_info("a", T.INT32, [2, 3]),
            h.make_tensor_value_info("b", T.INT32, [3, 2]),
        ],
        [h.make_tensor_value_info("y", T.INT32, None)],
    )
    model = h.make_model(gemm, opset_imports=[h.make_opsetid("", 13)])
    with pytest.raises(BadInputError, match="ONNX Runtime cannot load it either"):
        admit(model, "m.onnx")


def test_a_missing_shape_field_beside_another_fault_still_asks_onnx_runtime() -> None:
    from seqpasses.checks.admission import admit

    # below IR 4 an initializer must be a graph input: a fault ONNX Runtime forgives
    old = _no_output_shape(ir_version=3)
    old.graph.node[0].input[0] = "w"
    old.graph.initializer.append(numpy_helper.from_array(np.ones(2, np.float32), "w"))
    admitted = admit(old, "m.onnx")
    assert admitted.by_runtime
    assert "ONNX Runtime loads the model" in admitted.warnings[0], admitted.warnings
    # an op no one defines: a fault it does not
    bad_op = _no_output_shape()
    bad_op.graph.node[0].op_type = "NoSuchOp"
    with pytest.raises(BadInputError, match="ONNX Runtime cannot load it either"):
        admit(bad_op, "m.onnx")


def test_a_model_with_a_missing_shape_field_optimizes_and_verifies() -> None:
    model = _no_output_shape()
    seq = h.make_node("SequenceConstruct", ["x", "x"], ["s"])
    cat = h.make_node("ConcatFromSequence", ["s"], ["z"], axis=0)
    model.graph.node.extend([seq, cat])
    model.graph.output.append(h.make_tensor_value_info("z", T.FLOAT, None))
    with pytest.warns(seqpasses.InputWarning, match="ONNX Runtime loads the model"):
        result = seqpasses.optimize(model)
    assert [n.op_type for n in result.graph.node] == ["Relu", "Concat"]
    feeds = {"x": np.array([1.0, -2.0], np.float32)}
    before = ReferenceEvaluator(model).run(None, feeds)
    after = ReferenceEvaluator(result).run(None, feeds)
    for a, b in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_missing_shape_field_and_a_fault_only_inference_sees_is_refused() -> None:
    # a Loop carrying a list at opset 11 (Loop takes lists from opset 13): the checker says
    # only that the output has no shape field, onnx's strict inference and ONNX Runtime see
    # the type the Loop does not take
    from seqpasses.checks.admission import admit

    body = h.make_graph(
        [h.make_node("SequenceInsert", ["s_in", "x"], ["s_out"])],
        "body",
        [
            h.make_tensor_value_info("i", T.INT64, []),
            h.make_tensor_value_info("c", T.BOOL, []),
            h.make_value_info(
                "s_in", h.make_sequence_type_proto(h.make_tensor_type_proto(T.FLOAT, None))
            ),
        ],
        [
            h.make_tensor_value_info("c", T.BOOL, []),
            h.make_value_info(
                "s_out", h.make_sequence_type_proto(h.make_tensor_type_proto(T.FLOAT, None))
            ),
        ],
    )
    nodes = [
        h.make_node("Constant", [], ["n"], value=numpy_helper.from_array(np.array(2, np.int64))),
        h.make_node("Constant", [], ["t"], value=numpy_helper.from_array(np.array(True))),
        h.make_node("SequenceEmpty", [], ["s0"], dtype=T.FLOAT),
        h.make_node("Loop", ["n", "t", "s0"], ["s"], body=body),
        h.make_node("ConcatFromSequence", ["s"], ["y"], axis=0),
    ]
    graph = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [2])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 11)])
    with pytest.raises(BadInputError, match="ONNX Runtime cannot load it either"):
        admit(model, "m.onnx")
    model.opset_import[0].version = 13  # (where Loop takes lists: taken)
    assert not admit(model, "m.onnx").by_runtime
