"""Test helper (not a test module): the torch backend with a REAL CUDA error injected into one instance.

After `cuda_fault_after` inferences, instance `cuda_fault_instance` indexes a CUDA tensor out of bounds:
a device-side assert, which poisons that process's CUDA context exactly as a crashing kernel would.
Named by the runner as "gpu_fault_backend:CudaFaultBackend" (spawned workers inherit sys.path).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from edgebench.backends.torch_backend import TorchBackend

FAULT_KEYS = ("cuda_fault_instance", "cuda_fault_after")


class CudaFaultBackend:
    name = "gpu_fault_backend:CudaFaultBackend"

    def __init__(self) -> None:
        self._torch = TorchBackend()

    def open(self, prepared: Any, placement: Any) -> Any:
        clean = dataclasses.replace(prepared, options={k: v for k, v in prepared.options.items() if k not in FAULT_KEYS})
        session = self._torch.open(clean, placement)
        if placement.instance != prepared.options.get("cuda_fault_instance"):
            return session
        return _FaultySession(session, int(prepared.options.get("cuda_fault_after", 0)), placement.device)


class _FaultySession:
    def __init__(self, inner: Any, after: int, device: str) -> None:
        self._inner, self._after, self._device, self._done = inner, after, device, 0

    def feed(self, inputs: Any) -> None:
        self._inner.feed(inputs)

    def infer(self) -> None:
        self._inner.infer()
        self._done += 1
        if self._done > self._after:
            import torch

            index = torch.tensor([1 << 20], device=self._device)
            torch.zeros(4, device=self._device)[index] += 1  # out of bounds: device-side assert
            torch.cuda.synchronize(self._device)

    def outputs(self) -> Any:
        return self._inner.outputs()

    def close(self) -> None:
        self._inner.close()


def with_fault(prepared: Any, instance: int, after: int) -> Any:
    """`prepared` (from the torch backend) rerouted through this backend."""
    return dataclasses.replace(prepared, backend=CudaFaultBackend.name,
                               options={**prepared.options, "cuda_fault_instance": instance, "cuda_fault_after": after})
