"""What the two kernel-settings benchmarks share: loading one of 05_llm_decode's Triton
kernels from the example itself, and timing launches replayed as a CUDA graph."""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "05_llm_decode" / "05_llm_decode.py"


def json_arg(doc: str, argv: list[str] | None) -> Path | None:
    """The ``--json FILE`` flag both benchmarks take (``doc``: the script's docstring)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write every timing to this file")
    return parser.parse_args(argv).json


def stamp(torch: Any, triton: Any) -> dict[str, str]:
    """Where a sweep ran: the GPU, torch and Triton."""
    return {
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "triton": triton.__version__,
    }


def example_kernel(tool: str, name: str) -> tuple[Any, Any, Any, dict[str, Any]] | None:
    """(torch, triton, the jitted kernel ``name``, the example's definitions), or None
    after one line on stderr when torch, Triton or a CUDA GPU is missing."""
    try:
        import torch
        import triton
        import triton.language as tl
    except ImportError as err:
        print(f"{tool}: needs torch with Triton: {err}", file=sys.stderr)
        return None
    if not torch.cuda.is_available():
        print(f"{tool}: needs a CUDA GPU", file=sys.stderr)
        return None
    sys.path.insert(0, str(ROOT / "docs" / "_ext"))
    from tracesite import load_definitions

    ns = load_definitions(EXAMPLE)
    ns["tl"] = tl  # what the example's op binds before it compiles the kernel
    return torch, triton, triton.jit(ns[name]), ns


def graph_us(torch: Any, launch: Any, per_graph: int, replays: int = 20, rounds: int = 5) -> float:
    """Median µs per launch of ``launch`` (which makes ``per_graph`` kernel launches)
    when replayed as one CUDA graph."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        launch()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        launch()
    graph.replay()
    times = []
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(replays):
            graph.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / replays / per_graph)
    return statistics.median(times)
