"""Summarise every recording session of Part 4's GEMV-kernel rows, from git history.

The site keeps one recording per variant (its latest three repeats); the variants
``loop_kernels_8b`` and ``loop_kernels_sdpa_8b`` were recorded in several sessions
while their GEMV code stayed the same (the kernel's ``NORM`` and ``RESIDUAL`` options,
added later, are off in both). Part 4 compares those sessions, so this script reads
each session's recordings from the commit that added them and writes, per session,
variant and repeat: tokens/s, the fraction of the H200's specified bandwidth, the GPU
time of the token's GEMVs, and that of the attention reductions with the launch grid
and block of the softmax kernel::

    python scripts/part4_sessions.py      # rewrites docs/chapters/part4_sessions.json

Run it from a clone with the history (not a shallow one).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
from tracereader import Kind, link, load  # noqa: E402

OUT = ROOT / "docs" / "chapters" / "part4_sessions.json"
VARIANTS = ("loop_kernels_8b", "loop_kernels_sdpa_8b")
# The commits that added each session's recordings of those variants, oldest first.
SESSIONS = ("ea2cba1", "0209ac8", "c28d823", "6e389c6")


def git_bytes(commit: str, path: str) -> bytes:
    return subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT, capture_output=True,
                          check=True).stdout


def repeat_summary(commit: str, variant: str, k: int, scratch: Path) -> dict[str, object]:
    folder = f"docs/recordings/05_llm_decode/{variant}/r{k}"
    meta = json.loads(git_bytes(commit, f"{folder}/meta.json"))
    trace_file = scratch / f"{commit}_{variant}_{k}.json.gz"
    trace_file.write_bytes(git_bytes(commit, f"{folder}/trace.json.gz"))
    tr = load(trace_file)
    ops = [int(g) for g in link(tr).gpu_ops_of(tr.step("ProfilerStep#2").event) if tr.kind[g] == Kind.KERNEL]
    names = [tr.name(g) for g in ops]
    gemv = [g for g, n in zip(ops, names, strict=True) if n == "gemv_kernel"]
    softmax = [g for g, n in zip(ops, names, strict=True) if n.startswith("triton_red") and "softmax" in n]
    scores = [g for g, n in zip(ops, names, strict=True)
              if n.startswith("triton_red") and "cos" in n and "sum" in n]
    return {
        "recorded_at": meta["env"]["recorded_at"],
        "tokens_per_s": meta["results"]["tokens_per_s"],
        "hbm_fraction_spec": meta["results"]["hbm_fraction_spec"],
        "copy_tbs": meta["results"]["copy_tbs"],
        "gemv_us": sum(tr.dur_ns[g] for g in gemv) / 1e3,
        "attention_reductions_us": sum(tr.dur_ns[g] for g in softmax + scores) / 1e3,
        "softmax_grid": str(tr.extra["grid"][softmax[0]]) if softmax else None,
        "softmax_block": str(tr.extra["block"][softmax[0]]) if softmax else None,
    }


def main() -> int:
    out: dict[str, object] = {"what": __doc__.split("\n\n")[0], "sessions": []}
    with tempfile.TemporaryDirectory() as scratch:
        for commit in SESSIONS:
            session: dict[str, object] = {"commit": commit}
            for variant in VARIANTS:
                session[variant] = [repeat_summary(commit, variant, k, Path(scratch)) for k in range(3)]
            out["sessions"].append(session)  # type: ignore[attr-defined]
    OUT.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
