"""Tensor-core classification of real kernel names (as public profiler dumps show them), the
time-share math, and gpu-marked profiles of real fp16 / fp32 matmuls."""

from __future__ import annotations

import pytest

from edgebench.evaluation.tensorcores import (
    classify_kernel,
    is_tensor_core_kernel,
    kernel_summary,
    profile_kernels,
    tensor_core_time_pct,
)

GH = "https://github.com/"

# (kernel name exactly as the source prints it, source). Truncated names ("...") are kept as the
# profiler printed them: the classifier has to work on those too.
TENSOR_CORE_KERNELS = [
    ("volta_fp16_s884cudnn_fp16_256x64_ldg8_relu_f2f_exp_small_nhwc2nchw_tn_v1", GH + "pytorch/pytorch/issues/54324"),
    ("turing_fp16_s1688cudnn_fp16_256x64_sliced1x2_ldg8_relu_f2f_exp_small_nhwc_tn_v1", GH + "pytorch/pytorch/issues/54324"),
    ("turing_fp16_s1688cudnn_fp16_256x128_ldg8_relu_filter1x1_stg8_interior_nchw_nn_v1", GH + "NVIDIA/apex/issues/530"),
    ("volta_fp16_s884cudnn_fp16_256x128_ldg8_relu_f2f_exp_small_nhwc2nchw_tn_v1", GH + "NVIDIA/apex/issues/666"),
    ("cutlass_80_tensorop_f16_s16816gemm_relu_f16_128x128_32x4_tn_align8", GH + "NVIDIA/cutlass/issues/1025"),
    ("ampere_fp16_s16816gemm_fp16_64x64_sliced1x2_ldg8_relu_f2f_stages_64x6_tn", GH + "NVIDIA/cutlass/issues/1025"),
    ("ampere_bf16_s1688gemm_bf16_128x128_ldg8_f2f_stages_32x1_nn", GH + "karpathy/nanochat/pull/105"),
    ("ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_32x3_nn", GH + "karpathy/nanochat/pull/105"),
    ("cutlass_tensorop_h16816gemm_128x128_32x5_nn_align8", GH + "NVIDIA/cutlass/pull/896"),
    ("cutlass_tensorop_f16_s16816gemm_f16_256x128_32x3_nn_align8", GH + "NVIDIA/cutlass/issues/981"),
    ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_1...", GH + "pytorch/xla/pull/6152"),
    ("void cutlass::Kernel2<cutlass_80_tensorop_s16816gemm...", GH + "vllm-project/vllm-omni/pull/553"),
    ("nvjet_hsh_192x192_64x3_2x1_v_bz_coopB_NTN", GH + "NVIDIA/Fuser/issues/3137"),
    ("nvjet_tst_8x64_64x16_4x1_v_bz_TNN", GH + "vllm-project/vllm/pull/23370"),
    ("nvjet_sm90_hss_320x128", GH + "GindaChen/nsys-ai/pull/582"),
    ("sm75_xmma_fprop_implicit_gemm_f16f16_f16f16_f16_nhwckrsc_nhwc_tilesize64x256x64_stage1_warpsize1x4x2_g1_tensor16x8x8_t1r3s3",
     GH + "ultralytics/ultralytics/issues/23047"),
    ("sm80_xmma_fprop_implicit_gemm_f16f16_f16f16_f16_nhwckrsc_nhwc_tilesize64x64x64_stage4_warpsize2x2x1_g1_tensor16x8x16_t1r3s3_aACCESS",
     GH + "ultralytics/ultralytics/issues/23047"),
    # TF32 inside an "FP32" TensorRT engine: a tensor-core kernel although every tensor is float
    ("sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16_stage4_warpsize2x2x1_tensor16x8x8", GH + "NVIDIA/TensorRT/issues/3583"),
    ("sm80_xmma_fprop_implicit_gemm_interleaved_i8i8_i8i32_f32_nchw_vect_c_32kcrs_vect_c_32_nchw_vect_c_32_tilesize192x128x64_stage3_warpsize4x2x1_g1_tensor16x8x32_t1r1s1",
     GH + "NVIDIA/TensorRT/issues/3579"),
]

CUDA_CORE_KERNELS = [
    ("volta_sgemm_64x32_sliced1x4_nn", GH + "pytorch/pytorch/issues/51382"),
    ("void at::native::im2col_kernel<float>(long, float const *, long, long, long, long, long, long, long, long, long, long, long, long, at::native::im2col_kernel<float>*)",
     GH + "pytorch/pytorch/issues/51382"),
    ("maxwell_scudnn_winograd_128x128_ldg1_ldg4_relu_tile418n_nt", GH + "kblomdahl/dream-go/issues/25"),
    ("void cudnn::detail::implicit_convolve_sgemm<float, float, int=128, int=5, int=5, int=3, int=3, int=3, int=1, bool=1, bool=0, bool=0>(int, int, int, float const *, int, float*, cudnn::detail::implicit_convolve_sgemm<float, float, int=128, int=5, int=5, int=3, int=3, int=3, int=1, bool=1, bool=0, bool=0>*, kernel_conv_params, int, float, float, int, float, float, int, int)",
     GH + "kblomdahl/dream-go/issues/25"),
    # cuDNN's SIMT fallback inside a *half precision* run: precision alone proves nothing
    ("volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1", GH + "ryujaehun/pytorch-gpu-benchmark/issues/8"),
    ("void cudnn::detail::wgrad_alg0_engine<float, int=128, int=6, int=8, int=3, int=3, int=5, bool=1, int=512>(int, int, int, float const *, int, cudnn::detail::wgrad_alg0_engine<float, int=128, int=6, int=8, int=3, int=3, int=5, bool=1, int=512>*, float const , kernel_grad_params, int, float, int, int, int, int)",
     GH + "ryujaehun/pytorch-gpu-benchmark/issues/8"),
    ("volta_cgemm_32x64_tn", GH + "pytorch/pytorch/issues/13412"),
    ("void transpose_readWrite_alignment_kernel<float2, float2, int=1, bool=0, int=6, int=4, int=4>(cublasTransposeParams<float2>, float2 const *, float2*, float2 const *)",
     GH + "pytorch/pytorch/issues/13412"),
    ("void fermiCgemm_v3_kernel<bool=1, bool=0, bool=0, bool=0, int=5, int=5, int=3, int=8, int=8>(int, int, int, float2 const *, int, float2 const *, int, float2*, int, int, int, float2 const *, float2 const *, float2, float2, int)",
     GH + "NVIDIA/apex/issues/666"),
    ("cutlass_80_simt_sgemm_256x128_8x4_nn_align1", GH + "NVIDIA/cutlass/issues/3390"),
    ("cutlass_simt_sgemm_128x128_8x2_nn_align1", GH + "NVIDIA/cutlass/issues/941"),
    # XMMA with FFMA: "xmma" in a name is not proof of tensor cores
    ("sm50_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nhwckrsc_nhwc_tilesize64x64x8_stage1_warpsize1x4x1_g1_ffma_aligna4_alignc4",
     GH + "wenet-e2e/wenet/issues/2206"),
    ("void cudnn::ops::genericTranspose_kernel<float, __half, float, true, (cudnnKernelDataType_t)0>(floa…", GH + "pytorch/pytorch/issues/54324"),
    ("cask_cudnn::computeOffsetsKernel", GH + "NVIDIA/apex/issues/530"),
    ("nchwToNhwcKernel", GH + "NVIDIA/apex/issues/530"),
    ("nhwcToNchwKernel", GH + "NVIDIA/apex/issues/530"),
    ("batch_norm_transform_input_kernel", GH + "NVIDIA/apex/issues/530"),
    ("cudnn::gemm::computeOffsetsKernel", GH + "NVIDIA/apex/issues/530"),
    ("void at::native::elementwise_kernel<128, 4, at::nati...", GH + "vllm-project/vllm/pull/23370"),
    ("void deep_gemm::transpose_and_pack_fp32_into_ue8m0<5...", GH + "vllm-project/vllm/pull/23370"),
    ("void gemm_kernel2x2_core<double, bool=0, bool=0, bool=0, bool=0, bool=0>(double*, double const *, double const *, int, int, int, int, int, int, double*, double*, double, double, int)",
     GH + "kokkos/kokkos-kernels/issues/1052"),
    # Triton kernels name no instruction: counted as not-tensor-core (documented lower bound)
    ("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_vie...", GH + "vllm-project/vllm/pull/23370"),
    ("triton_gemm_dot_73", GH + "pytorch/xla/pull/6152"),
]

# Seen by edgebench itself: torchvision resnet50, batch 32, torch 2.11+cu130, cuDNN 9.19, NVIDIA H200
# (torch backend, profile_kernels), precisions fp32 (TF32 off) / tf32 / fp16 / bf16 / amp.
H200 = "edgebench H200 probe, resnet50 b32"
H200_KERNELS = [
    ("sm90_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn", True),
    ("sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn", True),
    ("sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x128x32_warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn", True),
    ("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize64x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", True),
    ("sm80_xmma_fprop_implicit_gemm_indexed_wo_smem_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x32x16_stage1_warpsize4x1x1_g1_tensor16x8x8_aligna4_alignc8_execute_kernel__5x_cudnn", True),
    ("sm90_xmma_fprop_image_first_layer_f16f16_f32_f16_nhwckrsc_nhwc_hmma_k64c4r7s7_stride2x2_tile16x64x64_tensor1688_execute_kernel_kernel__5x_cudnn", True),
    ("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x256_16x4_nn_align4>(cutlass_80_tensorop_s1688gemm_64x256_16x4_nn_align4::Params)", True),
    ("void cutlass::Kernel2<cutlass_80_tensorop_f16_s16816gemm_f16_256x128_64x3_nn_align2>(cutlass_80_tensorop_f16_s16816gemm_f16_256x128_64x3_nn_align2::Params)", True),
    ("void cutlass__5x_cudnn::Kernel<cutlass_tensorop_s1688fprop_optimized_tf32_256x64_16x4_nhwc_align4>(cutlass_tensorop_s1688fprop_optimized_tf32_256x64_16x4_nhwc_align4::Params)", True),
    ("nvjet_sm90_hsh_64x8_64x16_2x4_h_bz_bias_TNT", True),
    ("nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_NNT", True),
    # fp32 with TF32 off: XMMA/cuBLAS FFMA kernels, implicit/precomputed sgemm and FFT convolutions
    ("sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize256x64x8_stage3_warpsize2x2x1_g1_ffma_aligna4_alignc4_execute_kernel__5x_cudnn", False),
    ("sm80_xmma_gemm_cf32cf32_f32f32_cf32_tn_n_tilesize32x64x8_stage3_warpsize2x2x1_ffma_aligna8_alignc8_execute_kernel__5x_cublas", False),
    ("void implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, false, false, true>(int, int, int, float const*, int, float*, float const*, kernel_conv_params, unsigned long long, int, float, float, int, float const*, float const*, bool, bool, int, int)", False),
    ("void precomputed_convolve_sgemm<float, 128, 6, 7, 3, 3, 5, 1, false>(int, int, int, float const*, int, float*, float const*, kernel_conv_params, unsigned long long, int, float, float, int, bool, bool, float const*, float const*, int*)", False),
    ("void fft2d_r2c_16x16<float>(float2*, float const*, int, int, int, int, int, int, int, int)", False),
    ("void cudnn::bn_fw_inf_1C11_kernel_NCHW<float, float, true, 1>(float, float, cudnnTensorStruct, float const*, cudnnTensorStruct, float*, cudnnTensorStruct, float const*, float const*, float const*, float const*, float)", False),
    ("void cudnn::engines_precompiled::nchwToNhwcKernel<__half, __half, float, false, true, (cudnnKernelDataType_t)0>(cudnn::engines_precompiled::nchw2nhwc_params_t<float>, __half const*, __half*)", False),
]

# Constructed names that pin down rule edges (not from a dump).
EDGE_CASES = [
    ("summary_reduce_kernel", False),  # contains "umma", is not UMMA
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", True),  # typed xmma, shape cut off
    ("sm80_xmma_gemm_f32f32_f32f32_f32_nt_n_tilesize128x128x8", False),  # f32-only xmma, marker cut off
    ("sm50_xmma_pooling_coalescedC_NHWC_kMAX_3_False_execute_kernel_trt", False),  # xmma, no math types
    ("nvjet_sss_tf32_128x256_TNT", True),
    ("fmha_cutlassF_f32_aligned_32x128_gmem_sm80", False),
    ("fmha_cutlassF_f16_aligned_64x128_rf_sm80", True),
    ("void cute::SM80_16x8x16_F32F16F16F32_TN gemm", True),
]


@pytest.mark.parametrize(("name", "source"), TENSOR_CORE_KERNELS, ids=[n[:48] for n, _ in TENSOR_CORE_KERNELS])
def test_tensor_core_kernels(name, source):
    assert is_tensor_core_kernel(name), f"{name} ({source}) decided by {classify_kernel(name)[1]}"


@pytest.mark.parametrize(("name", "source"), CUDA_CORE_KERNELS, ids=[n[:48] for n, _ in CUDA_CORE_KERNELS])
def test_cuda_core_kernels(name, source):
    assert not is_tensor_core_kernel(name), f"{name} ({source}) decided by {classify_kernel(name)[1]}"


@pytest.mark.parametrize(("name", "expected"), H200_KERNELS, ids=[n[:48] for n, _ in H200_KERNELS])
def test_kernels_seen_on_h200(name, expected):
    assert is_tensor_core_kernel(name) is expected, f"{name} ({H200}) decided by {classify_kernel(name)[1]}"


@pytest.mark.parametrize(("name", "expected"), EDGE_CASES)
def test_rule_edges(name, expected):
    assert is_tensor_core_kernel(name) is expected, classify_kernel(name)


def test_classify_names_the_deciding_rule():
    assert classify_kernel("sm50_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nhwckrsc_g1_ffma_aligna4") == (False, "simt marker")
    assert classify_kernel("ampere_h16816gemm_256x64_ldg8_stages_32x6_tn") == (True, "mma shape in name")
    assert classify_kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64") == (True, "xmma data types")
    assert classify_kernel("elementwise_kernel") == (False, "no tensor-core marker")


# ---------------------------------------------------------------- time share


def test_time_share_weights_by_device_time():
    kernels = [
        ("ampere_fp16_s16816gemm_fp16_64x64_sliced1x2_ldg8_relu_f2f_stages_64x6_tn", 300.0),
        ("nchwToNhwcKernel", 50.0),
        ("nvjet_hsh_192x192_64x3_2x1_v_bz_coopB_NTN", 100.0),
        ("batch_norm_transform_input_kernel", 50.0),
    ]
    assert tensor_core_time_pct(kernels) == pytest.approx(80.0)
    assert tensor_core_time_pct([("volta_sgemm_64x32_sliced1x4_nn", 10.0)]) == 0.0
    assert tensor_core_time_pct([]) is None
    assert tensor_core_time_pct([("nvjet_tst_8x64_64x16_4x1_v_bz_TNN", 0.0)]) is None


def test_kernel_summary_aggregates_launches_by_name():
    kernels = [("nvjet_tst_8x64_64x16_4x1_v_bz_TNN", 10.0)] * 3 + [("nchwToNhwcKernel", 5.0), ("nhwcToNchwKernel", 5.0)]
    s = kernel_summary(kernels, top=2)
    assert s["tensor_core_time_pct"] == pytest.approx(75.0)
    assert s["kernel_time_us"] == pytest.approx(40.0)
    assert s["distinct_kernels"] == 3 and s["tensor_core_kernels"] == 1
    assert s["top_kernels"][0] == {"name": "nvjet_tst_8x64_64x16_4x1_v_bz_TNN", "time_us": 30.0, "tensor_core": True}
    assert len(s["top_kernels"]) == 2


# ---------------------------------------------------------------- real GPU profiles

try:
    import torch
except ImportError:  # the classifier tests above need no torch
    torch = None
needs_gpu = pytest.mark.skipif(torch is None or not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.mark.gpu
@needs_gpu
class TestProfileOnGpu:
    def test_fp16_matmul_runs_on_tensor_cores(self):
        a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
        b = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
        kernels = profile_kernels(lambda: a @ b, steps=5)
        assert kernels, "no CUDA kernel was recorded"
        pct = tensor_core_time_pct(kernels)
        assert pct is not None and pct > 50.0, kernel_summary(kernels)

    def test_fp32_matmul_without_tf32_stays_off_tensor_cores(self):
        old = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        try:
            a = torch.randn(2048, 2048, device="cuda")
            b = torch.randn(2048, 2048, device="cuda")
            kernels = profile_kernels(lambda: a @ b, steps=5)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = old
        pct = tensor_core_time_pct(kernels)
        assert pct is not None and pct < 5.0, kernel_summary(kernels)

    def test_tf32_matmul_runs_on_tensor_cores(self):
        old = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            a = torch.randn(2048, 2048, device="cuda")
            b = torch.randn(2048, 2048, device="cuda")
            kernels = profile_kernels(lambda: a @ b, steps=5)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = old
        pct = tensor_core_time_pct(kernels)
        assert pct is not None and pct > 50.0, kernel_summary(kernels)
