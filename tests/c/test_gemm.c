/*
 * test_gemm.c -- src/core/gemm.c: seconds of one GEMM by its shape,
 *   t = t0 + 2 M N K / (peak x eta_max x f),
 *   f = tile x wave x K / (K + k0),
 * with the H100 SXM preset's shape terms (presets.c: 132 SMs, 64 x 128
 * tiles, k0 = 288, t0 = 4 us) and eta_max pinned to 0.75 (bf16 peak
 * 989.4e12 FLOP/s), so that refitting the efficiencies does not move the
 * hand calculations.  Then the fitted curve against the published
 * microbenchmarks it was fitted to.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"
#include "../../src/core/internal.h"

#define REL_GEMM 1e-12

static aps_device h100(double eta_max)
{
    aps_device d;
    if (aps_device_preset("h100-sxm-80gb", &d) != APS_OK)
        fail_msg("no h100-sxm-80gb preset");
    d.gemm_efficiency = eta_max;
    d.fp8_gemm_efficiency = eta_max;
    return d;
}

/* The preset's shape terms, as presets.c documents them. */
static void test_gemm_preset_terms(void **state)
{
    (void)state;
    aps_device d = h100(0.75);
    ASSERT_DBL_EXACT((double)d.sm_count, 132.0);
    ASSERT_DBL_EXACT(d.gemm_tile_m, 64.0);
    ASSERT_DBL_EXACT(d.gemm_tile_n, 128.0);
    ASSERT_DBL_EXACT(d.gemm_half_dim, 288.0);
    ASSERT_DBL_EXACT(d.gemm_fixed_seconds, 4e-6);
}

/* Wave quantization.  8,448 x 128 x 4,096: 132 tiles of 64 x 128, one
 * full wave, f = 4096 / 4384; t = 4e-6 + 2 * 8448 * 128 * 4096 /
 * (989.4e12 * 0.75 * 4096 / 4384) = 1.677706918940772e-05 s.  One tile row
 * more, 8,512 (133 tiles): two waves, the second with 1 of 132 SMs busy,
 * f = 133 / 264 * 4096 / 4384; t = 2.9554138378815444e-05 s -- 1.76x the
 * time for 1.008x the work. */
static void test_gemm_wave_quantization(void **state)
{
    (void)state;
    aps_device d = h100(0.75);
    ASSERT_REL(aps_gemm_time(&d, APS_PREC_BF16, 8448, 128, 4096),
               1.677706918940772e-05, REL_GEMM);
    ASSERT_REL(aps_gemm_time(&d, APS_PREC_BF16, 8512, 128, 4096),
               2.9554138378815444e-05, REL_GEMM);
}

/* Skinny: 802,816 x 192 x 768 (the harness's skinny shape).  N = 192 in
 * two 128-wide tiles, 0.75 of them used; 12,544 x 2 = 25,088 tiles in
 * ceil(25,088 / 132) = 191 waves, 25,088 / 25,212; K: 768 / 1,056.
 * f = 0.75 * 25088 / 25212 * 768 / 1056 = 0.542771840249232;
 * t = 4e-6 + 2 * 802816 * 192 * 768 / (989.4e12 * 0.75 * f)
 *   = 5.9183844599151e-04 s.  (The min-dimension form priced it at
 * 192 / (192 + 502) = 0.277 of the maximum.) */
static void test_gemm_skinny(void **state)
{
    (void)state;
    aps_device d = h100(0.75);
    ASSERT_REL(aps_gemm_shape_factor(&d, 802816, 192, 768),
               0.542771840249232, REL_GEMM);
    ASSERT_REL(aps_gemm_time(&d, APS_PREC_BF16, 802816, 192, 768),
               5.9183844599151e-04, 1e-11);
}

/* Small K: 8,192 x 8,192 x 64.  128 x 64 = 8,192 tiles in 63 waves
 * (8,192 / 8,316), K: 64 / 352; f = 0.1791070881979973;
 * t = 4e-6 + 2 * 8192^2 * 64 / (989.4e12 * 0.75 * f) = 6.8631452177077e-05
 * s. */
static void test_gemm_small_k(void **state)
{
    (void)state;
    aps_device d = h100(0.75);
    ASSERT_REL(aps_gemm_shape_factor(&d, 8192, 8192, 64),
               0.1791070881979973, REL_GEMM);
    ASSERT_REL(aps_gemm_time(&d, APS_PREC_BF16, 8192, 8192, 64),
               6.8631452177077e-05, 1e-11);
}

/* Terms off: zero tiles and SMs leave K / (K + k0); no fixed time; an
 * empty GEMM costs nothing (no NaN). */
static void test_gemm_terms_off(void **state)
{
    (void)state;
    aps_device d = h100(0.75);
    d.gemm_tile_m = d.gemm_tile_n = 0.0;
    d.gemm_fixed_seconds = 0.0;
    d.gemm_half_dim = 0.0;
    ASSERT_REL(aps_gemm_time(&d, APS_PREC_BF16, 100, 200, 300),
               2.0 * 100 * 200 * 300 / (989.4e12 * 0.75), REL_GEMM);
    ASSERT_DBL_EXACT(aps_gemm_time(&d, APS_PREC_BF16, 0, 200, 300), 0.0);
}

/* The block-scaled formats' kernel rates (precision.c APS_MXFP8_GEMM_RATE,
 * APS_NVFP4_GEMM_RATE, from TransformerEngine's pre-quantized GEMM
 * benchmark on B300).  Llama-3 70B's MLP down projection, forward: M 8,192
 * tokens, N 8,192, K 28,672, 2 M N K = 3.848290697216e12 FLOPs, shape
 * terms off (f = 1, t0 = 0), gemm_efficiency 0.75, fp8_gemm_efficiency
 * 0.60.  GB300 (bf16 2,500, fp8 5,000, fp4 15,000 TFLOP/s):
 *   bf16   / (2500e12 x 0.75)                    = 2.0524217051818665e-3 s
 *   fp8    / (5000e12 x 0.60)                    = 1.2827635657386668e-3 s
 *   mxfp8  / (5000e12 x 0.60 x 0.951)            = 1.3488575875275149e-3 s
 *   nvfp4  / (15000e12 x 0.60 x 1.81 x 5/15)     = 7.087091523418048e-4 s
 *          (1.81x the fp8 GEMM, not the 3x of the peaks);
 * B200 (fp8 4,500, fp4 9,000): the cap 1.81 x 4.5/9 = 0.905 < 1:
 *   fp8    / (4500e12 x 0.60)                    = 1.4252928508207408e-3 s
 *   nvfp4  / (9000e12 x 0.60 x 0.905)            = 7.874546137131164e-4 s. */
static void test_gemm_block_scaled_rates(void **state)
{
    (void)state;
    const double M = 8192, N = 8192, K = 28672;
    aps_device d;
    if (aps_device_preset("gb300", &d) != APS_OK)
        fail_msg("no gb300 preset");
    d.gemm_tile_m = d.gemm_tile_n = 0.0;
    d.gemm_half_dim = 0.0;
    d.gemm_fixed_seconds = 0.0;
    d.gemm_efficiency = 0.75;
    d.fp8_gemm_efficiency = 0.60;
    /* 2 M N K = 3.8482e12 FLOP; bf16: / (2.5e15 x 0.75); fp8: / (5e15 x
     * 0.60); MXFP8: the fp8 time / 0.951; NVFP4: GB300's FP4 peak is 3x
     * its fp8 one, capped at 1.81x the fp8 rate: the fp8 time / 1.81 (TE
     * B300 GEMM benchmark ratios, precision.c); B200-like peaks below:
     * / (4.5e15 x 0.60), and NVFP4 at a 2x FP4 peak is capped at 1.81x too */
    ASSERT_REL(aps_gemm_time(&d, APS_PREC_BF16, M, N, K),
               2.0524217051818665e-3, REL_GEMM);
    ASSERT_REL(aps_gemm_time(&d, APS_PREC_FP8, M, N, K),
               1.2827635657386668e-3, REL_GEMM);
    ASSERT_REL(aps_gemm_time(&d, APS_PREC_MXFP8, M, N, K),
               1.3488575875275149e-3, REL_GEMM);
    ASSERT_REL(aps_gemm_time(&d, APS_PREC_NVFP4, M, N, K),
               7.087091523418048e-4, REL_GEMM);
    d.peak_flops_fp8 = 4500e12;
    d.peak_flops_fp4 = 9000e12;
    ASSERT_REL(aps_gemm_time(&d, APS_PREC_FP8, M, N, K),
               1.4252928508207408e-3, REL_GEMM);
    ASSERT_REL(aps_gemm_time(&d, APS_PREC_NVFP4, M, N, K),
               7.874546137131164e-4, REL_GEMM);
    /* an FP4 peak under the cap keeps the fp8 fraction of its peak */
    d.peak_flops_fp4 = 1.5 * d.peak_flops_fp8;
    ASSERT_REL(aps_gemm_eta_max(&d, APS_PREC_NVFP4), 0.60, REL_GEMM);
}

/* The benchmark the rates come from, through the GB300 preset's shape
 * terms (B300's 158 SMs, 64 x 128 tiles, k0 288, t0 4 us): the 12 GEMMs
 * of one layer of hidden 4,096 and FFN 16,384 at 15,872 tokens (fprop M K
 * N, dgrad M N K, wgrad K M N of each of QKV 4,096 -> 12,288, attention
 * out 4,096 -> 4,096, MLP up 4,096 -> 16,384, down 16,384 -> 4,096) take
 * 6.812 / 7.161 = 0.951 and 6.812 / 3.764 = 1.81 of the per-tensor fp8
 * time for MXFP8 and NVFP4 (TransformerEngine 1609c890e docs/examples/
 * gemm_profiling/gemm_profiling.rst, pre-quantized): within 1 % (the
 * fixed time is the same for every format). */
static double layer_gemms(const aps_device *d, aps_precision p)
{
    static const double io[4][2] = {
        {4096, 12288}, {4096, 4096}, {4096, 16384}, {16384, 4096}};
    const double M = 15872;
    double t = 0.0;
    for (int i = 0; i < 4; i++) {
        double k = io[i][0], n = io[i][1];
        t += aps_gemm_time(d, p, M, n, k) + aps_gemm_time(d, p, M, k, n) +
             aps_gemm_time(d, p, k, n, M);
    }
    return t;
}

static void test_gemm_block_scaled_benchmark(void **state)
{
    (void)state;
    aps_device d;
    if (aps_device_preset("gb300", &d) != APS_OK)
        fail_msg("no gb300 preset");
    double fp8 = layer_gemms(&d, APS_PREC_FP8);
    ASSERT_REL(fp8 / layer_gemms(&d, APS_PREC_MXFP8),
               APS_TE_B300_GEMM_MS_FP8 / APS_TE_B300_GEMM_MS_MXFP8, 0.01);
    ASSERT_REL(fp8 / layer_gemms(&d, APS_PREC_NVFP4),
               APS_TE_B300_GEMM_MS_FP8 / APS_TE_B300_GEMM_MS_NVFP4, 0.01);
}

/* Published cuBLASLt points (Azure AI-benchmarking-guide, as stored in
 * samuel-bohman/AI-benchmarking-guide 2b25b69 Azure_Results/
 * ND_H100_v5_results.md, fp8, TFLOPS; ND_A100_v4_results.md, fp16),
 * against the preset's shape terms with the harness's large-GEMM
 * efficiency from the same fit (presets.c APS_GEMM_K0, scripts/fit-gemm-
 * shape.lua: H100 fp8 0.684 of
 * 1,978.9 TFLOPS, A100 0.858 of 312).  Every point of >= 2,048 along M and
 * N within 12 % (the fit's residuals: presets.c); the 1,024-sized points
 * are off by up to 26 % and are left out. */
typedef struct { double m, n, k, tflops; } point;

static void check_points(const char *preset, aps_precision p, double eta,
                         const point *pts, size_t n)
{
    aps_device d;
    if (aps_device_preset(preset, &d) != APS_OK)
        fail_msg("no %s preset", preset);
    d.gemm_efficiency = d.fp8_gemm_efficiency = eta;
    for (size_t i = 0; i < n; i++) {
        const point *q = &pts[i];
        double t = aps_gemm_time(&d, p, q->m, q->n, q->k);
        double est = 2.0 * q->m * q->n * q->k / t / 1e12;
        if (fabs(est / q->tflops - 1.0) > 0.12)
            fail_msg("%s %g x %g x %g: %g TFLOPS, measured %g", preset, q->m,
                     q->n, q->k, est, q->tflops);
    }
}

static void test_gemm_published_points(void **state)
{
    (void)state;
    static const point h[] = {
        {2048, 2048, 2048, 1011.3},    {4096, 4096, 4096, 1216.9},
        {8192, 8192, 8192, 1290.1},    {16384, 16384, 16384, 1377.3},
        {32768, 32768, 32768, 1382.2}, {6144, 12288, 12288, 1351.4},
        {802816, 192, 768, 663.8},
    };
    static const point a[] = {
        {2048, 2048, 2048, 221.8},     {4096, 4096, 4096, 228.0},
        {8192, 8192, 8192, 253.7},     {16384, 16384, 16384, 256.5},
        {6144, 12288, 12288, 250.8},   {802816, 192, 768, 157.8},
    };
    check_points("h100-sxm-80gb", APS_PREC_FP8, 0.684, h, sizeof h / sizeof h[0]);
    check_points("a100-sxm4-80gb", APS_PREC_BF16, 0.858, a, sizeof a / sizeof a[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_preset_terms),
        cmocka_unit_test(test_gemm_wave_quantization),
        cmocka_unit_test(test_gemm_skinny),
        cmocka_unit_test(test_gemm_small_k),
        cmocka_unit_test(test_gemm_terms_off),
        cmocka_unit_test(test_gemm_block_scaled_rates),
        cmocka_unit_test(test_gemm_block_scaled_benchmark),
        cmocka_unit_test(test_gemm_published_points),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
