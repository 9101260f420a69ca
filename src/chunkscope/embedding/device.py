"""Where bulk embedding runs when the user did not say: a CUDA GPU when there is one, ONNX Runtime's CPU otherwise.

The look-up is cheap where it says no: without an NVIDIA driver on the machine no runtime is imported at all, so
a CPU-only install never pays torch's import to learn that it has no GPU. With a driver, ONNX Runtime is asked
for its CUDA provider first (the GPU without torch), then torch. A single question never calls this: it always
runs where loading is quickest (`chunkscope.embedding.backends.minilm`).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

#: Files an NVIDIA driver creates (the device node of its control interface, and its per-GPU records).
_NVIDIA_CONTROL = Path("/dev/nvidiactl")
_NVIDIA_GPUS = Path("/proc/driver/nvidia/gpus")


@dataclass(frozen=True, slots=True)
class BulkDevice:
    """Where many texts are embedded: ``runtime`` (``onnx`` or ``torch``) on ``device`` (``cpu``, ``cuda``)."""

    runtime: str
    device: str


CPU = BulkDevice("onnx", "cpu")


def nvidia_driver_present() -> bool:
    """Whether the machine has an NVIDIA driver loaded (files only: nothing is imported)."""
    if _NVIDIA_CONTROL.exists():
        return True
    try:
        return any(_NVIDIA_GPUS.iterdir())
    except OSError:
        return False


def onnx_cuda_available() -> bool:
    """Whether the installed ONNX Runtime has its CUDA provider (onnxruntime-gpu)."""
    if importlib.util.find_spec("onnxruntime") is None:
        return False
    from chunkscope.embedding.backends.onnx_export import onnxruntime_quiet

    return "CUDAExecutionProvider" in onnxruntime_quiet().get_available_providers()


def torch_cuda_available() -> bool:
    """Whether torch is installed and sees a CUDA device (imports torch: call only where a driver is present)."""
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


def bulk_device() -> BulkDevice:
    """Where bulk embedding of the default model runs fastest on this machine (``[embedder] device`` overrides)."""
    if not nvidia_driver_present():
        return CPU
    if onnx_cuda_available():
        return BulkDevice("onnx", "cuda")
    if torch_cuda_available():
        return BulkDevice("torch", "cuda")
    return CPU
