"""DRAFT additions to examples/04_attention.py for Part 3 (issue 12), not yet recorded.

Paste into the example (after ``sdpa_attention``/``BACKENDS`` and ``profile_attention``)
and add the VARIANTS entries at the bottom; then re-record 04_attention.
"""
# ruff: noqa: F821  (names from examples/04_attention.py)


def naive_attention_inplace(q, k, v):
    """The five steps with the mask applied in place (masked_fill_): no clone of the scores.
    Safe here only because no autograd graph needs the unmasked scores (torch.no_grad)."""
    scores = q @ k.transpose(-2, -1)
    scores = scores * (1.0 / math.sqrt(q.shape[-1]))
    seq = q.shape[-2]
    causal = torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(1)
    scores.masked_fill_(causal, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


# In profile_attention: f = {"naive": naive_attention, "naive_inplace": naive_attention_inplace,
#                             "sdpa": sdpa_attention}[impl]

INTERLEAVED = ("cudnn", "flash", "efficient", "math")
# Every version follows every other exactly once per cycle (a balanced order for four).
INTERLEAVED_CYCLE = (0, 1, 2, 3, 0, 2, 1, 3, 2, 0, 3, 1)


def profile_backends_interleaved(out_dir, *, batch=8, heads=16, seq=1024, head_dim=64,
                                 unprofiled_cycles=40, cycles=4, device=None):
    """CPU time per SDPA call of each backend, interleaved in one process, unprofiled
    (``timings.json``) and then under the profiler. Each backend's pin is entered once per
    call, outside the timed region, and the GPU is synchronized after every cycle so that
    the launch queue never fills."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    names = INTERLEAVED if device == "cuda" else ("math",)
    cycle = [names[i % len(names)] for i in INTERLEAVED_CYCLE]
    torch.manual_seed(0)
    q, k, v = (torch.randn(batch, heads, seq, head_dim, device=device, dtype=torch.bfloat16)
               for _ in range(3))
    calls = []
    with torch.no_grad():
        for name in names:  # warm up each backend (cuDNN builds its plan on first use)
            with sdpa_kernel([BACKENDS[name]]):
                for _ in range(5):
                    sdpa_attention(q, k, v)
        if device == "cuda":
            torch.cuda.synchronize()
        for _ in range(unprofiled_cycles):
            for name in cycle:
                with sdpa_kernel([BACKENDS[name]]):
                    t0 = time.perf_counter_ns()
                    sdpa_attention(q, k, v)
                    calls.append((name, (time.perf_counter_ns() - t0) / 1e3))
            if device == "cuda":
                torch.cuda.synchronize()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "timings.json").write_text(json.dumps(
        {"what": "CPU time per SDPA call without the profiler, in run order", "unit": "us",
         "calls": [[n, round(us, 1)] for n, us in calls]}))
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with torch.no_grad(), profile(activities=activities) as prof:
        for _ in range(cycles):
            for name in cycle:
                with sdpa_kernel([BACKENDS[name]]), record_function(name):
                    sdpa_attention(q, k, v)
            if device == "cuda":
                torch.cuda.synchronize()
    prof.export_chrome_trace(str(Path(out_dir) / "trace.json"))
    sort_by = "cuda_time_total" if device == "cuda" else "cpu_time_total"
    return prof.key_averages().table(sort_by=sort_by, row_limit=15, max_name_column_width=48)


# VARIANTS additions:
#     "naive_inplace": (profile_attention, {**SHAPE, "impl": "naive_inplace"}),
#     "interleaved_backends": (profile_backends_interleaved, {**SHAPE}),
# (import time at the top of the example)
