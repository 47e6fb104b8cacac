"""What ``seqpasses inspect`` and ``seqpasses shapes`` print."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import onnx
import onnx_ir as ir

from seqpasses.cli.arguments import input_shapes, output_named, shown_for
from seqpasses.core.graph import all_nodes, graph_paths, is_default
from seqpasses.core.ops import LEFT_OPS, OPTIONAL_OPS, SEQUENCE_OPS
from seqpasses.core.proto import all_proto_nodes
from seqpasses.errors import BadInputError
from seqpasses.inference import annotate, declared_facts, shape_facts
from seqpasses.options import Options
from seqpasses.pipeline import Loaded, load, optimize_loaded
from seqpasses.report import ORIGIN, Report, Rewrite
from seqpasses.terminal import say

__all__ = ["inspect_command", "shapes_command"]

EXIT_DISPROVED = 1
"""``shapes --strict``: a shape the model declares is disproved (as ``--check``'s difference)."""


def _format_shape(shape: tuple[int | str | None, ...] | None) -> str:
    if shape is None:
        return "?"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _unheld(loaded: Loaded, what: str) -> int:
    """A model optimize hands back unchanged: what ``inspect`` and ``shapes`` say of it."""
    counts = Counter(node.op_type for node in all_proto_nodes(loaded.proto) if not node.domain)
    ops = sum(n for op, n in counts.items() if op in SEQUENCE_OPS)
    say(f"{ops} sequence ops: all left ({what}: {loaded.unheld})")
    return 0


def shapes_command(args: argparse.Namespace) -> int:
    """``seqpasses shapes``: the inferred type and shape of outputs and sequence values; with
    ``-o``, the model written with every value it can type declared (:func:`write_shapes`)."""
    options = Options(strict_input=args.strict_input, input_shapes=input_shapes(args.input_shape))
    if args.output is not None:
        output_named(args.output)
    shown = shown_for(args.output)
    loaded = load(args.input, options)
    if loaded.model is None:
        if args.output is not None:
            raise BadInputError(f"{args.input}: no shapes inferred ({loaded.unheld})")
        return _unheld(loaded, "no shapes inferred, optimize writes it unchanged")
    if args.strict:
        disproved: list[str] = []
        annotate(loaded.fresh(), options, disproved=disproved)
        if disproved:
            more = f" (and {len(disproved) - 1} more)" if len(disproved) > 1 else ""
            say(
                f"seqpasses: {args.input}: a declared shape is disproved (--strict): "
                f"{disproved[0]}{more}; nothing written",
                file=sys.stderr,
            )
            return EXIT_DISPROVED
    declared: ir.Model | None = None  # (what -o writes: the table prints it)
    if args.output is not None:
        declared = write_shapes(loaded, options, args.input, args.output)
        if not args.quiet:
            say(f"wrote {args.output}", file=shown)
    if args.quiet:  # (the model was read and its shapes inferred: the exit code says so)
        if declared is None:
            annotate(loaded.fresh(), options)
        return 0
    if declared is None and options.input_shapes:  # (with -o, annotate said these)
        from seqpasses.passes.input_shapes import fix_input_shapes

        for note in fix_input_shapes(loaded.model, options.shapes()):
            say(f"  note: {note}", file=sys.stderr)
    if options.input_shapes and args.output is not None:
        from seqpasses.passes.input_shapes import fix_input_shapes

        fix_input_shapes(loaded.model, options.shapes())
    if declared is None:
        declared = loaded.fresh()
        annotate(declared, options)
    facts = declared_facts(declared) or shape_facts(declared)
    outputs = set(facts.outputs)
    chosen = [
        f
        for f in facts.values
        if args.all or f.kind == "sequence" or (f.graph == "main" and f.name in outputs)
    ]
    if args.json:  # (JSON escapes every control character itself)
        data = {"outputs": facts.outputs, "values": [f.as_dict() for f in chosen]}
        shown.write(json.dumps(data, indent=2) + "\n")
        return 0
    rows = [("value", "graph", "kind", "dtype", "shape", "length")]
    for f in chosen:
        length = "" if f.length is None else str(f.length)
        if f.value is not None:
            length = f"= {f.value}"
        rows.append((f.name, f.graph, f.kind, f.dtype or "?", _format_shape(f.shape), length))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        line = "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        say(line, file=shown)
    return 0


def write_shapes(loaded: Loaded, options: Options, source: Path, output: Path) -> ir.Model:
    """Write ``loaded``'s model with every value seqpasses can type declared, nothing else
    changed (:func:`seqpasses.inference.annotate`), as ``optimize`` writes: atomically, its
    weights carried a weight at a time, external data kept external. Returns the model as
    written."""
    from seqpasses.cli.job import stage_model
    from seqpasses.cli.plan import plan_job
    from seqpasses.io import external_data_files
    from seqpasses.transaction import Transaction

    model = loaded.fresh()  # (the held model stays as loaded, for the table)
    data = external_data_files(loaded.proto, loaded.folder or Path("."), loaded.file)
    external = f"{output.name}.data" if data else None
    planned, _ = plan_job(source, output, external, None, data)
    notes = annotate(model, options)
    for note in notes:
        say(f"  note: {note}", file=sys.stderr)
    with Transaction() as transaction:
        stage_model(transaction, model, planned)
        transaction.commit()
    return model


def _in_walk_order(
    graph: onnx.GraphProto | onnx.FunctionProto, found: list[onnx.NodeProto]
) -> None:
    """The nodes of ``graph`` in :func:`~seqpasses.core.graph.all_nodes`' order: each node,
    then the nodes of its subgraphs, depth first."""
    for node in graph.node:
        found.append(node)
        for attr in node.attribute:
            inner = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
            for sub in inner:
                _in_walk_order(sub, found)


def _tag(loaded: Loaded) -> list[tuple[str, str, str, str]]:
    """Tag every node of the input with its index in a depth-first walk
    (:data:`~seqpasses.report.ORIGIN`, which copies keep) and hold it again from the tagged
    protobuf: each record the run makes then names the input node it is or copies. Returns
    each sequence or optional op's tag, op, name and graph, in walk order."""
    nodes: list[onnx.NodeProto] = []
    for graph in [loaded.proto.graph, *loaded.proto.functions]:
        _in_walk_order(graph, nodes)
    for index, node in enumerate(nodes):
        entry = node.metadata_props.add()
        entry.key, entry.value = ORIGIN, str(index)
    loaded.model = loaded.fresh()
    where = graph_paths(loaded.model)
    return [
        (node.metadata_props[ORIGIN], node.op_type, node.name or "", where[node])
        for node in all_nodes(loaded.model)
        if node.op_type in LEFT_OPS and is_default(node)
    ]


def inspect_command(path: Path, options: Options) -> int:
    """``seqpasses inspect``: every sequence and optional op with its fate, made of the records
    of optimize's own run (the one path, the same options) on a copy that is not written: a
    node is left when a record of what stays names it (or one of its copies), removed when
    none does; the last line is the one optimize prints."""
    loaded = load(path, options)
    for warning in loaded.warnings:
        say(f"seqpasses: warning: {warning}", file=sys.stderr)
    if loaded.model is None:
        _unheld(loaded, "optimize writes it unchanged")
        report = Report()
        optimize_loaded(loaded, options, report)
        for line in report.summary_lines():
            say(line)
        return 0
    loaded.warnings = []
    tagged = _tag(loaded)
    report = Report()
    optimize_loaded(loaded, options, report)
    records: dict[str, list[Rewrite]] = {}
    for left in report.left:
        records.setdefault(left.origin, []).append(left)
    rules: dict[str, list[str]] = {}  # the rewrites that name each input node, in order
    for rewrite in report.rewrites:
        named = rules.setdefault(rewrite.origin, [])
        if rewrite.rule not in named:
            named.append(rewrite.rule)
    rows = [("op", "node", "graph", "fate")]
    counts = {"sequence": [0, 0], "optional": [0, 0]}  # ops, left
    for tag, op_type, name, where in tagged:
        tally = counts["optional" if op_type in OPTIONAL_OPS else "sequence"]
        tally[0] += 1
        found = records.pop(tag, [])
        if len(found) == 1 and not found[0].source:
            fate = f"left: {found[0].detail}"
        elif found:
            fate = f"left in {len(found)} copies (unrolled or inlined): {found[0].detail}"
        elif rules.get(tag):
            fate = "removed: " + ", ".join(rules[tag])
        else:  # (no rewrite of its own: its list was known element by element)
            fate = "removed: folded (the list's elements are known)"
        tally[1] += bool(found)
        rows.append((op_type, name or f"#{tag}", where, fate))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for row in rows:
        say("  ".join(c.ljust(w) for c, w in zip(row[:3], widths, strict=True)) + "  " + row[3])
    added = sum(len(found) for found in records.values())  # (records of no input node)
    total, kept = counts["sequence"]
    say(
        f"{total} sequence ops: {total - kept} would be removed, {kept} left"
        + (f", {added} canonical SequenceConstruct/SequenceEmpty added" if added else "")
    )
    total, kept = counts["optional"]
    if total:
        say(f"{total} optional ops: {total - kept} would be removed, {kept} left")
    for line in report.summary_lines():
        say(line)
    return 0
