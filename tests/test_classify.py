"""Kernel classes from names, checked over every kernel name the tests ship."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracereader import load
from tracereader._classify import KERNEL_CLASSES, class_table, kernel_class
from tracereader._link import link

ROOT = Path(__file__).resolve().parent.parent
REC = ROOT / "docs" / "recordings" / "h200"
TRACES = sorted((ROOT / "tests" / "data").rglob("*.json.gz")) + [
    REC / v / "r0" / "trace.json.gz"
    for v in (
        "05_llm_decode/loop_untuned_8b",
        "05_llm_decode/loop_tuned_8b",
        "06_train_step/eager",
        "06_train_step/compile",
        "04_attention/sdpa_cudnn",
        "03_mlp/liger",
    )  # fmt: skip
]


def _names(path: Path) -> dict[str, int]:
    t = load(path)
    ops = link(t).gpu_ops
    return {t.names[int(i)]: int(k) for i, k in zip(t.name_id[ops], t.kind[ops], strict=True)}


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        # R-E10: the fused ops after a Triton prefix are not what the kernel does
        (
            "triton_poi_fused__to_copy_add_arange_bmm_cat_cos_index_copy_mul_neg_sin_3",
            "elementwise",
        ),
        ("triton_red_fused__to_copy_add_embedding_mean_mul_pow_rsqrt_0", "reduction"),
        ("triton_poi_fused_clone_squeeze_sum_transpose_view_4", "elementwise"),
        ("triton_per_fused_flex_attention_backward_transpose_view_3", "reduction"),
        ("triton_poi_fused__scaled_dot_product_cudnn_attention_add_arange_5", "elementwise"),
        # a reduction that names a matmul is that matmul (decode's GEMV)
        ("triton_red_fused_mm_t_view_9", "GEMM"),
        ("triton_red_fused__unsafe_view_argmax_mm_select_21", "GEMM"),
        ("triton_tem_fused_addmm_0", "GEMM"),
        ("triton_tem_fused_flex_attention_backward_transpose_view_4", "attention"),
        (
            "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::"
            "(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::"
            "UnaryOpFunctor<long, 2, 1, 1>, at::native::Copy<long, long> >",
            "elementwise",
        ),
        (
            "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::"
            "(anonymous namespace)::FusedOptimizerTensorListMetadata<4>, at::native::"
            "(anonymous namespace)::FusedAdamMathFunctor<float, 4>",
            "optimizer",
        ),
        ("Cijk_Ailk_Bjlk_SB_Bias_AS_SAV_UserArgs_MT64x16x16_MI16x16x1", "GEMM"),
        ("volta_scudnn_128x64_relu_interior_nn_v1", "GEMM"),
        ("void cudnn::fusion::compute_dot_do_o_specialized<true, 64>(void const*)", "attention"),
        ("void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel<float>", "reduction"),
        ("void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>", "reduction"),
        ("_geglu_tanh_forward_kernel", "elementwise"),
    ],
)
def test_kernel_class_of_real_names(name, cls):
    assert kernel_class(name) == cls


@pytest.mark.parametrize("path", TRACES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_kernel_name_gets_a_consistent_class(path):
    for name, kind in _names(path).items():
        cls = kernel_class(name, kind)
        assert cls in KERNEL_CLASSES
        if name.startswith("triton_poi_"):
            assert cls == "elementwise", name
        elif name.startswith(("triton_red_", "triton_per_")):
            assert cls in ("reduction", "GEMM"), name
        if name.startswith(("ncclKernel", "ncclDevKernel")):
            assert cls == "communication", name
        if name.startswith(("Memcpy ", "Memset ")):
            assert cls == "memcpy/memset", name
        if name.startswith(("nvjet_", "ampere_sgemm", "sm90_xmma_gemm", "sm80_xmma_gemm")):
            assert cls == "GEMM", name


@pytest.mark.parametrize("path", TRACES, ids=lambda p: str(p.relative_to(ROOT)))
def test_little_gpu_time_is_left_unclassified(path):
    t = class_table(load(path))
    other = sum(r[4] for r in t.rows if r[0] == "other")
    assert other < 5.0  # percent of the GPU time


def test_decode_gemm_time_leaves_out_the_pointwise_rope_kernels():
    """Untuned 8B decode: 291 triton_poi_ kernels naming bmm were GEMM (681 ops,
    10,971 us); the GEMM class is now the 390 gemv/GEMM kernels."""
    rows = {
        r[0]: r
        for r in class_table(load(REC / "05_llm_decode/loop_untuned_8b/r0/trace.json.gz")).rows
    }
    assert (rows["GEMM"][1], round(rows["GEMM"][3], 1)) == (390, 10619.3)
    assert "elementwise/Triton" not in rows and rows["elementwise"][1] == 489
