/*
 * layerprog.c -- the host (CPU) side of a step: the kernels one layer launches
 * per micro-batch (its "layer program", counted by block), what CUDA
 * graphs capture of them, and the seconds the host needs to launch the
 * rest (docs/modeling.md "Host time"); and the GPU's own time per kernel,
 * the gap between queued kernels (aps_device.gpu_seconds_per_kernel),
 * which every kernel of the program pays, captured or not.
 *
 * A kernel is launched either from the framework's Python code (every
 * PyTorch op, every TransformerEngine module call) or from a C++ loop
 * inside one op (TransformerEngine's grouped GEMM and split quantize run
 * one cuBLAS GEMM and one quantize kernel per local expert:
 * transformer_engine/pytorch/module/grouped_linear.py @ d0067d0d,
 * general_grouped_gemm, _split_quantize).  The first costs the host
 * aps_device.host_seconds_per_kernel, a quantize of the loop
 * host_seconds_per_loop_kernel (both measured on public profiler traces),
 * a GEMM of the loop host_seconds_per_loop_gemm (its cuBLASLt set-up
 * besides the launch; TransformerEngine's own benchmark): presets.c.
 *
 * Counts are Megatron-Core's with the TransformerEngine layer spec
 * (megatron/core/transformer/transformer_layer.py, attention.py,
 * moe/moe_layer.py, moe/token_dispatcher.py @ d98e8a64), forward of one
 * micro-batch; the backward launches APS_HOST_BWD_RATIO times as many
 * (every op's gradient, two GEMMs per forward GEMM).  The router and the
 * dispatcher's preprocess are the kernel counts NVIDIA published for
 * Megatron-Core (docs/discussions/deepseek-v3-gb200-optimization @
 * 1d9edcf8, s.2.1.4 and s.2.2.1): 72 router kernels, 31 with
 * --moe-router-fusion (which Megatron-Bridge's performance scripts set,
 * scripts/performance/configs/qwen3/qwen3_llm_pretrain.py v0.2.0:39), and
 * 17 for router and preprocess together with the flex dispatcher.
 */
#include <string.h>
#include "internal.h"

/** Forward kernels of the attention block from Python: the input norm
 *  and QKV GEMM (TELayerNormColumnParallelLinear), the core attention
 *  (TEDotProductAttention, one fused kernel), the output projection GEMM
 *  (TERowParallelLinear) and the fused bias-dropout-add. */
#define APS_HK_ATTN 5.0
/** RoPE: apply_rotary_pos_emb on Q and on K (fused kernel each). */
#define APS_HK_ROPE 2.0
/** Q / K norms (qk_layernorm): one per tensor. */
#define APS_HK_QK_NORM 2.0
/** Forward kernels of a dense MLP block: the pre-MLP norm and fc1 GEMM
 *  (TELayerNormColumnParallelLinear), the fused activation, fc2 GEMM,
 *  bias-dropout-add. */
#define APS_HK_MLP 5.0
/** With fewer KV heads than TP ranks, the all-gather of the QKV output
 *  (get_query_key_value_tensors, attention.py l.1864 @ d98e8a64) and the
 *  torch.cat that reorders it (tensor_parallel/mappings.py
 *  _gather_along_last_dim), forward. */
#define APS_HK_KV_GATHER 2.0
/** Sequence-parallel collectives of a block with TP: the all-gather
 *  before its first GEMM and the reduce-scatter after its last. */
#define APS_HK_SP 2.0
/** Quantize kernels per GEMM input of an fp8 / MXFP8 GEMM whose producer
 *  does not fuse the cast (TE current scaling and block scaling write
 *  bf16, then quantize: precision.c); NVFP4 takes the amax pass too. */
#define APS_HK_CAST_FP8 1.0
#define APS_HK_CAST_NVFP4 2.0
/** GEMMs of the attention block and of a dense MLP block. */
#define APS_HK_ATTN_GEMMS 2.0
#define APS_HK_MLP_GEMMS 2.0
/** GEMMs of a Mamba-2 or Gated DeltaNet mixer: in_proj and out_proj (TE
 *  linears: megatron/core/models/hybrid/hybrid_layer_specs.py @
 *  d98e8a64), each with its input's quantize kernels in fp8 / fp4. */
#define APS_HK_MIXER_GEMMS 2.0
/** MoE router kernels, unfused and with --moe-router-fusion (TE PR 1883;
 *  NVIDIA's count, file comment). */
#define APS_HK_ROUTER 72.0
#define APS_HK_ROUTER_FUSED 31.0
/** Router and dispatcher preprocess with the flex dispatcher (DeepEP /
 *  HybridEP fuse the preprocess; NVIDIA's count). */
#define APS_HK_ROUTER_PRE_FLEX 17.0
/** MoEAlltoAllTokenDispatcher.preprocess with EP or TP > 1: the routing
 *  map's per-expert sum, the split sums, the all-gather of the counts
 *  over TP x EP, the local-expert slice, three sums, the device-to-host
 *  copy of the splits (token_dispatcher.py preprocess), and the token
 *  permute (fused, --moe-permute-fusion). */
#define APS_HK_A2A_PRE 9.0
/** The MoE block's pre-MLP norm. */
#define APS_HK_MOE_NORM 1.0
/** Dispatch and combine: an all-to-all each for the tokens and the
 *  probabilities on dispatch, one on combine (token_dispatch,
 *  token_combine); flex: one dispatch and one combine kernel. */
#define APS_HK_A2A_COMM 3.0
#define APS_HK_FLEX_COMM 2.0
/** Sorting the received chunks by local expert (sort_chunks_by_idxs for
 *  tokens and probabilities) and back, and the unpermute: with more than
 *  one local expert. */
#define APS_HK_SORT 3.0
/** The unpermute and probability scaling after combine. */
#define APS_HK_UNPERMUTE 1.0
/** TEGroupedMLP from Python: fc1 and fc2 GroupedLinear calls and the
 *  activation with the routed probabilities (experts.py). */
#define APS_HK_GROUPED_PY 3.0
/** Per local expert and grouped GEMM, from TE's C++ loop: the GEMM (a
 *  cuBLASLt call, priced at aps_device.host_seconds_per_loop_gemm). */
#define APS_HK_GROUPED_PER_EXPERT 1.0
/** TransformerEngine's fused grouped MLP (training.cutedsl_fused_grouped_
 *  mlp), from Python: fc1's input quantized for all experts at once, the
 *  fc1 + activation kernel, fc2's grouped GEMM -- none per expert; NVFP4
 *  quantizes fc2's input apart (+1; ops/fused/grouped_mlp.py @ d0067d0da
 *  l.1287, l.1530, l.1572-1588). */
#define APS_HK_FUSED_GROUPED_MLP 3.0
/** Per local expert without grouped GEMM (SequentialMLP, Python): fc1,
 *  activation, fc2. */
#define APS_HK_SEQUENTIAL_PER_EXPERT 3.0
/** A shared expert: a dense MLP block without its own norm (the MoE
 *  block's pre-MLP norm serves it). */
#define APS_HK_SHARED_EXPERT (APS_HK_MLP - 1.0)
/** Latent MoE: fc1_latent_proj before the dispatch and fc2_latent_proj
 *  after the combine, one TELinear GEMM each (moe_layer.py l.488-490,
 *  l.591-592 @ d98e8a64). */
#define APS_HK_LATENT_PROJ 2.0
/** A CUDA graph replay: one launch from Python per captured region. */
#define APS_HK_GRAPH_LAUNCH 1.0
/** Backward kernels per forward kernel. */
#define APS_HOST_BWD_RATIO 2.0

/** Quantize kernels per GEMM input in this precision (0 for bf16). */
static double cast_kernels(const aps_training *t)
{
    if (t->precision == APS_PREC_NVFP4)
        return APS_HK_CAST_NVFP4;
    return aps_prec_quantized(t->precision) ? APS_HK_CAST_FP8 : 0.0;
}

/** Share of the attention layers whose KV heads are fewer than the TP
 *  ranks (aps_kv_core_groups: replicated, the QKV output gathered). */
static double kv_gathered_share(const aps_model *m, const aps_strategy *s)
{
    aps_attn_kind x[APS_ATTN_KINDS];
    int n = aps_attn_kinds(m, x);
    double share = 0.0;
    for (int i = 0; i < n; i++)
        if (x[i].k < (double)s->tp_degree)
            share += x[i].share;
    return share;
}

/** Attention block, forward, from Python. */
static double attn_kernels(const aps_model *m, const aps_training *t,
                           const aps_strategy *s)
{
    double k = APS_HK_ATTN + APS_HK_ATTN_GEMMS * cast_kernels(t);
    if (m->position_embedding == APS_POS_ROPE)
        k += APS_HK_ROPE;
    if (m->qk_norm)
        k += APS_HK_QK_NORM;
    if (s->tp_degree > 1 && s->sequence_parallel)
        k += APS_HK_SP;
    return k + APS_HK_KV_GATHER * kv_gathered_share(m, s);
}

/** Dense MLP block, forward, from Python. */
static double mlp_kernels(const aps_training *t, const aps_strategy *s)
{
    double k = APS_HK_MLP + APS_HK_MLP_GEMMS * cast_kernels(t);
    if (s->tp_degree > 1 && s->sequence_parallel)
        k += APS_HK_SP;
    return k;
}

/** Launches of a block that runs fwd kernels forward: the backward runs
 *  APS_HOST_BWD_RATIO times as many, or, captured, one graph each way. */
static aps_launches block(double fwd, bool graphed)
{
    if (graphed)
        return (aps_launches){APS_HK_GRAPH_LAUNCH, APS_HK_GRAPH_LAUNCH};
    return (aps_launches){fwd, APS_HOST_BWD_RATIO * fwd};
}

/** The MoE block before the dispatcher's device-to-host sync (norm,
 *  router, preprocess), forward, from Python, the router fused or not
 *  (training.moe_router_fusion); with the router captured, the norm and
 *  the graph (and the all-to-all's preprocess under a capacity factor). */
static aps_launches moe_pre_launches(const aps_training *t,
                                     const aps_strategy *s, bool router_graphed)
{
    double router = t->moe_router_fusion ? APS_HK_ROUTER_FUSED : APS_HK_ROUTER;
    /* the all-to-all's preprocess copies the capacity-padded split sizes
     * to the host: Megatron-Core graphs the router without it
     * (transformer_config.py l.2841-2850 @ d98e8a64; the launch file
     * writes moe_router alone) */
    bool pre_outside = s->moe_token_dispatcher == APS_MOE_ALLTOALL &&
                       s->moe_capacity_factor > 0;
    if (router_graphed) {
        double outside = APS_HK_MOE_NORM + (pre_outside ? APS_HK_A2A_PRE : 0.0);
        return (aps_launches){outside + APS_HK_GRAPH_LAUNCH,
                              APS_HOST_BWD_RATIO * outside +
                                  APS_HK_GRAPH_LAUNCH};
    }
    if (s->moe_token_dispatcher == APS_MOE_FLEX)
        /* NVIDIA's flex count is with the fused router: the unfused one
         * adds its difference */
        return block(APS_HK_MOE_NORM + APS_HK_ROUTER_PRE_FLEX +
                         (router - APS_HK_ROUTER_FUSED), false);
    return block(APS_HK_MOE_NORM + router + APS_HK_A2A_PRE, false);
}

/** The MoE block after the sync (dispatch, experts, combine, shared
 *  expert), forward: *py from Python; from TE's per-expert loops, *loop
 *  quantize kernels (_split_quantize) and *gemms cuBLASLt GEMMs
 *  (general_grouped_gemm). */
static void moe_post_kernels(const aps_model *m, const aps_training *t,
                             const aps_strategy *s, double *py, double *loop,
                             double *gemms)
{
    double local = (double)m->num_experts / (double)aps_moe_ep(s);
    double cast = cast_kernels(t);
    *py = s->moe_token_dispatcher == APS_MOE_FLEX ? APS_HK_FLEX_COMM
                                                  : APS_HK_A2A_COMM;
    *py += APS_HK_UNPERMUTE + (local > 1 ? APS_HK_SORT : 0.0);
    *loop = 0.0;
    *gemms = 0.0;
    if (t->cutedsl_fused_grouped_mlp) { /* aps_check_moe: grouped GEMM */
        *py += APS_HK_FUSED_GROUPED_MLP +
               (t->precision == APS_PREC_NVFP4 ? 1.0 : 0.0);
    } else if (s->moe_grouped_gemm != 0) {
        *py += APS_HK_GROUPED_PY;
        *gemms = local * APS_HK_MLP_GEMMS * APS_HK_GROUPED_PER_EXPERT;
        *loop = local * APS_HK_MLP_GEMMS * cast;
    } else {
        *py += local * (APS_HK_SEQUENTIAL_PER_EXPERT + APS_HK_MLP_GEMMS * cast);
    }
    if (m->shared_expert_ffn_hidden_size > 0)
        *py += APS_HK_SHARED_EXPERT + APS_HK_MLP_GEMMS * cast;
    if (m->moe_latent_size > 0) /* each GEMM with its input's quantize */
        *py += APS_HK_LATENT_PROJ * (1.0 + cast);
}

/** A dropless dispatch with EP or TP > 1 syncs device and host in every
 *  MoE layer's forward: the all-to-all dispatcher copies the split sizes
 *  to the host (MoEAlltoAllTokenDispatcher, cuda_sync_point
 *  "before_ep_alltoall"), DeepEP's dispatch has the CPU wait for the
 *  received counts ("the CPU will wait for GPU's signal to arrive",
 *  fused_a2a.py FusedDispatch.forward) and HybridEP's blocking dispatch
 *  for the permuted token count (fused_a2a.py: non_blocking only with
 *  num_permuted_tokens, which _HybridEPManager sets when it drops and
 *  pads), all @ d98e8a64.  A capacity factor is padded token drop (the
 *  launch file writes --moe-pad-expert-input-to-capacity with it): static
 *  splits, no sync, on the alltoall dispatcher and on HybridEP; DeepEP
 *  cannot pad (aps_check_moe refuses it).  Nor does a dropless HybridEP
 *  dispatch with a rank budget (training.moe_expert_rank_capacity_factor):
 *  MoEFlexTokenDispatcher sets num_permuted_tokens to the static budget
 *  (token_dispatcher.py l.1098-1110 @ d98e8a64), and HybridEP's dispatch
 *  is then non-blocking (fused_a2a.py l.418-420: "we do not need to use
 *  sync"). */
static bool moe_syncs(const aps_training *t, const aps_strategy *s)
{
    return (s->moe_token_dispatcher == APS_MOE_ALLTOALL ||
            s->moe_token_dispatcher == APS_MOE_FLEX) &&
           s->moe_capacity_factor <= 0 &&
           !(t->moe_expert_rank_capacity_factor > 0) &&
           (aps_moe_ep(s) > 1 || aps_moe_etp(s) > 1);
}

/** A hybrid model's mean layer (hybrid.c): its share of an attention
 *  block and, over the layers that are not MoE, of an MLP block and of a
 *  Mamba-2 block in the MLP's slot, a Gated DeltaNet block's (gdn.c) in
 *  the attention's slot -- a mixer's kernels with the SP collectives and
 *  its two GEMMs' quantize kernels, as an MLP's; a whole-layer graph
 *  captures every block, one launch each way, and the "mamba" module
 *  (mamba_g: Megatron-Core's CudaGraphModule.mamba, the Mamba-2 mixer)
 *  each Mamba-2 block. */
static void hybrid_launches(const aps_model *m, const aps_training *t,
                            const aps_strategy *s, const aps_hybrid_counts *mix,
                            bool layer_g, bool mamba_g, aps_host_program *out)
{
    aps_hybrid_counts w;
    if (mix != NULL)
        w = *mix;
    else
        aps_hybrid_mix(m, &w);
    double sp = (s->tp_degree > 1 && s->sequence_parallel) ? APS_HK_SP : 0.0;
    double casts = APS_HK_MIXER_GEMMS * cast_kernels(t);
    aps_launches mamba = block(aps_mamba_kernels() + sp + casts, mamba_g);
    aps_launches gdn = block(aps_gdn_kernels(m, t, s) + sp + casts, false);
    if (layer_g)
        return; /* the attention slot holds the layer's one graph */
    out->attn.fwd = w.attn_share * out->attn.fwd + w.gdn_share * gdn.fwd;
    out->attn.bwd = w.attn_share * out->attn.bwd + w.gdn_share * gdn.bwd;
    /* aps_host_stage launches the MLP slot on the layers that are not
     * MoE, the MoE block on the E layers: the slot is the mean of the
     * other layers' MLP and Mamba-2 blocks (a P layer, one layer of each
     * kind, runs both) */
    double L = (double)(w.attn + w.mlp + w.mamba - 2 * w.parallel);
    double other = L - (double)w.moe;
    double dense = other > 0 ? (double)(w.mlp - w.moe) / other : 0.0;
    double ssm = other > 0 ? (double)w.mamba / other : 0.0;
    if (!aps_model_is_hybrid(m)) /* Gated DeltaNet: the MLP on every layer;
                                    * NAS: its MLP blocks, not widths */
        dense = aps_model_is_nas(m) ? aps_nas_mlp_blocks(&w) : w.mlp_share,
        ssm = 0.0;
    out->mlp.fwd = dense * out->mlp.fwd + ssm * mamba.fwd;
    out->mlp.bwd = dense * out->mlp.bwd + ssm * mamba.bwd;
}

bool aps_model_has_dense_mlp_layer(const aps_model *m)
{
    if (!aps_model_is_moe(m))
        return true;
    return !aps_model_is_hybrid(m) &&
           aps_model_moe_layers_in(m, 0, m->num_layers) < m->num_layers;
}

aps_cuda_graph_scope aps_cuda_graph_dropless_modules(const aps_model *m)
{
    aps_hybrid_counts w;
    aps_hybrid_mix(m, &w);
    int g = APS_CG_ATTN | APS_CG_MOE_ROUTER;
    if (aps_model_is_hybrid(m) && w.mamba > 0)
        g |= APS_CG_MAMBA;
    if (aps_model_has_dense_mlp_layer(m))
        g |= APS_CG_MLP;
    return (aps_cuda_graph_scope)g;
}

aps_cuda_graph_scope aps_cuda_graph_effective_scope(const aps_training *t,
                                                    const aps_strategy *s)
{
    aps_cuda_graph_scope g = t->cuda_graphs ? t->cuda_graph_scope
                                            : APS_CG_NONE;
    if (g != APS_CG_NONE && (s->layer_recompute == APS_RECOMPUTE_FULL ||
                             t->activation_offload_layers > 0))
        g = APS_CG_FULL_ITERATION;
    return g;
}

/** The layer program of s with CUDA graph scope g (APS_CG_NONE: every
 *  kernel its own launch). */
static void program_build(const aps_model *m, const aps_training *t,
                          const aps_strategy *s, const aps_hybrid_counts *w,
                          aps_cuda_graph_scope g, aps_host_program *out)
{
    memset(out, 0, sizeof *out);
    if (g == APS_CG_FULL_ITERATION) {
        out->step_graphed = true;
        return;
    }
    /* whole-layer graphs capture an MoE block only when its shapes are
     * static (padded token drop); of a dropless one, what the launch file
     * writes Megatron-Core to capture: its modules but the experts */
    bool is_moe = aps_model_is_moe(m);
    if (g == APS_CG_LAYER && is_moe && s->moe_capacity_factor <= 0)
        g = aps_cuda_graph_dropless_modules(m);
    bool layer_g = g == APS_CG_LAYER;
    bool attn_g = layer_g || aps_cuda_graph_modules(g, APS_CG_ATTN);
    bool router_g = layer_g || aps_cuda_graph_modules(g, APS_CG_MOE_ROUTER);
    out->attn = block(attn_kernels(m, t, s), attn_g);
    out->mlp = layer_g ? (aps_launches){0.0, 0.0}
                       : block(mlp_kernels(t, s),
                               aps_cuda_graph_modules(g, APS_CG_MLP));
    if (aps_model_is_hybrid(m) || aps_model_has_gdn(m))
        hybrid_launches(m, t, s, w, layer_g,
                        aps_cuda_graph_modules(g, APS_CG_MAMBA), out);
    if (!is_moe)
        return;
    out->sync = moe_syncs(t, s);
    if (layer_g && s->moe_capacity_factor > 0)
        return; /* the whole layer is the attention's one launch */
    out->moe_pre = moe_pre_launches(t, s, router_g);
    double py, loop, gemms;
    moe_post_kernels(m, t, s, &py, &loop, &gemms);
    out->moe_post = block(py, false);
    out->moe_loop = block(loop, false);
    out->moe_loop_gemm = block(gemms, false);
}

void aps_host_program_build(const aps_model *m, const aps_training *t,
                            const aps_strategy *s, const aps_hybrid_counts *w,
                            aps_host_program *out)
{
    program_build(m, t, s, w, aps_cuda_graph_effective_scope(t, s), out);
}

void aps_kernel_program_build(const aps_model *m, const aps_training *t,
                              const aps_strategy *s,
                              const aps_hybrid_counts *w,
                              aps_host_program *out)
{
    program_build(m, t, s, w, APS_CG_NONE, out);
}

void aps_router_floor(const aps_device *d, const aps_host_program *k,
                      aps_moe_cost *mc)
{
    double dmin = d->gpu_min_kernel_seconds;
    double f = k->moe_pre.fwd * dmin - mc->router_fwd;
    double b = k->moe_pre.bwd * dmin - APS_HOST_BWD_RATIO * mc->router_fwd;
    mc->router_floor_fwd = f > 0 ? f : 0.0;
    mc->router_floor_bwd = b > 0 ? b : 0.0;
}

aps_launch_costs aps_host_launch_costs(const aps_device *d)
{
    return (aps_launch_costs){d->host_seconds_per_kernel,
                              d->host_seconds_per_loop_kernel,
                              d->host_seconds_per_loop_gemm};
}

aps_launch_costs aps_gpu_gap_costs(const aps_device *d)
{
    double g = d->gpu_seconds_per_kernel;
    return (aps_launch_costs){g, g, g};
}

/** Seconds of py Python-launched kernels, loop loop kernels and gemms
 *  cuBLASLt GEMMs at costs k. */
static double launch_seconds(const aps_launch_costs *k, double py,
                             double loop, double gemms)
{
    return py * k->py + loop * k->loop + gemms * k->gemm;
}

void aps_host_stage(const aps_launch_costs *k, const aps_host_program *hp,
                    double layers, double moe_layers, double recomputed,
                    aps_host_stage_time *out)
{
    memset(out, 0, sizeof *out);
    if (hp->step_graphed)
        return;
    double dense = layers - moe_layers;
    out->attn = launch_seconds(k, hp->attn.fwd, 0.0, 0.0);
    out->moe_pre = launch_seconds(k, hp->moe_pre.fwd, 0.0, 0.0);
    out->moe_post = launch_seconds(k, hp->moe_post.fwd, hp->moe_loop.fwd,
                                   hp->moe_loop_gemm.fwd);
    out->fwd = layers * out->attn +
               dense * launch_seconds(k, hp->mlp.fwd, 0.0, 0.0) +
               moe_layers * (out->moe_pre + out->moe_post);
    double bwd_py = layers * hp->attn.bwd + dense * hp->mlp.bwd +
                    moe_layers * (hp->moe_pre.bwd + hp->moe_post.bwd);
    out->bwd = launch_seconds(k, bwd_py, moe_layers * hp->moe_loop.bwd,
                              moe_layers * hp->moe_loop_gemm.bwd) +
               (layers > 0 ? recomputed / layers : 0.0) * out->fwd;
    out->sync_layers = hp->sync ? moe_layers : 0.0;
}
/** Seconds from one MoE layer's sync to the next one's: the host launches
 *  the layer's post-sync block (h_post: dispatch, the experts' loops,
 *  combine) then the next layer's attention, norm and router (h_pre) and
 *  waits at its sync; the GPU runs each piece once it is launched and its
 *  predecessor done.  With the dispatch and the experts' kernels launched
 *  through h_post and the combine (g_tail of GPU time, launched last)
 *  after them, the segment ends at the latest of: the GPU's work end to
 *  end, the host's last expert launch plus the combine and the next
 *  attention block, and the host's launches end to end.  The pieces'
 *  kernels are taken as a fluid (a piece's last kernel is short beside
 *  the piece). */
static double sync_segment(double h_pre, double h_post, double g_pre,
                           double g_post, double g_tail)
{
    double t = g_post + g_pre;
    double host_then_tail = h_post + g_tail + g_pre;
    double host = h_post + h_pre;
    if (host_then_tail > t)
        t = host_then_tail;
    return host > t ? host : t;
}

double aps_host_bound_fwd(const aps_host_stage_time *h, double gpu,
                          double g_pre, double g_post, double g_tail)
{
    if (h->sync_layers <= 0)
        return gpu > h->fwd ? gpu : h->fwd;
    double n = h->sync_layers;
    double h_pre = h->attn + h->moe_pre, h_post = h->moe_post;
    double g_other = gpu - n * (g_pre + g_post);
    double h_other = h->fwd - n * (h_pre + h_post);
    if (g_other < 0)
        g_other = 0;
    if (h_other < 0)
        h_other = 0;
    double t = (g_other > h_other ? g_other : h_other) +
               n * sync_segment(h_pre, h_post, g_pre, g_post, g_tail);
    /* never longer than the host's launches and the GPU's work one after
     * the other: pieces that sum past the rank's GPU time (g_other clamped
     * at 0) must not charge the host a wait it cannot cause */
    return t < gpu + h->fwd ? t : gpu + h->fwd;
}
