"""What ``seqpasses inspect`` and ``seqpasses shapes`` print."""

from __future__ import annotations

import argparse
import json
import re

import onnx_ir as ir

from seqpasses.api import optimize_ir
from seqpasses.core.graph import all_nodes, graph_paths, is_default
from seqpasses.inference import shape_facts
from seqpasses.io import load_model
from seqpasses.passes.record_left import LEFT_OPS
from seqpasses.report import OPTIONAL_OPS, Report, Rewrite

__all__ = ["inspect_command", "shapes_command"]


def _format_shape(shape: tuple[int | str | None, ...] | None) -> str:
    if shape is None:
        return "?"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def shapes_command(args: argparse.Namespace) -> int:
    """``seqpasses shapes``: the inferred type and shape of outputs and sequence values."""
    model = load_model(args.input)
    facts = shape_facts(model)
    outputs = set(facts.outputs)
    chosen = [
        f
        for f in facts.values
        if args.all or f.kind == "sequence" or (f.graph == "main" and f.name in outputs)
    ]
    if args.json:
        print(
            json.dumps(
                {"outputs": facts.outputs, "values": [f.as_dict() for f in chosen]}, indent=2
            )
        )
        return 0
    rows = [("value", "graph", "kind", "dtype", "shape", "length")]
    for f in chosen:
        length = "" if f.length is None else str(f.length)
        if f.value is not None:
            length = f"= {f.value}"
        rows.append((f.name, f.graph, f.kind, f.dtype or "?", _format_shape(f.shape), length))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return 0


def inspect_command(args: argparse.Namespace) -> int:
    """``seqpasses inspect``: every sequence and optional op with its fate: the same analysis
    and reasons as optimize's report, on a fresh copy of the file."""
    model = load_model(args.input)  # a fresh copy of the file: optimized in place
    originals: list[tuple[ir.Node, str]] = []
    seen: set[str] = set()
    for index, node in enumerate(all_nodes(model)):
        # the report names nodes by name: an unnamed one gets its walk index, a repeated one
        # (exporters repeat names across subgraphs) keeps its name with the index added
        if not node.name:
            node.name = f"#{index}"
        elif node.name in seen:
            node.name = f"{node.name}#{index}"
        seen.add(node.name)
        originals.append((node, node.name))
    where = graph_paths(model)
    report = Report()
    optimize_ir(
        model,
        freeze_inputs=args.freeze_inputs,
        strict_spec=args.strict_spec,
        report=report,
        max_unroll=args.max_unroll,
        skip=args.skip,
        only=args.only,
    )
    own: dict[str, Rewrite] = {}
    copies: dict[str, list[Rewrite]] = {}
    added = 0
    for left in report.left:
        if left.source == "added":
            added += 1
        elif left.source.startswith("copy of "):
            copies.setdefault(left.source.removeprefix("copy of "), []).append(left)
        else:  # a function inlined by onnx_ir's inliner keeps names, with a suffix per call
            own.setdefault(re.sub(r"_\d+$", "", left.node), left)
            own[left.node] = left
    rows = [("op", "node", "graph", "fate")]
    counts = {"sequence": [0, 0], "optional": [0, 0]}  # ops, left
    for node, key in originals:
        if node.op_type not in LEFT_OPS or not is_default(node):
            continue
        tally = counts["optional" if node.op_type in OPTIONAL_OPS else "sequence"]
        tally[0] += 1
        entry, copied = own.get(key), copies.get(key, [])
        if entry is not None:
            fate = f"left: {entry.detail}"
        elif copied:
            fate = f"left in {len(copied)} copies (unrolled or inlined): {copied[0].detail}"
        else:
            fate = "removed"
        tally[1] += fate != "removed"
        graph = entry.graph if entry else where.get(node, "")
        rows.append((node.op_type, key, graph, fate))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row[:3], widths, strict=True)) + "  " + row[3])
    total, kept = counts["sequence"]
    print(
        f"{total} sequence ops: {total - kept} would be removed, {kept} left"
        + (f", {added} canonical SequenceConstruct/SequenceEmpty added" if added else "")
    )
    total, kept = counts["optional"]
    if total:
        print(f"{total} optional ops: {total - kept} would be removed, {kept} left")
    return 0
