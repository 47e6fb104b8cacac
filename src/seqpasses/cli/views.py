"""What ``seqpasses inspect`` and ``seqpasses shapes`` print."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

import onnx_ir as ir

from seqpasses.core.graph import all_nodes, graph_paths, is_default
from seqpasses.core.ops import LEFT_OPS, OPTIONAL_OPS, SEQUENCE_OPS
from seqpasses.core.proto import all_proto_nodes
from seqpasses.inference import shape_facts
from seqpasses.options import Options
from seqpasses.pipeline import Loaded, load, optimize_loaded
from seqpasses.report import Report, Rewrite

__all__ = ["inspect_command", "shapes_command"]


def _format_shape(shape: tuple[int | str | None, ...] | None) -> str:
    if shape is None:
        return "?"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _unheld(loaded: Loaded, what: str) -> int:
    """A model optimize hands back unchanged: what ``inspect`` and ``shapes`` say of it."""
    counts = Counter(node.op_type for node in all_proto_nodes(loaded.proto) if not node.domain)
    ops = sum(n for op, n in counts.items() if op in SEQUENCE_OPS)
    print(f"{ops} sequence ops: all left ({what}: {loaded.unheld})")
    return 0


def shapes_command(args: argparse.Namespace) -> int:
    """``seqpasses shapes``: the inferred type and shape of outputs and sequence values."""
    loaded = load(args.input, Options(strict_input=args.strict_input))
    if loaded.model is None:
        return _unheld(loaded, "no shapes inferred, optimize writes it unchanged")
    facts = shape_facts(loaded.model)
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


def inspect_command(path: Path, options: Options) -> int:
    """``seqpasses inspect``: every sequence and optional op with its fate: optimize's own run
    (the one path, the same options), on a fresh copy of the file that is not written."""
    loaded = load(path, options)
    for warning in loaded.warnings:
        print(f"seqpasses: warning: {warning}", file=sys.stderr)
    model = loaded.model
    if model is None:
        return _unheld(loaded, "optimize writes it unchanged")
    loaded.warnings = []
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
    optimize_loaded(loaded, options, report)
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
