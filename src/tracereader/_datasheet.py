"""Datasheet peaks of common NVIDIA GPUs, looked up by the device's name.

A trace names its GPU (``deviceProperties[].name``, what ``torch.cuda.get_device_name``
returns), not its peaks, so a kernel's achieved rate needs a table to be judged against.
Each row is NVIDIA's published figure, its document named beside it: the dense bf16 rate
on the Tensor Cores with FP32 accumulate (the data-centre datasheets also print twice as
much "with sparsity"; the GeForce whitepapers print an FP16-accumulate rate twice the
FP32-accumulate one, and PyTorch's bf16 GEMMs accumulate in FP32), and the memory's
bandwidth. A name the table does not know gets ``None``: the caller then says so, or
takes ``--peak-tflops``/``--peak-tbs``, or a rate measured on the GPU itself.

Left out on purpose:

* The A10G (AWS's G5 instances): an AWS part with no NVIDIA datasheet, and AWS publishes
  no Tensor Core rate or memory bandwidth for it. It is not the A10 (``"NVIDIA A10"``, a
  row of its own), whose figures would be a guess for it.
* Variants that share a name's prefix but not its peaks: the GeForce RTX 4090 D and
  RTX 5090 D (China-market cards; the 4090 D has 114 SMs to the 4090's 128, and no
  whitepaper gives either's rates), the RTX 3090 Ti, the laptop GPUs ("... Laptop GPU"),
  the GH200 and GB200 superchips' GPUs. Their device names do not match a row: the
  GeForce patterns end at the model number, and a word boundary keeps ``H200`` out of
  ``GH200``.
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
    # NVIDIA A100 Tensor Core GPU datasheet: 312 TFLOP/s bf16 (624 with sparsity).
    Datasheet("A100 SXM 80GB", r"\bA100\b.*SXM.*80GB", 312, 2.039),
    Datasheet("A100 SXM 40GB", r"\bA100\b.*SXM", 312, 1.555),
    Datasheet("A100 PCIe 80GB", r"\bA100\b.*(80GB.*PCIE|PCIE.*80GB)", 312, 1.935),
    Datasheet("A100 PCIe 40GB", r"\bA100\b.*PCIE", 312, 1.555),
    # NVIDIA A10 Tensor Core GPU datasheet: 125 (250 with sparsity); not the A10G.
    Datasheet("A10", r"\bA10$", 125, 0.6),
    # NVIDIA H100 datasheet (SXM: 1,979 with sparsity); the H100 PCIe product brief and
    # the Hopper whitepaper (PCIe: 1,513 with sparsity); NVL: 1,671 with sparsity.
    Datasheet("H100 SXM", r"\bH100\b.*(SXM|80GB HBM3)", 989, 3.35),
    Datasheet("H100 PCIe", r"\bH100\b.*PCIE", 756, 2.0),
    Datasheet("H100 NVL", r"\bH100\b.*NVL", 835, 3.9),
    # NVIDIA H200 datasheet: SXM 1,979 and NVL 1,671 with sparsity, both 4.8 TB/s.
    Datasheet("H200 SXM", r"\bH200\b(?!.*NVL)", 989, 4.8),
    Datasheet("H200 NVL", r"\bH200\b.*NVL", 835, 4.8),
    # NVIDIA HGX B200 specifications, one GPU: 4.5 PFLOP/s with sparsity, 7.7 TB/s.
    Datasheet("B200", r"\bB200\b", 2250, 7.7),
    # NVIDIA L40S datasheet: 362.05 (733 with sparsity); L40 datasheet: 181.05 (362.1).
    Datasheet("L40S", r"\bL40S\b", 362, 0.864),
    Datasheet("L40", r"\bL40\b", 181, 0.864),
    # NVIDIA L4 Tensor Core GPU datasheet: 242 with sparsity.
    Datasheet("L4", r"\bL4\b", 121, 0.3),
    # GeForce, FP32 accumulate (FP16 accumulate is twice as much): NVIDIA Ampere GA102
    # whitepaper (RTX 3090: 71, 936 GB/s), Ada Lovelace whitepaper (RTX 4090: 165.2,
    # 1,008 GB/s), RTX Blackwell whitepaper (RTX 5090: 209.5, 1,792 GB/s). The name must
    # end at the number: no 3090 Ti, 4090 D, 5090 D or laptop GPU.
    Datasheet("GeForce RTX 3090", r"\bRTX 3090$", 71, 0.936),
    Datasheet("GeForce RTX 4090", r"\bRTX 4090$", 165.2, 1.008),
    Datasheet("GeForce RTX 5090", r"\bRTX 5090$", 209.5, 1.792),
)


def datasheet(device_name: str) -> Datasheet | None:
    """The datasheet row for a device name such as ``"NVIDIA H100 80GB HBM3"``, or None."""
    name = device_name.strip().upper()
    return next((d for d in DATASHEETS if re.search(d.pattern, name)), None)


def trace_datasheet(device_properties: list[dict[str, Any]]) -> tuple[str, Datasheet | None]:
    """The name of a trace's first GPU and its datasheet row (``("", None)`` without one)."""
    names = [str(d.get("name") or "") for d in device_properties]
    name = next((n for n in names if n), "")
    return name, (datasheet(name) if name else None)
