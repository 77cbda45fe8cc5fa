import torch
from torch.profiler import ProfilerActivity as Act
from torch.profiler import profile, record_function, schedule

dev = "cuda" if torch.cuda.is_available() else "cpu"
model = torch.nn.Linear(512, 512).to(dev)  # your model
inputs = torch.randn(64, 512, device=dev)  # a batch of its inputs
acts = [Act.CPU, Act.CUDA] if dev == "cuda" else [Act.CPU]
with profile(
    activities=acts,
    schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
    on_trace_ready=lambda p: p.export_chrome_trace("trace.json.gz"),
) as prof:
    for _ in range(5):  # wait 1 + warmup 1 + active 3 steps
        with record_function("forward"):  # your step, labelled
            model(inputs)
        # training: label loss.backward() and opt.step() the same way
        prof.step()  # ends one step
avg = prof.key_averages()  # each op, summed over the kept steps
print(avg.table(sort_by="self_cpu_time_total", row_limit=10))
