"""Datasheet peaks of common NVIDIA data-centre GPUs, looked up by the device's name.

A trace names its GPU (``deviceProperties[].name``, what ``torch.cuda.get_device_name``
returns), not its peaks, so a kernel's achieved rate needs a table to be judged against.
The figures are NVIDIA's datasheets: dense bf16 on the Tensor Cores (the datasheets also
print twice as much "with sparsity") and the memory's bandwidth. A name the table does not
know gets ``None``: the caller then says so, or takes ``--peak-tflops``/``--peak-tbs``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["DATASHEETS", "Datasheet", "datasheet", "trace_datasheet"]


@dataclass(frozen=True)
class Datasheet:
    """One GPU's datasheet row: its name there, and its peaks."""

    gpu: str
    #: Device names (``torch.cuda.get_device_name``, upper-cased) this row is for.
    pattern: str
    bf16_tflops: float
    hbm_tbs: float


#: First match wins, so a narrower row comes before a wider one.
DATASHEETS: tuple[Datasheet, ...] = (
    Datasheet("A100 SXM 80GB", r"A100.*SXM.*80GB", 312, 2.039),
    Datasheet("A100 SXM 40GB", r"A100.*SXM", 312, 1.555),
    Datasheet("A100 PCIe 80GB", r"A100.*(80GB.*PCIE|PCIE.*80GB)", 312, 1.935),
    Datasheet("A100 PCIe 40GB", r"A100.*PCIE", 312, 1.555),
    Datasheet("H100 SXM", r"H100.*(SXM|80GB HBM3)", 989, 3.35),
    Datasheet("H100 PCIe", r"H100.*PCIE", 756, 2.0),
    Datasheet("H200 SXM", r"H200(?!.*NVL)", 989, 4.8),
    Datasheet("L40S", r"\bL40S\b", 362, 0.864),
    Datasheet("L4", r"\bL4\b", 121, 0.3),
)


def datasheet(device_name: str) -> Datasheet | None:
    """The datasheet row for a device name such as ``"NVIDIA H100 80GB HBM3"``, or None."""
    name = device_name.upper()
    return next((d for d in DATASHEETS if re.search(d.pattern, name)), None)


def trace_datasheet(device_properties: list[dict[str, Any]]) -> tuple[str, Datasheet | None]:
    """The name of a trace's first GPU and its datasheet row (``("", None)`` without one)."""
    names = [str(d.get("name") or "") for d in device_properties]
    name = next((n for n in names if n), "")
    return name, (datasheet(name) if name else None)
