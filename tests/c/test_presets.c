/*
 * test_presets.c -- src/core/presets.c: the device presets carry their
 * datasheet numbers (dense, per GPU, one direction for links), lookup is
 * case-insensitive, and cluster validation names the bad field.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"

#define MIB (1024.0 * 1024.0)

static aps_device preset(const char *name)
{
    aps_device d;
    memset(&d, 0, sizeof d);
    aps_status st = aps_device_preset(name, &d);
    if (st != APS_OK)
        fail_msg("no preset %s", name);
    return d;
}

/* NVIDIA H100 SXM5 datasheet: BF16 1,979 TFLOPS with sparsity -> 989.4
 * dense; FP8 3,958 sparse -> 1978.9 dense; FP32 67 (66.9); HBM3
 * 3.35 TB/s; NVLink 900 GB/s bidirectional -> 450e9 per direction;
 * DGX H100: one 400 Gb/s NIC per GPU -> 50e9 B/s; nvidia-smi 81559 MiB. */
static void test_preset_h100(void **state)
{
    (void)state;
    aps_device d = preset("h100-sxm-80gb");
    ASSERT_REL(d.memory_bytes, 81559.0 * MIB, REL);
    ASSERT_REL(d.peak_flops_bf16, 989.4e12, REL);
    ASSERT_REL(d.peak_flops_fp8, 1978.9e12, REL);
    ASSERT_REL(d.peak_flops_fp32, 66.9e12, REL);
    ASSERT_REL(d.hbm_bandwidth, 3350e9, REL);
    ASSERT_REL(d.intra_node_bandwidth, 900e9 / 2.0, REL);
    ASSERT_REL(d.inter_node_bandwidth, 400e9 / 8.0, REL);
}

/* A100 datasheet: BF16 312 TFLOPS dense, no FP8, FP32 19.5, HBM2
 * 1,555 GB/s (40GB) / HBM2e 2,039 GB/s (80GB), NVLink 600 GB/s -> 300e9,
 * DGX A100: one 200 Gb/s HDR NIC per GPU -> 25e9 B/s. */
static void test_preset_a100(void **state)
{
    (void)state;
    aps_device d = preset("a100-sxm4-40gb");
    ASSERT_REL(d.memory_bytes, 40960.0 * MIB, REL);
    ASSERT_REL(d.peak_flops_bf16, 312e12, REL);
    ASSERT_REL(d.peak_flops_fp8, 0.0, 0);
    ASSERT_REL(d.peak_flops_fp32, 19.5e12, REL);
    ASSERT_REL(d.hbm_bandwidth, 1555e9, REL);
    ASSERT_REL(d.intra_node_bandwidth, 300e9, REL);
    ASSERT_REL(d.inter_node_bandwidth, 200e9 / 8.0, REL);
    d = preset("a100-sxm4-80gb");
    ASSERT_REL(d.memory_bytes, 81920.0 * MIB, REL);
    ASSERT_REL(d.hbm_bandwidth, 2039e9, REL);
}

/* H200: 141 GB HBM3e at 4.8 TB/s, H100 compute.  B200 (HGX B200): BF16
 * 2.25 PFLOPS dense, FP8 4.5 dense, 180 GB at 8 TB/s, NVLink 5 1.8 TB/s
 * -> 900e9 per direction. */
static void test_preset_h200_b200(void **state)
{
    (void)state;
    aps_device d = preset("h200-sxm-141gb");
    ASSERT_REL(d.memory_bytes, 143771.0 * MIB, REL);
    ASSERT_REL(d.hbm_bandwidth, 4800e9, REL);
    ASSERT_REL(d.peak_flops_bf16, 989.4e12, REL);
    d = preset("b200");
    /* nvidia-smi on a DGX / HGX B200: 183,359 MiB (the datasheet's 180 GB
     * is the marketing figure; the presets hold what the allocator sees) */
    ASSERT_REL(d.memory_bytes, 183359.0 * MIB, REL);
    ASSERT_REL(d.peak_flops_bf16, 2250e12, REL);
    ASSERT_REL(d.peak_flops_fp8, 4500e12, REL);
    ASSERT_REL(d.hbm_bandwidth, 8000e9, REL);
    ASSERT_REL(d.intra_node_bandwidth, 1800e9 / 2.0, REL);
}

/* GB200 / GB300 NVL72 datasheets: per GPU BF16 2.5 PFLOPS dense (5 with
 * sparsity), FP8 5 dense, HBM3e 186 GB / 279 GB usable at 8 TB/s (GB200:
 * nvidia-smi reports 189,471 MiB, which the preset holds); NICs
 * ConnectX-7 400 Gb/s (50e9 B/s) and ConnectX-8 800 Gb/s (100e9 B/s). */
static void test_preset_gb200_gb300(void **state)
{
    (void)state;
    aps_device d = preset("gb200");
    ASSERT_REL(d.memory_bytes, 189471.0 * MIB, REL);
    ASSERT_REL(d.peak_flops_bf16, 2500e12, REL);
    ASSERT_REL(d.peak_flops_fp8, 5000e12, REL);
    ASSERT_REL(d.inter_node_bandwidth, 50e9, REL);
    d = preset("gb300");
    ASSERT_REL(d.memory_bytes, 283136.0 * MIB, REL); /* PyTorch's 276.50 GiB */
    ASSERT_REL(d.peak_flops_bf16, 2500e12, REL);
    ASSERT_REL(d.inter_node_bandwidth, 100e9, REL);
    ASSERT_REL(d.intra_node_bandwidth, 900e9, REL);
}

/* Export variants: the parent's die and HBM, NVLink 400 GB/s both ways.
 * H800: DeepSeek-AI ISCA '25 (arXiv:2505.09343) s.4.1 "reduced from 900
 * GB/s to 400 GB/s", s.4.3 "NVLink provides 200GB/s", "each 400Gbps IB
 * NIC delivers only 50GB/s".  A800: "NVLink 3.0 (200 GB/s)" on 8 x A800
 * SXM 80 GB (arXiv:2604.27085); 81,920 MiB in nvidia-smi. */
static void test_preset_export_variants(void **state)
{
    (void)state;
    aps_device d = preset("h800-sxm-80gb");
    aps_device p = preset("h100-sxm-80gb");
    ASSERT_REL(d.intra_node_bandwidth, 400e9 / 2.0, REL);
    ASSERT_REL(d.inter_node_bandwidth, 400e9 / 8.0, REL);
    ASSERT_DBL_EXACT(d.memory_bytes, p.memory_bytes);
    ASSERT_DBL_EXACT(d.peak_flops_bf16, p.peak_flops_bf16);
    ASSERT_DBL_EXACT(d.peak_flops_fp8, p.peak_flops_fp8);
    ASSERT_DBL_EXACT(d.hbm_bandwidth, p.hbm_bandwidth);
    ASSERT_DBL_EXACT(d.gemm_efficiency, p.gemm_efficiency);
    assert_int_equal(d.sm_count, p.sm_count);
    d = preset("a800-sxm4-80gb");
    p = preset("a100-sxm4-80gb");
    ASSERT_REL(d.intra_node_bandwidth, 400e9 / 2.0, REL);
    ASSERT_REL(d.inter_node_bandwidth, 200e9 / 8.0, REL);
    ASSERT_REL(d.memory_bytes, 81920.0 * MIB, REL);
    ASSERT_DBL_EXACT(d.peak_flops_bf16, p.peak_flops_bf16);
    ASSERT_DBL_EXACT(d.hbm_bandwidth, p.hbm_bandwidth);
    ASSERT_DBL_EXACT(d.gemm_efficiency, p.gemm_efficiency);
    assert_int_equal(d.sm_count, p.sm_count);
}

/* The 500 W H100 of TorchTitan's benchmarks: 96 GiB, 2.4 TB/s, peaks
 * between the 400 W NVL and 700 W SXM5 points, Hopper efficiencies. */
static void test_preset_h100_500w(void **state)
{
    (void)state;
    aps_device d = preset("h100-96gb-500w");
    aps_device sxm = preset("h100-sxm-80gb");
    ASSERT_REL(d.memory_bytes, 96.0 * 1024 * 1024 * 1024, REL);
    ASSERT_REL(d.hbm_bandwidth, 2400e9, REL);
    ASSERT_REL(d.peak_flops_bf16, 886.47e12, 1e-4);
    ASSERT_REL(d.peak_flops_fp8, 1773.3e12, 1e-4);
    assert_true(d.peak_flops_bf16 > 835e12 && d.peak_flops_bf16 < sxm.peak_flops_bf16);
    ASSERT_DBL_EXACT(d.gemm_efficiency, sxm.gemm_efficiency);
    ASSERT_DBL_EXACT(d.attention_efficiency, sxm.attention_efficiency);
    ASSERT_DBL_EXACT(d.unfused_attention_efficiency,
                     sxm.unfused_attention_efficiency);
}

/* Every preset has a name, a cited source and validates as an 8-GPU node;
 * the list ends with NULL. */
static void test_preset_list(void **state)
{
    (void)state;
    size_t n = aps_device_preset_count();
    assert_true(n >= 5);
    for (size_t i = 0; i < n; i++) {
        const char *name = aps_device_preset_name(i);
        const char *src = aps_device_preset_source(i);
        assert_non_null(name);
        assert_non_null(src);
        /* a vendor datasheet, the vendor's white paper table or its
         * documentation (AMD's ROCm blog and GPU specifications, NVIDIA's
         * MIG guide), and a part known only from secondary figures says
         * so in capitals */
        if (!strstr(src, "datasheet") && !strstr(src, "white paper") &&
            !strstr(src, "rocm.blogs.amd.com") &&
            !strstr(src, "docs.nvidia.com"))
            fail_msg("preset %s cites no vendor document: %s", name, src);
        aps_cluster c = {0};
        assert_int_equal(aps_device_preset(name, &c.device), APS_OK);
        assert_string_equal(c.device.name, name);
        c.num_devices = 8;
        c.devices_per_node = 8;
        char err[256] = "";
        if (aps_cluster_validate(&c, err, sizeof err) != APS_OK)
            fail_msg("preset %s does not validate: %s", name, err);
    }
    assert_null(aps_device_preset_name(n));
    assert_null(aps_device_preset_source(n));
}

static void test_preset_lookup(void **state)
{
    (void)state;
    aps_device d;
    assert_int_equal(aps_device_preset("H100-SXM-80GB", &d), APS_OK);
    ASSERT_REL(d.peak_flops_bf16, 989.4e12, REL);
    assert_int_equal(aps_device_preset("h100", &d), APS_EINVAL);
    assert_int_equal(aps_device_preset("", &d), APS_EINVAL);
    assert_int_equal(aps_device_preset(NULL, &d), APS_EINVAL);
    assert_int_equal(aps_device_preset("b200", NULL), APS_EINVAL);
}

static void expect_cluster_einval(const aps_cluster *c, const char *field)
{
    char err[256] = "";
    aps_status st = aps_cluster_validate(c, err, sizeof err);
    if (st != APS_EINVAL)
        fail_msg("expected EINVAL naming %s, got %s", field,
                 aps_status_name(st));
    ASSERT_HAS(err, field);
}

static void test_cluster_validate(void **state)
{
    (void)state;
    aps_cluster c;
    fx_h100(&c, 16);
    c.device.intra_node_bandwidth = 0;
    expect_cluster_einval(&c, "intra_node_bandwidth");
    fx_h100(&c, 16);
    c.device.peak_flops_bf16 = NAN;
    expect_cluster_einval(&c, "peak_flops_bf16");
    fx_h100(&c, 16);
    c.device.collective_efficiency = 1.5;
    expect_cluster_einval(&c, "collective_efficiency");
    fx_h100(&c, 16);
    c.device.gemm_efficiency = 0.0;
    expect_cluster_einval(&c, "gemm_efficiency");
    fx_h100(&c, 16);
    c.device.inter_node_latency = -1e-6;
    expect_cluster_einval(&c, "inter_node_latency");
    /* the GEMM shape terms (gemm.c): negative, NaN, one tile side without
     * the other, a fixed time beyond a kernel's, a negative SM count */
    fx_h100(&c, 16);
    c.device.gemm_half_dim = -1.0;
    expect_cluster_einval(&c, "gemm_half_dim: must be a number in [0, 4096]");
    /* beyond what any GEMM has, a fractional tile (breaker, 2026-12-03: a
     * tile of 1e12 ranked a 1.4e9 s step as feasible) */
    fx_h100(&c, 16);
    c.device.gemm_half_dim = 1e12;
    expect_cluster_einval(&c, "gemm_half_dim: must be a number in [0, 4096]");
    fx_h100(&c, 16);
    c.device.gemm_tile_m = 1e12;
    expect_cluster_einval(&c, "gemm_tile_m: must be a whole number in [0, 1024]");
    fx_h100(&c, 16);
    c.device.gemm_tile_n = 0.5;
    expect_cluster_einval(&c, "gemm_tile_n: must be a whole number in [0, 1024]");
    fx_h100(&c, 16);
    c.device.gemm_tile_m = NAN;
    expect_cluster_einval(&c, "gemm_tile_m");
    fx_h100(&c, 16);
    c.device.gemm_tile_m = 64.0;
    expect_cluster_einval(&c, "gemm_tile_m, gemm_tile_n: both 0");
    fx_h100(&c, 16);
    c.device.gemm_fixed_seconds = 1.0;
    expect_cluster_einval(&c, "gemm_fixed_seconds");
    fx_h100(&c, 16);
    c.device.sm_count = -1;
    expect_cluster_einval(&c, "sm_count");
    /* values in the wrong unit: refused, never inf or NaN seconds */
    fx_h100(&c, 16);
    c.device.peak_flops_bf16 = 1e-310;
    expect_cluster_einval(&c, "peak_flops_bf16: must be in [1e+09");
    fx_h100(&c, 16);
    c.device.hbm_bandwidth = 1e-320;
    expect_cluster_einval(&c, "hbm_bandwidth");
    fx_h100(&c, 16);
    c.device.peak_flops_fp8 = 1.0;
    expect_cluster_einval(&c, "peak_flops_fp8");
    fx_h100(&c, 16);
    c.device.attention_efficiency = 1e-300;
    expect_cluster_einval(&c, "attention_efficiency");
    fx_h100(&c, 16);
    c.device.unfused_attention_efficiency = 1.5;
    expect_cluster_einval(&c, "unfused_attention_efficiency");
    /* a host link of 1e-300 B/s would make activation offload take inf
     * seconds: 0 (no link) or a real bandwidth only */
    fx_h100(&c, 16);
    c.device.host_bandwidth = 1e-300;
    expect_cluster_einval(&c, "host_bandwidth: must be 0 (no host link)");
    fx_h100(&c, 16);
    c.device.host_bandwidth = -1.0;
    expect_cluster_einval(&c, "host_bandwidth");
    fx_h100(&c, 16);
    c.device.host_bandwidth = 0.0;
    char err0[256] = "";
    assert_int_equal(aps_cluster_validate(&c, err0, sizeof err0), APS_OK);
    fx_h100(&c, 16);
    c.num_devices = 12; /* 1.5 nodes of 8 */
    expect_cluster_einval(&c, "num_devices");
    fx_h100(&c, 16);
    c.num_devices = 0;
    expect_cluster_einval(&c, "num_devices");
    fx_h100(&c, 16);
    c.devices_per_node = 0;
    expect_cluster_einval(&c, "devices_per_node");
    /* part of one node is fine: 4 of 8 */
    fx_h100(&c, 4);
    char err[256] = "";
    assert_int_equal(aps_cluster_validate(&c, err, sizeof err), APS_OK);

    /* NVLink domains of GB200 NVL72 (4 GPUs per tray): whole trays only */
    aps_cluster g = {0};
    assert_int_equal(aps_device_preset("gb200", &g.device), APS_OK);
    g.num_devices = 64;
    g.devices_per_node = 4;
    g.nvlink_domain_size = 6; /* 1.5 trays */
    assert_int_equal(aps_cluster_validate(&g, err, sizeof err), APS_EINVAL);
    assert_string_equal(err,
        "cluster.nvlink_domain_size: must be 0 or a multiple of "
        "devices_per_node=4 in [4, 1024] (got 6)");
    g.nvlink_domain_size = 2; /* less than one tray */
    expect_cluster_einval(&g, "cluster.nvlink_domain_size");
    g.nvlink_domain_size = 2048;
    expect_cluster_einval(&g, "(got 2048)");
    g.nvlink_domain_size = -4;
    expect_cluster_einval(&g, "cluster.nvlink_domain_size");
    /* accepted: 0 (one tray), 64, 72, and jobs using part of a domain
     * (64 of 72, 32 with a domain of 64, 96 = one domain and a half) */
    int64_t ok[][2] = {{64, 0}, {64, 64}, {64, 72}, {32, 64}, {96, 64},
                       {144, 72}, {4, 64}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        g.num_devices = ok[i][0];
        g.nvlink_domain_size = ok[i][1];
        if (aps_cluster_validate(&g, err, sizeof err) != APS_OK)
            fail_msg("N=%lld domain=%lld refused: %s", (long long)ok[i][0],
                     (long long)ok[i][1], err);
    }
    /* the host rule still holds: 66 GPUs are not whole trays of 4 */
    g.num_devices = 66;
    g.nvlink_domain_size = 64;
    expect_cluster_einval(&g, "cluster.num_devices");
    assert_int_equal(aps_cluster_validate(NULL, err, sizeof err), APS_EINVAL);
}

/* AMD CDNA 3 white paper, Table 2: MI300X and MI325X BF16 1,307.4 TFLOPS
 * dense, FP8 2,614.9 dense, FP32 vector 163.4, no FP4; HBM3 5.3 TB/s
 * (MI300X) and HBM3E 6.0 TB/s (MI325X); 192 and 256 GiB (ROCm GPU
 * specifications); 7 x16 Infinity Fabric links, 896 GB/s P2P ring
 * aggregate -> 448e9 B/s per direction over 7 links (7 x 16 x 32 Gb/s / 8);
 * PCIe Gen5 x16 host link 63e9; one 400 Gb/s NIC -> 50e9.  Efficiencies:
 * the Hopper values times MI300X / H100 on one harness (Azure AI-
 * benchmarking-guide): fp8 GEMM 8192^3 (1159.23 / 2614.9) / (1290.1 /
 * 1978.9) = 0.68001, so (the joint Hopper fit, test_preset_blackwell_gemm)
 * gemm 0.638 x 0.68001 = 0.43385, fp8 0.689 x
 * 0.68001 = 0.46853; HBM triad (4.09 / 5.3) / (2.97 / 3.35) x 0.80 =
 * 0.69635; RCCL all-reduce bus bandwidth 316.82 / 448 = 0.70719. */
/* Blackwell's GEMM efficiencies: the joint Hopper fit of GEMM and
 * attention, 0.638 (bf16) and 0.689 (fp8) with attention 0.199 (before
 * the stacks priced H100 attention by its kernel, which moved H100's own
 * to 0.639 and 0.604 with attention 0.195 for the stacks without a
 * benchmarked kernel), times the cuBLASLt fp8 8192^3 fraction measured on
 * GB200 over the one on H100 in the same harness, (2848.0 / 5000) /
 * (1290.1 / 1978.9) = 0.5696 / 0.651928 = 0.873716: fp8 0.601990; bf16
 * that times TransformerEngine's B300 benchmark ratio 2 x 6.812 / 13.102
 * = 1.039841, 0.625974 (no longer Hopper's bf16 0.638 scaled).  Attention stays the joint fit's 0.199 (GB300's doubled), the
 * GEMM shape terms but the SM count Hopper's; the SMs: B200 and GB200
 * 148, GB300 158. */
static void test_preset_blackwell_gemm(void **state)
{
    (void)state;
    aps_device h = preset("h100-sxm-80gb");
    ASSERT_REL(h.gemm_efficiency, 0.639, REL);
    ASSERT_REL(h.fp8_gemm_efficiency, 0.604, REL);
    ASSERT_REL(h.attention_efficiency, 0.195, REL);
    const char *names[] = {"b200", "gb200", "gb300", "b300"};
    for (size_t i = 0; i < 4; i++) {
        aps_device b = preset(names[i]);
        ASSERT_REL(b.gemm_efficiency, 0.689 * 0.873716 * 1.039841, 1e-5);
        ASSERT_REL(b.fp8_gemm_efficiency, 0.689 * 0.873716, 1e-5);
        ASSERT_DBL_EXACT(b.gemm_half_dim, h.gemm_half_dim);
        ASSERT_DBL_EXACT(b.gemm_tile_m, h.gemm_tile_m);
        ASSERT_DBL_EXACT(b.gemm_fixed_seconds, h.gemm_fixed_seconds);
        assert_int_equal(b.sm_count, i >= 2 ? 158 : 148);
        ASSERT_REL(b.attention_efficiency, 0.199 * (i >= 2 ? 2.0 : 1.0), REL);
    }
}

static void test_preset_cdna3(void **state)
{
    (void)state;
    aps_device x = preset("mi300x-192gb");
    aps_device y = preset("mi325x-256gb");
    aps_device h = preset("h100-sxm-80gb");
    ASSERT_DBL_EXACT(x.memory_bytes, 192.0 * 1024 * MIB);
    ASSERT_DBL_EXACT(y.memory_bytes, 256.0 * 1024 * MIB);
    ASSERT_REL(x.peak_flops_bf16, 1307.4e12, REL);
    ASSERT_REL(x.peak_flops_fp8, 2614.9e12, REL);
    ASSERT_REL(x.peak_flops_fp32, 163.4e12, REL);
    ASSERT_DBL_EXACT(x.peak_flops_fp4, 0.0);
    ASSERT_REL(x.hbm_bandwidth, 5300e9, REL);
    ASSERT_REL(y.hbm_bandwidth, 6000e9, REL);
    ASSERT_REL(x.intra_node_bandwidth, 7.0 * 16 * 32e9 / 8, REL);
    ASSERT_REL(x.intra_node_bandwidth, 896e9 / 2.0, REL);
    assert_int_equal(x.intra_node_links, 7);
    assert_int_equal(h.intra_node_links, 0);
    ASSERT_REL(x.inter_node_bandwidth, 400e9 / 8.0, REL);
    ASSERT_DBL_EXACT(x.host_bandwidth, 63e9);
    ASSERT_REL(x.gemm_efficiency, 0.43385, 1e-4);
    ASSERT_REL(x.fp8_gemm_efficiency, 0.46853, 1e-4);
    assert_int_equal(x.sm_count, 304);
    assert_int_equal(h.sm_count, 132);
    ASSERT_REL(x.hbm_efficiency, 0.69635, 1e-4);
    ASSERT_REL(x.collective_efficiency, 0.70719, 1e-4);
    ASSERT_DBL_EXACT(x.gemm_half_dim, h.gemm_half_dim);
    ASSERT_REL(x.attention_efficiency, 0.199, REL); /* the joint fit's */
    ASSERT_DBL_EXACT(x.host_seconds_per_kernel, h.host_seconds_per_kernel);
    /* the MI325X differs in its memory only */
    ASSERT_DBL_EXACT(y.peak_flops_bf16, x.peak_flops_bf16);
    ASSERT_DBL_EXACT(y.peak_flops_fp8, x.peak_flops_fp8);
    ASSERT_DBL_EXACT(y.intra_node_bandwidth, x.intra_node_bandwidth);
    assert_int_equal(y.intra_node_links, 7);
    ASSERT_DBL_EXACT(y.gemm_efficiency, x.gemm_efficiency);
    ASSERT_DBL_EXACT(y.collective_efficiency, x.collective_efficiency);
}

/* AMD Instinct MI355X (CDNA 4).  AMD's ROCm blog "Matrix Core Programming
 * on AMD CDNA3 and CDNA4 architecture" (2025-09-30): Matrix FP16 2.5 PF,
 * FP8 5 PF, FP32 157.3 TF, FP4 10 PF, dense; BF16 at the FP16 rate.  ROCm
 * GPU specifications: 288 GiB, 256 CUs.  Secondary: HBM3E 8 TB/s; 7
 * Infinity Fabric links of 153.6 GB/s both ways -> 7 x 153.6 / 2 = 537.6e9
 * B/s per direction.  PCIe Gen5 x16 (AMD's MLPerf system description) ->
 * 63e9; one 400 Gb/s NIC (assumed) -> 50e9.  No NVFP4: peak_flops_fp4 0.
 * Efficiencies: AMD's hipBLASLt FP8 8192^3 3,130.21 TFLOPS of 5,000 over
 * H100's cuBLASLt 1,290.1 of 1,978.9 -> scale 0.960287; bf16 0.638 x
 * 0.960287 = 0.612667, fp8 0.689 x 0.960287 = 0.661642; HBM and RCCL
 * fractions CDNA 3's (0.69635, 0.70719). */
static void test_preset_cdna4(void **state)
{
    (void)state;
    aps_device x = preset("mi355x-288gb");
    aps_device c3 = preset("mi300x-192gb");
    ASSERT_DBL_EXACT(x.memory_bytes, 288.0 * 1024 * MIB);
    ASSERT_DBL_EXACT(x.peak_flops_bf16, 2500e12);
    ASSERT_DBL_EXACT(x.peak_flops_fp8, 5000e12);
    ASSERT_REL(x.peak_flops_fp32, 157.3e12, REL);
    ASSERT_DBL_EXACT(x.peak_flops_fp4, 0.0);
    ASSERT_DBL_EXACT(x.hbm_bandwidth, 8000e9);
    ASSERT_REL(x.intra_node_bandwidth, 537.6e9, REL);
    ASSERT_REL(x.intra_node_bandwidth, 7.0 * 16 * 38.4e9 / 8, REL);
    assert_int_equal(x.intra_node_links, 7);
    ASSERT_REL(x.inter_node_bandwidth, 400e9 / 8.0, REL);
    ASSERT_DBL_EXACT(x.host_bandwidth, 63e9);
    assert_int_equal(x.sm_count, 256);
    ASSERT_REL(x.gemm_efficiency, 0.638 * 0.960287, 1e-5);
    ASSERT_REL(x.fp8_gemm_efficiency, 0.689 * 0.960287, 1e-5);
    /* the fp8 GEMM at 8192^3 as AMD measured it, before the shape factor */
    ASSERT_REL(x.fp8_gemm_efficiency * x.peak_flops_fp8,
               3130.21e12 * 0.689 / (1290.1 / 1978.9), 1e-9);
    ASSERT_DBL_EXACT(x.hbm_efficiency, c3.hbm_efficiency);
    ASSERT_DBL_EXACT(x.collective_efficiency, c3.collective_efficiency);
    ASSERT_DBL_EXACT(x.attention_efficiency, c3.attention_efficiency);
    ASSERT_DBL_EXACT(x.gemm_half_dim, c3.gemm_half_dim);
    ASSERT_DBL_EXACT(x.host_seconds_per_kernel, c3.host_seconds_per_kernel);
    ASSERT_DBL_EXACT(x.nccl_nvls_bytes_per_rank, 0.0);
    /* a fully connected host of 8, as CDNA 3's */
    aps_cluster c = {0};
    c.device = x;
    c.num_devices = 16;
    c.devices_per_node = 8;
    char err[256] = "";
    assert_int_equal(aps_cluster_validate(&c, err, sizeof err), APS_OK);
    c.devices_per_node = 16;
    assert_int_equal(aps_cluster_validate(&c, err, sizeof err), APS_EINVAL);
}

/* NVIDIA H20: GH100, 96GB (NVIDIA MIG user guide).  Secondary: FP16/BF16
 * 148 TFLOPS dense, INT8 296 TOPS (FP8 taken equal, as every Hopper
 * datasheet has them), FP32 44, HBM 4.0 TB/s, NVLink 900 GB/s -> 450e9 per
 * direction, 78 SMs; nvidia-smi 97,871 MiB.  PCIe Gen5 x16 and one 400
 * Gb/s NIC (assumed).  Hopper's fitted efficiencies (assumed), an NVSwitch
 * host (intra_node_links 0). */
static void test_preset_h20(void **state)
{
    (void)state;
    aps_device d = preset("h20-96gb");
    aps_device h = preset("h100-sxm-80gb");
    ASSERT_DBL_EXACT(d.memory_bytes, 97871.0 * MIB);
    ASSERT_DBL_EXACT(d.peak_flops_bf16, 148e12);
    ASSERT_DBL_EXACT(d.peak_flops_fp8, 296e12);
    ASSERT_DBL_EXACT(d.peak_flops_fp32, 44e12);
    ASSERT_DBL_EXACT(d.peak_flops_fp4, 0.0);
    ASSERT_DBL_EXACT(d.hbm_bandwidth, 4000e9);
    ASSERT_DBL_EXACT(d.intra_node_bandwidth, 900e9 / 2.0);
    assert_int_equal(d.intra_node_links, 0);
    ASSERT_REL(d.inter_node_bandwidth, 400e9 / 8.0, REL);
    ASSERT_DBL_EXACT(d.host_bandwidth, 63e9);
    assert_int_equal(d.sm_count, 78);
    ASSERT_DBL_EXACT(d.gemm_efficiency, h.gemm_efficiency);
    ASSERT_DBL_EXACT(d.fp8_gemm_efficiency, h.fp8_gemm_efficiency);
    ASSERT_DBL_EXACT(d.attention_efficiency, h.attention_efficiency);
    ASSERT_DBL_EXACT(d.unfused_attention_efficiency,
                     h.unfused_attention_efficiency);
    ASSERT_DBL_EXACT(d.hbm_efficiency, h.hbm_efficiency);
    ASSERT_DBL_EXACT(d.collective_efficiency, h.collective_efficiency);
    ASSERT_DBL_EXACT(d.nccl_nvls_bytes_per_rank, h.nccl_nvls_bytes_per_rank);
    /* the secondary sources are named as such */
    for (size_t i = 0; i < aps_device_preset_count(); i++)
        if (strcmp(aps_device_preset_name(i), "h20-96gb") == 0)
            ASSERT_HAS(aps_device_preset_source(i), "SECONDARY");
}

/* A fully connected host links every GPU to every other one: 7 links
 * connect at most 8 GPUs, and the mesh ends at the host. */
static void test_cluster_validate_mesh(void **state)
{
    (void)state;
    aps_cluster c = {0};
    c.device = preset("mi300x-192gb");
    c.num_devices = 16;
    c.devices_per_node = 8;
    char err[256] = "";
    assert_int_equal(aps_cluster_validate(&c, err, sizeof err), APS_OK);
    c.devices_per_node = 4; /* part of a host's mesh */
    assert_int_equal(aps_cluster_validate(&c, err, sizeof err), APS_OK);
    c.devices_per_node = 16;
    assert_int_equal(aps_cluster_validate(&c, err, sizeof err), APS_EINVAL);
    assert_string_equal(err, "cluster.device.intra_node_links: 7 links per "
                             "GPU cannot fully connect devices_per_node=16 "
                             "GPUs");
    c.devices_per_node = 8;
    c.nvlink_domain_size = 16;
    expect_cluster_einval(&c, "cluster.nvlink_domain_size: a fully "
                              "connected host");
    c.nvlink_domain_size = 8;
    assert_int_equal(aps_cluster_validate(&c, err, sizeof err), APS_OK);
    c.device.intra_node_links = -1;
    expect_cluster_einval(&c, "cluster.device.intra_node_links: must be 0");
    c.device.intra_node_links = 1024;
    expect_cluster_einval(&c, "(got 1024)");
}

/* Blackwell: dense FP4 9 (B200), 10 (GB200), 15 (GB300) PFLOPS; host
 * links PCIe Gen5 x16 (63 GB/s) on HGX B200, NVLink-C2C 900 GB/s per
 * Grace and two GPUs (225 GB/s per GPU and direction) on GB200 / GB300;
 * GB300's attention at twice the SFU exponential rate of GB200 (10.7 vs
 * 5 tera-exponentials/s). */
static void test_preset_blackwell(void **state)
{
    (void)state;
    aps_device b200, gb200, gb300, h100;
    assert_int_equal(aps_device_preset("b200", &b200), APS_OK);
    assert_int_equal(aps_device_preset("gb200", &gb200), APS_OK);
    assert_int_equal(aps_device_preset("gb300", &gb300), APS_OK);
    assert_int_equal(aps_device_preset("h100-sxm-80gb", &h100), APS_OK);
    ASSERT_DBL_EXACT(b200.peak_flops_fp4, 9000e12);
    ASSERT_DBL_EXACT(gb200.peak_flops_fp4, 10000e12);
    ASSERT_DBL_EXACT(gb300.peak_flops_fp4, 15000e12);
    ASSERT_DBL_EXACT(h100.peak_flops_fp4, 0.0);
    ASSERT_DBL_EXACT(b200.host_bandwidth, 63e9);
    ASSERT_DBL_EXACT(gb200.host_bandwidth, 225e9);
    ASSERT_REL(gb300.attention_efficiency, 2.0 * gb200.attention_efficiency,
               REL);
    ASSERT_DBL_EXACT(gb300.gemm_efficiency, gb200.gemm_efficiency);
}

/* HGX B300 (per GPU = the 8-GPU board's figures / 8): FP4 105 PFLOPS
 * dense -> 13.125, FP8 72 and BF16 36 PFLOPS sparse -> 4.5 and 2.25
 * dense, FP32 600 TFLOPS -> 75; GB300's 279 GB, SMs and attention; an x86
 * host's PCIe Gen5 link and a ConnectX-8 (100 GB/s). */
static void test_preset_b300(void **state)
{
    (void)state;
    aps_device b300 = preset("b300"), gb300 = preset("gb300");
    ASSERT_DBL_EXACT(b300.peak_flops_fp4, 105e15 / 8);
    ASSERT_DBL_EXACT(b300.peak_flops_fp8, 72e15 / 8 / 2);
    ASSERT_DBL_EXACT(b300.peak_flops_bf16, 36e15 / 8 / 2);
    ASSERT_DBL_EXACT(b300.peak_flops_fp32, 600e12 / 8);
    ASSERT_DBL_EXACT(b300.memory_bytes, gb300.memory_bytes);
    /* PyTorch's 276.50 GiB total capacity of a GB300 (Megatron-Bridge
     * issue 2221), not the datasheet's 279 GB (259.8 GiB) */
    ASSERT_DBL_EXACT(gb300.memory_bytes, 276.5 * 1024 * 1024 * 1024);
    ASSERT_DBL_EXACT(b300.attention_efficiency, gb300.attention_efficiency);
    ASSERT_DBL_EXACT(b300.host_bandwidth, 63e9);
    ASSERT_DBL_EXACT(b300.inter_node_bandwidth, 100e9);
    assert_int_equal(b300.sm_count, 158);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preset_h100),
        cmocka_unit_test(test_preset_a100),
        cmocka_unit_test(test_preset_h200_b200),
        cmocka_unit_test(test_preset_gb200_gb300),
        cmocka_unit_test(test_preset_b300),
        cmocka_unit_test(test_preset_h100_500w),
        cmocka_unit_test(test_preset_export_variants),
        cmocka_unit_test(test_preset_list),
        cmocka_unit_test(test_preset_lookup),
        cmocka_unit_test(test_cluster_validate),
        cmocka_unit_test(test_preset_blackwell),
        cmocka_unit_test(test_preset_blackwell_gemm),
        cmocka_unit_test(test_preset_cdna3),
        cmocka_unit_test(test_cluster_validate_mesh),
        cmocka_unit_test(test_preset_cdna4),
        cmocka_unit_test(test_preset_h20),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
