"""Dims computed from other dims by arithmetic onnx's inference does not do on names: the
spatial dims of a convolution or pooling window (``floor((H-1)/2)+1``), of a transposed
convolution (``2*H``), of a ``Resize`` (to sizes read in part, or by whole scales: ``2*H``),
and the axis of a concatenation (``M+N``). Pure functions of the
inputs' shapes and the node's attributes; a dim they cannot tell is unnamed (unknown).

Only the NOTSET, VALID and SAME paddings of the spec are followed; a pooling window with
``ceil_mode`` and a stride is followed only without pads and where every window reaches a
stride (elsewhere runtimes differ on its last window), and a transposed convolution given
its ``output_shape`` is left unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import onnx_ir as ir

from seqpasses.core.dims import Dim, add_dims, floor_div, scale_dim

__all__ = ["WINDOWED", "concat_dims", "resized_shape", "windowed_shape"]

WINDOWED = frozenset(
    {"Conv", "ConvInteger", "QLinearConv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool"}
)
"""Ops whose spatial dims :func:`windowed_shape` computes."""

_UNKNOWN = ir.SymbolicDim(None)


def _ints(node: ir.Node, name: str, count: int, default: int) -> list[int] | None:
    attr = node.attributes.get(name)
    if attr is None:
        return [default] * count
    if attr.is_ref() or attr.type != ir.AttributeType.INTS:
        return None
    found = list(attr.as_ints())
    return found if len(found) == count else None


def _auto_pad(node: ir.Node) -> str | None:
    attr = node.attributes.get("auto_pad")
    if attr is None:
        return "NOTSET"
    if attr.is_ref() or attr.type != ir.AttributeType.STRING:
        return None
    return attr.as_string()


def windowed_shape(node: ir.Node, shapes: Sequence[ir.Shape | None]) -> ir.Shape | None:
    """The output shape of a convolution, transposed convolution or pooling node whose
    data (and, for a convolution, weight) shapes are ``shapes``: its batch dim, its
    channels where the weight or the data tell them, and each spatial dim from the window;
    None when the data's rank is unknown or the attributes are not the spec's."""
    op = node.op_type
    data = shapes[0] if shapes else None
    if data is None or len(data) < 3:
        return None
    spatial = len(data) - 2
    weight_at = 3 if op == "QLinearConv" else 1
    weight = shapes[weight_at] if len(shapes) > weight_at else None
    kernel = _ints(node, "kernel_shape", spatial, -1)
    if kernel is not None and -1 in kernel:  # (no attribute: the weight's dims are the window)
        if weight is None or len(weight) != len(data) or op in ("MaxPool", "AveragePool", "LpPool"):
            return None
        kernel = [d if isinstance(d, int) else -1 for d in list(weight)[2:]]
    strides = _ints(node, "strides", spatial, 1)
    dilations = _ints(node, "dilations", spatial, 1)
    pads = _ints(node, "pads", 2 * spatial, 0)
    auto_pad = _auto_pad(node)
    if kernel is None or strides is None or dilations is None or pads is None or auto_pad is None:
        return None
    if -1 in kernel or min(strides) < 1 or min(dilations) < 1 or min(kernel) < 1:
        return None
    channels: Dim = _UNKNOWN
    if op in ("MaxPool", "AveragePool", "LpPool"):
        channels = data[1]
        if node.attributes.get_int("ceil_mode", 0) and max(strides) > 1:
            return _ceil_mode(data, channels, kernel, strides, dilations, pads, auto_pad)
    elif weight is not None and len(weight) == len(data):
        if op == "ConvTranspose":
            group = node.attributes.get_int("group", 1)
            channels = weight[1] * group if isinstance(weight[1], int) else _UNKNOWN
        else:
            channels = weight[0]
    dims: list[Dim] = [data[0], channels]
    for k in range(spatial):
        size, stride, reach = data[2 + k], strides[k], (kernel[k] - 1) * dilations[k] + 1
        if op == "ConvTranspose":
            dims.append(_transposed(node, size, stride, reach, pads[k] + pads[k + spatial], k))
        elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            dims.append(floor_div(size, stride, ceil=True))
        elif auto_pad in ("NOTSET", "VALID"):
            padded = 0 if auto_pad == "VALID" else pads[k] + pads[k + spatial]
            dims.append(add_dims([floor_div(add_dims([size, padded - reach]), stride), 1]))
        else:
            dims.append(_UNKNOWN)
    return ir.Shape(dims)


def _ceil_mode(
    data: ir.Shape,
    channels: Dim,
    kernel: list[int],
    strides: list[int],
    dilations: list[int],
    pads: list[int],
    auto_pad: str,
) -> ir.Shape:
    """A pooling window rounded up (``ceil_mode``): ``ceil((size - reach) / stride) + 1``
    where no pads are given and every window reaches at least a stride (so the last one
    starts inside the data, and runtimes agree); unknown elsewhere."""
    spatial = len(data) - 2
    dims: list[Dim] = [data[0], channels]
    for k in range(spatial):
        reach = (kernel[k] - 1) * dilations[k] + 1
        if auto_pad != "NOTSET" or any(pads) or reach < strides[k]:
            dims.append(_UNKNOWN)
            continue
        rounded = floor_div(add_dims([data[2 + k], -reach]), strides[k], ceil=True)
        dims.append(add_dims([rounded, 1]))
    return ir.Shape(dims)


def _transposed(node: ir.Node, size: Dim, stride: int, reach: int, padded: int, k: int) -> Dim:
    """A transposed convolution's output dim along spatial axis ``k`` (its ``output_shape``
    not given): ``stride * (size - 1) + output_padding + reach - pads``."""
    if node.attributes.get("output_shape") is not None:
        return _UNKNOWN
    auto_pad = _auto_pad(node)
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        return scale_dim(size, stride)
    spatial = k + 1  # (output_padding has one entry per spatial axis)
    attr = node.attributes.get("output_padding")
    extra = 0
    if attr is not None:
        if attr.is_ref() or attr.type != ir.AttributeType.INTS or len(attr.as_ints()) < spatial:
            return _UNKNOWN
        extra = list(attr.as_ints())[k]
    if auto_pad not in ("NOTSET", "VALID"):
        return _UNKNOWN
    padded = 0 if auto_pad == "VALID" else padded
    return add_dims([scale_dim(size, stride), extra + reach - padded - stride])


def concat_dims(node: ir.Node, shapes: Sequence[ir.Shape | None]) -> ir.Shape | None:
    """A ``Concat``'s output shape: the inputs' dims along its axis summed (``M+N``), the
    other dims the first input's where all inputs agree on them; None when a rank is unknown."""
    if not shapes or any(s is None for s in shapes):
        return None
    known = [s for s in shapes if s is not None]
    rank = len(known[0])
    if any(len(s) != rank for s in known) or rank == 0:
        return None
    axis = node.attributes.get_int("axis", 0)
    if not -rank <= axis < rank:
        return None
    axis %= rank
    dims: list[Dim] = []
    for k in range(rank):
        column = [s[k] for s in known]
        if k == axis:
            dims.append(add_dims(list(column)))
        else:
            first = column[0]
            dims.append(first if all(d == first for d in column) else _UNKNOWN)
    return ir.Shape(dims)


def resized_shape(
    node: ir.Node, data: ir.Shape | None, read: Callable[[int], list[Dim | bool | None] | None]
) -> ir.Shape | None:
    """A ``Resize``'s output (opset 11 on; ``read(k)``: input ``k``'s entries, known in part):
    its ``sizes`` where given, each axis by its whole ``scale`` otherwise (``floor(H * 2)`` is
    ``2*H``; a scale that is not whole is left unknown unless the axis is a number), on the
    ``axes`` given or all. Only the ``stretch`` policy and a resize without a crop are
    followed; None otherwise."""
    if data is None or len(node.inputs) < 3:
        return None
    if node.attributes.get_string("keep_aspect_ratio_policy", "stretch") != "stretch":
        return None
    mode = node.attributes.get_string("coordinate_transformation_mode", "half_pixel")
    if mode == "tf_crop_and_resize":
        return None
    rank = len(data)
    axes = node.attributes.get_ints("axes", None)
    axes = list(range(rank)) if axes is None else [a + rank if a < 0 else a for a in axes]
    if any(not 0 <= a < rank for a in axes) or len(set(axes)) != len(axes):
        return None
    sizes = read(3) if len(node.inputs) > 3 and node.inputs[3] is not None else None
    scales = read(2) if node.inputs[2] is not None else None
    dims = list(data)
    if sizes:  # (an empty vector stands for no input)
        if len(sizes) != len(axes):
            return None
        for axis, size in zip(axes, sizes, strict=True):
            known = isinstance(size, int | ir.SymbolicDim) and not isinstance(size, bool)
            dims[axis] = size if known else _UNKNOWN  # type: ignore[assignment]
        return ir.Shape(dims)
    if not scales or len(scales) != len(axes):
        return None  # (a scale that is not whole reads as unknown: the whole vector is)
    for axis, scale in zip(axes, scales, strict=True):
        whole = isinstance(scale, int) and not isinstance(scale, bool) and scale > 0
        dims[axis] = scale_dim(dims[axis], scale) if whole else _UNKNOWN  # type: ignore[arg-type]
    return ir.Shape(dims)
