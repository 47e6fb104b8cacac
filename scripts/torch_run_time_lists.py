"""PyTorch modules whose lists have positions or lengths known only at run time, but elements
of one shape: seqpasses holds each such list as one tensor ``[n, *E]``. Imported by
``export_torch_models.py`` (which exports them with the TorchScript exporter)."""

from __future__ import annotations

import torch
from torch import Tensor, nn


class ListIndexInput(nn.Module):
    """l[i] of a literal list, i a model input (either end)."""

    def forward(self, x: Tensor, i: int) -> Tensor:
        parts = [x, x * 2.0, torch.relu(x)]
        return parts[i] + 1.0


class ListInsertAt(nn.Module):
    """l.insert(p, t) with p a model input, then torch.stack and len."""

    def forward(self, x: Tensor, y: Tensor, p: int) -> tuple[Tensor, int]:
        parts = [x, y]
        parts.insert(p, x * y)
        return torch.stack(parts), len(parts)


class ListDelAt(nn.Module):
    """del l[p] of x.unbind(0) (a run-time length), p a model input; then torch.cat."""

    def forward(self, x: Tensor, p: int) -> tuple[Tensor, int]:
        rows = x.unbind(0)
        del rows[p]
        return torch.cat(rows, 0), len(rows)


class QueuePop(nn.Module):
    """A queue: pop(0) and append in a loop with a run-time step count."""

    def forward(self, x: Tensor, steps: Tensor) -> Tensor:
        queue = [x, x * 0.5, x - 1.0]
        for _ in range(int(steps.item())):
            head = queue.pop(0)
            queue.append(torch.tanh(head) + x)
        return torch.stack(queue)


class ConditionalAppend(nn.Module):
    """Append only the rows whose sum is positive (a data-dependent if inside the loop)."""

    def forward(self, x: Tensor) -> tuple[Tensor, int]:
        kept = [x[0] * 0.0]
        for i in range(x.size(0)):
            if bool(x[i].sum() > 0):
                kept.append(x[i] * 2.0)
        return torch.stack(kept), len(kept)


class IfListLengths(nn.Module):
    """The branches of a data-dependent if build lists of different lengths."""

    def forward(self, x: Tensor) -> tuple[Tensor, int]:
        if bool(x.sum() > 0):  # noqa: SIM108 (the statement form TorchScript exports as If)
            parts = [x, x * 2.0, x * 3.0]
        else:
            parts = [-x]
        return torch.stack(parts, 1), len(parts)


class HistoryReads(nn.Module):
    """A recurrence reading its own history at the loop counter: hs[t] (and hs[t // 2])."""

    def forward(self, x: Tensor) -> Tensor:
        hs = [torch.zeros_like(x[0])]
        for t in range(x.size(0)):
            hs.append(torch.tanh(hs[t] + x[t] + 0.5 * hs[t // 2]))
        return torch.stack(hs)


class DropWeakest(nn.Module):
    """Repeatedly remove the element with the smallest sum (a data-dependent position)."""

    def forward(self, x: Tensor, steps: Tensor) -> Tensor:
        pool = list(x.unbind(0))
        for _ in range(int(steps.item())):
            sums = torch.stack([t.sum() for t in pool])
            del pool[int(torch.argmin(sums))]
        return torch.stack(pool)


class RowDifferences(nn.Module):
    """Differences of neighbouring rows of x.unbind(0), a run-time length."""

    def forward(self, x: Tensor) -> Tensor:
        rows = x.unbind(0)
        out: list[Tensor] = []
        for i in range(1, len(rows)):
            out.append(rows[i] - rows[i - 1])
        out.insert(0, rows[0])
        return torch.cat(out, 0)


class UnbindComprehension(nn.Module):
    """[f(c) for c in x.unbind(1)] over a run-time dim, stacked back on axis 1."""

    def forward(self, x: Tensor) -> Tensor:
        cols = [torch.relu(c) * 2.0 + c.sum() for c in x.unbind(1)]
        return torch.stack(cols, 1)
