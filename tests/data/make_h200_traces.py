"""Record the real GPU traces the tracereader tests use (run on the H200).

Each trace covers one launch path or trace shape the library must handle:

* ``train_eager``: an MLP training step (forward, backward on the autograd
  thread, SGD), a matmul on a side stream, H2D/D2H copies, a memset, ``.item()``.
* ``train_stack``: the same step with ``with_stack``, ``record_shapes`` and
  ``profile_memory`` (Python frames, nn.Module frames, memory instants).
* ``compile``: the MLP under ``torch.compile`` (Triton ``cpu_op`` events with
  ``args.stream = 0``, ``cuLaunchKernel``).
* ``cudagraphs``: ``torch.compile(mode="reduce-overhead")`` (``cudaGraphLaunch``,
  one call to many kernels).
* ``sdpa``: scaled-dot-product attention under the flash, efficient, cuDNN and
  math backends.

Written to ``tests/data/h200/<name>.json.gz`` with the environment in ``env.json``.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import torch
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile, record_function, schedule

OUT = Path(__file__).resolve().parent / "h200"


def mlp():
    return nn.Sequential(
        nn.Linear(256, 512), nn.GELU(), nn.LayerNorm(512), nn.Linear(512, 256)
    ).cuda()


def train_step(model, opt, x, side, host):
    with record_function("train_step"):
        opt.zero_grad(set_to_none=True)
        loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        with torch.cuda.stream(side):
            y = x @ x.T
        torch.cuda.current_stream().wait_stream(side)
        dev = host.to("cuda", non_blocking=False)
        dev.zero_()
        _ = y.sum().item()
        return dev.cpu()


def capture(name, body, steps=2, **kwargs):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        with profile(
            activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
            schedule=schedule(wait=0, warmup=1, active=steps, repeat=1),
            on_trace_ready=lambda p: p.export_chrome_trace(str(path)),
            **kwargs,
        ) as prof:
            for _ in range(1 + steps):
                body()
                prof.step()
        torch.cuda.synchronize()
        data = json.loads(path.read_text(errors="replace"), strict=False)
        data.pop("traceName", None)
        with gzip.open(OUT / f"{name}.json.gz", "wt", compresslevel=9) as fh:
            json.dump(data, fh)
        print(f"{name}: {len(data['traceEvents'])} events", flush=True)


def main() -> int:
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    torch.manual_seed(0)
    x = torch.randn(64, 256, device="cuda")
    host = torch.randn(1024)
    side = torch.cuda.Stream()

    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    for _ in range(3):
        train_step(model, opt, x, side, host)
    capture("train_eager", lambda: train_step(model, opt, x, side, host))
    capture(
        "train_stack",
        lambda: train_step(model, opt, x, side, host),
        steps=1,
        with_stack=True,
        record_shapes=True,
        profile_memory=True,
    )

    for mode, name in ((None, "compile"), ("reduce-overhead", "cudagraphs")):
        torch._dynamo.reset()
        cmodel = torch.compile(mlp(), mode=mode)
        with torch.no_grad():
            for _ in range(5):
                cmodel(x)
            torch.cuda.synchronize()

            def fwd(cmodel=cmodel):
                with record_function("forward"):
                    cmodel(x).sum()

            capture(name, fwd)

    q, k, v = (torch.randn(4, 8, 512, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    backends = {
        "flash": SDPBackend.FLASH_ATTENTION,
        "efficient": SDPBackend.EFFICIENT_ATTENTION,
        "cudnn": SDPBackend.CUDNN_ATTENTION,
        "math": SDPBackend.MATH,
    }

    def sdpa_all():
        for label, backend in backends.items():
            with sdpa_kernel(backend), record_function(f"sdpa_{label}"):
                torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

    sdpa_all()
    capture("sdpa", sdpa_all, steps=1)
    env = {
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": sys.version.split()[0],
        "kineto_log_level": os.environ.get("KINETO_LOG_LEVEL"),
    }
    (OUT / "env.json").write_text(json.dumps(env, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
