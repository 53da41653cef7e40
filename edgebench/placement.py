"""Where one instance runs: the one grammar of a placement text, parsed once where the plan is made.

A profile, a flag or a saved plan writes a placement as text: `cpu`; `cuda`, `gpu` (GPU 0), `cuda:N`, `gpu:N`
(the N-th GPU CUDA sees); `dla`, `dla0`, `dla1` (a DLA core; `dla` is core 0). Anything else is kept with kind
`unknown`, so a backend's supports() can give the reason it cannot run it (the plan skips, never crashes).

`Placement` is a `str` (its text exactly as written: row cells, labels, plan.json and config hashes are the same
text as before) that also carries what the text means: `kind` (cpu, gpu, dla, unknown) and `number` (the GPU
index or the DLA core; 0 for cpu). `Placement(p)` of a Placement is that Placement, not parsed again.

It sits below every stage (errors-level): config carries it in RunConfig, backends, runner and telemetry read it.

`compact_placement` is the one name people read for a row's placements (issue 28): the console's progress lines
and tables, the `--dry-run` plan and the answer layer's configuration labels all say `2x cpu`, `31x cuda:0`,
`cuda:0+dla0`; results.csv keeps the full `+`-joined cell.
"""

from __future__ import annotations

import re
from typing import Any, Literal

Kind = Literal["cpu", "gpu", "dla", "unknown"]
_GPU = re.compile(r"(?:cuda|gpu)(?::(\d+))?")
_DLA = re.compile(r"dla(\d?)")


def _parse(text: str) -> tuple[Kind, int]:
    if text == "cpu":
        return "cpu", 0
    if (m := _GPU.fullmatch(text)) is not None:
        return "gpu", int(m.group(1) or 0)
    if (m := _DLA.fullmatch(text)) is not None:
        return "dla", int(m.group(1) or 0)
    return "unknown", 0


class Placement(str):
    """A placement text with its meaning: `kind` cpu/gpu/dla/unknown, `number` GPU index or DLA core."""

    kind: Kind
    number: int  # the GPU index or the DLA core (0 for cpu and unknown)

    def __new__(cls, text: str) -> Placement:
        if isinstance(text, Placement):
            return text
        self = super().__new__(cls, text)
        kind, number = _parse(str(text))
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "number", number)
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Placement {str(self)!r} is immutable")

    def __reduce__(self) -> tuple[Any, tuple[str]]:  # pickled as its text (instances get it across processes)
        return (Placement, (str(self),))

    @property
    def is_gpu(self) -> bool:
        """A CUDA GPU ('cuda', 'gpu', 'cuda:N', 'gpu:N')."""
        return self.kind == "gpu"

    @property
    def is_dla(self) -> bool:
        return self.kind == "dla"

    @property
    def dla_core(self) -> int | None:
        """The DLA core of a DLA placement, else None."""
        return self.number if self.kind == "dla" else None

    @property
    def cuda_index(self) -> int | None:
        """The CUDA device index of a GPU placement, else None."""
        return self.number if self.kind == "gpu" else None


def placements_of(texts: Any) -> tuple[Placement, ...]:
    """A tuple of Placements from texts (or Placements, kept as they are)."""
    return tuple(Placement(t) for t in texts)


def compact_placement(placement: str) -> str:
    """The human-facing name of a row's placements: 'cuda:0+cuda:0+...' (31 of them) -> '31x cuda:0'; runs of one
    device are counted, different devices stay joined with '+' in their order: 'cuda:0+cuda:0+dla0' ->
    '2x cuda:0+dla0', 'cuda:0+dla0' unchanged. Only text for people: results.csv keeps the full cell."""
    if not placement:
        return placement
    runs: list[list[Any]] = []
    for device in placement.split("+"):
        if runs and runs[-1][0] == device:
            runs[-1][1] += 1
        else:
            runs.append([device, 1])
    return "+".join(f"{n}x {device}" if n > 1 else device for device, n in runs)
