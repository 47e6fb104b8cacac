"""Small modules written after real vision and sequence architectures, for
scripts/export_vision_models.py: a ResNet, a MobileNetV3, a U-Net, an FPN, a ViT, a RetinaNet
style detection head, a transformer encoder with a padding mask, a GRU/LSTM stack and a TCN.

Each keeps its architecture's code (the shape arithmetic, reshapes, concatenations and
interpolations that real code writes; torchvision's, timm's, milesial's U-Net's, the TCN
paper's) with few channels, so that its export is small (under 100 KB) yet has the values a
real export has. Their inputs' batch, image and sequence sizes are symbolic in the exports.
"""

from __future__ import annotations

import itertools
import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def _randomize_batch_norms(module: nn.Module) -> None:
    """Running statistics and affine parameters that are not the identity, so that a
    folded or kept BatchNormalization changes the numbers."""
    g = torch.Generator().manual_seed(7)
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d | nn.BatchNorm1d):
            n = m.num_features
            m.running_mean.copy_(torch.randn(n, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(n, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(n, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(n, generator=g) * 0.1)


def _conv_bn(cin: int, cout: int, k: int = 3, stride: int = 1, groups: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)
    )


# -- ResNet (torchvision's resnet18, narrow) ------------------------------------------------


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = _conv_bn(cin, cout, 3, stride)
        self.conv2 = _conv_bn(cout, cout, 3, 1)
        self.downsample = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            if stride != 1 or cin != cout
            else None
        )

    def forward(self, x: Tensor) -> Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = F.relu(self.conv1(x))
        out = self.conv2(out)
        return F.relu(out + identity)


class ResNet(nn.Module):
    """Stem conv stride 2 + maxpool, four stages of basic blocks (resnet34's 3, 4, 6, 3;
    stride-2 downsampling with 1x1 projection shortcuts), global average pool, flatten, linear
    head."""

    def __init__(
        self,
        widths: tuple[int, ...] = (4, 6, 8, 12),
        depths: tuple[int, ...] = (3, 4, 6, 3),
        classes: int = 10,
    ) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.stem = nn.Sequential(
            nn.Conv2d(3, widths[0], 7, 2, 3, bias=False), nn.BatchNorm2d(widths[0]), nn.ReLU()
        )
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers = []
        cin = widths[0]
        for i, (w, depth) in enumerate(zip(widths, depths, strict=True)):
            blocks = [BasicBlock(cin, w, 1 if i == 0 else 2)]
            blocks += [BasicBlock(w, w, 1) for _ in range(depth - 1)]
            layers.append(nn.Sequential(*blocks))
            cin = w
        self.layers = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(cin, classes)
        _randomize_batch_norms(self)

    def forward(self, image: Tensor) -> Tensor:
        x = self.maxpool(self.stem(image))
        x = self.layers(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.fc(x)


# -- MobileNetV3 (torchvision's mobilenet_v3_small, narrow) ---------------------------------


def _make_divisible(v: float, divisor: int = 4) -> int:
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


class SqueezeExcitation(nn.Module):
    def __init__(self, channels: int, squeeze: int) -> None:
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(channels, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, channels, 1)

    def forward(self, x: Tensor) -> Tensor:
        scale = self.avgpool(x)
        scale = F.relu(self.fc1(scale))
        scale = F.hardsigmoid(self.fc2(scale))
        return scale * x


class InvertedResidual(nn.Module):
    def __init__(
        self, cin: int, k: int, expanded: int, cout: int, se: bool, hs: bool, stride: int
    ) -> None:
        super().__init__()
        act: type[nn.Module] = nn.Hardswish if hs else nn.ReLU
        layers: list[nn.Module] = []
        if expanded != cin:
            layers += [_conv_bn(cin, expanded, 1), act()]
        layers += [_conv_bn(expanded, expanded, k, stride, groups=expanded), act()]
        if se:
            layers.append(SqueezeExcitation(expanded, _make_divisible(expanded // 4)))
        layers.append(_conv_bn(expanded, cout, 1))
        self.block = nn.Sequential(*layers)
        self.use_res = stride == 1 and cin == cout

    def forward(self, x: Tensor) -> Tensor:
        out = self.block(x)
        return out + x if self.use_res else out


class MobileNetV3(nn.Module):
    """Depthwise convolutions, hardswish, squeeze-excitation (adaptive average pool, two 1x1
    convolutions, hardsigmoid, multiply), the classifier of mobilenet_v3_small."""

    # (kernel, expanded, out, SE, hardswish, stride), mobilenet_v3_small's table at ~1/3 width
    SETTINGS = (
        (3, 8, 8, True, False, 2),
        (3, 24, 8, False, False, 2),
        (3, 24, 8, False, False, 1),
        (5, 32, 12, True, True, 2),
        (5, 40, 12, True, True, 1),
        (5, 40, 16, True, True, 1),
        (5, 48, 16, True, True, 2),
        (5, 48, 16, True, True, 1),
    )

    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        torch.manual_seed(0)
        layers: list[nn.Module] = [_conv_bn(3, 8, 3, 2), nn.Hardswish()]
        cin = 8
        for k, expanded, cout, se, hs, stride in self.SETTINGS:
            layers.append(InvertedResidual(cin, k, expanded, cout, se, hs, stride))
            cin = cout
        layers += [_conv_bn(cin, 40, 1), nn.Hardswish()]
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(
            nn.Linear(40, 32), nn.Hardswish(), nn.Dropout(0.2), nn.Linear(32, classes)
        )
        _randomize_batch_norms(self)

    def forward(self, image: Tensor) -> Tensor:
        x = self.features(image)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.classifier(x)


# -- U-Net (milesial/Pytorch-UNet's, narrow) ------------------------------------------------


class DoubleConv(nn.Sequential):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__(
            nn.Conv2d(cin, cout, 3, padding=1, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(),
            nn.Conv2d(cout, cout, 3, padding=1, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(),
        )


class Up(nn.Module):
    """Upsample (bilinear x2, or a stride-2 transposed convolution), pad to the skip's size
    (the difference of the two sizes, as milesial's U-Net computes it), concatenate, convolve."""

    def __init__(self, cin: int, cskip: int, cout: int, bilinear: bool) -> None:
        super().__init__()
        if bilinear:
            self.up: nn.Module = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
            cup = cin
        else:
            self.up = nn.ConvTranspose2d(cin, cin // 2, 2, stride=2)
            cup = cin // 2
        self.conv = DoubleConv(cup + cskip, cout)

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        x1 = self.up(x1)
        diff_y = x2.size()[2] - x1.size()[2]
        diff_x = x2.size()[3] - x1.size()[3]
        x1 = F.pad(x1, [diff_x // 2, diff_x - diff_x // 2, diff_y // 2, diff_y - diff_y // 2])
        return self.conv(torch.cat([x2, x1], dim=1))


class UNet(nn.Module):
    """Four max-pool downs, two transposed-convolution ups and two bilinear ones, each
    concatenated with its skip connection, a 1x1 head."""

    def __init__(self, widths: tuple[int, ...] = (4, 8, 8, 12, 12), classes: int = 2) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.inc = DoubleConv(3, widths[0])
        self.downs = nn.ModuleList(
            nn.Sequential(nn.MaxPool2d(2), DoubleConv(a, b)) for a, b in itertools.pairwise(widths)
        )
        ups = []
        cin = widths[-1]
        for i, skip in enumerate(reversed(widths[:-1])):
            ups.append(Up(cin, skip, skip, bilinear=i >= 2))
            cin = skip
        self.ups = nn.ModuleList(ups)
        self.outc = nn.Conv2d(cin, classes, 1)
        _randomize_batch_norms(self)

    def forward(self, image: Tensor) -> Tensor:
        x = self.inc(image)
        skips = [x]
        for down in self.downs:
            x = down(x)
            skips.append(x)
        skips.pop()
        for up in self.ups:
            x = up(x, skips.pop())
        return self.outc(x)


# -- FPN (torchvision's FeaturePyramidNetwork over a small backbone) -------------------------


class Backbone(nn.Module):
    """Four stride-2 stages; returns the last three (C3, C4, C5)."""

    def __init__(self, widths: tuple[int, ...] = (8, 12, 16, 24)) -> None:
        super().__init__()
        stages = []
        cin = 3
        for w in widths:
            stages.append(nn.Sequential(_conv_bn(cin, w, 3, 2), nn.ReLU()))
            cin = w
        self.stages = nn.ModuleList(stages)
        self.out_channels = widths[1:]

    def forward(self, x: Tensor) -> list[Tensor]:
        outs = []
        for stage in self.stages:
            x = stage(x)
            outs.append(x)
        return outs[1:]


class FeaturePyramid(nn.Module):
    """Lateral 1x1 convolutions, a top-down path of nearest interpolation to each lateral's
    size (``size=lateral.shape[-2:]``) plus the lateral, 3x3 output convolutions and an extra
    max-pooled level (torchvision's LastLevelMaxPool)."""

    def __init__(self, in_channels: tuple[int, ...], channels: int) -> None:
        super().__init__()
        self.inner = nn.ModuleList(nn.Conv2d(c, channels, 1) for c in in_channels)
        self.layer = nn.ModuleList(nn.Conv2d(channels, channels, 3, padding=1) for _ in in_channels)

    def forward(self, features: list[Tensor]) -> list[Tensor]:
        last_inner = self.inner[-1](features[-1])
        results = [self.layer[-1](last_inner)]
        for idx in range(len(features) - 2, -1, -1):
            inner_lateral = self.inner[idx](features[idx])
            feat_shape = inner_lateral.shape[-2:]
            inner_top_down = F.interpolate(last_inner, size=feat_shape, mode="nearest")
            last_inner = inner_lateral + inner_top_down
            results.insert(0, self.layer[idx](last_inner))
        results.append(F.max_pool2d(results[-1], 1, 2, 0))
        return results


class FPN(nn.Module):
    def __init__(self, channels: int = 12) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.body = Backbone()
        self.fpn = FeaturePyramid(self.body.out_channels, channels)
        _randomize_batch_norms(self)

    def forward(self, image: Tensor) -> tuple[Tensor, ...]:
        return tuple(self.fpn(self.body(image)))


# -- a detection head (torchvision's RetinaNet head over the FPN) ---------------------------


def _permute_and_flatten(layer: Tensor, n: int, c: int, h: int, w: int) -> Tensor:
    # torchvision.models.detection._utils: [N, A*C, H, W] -> [N, H*W*A, C]
    layer = layer.view(n, -1, c, h, w)
    layer = layer.permute(0, 3, 4, 1, 2)
    return layer.reshape(n, -1, c)


class DetectionHead(nn.Module):
    """RetinaNet's classification and regression heads shared over the FPN levels: each
    level's output is reshaped to ``[B, -1, classes]`` and ``[B, -1, 4]`` and the levels are
    concatenated; then the boxes are decoded against the anchors' centers (per level, from the
    feature map's size)."""

    def __init__(self, channels: int = 12, anchors: int = 3, classes: int = 5) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.features = FPN(channels)
        self.cls_conv = nn.Sequential(nn.Conv2d(channels, channels, 3, padding=1), nn.ReLU())
        self.cls_logits = nn.Conv2d(channels, anchors * classes, 3, padding=1)
        self.bbox_conv = nn.Sequential(nn.Conv2d(channels, channels, 3, padding=1), nn.ReLU())
        self.bbox_reg = nn.Conv2d(channels, anchors * 4, 3, padding=1)
        self.anchors = anchors
        self.classes = classes

    def forward(self, image: Tensor) -> tuple[Tensor, Tensor]:
        all_cls, all_box = [], []
        image_h = image.shape[-2]
        for feature in self.features(image):
            n, _, h, w = feature.shape
            cls = self.cls_logits(self.cls_conv(feature))
            box = self.bbox_reg(self.bbox_conv(feature))
            all_cls.append(_permute_and_flatten(cls, n, self.classes, h, w))
            box = _permute_and_flatten(box, n, 4, h, w)
            # anchor centers of this level: stride = image size // feature size
            stride = image_h // h
            ys = (torch.arange(h, dtype=torch.float32) + 0.5) * stride
            xs = (torch.arange(w, dtype=torch.float32) + 0.5) * stride
            cy, cx = torch.meshgrid(ys, xs, indexing="ij")
            centers = torch.stack([cx, cy, cx, cy], -1).reshape(-1, 1, 4)
            centers = centers.expand(-1, self.anchors, -1).reshape(1, -1, 4)
            all_box.append(centers + box * stride)
        return torch.cat(all_cls, 1).sigmoid(), torch.cat(all_box, 1)


# -- ViT (timm's VisionTransformer with dynamic image size, narrow) -------------------------


class Attention(nn.Module):
    """timm's attention: one qkv projection, reshape to heads, explicit matmul and softmax."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.scale = self.head_dim**-0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: Tensor) -> Tensor:
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(b, n, c)
        return self.proj(x)


class SdpaAttention(nn.Module):
    """Hugging Face's ViT attention: separate query, key and value projections, each
    ``view(B, N, heads, d).permute(0, 2, 1, 3)``, ``F.scaled_dot_product_attention``."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.query = nn.Linear(dim, dim)
        self.key = nn.Linear(dim, dim)
        self.value = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x: Tensor) -> Tensor:
        b, n, c = x.shape
        q = self.query(x).view(b, n, self.heads, self.head_dim).permute(0, 2, 1, 3)
        k = self.key(x).view(b, n, self.heads, self.head_dim).permute(0, 2, 1, 3)
        v = self.value(x).view(b, n, self.heads, self.head_dim).permute(0, 2, 1, 3)
        y = F.scaled_dot_product_attention(q, k, v)
        return self.out(y.permute(0, 2, 1, 3).reshape(b, n, c))


class ViTBlock(nn.Module):
    def __init__(self, dim: int, heads: int, sdpa: bool) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn: nn.Module = SdpaAttention(dim, heads) if sdpa else Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class ViT(nn.Module):
    """Patch embedding (a stride-8 convolution), ``flatten(2).transpose(1, 2)``, a class
    token concatenated in front, a position embedding whose patch grid is interpolated to the
    image's grid (timm's ``dynamic_img_size``, DINO's ``interpolate_pos_encoding``), two
    encoder blocks (one with timm's explicit attention, one with Hugging Face's
    ``scaled_dot_product_attention``) and a head on the class token. (``nn.MultiheadAttention``
    is not used: the TorchScript exporter fixes its sequence length to the sample's,
    pytorch/pytorch#117209.)"""

    def __init__(self, dim: int = 24, heads: int = 4, patch: int = 8, classes: int = 10) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.patch_embed = nn.Conv2d(3, dim, patch, patch)
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.grid = 8  # the position embedding's own grid (a 64x64 image)
        self.pos_embed = nn.Parameter(torch.randn(1, 1 + self.grid * self.grid, dim) * 0.02)
        self.blocks = nn.Sequential(ViTBlock(dim, heads, False), ViTBlock(dim, heads, True))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def interpolate_pos_encoding(self, h: int, w: int) -> Tensor:
        cls_pos = self.pos_embed[:, :1]
        patch_pos = self.pos_embed[:, 1:]
        dim = patch_pos.shape[-1]
        patch_pos = patch_pos.reshape(1, self.grid, self.grid, dim).permute(0, 3, 1, 2)
        patch_pos = F.interpolate(patch_pos, size=(h, w), mode="bilinear", align_corners=False)
        patch_pos = patch_pos.permute(0, 2, 3, 1).reshape(1, -1, dim)
        return torch.cat([cls_pos, patch_pos], 1)

    def forward(self, image: Tensor) -> Tensor:
        b = image.shape[0]
        x = self.patch_embed(image)
        h, w = x.shape[-2:]
        x = x.flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(b, -1, -1), x], dim=1)
        x = x + self.interpolate_pos_encoding(h, w)
        x = self.blocks(x)
        x = self.norm(x)
        return self.head(x[:, 0])


# -- sequence models ------------------------------------------------------------------------


class MaskedSelfAttention(nn.Module):
    """ESPnet's MultiHeadedAttention: scores masked with the dtype's minimum where a key is
    padding, softmax, the weights of padding zeroed again."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.d_k = dim // heads
        self.linear_q = nn.Linear(dim, dim)
        self.linear_k = nn.Linear(dim, dim)
        self.linear_v = nn.Linear(dim, dim)
        self.linear_out = nn.Linear(dim, dim)

    def forward(self, x: Tensor, pad: Tensor) -> Tensor:
        n_batch = x.size(0)
        q = self.linear_q(x).view(n_batch, -1, self.heads, self.d_k).transpose(1, 2)
        k = self.linear_k(x).view(n_batch, -1, self.heads, self.d_k).transpose(1, 2)
        v = self.linear_v(x).view(n_batch, -1, self.heads, self.d_k).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.d_k)
        mask = pad.unsqueeze(1).unsqueeze(2)  # [B, 1, 1, T]
        scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)
        attn = torch.softmax(scores, dim=-1).masked_fill(mask, 0.0)
        y = (
            torch.matmul(attn, v)
            .transpose(1, 2)
            .contiguous()
            .view(n_batch, -1, self.heads * self.d_k)
        )
        return self.linear_out(y)


class EncoderLayer(nn.Module):
    """``nn.TransformerEncoderLayer``'s post-norm layer, written out (the TorchScript exporter
    fixes ``nn.MultiheadAttention``'s sequence length to the sample's, pytorch/pytorch#117209)."""

    def __init__(self, dim: int, heads: int, ff: int) -> None:
        super().__init__()
        self.self_attn = MaskedSelfAttention(dim, heads)
        self.linear1 = nn.Linear(dim, ff)
        self.linear2 = nn.Linear(ff, dim)
        self.norm1 = nn.LayerNorm(dim)
        self.norm2 = nn.LayerNorm(dim)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x: Tensor, pad: Tensor) -> Tensor:
        x = self.norm1(x + self.dropout(self.self_attn(x, pad)))
        return self.norm2(x + self.dropout(self.linear2(F.relu(self.linear1(x)))))


class TransformerEncoder(nn.Module):
    """A transformer encoder over ``[batch, seq, d]``: a sinusoidal position table sliced to
    the sequence's length (``pe[:, :seq]``), a padding mask made from the lengths (ESPnet's
    make_pad_mask: ``arange(seq) >= lengths[:, None]``), two encoder layers and a masked mean
    over time."""

    def __init__(self, feat: int = 8, dim: int = 16, heads: int = 2, max_len: int = 64) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.inp = nn.Linear(feat, dim)
        position = torch.arange(max_len).unsqueeze(1)
        div = torch.exp(torch.arange(0, dim, 2) * (-math.log(10000.0) / dim))
        pe = torch.zeros(1, max_len, dim)
        pe[0, :, 0::2] = torch.sin(position * div)
        pe[0, :, 1::2] = torch.cos(position * div)
        self.register_buffer("pe", pe)
        self.layers = nn.ModuleList(EncoderLayer(dim, heads, 2 * dim) for _ in range(2))
        self.out = nn.Linear(dim, 4)
        self.scale = math.sqrt(dim)

    def forward(self, x: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
        seq = x.size(1)
        pad = torch.arange(seq).unsqueeze(0) >= lengths.unsqueeze(1)
        h = self.inp(x) * self.scale + self.pe[:, :seq]
        for layer in self.layers:
            h = layer(h, pad)
        keep = (~pad).unsqueeze(-1).to(h.dtype)
        pooled = (h * keep).sum(1) / keep.sum(1)
        return self.out(h), self.out(pooled)


class RecurrentStack(nn.Module):
    """A two-layer bidirectional ``nn.GRU`` then an ``nn.LSTM`` over ``[batch, seq, feat]``
    (batch first), per-step outputs and the last step's."""

    def __init__(self, feat: int = 8, hidden: int = 12) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.gru = nn.GRU(feat, hidden, num_layers=2, batch_first=True, bidirectional=True)
        self.lstm = nn.LSTM(2 * hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, 5)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        y, _ = self.gru(x)
        y, (h, _) = self.lstm(y)
        return self.out(y), self.out(h[-1])


class Chomp1d(nn.Module):
    def __init__(self, chomp: int) -> None:
        super().__init__()
        self.chomp = chomp

    def forward(self, x: Tensor) -> Tensor:
        return x[:, :, : -self.chomp].contiguous()


class TemporalBlock(nn.Module):
    """The TCN paper's block (locuslab/TCN): two dilated causal convolutions (padded both
    sides, the right end chomped off), a 1x1 downsample on the residual when widths differ."""

    def __init__(self, cin: int, cout: int, k: int, dilation: int) -> None:
        super().__init__()
        pad = (k - 1) * dilation
        self.net = nn.Sequential(
            nn.Conv1d(cin, cout, k, padding=pad, dilation=dilation),
            Chomp1d(pad),
            nn.ReLU(),
            nn.Dropout(0.2),
            nn.Conv1d(cout, cout, k, padding=pad, dilation=dilation),
            Chomp1d(pad),
            nn.ReLU(),
            nn.Dropout(0.2),
        )
        self.downsample = nn.Conv1d(cin, cout, 1) if cin != cout else None

    def forward(self, x: Tensor) -> Tensor:
        res = x if self.downsample is None else self.downsample(x)
        return F.relu(self.net(x) + res)


class TCN(nn.Module):
    """Four temporal blocks with dilations 1, 2, 4, 8 over ``[batch, ch, time]``, then a
    per-step linear head (``transpose(1, 2)``)."""

    def __init__(self, cin: int = 4, width: int = 12, classes: int = 3) -> None:
        super().__init__()
        torch.manual_seed(0)
        blocks = []
        for i in range(4):
            blocks.append(TemporalBlock(cin if i == 0 else width, width, 3, 2**i))
        self.network = nn.Sequential(*blocks)
        self.linear = nn.Linear(width, classes)

    def forward(self, x: Tensor) -> Tensor:
        y = self.network(x)
        return self.linear(y.transpose(1, 2))
