"""Export small PyTorch modules that build and read lists, with both of torch's exporters.

Writes, for each export, ``sample_models/torch/<name>.onnx`` and ``<name>.npz`` holding, for
each run ``k``, the inputs (``run<k>.input:<name>``) and PyTorch's own outputs
(``run<k>.output:<i>``), so that the tests can check seqpasses against PyTorch's numbers
without torch installed. Run 0 is the export's sample input; modules with run-time trip
counts get more runs with other lengths. Run from the repository
root with torch installed (``pip install torch==2.13.0``):

    python scripts/export_torch_models.py [OUTDIR] [--only NAME ...]

Every module is exported with the TorchScript exporter (``dynamo=False``, scripted so that
Python lists and loops stay lists and loops in the graph); those whose list logic does not
depend on run-time data are also exported with the dynamo exporter (``dynamo=True``), which
traces lists away.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import torch
from torch import Tensor, nn
from torch_real_exports import (
    AnchorsPerImage,
    CifPredictor,
    ConvFrames,
    DetectionPostprocess,
    EmbeddingBagSum,
    GreedyDecode,
    RepeatInterleave,
    VocoderSampling,
)
from torch_run_time_lists import (
    ConditionalAppend,
    DropWeakest,
    HistoryReads,
    IfListLengths,
    ListDelAt,
    ListIndexInput,
    ListInsertAt,
    QueuePop,
    RowDifferences,
    UnbindComprehension,
)

OPSET = 17
# At opset 11 the TorchScript exporter writes some list loops differently (its own scan
# output, split back into a sequence): these modules are exported there too, as ts11_*.
OLD_OPSET = 11
OLD_OPSET_CASES = frozenset(
    {"append_dynamic_cat", "stack_columns", "unbind_dynamic_loop", "split_sizes"}
)


class AppendConstStack(nn.Module):
    """A list built by append in a loop with a constant trip count, then torch.stack."""

    def forward(self, x: Tensor) -> Tensor:
        out: list[Tensor] = []
        for i in range(4):
            out.append(x * float(i + 1))
        return torch.stack(out)


class AppendDynamicCat(nn.Module):
    """Append in a loop whose trip count is the input's first dim (run time), then torch.cat."""

    def forward(self, x: Tensor) -> Tensor:
        out: list[Tensor] = []
        for i in range(x.size(0)):
            out.append(torch.relu(x[i]) + 1.0)
        return torch.cat(out, 0)


class AppendDataDependent(nn.Module):
    """The trip count is a value computed from the data; the list is stacked on axis 1."""

    def forward(self, x: Tensor, steps: Tensor) -> tuple[Tensor, int]:
        out: list[Tensor] = []
        h = x
        for _ in range(int(steps.item())):
            h = torch.tanh(h * 0.5 + 0.1)
            out.append(h)
        return torch.stack(out, 1), len(out)


class SplitIndex(nn.Module):
    """torch.split into chunks of 2 with indexing from both ends."""

    def forward(self, x: Tensor) -> Tensor:
        parts = torch.split(x, 2, dim=1)
        return parts[0] * parts[-1] + parts[1]


class SplitSizes(nn.Module):
    """torch.split with explicit sizes, indexing and len."""

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        parts = torch.split(x, [1, 3, 2], dim=0)
        return parts[1].sum(0) + float(len(parts)), torch.cat([parts[2], parts[0]], 0)


class UnbindStack(nn.Module):
    """torch.unbind, reverse, torch.stack."""

    def forward(self, x: Tensor) -> Tensor:
        rows = torch.unbind(x, 1)
        return torch.stack([rows[2], rows[0], rows[1] * 2.0], 0)


class ChunkCat(nn.Module):
    """torch.chunk and re-concatenation in another order."""

    def forward(self, x: Tensor) -> Tensor:
        chunks = torch.chunk(x, 3, dim=-1)
        return torch.cat([chunks[2], torch.sigmoid(chunks[0]), chunks[1]], -1)


class ListEdits(nn.Module):
    """list pop / del / insert / len on a literal list, then torch.stack."""

    def forward(self, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor, int]:
        items = [x, x + 1.0, x * 2.0, x - 3.0]
        last = items.pop()
        del items[0]
        items.insert(1, y)
        items.append(last)
        return torch.stack(items), items[-2], len(items)


class IfBranchLists(nn.Module):
    """Lists of one length returned from the branches of a data-dependent if."""

    def forward(self, x: Tensor) -> Tensor:
        if bool(x.sum() > 0):  # noqa: SIM108 (an if statement: the exporter emits an If)
            parts = [x, torch.relu(x)]
        else:
            parts = [x * -1.0, x + 1.0]
        return torch.cat(parts, 0) + parts[1].mean()


class RnnCell(nn.Module):
    """A small Elman cell unrolled over time with a loop and a list of hidden states."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.inp = nn.Linear(3, 4)
        self.rec = nn.Linear(4, 4)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        h = torch.zeros(x.size(1), 4)
        states: list[Tensor] = []
        for t in range(x.size(0)):
            h = torch.tanh(self.inp(x[t]) + self.rec(h))
            states.append(h)
        return torch.stack(states), h


class LoopReadsList(nn.Module):
    """A loop whose body reads the list it grows (l[-1], len(l)); its trip count is a dim of
    the input, static in the export (TorchScript itself unrolls ``range(<literal>)``)."""

    def forward(self, x: Tensor) -> Tensor:
        items = [x]
        for _ in range(x.size(0)):
            items.append(items[-1] * 2.0 + float(len(items)))
        return torch.cat(items, 0)


class UnbindLoopStack(nn.Module):
    """unbind into a list, a loop over it that appends, then torch.stack."""

    def forward(self, x: Tensor) -> Tensor:
        out: list[Tensor] = []
        for row in torch.unbind(x, 0):
            out.append(torch.sigmoid(row))
        return torch.stack(out, 0)


class NestedLoops(nn.Module):
    """A list of lists: an inner loop over one run-time dim inside an outer loop over another,
    each inner list stacked, then the outer one."""

    def forward(self, x: Tensor) -> Tensor:
        rows: list[Tensor] = []
        for i in range(x.size(0)):
            row: list[Tensor] = []
            for j in range(x.size(1)):
                row.append(x[i, j] * float(j + 1))
            rows.append(torch.stack(row))
        return torch.stack(rows)


class WhileLoop(nn.Module):
    """A while loop whose end depends on the data, appending each state."""

    def forward(self, x: Tensor) -> Tensor:
        out: list[Tensor] = []
        h = x
        while bool(h.sum() < 100.0):
            h = h * 2.0 + 1.0
            out.append(h)
        return torch.stack(out)


class TwoLists(nn.Module):
    """Two lists appended in one loop over a run-time dim; one stacked, one concatenated."""

    def forward(self, x: Tensor) -> Tensor:
        a: list[Tensor] = []
        b: list[Tensor] = []
        for i in range(x.size(0)):
            a.append(x[i] + 1.0)
            b.append(x[i] * 2.0)
        return torch.cat([torch.stack(a), torch.stack(b)], 1)


class StackColumns(nn.Module):
    """A loop over the columns (a run-time dim) appending x[:, i], stacked on axis 1."""

    def forward(self, x: Tensor) -> Tensor:
        out: list[Tensor] = []
        for i in range(x.size(1)):
            out.append(x[:, i] * 2.0)
        return torch.stack(out, 1)


class ZipUnbind(nn.Module):
    """zip over two unbinds in a loop, products appended and stacked."""

    def forward(self, x: Tensor, y: Tensor) -> Tensor:
        out: list[Tensor] = []
        for a, b in zip(torch.unbind(x), torch.unbind(y)):  # noqa: B905 (TorchScript has no strict=)
            out.append(a * b)
        return torch.stack(out)


class InsertFront(nn.Module):
    """l.insert(0, x[i]) in a loop over a run-time dim: the list comes out reversed."""

    def forward(self, x: Tensor) -> Tensor:
        out: list[Tensor] = []
        for i in range(x.size(0)):
            out.insert(0, x[i] + 1.0)
        return torch.stack(out)


class UnbindDynamicLoop(nn.Module):
    """for t in x.unbind(0) over a run-time dim, appending, then torch.stack."""

    def forward(self, x: Tensor) -> Tensor:
        out: list[Tensor] = []
        for t in x.unbind(0):
            out.append(torch.relu(t) + 1.0)
        return torch.stack(out)


class UnbindRunTimeIndex(nn.Module):
    """x.unbind(1)[i] with i a model input and the unbound dim known only at run time."""

    def forward(self, x: Tensor, i: int) -> tuple[Tensor, int]:
        parts = x.unbind(1)
        return parts[i] * 2.0, len(parts)


class DecodeLoop(nn.Module):
    """Decoding-style: ys = [x]; repeat a run-time number of times (zero included):
    ys.append(f(ys[-1])); torch.stack(ys)."""

    def forward(self, x: Tensor, steps: Tensor) -> Tensor:
        ys: list[Tensor] = [x]
        for _ in range(int(steps.item())):
            ys.append(torch.tanh(ys[-1] * 2.0) + 1.0)
        return torch.stack(ys)


class BranchOnLength(nn.Module):
    """A list appended in a loop over a run-time dim, then stacked inside both branches of an
    if on its length."""

    def forward(self, x: Tensor) -> Tensor:
        rows: list[Tensor] = []
        for i in range(x.size(0)):
            rows.append(x[i] * 2.0)
        if len(rows) > 2:
            return torch.stack(rows) + 1.0
        return torch.stack(rows)


class SumUnbind(nn.Module):
    """A running sum over x.unbind(0) with the unbound dim known only at run time."""

    def forward(self, x: Tensor) -> Tensor:
        acc = torch.zeros_like(x[0])
        for t in x.unbind(0):
            acc = acc + t
        return acc


class PopInBranches(nn.Module):
    """pop inside a conditional block, three times (TorchScript unrolls the literal range):
    each branch keeps the list's length, so every if yields a list of one length."""

    def forward(self, x: Tensor) -> Tensor:
        items = [x, x + 1.0, x * 2.0]
        for i in range(3):
            if bool(x.sum() > float(i)):
                y = items.pop()
                items.insert(0, y * 2.0)
        return torch.stack(items)


class PopThenAppendInIf(nn.Module):
    """pop and append back inside a data-dependent if, then torch.cat."""

    def forward(self, x: Tensor) -> Tensor:
        items = [x, x + 1.0, x * 2.0, x - 1.0]
        if bool(x.sum() > 0.0):
            last = items.pop()
            items.append(last * 3.0)
        return torch.cat(items, 0)


class NestedListReads(nn.Module):
    """A list read and grown across nested loops: an outer loop (unrolled by seqpasses) whose
    body runs an inner loop over a run-time dim starting from the list's last element."""

    def forward(self, x: Tensor) -> Tensor:
        rows: list[Tensor] = [x]
        for _ in range(2):
            acc = rows[-1]
            for j in range(x.size(0)):
                acc = acc + x[j : j + 1].sum()
            rows.append(acc)
        return torch.stack(rows)


class NestedAppendConst(nn.Module):
    """A list of lists: an inner list of three appended per row of a run-time dim."""

    def forward(self, x: Tensor) -> Tensor:
        rows: list[Tensor] = []
        for i in range(x.size(0)):
            row: list[Tensor] = []
            for j in range(3):
                row.append(x[i] * float(j + 1))
            rows.append(torch.stack(row))
        return torch.stack(rows)


class TensorSplit(nn.Module):
    """torch.tensor_split into three uneven parts, reordered."""

    def forward(self, x: Tensor) -> Tensor:
        parts = torch.tensor_split(x, 3, dim=1)
        return torch.cat([parts[2], parts[0]], 1) * parts[1].sum()


class ComputedIndex(nn.Module):
    """Indexing a split list at positions computed from a dim."""

    def forward(self, x: Tensor) -> Tensor:
        parts = torch.split(x, 1, dim=0)
        k = x.size(0) - 2
        return parts[k] + parts[k // 2]


@dataclass
class Case:
    name: str
    make: Callable[[], nn.Module]
    inputs: tuple[Tensor | int, ...]
    input_names: list[str]
    dynamo: bool  # also export with the dynamo exporter
    dynamic_axes: dict[str, dict[int, str]] | None = None
    more: tuple[tuple[Tensor | int, ...], ...] = ()  # more runs (TorchScript export only)


def _cases() -> list[Case]:
    g = torch.Generator().manual_seed(1)

    def rand(*shape: int) -> Tensor:
        return torch.randn(*shape, generator=g)

    return [
        Case("append_const_stack", AppendConstStack, (rand(2, 3),), ["x"], True),
        Case(
            "append_dynamic_cat",
            AppendDynamicCat,
            (rand(5, 3),),
            ["x"],
            False,
            {"x": {0: "n"}},
            ((rand(1, 3),), (rand(8, 3),)),
        ),
        Case(
            "append_data_dependent",
            AppendDataDependent,
            (rand(2, 3), torch.tensor(4)),
            ["x", "steps"],
            False,
            more=((rand(2, 3), torch.tensor(1)), (rand(2, 3), torch.tensor(7))),
        ),
        Case("split_index", SplitIndex, (rand(3, 6),), ["x"], True),
        Case("split_sizes", SplitSizes, (rand(6, 2),), ["x"], True),
        Case("unbind_stack", UnbindStack, (rand(2, 3),), ["x"], True),
        Case("chunk_cat", ChunkCat, (rand(2, 9),), ["x"], True),
        Case("list_edits", ListEdits, (rand(2, 3), rand(2, 3)), ["x", "y"], False),
        Case("if_branch_lists", IfBranchLists, (rand(2, 3),), ["x"], False),
        Case(
            "rnn_cell",
            RnnCell,
            (rand(5, 2, 3),),
            ["x"],
            True,
            {"x": {0: "time"}},
            ((rand(1, 2, 3),), (rand(9, 2, 3),)),
        ),
        Case("loop_reads_list", LoopReadsList, (rand(2, 3),), ["x"], True),
        Case("unbind_loop_stack", UnbindLoopStack, (rand(4, 3),), ["x"], True),
        Case(
            "nested_loops",
            NestedLoops,
            (rand(3, 4),),
            ["x"],
            False,
            {"x": {0: "n", 1: "m"}},
            ((rand(1, 4),), (rand(6, 2),)),
        ),
        Case(
            "while_loop",
            WhileLoop,
            (torch.rand(2, 3, generator=g),),
            ["x"],
            False,
            more=((torch.rand(2, 3, generator=g) * 10.0,), (torch.rand(2, 3, generator=g) * 0.01,)),
        ),
        Case(
            "two_lists",
            TwoLists,
            (rand(3, 2),),
            ["x"],
            False,
            {"x": {0: "n"}},
            ((rand(1, 2),), (rand(7, 2),)),
        ),
        Case(
            "stack_columns",
            StackColumns,
            (rand(2, 5),),
            ["x"],
            False,
            {"x": {1: "m"}},
            ((rand(2, 1),), (rand(2, 8),)),
        ),
        Case("zip_unbind", ZipUnbind, (rand(3, 2), rand(3, 2)), ["x", "y"], True),
        Case(
            "insert_front",
            InsertFront,
            (rand(3, 2),),
            ["x"],
            False,
            {"x": {0: "n"}},
            ((rand(1, 2),), (rand(5, 2),)),
        ),
        Case(
            "unbind_dynamic_loop",
            UnbindDynamicLoop,
            (rand(3, 4),),
            ["x"],
            False,
            {"x": {0: "n"}},
            ((rand(1, 4),), (rand(6, 4),)),
        ),
        Case(
            "unbind_run_time_index",
            UnbindRunTimeIndex,
            (rand(2, 5), 3),
            ["x", "i"],
            False,
            {"x": {1: "m"}},
            ((rand(2, 2), -1), (rand(2, 7), 0)),
        ),
        Case(
            "decode_loop",
            DecodeLoop,
            (rand(2, 3), torch.tensor(3)),
            ["x", "steps"],
            False,
            more=((rand(2, 3), torch.tensor(0)), (rand(2, 3), torch.tensor(6))),
        ),
        Case(
            "branch_on_length",
            BranchOnLength,
            (rand(3, 4),),
            ["x"],
            False,
            {"x": {0: "n"}},
            ((rand(1, 4),), (rand(5, 4),)),
        ),
        Case(
            "pop_in_branches",
            PopInBranches,
            (rand(2, 3),),
            ["x"],
            False,
            more=((-rand(2, 3).abs(),), (rand(2, 3).abs() + 1.0,)),
        ),
        Case(
            "pop_then_append_in_if",
            PopThenAppendInIf,
            (rand(2, 3),),
            ["x"],
            False,
            more=((-rand(2, 3).abs(),), (rand(2, 3).abs(),)),
        ),
        Case("nested_list_reads", NestedListReads, (rand(3, 2),), ["x"], False),
        Case("nested_append_const", NestedAppendConst, (rand(3, 2),), ["x"], False),
        Case("tensor_split", TensorSplit, (rand(2, 7),), ["x"], True),
        Case("computed_index", ComputedIndex, (rand(5, 3),), ["x"], True),
        # lists with run-time positions or lengths (torch_run_time_lists.py)
        Case(
            "list_index_input",
            ListIndexInput,
            (rand(2, 3), 1),
            ["x", "i"],
            False,
            more=((rand(2, 3), -1), (rand(2, 3), 0), (rand(2, 3), -3)),
        ),
        Case(
            "list_insert_at",
            ListInsertAt,
            (rand(2, 3), rand(2, 3), 1),
            ["x", "y", "p"],
            False,
            more=(
                (rand(2, 3), rand(2, 3), 0),
                (rand(2, 3), rand(2, 3), -1),
                (rand(2, 3), rand(2, 3), 2),
            ),
        ),
        Case(
            "list_del_at",
            ListDelAt,
            (rand(4, 3), 1),
            ["x", "p"],
            False,
            {"x": {0: "n"}},
            ((rand(2, 3), -1), (rand(6, 3), 5), (rand(2, 3), 0)),
        ),
        Case(
            "queue_pop",
            QueuePop,
            (rand(2, 3), torch.tensor(4)),
            ["x", "steps"],
            False,
            more=((rand(2, 3), torch.tensor(0)), (rand(2, 3), torch.tensor(1))),
        ),
        Case(
            "conditional_append",
            ConditionalAppend,
            (rand(5, 3),),
            ["x"],
            False,
            {"x": {0: "n"}},
            ((rand(1, 3),), (rand(8, 3),)),
        ),
        Case(
            "if_list_lengths",
            IfListLengths,
            (rand(2, 3).abs(),),
            ["x"],
            False,
            more=((-rand(2, 3).abs(),),),
        ),
        Case(
            "history_reads",
            HistoryReads,
            (rand(4, 3),),
            ["x"],
            False,
            {"x": {0: "n"}},
            ((rand(1, 3),), (rand(7, 3),)),
        ),
        Case(
            "drop_weakest",
            DropWeakest,
            (rand(5, 3), torch.tensor(2)),
            ["x", "steps"],
            False,
            {"x": {0: "n"}},
            ((rand(3, 3), torch.tensor(0)), (rand(6, 3), torch.tensor(5))),
        ),
        Case(
            "row_differences",
            RowDifferences,
            (rand(4, 3),),
            ["x"],
            False,
            {"x": {0: "n"}},
            ((rand(1, 3),), (rand(6, 3),)),
        ),
        Case(
            "unbind_comprehension",
            UnbindComprehension,
            (rand(3, 4),),
            ["x"],
            False,
            {"x": {1: "m"}},
            ((rand(3, 1),), (rand(3, 6),)),
        ),
        Case(
            "sum_unbind",
            SumUnbind,
            (rand(3, 4),),
            ["x"],
            False,
            {"x": {0: "n"}},
            ((rand(1, 4),), (rand(6, 4),)),
        ),
        # as real models write them (torch_real_exports.py)
        Case(
            "embedding_bag",
            EmbeddingBagSum,
            (torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 4])),
            ["x", "offsets"],
            True,
        ),
        Case(
            "repeat_interleave",
            RepeatInterleave,
            (rand(4, 3), torch.tensor([1, 2, 0, 3])),
            ["x", "repeats"],
            False,
            {"x": {0: "n"}, "repeats": {0: "n"}},
            ((rand(2, 3), torch.tensor([2, 2])), (rand(1, 3), torch.tensor([5]))),
        ),
        Case(
            "conv_frames",
            ConvFrames,
            (rand(2, 2, 9),),
            ["x"],
            False,
            {"x": {0: "b", 2: "t"}},
            ((rand(1, 2, 5),), (rand(3, 2, 12),)),
        ),
        Case(
            "cif_predictor",
            CifPredictor,
            (rand(2, 7, 5), torch.rand(2, 7, generator=g)),
            ["hidden", "alphas"],
            False,
            # (as the recognizer's export names them: the alphas' length is its own name)
            {
                "hidden": {0: "batch_size", 1: "len_time"},
                "alphas": {0: "batch_size", 1: "alphas_length"},
            },
            (
                (rand(1, 3, 5), torch.rand(1, 3, generator=g)),
                (rand(3, 12, 5), torch.rand(3, 12, generator=g)),
            ),
        ),
        Case(
            "vocoder_sampling",
            VocoderSampling,
            (rand(2, 5, 4),),
            ["mels"],
            False,
            {"mels": {0: "b", 1: "t"}},
            ((rand(1, 1, 4),), (rand(3, 8, 4),)),
        ),
        Case(
            "detection_postprocess",
            DetectionPostprocess,
            (rand(2, 6, 4), torch.rand(2, 6, generator=g)),
            ["boxes", "scores"],
            False,
            {"boxes": {0: "b", 1: "n"}, "scores": {0: "b", 1: "n"}},
            (
                (rand(1, 3, 4), torch.rand(1, 3, generator=g)),
                (rand(4, 9, 4), torch.rand(4, 9, generator=g)),
            ),
        ),
        Case(
            "greedy_decode",
            GreedyDecode,
            (rand(2, 8),),
            ["h"],
            False,
            {"h": {0: "b"}},
            ((rand(1, 8),), (rand(4, 8),)),
        ),
        Case(
            "anchors_per_image",
            AnchorsPerImage,
            (rand(2, 3, 4, 5), rand(2, 3, 2, 3)),
            ["p3", "p4"],
            False,
            {"p3": {0: "b", 2: "h3", 3: "w3"}, "p4": {0: "b", 2: "h4", 3: "w4"}},
            ((rand(1, 3, 1, 1), rand(1, 3, 1, 2)), (rand(3, 3, 6, 2), rand(3, 3, 3, 1))),
        ),
    ]


def _outputs(result: object) -> list[np.ndarray]:
    items = result if isinstance(result, tuple | list) else (result,)
    return [np.asarray(t.detach().numpy() if isinstance(t, Tensor) else t) for t in items]


def _save(
    out_dir: Path,
    name: str,
    model: onnx.ModelProto,
    case: Case,
    runs: list[tuple[tuple[Tensor | int, ...], list[np.ndarray]]],
) -> None:
    model.producer_name = "pytorch"
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, out_dir / f"{name}.onnx")
    save_runs(out_dir / f"{name}.npz", case.input_names, runs)


def save_runs(
    path: Path,
    input_names: list[str],
    runs: list[tuple[tuple[Tensor | int, ...], list[np.ndarray]]],
) -> None:
    """The ``.npz`` beside an export: for each run ``k``, its inputs (``run<k>.input:<name>``)
    and PyTorch's outputs (``run<k>.output:<i>``)."""
    arrays: dict[str, np.ndarray] = {}
    for k, (inputs, expected) in enumerate(runs):
        for input_name, tensor in zip(input_names, inputs, strict=True):
            arrays[f"run{k}.input:{input_name}"] = (
                tensor.numpy() if isinstance(tensor, Tensor) else np.array(tensor, dtype=np.int64)
            )
        for i, array in enumerate(expected):
            arrays[f"run{k}.output:{i}"] = array
    np.savez(path, **arrays)  # type: ignore[arg-type]


def out_dir_and_only(argv: list[str], default: Path) -> tuple[Path, set[str] | None]:
    """An export script's ``[OUTDIR] [--only NAME ...]``: the folder (made) and the names."""
    only = set(argv[argv.index("--only") + 1 :]) if "--only" in argv else None
    argv = argv[: argv.index("--only")] if "--only" in argv else argv
    out_dir = Path(argv[0]) if argv else default
    out_dir.mkdir(parents=True, exist_ok=True)
    return out_dir, only


def export_torchscript(case: Case, out_dir: Path, opset: int = OPSET) -> str:
    module = torch.jit.script(case.make().eval())
    runs = [(inputs, _outputs(module(*inputs))) for inputs in (case.inputs, *case.more)]
    name = f"ts_{case.name}" if opset == OPSET else f"ts{opset}_{case.name}"
    path = out_dir / f"{name}.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            case.inputs,
            str(path),
            dynamo=False,
            opset_version=opset,
            input_names=case.input_names,
            dynamic_axes=case.dynamic_axes,
        )
    _save(out_dir, name, onnx.load(path), case, runs)
    return name


def export_dynamo(case: Case, out_dir: Path) -> str:
    module = case.make().eval()
    expected = _outputs(module(*case.inputs))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(
            module, case.inputs, dynamo=True, opset_version=18, input_names=case.input_names
        )
    assert program is not None
    _save(out_dir, f"dynamo_{case.name}", program.model_proto, case, [(case.inputs, expected)])
    return f"dynamo_{case.name}"


def main(argv: list[str]) -> int:
    """``[OUTDIR] [--only NAME ...]``: every case, or only the named ones."""
    out_dir, only = out_dir_and_only(argv, Path("sample_models") / "torch")
    for case in _cases():
        if only is not None and case.name not in only:
            continue
        print(export_torchscript(case, out_dir))
        if case.dynamo:
            print(export_dynamo(case, out_dir))
        if case.name in OLD_OPSET_CASES:
            print(export_torchscript(case, out_dir, OLD_OPSET))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
