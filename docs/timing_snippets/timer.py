import torch
from torch.utils.benchmark import Timer

dev = "cuda" if torch.cuda.is_available() else "cpu"
size = 4096 if dev == "cuda" else 256
x = torch.randn(size, size, device=dev)
t = Timer("x @ x", globals={"x": x})  # your statement
m = t.blocked_autorange(min_run_time=0.5)  # warms up; syncs CUDA
print(m)  # the median per call, and how much the runs spread
print(f"{m.median * 1e3:.3f} ms per call")
