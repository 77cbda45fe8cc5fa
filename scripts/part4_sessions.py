"""Summarise every recording session of Part 4's last rows, from git history.

The site keeps one recording per variant (its latest three repeats); Part 4's last
rows were recorded in several sessions each, with the same code for that row:
``loop_kernels_8b`` and ``loop_kernels_sdpa_8b`` (the GEMV kernel's ``NORM`` and
``RESIDUAL`` options, added later, are off in both), ``loop_attention_8b`` and
``loop_untuned_8b``. Part 4 compares those sessions, so this script reads each session's
recordings from the commit that added them and writes, per variant, session and repeat:
tokens/s, the fraction of the H200's specified bandwidth, the GPU time of the token's
GEMVs and of its attention (the attention reductions: the scores, the softmax's
preparation and the softmax, with the launch grid and block of the softmax kernel; or
``attention_kernel``), whether the process compiled into an empty cache, and a digest of
one profiled token's kernel launches (each kernel's name, grid and block, in order; two
repeats with the same digest launched the same kernels on the same grids and blocks,
though not necessarily with the same block-size constants inside the kernels)::

    python scripts/part4_sessions.py      # rewrites docs/chapters/part4_sessions.json

Run it from a clone with the history (not a shallow one).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
from tracereader import Kind, link, load  # noqa: E402

OUT = ROOT / "docs" / "chapters" / "part4_sessions.json"
# Per variant, the commits that added each session's recordings of it, oldest first.
_KERNELS = ("ea2cba1", "0209ac8", "c28d823", "6e389c6", "6130f65")
SESSIONS = {
    "loop_kernels_8b": _KERNELS,
    "loop_kernels_sdpa_8b": _KERNELS,
    "loop_attention_8b": ("6130f65", "8f24d56"),
    "loop_untuned_8b": ("0c24cd2", "aca63d3"),
}


def git_bytes(commit: str, path: str) -> bytes:
    return subprocess.run(
        ["git", "show", f"{commit}:{path}"], cwd=ROOT, capture_output=True, check=True
    ).stdout


def repeat_summary(commit: str, variant: str, k: int, scratch: Path) -> dict[str, object]:
    folder = f"docs/recordings/05_llm_decode/{variant}/r{k}"
    meta = json.loads(git_bytes(commit, f"{folder}/meta.json"))
    trace_file = scratch / f"{commit}_{variant}_{k}.json.gz"
    trace_file.write_bytes(git_bytes(commit, f"{folder}/trace.json.gz"))
    tr = load(trace_file)
    ops = [
        int(g)
        for g in link(tr).gpu_ops_of(tr.step("ProfilerStep#2").event)
        if tr.kind[g] == Kind.KERNEL
    ]
    names = [tr.name(g) for g in ops]
    gemv = [g for g, n in zip(ops, names, strict=True) if n == "gemv_kernel"]
    softmax = [
        g for g, n in zip(ops, names, strict=True) if n.startswith("triton_red") and "softmax" in n
    ]
    scores = [
        g
        for g, n in zip(ops, names, strict=True)
        if n.startswith("triton_red") and "cos" in n and "sum" in n
    ]
    prepare = [
        g for g, n in zip(ops, names, strict=True) if n.startswith("triton_per") and "softmax" in n
    ]
    attention = (
        softmax
        + scores
        + prepare
        + [g for g, n in zip(ops, names, strict=True) if n == "attention_kernel"]
    )
    launches = "\n".join(f"{tr.name(g)} {tr.extra['grid'][g]} {tr.extra['block'][g]}" for g in ops)
    return {
        "recorded_at": meta["env"]["recorded_at"],
        "tokens_per_s": meta["results"]["tokens_per_s"],
        "hbm_fraction_spec": meta["results"]["hbm_fraction_spec"],
        "copy_tbs": meta["results"]["copy_tbs"],
        "fresh_compile_cache": bool(meta["process"].get("fresh_compile_cache")),
        "gemv_us": sum(tr.dur_ns[g] for g in gemv) / 1e3,
        "attention_us": sum(tr.dur_ns[g] for g in attention) / 1e3,
        "softmax_grid": str(tr.extra["grid"][softmax[0]]) if softmax else None,
        "softmax_block": str(tr.extra["block"][softmax[0]]) if softmax else None,
        "kernels": len(ops),
        "launch_digest": hashlib.sha256(launches.encode()).hexdigest()[:16],
    }


def main() -> int:
    out: dict[str, object] = {"what": __doc__.split("\n\n")[0], "variants": {}}
    with tempfile.TemporaryDirectory() as scratch:
        for variant, commits in SESSIONS.items():
            out["variants"][variant] = [  # type: ignore[index]
                {
                    "commit": c,
                    "repeats": [repeat_summary(c, variant, k, Path(scratch)) for k in range(3)],
                }
                for c in commits
            ]
    OUT.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
