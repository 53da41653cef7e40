"""Small models that ship with edgebench, for fast tests and harness-overhead runs.

torch is imported lazily, so importing this module costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from edgebench.errors import ModelError

if TYPE_CHECKING:  # pragma: no cover
    import torch

BUILTIN_ARCHS = ("tiny_cnn", "small_cnn", "transformer_encoder", "tiny_detector", "ssdlite320_heads")


def _tiny_cnn(num_classes: int) -> torch.nn.Module:
    """conv-bn-relu x2, global average pool, linear. ~5k parameters for 3x32x32 input."""
    from torch import nn

    model = nn.Sequential(
        nn.Conv2d(3, 16, kernel_size=3, stride=1, padding=1, bias=False),
        nn.BatchNorm2d(16),
        nn.ReLU(inplace=True),
        nn.Conv2d(16, 32, kernel_size=3, stride=2, padding=1, bias=False),
        nn.BatchNorm2d(32),
        nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(1),
        nn.Linear(32, num_classes),
    )
    return model


def _small_cnn(num_classes: int) -> torch.nn.Module:
    """(conv-bn-relu-maxpool) x2, 4x4 average pool, linear: keeps coarse spatial layout, so it learns small
    images (digits, CIFAR-sized) in seconds; ~10k parameters for 3x32x32 input and 10 classes."""
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(3, 16, kernel_size=3, padding=1, bias=False),
        nn.BatchNorm2d(16),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, kernel_size=3, padding=1, bias=False),
        nn.BatchNorm2d(32),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(2),
        nn.AdaptiveAvgPool2d(4),
        nn.Flatten(1),
        nn.Linear(32 * 16, num_classes),
    )


def _transformer_encoder(num_classes: int, vocab_size: int = 30522, hidden: int = 768, layers: int = 12,
                         heads: int = 12, intermediate: int = 3072, max_positions: int = 512) -> torch.nn.Module:
    """A BERT-shaped encoder in plain torch: token + position embeddings, post-LN blocks of multi-head
    self-attention (additive mask from attention_mask, BERT's -10000) and a GELU MLP, then a [CLS] pooler and a
    classifier. forward(input_ids int64 [N, S], attention_mask int64 [N, S]) -> (last_hidden_state [N, S, H],
    logits [N, num_classes]). BERT-base: the defaults (110M parameters with vocab 30522)."""
    import torch
    from torch import nn

    if hidden % heads:
        raise ModelError(f"transformer_encoder: hidden {hidden} is not a multiple of heads {heads}")

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.qkv = nn.Linear(hidden, 3 * hidden)
            self.proj = nn.Linear(hidden, hidden)
            self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
            self.mlp = nn.Sequential(nn.Linear(hidden, intermediate), nn.GELU(), nn.Linear(intermediate, hidden))
            self.ln2 = nn.LayerNorm(hidden, eps=1e-12)

        def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
            n, s, _ = x.shape
            q, k, v = self.qkv(x).reshape(n, s, 3, heads, hidden // heads).permute(2, 0, 3, 1, 4)
            att = torch.softmax(q @ k.transpose(-1, -2) * (hidden // heads) ** -0.5 + bias, dim=-1)
            y = (att @ v).transpose(1, 2).reshape(n, s, hidden)
            x = self.ln1(x + self.proj(y))
            return self.ln2(x + self.mlp(x))

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tokens = nn.Embedding(vocab_size, hidden)
            self.positions = nn.Embedding(max_positions, hidden)
            self.ln = nn.LayerNorm(hidden, eps=1e-12)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.pooler = nn.Linear(hidden, hidden)
            self.classifier = nn.Linear(hidden, num_classes)
            for m in self.modules():  # BERT's init: N(0, 0.02) weights, zero biases
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    nn.init.normal_(m.weight, std=0.02)
                if isinstance(m, nn.Linear):
                    nn.init.zeros_(m.bias)

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            positions = torch.arange(input_ids.shape[1], device=input_ids.device)
            x = self.ln(self.tokens(input_ids) + self.positions(positions)[None])
            bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
            for block in self.blocks:
                x = block(x, bias)
            return x, self.classifier(torch.tanh(self.pooler(x[:, 0])))

    return Encoder()


def _tiny_detector(num_classes: int, width: int = 16, anchors: int = 3) -> torch.nn.Module:
    """A small single-stage detector with several outputs: conv backbone (stride 8), per-location heads.
    forward(images [N, 3, H, W]) -> (boxes [N, A, 4], scores [N, A, num_classes], objectness [N, A]),
    A = anchors * (H/8) * (W/8). No NMS in the graph (it runs after the model, as with TensorRT)."""
    from torch import nn

    def conv(cin: int, cout: int, stride: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())

    class Detector(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.backbone = nn.Sequential(conv(3, width, 2), conv(width, 2 * width, 2), conv(2 * width, 2 * width, 2))
            self.box = nn.Conv2d(2 * width, anchors * 4, 1)
            self.cls = nn.Conv2d(2 * width, anchors * num_classes, 1)
            self.obj = nn.Conv2d(2 * width, anchors, 1)

        def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            f = self.backbone(images)
            n = images.shape[0]
            boxes = self.box(f).permute(0, 2, 3, 1).reshape(n, -1, 4)
            scores = self.cls(f).permute(0, 2, 3, 1).reshape(n, -1, num_classes)
            objectness = self.obj(f).permute(0, 2, 3, 1).reshape(n, -1)
            return boxes, scores, objectness

    return Detector()


def _ssdlite320_heads(num_classes: int) -> torch.nn.Module:
    """torchvision's SSDlite320-MobileNetV3-Large without its post-processing: backbone + heads,
    forward(images [N, 3, 320, 320]) -> (bbox_regression [N, 3234, 4], cls_logits [N, 3234, num_classes]).
    The anchor decoding and NMS (data-dependent loops) stay outside the graph, as TensorRT deployments do."""
    import torchvision
    from torch import nn

    det = torchvision.models.detection.ssdlite320_mobilenet_v3_large(
        weights=None, weights_backbone=None, num_classes=num_classes)

    class Heads(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.backbone = det.backbone
            self.head = det.head

        def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            out = self.head(list(self.backbone(images).values()))
            return out["bbox_regression"], out["cls_logits"]

    return Heads()


def build_builtin(arch: str, num_classes: int, **config: object) -> torch.nn.Module:
    """Build a builtin model by name, with constructor keywords from the spec's `config`.
    Weights come from torch's RNG: call torch.manual_seed first."""
    builders = {"tiny_cnn": _tiny_cnn, "small_cnn": _small_cnn, "transformer_encoder": _transformer_encoder,
                "tiny_detector": _tiny_detector, "ssdlite320_heads": _ssdlite320_heads}
    if arch not in builders:
        raise ModelError(f"unknown builtin model {arch!r} (known: {', '.join(BUILTIN_ARCHS)})")
    try:
        return builders[arch](num_classes, **config)  # type: ignore[operator]
    except TypeError as exc:
        raise ModelError(f"builtin model {arch}: bad config ({exc})") from None
