import torch
from triton.testing import do_bench, do_bench_cudagraph

x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
f = lambda: x @ x  # your code  # noqa: E731

ms = do_bench(f, return_mode="median")  # L2 flushed before each run
with torch.cuda.stream(torch.cuda.Stream()):  # graphs: a side stream
    ms_graph = do_bench_cudagraph(f, return_mode="median")
tflops = 2 * 4096**3 / (ms * 1e-3) / 1e12
print(f"{ms:.3f} ms ({ms_graph:.3f} in a graph), {tflops:.0f} TFLOP/s")
