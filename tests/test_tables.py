"""Tables: kernel and op tables (self/total times), comparisons, rendering, names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _builders import NESTED, call, gpu, make, op, step

from tracereader import load
from tracereader._names import shorten_kernel_name
from tracereader._tables import Table, compare, kernel_table, op_table

EAGER = (Path(__file__).resolve().parent.parent / "docs" / "recordings" / "h200"
         / "06_train_step" / "eager" / "r0" / "trace.json.gz")  # fmt: skip


# ------------------------------------------------------------------ names
@pytest.mark.parametrize(
    ("full", "short"),
    [
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
            "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)",
            "vectorized_elementwise_kernel<CUDAFunctor_add<float>>",
        ),
        (
            "void cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_tn_align1>"
            "(cutlass_80_simt_sgemm_64x64_8x5_tn_align1::Params)",
            "cutlass_80_simt_sgemm_64x64_8x5_tn_align1",
        ),
        (
            "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
            "at::native::MeanOps<float, float, float, float>, unsigned int, float, 4, 4> >"
            "(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, "
            "unsigned int, float, 4, 4>)",
            "reduce_kernel<MeanOps<float>>",
        ),
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl("
            "at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::"
            "{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >(int, "
            "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::"
            "{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::"
            "{lambda(float)#1}, std::array<char*, 2ul>)",
            "vectorized_elementwise_kernel<GeluCUDAKernelImpl>",
        ),
        (
            "void (anonymous namespace)::softmax_warp_forward<float, float, float, 9, false, false>"
            "(float*, float const*, int, int, int, bool const*, int, bool)",
            "softmax_warp_forward<float>",
        ),
        (
            "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_"
            "aligna4_alignc4_execute_split_k_kernel__5x_cublas",
            "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32…_split_k",
        ),
        ("triton_per_fused_addmm_gelu_native_layer_norm_0", "triton_per_fused_addmm_gelu_native_layer_norm_0"),
        ("Memcpy DtoH (Device -> Pageable)", "Memcpy DtoH (Device -> Pageable)"),
        ("fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<"
         "cutlass::bfloat16_t, cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)",
         "fmha_cutlassF_bf16_aligned_64x64_rf_sm80"),
        ("void (anonymous namespace)::softmax_warp_forward<float, float, 8>(float*, int)",
         "softmax_warp_forward<float>"),
        ("void cublasLt::splitKreduce_kernel<32, 16, int, float>(cublasLt::Params<float>)",
         "splitKreduce_kernel<float>"),
        ("nvjet_sm90_tst_64x8_64x16_1x4_h_bz_NNT", "nvjet_sm90_tst_64x8_64x16_1x4_h_bz_NNT"),
    ],
)  # fmt: skip
def test_shorten_kernel_name(full, short):
    assert shorten_kernel_name(full) == short
    assert len(shorten_kernel_name(full)) <= 60


def test_shorten_respects_width():
    name = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
    short = shorten_kernel_name(name, width=40)
    assert len(short) == 40 and short.startswith("sm90_xmma_gemm_bf16bf16")
    assert short.endswith("…_segment_k_off")
    assert shorten_kernel_name(name, width=10) == "sm90_xmma…"  # no room for the marker


# ------------------------------------------------------------------ Table
def test_table_renderings():
    long = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int)"
    t = Table(
        ["name", "calls", "total_us", "pct"], [[long, 3, 1234.5678, 50.0], ["b|c", 1, None, 5.25]]
    )
    text = t.to_text().splitlines()
    assert text[0] == "name                                               calls  total_us   pct"
    assert text[2] == "vectorized_elementwise_kernel<FillFunctor<float>>      3  1,234.57  50.0"
    assert text[3] == "b|c" + " " * 52 + "1" + " " * 13 + "5.2"
    md = t.to_markdown().splitlines()
    assert md[1] == "|:---|---:|---:|---:|"
    assert md[3] == "| `b\\|c` | 1 |  | 5.2 |"
    recs = json.loads(t.to_json())
    assert recs[0]["name"] == long and recs[1]["total_us"] is None
    html = t._repr_html_()
    assert 'title="void at::native::vectorized_elementwise_kernel&lt;4' in html
    assert ">vectorized_elementwise_kernel&lt;FillFunctor&lt;float&gt;&gt;</td>" in html


def test_table_disambiguates_names_that_shorten_alike():
    t = Table(["name"], [["void f<1, Foo<float> >(int)"], ["void f<2, Foo<float> >(int)"]])
    assert t.to_text().splitlines()[2:] == ["f<Foo<float>>", "f<Foo<float>> (2)"]


# ------------------------------------------------------------------ kernels
def test_kernel_table():
    t = make(
        [
            step(1, 0, 100),
            call("cudaLaunchKernel", 1, 1, corr=1),
            gpu("k", 10, 2, 1),
            call("cudaLaunchKernel", 2, 1, corr=2),
            gpu("k", 20, 4, 2),
            call("cudaLaunchKernel", 3, 1, corr=3),
            gpu("k", 30, 9, 3),
            call("cudaMemcpyAsync", 4, 1, corr=4),
            gpu("Memcpy HtoD (Pageable -> Device)", 40, 5, 4, cat="gpu_memcpy"),
            call("cudaLaunchKernel", 150, 1, corr=5),
            gpu("late", 160, 80, 5),
        ]
    )
    tab = kernel_table(t)
    assert tab.columns == [
        "name",
        "calls",
        "total_us",
        "mean_us",
        "min_us",
        "median_us",
        "max_us",
        "pct",
    ]
    assert tab.rows[1] == ["k", 3, 15.0, 5.0, 2.0, 4.0, 9.0, 15.0]
    assert [r[0] for r in tab.rows] == ["late", "k", "Memcpy HtoD (Pageable -> Device)"]
    in_step = kernel_table(t, window=(0, 100_000))
    assert [r[0] for r in in_step.rows] == ["k", "Memcpy HtoD (Pageable -> Device)"]
    assert in_step.rows[0][-1] == 75.0
    assert len(kernel_table(t, top=1)) == 1


# ------------------------------------------------------------------ ops
def test_op_table_self_and_total():
    tab = op_table(make(NESTED))
    rows = {r[0]: r[1:] for r in tab.rows}
    # calls, self_cpu, total_cpu, self_gpu, total_gpu, gpu_ops
    assert rows["fwd"] == [1, 60.0, 200.0, 0.0, 57.0, 2]
    assert rows["aten::linear"] == [1, 22.0, 100.0, 0.0, 50.0, 1]
    assert rows["aten::t"] == [1, 8.0, 8.0, 0.0, 0.0, 0]
    assert rows["aten::addmm"] == [1, 60.0, 70.0, 50.0, 50.0, 1]
    assert rows["aten::relu"] == [2, 45.0, 60.0, 16.0, 16.0, 2]
    assert rows["cudaLaunchKernel"] == [3, 25.0, 25.0, 0.0, 0.0, 0]
    assert "model.py(3): forward" not in rows
    assert [r[0] for r in tab.rows[:2]] == ["fwd", "aten::linear"]  # by total GPU


def test_op_table_window_sort_top():
    t = make(NESTED)
    tab = op_table(t, window=(290_000, 400_000))
    assert [r[0] for r in tab.rows] == ["aten::relu", "cudaLaunchKernel"]
    assert tab.rows[0][1] == 1
    top = op_table(t, top=2, sort="self_cpu_us")
    assert [r[0] for r in top.rows] == ["fwd", "aten::addmm"]


def test_op_table_by_input_shape_with_min_and_max():
    """R-E5: one row per (name, Input Dims), with the mean, min and max call."""
    a, b = [[8192, 8192], [8192, 2048]], [[8192, 2048], [2048, 2048]]
    t = make([
        op("aten::mm", 0, 10, ext=1, **{"Input Dims": a}), call("cudaLaunchKernel", 2, 3, corr=1),
        op("aten::mm", 20, 30, ext=2, **{"Input Dims": a}), call("cudaLaunchKernel", 22, 3, corr=2),
        op("aten::mm", 60, 4, ext=3, **{"Input Dims": b}), call("cudaLaunchKernel", 61, 2, corr=3),
        op("aten::relu", 70, 2, ext=4),
        gpu("gemm", 5, 100, corr=1), gpu("gemm", 110, 300, corr=2), gpu("gemm", 420, 7, corr=3),
    ])  # fmt: skip
    tab = op_table(t, by_shape=True, per_call=True)
    assert tab.columns == ["name", "input_dims", "calls", "self_cpu_us", "total_cpu_us",
                           "self_gpu_us", "total_gpu_us", "gpu_ops", "mean_cpu_us",
                           "min_cpu_us", "max_cpu_us"]  # fmt: skip
    rows = {(r[0], r[1]): r[2:] for r in tab.rows}
    assert rows[("aten::mm", "[[8192,8192],[8192,2048]]")] == [
        2,
        34.0,
        40.0,
        400.0,
        400.0,
        2,
        20.0,
        10.0,
        30.0,
    ]
    assert rows[("aten::mm", "[[8192,2048],[2048,2048]]")] == [1, 2.0, 4.0, 7.0, 7.0, 1,
                                                               4.0, 4.0, 4.0]  # fmt: skip
    assert rows[("aten::relu", "")][:2] == [1, 2.0]
    assert tab.rows[0][:2] == ["aten::mm", "[[8192,8192],[8192,2048]]"]  # most GPU time first
    plain = op_table(t)  # the CLI's table: one row per name, no new columns
    assert plain.columns[:3] == ["name", "calls", "self_cpu_us"] and len(plain.columns) == 7
    assert {r[0]: r[1] for r in plain.rows}["aten::mm"] == 3


def test_op_table_by_shape_on_a_record_shapes_trace():
    """The expert's counts: aten::mm [[8192,8192],[8192,2048]] x80, [[8192,2048],[2048,2048]] x64."""
    if not EAGER.exists():
        pytest.skip(f"{EAGER} is not in this checkout")
    t = load(EAGER)
    rows = {(r[0], r[1]): r for r in op_table(t, by_shape=True, per_call=True).rows}
    big = rows[("aten::mm", "[[8192,8192],[8192,2048]]")]
    assert big[2] == 80 and round(big[6], 2) == 26896.52
    assert (round(big[9], 2), round(big[10], 2)) == (18.73, 78.85)
    assert rows[("aten::mm", "[[8192,2048],[2048,2048]]")][2] == 64


# ------------------------------------------------------------------ compare
def _stepped(kernels_per_step, step_us=100):
    evs, corr = [], 0
    for s, names in enumerate(kernels_per_step):
        t0 = s * step_us
        evs.append(step(s + 1, t0, step_us))
        for j, name in enumerate(names):
            corr += 1
            evs.append(call("cudaLaunchKernel", t0 + 1 + j, 0.5, corr=corr))
            evs.append(gpu(name, t0 + 10 + 10 * j, 5, corr))
    return make(evs)


def test_compare():
    eager = _stepped([["mm", "add", "gelu"], ["mm", "add", "gelu"]])
    compiled = _stepped([["mm", "triton_fused"], ["mm", "triton_fused"]], step_us=50)
    c = compare(eager, compiled)
    m = {r[0]: r[1:] for r in c.metrics.rows}
    assert m["steps"] == [2, 2, "x1.00"]
    assert m["kernels per step"] == [3.0, 2.0, "x0.67"]
    assert m["launch calls per step"] == [3.0, 2.0, "x0.67"]
    assert m["CPU time per step (us)"] == [100.0, 50.0, "x0.50"]
    assert m["GPU busy per step (us)"] == [15.0, 10.0, "x0.67"]
    assert c.only_a == ["add", "gelu"] and c.only_b == ["triton_fused"]
    text = c.to_text()
    assert "GPU ops only in eager (gone in compiled): 2" in text
    assert "GPU ops only in compiled (new): 1\n  triton_fused" in text
    data = json.loads(c.to_json())
    assert data["labels"] == ["eager", "compiled"] and data["only_b"] == ["triton_fused"]
    assert "| kernels per step | 3.00 | 2.00 | x0.67 |" in c.to_markdown()


def test_compare_skip_first_leaves_out_the_warm_up_step():
    cold = _stepped([["mm", "add", "gelu", "init"], ["mm", "add"], ["mm", "add"]])
    warm = _stepped([["mm", "init"], ["mm"], ["mm"]])
    every = {r[0]: r[1:] for r in compare(cold, warm).metrics.rows}
    assert every["steps"] == [3, 3, "x1.00"]
    assert every["kernels per step"] == [pytest.approx(8 / 3), pytest.approx(4 / 3), "x0.50"]
    c = compare(cold, warm, skip_first=True)
    m = {r[0]: r[1:] for r in c.metrics.rows}
    assert m["steps"] == [2, 2, "x1.00"] and m["kernels per step"] == [2.0, 1.0, "x0.50"]
    assert c.only_a == ["add"] and c.only_b == [] and "first step left out" in c.metrics.title
    one = _stepped([["mm", "init"]])  # one step: nothing to leave out, for either trace
    m = {r[0]: r[1:] for r in compare(cold, one, skip_first=True).metrics.rows}
    assert m["steps"] == [3, 1, "x0.33"]


def test_compare_without_steps_uses_whole_trace():
    a = make([call("cudaLaunchKernel", 0, 1, corr=1), gpu("k", 5, 5, 1)])
    c = compare(a, a, labels=("x", "y"))
    m = {r[0]: r[1:] for r in c.metrics.rows}
    assert m["steps"] == [0, 0, ""] and m["kernels per step"] == [1.0, 1.0, "x1.00"]
    assert c.metrics.columns == ["metric", "x", "y", "change"]
