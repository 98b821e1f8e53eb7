"""Small stand-ins for the GN paper's pruning architectures (appendix I.1) on 8 x 8 digits:
a Vision Transformer, ResNet-20/32-style residual CNNs and a VGG-5-style CNN (package
docstring: ``Pruning architectures``). Every network maps a batch ``b x 64`` of flattened
images to ``b x classes`` and is built in float64 with PyTorch's default initialisation drawn
from ``torch.manual_seed(seed)`` (the global generator is restored afterwards)."""

from __future__ import annotations

import torch
from torch import nn

SIDE = 8  # the digits are 8 x 8 images


class _Images(nn.Module):
    """Flattened ``b x 64`` rows back to ``b x 1 x 8 x 8`` images."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(-1, 1, SIDE, SIDE)


class _Block(nn.Module):
    """Pre-norm transformer block: multi-head self-attention and a GELU MLP, both residual."""

    def __init__(self, dim: int, heads: int, hidden: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, dim = x.shape
        q, k, v = self.qkv(self.norm1(x)).reshape(b, t, 3, self.heads, -1).unbind(2)
        scores = torch.einsum("bqhc,bkhc->bhqk", q, k) / (dim // self.heads) ** 0.5
        mixed = torch.einsum("bhqk,bkhc->bqhc", scores.softmax(-1), v).reshape(b, t, dim)
        x = x + self.out(mixed)
        return x + self.mlp(self.norm2(x))


class ViT(nn.Module):
    """Patches of ``patch x patch`` pixels embedded in ``dim``, a class token, learned position
    embeddings, ``blocks`` transformer blocks, a LayerNorm and a linear head on the class token."""

    def __init__(self, patch: int, dim: int, blocks: int, heads: int, classes: int) -> None:
        super().__init__()
        tokens = (SIDE // patch) ** 2
        self.images = _Images()
        self.embed = nn.Conv2d(1, dim, patch, stride=patch)
        self.class_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.position = nn.Parameter(0.02 * torch.randn(1, tokens + 1, dim))
        self.blocks = nn.Sequential(*[_Block(dim, heads, 2 * dim) for _ in range(blocks)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        patches = self.embed(self.images(x)).flatten(2).transpose(1, 2)
        tokens = torch.cat([self.class_token.expand(len(patches), -1, -1), patches], dim=1)
        return self.head(self.norm(self.blocks(tokens + self.position))[:, 0])


class _Residual(nn.Module):
    """Two 3 x 3 conv-BN layers with ReLU and a skip (1 x 1 conv-BN where the shape changes)."""

    def __init__(self, fan_in: int, fan_out: int, stride: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(fan_in, fan_out, 3, stride, 1, bias=False),
            nn.BatchNorm2d(fan_out),
            nn.ReLU(),
            nn.Conv2d(fan_out, fan_out, 3, 1, 1, bias=False),
            nn.BatchNorm2d(fan_out),
        )
        self.skip = nn.Identity()
        if stride != 1 or fan_in != fan_out:
            self.skip = nn.Sequential(
                nn.Conv2d(fan_in, fan_out, 1, stride, bias=False), nn.BatchNorm2d(fan_out)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + self.skip(x))


def resnet(blocks: int, channels: int, classes: int) -> nn.Sequential:
    """He et al.'s CIFAR ResNet-(6 ``blocks`` + 2): a 3 x 3 conv-BN-ReLU, three stages of
    ``blocks`` residual blocks with ``channels``, 2x and 4x as many channels (stride 2 into
    the last two: 8 x 8 -> 4 x 4 -> 2 x 2), global average pooling and a linear head."""
    widths = [channels, 2 * channels, 4 * channels]
    layers: list[nn.Module] = [
        _Images(),
        nn.Conv2d(1, channels, 3, 1, 1, bias=False),
        nn.BatchNorm2d(channels),
        nn.ReLU(),
    ]
    fan_in = channels
    for stage, width in enumerate(widths):
        for block in range(blocks):
            stride = 2 if stage and not block else 1
            layers.append(_Residual(fan_in, width, stride))
            fan_in = width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(fan_in, classes)]
    return nn.Sequential(*layers)


def vgg5(channels: int, classes: int) -> nn.Sequential:
    """Three 3 x 3 conv-BN-ReLU layers (``channels``, 2x, 4x; 2 x 2 max-pooling after the last
    two: 8 x 8 -> 2 x 2) and two linear layers (hidden width 16 ``channels``)."""
    layers: list[nn.Module] = [_Images()]
    fan_in = 1
    for index, width in enumerate([channels, 2 * channels, 4 * channels]):
        layers += [nn.Conv2d(fan_in, width, 3, 1, 1), nn.BatchNorm2d(width), nn.ReLU()]
        layers += [nn.MaxPool2d(2)] if index else []
        fan_in = width
    hidden = 16 * channels
    layers += [nn.Flatten(), nn.Linear(fan_in * 4, hidden), nn.ReLU(), nn.Linear(hidden, classes)]
    return nn.Sequential(*layers)


def conv_pair(kernel: torch.Tensor, second: torch.Tensor) -> nn.Sequential:
    """Fig. 8's other reading of a two-layer linear CNN (Eq. 15, convolutions throughout):
    ``kernel`` (``F x s x s``) then ``second`` (``1 x F x s x s``), same padding, no bias,
    float64, from ``b x 64`` rows to the ``b x 64`` output map."""
    filters, size, _ = kernel.shape
    first = nn.Conv2d(1, filters, size, padding=size // 2, bias=False, dtype=torch.float64)
    last = nn.Conv2d(filters, 1, size, padding=size // 2, bias=False, dtype=torch.float64)
    with torch.no_grad():
        first.weight.copy_(kernel[:, None])
        last.weight.copy_(second)
    return nn.Sequential(_Images(), first, last, nn.Flatten())


def build(spec: dict, classes: int, seed: int) -> nn.Module:
    """The float64 network of ``spec`` (``architecture``: ``vit`` with ``patch``, ``dim``,
    ``blocks``, ``heads``; ``resnet`` with ``blocks`` per stage and ``channels``; ``vgg5`` with
    ``channels``) at PyTorch's default init drawn from seed ``seed``."""
    builders = {
        "vit": lambda: ViT(spec["patch"], spec["dim"], spec["blocks"], spec["heads"], classes),
        "resnet": lambda: resnet(spec["blocks"], spec["channels"], classes),
        "vgg5": lambda: vgg5(spec["channels"], classes),
    }
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return builders[spec["architecture"]]().to(torch.float64)


def describe(spec: dict) -> str:
    """A short human-readable name of the network of ``spec`` (figure titles, tables)."""
    kind = spec["architecture"]
    if kind == "vit":
        return (
            f"ViT (patch {spec['patch']}, dim {spec['dim']}, {spec['blocks']} blocks, "
            f"{spec['heads']} heads)"
        )
    if kind == "resnet":
        return f"ResNet-{6 * spec['blocks'] + 2} (channels {spec['channels']})"
    return f"VGG-5 (channels {spec['channels']})"
