"""Story 04d's claims (examples/04_attention/04d_backend_streams.py): each sentence its text
says about the recordings, checked on every repeat of both GPUs (``streams_backends`` and
``streams_small`` are recorded on both). A sentence about one GPU or one repeat sits under
``if f.gpu == ...`` (and ``f.repeat``); one about the repeats together ("in all but one
H200 repeat") is checked once per GPU over its repeats; one about both GPUs' recordings
together ("in some, not all") once, in the H200's run, over every repeat of both. "In this
recording" is the drawn one the page prints, the H200's first repeat. It pastes nothing:
the story prints its numbers from the replay.

The clocks per version are :func:`part3_measures.stream_stats` (Part 3 reads the same
recordings); the kernels' time per call is :func:`part3_measures.region_kernels_us` over
:func:`part3_measures.region_calls`, as the story's ``clocks`` sums them. "A few µs" is
:func:`tracesite.words.few_us`. The tables are read by story 04a's
:func:`story_04a_naive_and_sdpa.table`; which rows belong to a version, by story 04c's
:func:`story_04c_interleaved_backends.names_in`.
"""

from __future__ import annotations

from typing import Any

import part3_measures as m
from story_04a_naive_and_sdpa import (
    SHAPE,
    gpu_spans_are_their_ops,
    named,
    sorted_by_gpu_time,
    table,
)
from story_04c_interleaved_backends import names_in
from tracesite import words
from tracesite.facts import Facts, claim

from tracereader import Kind, Trace, link

EXAMPLE = "04_attention"
GPUS = ("h200", "h100")

BIG, SMALL = "streams_backends", "streams_small"
VERSIONS = m.STREAM_VERSIONS  # cudnn, flash, efficient, math, default
FUSED = ("cudnn", "flash", "efficient", "default")  # the versions that run one fused kernel
SDPA = "aten::scaled_dot_product_attention"


def kernels(tr: Trace, region: str) -> list[int]:
    return [i for i in m.region_gpu_ops(tr, region) if tr.kind[i] == Kind.KERNEL]


def kernel_gaps_us(tr: Trace, region: str) -> list[float]:
    """The GPU's wait before each kernel of the burst from the second on: from the end of the
    kernel before to its start (a memset between them counts as part of the wait)."""
    ks = kernels(tr, region)
    return [float(tr.ts_ns[b] - tr.end_ns[a]) / 1e3 for a, b in zip(ks, ks[1:], strict=False)]


def gaps_after_first_call_us(tr: Trace, region: str) -> list[float]:
    """The idle gaps on the GPU lane before each GPU operation launched after the burst's
    first call returned."""
    lk = link(tr)
    ops = m.region_gpu_ops(tr, region)
    first = tr.where(
        name=SDPA, within=(tr.regions(region)[0].start_ns, tr.regions(region)[0].end_ns)
    )[0]
    return [
        float(tr.ts_ns[ops[k]] - tr.end_ns[ops[k - 1]]) / 1e3
        for k in range(1, len(ops))
        if tr.ts_ns[lk.launch[ops[k]]] >= tr.end_ns[first]
    ]


def profiled_calls_us(tr: Trace, region: str) -> list[float]:
    """The CPU µs of each profiled call (its aten::scaled_dot_product_attention)."""
    reg = tr.regions(region)[0]
    return [
        float(tr.dur_ns[i]) / 1e3 for i in tr.where(name=SDPA, within=(reg.start_ns, reg.end_ns))
    ]


def kernel_us(tr: Trace, region: str) -> float:
    """The kernels' time per call in the profiled burst (memsets left out), as ``clocks``."""
    return sum(m.region_kernels_us(tr, region)) / m.region_calls(tr, region)


def cudnn_kept_up(tr: Trace) -> bool:
    """cuDNN's kernels from the third on each waited at most a few µs."""
    return all(words.few_us(g) for g in kernel_gaps_us(tr, "cudnn")[1:])


def facts(f: Facts) -> None:
    def each() -> None:
        big_rec, small_rec = f.rec(BIG), f.rec(SMALL)
        big_t: Any = big_rec.timings()
        small_t: Any = small_rec.timings()
        shape = ("batch", "heads", "seq", "head_dim")
        claim(
            [big_rec.params[k] for k in shape] == list(SHAPE)
            and [small_rec.params[k] for k in shape] == [1, 8, 128, 64],
            "the Hugging Face series' shape (batch 8, 16 heads, sequence 1024, head_dim 64) and "
            "a small one (batch 1, 8 heads, sequence 128)",
        )
        for t in (big_t, small_t):
            streams = t["streams"]
            cycle = [s["version"] for s in streams[:20]]
            loop = list(zip(cycle, cycle[1:] + cycle[:1], strict=True))
            claim(
                len(set(loop)) == 20
                and all(a != b for a, b in loop)
                and set(cycle) == set(VERSIONS),
                "read as a loop, every version follows every other version exactly once per cycle "
                "(for five versions, a cycle of 20 bursts)",
            )
            claim(
                t["calls_per_stream"] == 16
                and all(len(s["cpu_us"]) == 16 for s in streams)
                and [s["version"] for s in streams] == cycle * 12,
                "both run 12 cycles of 16-call bursts",
            )
            claim(
                all(
                    s["after"] == p["version"] != s["version"]
                    for p, s in zip(streams, streams[1:], strict=False)
                ),
                "each burst's first call follows another version",
            )
            stats = m.stream_stats(t)
            claim(
                all(stats[v].first_us > stats[v].cpu_us for v in VERSIONS),
                "each burst's first call costs more",
            )
            claim(
                all(
                    set(s) == {"version", "after", "cpu_us", "wall_us", "gpu_event_us"}
                    for s in streams
                ),
                "each entry of streams is one burst, with version, after, cpu_us, wall_us and, "
                "on a GPU, gpu_event_us",
            )
        processes = big_rec.meta["process"]["variants_in_it"]
        claim(
            processes == small_rec.meta["process"]["variants_in_it"]
            and {BIG, SMALL} <= set(processes),
            "each process ran both workloads",
        )
        big, small = f.trace(BIG), f.trace(SMALL)
        for tr in (big, small):
            claim(
                all(len(tr.regions(v)) == 1 and m.region_calls(tr, v) == 4 for v in VERSIONS),
                "then profile 4 calls per version, inside a range named after it",
            )

        # The series' shape.
        rows = table(big_rec.table)
        math_names = names_in(big, ("math",))
        other_names = names_in(big, tuple(v for v in VERSIONS if v != "math"))
        mrows = [r for r in rows if r["name"] == "math"]
        claim(
            sorted_by_gpu_time(rows)
            and all(
                any(named(r, n) for n in math_names) and not any(named(r, n) for n in other_names)
                for r in rows
                if r["name"] != SDPA
            )
            and len(mrows) == 2
            and sorted(r["cpu_total_us"] == 0 for r in mrows) == [False, True],
            "in this table math's many kernels and ops fill the rows, with its range twice (on "
            "the CPU and, as a gpu_user_annotation, on the GPU); the fused backends' rows fall "
            "below its 15",
        )
        bs = m.stream_stats(big_t)
        bk = {v: kernel_us(big, v) for v in VERSIONS}
        claim(
            all(bs[v].cpu_us < bk[v] for v in FUSED),
            "on both GPUs, in every repeat, every fused version's CPU time per call was below "
            "its kernels' time per call",
        )
        claim(
            all(abs(bs[v].wall_us - bk[v]) < abs(bs[v].wall_us - bs[v].cpu_us) for v in VERSIONS),
            "the wall time per call followed the GPU: it was nearer the kernels' time than the "
            "CPU time, for every version (the unprofiled clocks say the GPU was kept busy)",
        )
        wall = {v: bs[v].wall_us for v in VERSIONS}
        claim(
            wall["cudnn"] < wall["default"] < min(wall[v] for v in ("flash", "efficient", "math")),
            "cuDNN's call was the fastest; default came next",
        )
        claim(
            [big.name(i) for i in kernels(big, "default")]
            == [big.name(i) for i in kernels(big, "cudnn")],
            "default, which runs the same kernel",
        )
        claim(
            bs["default"].first_us > bs["cudnn"].first_us,
            "the first call of its bursts costing the CPU more than cuDNN's",
        )

        # The profiled bursts, on the GPU lane.
        claim(
            all(words.few_us(max(gaps_after_first_call_us(big, v))) for v in ("efficient", "math")),
            "after each version's first call, efficient's and math's kernels follow one another "
            "on the GPU lane with gaps of a few µs at most, in every repeat on both GPUs",
        )
        lk = link(big)
        for v in ("cudnn", "default"):
            ks = kernels(big, v)
            claim(
                big.end_ns[ks[0]] < big.end_ns[lk.launch[ks[1]]],
                "cuDNN's and default's do not at first: in every recording their first kernel "
                f"ended before the CPU had launched the second ({v})",
            )
        wait = {v: kernel_gaps_us(big, v)[0] for v in ("cudnn", "default")}
        claim(
            wait["cudnn"] >= 10 and wait["default"] < wait["cudnn"],
            "and the GPU waited, tens of µs or more for cuDNN, less for default",
        )
        if f.gpu == "h200" and f.repeat == 0:
            claim(
                all(min(profiled_calls_us(big, v)) > bs[v].cpu_us for v in VERSIONS),
                "in this recording every profiled call of every version cost the CPU more than "
                "the unprofiled median",
            )
        claim(
            max(bk["cudnn"], bk["default"]) < min(bk[v] for v in ("flash", "efficient", "math"))
            and min(wait.values()) > words.FEW_US,
            "and the GPU waited between the shortest kernels, cuDNN's and default's",
        )
        claim(
            all(words.few_us(g) for g in kernel_gaps_us(big, "default")[1:]),
            "from the third kernel on, default's kept up in every recording",
        )
        first = profiled_calls_us(big, "cudnn")[0]
        claim(
            all(first > us for v in VERSIONS for us in profiled_calls_us(big, v) if us != first)
            and min(VERSIONS, key=lambda v: big.regions(v)[0].start_ns) == "cudnn",
            "cuDNN's first profiled call is the longest, in every recording: it is the first "
            "call the profiler records",
        )
        reg = big.regions("cudnn")[0]
        op = big.where(name=SDPA, within=(reg.start_ns, reg.end_ns))[0]
        inside = big.where(within=(int(big.ts_ns[op]), int(big.end_ns[op])))
        claim(
            any(
                big.kind[i] == Kind.OVERHEAD and big.name(i) == "Activity Buffer Request"
                for i in inside
            )
            and any(
                big.name(i) == "cudaMemsetAsync" and words.hundreds(int(big.dur_ns[i]) // 1000)
                for i in inside
            ),
            "during it the trace shows the profiler's own Activity Buffer Request and a memset "
            "launch (cudaMemsetAsync) that took hundreds of µs",
        )
        claim(
            all(
                words.much(1e3, s["cpu_us"][0]) for s in big_t["streams"] if s["version"] == "cudnn"
            ),
            "without the profiler, a cuDNN burst's first call took well under a millisecond",
        )

        # A small workload.
        b, h, s, d = (small_rec.params[k] for k in shape)
        series_flop = 4 * SHAPE[0] * SHAPE[1] * SHAPE[2] ** 2 * SHAPE[3] / 2
        claim(
            words.about(4 * b * h * s * s * d / 2, 17e6)
            and words.tiny(4 * b * h * s * s * d / 2, series_flop)
            and words.about(4 * b * h * s * s * d / 2 / series_flop, 1e-3),
            "Now each call's GPU work is tiny beside the series' shape (about a thousandth of "
            "it): ..., about 17 MFLOP of useful work per call",
        )
        srows = table(small_rec.table)
        gpu_rows = {r["name"]: r for r in srows if r["cpu_total_us"] == 0 and r["name"] in VERSIONS}
        first_math = next(r for r in srows if r["name"] == "math")
        claim(
            set(gpu_rows) == set(VERSIONS) and first_math["cpu_total_us"] == 0,
            "in this table the rows cudnn, default, flash, efficient and the first math are the "
            "versions' ranges on the GPU",
        )
        claim(
            all(gpu_spans_are_their_ops(small, v) for v in VERSIONS),
            "each spans its first GPU operation to its last, idle time included",
        )
        gpu_total = sum(float(small.dur_ns[g]) / 1e3 for g in link(small).gpu_ops)
        claim(
            all(
                abs(r["self_cuda_pct"] - 100 * r["self_cuda_us"] / gpu_total) < 1
                for r in gpu_rows.values()
            ),
            "Self CUDA % divides by the summed time of all the profile's GPU operations",
        )
        span = {
            v: float(small.dur_ns[i]) / 1e3
            for v in VERSIONS
            for i in small.where(kind=Kind.GPU_ANNOTATION, name=v)
        }
        claim(
            gpu_rows["cudnn"]["self_cuda_pct"] > 100
            and gpu_rows["math"]["self_cuda_pct"] > 100
            and gpu_rows["flash"]["self_cuda_pct"] < 100
            and words.most(span["flash"] - sum(m.region_kernels_us(small, "flash")), span["flash"]),
            "a range longer than that sum reads over 100 % (here cuDNN's and math's); flash's, "
            "mostly idle too but shorter, reads less",
        )
        fwd = [r for r in srows if r["name"] == "aten::_cudnn_attention_forward"]
        cud = "aten::_cudnn_attention_forward"
        claim(
            len(fwd) == 1
            and fwd[0]["calls"] == 8
            and len(m.region_ops_rows(small, "cudnn", cud)) == 4
            and len(m.region_ops_rows(small, "default", cud)) == 4,
            "aten::_cudnn_attention_forward counts cudnn's 4 calls and default's 4 (PyTorch "
            "chose cuDNN)",
        )
        conv = ("aten::to", "aten::_to_copy", "aten::copy_")
        small_math = names_in(small, ("math",))
        small_other = names_in(small, tuple(v for v in VERSIONS if v != "math"))
        claim(
            all(any(r["name"] == n for r in srows) for n in conv)
            and all(n in small_math and n not in small_other for n in conv)
            and len(m.region_ops_rows(small, "math", "aten::_to_copy")) == 5 * 4,
            "aten::to, aten::_to_copy and aten::copy_ are the math backend converting q, k and v "
            "to fp32 and two results back to bf16",
        )

        ss = m.stream_stats(small_t)
        if f.gpu == "h100" and f.repeat == 2:
            claim(
                all(bs[v].cpu_us > ss[v].cpu_us for v in VERSIONS)
                and words.times(bs["cudnn"].cpu_us, ss["cudnn"].cpu_us, 1.5),
                "in the third H100 repeat every version's calls had cost the CPU more at the "
                "series' shape, cuDNN's over 1.5 times as much",
            )
        else:
            claim(
                all(words.barely_changed(bs[v].cpu_us, ss[v].cpu_us) for v in VERSIONS),
                "the CPU time per call barely changed from the series' shape in five of the six "
                "processes",
            )
        sk = {v: kernel_us(small, v) for v in VERSIONS}
        for st, kern in ((bs, bk), (ss, sk)):
            claim(
                all(
                    abs(st[v].event_us - max(st[v].cpu_us, kern[v]))
                    < abs(st[v].event_us - min(st[v].cpu_us, kern[v]))
                    for v in VERSIONS
                ),
                "the events' span covers the GPU's idle gaps too, so it follows whichever side "
                "is slower",
            )
        claim(
            all(abs(ss[v].wall_us - ss[v].cpu_us) < abs(ss[v].wall_us - sk[v]) for v in VERSIONS),
            "at the small shape the wall time per call followed the CPU: it was nearer the CPU "
            "time per call than the kernels' time, for every version, in every repeat on both "
            "GPUs",
        )
        claim(
            all(ss[v].wall_us > 2 * sk[v] for v in VERSIONS),
            "the GPU sat idle between calls, waiting for the next launch",
        )
        claim(
            sk["cudnn"] < sk["flash"] < sk["efficient"],
            "of the fused kernels, cuDNN's was still the shortest and efficient's the longest",
        )
        claim(
            all(ss["efficient"].wall_us < ss[v].wall_us for v in VERSIONS if v != "efficient"),
            "yet efficient's call was the fastest, in every process",
        )
        ops = m.region_gpu_ops(small, "cudnn")
        kinds = [int(small.kind[i]) for i in ops]
        claim(
            kinds == [Kind.MEMSET, Kind.KERNEL] * 4
            and all(
                small.ts_ns[ops[k + 1]] - small.end_ns[ops[k]]
                < small.ts_ns[ops[k + 2]] - small.end_ns[ops[k + 1]]
                for k in (2, 4)
            ),
            "cuDNN's profiled burst from its second call on: each memset, a short wait for the "
            "kernel's launch, the short kernel, then a longer idle gap while the CPU prepares "
            "the next call",
        )
        end = small.regions("cudnn")[0].end_ns
        claim(
            all(small.end_ns[i] < end for i in ops),
            "every kernel of the burst ends before its range does",
        )

    f.repeats(each, n=f.n_repeats(BIG))

    # The repeats together.
    flash_ok = [
        words.few_us(max(gaps_after_first_call_us(r.trace(), "flash"))) for r in f.recs(BIG)
    ]
    if f.gpu == "h200":
        claim(flash_ok.count(False) == 1, "and so do flash's in all but one H200 repeat")
        kept = [cudnn_kept_up(r.trace()) for r in f.recs(BIG)]
        kept += [cudnn_kept_up(r.trace()) for r in f.on("h100").recs(BIG)]
        claim(
            any(kept) and not all(kept),
            "from the third kernel on, cuDNN's kept up in some recordings, not all",
        )
    else:
        claim(all(flash_ok), "and so do flash's in all but one H200 repeat (every H100 repeat)")
