/*
 * precision.c -- what the GEMM precision of the linear layers costs: the
 * peak and efficiency its GEMMs run at, the bytes of a quantized element
 * (values plus block scales), of the saved GEMM inputs, of the weight
 * copies the GEMMs read, and of the casts that make them.
 *
 * Formats (TransformerEngine transformer_engine/common/recipe/__init__.py:
 * DelayedScaling / Float8CurrentScaling, MXFP8BlockScaling,
 * NVFP4BlockScaling; OCP Microscaling Formats (MX) v1.0 spec):
 *   fp8    1 byte per element, one fp32 scale per tensor (negligible)
 *   mxfp8  1 byte per element + one E8M0 scale byte per 32 elements
 *   nvfp4  1/2 byte per element (E2M1) + one E4M3 scale byte per 16
 *          elements (+ one fp32 scale per tensor, negligible)
 * A block-scaled tensor is quantized along the GEMM's reduction dimension,
 * so the transposed use (dgrad of a weight, wgrad of an input) needs its
 * own copy quantized along the other axis ("rowwise" and "columnwise"
 * data in TE's MXFP8Tensor / NVFP4Tensor); per-tensor fp8 on Hopper keeps
 * a transposed copy too (TE Float8Tensor._transpose), because Hopper's fp8
 * GEMMs take only the TN layout.  Every format therefore holds two
 * quantized layouts of a weight.
 */
#include "internal.h"

/** Bytes of an E2M1 (fp4) element. */
#define APS_FP4_BYTES 0.5
/** NVFP4: one E4M3 scale byte per 16-element block (TE NVFP4BlockScaling). */
#define APS_NVFP4_BLOCK 16.0
/** Quantized layouts of a weight the GEMMs read: the forward's and the
 *  transposed one of the input-gradient GEMM (see the header). */
#define APS_WEIGHT_LAYOUTS 2.0
/** NVFP4's two-level scaling needs the tensor's amax (TE NVFP4Quantizer:
 *  with the random Hadamard transform of the default recipe, the post-RHT
 *  amax) before any block is cast, so every NVFP4 cast starts with one
 *  more read of the bf16 tensor: TransformerEngine d0067d0da
 *  transformer_engine/pytorch/csrc/quantizer.cpp NVFP4Quantizer::
 *  quantize_impl (nvte_hadamard_transform_amax, then
 *  nvte_quantize_with_hadamard_transform).  Passes over the bf16 tensor. */
#define APS_NVFP4_AMAX_PASSES 1.0

/* GEMM kernel rates of the block-scaled formats, relative to the per-tensor
 * fp8 GEMM that fp8_gemm_efficiency describes: ratios of TransformerEngine's
 * B300 benchmark times (APS_TE_B300_GEMM_MS_*, internal.h), to three
 * significant digits. */
/** MXFP8 GEMM rate over the per-tensor fp8 GEMM's at the same fp8 peak:
 *  APS_TE_B300_GEMM_MS_FP8 / _MXFP8 = 6.812 / 7.161 (the E8M0 block scales
 *  the MMA loads with its operands). */
#define APS_MXFP8_GEMM_RATE 0.951
/** Most an NVFP4 GEMM runs faster than the per-tensor fp8 GEMM, a ratio
 *  of measured rates: APS_TE_B300_GEMM_MS_FP8 / _NVFP4 = 6.812 / 3.764 =
 *  1.81 on B300, whose dense FP4 peak
 *  is about 3x its fp8 peak (HGX B300: 13-13.5 against 4.5 PFLOPS; the
 *  GB300 preset's 15 against 5), so there the kernel reaches about
 *  1.81 / 3 = 0.60 of the fp8 kernel's fraction of peak.  On B200
 *  (FP4 peak 2x fp8) cuBLAS's 8,192^3 FP4 GEMM, 5,239 TFLOP/s
 *  (deepseek-ai/DeepGEMM pull request 348, MXFP4 via cublasTest), is
 *  1.88x the 2,782 TFLOP/s of GB200's 8,192^3 fp8 GEMM (the cuBLASLt
 *  point scripts/fit-gemm-shape.lua fits): the same cap, not the same
 *  fraction of peak, carries from one part to the other. */
#define APS_NVFP4_GEMM_RATE 1.81

bool aps_prec_quantized(aps_precision p)
{
    return p == APS_PREC_FP8 || p == APS_PREC_MXFP8 || p == APS_PREC_NVFP4;
}

bool aps_prec_block_scaled(aps_precision p)
{
    return p == APS_PREC_MXFP8 || p == APS_PREC_NVFP4;
}

double aps_quantized_bytes(aps_precision p)
{
    switch (p) {
    case APS_PREC_FP8: return APS_FP8_BYTES;
    case APS_PREC_MXFP8: return APS_FP8_BYTES + 1.0 / APS_MXFP8_BLOCK;
    case APS_PREC_NVFP4: return APS_FP4_BYTES + 1.0 / APS_NVFP4_BLOCK;
    default: return APS_ACT_BYTES;
    }
}

double aps_peak_flops(const aps_device *d, aps_precision p)
{
    switch (p) {
    case APS_PREC_FP8:
    case APS_PREC_MXFP8:
        return d->peak_flops_fp8 > 0 ? d->peak_flops_fp8 : d->peak_flops_bf16;
    case APS_PREC_NVFP4:
        return d->peak_flops_fp4 > 0 ? d->peak_flops_fp4 : d->peak_flops_bf16;
    default:
        return d->peak_flops_bf16;
    }
}

double aps_gemm_eta_max(const aps_device *d, aps_precision p)
{
    if (!(aps_prec_quantized(p) && aps_peak_flops(d, p) > d->peak_flops_bf16))
        return d->gemm_efficiency;
    double eta = d->fp8_gemm_efficiency;
    if (p == APS_PREC_MXFP8)
        return eta * APS_MXFP8_GEMM_RATE;
    if (p == APS_PREC_NVFP4 && d->peak_flops_fp8 > 0) {
        /* the FP4 kernel's rate is capped at APS_NVFP4_GEMM_RATE times the
         * fp8 kernel's: a fraction of the FP4 peak where that peak is more
         * than that multiple of the fp8 peak */
        double cap = APS_NVFP4_GEMM_RATE * d->peak_flops_fp8 /
                     aps_peak_flops(d, p);
        return cap < 1.0 ? eta * cap : eta;
    }
    return eta;
}

double aps_gemm_input_bytes(const aps_training *t)
{
    return (aps_prec_quantized(t->precision) &&
            aps_profile(t)->transformer_engine)
               ? aps_quantized_bytes(t->precision) : APS_ACT_BYTES;
}

double aps_tp_gather_bytes(const aps_training *t)
{
    return (aps_profile(t)->tp_gather_quantized & APS_PREC_BIT(t->precision))
               ? aps_quantized_bytes(t->precision) : APS_ACT_BYTES;
}

double aps_weight_copy_bytes(const aps_training *t)
{
    if (!aps_prec_quantized(t->precision))
        return 0.0;
    return APS_WEIGHT_LAYOUTS * aps_quantized_bytes(t->precision);
}

void aps_cast_bytes(const aps_training *t, double *unfused, double *fused)
{
    const aps_framework_profile *fw = aps_profile(t);
    aps_precision p = t->precision;
    if (aps_prec_block_scaled(p)) {
        /* one pass reads the bf16 tensor and writes both quantized
         * layouts with their scales (TE quantize with rowwise and
         * columnwise usage); an activation kernel that quantizes its own
         * output writes both itself (TE activation.cpp FULLY_FUSED for
         * MXFP8).  NVFP4 first reads the tensor for its amax, and its
         * activation kernels write bf16 for the quantizer to cast
         * (activation.cpp: UNFUSED for the RHT quantizers of the default
         * recipe), so nothing is fused. */
        double e = aps_quantized_bytes(p);
        *unfused = APS_ACT_BYTES + APS_WEIGHT_LAYOUTS * e;
        *fused = APS_WEIGHT_LAYOUTS * e;
        if (p == APS_PREC_NVFP4) {
            *unfused += APS_NVFP4_AMAX_PASSES * APS_ACT_BYTES;
            *fused = *unfused;
        }
        return;
    }
    *unfused = fw->fp8_cast_bytes;
    *fused = fw->fp8_fused_cast_bytes > 0 ? fw->fp8_fused_cast_bytes
                                          : fw->fp8_cast_bytes;
}

double aps_norm_cast_bytes(const aps_training *t)
{
    double unfused, fused;
    aps_cast_bytes(t, &unfused, &fused);
    /* TransformerEngine fuses the cast into the norm kernel for per-tensor
     * fp8 only; MXFP8 (without NVTE_NORM_FWD_USE_CUDNN) and NVFP4 with the
     * RHT write the norm's bf16 output and quantize it in a separate pass:
     * d0067d0da transformer_engine/pytorch/csrc/extensions/
     * normalization.cpp, the Impl choice (FULLY_FUSED for Float8 and no
     * quantizer, FUSED_NORM_AMAX_FP8 for current scaling, UNFUSED for
     * MXFP8 and for NVFP4 with post-RHT amax) */
    return aps_prec_block_scaled(t->precision) ? unfused : fused;
}
