"""Modules written the way real models' own export paths write them (a speech recognizer's
CIF predictor, a vocoder's sampling loop, an embedding bag, repeat_interleave, a loop over a
convolution's output length), for scripts/export_torch_models.py: the lists they build are
what others' export code makes today."""

from __future__ import annotations

import torch
from torch import Tensor, nn


class EmbeddingBagSum(nn.Module):
    """``nn.EmbeddingBag(mode="sum")``: the dynamo exporter writes a while Loop over the
    offsets that appends one ``[1, 16]`` row per bag, the row out of an If (an empty bag is a
    row of zeros)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.bag = nn.EmbeddingBag(20, 16, mode="sum")

    def forward(self, x: Tensor, offsets: Tensor) -> Tensor:
        return self.bag(x, offsets)


class CifPredictor(nn.Module):
    """The integrate-and-fire loop of a CIF predictor (continuous integrate-and-fire, as
    speech recognizers export it): per time step it appends the running weight ``[B]`` and
    the running frame ``[B, C]``, shapes the exporter computes from the input's sizes."""

    def __init__(self, threshold: float = 1.0) -> None:
        super().__init__()
        self.threshold = threshold

    def forward(self, hidden: Tensor, alphas: Tensor) -> tuple[Tensor, Tensor]:
        batch_size, len_time, hidden_size = hidden.size()
        integrate = torch.zeros([batch_size], dtype=hidden.dtype)
        frame = torch.zeros([batch_size, hidden_size], dtype=hidden.dtype)
        list_fires: list[Tensor] = []
        list_frames: list[Tensor] = []
        for t in range(len_time):
            alpha = alphas[:, t]
            completion = torch.ones([batch_size], dtype=hidden.dtype) - integrate
            integrate = integrate + alpha
            list_fires.append(integrate)
            fire = integrate >= self.threshold
            integrate = torch.where(fire, integrate - torch.ones([batch_size]), integrate)
            cur = torch.where(fire, completion, alpha)
            remainder = alpha - cur
            frame = frame + cur[:, None] * hidden[:, t, :]
            list_frames.append(frame)
            frame = torch.where(
                fire[:, None].repeat(1, hidden_size), remainder[:, None] * hidden[:, t, :], frame
            )
        fires = torch.stack(list_fires, 1)
        frames = torch.stack(list_frames, 1)
        return fires, frames


class GruCell(nn.Module):
    """``nn.GRUCell``'s arithmetic written out (``nn.GRUCell`` itself does not export from a
    scripted module: the TorchScript exporter cannot translate its ``input.dim() in (1, 2)``
    check)."""

    def __init__(self, inputs: int, hidden: int) -> None:
        super().__init__()
        self.ih = nn.Linear(inputs, 3 * hidden)
        self.hh = nn.Linear(hidden, 3 * hidden)

    def forward(self, x: Tensor, h: Tensor) -> Tensor:
        ir_, iz, in_ = self.ih(x).chunk(3, 1)
        hr, hz, hn = self.hh(h).chunk(3, 1)
        r = torch.sigmoid(ir_ + hr)
        z = torch.sigmoid(iz + hz)
        n = torch.tanh(in_ + r * hn)
        return (1.0 - z) * n + z * h


class VocoderSampling(nn.Module):
    """A vocoder's sampling loop: two GRU cells whose states travel in a list, read by
    position in an inner loop over the layers, a per-step output appended, an If choosing
    between the first step and the rest."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.cells = nn.ModuleList([GruCell(4, 8), GruCell(8, 8)])
        self.project = nn.Linear(8, 4)

    def forward(self, mels: Tensor) -> Tensor:
        batch = mels.size(0)
        states = [torch.zeros(batch, 8), torch.zeros(batch, 8)]
        x = torch.zeros(batch, 4)
        outputs: list[Tensor] = []
        for t in range(mels.size(1)):
            if t == 0:  # noqa: SIM108 (an If in the loop, as the vocoder writes it)
                x = mels[:, t]
            else:
                x = x + mels[:, t]
            new_states: list[Tensor] = []
            inp = x
            for i, cell in enumerate(self.cells):
                h = cell(inp, states[i])
                new_states.append(h)
                inp = h
            states = new_states
            x = torch.tanh(self.project(inp))
            outputs.append(x)
        return torch.stack(outputs, 1)


class RepeatInterleave(nn.Module):
    """``torch.repeat_interleave`` with a tensor of repeats: the TorchScript exporter splits
    the input into rows by ``ConstantOfShape(Shape(repeats), 1)``, all ones."""

    def forward(self, x: Tensor, repeats: Tensor) -> Tensor:
        return torch.repeat_interleave(x, repeats, dim=0)


class ConvFrames(nn.Module):
    """A loop over the frames a strided convolution makes: its trip count is the output's
    length, computed from the input's through the convolution (known once the input's shape
    is pinned)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv1d(2, 3, kernel_size=3, stride=2)

    def forward(self, x: Tensor) -> Tensor:
        y = self.conv(x)
        frames: list[Tensor] = []
        for i in range(y.size(2)):
            frames.append(torch.relu(y[:, :, i]))
        return torch.stack(frames, 1)


class SampledSteps(nn.Module):
    """A sampling loop: each step draws a token with an unseeded ``torch.multinomial``, and
    the list of draws is stacked (two runs of the same model differ)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.logits = nn.Linear(4, 6)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        draws: list[Tensor] = []
        probs = torch.softmax(self.logits(x), -1)
        for _ in range(3):
            draws.append(torch.multinomial(probs, 1))
        return torch.cat(draws, 1), probs


class DetectionPostprocess(nn.Module):
    """A detector's per-image postprocessing: the boxes whose score passes a threshold (a
    count the data decides) and that count, each collected in a list over the images."""

    def forward(self, boxes: Tensor, scores: Tensor) -> tuple[Tensor, Tensor]:
        kept: list[Tensor] = []
        counts: list[Tensor] = []
        for i in range(boxes.size(0)):
            chosen = boxes[i][scores[i] > 0.5]
            kept.append(chosen)
            counts.append(torch.tensor(chosen.size(0)))
        return torch.cat(kept, 0), torch.stack(counts)


class GreedyDecode(nn.Module):
    """Greedy decoding to a fixed length: ``while len(tokens) < max_len``, each step reads
    ``tokens[-1]`` and appends the argmax (the loop's condition is the list's length)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.embed = nn.Embedding(10, 8)
        self.cell = nn.Linear(16, 8)
        self.project = nn.Linear(8, 10)
        self.max_len = 5

    def forward(self, h: Tensor) -> tuple[Tensor, Tensor]:
        tokens: list[Tensor] = [torch.zeros(h.size(0), dtype=torch.long)]
        logits: list[Tensor] = []
        while len(tokens) < self.max_len:
            h = torch.tanh(self.cell(torch.cat([self.embed(tokens[-1]), h], 1)))
            step = self.project(h)
            logits.append(step)
            tokens.append(step.argmax(-1))
        return torch.stack(tokens, 1), torch.stack(logits, 1)


class AnchorsPerImage(nn.Module):
    """torchvision's anchor generator: a grid of anchors per feature level (``arange`` over
    its height and width), then per image a list over the levels, concatenated, and the
    images stacked."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes = [8.0, 16.0]

    def forward(self, p3: Tensor, p4: Tensor) -> Tensor:
        levels: list[Tensor] = []
        for i, feature in enumerate([p3, p4]):
            ys = torch.arange(feature.size(2), dtype=torch.float32) * self.sizes[i]
            xs = torch.arange(feature.size(3), dtype=torch.float32) * self.sizes[i]
            gy, gx = torch.meshgrid(ys, xs, indexing="ij")
            levels.append(torch.stack([gx.reshape(-1), gy.reshape(-1)], 1))
        anchors: list[Tensor] = []
        for b in range(p3.size(0)):
            shifted: list[Tensor] = []
            for grid in levels:
                shifted.append(grid + p3[b, 0, 0, 0])
            anchors.append(torch.cat(shifted, 0))
        return torch.stack(anchors, 0)
