import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

dev = "cuda" if torch.cuda.is_available() else "cpu"
x, w, b = (torch.randn(64, 64, device=dev, dtype=torch.bfloat16) for _ in range(3))
acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev == "cuda" else [])
with profile(
    activities=acts,
    schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
    on_trace_ready=lambda p: p.export_chrome_trace("trace.json"),
) as prof:
    for _ in range(5):  # wait 1 + warmup 1 + active 3 steps
        with record_function("matmul_add"):
            torch.add(torch.matmul(x, w), b)
        prof.step()
print(
    prof.key_averages().table(
        sort_by=f"{'cuda' if dev == 'cuda' else 'cpu'}_time_total", row_limit=15
    )
)
