/*
 * presets.c -- accelerator presets with cited specifications, and the
 * validation of cluster_config.
 *
 * Datasheet numbers are dense (no 2:4 sparsity).  Link bandwidths are per
 * GPU, one direction: NVLink total bidirectional / 2 (AMD Infinity Fabric:
 * all of a GPU's links together, / 2); the network is one NIC per GPU
 * (DGX/HGX reference design).  memory_bytes is the capacity
 * nvidia-smi reports as total, which the allocator can address.
 *
 * The efficiency fields are the calibratable parameters of MODELING.md s.4
 * (see docs/modeling.md "Efficiency parameters"); their defaults are
 * assumptions, stated here and fitted by `apsearch calibrate`.
 */
#include <strings.h>
#include <math.h>
#include "internal.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB (1024.0 * 1024.0)
#define GB 1e9
#define TFLOPS 1e12
#define US 1e-6

/** Largest NVLink domain accepted, GPUs: above the 576 GPUs the NVLink
 *  Switch System connects into one domain (NVIDIA GB200 NVL72 datasheet,
 *  2024: "up to 576 GPUs" per NVLink domain), rounded up to the power of
 *  two that also bounds devices_per_node. */
#define APS_MAX_NVLINK_DOMAIN 1024

/** Alpha of one ring step inside a node over NVLink (NCCL small-message
 *  latency, NCCL tests on DGX H100 report a few microseconds). Assumed. */
#define APS_NVLINK_LATENCY (3.0 * US)
/** Host link per GPU, one direction: PCIe Gen5 x16 is 32 GT/s x 16 lanes
 *  with 128b/130b coding, 63 GB/s (PCI-SIG PCIe 5.0 base specification),
 *  for the x86 HGX hosts (H100, H200, B200, B300: its GPU's Gen6 link runs
 *  at the Gen5 of the host's Xeon 6; A100: PCIe Gen4, half). */
#define APS_PCIE_GEN5_X16 (63.0 * GB)
#define APS_PCIE_GEN4_X16 (31.5 * GB)
/** NVLink-C2C between a Grace CPU and its two Blackwell GPUs: 900 GB/s
 *  both directions per superchip (NVIDIA GB200 NVL72 datasheet), taken
 *  as shared by the two GPUs: 225 GB/s per GPU and direction. */
#define APS_NVLINK_C2C_PER_GPU (225.0 * GB)
/** Alpha of one ring step across nodes over InfiniBand. Assumed. */
#define APS_IB_LATENCY (8.0 * US)
/** CUDA context plus cuBLAS/NCCL kernels resident outside the caching
 *  allocator (about 0.5-1 GiB on Hopper with PyTorch 2.x). Assumed. */
#define APS_CUDA_CONTEXT (0.75 * GIB)
/** Per NCCL communicator: about 0.5 GB each (Fujii et al. 2024,
 *  arXiv:2411.06465, s.3 memory analysis). */
#define APS_NCCL_COMM (0.5 * GB)
/** NCCL's NVLS buffers per GPU of a communicator's node (NVIDIA/nccl
 *  src/transport/nvls.cc ncclNvlsSetup: nvlsPerRankSize = nChannels * 2 *
 *  buffSize, times nHeads, one head per GPU of the node; NCCL_NVLS_NCHANNELS
 *  16).  NCCL 2.23 on (v2.23.4-1 l.277-279): buffSize = NCCL_NVLS_CHUNKSIZE
 *  128 KiB x NCCL_STEPS 8 = 1 MiB, 16 x 2 x 1 MiB = 32 MiB.  NCCL 2.17-2.20
 *  (v2.19.3-1 l.320-323): buffSize = the SIMPLE protocol's 4 MiB plus
 *  NVLS_MEM_ALIGN_SIZE 2 MiB, 16 x 2 x 6 MiB = 192 MiB
 *  (APS_NCCL_NVLS_PER_RANK_2_17); 2.21-2.22: 16 x 2 x (1 + 2) MiB.  Set up
 *  only where the node's GPUs of the communicator exceed 2 (gpuCount <= 2
 *  returns early) on NVSwitch multicast parts.  The multicast object's
 *  size is rounded up to the driver's recommended granularity
 *  (nvlsGetProperties), not counted: a lower bound. */
#define APS_NCCL_NVLS_PER_RANK (16.0 * 2.0 * 1.0 * MIB)
/*
 * Kernel efficiencies.  Fitted, per architecture, to the 71 published runs
 * of the validation set (Megatron-LM SC'21, MosaicML llm-foundry, NVIDIA
 * NeMo, TorchTitan) by `apsearch calibrate` (scripts/fit-defaults.sh
 * reproduces it; docs/accuracy.md has the errors before and after):
 * mean |log error| of tokens/s per GPU 0.0596 over the 71 runs (refitted
 * when attention came to be priced by the kernel each stack runs, whose
 * H100 efficiencies come from a kernel benchmark, lua/apsearch/stacks.lua:
 * 0.0595 before; refitted
 * when the pipeline schedule became an event simulation, src/core/
 * schedule.c, and again when calibrate tied the efficiencies per family
 * and validate read TorchTitan's 96 GB H100 rows as the 500 W part,
 * lua/apsearch/calibration.lua family, validate.lua variant_of, and when
 * GEMMs were priced by their shape, src/core/gemm.c, with the shape terms
 * held at their microbenchmark values).  H200
 * shares the H100's compute die; Blackwell has no measured run in that set
 * and takes the joint Hopper values (APS_*_JOINT below), its fp8 GEMM
 * efficiency scaled by a cuBLASLt
 * microbenchmark run on GB200 and H100 alike (APS_GEMM_SCALE_BLACKWELL,
 * below), its bf16 one from that by TransformerEngine's B300 GEMM
 * benchmark (APS_BF16_OVER_FP8_GEMM_BLACKWELL; GB300's attention: below).  NVIDIA's Megatron-Bridge performance
 * summaries (25.09-26.08) measure B200, GB200 and GB300 (tests/fixtures/
 * heldout/, docs/accuracy.md "Held out: Megatron-Bridge performance
 * summaries": 9.3 % over 89 dense runs with these values, 12.9 % with
 * Hopper's unscaled); a Blackwell family fit on their earlier releases
 * (scripts/heldout-fit-blackwell.sh) improves the later releases but not
 * other model sizes or the MoE runs, and its values are not physical, so
 * it is not shipped.
 *
 * gemm_efficiency: large-GEMM fraction of the dense peak.  Hopper's
 *   sustained clock under load sits below the boost clock its peak assumes
 *   (A100 0.82, H100 0.64).
 * gemm_half_dim, gemm_tile_m/n, sm_count, gemm_fixed_seconds: the GEMM
 *   shape terms (src/core/gemm.c; APS_GEMM_K0 below).
 * fp8_gemm_efficiency: fp8 GEMMs, fraction of the fp8 peak, before the
 *   same shape factor.
 * attention_efficiency: attention kernels, fraction of the bf16 peak,
 *   where the run's stack names no benchmarked kernel (A100 0.349, H100
 *   0.195: llm-foundry's Triton kernels with ALiBi, TorchTitan before
 *   2025-04, DeepSpeed).  A stack
 *   whose kernel a benchmark measures replaces it (lua/apsearch/
 *   stacks.lua: on H100 TransformerEngine's cuDNN attention 0.527, PyTorch
 *   SDPA's FlashAttention-2 0.326, from Shah et al. 2024, arXiv:
 *   2407.08608, Figures 5 and 6).
 * unfused_attention_efficiency: attention without flash attention (the
 *   QK^T and PV batched GEMMs; the softmax, mask and dropout traffic is
 *   counted apart as HBM bytes), fraction of the bf16 peak.  A100: fitted
 *   on the runs without flash attention (Narayanan et al. SC'21, Megatron-
 *   LM and DeepSpeed, fp16).  No Hopper or Blackwell run without flash
 *   attention is in the public set: there the unfused path is priced at
 *   the family's flash value (APS_ATTN_EFF_HOPPER), the same rule a
 *   calibration without such runs follows (docs/accuracy.md).  A100
 *   0.300, the joint fit's (the 12 SC'21 runs barely separate it from
 *   the flash value: before the GEMM shape terms, anywhere from 0.28 to
 *   0.38 was within 0.001 of the best mean |log error| over them).
 */
#define APS_GEMM_EFF_AMPERE 0.821
#define APS_GEMM_EFF_HOPPER 0.639
/* The joint fit of the GEMM and attention efficiencies on the public runs
 * before attention was priced by each stack's kernel (Hopper GEMM 0.638,
 * fp8 0.689, attention 0.199; mean |log error| 0.0595).  Blackwell,
 * Blackwell Ultra and CDNA 3 scale these: no attention benchmark of those
 * parts separates their attention kernel from the rest of a step, and the
 * values were fitted together (Blackwell with the refitted Hopper values,
 * fp8 0.604 and attention 0.195, is further off on its held-out runs:
 * dense 9.3 -> 11.6 %, MoE 19.3 -> 21.3 %; docs/accuracy.md "Attention by
 * the stack's kernel"). */
#define APS_GEMM_EFF_JOINT 0.638
#define APS_FP8_GEMM_EFF_JOINT 0.689
#define APS_ATTN_EFF_JOINT 0.199
/* GEMM shape terms (src/core/gemm.c), one set for every preset: fitted
 * (least squares of log TFLOPS, a free large-GEMM efficiency per device
 * and harness) to 51 published microbenchmark points of 6 devices and 2
 * libraries -- the cuBLASLt / hipBLASLt harness of Azure's AI-
 * benchmarking-guide (samuel-bohman/AI-benchmarking-guide 2b25b69,
 * Azure_Results/ND_{H100_v5,H200_v5,GB200_v6,MI300X_v5}_results.md fp8,
 * ND_A100_v4_results.md fp16: 1,024^3 to 32,768^3, 1,024 x 2,145 x 1,024,
 * 6,144 x 12,288 x 12,288, 802,816 x 192 x 768) and DeepGEMM's H800 table
 * (deepseek-ai/DeepGEMM 327ec92f README.md, the M = 4,096 dense rows and
 * the contiguous grouped rows; fp8 with fine-grained scaling);
 * scripts/fit-gemm-shape.lua reproduces the fit.  The min-
 * dimension form they replace (a free half-size dimension) fits the same
 * points with 18x the squared log error (docs/accuracy.md "GEMM
 * shapes").
 *   APS_GEMM_TILE_M x APS_GEMM_TILE_N: the effective output tile (tokens x
 *     features); 64 x 128 fits best of 64 x 128, 128 x 64, 128 x 128 and
 *     128 x 256 (128 x 128: 1.6x the error).
 *   APS_GEMM_K0: the pipeline's prologue and epilogue in units of K, 288
 *     (256-320 within 1.1 % of the best error).
 *   APS_GEMM_FIXED_S: 4 us per GEMM kernel (launch to first tile and
 *     drain, back to back on the device); it sets the 1,024^3 points
 *     (7.8 us on H100); 4.5 us: 1.02x the error, 3 us: 1.4x.
 * Residuals of the fit: |log error| <= 0.14 on every point of >= 2,048
 * along M and N; up to 0.33 on the 1,024-sized ones (H200's 1,024 x 2,145
 * x 1,024 runs 39 % faster than the form, H100's 1,024^3 26 % slower).
 * The Blackwell and CDNA 3 scales below stay ratios of the 8,192^3
 * points, where the shape factor is 0.985 (132 SMs), 0.988 (148) and
 * 0.998 (304 CUs): within 1.3 % of each other. */
#define APS_GEMM_TILE_M 64.0
#define APS_GEMM_TILE_N 128.0
#define APS_GEMM_K0 288.0
#define APS_GEMM_FIXED_S 4e-6
/* SMs (NVIDIA) or compute units (AMD) per GPU, the wave width:
 *   A100 108 (NVIDIA A100 Tensor Core GPU Architecture white paper, 2020:
 *     "108 SMs" of the A100); H100 SXM5 132 (NVIDIA H100 Tensor Core GPU
 *     Architecture white paper, 2022: "132 SMs" of the SXM5 part), H200
 *     and the 500 W H100 the same GH100 configuration;
 *   B200 148 (multiProcessorCount as XLA's device spec records it,
 *     tensorflow/tensorflow 0866b7a7 third_party/xla/xla/tools/hlo_opt/
 *     gpu_specs/b200.txtpb core_count); GB200's GPU is a B200: 148,
 *     assumed; GB300's B300 158 (b300.txtpb at 5d7c47ed; the full chip
 *     has 160, NVIDIA "Inside NVIDIA Blackwell Ultra", 2025);
 *   MI300X and MI325X 304 CUs (AMD CDNA 3 white paper, Table 2). */
#define APS_SMS_A100 108
#define APS_SMS_GH100 132
#define APS_SMS_B200 148
#define APS_SMS_B300 158
#define APS_CUS_CDNA3 304
/* MI355X 256 CUs ("256 (32 per XCD)", ROCm GPU specifications,
 * https://rocm.docs.amd.com/en/latest/reference/gpu-specs.html); H20 78
 * SMs, a secondary figure (the Geekbench 6 listing Wccftech reported, as
 * zangshuxian.com quotes it: "H20配备78组SM"): NVIDIA publishes none. */
#define APS_CUS_CDNA4 256
#define APS_SMS_H20 78
#define APS_FP8_GEMM_EFF_HOPPER 0.604
#define APS_ATTN_EFF_AMPERE 0.349
#define APS_ATTN_EFF_HOPPER 0.195
#define APS_UNFUSED_ATTN_EFF_AMPERE 0.300
/** Blackwell Ultra (GB300) doubles the special-function units' exponential
 *  throughput (10.7 vs 5 tera-exponentials/s, NVIDIA "Inside NVIDIA
 *  Blackwell Ultra", 2025): the softmax exponentials that stall the
 *  attention loop between its two GEMMs on Blackwell run at twice the
 *  rate, so the attention kernels of an exp-bound loop reach twice the
 *  fraction of the (unchanged) bf16 peak.  An assumption on the Hopper
 *  value Blackwell takes (no Blackwell run is measured here); GEMMs are
 *  as on GB200. */
#define APS_ATTN_SFU_SPEEDUP_BLACKWELL_ULTRA 2.0
/** Dense tensor peaks of an H100 (132 SMs) held at 500 W, TFLOPS: linear
 *  in TDP between the H100 NVL (400 W) and H100 SXM5 (700 W) datasheet
 *  points; see the h100-96gb-500w preset. */
#define APS_H100_500W_BF16 (835.0 + (989.4 - 835.0) * (500.0 - 400.0) / 300.0)
#define APS_H100_500W_FP8 (1670.5 + (1978.9 - 1670.5) * (500.0 - 400.0) / 300.0)
/** Smallest values a device field may take (see aps_cluster_validate). */
#define APS_MIN_MEMORY MIB
#define APS_MIN_FLOPS 1e9
#define APS_MIN_BANDWIDTH 1e6
#define APS_MIN_EFFICIENCY 1e-3
/** Smallest explicit ssd_scan_rate, state elements per second. */
#define APS_MIN_SSD_SCAN_RATE 1e6
/** Achievable fraction of HBM bandwidth for streaming kernels. Assumed. */
#define APS_HBM_EFF 0.80
/** NCCL bus bandwidth / link bandwidth. Assumed. */
#define APS_COLL_EFF 0.80
/** Host seconds per kernel launched from a framework's Python code on an
 *  x86 host: the median gap between successive kernel launches on the
 *  launching thread, pooled over the three training traces of
 *  facebookresearch/HolisticTraceAnalysis f4d0062c tests/data
 *  (negative_queue_length_values_check/rank0.json.gz, A100, 23 us;
 *  trace_diff/control/control.json.gz, A100, 33 us; ns_resolution_trace/
 *  rank-0...pt.trace.json.gz, V100, 30.25 us): 30 us over 18,152 gaps.
 *  `apsearch calibrate --trace` measures the same on a user's trace. */
#define APS_HOST_KERNEL_X86 30e-6
/** Host seconds per kernel launched from a C++ loop (no Python between
 *  launches): the median duration of the cudaLaunchKernel calls in the
 *  same traces (6 us over 18,158 calls). */
#define APS_HOST_LOOP_KERNEL_X86 6e-6
/** Host seconds per GEMM of TransformerEngine's multi-stream grouped GEMM
 *  (GroupedLinear's per-expert loop, cublaslt_gemm.cu
 *  multi_stream_cublas_gemm): every GEMM creates its cuBLASLt matmul
 *  descriptor, three or four matrix layouts and a preference, queries
 *  cublasLtMatmulAlgoGetHeuristic, launches and destroys them
 *  (cublas_gemm, l.430-760 @ v2.9; the same at d0067d0d), which the bare
 *  launch call (APS_HOST_LOOP_KERNEL_X86) does not include.  Measured:
 *  NVIDIA/TransformerEngine PR #3134 (2026-06-17), SM100,
 *  benchmark_grouped_linear.py --compare-nvfp4-grouped-gemm, 8 experts x
 *  128 tokens, N = K = 2048, the "pure" multi-stream row (operands
 *  pre-swizzled): 0.267 ms for the 8 GEMMs, whose GPU work is a few
 *  microseconds (8 x 2 MiB of NVFP4 weights), so the host's: 33 us a GEMM.
 *  An upper bound: the row times the whole call, its one binding call
 *  included; the PR's single-launch CUTLASS row, the same work in one
 *  call, 0.069 ms, bounds that fixed part, which leaves at least
 *  (0.267 - 0.069) / 8 = 25 us a GEMM.  The PR does not name the host
 *  CPU. */
#define APS_HOST_LOOP_GEMM (0.267e-3 / 8.0)
/** GPU seconds between two kernels of one stream when the second was
 *  launched before the first ended: the median, over such pairs of
 *  successive activities (no copy or memset between them, neither an NCCL
 *  kernel: those wait for their peers), of the second's start less the
 *  first's end, in two public PyTorch profiler traces, measured with an
 *  independent script and by `apsearch calibrate --trace` (trace.lua):
 *    Hopper: AMD-AGI/TraceLens 171dd747 tests/traces/h100/Qwen_Qwen1.5-
 *      0.5B-Chat__1016005.json.gz, one H100 80GB HBM3 (CUDA 12.4):
 *      1.184 us over 838 pairs;
 *    Ampere: facebookresearch/HolisticTraceAnalysis f4d0062c tests/data/
 *      negative_queue_length_values_check/rank0.json.gz, A100-SXM4-80GB:
 *      3 us over 4,222 pairs (the trace's timestamps are whole us).
 *  Profiled: CUPTI's kernel records may lengthen the gap, so these are an
 *  upper bound of an unprofiled run's.  A kernel inside a CUDA graph is
 *  charged the same: the one replay measurement found (ahrefs/ocannl
 *  issue #488, no-op kernels on a laptop sm_120 GPU: 0.58 us a graph
 *  node) made the held-out MoE sets worse when applied (docs/accuracy.md
 *  "The GPU's gap between queued kernels").  Blackwell and AMD take the
 *  Hopper value: no public trace of theirs was found. */
#define APS_GPU_KERNEL_GAP_HOPPER 1.184e-6
#define APS_GPU_KERNEL_GAP_AMPERE 3e-6
/** The shortest a kernel runs on the GPU, seconds: the 1st percentile of
 *  the kernels' durations (the ceil(n / 100)-th shortest, NCCL's left out)
 *  in the same two traces, the tiniest elementwise kernels: H100 1.568 us
 *  of 1,465 kernels (the shortest 1.471 us), A100 3 us of 6,000 (whole
 *  us; the shortest 2).
 *  The MoE router's and preprocess's kernels, on T x E and T x k tensors,
 *  run about this each whatever their bytes (layerprog.c). */
#define APS_GPU_MIN_KERNEL_HOPPER 1.568e-6
#define APS_GPU_MIN_KERNEL_AMPERE 3e-6
/** Largest latency of a link step a device may take: 1 s, a million times
 *  InfiniBand's microseconds. */
#define APS_MAX_LATENCY 1.0
/** Largest host time per kernel a device may take: 10 ms, 300 times the
 *  traces' median and beyond any host (a step-time scale, not a launch). */
#define APS_MAX_HOST_SECONDS 1e-2
/* Grace hosts (GB200 / GB300 compute trays) take the same values.  An
 * isolated torch.nn.Linear forward was measured 2.75x slower on GB200
 * than on an H100 DGX (37.08 against 13.48 us of CPU time; TE's Linear
 * 99.66 us on GB200; NVIDIA/TransformerEngine issue #2053, 2025-08-11),
 * but that was before TE's CPU-overhead work (PR #2146 and later) and
 * without the NUMA binding NVIDIA's recipes use (Megatron-LM docs/
 * discussions/deepseek-v3-gb200-optimization s.2.4, bindpcie).  Applied
 * to the held-out GB200 / GB300 MoE runs of Megatron-Bridge the factor
 * makes them 19-48 % slower than measured (docs/accuracy.md "Host
 * time"), so no Grace factor is shipped; set host_seconds_per_kernel on
 * a device table (or calibrate from a trace) for an untuned Grace host. */

/*
 * AMD Instinct MI300X and MI325X (CDNA 3; AMD CDNA 3 architecture white
 * paper, https://www.amd.com/content/dam/amd/en/documents/instinct-tech-
 * docs/white-papers/amd-cdna-3-white-paper.pdf, Table 2 "AMD Instinct
 * MI300 Series accelerators specifications and features").
 *
 * Host topology: "seven high-bandwidth and low-latency AMD Infinity
 * Fabric links to form a fully connected 8-GPU system" (white paper s.
 * "Communication and scaling"; ROCm docs, MI300 microarchitecture, node-
 * level architecture), "7 x16 AMD Infinity Fabric links", links "at up to
 * 32Gbps" per lane, "P2P RING PEAK AGGREGATE I/O BANDWIDTH 896 GB/s (8
 * GPUs)" (Table 2): 7 x 16 lanes x 32 Gb/s / 8 = 448 GB/s per GPU and
 * direction, 64 GB/s per link.  Unlike an NVSwitch host, where any group
 * of GPUs reaches the whole NVLink bandwidth, each pair of GPUs shares one
 * direct link: a ring or all-to-all over the 8 GPUs drives all 7 links
 * (the 448 GB/s the preset holds, what RCCL's collectives over the host
 * see), a group of m GPUs m - 1 of them, a point-to-point send one
 * (intra_node_links = 7; src/core/comm.c intra_bw).
 */
#define APS_IF_LINKS_CDNA3 7
#define APS_IF_CDNA3 (896.0 / 2.0 * GB)
/* Kernel and collective efficiencies of CDNA 3.  No AMD run is in the
 * validation set.  One harness measured MI300X and H100 alike: Azure's
 * AI-benchmarking-guide results (as stored in samuel-bohman/AI-
 * benchmarking-guide, Azure_Results/ND_MI300X_v5_results.md at 3de0c294
 * and ND_H100_v5_results.md at 26d18e94, ND MI300X v5 and ND H100 v5
 * VMs).  The Hopper values, fitted on the published runs, are scaled by
 * what it measured on MI300X relative to H100:
 *   GEMMs: fp8 8192^3, hipBLASLt 1,159.23 TFLOPS of 2,614.9 (0.443) on
 *     MI300X, cuBLASLt 1,290.1 of 1,978.9 (0.652) on H100: x 0.680 for fp8
 *     and, an assumption (the harness ran fp8 GEMMs only), for bf16 GEMMs.
 *     The half-size dimension stays Hopper's (MI300X's 4,096^3 point is
 *     0.82 of its 8,192^3 one, H100's 0.94: small GEMMs may be priced
 *     faster than an MI300X runs them).
 *   HBM: the harness's triad, 4.09 TB/s of 5.3 (0.772) on MI300X, 2.97 of 3.35
 *     (0.887) on H100: x 0.870.
 *   Collectives: RCCL all-reduce over the 8 GPUs, 8 GB, bus bandwidth
 *     316.82 GB/s of the 448 GB/s per direction: 0.707 (H100 NCCL reaches
 *     479 GB/s with NVLink SHARP, which has no RCCL counterpart).  Taken
 *     for the NICs as well (assumed).
 * Attention takes the Hopper values, an assumption (the harness ran head
 * dimension 64 on MI300X and 128 on H100: no like-for-like figure).  HIP
 * context, RCCL communicator memory, latencies and the x86 host's launch
 * costs take the NVIDIA values, assumed.  `apsearch calibrate` on a few
 * MI300X runs replaces all of these (calibration family "cdna3"). */
#define APS_MI300X_FP8_GEMM_8K (1159.23 / 2614.9)
#define APS_H100_FP8_GEMM_8K (1290.1 / 1978.9)
#define APS_GEMM_SCALE_CDNA3 (APS_MI300X_FP8_GEMM_8K / APS_H100_FP8_GEMM_8K)
/* Blackwell GEMMs.  No Blackwell run is in the fitting set: Blackwell
 * takes Hopper's fitted efficiencies scaled by what one harness measured
 * on both, as CDNA 3 does (Azure AI-benchmarking-guide, samuel-bohman/AI-
 * benchmarking-guide Azure_Results/ND_GB200_v6_results.md at 154d35c0 and
 * ND_H100_v5_results.md at 26d18e94; cuBLASLt, fp8, random inputs, 10,000
 * warm-up iterations): fp8 8192^3 2,848.0 TFLOPS of GB200's 5,000 (0.570)
 * against H100's 1,290.1 of 1,978.9 (0.652): x 0.874.  The other square
 * sizes agree within 5 % (4,096^3 0.561 / 0.615 = 0.912; 16,384^3 0.586 /
 * 0.696 = 0.842; 32,768^3 0.595 / 0.698 = 0.852).  Taken for B200
 * (measured on GB200's 1,200 W part) and for GB300's fp8 and fp4 GEMMs
 * (the same fifth-generation tensor cores; no fp4 figure in the harness):
 * assumptions, each; bf16 GEMMs below. */
#define APS_GB200_FP8_GEMM_8K (2848.0 / 5000.0)
#define APS_GEMM_SCALE_BLACKWELL (APS_GB200_FP8_GEMM_8K / APS_H100_FP8_GEMM_8K)
/* Blackwell's bf16 GEMMs, which that harness did not run: TransformerEngine's
 * B300 GEMM benchmark ran both (APS_TE_B300_GEMM_MS_*, internal.h): bf16
 * 13.102 ms, per-tensor fp8 6.812 ms, on peaks 1 : 2 (HGX B300: 2.25 and
 * 4.5 PFLOPS dense), so a bf16 GEMM reaches 2 x 6.812 / 13.102 = 1.040 of
 * the fp8 GEMM's fraction of its peak.  Blackwell's bf16
 * efficiency is its fp8 one times that, in place of Hopper's fitted
 * bf16 / fp8 ratio (0.638 / 0.689 = 0.926: an fp8 GEMM at 1.08x bf16's
 * fraction, which the fit confounds with its stacks, docs/accuracy.md
 * "Low-precision ratios at the same layout"). */
/** Blackwell bf16 over fp8 dense peak (1 : 2 on every Blackwell preset). */
#define APS_BLACKWELL_FP8_OVER_BF16_PEAK 2.0
#define APS_BF16_OVER_FP8_GEMM_BLACKWELL                                \
    (APS_BLACKWELL_FP8_OVER_BF16_PEAK * APS_TE_B300_GEMM_MS_FP8 /       \
     APS_TE_B300_GEMM_MS_BF16)
#define APS_HBM_SCALE_CDNA3 ((4.09 / 5.3) / (2.97 / 3.35))
#define APS_COLL_EFF_CDNA3 (316.82 * GB / APS_IF_CDNA3)

/*
 * AMD Instinct MI355X (CDNA 4).  Vendor-primary figures (AMD):
 *   Peaks, dense (AMD ROCm blog "Matrix Core Programming on AMD CDNA3 and
 *   CDNA4 architecture", 2025-09-30, https://rocm.blogs.amd.com/software-
 *   tools-optimization/matrix-cores-cdna/README.html, its MI355X table:
 *   "Matrix FP64 78.6 TF, Matrix FP32 157.3 TF, Matrix FP16 2.5 PF,
 *   Matrix FP8 5 PF, Matrix FP6 10 PF, Matrix FP4 10 PF"): dense, as its
 *   MI325X column (1,307.4 TF FP16 = the CDNA 3 white paper's dense
 *   figure) and its formula 2 M N K x matrix cores x clock / cycles show;
 *   BF16 runs at the FP16 rate (its MFMA table: the same instructions and
 *   cycle counts, "both A and B are either FP16 or BF16").  The blog rounds
 *   (its formula with 1,024 matrix cores at 2,400 MHz gives 2,516.6 TF
 *   FP16); the preset holds AMD's stated 2.5 / 5 PF, and the measured GEMM
 *   fraction below is taken against the same figure.  Sparse peaks are
 *   twice these (not used).
 *   Memory: 288 GiB VRAM, 256 CUs (ROCm GPU specifications,
 *   https://rocm.docs.amd.com/en/latest/reference/gpu-specs.html).
 *   Host link: "PCIe Gen 5 x16" (AMD's MLPerf Inference v6.0 system
 *   description, https://github.com/mlcommons/inference_results_v6.0
 *   closed/AMD, 87xMI355X_22xEPYC_9575F).
 * Secondary figures (no AMD page with them could be read here; the AMD
 * CDNA 4 white paper, https://www.amd.com/content/dam/amd/en/documents/
 * instinct-tech-docs/white-papers/amd-cdna-4-architecture-whitepaper.pdf,
 * and the product page https://www.amd.com/en/products/accelerators/
 * instinct/mi350/mi355x.html are what they cite):
 *   HBM3E bandwidth 8 TB/s (launch coverage: hyper.ai, humeconsulting.co,
 *     aiwiki.ai, Boston Ltd's MI355X blog "an aggregate bandwidth of 8
 *     TB/s"; a TraceLens contributor's MI355X arch file "from AMD-
 *     published specs", AMD-AGI/TraceLens a895738e);
 *   host topology: "7 IF links per socket", "up to 8 GPUs in a fully
 *     connected topology via Infinity Fabric" (Hot Chips 2025 talk as
 *     pudn.club reports it); 153.6 GB/s per link both ways
 *     (humeconsulting.co "~153 GB/s of bidirectional bandwidth"; 7 x 153.6
 *     = 1,075 GB/s aggregate): 7 x 153.6 / 2 = 537.6 GB/s per GPU and
 *     direction, 76.8 GB/s per link (x16 at 38.4 Gb/s);
 *   total board power 1,400 W (not used by the model).
 * The NIC: one 400 Gb/s NIC per GPU, assumed as for CDNA 3 (AMD's MLPerf
 * hosts list none per GPU).
 * MI350X (the same die air-cooled at 1,000 W and a lower clock): AMD's
 * tables read here give no MI350X peak (its 2.2 GHz clock and 2.3 PF FP16
 * are secondary), so it has no preset.
 */
#define APS_MI355X_PEAK_FP16 2500.0 /* TFLOPS, dense */
#define APS_MI355X_PEAK_FP8 5000.0  /* TFLOPS, dense */
#define APS_MI355X_PEAK_FP32 157.3  /* TFLOPS, matrix */
#define APS_MI355X_HBM (8000.0 * GB)
#define APS_IF_LINKS_CDNA4 7
#define APS_IF_LINK_CDNA4_BIDIR (153.6 * GB)
#define APS_IF_CDNA4 (APS_IF_LINKS_CDNA4 * APS_IF_LINK_CDNA4_BIDIR / 2.0)
/* Kernel efficiencies of CDNA 4.  No MI355X training run is in the
 * validation set.  The GEMMs: AMD measured hipBLASLt's FP8 GEMM (E4M3FN
 * in, BF16 out, FP32 accumulate; ROCm 7.1.0) on an MI355X at 3,130.21
 * TFLOPS for M = N = K = 8,192 (2,750.42 at 4,096) (AMD ROCm blog "FP8
 * GEMM Optimization on AMD CDNA4 Architecture", 2026-03-10,
 * https://rocm.blogs.amd.com/software-tools-optimization/cdna4-gemm-
 * kernels/README.html, Table 5): 0.626 of the 5 PF peak, against H100's
 * 1,290.1 of 1,978.9 (0.652, cuBLASLt, the Azure harness of the CDNA 3
 * scale above): x 0.960 on the joint Hopper values, as CDNA 3 scales them.
 * Two harnesses, not one as for CDNA 3 (hipblaslt-bench with rotating
 * buffers against Azure's, random inputs and 10,000 warm-up iterations):
 * an assumption.  bf16 GEMMs take the same scale (no MI355X bf16 GEMM
 * figure from AMD was found), attention the joint Hopper value, HBM and
 * collectives CDNA 3's measured fractions (the MI355X has no such
 * measurement here), host and framework costs the NVIDIA values: all
 * assumed.  `apsearch calibrate` on a few MI355X runs replaces them
 * (calibration family "cdna4"). */
#define APS_MI355X_FP8_GEMM_8K (3130.21 / APS_MI355X_PEAK_FP8)
#define APS_GEMM_SCALE_CDNA4 (APS_MI355X_FP8_GEMM_8K / APS_H100_FP8_GEMM_8K)
#define APS_HBM_SCALE_CDNA4 APS_HBM_SCALE_CDNA3
/* RCCL's bus bandwidth over the host as a fraction of the links: CDNA 3's
 * measured 0.707, assumed for CDNA 4. */
#define APS_COLL_EFF_CDNA4 APS_COLL_EFF_CDNA3

/*
 * NVIDIA H20 (Hopper, GH100: "H20 | Hopper | GH100 | 9.0 | 96GB", NVIDIA
 * Multi-Instance GPU user guide, supported GPUs, https://docs.nvidia.com/
 * datacenter/tesla/mig-user-guide/supported-gpus.html).  No NVIDIA
 * datasheet or product page with its peaks could be read here; the figures
 * below are secondary, each named:
 *   FP16/BF16 148 TFLOPS dense, INT8 296 TOPS, FP32 44 TFLOPS, HBM 4.0 TB/s
 *     (zangshuxian.com, "H20的FP16稠密算力为148TFLOPS ... INT8为296 ...
 *     FP32为44TFLOPS ... 内存带宽为4.0TB/s"; willitrunai.com/gpus/h20-96gb
 *     "96 GB HBM3 - 4,000 GB/s bandwidth, 148 TFLOPS FP16 ... / 296 INT8
 *     TOPS, NVLink 4.0 (900 GB/s)"; huggingface.co/hardware/h20 "148");
 *   FP8 296 TFLOPS dense: no source states it; Hopper's FP8 and INT8 dense
 *     rates are equal on every NVIDIA datasheet (H100 SXM5: 1,979 each),
 *     so the INT8 296 is taken, an assumption;
 *   NVLink 900 GB/s both ways (willitrunai.com "NVLink 4.0 (900 GB/s) -
 *     multi-GPU scaling retained"): 450 GB/s per direction; the host an
 *     HGX board of 8 behind NVSwitch as the H100's (intra_node_links 0),
 *     assumed;
 *   78 SMs (APS_SMS_H20).
 * Memory: 97,871 MiB, what nvidia-smi reports for an "NVIDIA H20" (driver
 * 550.144.03, in public repositories' nvidia-smi logs, with a 500 W cap;
 * the secondary pages say 400 W).  Host link PCIe Gen5 x16 and one 400
 * Gb/s NIC per GPU, as the HGX H100: assumed.
 * Efficiencies: no training run or GEMM microbenchmark of an H20 with its
 * peak could be read; it takes Hopper's fitted fractions of peak (the same
 * die, its tensor rate cut by NVIDIA), an assumption: with compute at 15 %
 * of an H100's and more HBM bandwidth, its GEMMs may reach a larger
 * fraction of peak than the H100's.  It is its own calibration family (a
 * Hopper calibration does not reach it).
 */
#define APS_H20_PEAK_BF16 148.0 /* TFLOPS, dense */
#define APS_H20_PEAK_FP8 296.0  /* TFLOPS, dense (= INT8, assumed) */
#define APS_H20_PEAK_FP32 44.0  /* TFLOPS */
#define APS_H20_MEMORY (97871.0 * MIB)
#define APS_H20_HBM (4000.0 * GB)
#define APS_H20_NVLINK (900.0 / 2.0 * GB)

typedef struct {
    aps_device dev;
    const char *source;
} preset;

/* Every preset's GEMM shape terms, its wave width `sms` apart. */
#define GEMM_SHAPE(sms) .gemm_half_dim = APS_GEMM_K0,                    \
    .gemm_tile_m = APS_GEMM_TILE_M, .gemm_tile_n = APS_GEMM_TILE_N,      \
    .sm_count = (sms), .gemm_fixed_seconds = APS_GEMM_FIXED_S
/* Every preset: latencies, framework memory, the host's launch costs. */
#define HOST_FIELDS                                                     \
    .intra_node_latency = APS_NVLINK_LATENCY,                           \
    .inter_node_latency = APS_IB_LATENCY,                               \
    .cuda_context_bytes = APS_CUDA_CONTEXT,                             \
    .nccl_comm_bytes = APS_NCCL_COMM,                                   \
    .host_seconds_per_kernel = APS_HOST_KERNEL_X86,                     \
    .host_seconds_per_loop_kernel = APS_HOST_LOOP_KERNEL_X86,             \
    .host_seconds_per_loop_gemm = APS_HOST_LOOP_GEMM
/* NVIDIA presets: NVSwitch hosts (intra_node_links 0) and NCCL. */
#define COMMON_FIELDS HOST_FIELDS,                                      \
    .hbm_efficiency = APS_HBM_EFF,                                      \
    .collective_efficiency = APS_COLL_EFF
#define AMPERE .gemm_efficiency = APS_GEMM_EFF_AMPERE,                  \
               .fp8_gemm_efficiency = APS_FP8_GEMM_EFF_JOINT,            \
               .attention_efficiency = APS_ATTN_EFF_AMPERE,              \
               .unfused_attention_efficiency = APS_UNFUSED_ATTN_EFF_AMPERE, \
               .gpu_seconds_per_kernel = APS_GPU_KERNEL_GAP_AMPERE, \
               .gpu_min_kernel_seconds = APS_GPU_MIN_KERNEL_AMPERE
/* Hopper defaults. */
#define HOPPER_ON .nccl_nvls_bytes_per_rank = APS_NCCL_NVLS_PER_RANK,    \
               .gemm_efficiency = APS_GEMM_EFF_HOPPER,               \
               .fp8_gemm_efficiency = APS_FP8_GEMM_EFF_HOPPER,          \
               .attention_efficiency = APS_ATTN_EFF_HOPPER,           \
               .unfused_attention_efficiency = APS_ATTN_EFF_HOPPER,   \
               .gpu_seconds_per_kernel = APS_GPU_KERNEL_GAP_HOPPER, \
               .gpu_min_kernel_seconds = APS_GPU_MIN_KERNEL_HOPPER
/* Blackwell: Hopper's fp8 GEMM efficiency scaled by the microbenchmark
 * (APS_GEMM_SCALE_BLACKWELL), bf16's from it by the B300 benchmark
 * (APS_BF16_OVER_FP8_GEMM_BLACKWELL); attention as Hopper's, an
 * assumption; Mamba-2's SSD scan at its measured GB200 rate
 * (APS_SSD_SCAN_RATE_BLACKWELL). */
#define BLACKWELL .nccl_nvls_bytes_per_rank = APS_NCCL_NVLS_PER_RANK,    \
               .gemm_efficiency =                                    \
                   APS_FP8_GEMM_EFF_JOINT * APS_GEMM_SCALE_BLACKWELL * \
                   APS_BF16_OVER_FP8_GEMM_BLACKWELL,                   \
               .fp8_gemm_efficiency =                                 \
                   APS_FP8_GEMM_EFF_JOINT * APS_GEMM_SCALE_BLACKWELL,  \
               .attention_efficiency = APS_ATTN_EFF_JOINT,            \
               .unfused_attention_efficiency = APS_ATTN_EFF_JOINT,    \
               .gpu_seconds_per_kernel = APS_GPU_KERNEL_GAP_HOPPER, \
               .gpu_min_kernel_seconds = APS_GPU_MIN_KERNEL_HOPPER,   \
               .ssd_scan_rate = APS_SSD_SCAN_RATE_BLACKWELL
/* Blackwell Ultra: the exponentials run in the fused attention loop only;
 * unfused attention's batched GEMMs are priced as on Blackwell. */
#define BLACKWELL_ULTRA .nccl_nvls_bytes_per_rank = APS_NCCL_NVLS_PER_RANK, \
               .gemm_efficiency =                              \
                   APS_FP8_GEMM_EFF_JOINT * APS_GEMM_SCALE_BLACKWELL * \
                   APS_BF16_OVER_FP8_GEMM_BLACKWELL,                   \
               .fp8_gemm_efficiency =                                 \
                   APS_FP8_GEMM_EFF_JOINT * APS_GEMM_SCALE_BLACKWELL,  \
               .attention_efficiency =                                \
                   APS_ATTN_EFF_JOINT * APS_ATTN_SFU_SPEEDUP_BLACKWELL_ULTRA, \
               .unfused_attention_efficiency = APS_ATTN_EFF_JOINT,    \
               .gpu_seconds_per_kernel = APS_GPU_KERNEL_GAP_HOPPER, \
               .gpu_min_kernel_seconds = APS_GPU_MIN_KERNEL_HOPPER,   \
               .ssd_scan_rate = APS_SSD_SCAN_RATE_BLACKWELL
/* AMD CDNA 3 (MI300X, MI325X: one compute die), RCCL, x86 host. */
#define CDNA3 HOST_FIELDS,                                              \
               .intra_node_links = APS_IF_LINKS_CDNA3,                 \
               .gemm_efficiency = APS_GEMM_EFF_JOINT * APS_GEMM_SCALE_CDNA3, \
               .fp8_gemm_efficiency = APS_FP8_GEMM_EFF_JOINT * APS_GEMM_SCALE_CDNA3, \
               .attention_efficiency = APS_ATTN_EFF_JOINT,            \
               .unfused_attention_efficiency = APS_ATTN_EFF_JOINT,    \
               .hbm_efficiency = APS_HBM_EFF * APS_HBM_SCALE_CDNA3,   \
               .collective_efficiency = APS_COLL_EFF_CDNA3,           \
               .gpu_seconds_per_kernel = APS_GPU_KERNEL_GAP_HOPPER, \
               .gpu_min_kernel_seconds = APS_GPU_MIN_KERNEL_HOPPER
/* AMD CDNA 4 (MI355X): the CDNA 3 rule with the MI355X's GEMM scale. */
#define CDNA4 HOST_FIELDS,                                              \
               .intra_node_links = APS_IF_LINKS_CDNA4,                 \
               .gemm_efficiency = APS_GEMM_EFF_JOINT * APS_GEMM_SCALE_CDNA4, \
               .fp8_gemm_efficiency = APS_FP8_GEMM_EFF_JOINT * APS_GEMM_SCALE_CDNA4, \
               .attention_efficiency = APS_ATTN_EFF_JOINT,            \
               .unfused_attention_efficiency = APS_ATTN_EFF_JOINT,    \
               .hbm_efficiency = APS_HBM_EFF * APS_HBM_SCALE_CDNA4,   \
               .collective_efficiency = APS_COLL_EFF_CDNA4,           \
               .gpu_seconds_per_kernel = APS_GPU_KERNEL_GAP_HOPPER, \
               .gpu_min_kernel_seconds = APS_GPU_MIN_KERNEL_HOPPER

/* The compute die and HBM of the A100 SXM4 80GB (NVIDIA A100 datasheet,
 * 2021: BF16 312 TFLOPS dense, FP32 19.5, HBM2e 2,039 GB/s; 108 SMs; its
 * x86 host's PCIe Gen4), which the A800 SXM4 80GB keeps (see "Export
 * variants" below): every field but the NVLink and the NICs. */
#define A100_SXM4_80GB_DIE                                              \
    .memory_bytes = 81920 * MIB,                                        \
    .peak_flops_bf16 = 312 * TFLOPS,                                    \
    .peak_flops_fp8 = 0,                                                \
    .peak_flops_fp32 = 19.5 * TFLOPS,                                   \
    .hbm_bandwidth = 2039 * GB,                                         \
    .host_bandwidth = APS_PCIE_GEN4_X16,                                \
    COMMON_FIELDS, AMPERE, GEMM_SHAPE(APS_SMS_A100)
/* The compute die and HBM of the H100 SXM5 (NVIDIA H100 datasheet: BF16
 * 989 TFLOPS dense, FP8 1,979 dense, FP32 67, HBM3 3.35 TB/s; 132 SMs;
 * 81,559 MiB reported by nvidia-smi; its x86 host's PCIe Gen5), which the
 * H800 SXM5 keeps (see "Export variants" below). */
#define H100_SXM5_DIE                                                   \
    .memory_bytes = 81559 * MIB,                                        \
    .peak_flops_bf16 = 989.4 * TFLOPS,                                  \
    .peak_flops_fp8 = 1978.9 * TFLOPS,                                  \
    .peak_flops_fp32 = 66.9 * TFLOPS,                                   \
    .hbm_bandwidth = 3350 * GB,                                         \
    .host_bandwidth = APS_PCIE_GEN5_X16,                                \
    COMMON_FIELDS, HOPPER_ON, GEMM_SHAPE(APS_SMS_GH100)

static const preset presets[] = {
    {{.name = "a100-sxm4-40gb",
      .memory_bytes = 40960 * MIB,
      .peak_flops_bf16 = 312 * TFLOPS,
      .peak_flops_fp8 = 0,
      .peak_flops_fp32 = 19.5 * TFLOPS,
      .hbm_bandwidth = 1555 * GB,
      .intra_node_bandwidth = 300 * GB,
      .inter_node_bandwidth = 25 * GB,
      .host_bandwidth = APS_PCIE_GEN4_X16,
      COMMON_FIELDS, AMPERE, GEMM_SHAPE(APS_SMS_A100)},
     "NVIDIA A100 Tensor Core GPU datasheet (2021): BF16 312 TFLOPS dense, "
     "FP32 19.5 TFLOPS, HBM2 1,555 GB/s, NVLink 600 GB/s; DGX A100: one "
     "200 Gb/s HDR NIC per GPU"},
    {{.name = "a100-sxm4-80gb", A100_SXM4_80GB_DIE,
      .intra_node_bandwidth = 300 * GB,
      .inter_node_bandwidth = 25 * GB},
     "NVIDIA A100 Tensor Core GPU datasheet (2021): BF16 312 TFLOPS dense, "
     "FP32 19.5 TFLOPS, HBM2e 2,039 GB/s, NVLink 600 GB/s; DGX A100: one "
     "200 Gb/s HDR NIC per GPU"},
    {{.name = "h100-sxm-80gb", H100_SXM5_DIE,
      .intra_node_bandwidth = 450 * GB,
      .inter_node_bandwidth = 50 * GB},
     "NVIDIA H100 Tensor Core GPU datasheet (SXM5): BF16 989 TFLOPS dense, "
     "FP8 1,979 TFLOPS dense, FP32 67 TFLOPS, HBM3 3.35 TB/s, NVLink "
     "900 GB/s; DGX H100: one 400 Gb/s NDR NIC per GPU; 81,559 MiB "
     "reported by nvidia-smi"},
    /* Power-limited variant: the H100 of Meta's Grand Teton hosts that
     * TorchTitan's 2024-12 benchmarks ran on (pytorch/torchtitan
     * benchmarks/llama3_h100_202412_torchtitan.md at 820504e2: 96 GB
     * HBM2e at 2.4 TB/s, "the default 500W power limit", NVLink inside
     * the 8-GPU host, 400 Gb/s RDMA per GPU).  No datasheet gives the
     * tensor peak at 500 W; it is interpolated linearly in TDP between two
     * NVIDIA datasheet points of the same 132-SM die: H100 NVL at 400 W
     * (BF16 835 / FP8 1,671 TFLOPS dense, FP32 60) and H100 SXM5 at 700 W
     * (989 / 1,979, FP32 67): 400 + 100 of the 300 W span gives
     * 835 + (989.4 - 835) / 3 = 886.5 and 1,670.5 + (1,978.9 - 1,670.5) / 3
     * = 1,773.3 TFLOPS.  An interpolation between cited points, not a
     * measurement; the kernel efficiencies are the Hopper ones. */
    {{.name = "h100-96gb-500w",
      .memory_bytes = 96 * GIB,
      .peak_flops_bf16 = APS_H100_500W_BF16 * TFLOPS,
      .peak_flops_fp8 = APS_H100_500W_FP8 * TFLOPS,
      .peak_flops_fp32 = 62.3 * TFLOPS,
      .hbm_bandwidth = 2400 * GB,
      .intra_node_bandwidth = 450 * GB,
      .inter_node_bandwidth = 50 * GB,
      .host_bandwidth = APS_PCIE_GEN5_X16,
      COMMON_FIELDS, HOPPER_ON, GEMM_SHAPE(APS_SMS_GH100)},
     "pytorch/torchtitan 820504e2 benchmarks/llama3_h100_202412_torchtitan.md"
     " (96 GB HBM2e, 2.4 TB/s, 500 W default power limit, 400 Gb/s per "
     "GPU); peaks interpolated in TDP between the NVIDIA H100 datasheet's "
     "NVL (400 W: BF16 835, FP8 1,671 TFLOPS dense) and SXM5 (700 W: 989, "
     "1,979) parts: BF16 886.5, FP8 1,773 TFLOPS dense"},
    {{.name = "h200-sxm-141gb",
      .memory_bytes = 143771 * MIB,
      .peak_flops_bf16 = 989.4 * TFLOPS,
      .peak_flops_fp8 = 1978.9 * TFLOPS,
      .peak_flops_fp32 = 66.9 * TFLOPS,
      .hbm_bandwidth = 4800 * GB,
      .intra_node_bandwidth = 450 * GB,
      .inter_node_bandwidth = 50 * GB,
      .host_bandwidth = APS_PCIE_GEN5_X16,
      COMMON_FIELDS, HOPPER_ON, GEMM_SHAPE(APS_SMS_GH100)},
     "NVIDIA H200 Tensor Core GPU datasheet (SXM): BF16 989 TFLOPS dense, "
     "FP8 1,979 TFLOPS dense, 141 GB HBM3e at 4.8 TB/s, NVLink 900 GB/s; "
     "one 400 Gb/s NIC per GPU; 143,771 MiB reported by nvidia-smi"},
    /*
     * Export variants: the H800 SXM5 and A800 SXM4 80GB keep the compute
     * die and HBM of their parents (H100_SXM5_DIE, A100_SXM4_80GB_DIE)
     * and have fewer NVLink lanes.  NVIDIA publishes no datasheet for
     * either part that could be read here; their figures come from
     * papers by teams that trained on them.
     *
     * H800 SXM5: "built on the Hopper architecture, similar to the H100
     *   GPU. However, it features reduced FP64 computational performance
     *   and NVLink bandwidth ... reduced from 900 GB/s to 400 GB/s ...
     *   each node is equipped with eight 400G Infiniband (IB) CX7 NICs"
     *   (DeepSeek-AI, "Insights into DeepSeek-V3: Scaling Challenges and
     *   Reflections on Hardware for AI Architectures", ISCA '25, arXiv:
     *   2505.09343, https://arxiv.org/abs/2505.09343, s.4.1); "NVLink
     *   provides 200GB/s bandwidth (of which about 160GB/s can actually be
     *   achieved), while each 400Gbps IB NIC delivers only 50GB/s" (s.4.3):
     *   200 GB/s per GPU and direction (400 / 2, the convention above), one
     *   400 Gb/s NIC per GPU, 50 GB/s.  The DeepSeek-V3 technical report
     *   (arXiv:2412.19437, https://arxiv.org/abs/2412.19437, s.3.2.2)
     *   measures "NVLink offers a bandwidth of 160 GB/s, roughly 3.2 times
     *   that of IB (50 GB/s)": 0.80 of the 200, the collective efficiency
     *   every NVIDIA preset already assumes (APS_COLL_EFF).  The FP64 cut
     *   does not touch training.  The tensor peaks are the SXM5's: DeepGEMM
     *   reaches "up to 1550 TFLOPS on H800" in FP8 (deepseek-ai/DeepGEMM
     *   0274ad7b README.md, news of 2025-04-18; the H800 SXM, its issue
     *   #17), above the 1,513 dense of the PCIe H100 (H100 datasheet), and
     *   BAAI's FlagPerf divides its H800 runs by 989 TFLOPS (FlagOpen/
     *   FlagPerf 0171acaa training/nvidia/llama2_70B-megatron/config/
     *   config_H800x4x8.py theoryflops).  Memory: the H100's 81,559 MiB,
     *   assumed (the same 80 GB HBM3; no H800 nvidia-smi total was found).
     * A800 SXM4 80GB: "8x NVIDIA A800 SXM GPUs (80 GB HBM2e each) ...
     *   NVLink 3.0 (200 GB/s) interconnect" (the A800 server of "Efficient
     *   Training on Multiple Consumer GPUs with RoundPipe", arXiv:
     *   2604.27085, https://arxiv.org/abs/2604.27085, its evaluation setup),
     *   i.e. 400 GB/s both ways against the A100's 600 (8 of the A100's 12
     *   NVLink 3 links of 25 GB/s per direction: NVIDIA/nccl-tests issue
     *   #149, a maintainer's reply).  nvidia-smi reports "NVIDIA
     *   A800-SXM4-80GB", 81,920 MiB and a 400 W cap (dexmal/dexbotic issue
     *   #41): the A100 SXM4 80GB's capacity and TDP; FlagPerf divides its
     *   A800 runs by 312 TFLOPS (FlagOpen/FlagPerf 572fd7d8 training/
     *   nvidia/qwen1.5_MoE-megatron/config/config_A800x1x8.py theoryflops),
     *   the A100's BF16 peak.  NICs: FlagPerf's NVIDIA DGX A800 hosts
     *   name "InfiniBand, 200Gb/s" (its training/nvidia/<case>/README.md
     *   environment sections); the count per host is not stated: one
     *   200 Gb/s HDR NIC per GPU as on the DGX A100 (the a100-sxm4-80gb
     *   preset), assumed.  Set inter_node_bandwidth_gbps for your site.
     */
    {{.name = "h800-sxm-80gb", H100_SXM5_DIE,
      .intra_node_bandwidth = 400.0 / 2.0 * GB,
      .inter_node_bandwidth = 400.0 / 8.0 * GB},
     "NVIDIA H100 Tensor Core GPU datasheet (SXM5) for the compute die and "
     "HBM the H800 keeps: BF16 989 TFLOPS dense, FP8 1,979 dense, FP32 67, "
     "HBM3 3.35 TB/s (DeepSeek-AI, ISCA '25, arXiv:2505.09343 "
     "https://arxiv.org/abs/2505.09343 s.4.1: \"similar to the H100\" but "
     "FP64 and NVLink); NVLink 400 GB/s both ways, 200 per direction (s.4.1, "
     "s.4.3; 160 GB/s achieved, arXiv:2412.19437 s.3.2.2); eight 400 Gb/s "
     "CX7 IB NICs per node, 50 GB/s per GPU (s.4.1, s.4.3); 81,559 MiB as "
     "the H100 (assumed)"},
    {{.name = "a800-sxm4-80gb", A100_SXM4_80GB_DIE,
      .intra_node_bandwidth = 400.0 / 2.0 * GB,
      .inter_node_bandwidth = 200.0 / 8.0 * GB},
     "NVIDIA A100 Tensor Core GPU datasheet (2021) for the compute die and "
     "HBM the A800 keeps: BF16 312 TFLOPS dense, FP32 19.5, HBM2e 2,039 "
     "GB/s; NVLink 3.0 200 GB/s per direction (400 both ways) on an 8 x "
     "A800 SXM 80 GB server (RoundPipe, arXiv:2604.27085 "
     "https://arxiv.org/abs/2604.27085); 81,920 MiB and 400 W reported by "
     "nvidia-smi; 200 Gb/s InfiniBand (FlagPerf DGX A800), one NIC per GPU "
     "as the DGX A100 (assumed)"},
    /* NVIDIA H20: see "NVIDIA H20" above (secondary peaks, named). */
    {{.name = "h20-96gb",
      .memory_bytes = APS_H20_MEMORY,
      .peak_flops_bf16 = APS_H20_PEAK_BF16 * TFLOPS,
      .peak_flops_fp8 = APS_H20_PEAK_FP8 * TFLOPS,
      .peak_flops_fp32 = APS_H20_PEAK_FP32 * TFLOPS,
      .hbm_bandwidth = APS_H20_HBM,
      .intra_node_bandwidth = APS_H20_NVLINK,
      .inter_node_bandwidth = 400.0 / 8.0 * GB,
      .host_bandwidth = APS_PCIE_GEN5_X16,
      COMMON_FIELDS, HOPPER_ON, GEMM_SHAPE(APS_SMS_H20)},
     "no NVIDIA datasheet read: Hopper GH100, 96GB (NVIDIA MIG user guide, "
     "docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-gpus.html); "
     "SECONDARY figures: FP16/BF16 148 TFLOPS dense, INT8 296 TOPS, FP32 44, "
     "HBM3 4.0 TB/s, NVLink 900 GB/s (zangshuxian.com, willitrunai.com, "
     "huggingface.co/hardware/h20); FP8 296 dense assumed (= INT8, as on "
     "every Hopper datasheet); 78 SMs (Geekbench 6 via zangshuxian.com); "
     "97,871 MiB reported by nvidia-smi; one 400 Gb/s NIC per GPU "
     "(assumed); Hopper efficiencies (assumed)"},
    {{.name = "b200",
      .memory_bytes = 183359 * MIB,
      .peak_flops_bf16 = 2250 * TFLOPS,
      .peak_flops_fp8 = 4500 * TFLOPS,
      .peak_flops_fp32 = 75 * TFLOPS,
      .hbm_bandwidth = 8000 * GB,
      .intra_node_bandwidth = 900 * GB,
      .inter_node_bandwidth = 50 * GB,
      .peak_flops_fp4 = 9000 * TFLOPS,
      .host_bandwidth = APS_PCIE_GEN5_X16,
      COMMON_FIELDS, BLACKWELL, GEMM_SHAPE(APS_SMS_B200)},
     "NVIDIA DGX B200 / HGX B200 datasheet (2024): per GPU FP8 4.5 PFLOPS "
     "dense (9 sparse), BF16 2.25 PFLOPS dense, 180 GB HBM3e at 8 TB/s, "
     "NVLink 5 1.8 TB/s, FP4 9 PFLOPS dense (MXFP8 at the FP8 rate); one "
     "400 Gb/s ConnectX-7 NIC per GPU; 183,359 MiB reported by nvidia-smi "
     "(DGX / HGX B200, driver 570)"},
    /* Grace-Blackwell racks: the NVLink domain is the rack, 4 GPUs per
     * compute tray (NVL72: devices_per_node = 4, nvlink_domain_size = 72,
     * or 64 for the usual 64-GPU job per rack); the B200 of GB200 runs at
     * 1,200 W. */
    {{.name = "gb200",
      .memory_bytes = 189471 * MIB,
      .peak_flops_bf16 = 2500 * TFLOPS,
      .peak_flops_fp8 = 5000 * TFLOPS,
      .peak_flops_fp32 = 80 * TFLOPS,
      .hbm_bandwidth = 8000 * GB,
      .intra_node_bandwidth = 900 * GB,
      .inter_node_bandwidth = 50 * GB,
      .peak_flops_fp4 = 10000 * TFLOPS,
      .host_bandwidth = APS_NVLINK_C2C_PER_GPU,
      COMMON_FIELDS, BLACKWELL, GEMM_SHAPE(APS_SMS_B200)},
     "NVIDIA GB200 NVL72 datasheet (2024), per Blackwell GPU: FP8 10 PFLOPS "
     "and BF16 5 PFLOPS with sparsity (5 and 2.5 dense), FP32 80 TFLOPS, "
     "186 GB HBM3e at 8 TB/s, NVLink 5 1.8 TB/s, FP4 10 PFLOPS dense; "
     "NVLink-C2C 900 GB/s per Grace and its two GPUs; one 400 Gb/s "
     "ConnectX-7 NIC per GPU; 189,471 MiB reported by nvidia-smi (GB200 "
     "NVL72 compute tray, driver 580)"},
    {{.name = "gb300",
      .memory_bytes = 283136 * MIB,
      .peak_flops_bf16 = 2500 * TFLOPS,
      .peak_flops_fp8 = 5000 * TFLOPS,
      .peak_flops_fp32 = 80 * TFLOPS,
      .hbm_bandwidth = 8000 * GB,
      .intra_node_bandwidth = 900 * GB,
      .inter_node_bandwidth = 100 * GB,
      .peak_flops_fp4 = 15000 * TFLOPS,
      .host_bandwidth = APS_NVLINK_C2C_PER_GPU,
      COMMON_FIELDS, BLACKWELL_ULTRA, GEMM_SHAPE(APS_SMS_B300)},
     "NVIDIA GB300 NVL72 datasheet (2025), per Blackwell Ultra GPU: FP8 5 "
     "PFLOPS and BF16 2.5 PFLOPS dense, FP32 80 TFLOPS, 288 GB HBM3e "
     "at 8 TB/s, NVLink 5 1.8 TB/s, FP4 15 PFLOPS dense; "
     "NVLink-C2C 900 GB/s per Grace and its two GPUs; one 800 Gb/s "
     "ConnectX-8 NIC per GPU; 283,136 MiB (276.50 GiB) as PyTorch reports "
     "the device's total capacity (NVIDIA-NeMo/Megatron-Bridge issue 2221, "
     "2026-02-04: \"GPU 3 has a total capacity of 276.50 GiB\"; the same in "
     "LambdaLabsML/torchtitan 3956f1b7 gb300/TUNING_RESULTS_120B.md), not "
     "the datasheet's 279 GB usable (259.8 GiB), which runs exceeded"},
    /* The air-cooled 8-GPU board of Blackwell Ultra: GB300's GPU, HBM and
     * NVLink 5 on an x86 host (DGX B300: Intel Xeon 6776P) behind an
     * NVSwitch board of 8, at the B200's tensor peaks but for FP4. */
    {{.name = "b300",
      .memory_bytes = 283136 * MIB,
      .peak_flops_bf16 = 2250 * TFLOPS,
      .peak_flops_fp8 = 4500 * TFLOPS,
      .peak_flops_fp32 = 75 * TFLOPS,
      .hbm_bandwidth = 8000 * GB,
      .intra_node_bandwidth = 900 * GB,
      .inter_node_bandwidth = 100 * GB,
      .peak_flops_fp4 = 13125 * TFLOPS,
      .host_bandwidth = APS_PCIE_GEN5_X16, /* the GPU's Gen6 link at the x86 CPU's Gen5 */
      COMMON_FIELDS, BLACKWELL_ULTRA, GEMM_SHAPE(APS_SMS_B300)},
     "NVIDIA HGX B300 datasheet (nvidia.com HGX platform specifications, 2025), 8 "
     "GPUs: FP4 144 PFLOPS sparse / 105 dense, FP8 72 and BF16 36 PFLOPS "
     "sparse, FP32 600 TFLOPS, 2.3 TB HBM3e, NVLink 14.4 TB/s; per GPU FP4 "
     "13.125 PFLOPS dense, FP8 4.5 and BF16 2.25 dense, 288 GB HBM3e "
     "at 8 TB/s, NVLink 5 1.8 TB/s; one 800 Gb/s ConnectX-8 NIC per GPU "
     "(DGX B300); capacity GB300's, the same GPU and HBM3e (283,136 MiB as "
     "PyTorch reports it; no B300 report of its own was found)"},
    /* AMD CDNA 3: see "AMD Instinct MI300X and MI325X" above.  memory_bytes
     * is the VRAM the ROCm GPU specifications list (192 and 256 GiB). */
    {{.name = "mi300x-192gb",
      .memory_bytes = 192 * GIB,
      .peak_flops_bf16 = 1307.4 * TFLOPS,
      .peak_flops_fp8 = 2614.9 * TFLOPS,
      .peak_flops_fp32 = 163.4 * TFLOPS,
      .hbm_bandwidth = 5300 * GB,
      .intra_node_bandwidth = APS_IF_CDNA3,
      .inter_node_bandwidth = 50 * GB,
      .host_bandwidth = APS_PCIE_GEN5_X16,
      CDNA3, GEMM_SHAPE(APS_CUS_CDNA3)},
     "AMD CDNA 3 white paper (Table 2, MI300X specifications): BF16 "
     "1,307.4 TFLOPS dense (2,614.9 with sparsity), FP8 2,614.9 dense, FP32 "
     "vector 163.4, 192 GB HBM3 at 5.3 TB/s, 7 x16 Infinity Fabric links "
     "fully connecting 8 GPUs, 896 GB/s P2P ring aggregate, PCIe Gen5 x16; "
     "192 GiB (ROCm GPU specifications); one 400 Gb/s NIC per GPU (typical "
     "host)"},
    {{.name = "mi325x-256gb",
      .memory_bytes = 256 * GIB,
      .peak_flops_bf16 = 1307.4 * TFLOPS,
      .peak_flops_fp8 = 2614.9 * TFLOPS,
      .peak_flops_fp32 = 163.4 * TFLOPS,
      .hbm_bandwidth = 6000 * GB,
      .intra_node_bandwidth = APS_IF_CDNA3,
      .inter_node_bandwidth = 50 * GB,
      .host_bandwidth = APS_PCIE_GEN5_X16,
      CDNA3, GEMM_SHAPE(APS_CUS_CDNA3)},
     "AMD CDNA 3 white paper (Table 2, MI325X specifications): BF16 "
     "1,307.4 TFLOPS dense (2,614.9 with sparsity), FP8 2,614.9 dense, FP32 "
     "vector 163.4, 256 GB HBM3E at 6.0 TB/s, 7 x16 Infinity Fabric links "
     "fully connecting 8 GPUs, 896 GB/s P2P ring aggregate, PCIe Gen5 x16; "
     "256 GiB (ROCm GPU specifications); one 400 Gb/s NIC per GPU (typical "
     "host)"},
    /* AMD CDNA 4: see "AMD Instinct MI355X" above.  peak_flops_fp4 is the
     * dense NVFP4 peak (types.h), which CDNA 4 lacks: its block-scaled
     * matrix cores take MX formats (E8M0 scales over 32 elements), 10 PF
     * dense in MXFP4 / MXFP6, not NVFP4; mxfp8 and nvfp4 are refused on it
     * (training.c). */
    {{.name = "mi355x-288gb",
      .memory_bytes = 288 * GIB,
      .peak_flops_bf16 = APS_MI355X_PEAK_FP16 * TFLOPS,
      .peak_flops_fp8 = APS_MI355X_PEAK_FP8 * TFLOPS,
      .peak_flops_fp32 = APS_MI355X_PEAK_FP32 * TFLOPS,
      .peak_flops_fp4 = 0,
      .hbm_bandwidth = APS_MI355X_HBM,
      .intra_node_bandwidth = APS_IF_CDNA4,
      .inter_node_bandwidth = 400.0 / 8.0 * GB,
      .host_bandwidth = APS_PCIE_GEN5_X16,
      CDNA4, GEMM_SHAPE(APS_CUS_CDNA4)},
     "AMD ROCm blog \"Matrix Core Programming on AMD CDNA3 and CDNA4\" "
     "(rocm.blogs.amd.com, 2025-09-30; AMD's figures, the CDNA 4 white paper "
     "could not be read): FP16/BF16 2.5 PFLOPS dense, FP8 5, MXFP6/MXFP4 10 "
     "(not held: no NVFP4), FP32 matrix 157.3 TFLOPS; 288 GiB, 256 CUs (ROCm "
     "GPU specifications); PCIe Gen5 x16 (AMD MLPerf Inference v6.0); "
     "SECONDARY: HBM3E 8 TB/s, 7 Infinity Fabric links of 153.6 GB/s both "
     "ways fully connecting 8 GPUs (Hot Chips 2025 coverage); one 400 Gb/s "
     "NIC per GPU (assumed)"},
};

/*
 * Huawei Ascend: no preset.  Atlas 800T A2 (eight Ascend 910B NPUs) and the
 * Ascend 910C were looked for (stored public pages, vendor docs and
 * code); no Huawei datasheet, product page or peer-reviewed paper
 * with the per-NPU dense bf16/fp16 peak, HBM bandwidth or HCCS bandwidth
 * could be read, and the secondary figures disagree, so a preset would
 * have to invent its peaks.  What was found, for whoever finds the vendor
 * figures:
 *   910B fp16 peak: 280 TFLOPS (ai.gitee.com compute docs), 320 (several
 *     Chinese blogs), 376 (a roofline script), 353.8 / 294.9 / 245.7 for
 *     910B2 / 910B3 / 910B4 (a hardware table in a public repository;
 *     = 24 / 20 / 20 AI cores x 8,192 FLOP/cycle x 1.8 / 1.8 / 1.5 GHz, the
 *     clocks unsourced); 910B HBM: 64 GB (SGLang Ascend docs, Atlas 800I
 *     A2: 8 x 64 GB; HAMi device config, 910B2: 65,536 MiB), at 0.46, 1.2,
 *     1.6 or 2.048 TB/s (blogs, scripts); HCCS 196 GB/s per NPU (the same
 *     repository table); RoCE: a Huawei Cloud 8 x 910B host lists 8 x 200G
 *     NICs (cnblogs.com/fengjian2016/p/18767859); host link: none found
 *     (the 2019 Ascend 910 had PCIe 4.0 x16, Hot Chips 31).
 *   910C: 752 TFLOPS per package, >392 GB/s UB and 400 Gb/s
 *     RDMA per NPU, one direction (Huawei's CloudMatrix384 paper,
 *     arXiv:2506.12708, known here only through summaries), 780 TFLOPS and
 *     3.2 TB/s (TechPowerUp citing DigiTimes, 2025), ~800 TFLOPS / 128 GB
 *     (press citing SemiAnalysis), 512 TFLOPS / 96 GB / 2.4 TB/s (2024
 *     newsletter); frameworks see each of its two dies as a device of
 *     64 GB (SGLang Ascend docs, Atlas 800I A3: 8 x 2 x 64 GB).
 * docs/policy.md "cluster" shows how to describe an NPU from site figures.
 */
/*
 * No preset either, for want of a vendor figure that could be read here:
 *   NVIDIA H800 PCIe / NVL and A800 PCIe / 40GB: only the SXM parts have a
 *     source above (the PCIe H100's peaks are lower than the SXM5's).
 *   AMD Instinct MI350X: the MI355X's die at a lower clock and power; the
 *     AMD tables read here (the ROCm blog above) give the MI355X's peaks
 *     only.
 * (NVIDIA H20 and AMD MI355X have presets above: the H20's peaks from
 * secondary sources, named; the MI355X's peaks from AMD, its HBM and
 * Infinity Fabric figures secondary.)
 * docs/policy.md "cluster" shows how to describe such a part from a base
 * preset and the figures of its vendor documentation.
 */
#define NPRESETS (sizeof presets / sizeof presets[0])

size_t aps_device_preset_count(void) { return NPRESETS; }

const char *aps_device_preset_name(size_t i)
{
    return i < NPRESETS ? presets[i].dev.name : NULL;
}

const char *aps_device_preset_source(size_t i)
{
    return i < NPRESETS ? presets[i].source : NULL;
}

aps_status aps_device_preset(const char *name, aps_device *out)
{
    if (name == NULL || out == NULL)
        return APS_EINVAL;
    for (size_t i = 0; i < NPRESETS; i++) {
        if (strcasecmp(name, presets[i].dev.name) == 0) {
            *out = presets[i].dev;
            return APS_OK;
        }
    }
    return APS_EINVAL;
}

/** Largest intra_node_links accepted: one link to each other GPU of the
 *  largest host (devices_per_node <= 1024). */
#define APS_MAX_INTRA_LINKS 1023

/* A fully connected host (intra_node_links > 0) links each GPU directly to
 * every other one of its host, and the mesh ends at the host. */
static aps_status validate_mesh(const aps_cluster *c, char *err, size_t n)
{
    int64_t links = c->device.intra_node_links;
    if (links < 0 || links > APS_MAX_INTRA_LINKS) {
        aps_fmt(err, n, "cluster.device.intra_node_links: must be 0 (a "
                "switch) or in [1, %d] links per GPU (got %lld)",
                APS_MAX_INTRA_LINKS, (long long)links);
        return APS_EINVAL;
    }
    if (links > 0 && c->devices_per_node - 1 > links) {
        aps_fmt(err, n, "cluster.device.intra_node_links: %lld links per "
                "GPU cannot fully connect devices_per_node=%lld GPUs",
                (long long)links, (long long)c->devices_per_node);
        return APS_EINVAL;
    }
    if (links > 0 && c->nvlink_domain_size > c->devices_per_node) {
        aps_fmt(err, n, "cluster.nvlink_domain_size: a fully connected host "
                "(intra_node_links=%lld) is its own domain: 0 or "
                "devices_per_node=%lld (got %lld)", (long long)links,
                (long long)c->devices_per_node,
                (long long)c->nvlink_domain_size);
        return APS_EINVAL;
    }
    return APS_OK;
}

/** Largest k0 (gemm_half_dim) a device may take: the bound a calibration
 *  file's value has (lua/apsearch/calibration.lua FIELDS); beyond it a
 *  GEMM of any K the models have runs at a few percent of its peak. */
#define APS_MAX_GEMM_K0 4096.0
/** Largest output tile side: cuBLAS and CUTLASS tiles reach 256 (x2 for
 *  Blackwell's 2-SM MMA); 1024 leaves room, and a tile is whole. */
#define APS_MAX_GEMM_TILE 1024.0

/** The GEMM shape fields (src/core/gemm.c): k0 in [0, APS_MAX_GEMM_K0], the
 *  tile sides whole numbers in [0, APS_MAX_GEMM_TILE], an SM count in [0,
 *  2^20], a fixed time per GEMM in [0, APS_MAX_HOST_SECONDS] (a kernel's,
 *  not a step's). */
static aps_status gemm_validate(const aps_device *d, char *err, size_t n)
{
    struct { const char *f; double v, max; bool whole; } g[] = {
        {"gemm_half_dim", d->gemm_half_dim, APS_MAX_GEMM_K0, false},
        {"gemm_tile_m", d->gemm_tile_m, APS_MAX_GEMM_TILE, true},
        {"gemm_tile_n", d->gemm_tile_n, APS_MAX_GEMM_TILE, true},
        {"gemm_fixed_seconds", d->gemm_fixed_seconds, APS_MAX_HOST_SECONDS,
         false},
    };
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        if (!(g[i].v >= 0 && g[i].v <= g[i].max) ||
            (g[i].whole && g[i].v != floor(g[i].v))) {
            aps_fmt(err, n, "cluster.device.%s: must be %s in [0, %g] (got %g)",
                    g[i].f, g[i].whole ? "a whole number" : "a number",
                    g[i].max, g[i].v);
            return APS_EINVAL;
        }
    }
    if ((d->gemm_tile_m > 0) != (d->gemm_tile_n > 0)) {
        aps_fmt(err, n, "cluster.device.gemm_tile_m, gemm_tile_n: both 0 (no "
                "tile term) or both > 0 (got %g, %g)", d->gemm_tile_m,
                d->gemm_tile_n);
        return APS_EINVAL;
    }
    if (d->sm_count < 0 || d->sm_count > (INT64_C(1) << 20)) {
        aps_fmt(err, n, "cluster.device.sm_count: must be in [0, 2^20] (got "
                "%lld)", (long long)d->sm_count);
        return APS_EINVAL;
    }
    return APS_OK;
}

aps_status aps_cluster_validate(const aps_cluster *c, char *err, size_t n)
{
    if (c == NULL) {
        aps_fmt(err, n, "cluster: NULL");
        return APS_EINVAL;
    }
    const aps_device *d = &c->device;
    if (!aps_text_ok(d->name, sizeof d->name)) {
        aps_fmt(err, n, "cluster.device.name: must be printable UTF-8 "
                "without control characters");
        return APS_EINVAL;
    }
    /* Lower bounds far below any real accelerator, so that a typo (a value
     * in the wrong unit) is refused rather than turned into inf or NaN
     * seconds: 1 MiB, 1 GFLOP/s, 1 MB/s. */
    struct { const char *f; double v, min; const char *unit; } pos[] = {
        {"memory_bytes", d->memory_bytes, APS_MIN_MEMORY, "bytes"},
        {"peak_flops_bf16", d->peak_flops_bf16, APS_MIN_FLOPS, "FLOP/s"},
        {"peak_flops_fp32", d->peak_flops_fp32, APS_MIN_FLOPS, "FLOP/s"},
        {"hbm_bandwidth", d->hbm_bandwidth, APS_MIN_BANDWIDTH, "bytes/s"},
        {"intra_node_bandwidth", d->intra_node_bandwidth, APS_MIN_BANDWIDTH,
         "bytes/s"},
        {"inter_node_bandwidth", d->inter_node_bandwidth, APS_MIN_BANDWIDTH,
         "bytes/s"},
    };
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++) {
        if (!(pos[i].v >= pos[i].min) || pos[i].v > 1e30) {
            /* the unit named: a field written as memory_gib gets bytes */
            aps_fmt(err, n, "cluster.device.%s: must be in [%g, 1e30] %s "
                    "(got %g)", pos[i].f, pos[i].min, pos[i].unit, pos[i].v);
            return APS_EINVAL;
        }
    }
    if (gemm_validate(d, err, n) != APS_OK)
        return APS_EINVAL;
    if (d->peak_flops_fp8 != 0 && !(d->peak_flops_fp8 >= APS_MIN_FLOPS)) {
        aps_fmt(err, n, "cluster.device.peak_flops_fp8: must be 0 (no fp8) "
                "or >= %g (got %g)", APS_MIN_FLOPS, d->peak_flops_fp8);
        return APS_EINVAL;
    }
    if (d->peak_flops_fp4 != 0 && !(d->peak_flops_fp4 >= APS_MIN_FLOPS)) {
        aps_fmt(err, n, "cluster.device.peak_flops_fp4: must be 0 (no "
                "block-scaled tensor cores) or >= %g (got %g)", APS_MIN_FLOPS,
                d->peak_flops_fp4);
        return APS_EINVAL;
    }
    /* 0 = no host link (activation offload refused); else a real link,
     * so that offload copies take finite seconds */
    if (d->host_bandwidth != 0 && !(d->host_bandwidth >= APS_MIN_BANDWIDTH &&
                                    d->host_bandwidth <= 1e30)) {
        aps_fmt(err, n, "cluster.device.host_bandwidth: must be 0 (no host "
                "link) or in [%g, 1e30] (got %g)", APS_MIN_BANDWIDTH,
                d->host_bandwidth);
        return APS_EINVAL;
    }
    /* 0 = derived from hbm_bandwidth; else a rate that keeps a scan's
     * seconds finite */
    if (d->ssd_scan_rate != 0 && !(d->ssd_scan_rate >= APS_MIN_SSD_SCAN_RATE &&
                                   d->ssd_scan_rate <= 1e30)) {
        aps_fmt(err, n, "cluster.device.ssd_scan_rate: must be 0 (derived "
                "from hbm_bandwidth) or in [%g, 1e30] state elements per "
                "second (got %g)", APS_MIN_SSD_SCAN_RATE, d->ssd_scan_rate);
        return APS_EINVAL;
    }
    /* a link's latency: a step of a collective, at most APS_MAX_LATENCY
     * (a second: past any network, short of the 1e30 s a typo in
     * inter_node_latency_us gave steps of 1e25 s) */
    struct { const char *f; double v; } lat[] = {
        {"intra_node_latency", d->intra_node_latency},
        {"inter_node_latency", d->inter_node_latency},
    };
    for (size_t i = 0; i < sizeof lat / sizeof lat[0]; i++) {
        if (!(lat[i].v >= 0 && lat[i].v <= APS_MAX_LATENCY)) {
            aps_fmt(err, n, "cluster.device.%s: must be in [0, %g] s (got %g)",
                    lat[i].f, APS_MAX_LATENCY, lat[i].v);
            return APS_EINVAL;
        }
    }
    struct { const char *f; double v; } nonneg[] = {
        {"cuda_context_bytes", d->cuda_context_bytes},
        {"nccl_comm_bytes", d->nccl_comm_bytes},
        {"nccl_nvls_bytes_per_rank", d->nccl_nvls_bytes_per_rank},
    };
    for (size_t i = 0; i < sizeof nonneg / sizeof nonneg[0]; i++) {
        if (!(nonneg[i].v >= 0) || nonneg[i].v > 1e30) {
            aps_fmt(err, n, "cluster.device.%s: must be >= 0 and finite (got %g)",
                    nonneg[i].f, nonneg[i].v);
            return APS_EINVAL;
        }
    }
    struct { const char *f, *per; double v; } host[] = {
        {"host_seconds_per_kernel", "kernel", d->host_seconds_per_kernel},
        {"host_seconds_per_loop_kernel", "kernel",
         d->host_seconds_per_loop_kernel},
        {"host_seconds_per_loop_gemm", "GEMM", d->host_seconds_per_loop_gemm},
        {"gpu_seconds_per_kernel", "kernel", d->gpu_seconds_per_kernel},
        {"gpu_min_kernel_seconds", "kernel", d->gpu_min_kernel_seconds},
    };
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) {
        if (!(host[i].v >= 0 && host[i].v <= APS_MAX_HOST_SECONDS)) {
            aps_fmt(err, n, "cluster.device.%s: must be in [0, %g] s per %s "
                    "(got %g)", host[i].f, APS_MAX_HOST_SECONDS, host[i].per,
                    host[i].v);
            return APS_EINVAL;
        }
    }
    struct { const char *f; double v; } frac[] = {
        {"gemm_efficiency", d->gemm_efficiency},
        {"fp8_gemm_efficiency", d->fp8_gemm_efficiency},
        {"attention_efficiency", d->attention_efficiency},
        {"unfused_attention_efficiency", d->unfused_attention_efficiency},
        {"hbm_efficiency", d->hbm_efficiency},
        {"collective_efficiency", d->collective_efficiency},
    };
    for (size_t i = 0; i < sizeof frac / sizeof frac[0]; i++) {
        if (!(frac[i].v >= APS_MIN_EFFICIENCY && frac[i].v <= 1)) {
            aps_fmt(err, n, "cluster.device.%s: must be in [%g, 1] (got %g)",
                    frac[i].f, APS_MIN_EFFICIENCY, frac[i].v);
            return APS_EINVAL;
        }
    }
    if (c->num_devices < 1 || c->num_devices > (INT64_C(1) << 24)) {
        aps_fmt(err, n, "cluster.num_devices: must be in [1, 2^24] (got %lld)",
                (long long)c->num_devices);
        return APS_EINVAL;
    }
    if (c->devices_per_node < 1 || c->devices_per_node > 1024) {
        aps_fmt(err, n, "cluster.devices_per_node: must be in [1, 1024] (got %lld)",
                (long long)c->devices_per_node);
        return APS_EINVAL;
    }
    /* A domain is whole hosts: each host's GPUs sit on one NVLink switch
     * tray set, and the job's ranks fill hosts one after the other. */
    int64_t dom = c->nvlink_domain_size;
    if (dom != 0 && (dom < c->devices_per_node || dom > APS_MAX_NVLINK_DOMAIN ||
                     dom % c->devices_per_node != 0)) {
        aps_fmt(err, n,
                "cluster.nvlink_domain_size: must be 0 or a multiple of "
                "devices_per_node=%lld in [%lld, %d] (got %lld)",
                (long long)c->devices_per_node, (long long)c->devices_per_node,
                APS_MAX_NVLINK_DOMAIN, (long long)dom);
        return APS_EINVAL;
    }
    if (validate_mesh(c, err, n) != APS_OK)
        return APS_EINVAL;
    /* Fewer devices than one node holds: part of one node.  More: whole
     * nodes only (any number of them: a job may use part of a domain). */
    if (c->num_devices > c->devices_per_node &&
        c->num_devices % c->devices_per_node != 0) {
        aps_fmt(err, n,
                "cluster.num_devices: %lld is not a whole number of nodes of "
                "devices_per_node=%lld",
                (long long)c->num_devices, (long long)c->devices_per_node);
        return APS_EINVAL;
    }
    return APS_OK;
}
