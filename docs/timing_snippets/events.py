import time

import torch

dev = "cuda" if torch.cuda.is_available() else "cpu"
size = 4096 if dev == "cuda" else 256
x = torch.randn(size, size, device=dev)
f = lambda: x @ x  # your code  # noqa: E731
n = 20

for _ in range(3):  # warm-up: the first calls pay one-time setup
    f()
if dev == "cuda":
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()  # queued on the current stream
    for _ in range(n):
        f()
    end.record()
    end.synchronize()  # wait until the GPU reaches `end`
    ms = start.elapsed_time(end) / n
else:  # no CUDA events on the CPU: a clock around the calls
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    ms = (time.perf_counter() - t0) * 1e3 / n
print(f"{ms:.3f} ms per call")
