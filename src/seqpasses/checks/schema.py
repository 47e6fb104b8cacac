"""The gate's word on arities: an ONNX op's inputs and outputs against its schema, a body's
against the node that holds it, a call's against the function it calls."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import onnx

from seqpasses.checks.dtypes import Refusal

__all__ = ["arity", "call_arity"]


def call_arity(
    node: onnx.NodeProto, function: onnx.FunctionProto, label: Callable[[], str]
) -> None:
    if len(node.input) > len(function.input) or len(node.output) > len(function.output):
        raise Refusal(
            f"{label()} gives {len(node.input)} inputs and takes {len(node.output)} outputs "
            f"of a function of {len(function.input)} inputs and {len(function.output)} outputs"
        )


@cache
def _schema(op_type: str, version: int) -> tuple[int, int, int, int] | None:
    """The least and most inputs and outputs of an ONNX op at an opset (None: not known)."""
    try:
        schema = onnx.defs.get_schema(op_type, version, "")
    except Exception:
        return None
    return schema.min_input, schema.max_input, schema.min_output, schema.max_output


def arity(
    node: onnx.NodeProto,
    label: Callable[[], str],
    version: int,
    bodies: dict[str, onnx.GraphProto],
) -> None:
    """The node's inputs and outputs against its schema, and its bodies' against the node."""
    found = _schema(node.op_type, version) if version else None
    if found is not None:
        least_in, most_in, least_out, most_out = found
        given = len(node.input)
        if given < least_in or given > most_in:
            raise Refusal(f"{label()} has {given} inputs; the op takes {least_in} to {most_in}")
        if len(node.output) < least_out or len(node.output) > most_out:
            raise Refusal(
                f"{label()} has {len(node.output)} outputs; the op gives {least_out} to {most_out}"
            )
    op = node.op_type
    if op == "Split":  # (onnx's inference reads past its vector on a mismatch: an abort)
        for attr in node.attribute:
            if attr.name == "num_outputs" and attr.i != len(node.output):
                raise Refusal(f"{label()} has {len(node.output)} outputs but num_outputs {attr.i}")
    if not bodies:
        return
    if op == "Loop" and "body" in bodies:
        body = bodies["body"]
        carried = len(node.input) - 2
        if len(body.input) != len(node.input) or len(body.output) < 1 + carried:
            raise Refusal(
                f"{label()} carries {max(carried, 0)} values, but its body takes "
                f"{len(body.input)} inputs and gives {len(body.output)} outputs "
                "(it must take 2 + the carried ones and give 1 + the carried ones + its scans)"
            )
        if len(node.output) > len(body.output) - 1:
            raise Refusal(
                f"{label()} has {len(node.output)} outputs; its body gives "
                f"{len(body.output) - 1} (carried and scanned)"
            )
    elif op == "If":
        for branch in ("then_branch", "else_branch"):
            found_branch = bodies.get(branch)
            if found_branch is not None and len(found_branch.output) != len(node.output):
                raise Refusal(
                    f"{label()} has {len(node.output)} outputs; its {branch} gives "
                    f"{len(found_branch.output)}"
                )
    elif op in ("SequenceMap", "Scan") and "body" in bodies:
        body = bodies["body"]
        wrong = len(body.output) != len(node.output) or (
            len(body.input) != len(node.input)
            if op == "SequenceMap"
            else len(body.input) > len(node.input)
        )
        if wrong:
            raise Refusal(
                f"{label()} takes {len(node.input)} inputs and gives {len(node.output)} "
                f"outputs; its body takes {len(body.input)} and gives {len(body.output)}"
            )
