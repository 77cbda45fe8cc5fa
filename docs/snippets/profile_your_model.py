import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

device = "cuda" if torch.cuda.is_available() else "cpu"
model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU())  # your model
inputs = torch.randn(64, 512)  # a batch of its inputs
model, inputs = model.to(device), inputs.to(device)
activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
with profile(activities=activities, schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
             on_trace_ready=lambda p: p.export_chrome_trace("trace.json.gz")) as prof:
    for _ in range(5):  # wait 1 + warmup 1 + active 3 steps
        with record_function("forward"):  # your step: forward, backward, optimizer
            model(inputs)
        prof.step()  # ends one step
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
