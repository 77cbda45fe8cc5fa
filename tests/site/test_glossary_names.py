"""The glossary's cuBLAS entry names the GEMM kernel families our recordings ran."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracereader import Kind, load

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = ROOT / "docs" / "recordings"
#: 01_matmul_add's variant -> the family the glossary gives for it on our Hopper GPUs.
FAMILIES = {"4096_bf16": "nvjet_sm90_", "4096_fp32_tf32": "sm90_xmma_gemm_",
            "4096_fp32": "sm80_xmma_gemm_"}  # fmt: skip


@pytest.mark.parametrize("gpu", ["h200", "h100"])
@pytest.mark.parametrize("variant", sorted(FAMILIES))
def test_glossary_gemm_family_is_the_recordings(gpu: str, variant: str) -> None:
    glossary = (ROOT / "docs" / "glossary.md").read_text()
    assert f"`{FAMILIES[variant]}…`" in glossary
    runs = sorted((RECORDINGS / gpu / "01_matmul_add" / variant).glob("r*/trace.json.gz"))
    assert len(runs) == 3
    for run in runs:
        trace = load(run, extra_args=False)
        names = {trace.names[i] for i in trace.name_id[trace.where(kind=Kind.KERNEL)]}
        gemms = {n for n in names if "gemm" in n or n.startswith("nvjet")}
        assert gemms and all(n.startswith(FAMILIES[variant]) for n in gemms), (run, gemms)
