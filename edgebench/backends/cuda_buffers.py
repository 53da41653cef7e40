"""Device memory, streams and CUDA graphs for the TensorRT backend, through one small interface.

Primary: cuda-python's runtime bindings (`cuda.bindings.runtime`, or the older `cuda.cudart` module of
cuda-python < 13): a few MB, installable on a Jetson where torch is usually absent. Fallback: torch's CUDA
allocator and streams, when cuda-python is not installed but a CUDA torch is (desktop GPUs). `open_runtime()`
returns the first that imports and says which one it picked (recorded in the row's provider).

Every call is checked: a CUDA error raises BackendError naming the call and the error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from edgebench.errors import BackendError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


class CudaRuntime(Protocol):
    name: str

    def malloc(self, nbytes: int) -> int: ...
    def free(self, ptr: int) -> None: ...
    def stream_create(self) -> Any: ...
    def stream_handle(self, stream: Any) -> int: ...
    def stream_destroy(self, stream: Any) -> None: ...
    def htod_async(self, ptr: int, host: np.ndarray, stream: Any) -> None: ...
    def dtoh_async(self, host: np.ndarray, ptr: int, stream: Any) -> None: ...
    def synchronize(self, stream: Any) -> None: ...
    def capture_graph(self, stream: Any, fn: Callable[[], None]) -> Any: ...
    def launch_graph(self, graph: Any, stream: Any) -> None: ...
    def destroy_graph(self, graph: Any) -> None: ...
    def device_identity(self) -> tuple[str, str]: ...


class StagingBuffer:
    """One device buffer and one stream for host -> device uploads (the entropy calibrator's batches).
    close() frees both, once; the owner calls it when the consumer (TensorRT's build) is done."""

    def __init__(self, cuda: CudaRuntime, nbytes: int) -> None:
        self.cuda = cuda
        self.nbytes = int(nbytes)
        self.ptr: int | None = cuda.malloc(self.nbytes)
        try:
            self.stream: Any = cuda.stream_create()
        except BaseException:
            cuda.free(self.ptr)
            self.ptr = None
            raise

    def upload(self, host: np.ndarray) -> int:
        """Copy `host` into the buffer and wait; returns the device pointer."""
        if self.ptr is None:
            raise BackendError("staging buffer used after close()")
        if host.nbytes > self.nbytes:
            raise BackendError(f"staging buffer holds {self.nbytes} bytes, got {host.nbytes}")
        self.cuda.htod_async(self.ptr, host, self.stream)
        self.cuda.synchronize(self.stream)
        return self.ptr

    def close(self) -> None:
        if self.ptr is not None:
            ptr, self.ptr = self.ptr, None
            self.cuda.free(ptr)
        if self.stream is not None:
            stream, self.stream = self.stream, None
            self.cuda.stream_destroy(stream)


def import_cudart() -> Any:
    """cuda-python's runtime module: `cuda.bindings.runtime` (cuda-python >= 12.6) or `cuda.cudart` (older)."""
    try:
        from cuda.bindings import runtime

        return runtime
    except ImportError:
        from cuda import cudart  # type: ignore[attr-defined,import-not-found,unused-ignore]

        return cudart


def check(result: Any, call: str) -> Any:
    """cuda-python returns (error, *values): raise on an error, return the value (or the tuple of values)."""
    if not isinstance(result, tuple):
        result = (result,)
    err, *values = result
    code = int(getattr(err, "value", err))
    if code != 0:
        name = getattr(err, "name", str(err))
        raise BackendError(f"CUDA {call} failed: {name} ({code})")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


class CudartRuntime:
    name = "cuda-python"

    def __init__(self) -> None:
        self.rt = import_cudart()

    def malloc(self, nbytes: int) -> int:
        return int(check(self.rt.cudaMalloc(max(int(nbytes), 1)), "cudaMalloc"))

    def free(self, ptr: int) -> None:
        check(self.rt.cudaFree(ptr), "cudaFree")

    def stream_create(self) -> Any:
        return check(self.rt.cudaStreamCreate(), "cudaStreamCreate")

    def stream_handle(self, stream: Any) -> int:
        return int(stream)

    def stream_destroy(self, stream: Any) -> None:
        check(self.rt.cudaStreamDestroy(stream), "cudaStreamDestroy")

    def htod_async(self, ptr: int, host: np.ndarray, stream: Any) -> None:
        kind = self.rt.cudaMemcpyKind.cudaMemcpyHostToDevice
        check(self.rt.cudaMemcpyAsync(ptr, host.ctypes.data, host.nbytes, kind, stream), "cudaMemcpyAsync(HtoD)")

    def dtoh_async(self, host: np.ndarray, ptr: int, stream: Any) -> None:
        kind = self.rt.cudaMemcpyKind.cudaMemcpyDeviceToHost
        check(self.rt.cudaMemcpyAsync(host.ctypes.data, ptr, host.nbytes, kind, stream), "cudaMemcpyAsync(DtoH)")

    def synchronize(self, stream: Any) -> None:
        check(self.rt.cudaStreamSynchronize(stream), "cudaStreamSynchronize")

    def capture_graph(self, stream: Any, fn: Callable[[], None]) -> Any:
        mode = self.rt.cudaStreamCaptureMode.cudaStreamCaptureModeThreadLocal
        check(self.rt.cudaStreamBeginCapture(stream, mode), "cudaStreamBeginCapture")
        try:
            fn()
        finally:
            graph = check(self.rt.cudaStreamEndCapture(stream), "cudaStreamEndCapture")
        # cudaGraphInstantiateWithFlags(graph, flags) -> (err, exec) has one form in cuda-python 11.x and 12.x;
        # cudaGraphInstantiate does not: CUDA 11's (graph, bufferSize) -> (err, exec, errorNode, log) became
        # CUDA 12's (graph, flags) -> (err, exec). JetPack 5 is CUDA 11.4, where WithFlags first appeared.
        graph_exec = check(self.rt.cudaGraphInstantiateWithFlags(graph, 0), "cudaGraphInstantiateWithFlags")
        return (graph, graph_exec)

    def launch_graph(self, graph: Any, stream: Any) -> None:
        check(self.rt.cudaGraphLaunch(graph[1], stream), "cudaGraphLaunch")

    def destroy_graph(self, graph: Any) -> None:
        check(self.rt.cudaGraphExecDestroy(graph[1]), "cudaGraphExecDestroy")
        check(self.rt.cudaGraphDestroy(graph[0]), "cudaGraphDestroy")

    def device_identity(self) -> tuple[str, str]:
        device = check(self.rt.cudaGetDevice(), "cudaGetDevice")
        prop = check(self.rt.cudaGetDeviceProperties(device), "cudaGetDeviceProperties")
        name = prop.name.decode(errors="replace") if isinstance(prop.name, bytes) else str(prop.name)
        return name.rstrip("\x00").strip(), f"{prop.major}.{prop.minor}"


class TorchRuntime:
    name = "torch"

    def __init__(self) -> None:
        import torch

        if not torch.cuda.is_available():
            raise BackendError("torch is installed but torch.cuda.is_available() is False")
        self.torch = torch
        self._blocks: dict[int, Any] = {}

    def malloc(self, nbytes: int) -> int:
        block = self.torch.empty(max(int(nbytes), 1), dtype=self.torch.uint8, device="cuda")
        ptr = int(block.data_ptr())
        self._blocks[ptr] = block
        return ptr

    def free(self, ptr: int) -> None:
        self._blocks.pop(ptr, None)

    def stream_create(self) -> Any:
        return self.torch.cuda.Stream()

    def stream_handle(self, stream: Any) -> int:
        return int(stream.cuda_stream)

    def stream_destroy(self, stream: Any) -> None:
        return None  # torch frees the stream with the object

    def _view(self, ptr: int, host: np.ndarray) -> Any:
        block = self._blocks[ptr]
        return block[: host.nbytes]

    def htod_async(self, ptr: int, host: np.ndarray, stream: Any) -> None:
        src = self.torch.from_numpy(host.reshape(-1).view("uint8"))
        with self.torch.cuda.stream(stream):
            self._view(ptr, host).copy_(src, non_blocking=False)

    def dtoh_async(self, host: np.ndarray, ptr: int, stream: Any) -> None:
        dst = self.torch.from_numpy(host.reshape(-1).view("uint8"))
        with self.torch.cuda.stream(stream):
            dst.copy_(self._view(ptr, host), non_blocking=False)

    def synchronize(self, stream: Any) -> None:
        stream.synchronize()

    def capture_graph(self, stream: Any, fn: Callable[[], None]) -> Any:
        graph = self.torch.cuda.CUDAGraph()
        with self.torch.cuda.graph(graph, stream=stream):
            fn()
        return graph

    def launch_graph(self, graph: Any, stream: Any) -> None:
        with self.torch.cuda.stream(stream):
            graph.replay()

    def destroy_graph(self, graph: Any) -> None:
        graph.reset()

    def device_identity(self) -> tuple[str, str]:
        props = self.torch.cuda.get_device_properties(self.torch.cuda.current_device())
        return str(props.name), f"{props.major}.{props.minor}"


RUNTIMES: tuple[tuple[str, Callable[[], CudaRuntime]], ...] = (("cuda-python", CudartRuntime), ("torch", TorchRuntime))


def open_runtime(order: tuple[tuple[str, Callable[[], CudaRuntime]], ...] = RUNTIMES) -> CudaRuntime:
    """The first CUDA runtime that opens (cuda-python, then torch); BackendError listing why each failed."""
    why = []
    for name, factory in order:
        try:
            return factory()
        except ImportError as exc:
            why.append(f"{name}: not installed ({exc.msg})")
        except BackendError as exc:
            why.append(f"{name}: {exc}")
    raise BackendError("the trt backend needs cuda-python (pip install cuda-python) or a CUDA build of torch "
                       "for device buffers: " + "; ".join(why))
