/*
 * moe.c -- mixture of experts and multi-head latent attention (issue 13):
 * the expert-parallel constraints, and what an MoE layer and an MLA layer
 * change against the dense layer that compute.c and memory.c price.
 *
 * The dense estimators price every layer as attention (a, k, d) plus a
 * dense FFN of width f (aps_layer_cost).  Here one MoE layer is priced as
 * that layer minus its dense FFN plus the MoE block, and one MLA layer as
 * that layer minus its Q/K/V/O plus MLA's projections; estimate.c and
 * memory.c add, per pipeline rank, (MoE layers on the rank) x the MoE
 * difference and (layers) x the MLA difference.  Sources, Megatron-LM @
 * d98e8a64ddf34856e74b24714e3bedb2f5a39553:
 *
 *   parallel_state.py initialize_model_parallel: the expert layers fold
 *     the same world as etp (innermost), ep, expert-dp, pp; expert_data_
 *     parallel_size = world / (etp ep pp), and world % (etp ep pp) == 0.
 *   training/arguments.py validate_args: num_experts % ep == 0.
 *   transformer/moe/router.py TopKRouter: a replicated h x E linear on the
 *     rank's (sequence-parallel) tokens, scores in fp32.
 *   transformer/moe/token_dispatcher.py: MoEAlltoAllTokenDispatcher
 *     (permute, all-to-all over EP, all-gather over ETP; combine:
 *     reduce-scatter over ETP, all-to-all, unpermute), MoEAllGather-
 *     TokenDispatcher (all-gather every token over ETP x EP, reduce-scatter
 *     after), MoEFlexTokenDispatcher (DeepEP / HybridEP: one copy of a
 *     token per destination rank).
 *   transformer/moe/experts.py TEGroupedMLP: the rank's E / ep experts,
 *     each fc1 h x (2) f_e / etp and fc2 f_e / etp x h.
 *   transformer/moe/shared_experts.py SharedExpertMLP: a dense MLP of
 *     width f_s, tensor-parallel like the dense MLP.
 *   transformer/moe/moe_utils.py permute / unpermute: token copies
 *     gathered by index; unpermute scales by the routing probabilities
 *     (saving the expert outputs) and scatter-adds.
 *   transformer/multi_latent_attention.py: linear_q_down_proj and
 *     linear_kv_down_proj duplicated over TP ('duplicated'), the up
 *     projections column-parallel, linear_proj row-parallel.
 *   training/training.py num_floating_point_operations: model FLOPs with
 *     the routed experts at top-k, the shared expert, the dense layers,
 *     MLA's projections and core attention; the router is not counted.
 *
 * Latent MoE (moe_latent_size l, Nemotron 3 Super; same commit):
 *   transformer/moe/moe_layer.py l.265-304: fc1_latent_proj h -> l and
 *     fc2_latent_proj l -> h, TELinear parallel_mode "duplicated" (whole
 *     on every TP rank), not experts (sharded as the dense weights);
 *     l.488-490 fc1 runs after the router on the block's tokens, l.591-592
 *     fc2 after the combine; the shared expert (l.423-428) runs on the
 *     full-width tokens.
 *   transformer/moe/experts.py l.219-242: each routed expert's fc1 takes
 *     l, its fc2 gives l; transformer/mlp.py l.215-243: only experts
 *     (is_expert) take the latent width, the shared expert stays at h.
 *   moe_layer.py l.488-493: fc1_latent_proj runs before dispatch_
 *     preprocess, so every dispatcher permutes, sends and gathers l-wide
 *     tokens (token_dispatcher.py l.1535: the NCCL-EP manager sizes its
 *     buffers to moe_latent_size for that reason).
 *   training/training.py l.847-858: routed FLOPs 4 T l f_e k (x 3/2
 *     gated) plus 4 T h l for the two projections.
 */
#include <math.h>
#include <string.h>
#include "internal.h"

/** HBM bytes per element of the experts' output width that Megatron-Core's
 *  quick-GEGLU experts (gpt-oss) spend clamping before the compiled
 *  kernel, forward, bf16: weighted_bias_quick_geglu_impl chunks fc1's
 *  output, clamps each half (2 + 2 each) and concatenates them (4 + 4)
 *  as eager PyTorch ops (megatron/core/fusions/fused_bias_geglu.py @
 *  d98e8a64 and d12f6c8c, which Megatron-Bridge's gpt-oss card pins):
 *  16.  Clamp's autograd keeps fc1's output for its mask while the
 *  compiled function keeps the concatenation: 2 A a width element more
 *  saved (APS_EAGER_GLU_CLAMP_SAVED). */
#define APS_EAGER_GLU_CLAMP_BYTES 16.0
#define APS_EAGER_GLU_CLAMP_SAVED (2.0 * APS_ACT_BYTES)

/** Whether the experts clamp eagerly (APS_EAGER_GLU_CLAMP_BYTES): a
 *  clamped quick-GEGLU on Megatron-Core's TEGroupedMLP path; TE's fused
 *  grouped MLP and the op fuser (the sync-free experts' rank capacity)
 *  clamp inside their kernels (experts.py ScaledClampedQGeGLU). */
static bool eager_glu_clamp(const aps_model *m, const aps_training *t)
{
    return t->framework == APS_FW_MEGATRON &&
           m->glu_activation == APS_GLU_QUICK_GELU && m->glu_clamp > 0.0 &&
           !t->cutedsl_fused_grouped_mlp &&
           !(t->moe_expert_rank_capacity_factor > 0.0);
}

/** HBM bytes per element of the hidden width that adding the experts'
 *  fc2 bias costs per routed row on Megatron-Core's TEGroupedMLP path
 *  (experts.py _apply_bias @ d12f6c8c, which Megatron-Bridge's gpt-oss
 *  card pins, and d98e8a64's path for bias lists): per local expert
 *  t + b * p with fp32 routing probabilities p, then the pieces
 *  concatenated and cast back.  Forward: b * p written fp32 (4), the sum
 *  (2 + 4 read, 4 written), the concatenation (4 + 4), the cast to bf16
 *  (4 + 2): 28.  Backward: the cast's gradient to fp32 (2 + 4), the
 *  sum's gradient to t in bf16 (4 + 2), the bias and probability
 *  gradients reduced from it (4 + 4): 20. */
#define APS_EAGER_EXPERT_BIAS_FWD_BYTES 28.0
#define APS_EAGER_EXPERT_BIAS_BWD_BYTES 20.0

/** Whether the experts add their fc2 bias eagerly
 *  (APS_EAGER_EXPERT_BIAS_FWD_BYTES): experts with biases on
 *  Megatron-Core's TEGroupedMLP path; TE's fused grouped MLP and the op
 *  fuser add it in their kernels (experts.py scale_bias). */
static bool eager_expert_bias(const aps_model *m, const aps_training *t)
{
    return t->framework == APS_FW_MEGATRON && m->mlp_bias &&
           !t->cutedsl_fused_grouped_mlp &&
           !(t->moe_expert_rank_capacity_factor > 0.0);
}

/** Passes over a token copy's hidden state in permute + unpermute, each
 *  element A bytes: permute reads the token and writes its k copies
 *  (A + A k, rounded to 2 A k: the index_select reads each copy's row),
 *  unpermute reads each copy, scales it and scatter-adds it (A k + A k)
 *  (moe_utils.py permute / unpermute): 4 A k h per token. */
#define APS_MOE_PERMUTE_PASSES 4.0

int64_t aps_moe_ep(const aps_strategy *s)
{
    return s->ep_degree > 1 ? s->ep_degree : 1;
}

int64_t aps_moe_etp(const aps_strategy *s)
{
    return s->etp_degree > 0 ? s->etp_degree : s->tp_degree;
}

int64_t aps_moe_edp(const aps_strategy *s)
{
    int64_t world = s->dp_degree * s->fsdp_degree * s->tp_degree *
                    s->pp_degree * s->cp_degree;
    int64_t fold = aps_moe_etp(s) * aps_moe_ep(s) * s->pp_degree;
    return fold > 0 && world % fold == 0 ? world / fold : 1;
}

/** True when the experts are ordinary modules of a class NeMo AutoModel
 *  builds through transformers (training.transformers_model, which
 *  training.c accepts under framework = automodel only): no expert mesh,
 *  FSDP wraps them with their decoder layer, over the shard dimension. */
static bool experts_in_layer_unit(const aps_training *t)
{
    return t->transformers_model;
}

int64_t aps_moe_expert_shard(const aps_training *t, const aps_strategy *s,
                             const aps_dp_plan *plan)
{
    int64_t edp = aps_moe_edp(s);
    /* HSDP under a profile whose experts are copied across replicas
     * (TorchTitan's efsdp = dp_shard x cp x tp / ep; profile.c), or with
     * the experts ordinary modules of a transformers class that NeMo
     * AutoModel wraps as it wraps the rest (training.transformers_model:
     * no expert mesh, fully_shard over the shard dimension), or under
     * Megatron-FSDP, whose HSDP shards the experts over one instance's
     * expert-data-parallel ranks (the intra-partial expert group,
     * parallel_state.py:1447-1452; mcore_fsdp_adapter.py:398-405) */
    bool replicated = aps_profile(t)->experts_replicated ||
                      experts_in_layer_unit(t) ||
                      plan->mfsdp != APS_MFSDP_NONE;
    /* Megatron's partial distributed optimizer: the intra-partial expert
     * group (parallel_state.py:1447-1452), plan->replicate instances */
    if (!plan->fsdp_like)
        replicated = true;
    if (replicated && plan->replicate > 1 && edp % plan->replicate == 0)
        return edp / plan->replicate;
    return edp;
}

double aps_moe_load_factor(const aps_training *t, const aps_strategy *s)
{
    double f = t->moe_load_imbalance > 0 ? t->moe_load_imbalance
                                         : APS_MOE_LOAD_IMBALANCE;
    /* tokens over capacity are dropped (dropless: no cap) */
    if (s->moe_capacity_factor > 0 && s->moe_capacity_factor < f)
        f = s->moe_capacity_factor;
    return f;
}

/** Latent MoE: priced as Megatron-Core builds it (moe.c file comment),
 *  for Megatron-LM only; its training forward raises with
 *  --moe-shared-expert-overlap (moe_layer.py l.476-481 @ d98e8a64). */
aps_reason aps_moe_check_latent(const aps_model *m, const aps_training *t,
                                char *msg, size_t n)
{
    if (m->moe_latent_size <= 0)
        return APS_REASON_NONE;
    /* NeMo AutoModel's MoE: MoEConfig.moe_latent_size, the same down and
     * up projections around the experts (components/moe/layers.py
     * l.823-828 @ 36044ad3) */
    if (t->framework != APS_FW_MEGATRON && t->framework != APS_FW_AUTOMODEL) {
        aps_fmt(msg, n, "model.moe_latent_size: latent MoE is priced for "
                "Megatron-LM (--moe-latent-size) and NeMo AutoModel only");
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    if (t->moe_shared_expert_overlap) {
        aps_fmt(msg, n, "training.moe_shared_expert_overlap: Megatron's MoE "
                "layer raises \"Shared expert overlap with MoE latent "
                "projections is not supported during training\" "
                "(moe_layer.py)");
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    return APS_REASON_NONE;
}

aps_reason aps_check_moe(const aps_model *m, const aps_training *t,
                         const aps_strategy *s, char *msg, size_t n)
{
    if (s->ep_degree < 0 || s->etp_degree < 0 ||
        (unsigned)s->moe_token_dispatcher > APS_MOE_FLEX ||
        !(s->moe_capacity_factor >= 0) || isinf(s->moe_capacity_factor)) {
        aps_fmt(msg, n, "ep_degree = %lld, etp_degree = %lld, "
                "moe_capacity_factor = %g: degrees must be >= 1 (0: default) "
                "and the capacity factor finite and >= 0 (0: dropless)",
                (long long)s->ep_degree, (long long)s->etp_degree,
                s->moe_capacity_factor);
        return APS_REASON_INVALID_DEGREE;
    }
    int64_t ep = aps_moe_ep(s), etp = aps_moe_etp(s);
    /* --overlap-moe-expert-parallel-comm: what TransformerConfig
     * __post_init__ asserts (Megatron-LM b0cc2706, the core of
     * Megatron-Bridge v0.3.0, transformer_config.py:1852-1888) */
    if (t->overlap_moe_expert_parallel_comm) {
        const char *why = NULL;
        if (t->framework != APS_FW_MEGATRON)
            why = "is Megatron-Core's combined 1F1B schedule";
        else if (ep <= 1)
            why = "needs expert parallelism (ep_degree > 1)";
        else if (s->moe_token_dispatcher == APS_MOE_ALLGATHER)
            why = "needs the alltoall or flex dispatcher";
        else if (s->pp_degree > 1 && s->vpp_degree <= 1)
            why = "needs a virtual pipeline (vpp_degree > 1) when pp_degree > 1";
        /* (full recompute: aps_check_framework) */
        else if (t->moe_shared_expert_overlap)
            why = "excludes moe_shared_expert_overlap";
        if (why) {
            aps_fmt(msg, n, "training.overlap_moe_expert_parallel_comm %s "
                    "(megatron/core/transformer/transformer_config.py)", why);
            return APS_REASON_FRAMEWORK_UNSUPPORTED;
        }
    }
    /* the rank capacity factor is the flex dispatcher's (its HybridEP
     * backend: transformer_config.py l.1868-1883 @ d98e8a64) */
    if (t->moe_expert_rank_capacity_factor > 0 &&
        s->moe_token_dispatcher != APS_MOE_FLEX) {
        aps_fmt(msg, n, "training.moe_expert_rank_capacity_factor needs "
                "moe_token_dispatcher = flex (\"requires "
                "moe_flex_dispatcher_backend to be 'hybridep' or 'ncclep'\", "
                "megatron/core/transformer/transformer_config.py)");
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    /* TEGroupedMLP asserts _is_fused_impl_supported() under the op fuser:
     * the grouped GEMM's GroupedLinear modules and an expert TP group of
     * one (experts.py l.287-290, l.382-400 @ d98e8a64) */
    if (t->cutedsl_fused_grouped_mlp && (etp > 1 || s->moe_grouped_gemm == 0)) {
        aps_fmt(msg, n, "training.cutedsl_fused_grouped_mlp needs %s "
                "(\"Fused GroupedMLP is not supported for this "
                "configuration\", megatron/core/transformer/moe/experts.py)",
                etp > 1 ? "etp_degree = 1" : "moe_grouped_gemm");
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    aps_reason r = aps_moe_check_latent(m, t, msg, n);
    if (r != APS_REASON_NONE)
        return r;
    if (m->num_experts == 0) {
        if (ep > 1 || etp != s->tp_degree) {
            aps_fmt(msg, n, "ep_degree = %lld, etp_degree = %lld for a dense "
                    "model (%s has no experts)", (long long)s->ep_degree,
                    (long long)s->etp_degree, m->name);
            return APS_REASON_EP_DIVISIBILITY;
        }
        return APS_REASON_NONE;
    }
    if (m->num_experts % ep != 0) {
        aps_fmt(msg, n, "num_experts = %lld is not divisible by ep_degree = "
                "%lld (megatron/training/arguments.py)",
                (long long)m->num_experts, (long long)ep);
        return APS_REASON_EP_DIVISIBILITY;
    }
    /* parallel_state.py: world % (etp ep pp) == 0; the dense ranks of a
     * pipeline stage, tp cp dp, hold the etp x ep x expert-dp grid */
    int64_t dense = s->dp_degree * s->fsdp_degree * s->tp_degree *
                    s->cp_degree;
    if (dense % (etp * ep) != 0) {
        aps_fmt(msg, n, "etp_degree x ep_degree = %lld x %lld does not divide "
                "the %lld rank%s of a pipeline stage (tp x cp x dp; "
                "megatron/core/parallel_state.py)", (long long)etp,
                (long long)ep, (long long)dense, dense == 1 ? "" : "s");
        return APS_REASON_EP_DIVISIBILITY;
    }
    if (m->moe_ffn_hidden_size % etp != 0) {
        aps_fmt(msg, n, "moe_ffn_hidden_size = %lld is not divisible by "
                "etp_degree = %lld", (long long)m->moe_ffn_hidden_size,
                (long long)etp);
        return APS_REASON_EP_DIVISIBILITY;
    }
    if (m->shared_expert_ffn_hidden_size % s->tp_degree != 0) {
        aps_fmt(msg, n, "shared_expert_ffn_hidden_size = %lld is not "
                "divisible by tp_degree = %lld",
                (long long)m->shared_expert_ffn_hidden_size,
                (long long)s->tp_degree);
        return APS_REASON_TP_DIVISIBILITY;
    }
    /* NeMo AutoModel's MoE models (NVIDIA-NeMo/Automodel 36044ad3,
     * nemo_automodel/components/moe/parallelizer.py _resolve_moe_tp_plan,
     * l.219-276): sequence_parallel raises, and its TP plan keeps the
     * attention and the router replicated across the TP ranks with the
     * routed experts "EP-owned" -- a tensor parallelism apsearch does not
     * model; it has no capacity factor (moe/layers.py Gate: dropless).
     * A model transformers builds (training.transformers_model) has no
     * expert parallelism at all. */
    if (t->framework == APS_FW_AUTOMODEL) {
        const char *why = NULL;
        if (t->transformers_model && aps_moe_ep(s) > 1) {
            aps_fmt(msg, n, "automodel: ep_degree = %lld; expert "
                    "parallelism needs an MoE model of AutoModel's own "
                    "(MoEFSDPSyncMixin: nemo_automodel/_transformers/"
                    "capabilities.py validate_for_mesh), and this one is "
                    "built by transformers (training.transformers_model); "
                    "use ep_degree = 1", (long long)aps_moe_ep(s));
            return APS_REASON_FRAMEWORK_UNSUPPORTED;
        }
        if (s->tp_degree > 1)
            why = "tensor parallelism of an MoE model replicates its "
                  "attention and router across the TP ranks and refuses "
                  "sequence_parallel (moe/parallelizer.py "
                  "_resolve_moe_tp_plan); use tp_degree = 1";
        else if (s->etp_degree > 1)
            why = "routed experts must remain EP-owned: no expert tensor "
                  "parallelism (moe/parallelizer.py _resolve_moe_tp_plan); "
                  "use etp_degree = 1";
        else if (s->moe_capacity_factor > 0)
            why = "its routers are dropless, with no capacity factor "
                  "(moe/layers.py Gate); use moe_capacity_factor = 0";
        else if (s->moe_token_dispatcher == APS_MOE_ALLTOALL)
            why = "no all-to-all dispatcher: DeepEP / HybridEP (flex, "
                  "moe/megatron/token_dispatcher.py) or an all-gather over "
                  "EP (moe/experts.py GroupedExperts); use flex or allgather";
        if (why) {
            aps_fmt(msg, n, "automodel: %s (nemo_automodel/components/)",
                    why);
            return APS_REASON_FRAMEWORK_UNSUPPORTED;
        }
    }
    /* the MoE layer takes sequence-parallel input under TP (the
     * dispatchers gather over the expert TP group from the sequence
     * shard); without SP apsearch does not model it */
    if (s->tp_degree > 1 && !s->sequence_parallel) {
        aps_fmt(msg, n, "tp_degree = %lld without sequence_parallel: "
                "mixture-of-experts layers are modelled with sequence-"
                "parallel input only", (long long)s->tp_degree);
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    if (t->framework != APS_FW_MEGATRON && t->framework != APS_FW_FSDP2 &&
        t->framework != APS_FW_AUTOMODEL) {
        aps_fmt(msg, n, "%s: mixture-of-experts training is modelled for "
                "megatron, fsdp2 (TorchTitan) and automodel only",
                aps_framework_name(t->framework));
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    /* allgather is a Megatron-Core dispatcher; TorchTitan dispatches
     * all-to-all (torchtitan/distributed/expert_parallel.py) or, as flex,
     * with DeepEP / HybridEP (its expert_parallel_comm_backend since
     * d021aa9c, 2025-12; models/common/config_utils.py comm_backend
     * "deepep" / "hybridep" @ b5bcd76c) */
    if (t->framework == APS_FW_FSDP2 &&
        s->moe_token_dispatcher == APS_MOE_ALLGATHER) {
        aps_fmt(msg, n, "%s: moe_token_dispatcher = allgather is Megatron-"
                "Core's (TorchTitan dispatches all-to-all, or with DeepEP / "
                "HybridEP as flex)", aps_framework_name(t->framework));
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    /* drop and pad with DeepEP: TransformerConfig.__post_init__ raises
     * "Flex token dispatcher with deepep backend does not support
     * moe_pad_expert_input_to_capacity" (Megatron-LM d98e8a64
     * transformer_config.py l.1754-1761); a capacity factor is apsearch's
     * padded token drop (the launch file writes both flags) */
    if (s->moe_token_dispatcher == APS_MOE_FLEX && s->moe_capacity_factor > 0 &&
        t->moe_flex_dispatcher_backend == APS_FLEX_DEEPEP) {
        aps_fmt(msg, n, "moe_token_dispatcher = flex with moe_capacity_factor "
                "= %g: the deepep backend does not pad to capacity "
                "(megatron/core/transformer/transformer_config.py); set "
                "training.moe_flex_dispatcher_backend = \"hybridep\" or use "
                "the alltoall dispatcher", s->moe_capacity_factor);
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    /* "DeepEP dispatcher requires TPxEP > 1" (token_dispatcher.py
     * MoEFlexTokenDispatcher.__init__ @ d98e8a64, the expert TP and EP
     * groups); HybridEP has no such assert */
    if (s->moe_token_dispatcher == APS_MOE_FLEX && ep * etp == 1 &&
        t->framework == APS_FW_AUTOMODEL) {
        /* AutoModel's copy asserts it for both backends (nemo_automodel/
         * components/moe/megatron/token_dispatcher.py:573 @ 36044ad3) */
        aps_fmt(msg, n, "automodel: moe_token_dispatcher = flex (dispatcher "
                "deepep / hybridep) with ep_degree = 1: \"Flex token "
                "dispatcher requires TPxEP > 1\" (nemo_automodel/components/"
                "moe/megatron/token_dispatcher.py); use allgather "
                "(dispatcher torch) or ep_degree > 1");
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    if (s->moe_token_dispatcher == APS_MOE_FLEX &&
        t->moe_flex_dispatcher_backend == APS_FLEX_DEEPEP && ep * etp == 1) {
        aps_fmt(msg, n, "moe_token_dispatcher = flex with ep_degree x "
                "etp_degree = 1: the deepep backend needs expert or expert-"
                "tensor parallelism (megatron/core/transformer/moe/"
                "token_dispatcher.py)");
        return APS_REASON_FRAMEWORK_UNSUPPORTED;
    }
    /* TorchTitan's experts live on the sparse mesh pp x dp_replicate x
     * efsdp x ep, whose ep ranks come out of dp_shard x cp x tp
     * (torchtitan/distributed/parallel_dims.py ParallelDims._validate,
     * "expert_parallel_degree must divide dp_shard * cp * tp", and
     * _build_mesh, pytorch/torchtitan
     * b5bcd76c66d0acb1a08b176d9639425bc55e0b2a): no expert parallelism
     * over data-parallel replicas (dp_degree), no tensor-parallel split of
     * an expert (an etp_degree > 1 given; 0, "the framework's default", is
     * left to aps_moe_etp) */
    if (t->framework == APS_FW_FSDP2) {
        int64_t sparse = s->fsdp_degree * s->cp_degree * s->tp_degree;
        if (sparse % ep != 0) {
            aps_fmt(msg, n, "fsdp2: ep_degree = %lld does not divide "
                    "fsdp_degree x cp_degree x tp_degree = %lld; TorchTitan "
                    "takes expert parallelism from the sharded ranks, not "
                    "the dp_degree = %lld replicas (torchtitan/distributed/"
                    "parallel_dims.py)", (long long)ep, (long long)sparse,
                    (long long)s->dp_degree);
            return APS_REASON_FRAMEWORK_UNSUPPORTED;
        }
        if (s->etp_degree > 1) {
            aps_fmt(msg, n, "fsdp2: etp_degree = %lld; TorchTitan shards "
                    "experts over ep and efsdp only (its sparse mesh has no "
                    "tensor-parallel dimension; torchtitan/distributed/"
                    "parallel_dims.py)", (long long)s->etp_degree);
            return APS_REASON_FRAMEWORK_UNSUPPORTED;
        }
    }
    return APS_REASON_NONE;
}

/* ------------------------------------------------------------ layers */

/** MoE layers of one multi-token-prediction depth: a hybrid model's MTP
 *  pattern's E layers (hybrid.c), else one if the last decoder layer,
 *  whose type the depth's layer has, is an MoE layer. */
static int64_t mtp_depth_moe_layers(const aps_model *m)
{
    if (!aps_model_is_hybrid(m))
        return (int64_t)aps_model_is_moe_layer(m, m->num_layers);
    aps_hybrid_counts mtp = {0};
    aps_hybrid_mtp_counts(m, 1, &mtp);
    return mtp.moe;
}

/** MoE layers among pipeline rank i's decoder layers (its model chunks at
 *  their places, aps_layout_rank_spans) and its multi-token-prediction
 *  layers. */
int64_t aps_moe_stage_moe_layers(const aps_model *m, const aps_layout *lay,
                                 int64_t i)
{
    if (m->num_experts <= 0)
        return 0;
    int64_t count = aps_layout_mtp_depths(lay, i) * mtp_depth_moe_layers(m);
    int64_t start[APS_MAX_STAGES], len[APS_MAX_STAGES];
    int64_t n = aps_layout_rank_spans(lay, i, start, len);
    for (int64_t k = 0; k < n; k++)
        count += aps_model_moe_layers_in(m, start[k], start[k] + len[k]);
    return count;
}

/* ------------------------------------------------------------ latent */

double aps_moe_expert_width(const aps_model *m)
{
    return m->moe_latent_size > 0 ? (double)m->moe_latent_size
                                  : (double)m->hidden_size;
}

double aps_moe_latent_params(const aps_model *m)
{
    if (m->moe_latent_size <= 0)
        return 0.0;
    double h = (double)m->hidden_size, l = (double)m->moe_latent_size;
    /* fc1 h x l and fc2 l x h; bias = add_bias_linear (l and h); Kimi
     * K3's RMSNorm over the experts' latent output, l */
    return 2.0 * h * l + (m->mlp_bias ? l + h : 0.0) +
           (m->moe_latent_norm ? l : 0.0);
}

/** Biases of the latent projections (replicated: l + h with mlp_bias). */
static double latent_bias(const aps_model *m)
{
    return m->moe_latent_size > 0 && m->mlp_bias
               ? (double)m->moe_latent_size + (double)m->hidden_size
               : 0.0;
}

/** Parameters of one dense FFN on one TP rank (compute.c's MLP). */
static double dense_ffn_tp(const aps_model *m, double tp)
{
    double mats = m->mlp == APS_MLP_SWIGLU ? 3.0 : 2.0;
    return mats * (double)m->hidden_size * (double)m->ffn_hidden_size / tp;
}

/** Biases of one FFN of width f and output width out on one of tp ranks,
 *  as aps_layer_params_tp splits the dense MLP's: the column-parallel
 *  input biases (2 f gated, f) / tp, the row-parallel output bias out
 *  replicated; 0 without mlp_bias or for f = 0. */
static double ffn_bias_tp(const aps_model *m, double f, double out, double tp)
{
    if (!m->mlp_bias || f <= 0)
        return 0.0;
    return (m->mlp == APS_MLP_SWIGLU ? 2.0 * f : f) / tp + out;
}

double aps_moe_router_extra_params(const aps_model *m)
{
    double E = (double)m->num_experts;
    return (m->moe_router_bias ? E : 0.0) +
           (m->moe_router_linear_bias ? E : 0.0) +
           (m->moe_router_scales ? (double)m->hidden_size + E : 0.0);
}

/** Bias parameters of the non-expert part of one MoE block on one rank:
 *  the router's parameters beside its weight (replicated,
 *  aps_moe_router_extra_params), the shared expert's biases. */
static double moe_dense_bias(const aps_model *m, double tp)
{
    return aps_moe_router_extra_params(m) +
           ffn_bias_tp(m, (double)m->shared_expert_ffn_hidden_size,
                       (double)m->hidden_size, tp) +
           latent_bias(m);
}

/** Non-expert parameters of one MoE block on one rank: the router
 *  (replicated, its biases with it), the shared expert / tp (+ its
 *  biases), its gate (replicated), the latent projections (duplicated,
 *  moe_layer.py l.279-304). */
static double moe_dense_part(const aps_model *m, double tp)
{
    double h = (double)m->hidden_size, E = (double)m->num_experts;
    double mats = m->mlp == APS_MLP_SWIGLU ? 3.0 : 2.0;
    double p = h * E + moe_dense_bias(m, tp);
    p += mats * h * (double)m->shared_expert_ffn_hidden_size / tp;
    if (m->shared_expert_gate)
        p += h;
    return p + aps_moe_latent_params(m) - latent_bias(m);
}

/** Expert matrix parameters of one MoE layer on one rank: E / ep experts
 *  of mats w f_e / etp, w the expert width (aps_moe_expert_width). */
static double moe_expert_matmul(const aps_model *m, const aps_strategy *s)
{
    double mats = m->mlp == APS_MLP_SWIGLU ? 3.0 : 2.0;
    return (double)(m->num_experts / aps_moe_ep(s)) * mats *
           aps_moe_expert_width(m) * (double)m->moe_ffn_hidden_size /
           (double)aps_moe_etp(s);
}

/** Expert parameters of one MoE layer on one rank: the matrices and,
 *  with mlp_bias, each local expert's biases split over etp as a dense
 *  MLP's over tp (gpt-oss gate_up_proj_bias, down_proj_bias). */
static double moe_expert_part(const aps_model *m, const aps_strategy *s)
{
    double local = (double)(m->num_experts / aps_moe_ep(s));
    return moe_expert_matmul(m, s) +
           local * ffn_bias_tp(m, (double)m->moe_ffn_hidden_size,
                               aps_moe_expert_width(m),
                               (double)aps_moe_etp(s));
}

double aps_moe_expert_params(const aps_model *m)
{
    double f = (double)m->moe_ffn_hidden_size;
    return (m->mlp == APS_MLP_SWIGLU ? 3.0 : 2.0) * aps_moe_expert_width(m) * f +
           ffn_bias_tp(m, f, aps_moe_expert_width(m), 1.0);
}

/** MLA minus GQA parameters of one layer on one TP rank: the down
 *  projections and their norms duplicated, the rest / tp. */
static double mla_delta_params(const aps_model *m, double tp, double *matmul)
{
    double h = (double)m->hidden_size, a = (double)m->num_attention_heads;
    double k = (double)m->num_query_groups, d = (double)m->head_dim;
    double qr = (double)m->q_lora_rank, kr = (double)m->kv_lora_rank;
    double dn = (double)m->qk_nope_head_dim, dr = (double)m->qk_rope_head_dim;
    double dv = (double)m->v_head_dim;
    double dup = (qr > 0 ? h * qr : 0.0) + h * (kr + dr);
    double split = (qr > 0 ? qr : h) * a * (dn + dr) + kr * a * (dn + dv) +
                   a * dv * h + (m->mla_output_gate ? h * a * dv : 0.0);
    double gqa = (h * a * d + 2.0 * h * k * d + a * d * h) / tp;
    *matmul = dup + split / tp - gqa;
    return *matmul + (qr > 0 ? qr : 0.0) + kr; /* + q/kv norms */
}

/** Probability that none of a token's K experts (distinct, uniformly
 *  routed among E) is among `held` given experts: C(E - held, K) /
 *  C(E, K). */
static double experts_miss(double E, double K, double held)
{
    double miss = 1.0;
    for (double j = 0.0; j < K; j += 1.0)
        miss *= (E - held - j) / (E - j);
    return miss > 0.0 ? miss : 0.0;
}

/* ln C(n, k) for 0 <= k <= n (lgamma: no overflow for any group count). */
static double log_choose(double n, double k)
{
    return lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0);
}

/* The chance that a given set of `chosen` groups, of `o` marked ones, is
 * exactly the marked part of the g groups drawn from G: C(G - o, g -
 * chosen) / C(G, g); 0 where impossible. */
static double groups_drawn(double G, double o, double g, double chosen)
{
    if (chosen > g || g - chosen > G - o)
        return 0.0;
    return exp(log_choose(G - o, g - chosen) - log_choose(G, g));
}

/** Most router groups, and most domains, the grouped spread below is
 *  computed for (past it, the uniform spread: no router has so many, and
 *  the sum over the domains stays short). */
#define APS_MAX_ROUTER_GROUPS 4096.0

/* The chance that domain d (experts [d ed, (d + 1) ed)) gets none of a
 * token's K experts, drawn among the E / G experts of each of its g
 * chosen groups (groups of eg = E / G contiguous experts): the domain
 * overlaps a first and a last group by a1 and a2 experts (one group when
 * it lies inside it) and m whole groups between; summed over how many of
 * the middle ones (C(m, j) ways) and whether each edge group is among the
 * chosen, the K experts all missing the overlap. */
static double domain_missed(double G, double g, double K, double eg,
                            double ed, double d)
{
    double lo = d * ed, hi = lo + ed, pool = g * eg;
    double jl = floor(lo / eg), jr = floor((hi - 1.0) / eg);
    double a1 = fmin(hi, (jl + 1.0) * eg) - lo;
    double a2 = jr > jl ? hi - jr * eg : 0.0;
    double m = jr > jl ? jr - jl - 1.0 : 0.0;
    double o = m + (jr > jl ? 2.0 : 1.0), missed = 0.0;
    for (double j = 0.0; j <= m && j <= g; j += 1.0)
        for (int e1 = 0; e1 <= 1; e1++)
            for (int e2 = 0; e2 <= (jr > jl ? 1 : 0); e2++) {
                double chosen = j + e1 + e2;
                double w = groups_drawn(G, o, g, chosen);
                if (w > 0.0)
                    missed += exp(log_choose(m, j)) * w *
                              experts_miss(pool, K, j * eg + e1 * a1 + e2 * a2);
            }
    return missed;
}

/* aps_moe_flex_remote_domains (internal.h): the NVLink domains other than
 * the sender's that one token's K experts (of E, spread evenly over
 * `domains` domains) fall in: what DeepEP sends over RDMA, one copy per
 * destination domain; a token's routing does not depend on where it is,
 * so (1 - 1 / domains) of the domains it reaches are remote.  Uniform
 * routing: a domain is reached unless all K experts miss it.
 * Group-limited routing (DeepSeek-V3's node-limited routing,
 * arXiv:2412.19437 s.2.1.2; Megatron-Core --moe-router-num-groups G,
 * --moe-router-group-topk g, moe_utils.py group_limited_topk @ d98e8a64;
 * groups of contiguous experts, as EP ranks hold them): the K experts lie
 * in the token's g chosen groups, spread over their g E / G experts;
 * each domain is missed with domain_missed's chance, whatever the groups'
 * and domains' boundaries (r whole groups a domain gives the
 * hypergeometric sum over its chosen groups, q domains a group the
 * group's g / G).  A domain count that does not divide the experts
 * (domains of a rack that is not whole hosts) or past
 * APS_MAX_ROUTER_GROUPS: uniform. */
double aps_moe_flex_remote_domains(const aps_model *m, double E, double K,
                                   double domains)
{
    double G = (double)m->moe_router_num_groups;
    double g = (double)m->moe_router_group_topk;
    double uniform = (domains - 1.0) * (1.0 - experts_miss(E, K, E / domains));
    double ed = E / domains;
    if (!(G > 0.0 && g > 0.0 && G <= APS_MAX_ROUTER_GROUPS && domains > 1.0 &&
          domains <= APS_MAX_ROUTER_GROUPS && ed == floor(ed) &&
          domains == floor(domains)))
        return uniform;
    double reached = 0.0;
    for (double d = 0.0; d < domains; d += 1.0)
        reached += 1.0 - domain_missed(G, g, K, E / G, ed, d);
    return reached * (1.0 - 1.0 / domains);
}

/* ------------------------------------------------ sync-free experts */

double aps_moe_static_rows(double copies, double cf)
{
    if (!(cf > 0))
        return 0.0;
    /* budget = int(padded_num_tokens * topk * cf); budget += -budget %
     * pad_multiple */
    double budget = floor(copies * cf);
    return ceil(budget / APS_TE_GROUPED_ALIGN) * APS_TE_GROUPED_ALIGN;
}

/** Whether the routed experts' saved tensors go to the paged stash: only
 *  those TransformerEngine's fused grouped MLP marks (mark_grouped_tensor,
 *  TransformerEngine d0067d0da ops/fused/grouped_mlp.py l.1749), a fusion
 *  built for the MXFP8 and NVFP4 recipes alone (fuse_grouped_mlp_ops
 *  l.842; NVFP4 refused by training.c); other tensors pass the hooks
 *  untouched (on_save_for_backward returns them) and no buffer is
 *  allocated ("max_tokens_dict is None, skipping stash buffer
 *  allocation", moe/paged_stash.py). */
static bool moe_stashes(const aps_training *t)
{
    return t->moe_paged_stash && t->moe_expert_rank_capacity_factor > 0 &&
           t->precision == APS_PREC_MXFP8;
}

/** The tensors the fused MXFP8 grouped MLP saves for backward and marks
 *  for the stash (grouped_mlp.py l.1749-1772 @ d0067d0da: the GEMM inputs'
 *  columnwise copies only, "MXFP8 wgrad only needs columnwise tiles"),
 *  each a key of the stash (moe/paged_stash.py on_save_for_backward:
 *  dtype and hidden_size = numel / tokens): width, bytes per element and
 *  rows per routed row (a scale tensor has tokens // 32). */
typedef struct { double width, bytes, rows; } stash_tensor;
#define STASH_TENSORS 6

static void stash_tensors(const aps_model *m, const aps_strategy *s,
                          stash_tensor out[STASH_TENSORS])
{
    /* fc1's input is the experts' width: moe_latent_size under latent
     * MoE (the dispatched tokens, moe_layer.py l.488-493) */
    double h = aps_moe_expert_width(m), etp = (double)aps_moe_etp(s);
    double fe = (double)m->moe_ffn_hidden_size / etp;
    double up = m->mlp == APS_MLP_SWIGLU ? 2.0 : 1.0;
    double sc = 1.0 / APS_MXFP8_BLOCK;
    double fp8 = APS_FP8_BYTES;
    stash_tensor k[STASH_TENSORS] = {
        {h, fp8, 1.0},       /* fc1 input, columnwise fp8 data */
        {h, fp8, sc},        /* its e8m0 scales */
        {up * fe, APS_ACT_BYTES, 1.0}, /* activation_in: fc1 output, bf16
                                          (c_dtype, l.1407, 1550) */
        {1.0, APS_FP32_BYTES, 1.0},    /* scales: routing probabilities */
        {fe, fp8, 1.0},      /* fc2 input, columnwise fp8 data */
        {fe, fp8, sc},       /* its e8m0 scales */
    };
    memcpy(out, k, sizeof k);
}

/** Bytes per static row of the tensors stash_tensors lists: what one
 *  layer holds at its full budget shape before the stash copies it
 *  (the originals live until the next layer's group start,
 *  wait_for_stash_to_complete) and again when the backward reloads it
 *  (reload_paged_tensors allocates original_shape). */
static double stash_row_bytes(const aps_model *m, const aps_strategy *s)
{
    stash_tensor k[STASH_TENSORS];
    stash_tensors(m, s, k);
    double b = 0.0;
    for (int j = 0; j < STASH_TENSORS; j++)
        b += k[j].width * k[j].bytes * k[j].rows;
    return b;
}

double aps_moe_stash_bytes(const aps_model *m, const aps_training *t,
                           const aps_strategy *s, double avg, double live)
{
    if (!moe_stashes(t) || !(avg > 0) || !(live > 0))
        return 0.0;
    double f = t->moe_paged_stash_buffer_size_factor_cuda > 0
                   ? t->moe_paged_stash_buffer_size_factor_cuda
                   : APS_PAGED_STASH_FACTOR_CUDA;
    double page = (double)(t->moe_paged_stash_page_size > 0
                               ? t->moe_paged_stash_page_size
                               : APS_PAGED_STASH_PAGE_SIZE);
    stash_tensor k[STASH_TENSORS];
    stash_tensors(m, s, k);
    double bytes = 0.0;
    for (int j = 0; j < STASH_TENSORS; j++) {
        /* capture: temp += avg (avg // 32 for a scale) per saved tensor,
         * the peak over the iteration; num_tokens = int(peak * factor);
         * num_cuda_pages = ceil(num_tokens / page_size) */
        double per_layer = floor(avg * k[j].rows);
        double tokens = floor(live * per_layer * f);
        bytes += ceil(tokens / page) * page * k[j].width * k[j].bytes;
    }
    return bytes;
}

/** The sync-free fields of out: the static budget for the rank's balanced
 *  routed copies, and under the stash the layer's avg_num_tokens =
 *  int(max_num_tokens // cap_factor) (moe/experts.py l.769-776) and the
 *  stashed bytes per static row. */
static void moe_sync_free(const aps_model *m, const aps_training *t,
                          const aps_strategy *s, double copies,
                          aps_moe_cost *out)
{
    double cf = t->moe_expert_rank_capacity_factor;
    out->static_rows = aps_moe_static_rows(copies, cf);
    if (!moe_stashes(t))
        return;
    out->stash_tokens = floor(out->static_rows / cf);
    out->stash_row_bytes = stash_row_bytes(m, s);
}

/** One layer's receive buffer, bytes: as large as the send buffer,
 *  unless a rank capacity factor fixes it at the static budget of rows
 *  ("setting it selects static shapes (fixed receive buffer, CUDA-graph
 *  capturable)", transformer_config.py l.1019-1025; HybridEP's
 *  dispatch_with_permute returns num_permuted_tokens rows,
 *  moe/fused_a2a.py l.415-433 @ d98e8a64). */
static double moe_receive_bytes(double row, double send,
                                const aps_moe_cost *out)
{
    return out->static_rows > 0 ? row * out->static_rows : send;
}

/* ------------------------------------------------------------ costs */

/** Scales the MLA terms of out to the mean layer of a model whose MLA is
 *  on a share of its layers only (Kimi Linear: its full-attention layers,
 *  the others Kimi Delta Attention; gdn.c), as the GQA block they replace
 *  is priced at that share (aps_hybrid_mix's attn_share); share 1
 *  otherwise.  Exact per rank only without pipeline stages (gdn.c refuses
 *  them for such a model). */
static void scale_mla_delta(aps_moe_cost *out, double share)
{
    out->mla_gemm_fwd *= share;
    out->mla_attn_fwd *= share;
    out->mla_attn_bwd *= share;
    out->mla_act *= share;
    out->mla_up_fwd *= share;
    out->mla_up_act *= share;
    out->mla_params *= share;
    out->mla_matmul_params *= share;
}

double aps_moe_expert_rows(const aps_model *m, const aps_training *t,
                           const aps_strategy *s)
{
    double T = (double)s->micro_batch_size * (double)t->seq_length /
               (double)s->cp_degree;
    if (s->tp_degree > 1 && s->sequence_parallel)
        T /= (double)s->tp_degree; /* tokens entering the block */
    return T * (double)m->experts_per_token * (double)aps_moe_etp(s) *
           aps_moe_load_factor(t, s);
}

double aps_moe_grouped_fwd(const aps_model *m, const aps_device *d,
                           const aps_training *t, const aps_strategy *s,
                           bool down)
{
    double local = (double)m->num_experts / (double)aps_moe_ep(s);
    double rows = aps_moe_expert_rows(m, t, s) / local;
    double fe = (double)m->moe_ffn_hidden_size / (double)aps_moe_etp(s);
    double w = aps_moe_expert_width(m);
    double up = m->mlp == APS_MLP_SWIGLU ? 2.0 : 1.0;
    return local * (down ? aps_gemm_time(d, t->precision, rows, w, fe)
                         : aps_gemm_time(d, t->precision, rows, up * fe, w));
}

/** Under op-level selective checkpointing, what the backward recomputes
 *  beyond the dense GQA layer's (compute.c layer_selective's
 *  selective_fwd, whose walk is opsac.c's): per MLA layer its walk's mms
 *  against GQA's, and its attention's difference when the attention
 *  kernel runs again (sac_mla_fwd); per MoE layer (sac_moe_fwd) the
 *  block's walk against the dense FFN's (the router gate, the expert
 *  GEMMs the policy does not save, the shared expert's) and the block's
 *  elementwise work, casts, bias adds and router kernels, all
 *  recomputed. */
static void op_sac_recompute(const aps_model *m, const aps_device *d,
                             const aps_training *t, const aps_strategy *s,
                             aps_moe_cost *out)
{
    bool mla = m->kv_lora_rank > 0;
    double dense = aps_op_sac_layer_recompute(m, d, t, s, mla, false);
    if (mla)
        out->sac_mla_fwd =
            dense - aps_op_sac_layer_recompute(m, d, t, s, false, false) +
            (aps_op_sac_attention_recomputed(t) ? out->mla_attn_fwd : 0.0);
    if (m->num_experts <= 0)
        return;
    out->sac_moe_fwd = aps_op_sac_layer_recompute(m, d, t, s, mla, true) -
                       dense + out->membound_fwd + out->cast_fwd +
                       out->bias_fwd + out->router_floor_fwd;
}

void aps_moe_layer_cost(const aps_model *m, const aps_cluster *c,
                        const aps_training *t, const aps_strategy *s,
                        aps_moe_cost *out)
{
    memset(out, 0, sizeof *out);
    if (!aps_model_is_moe(m))
        return;
    const aps_device *d = &c->device;
    aps_precision prec = t->precision;
    double A = APS_ACT_BYTES, Ain = aps_gemm_input_bytes(t);
    double tp = (double)s->tp_degree;
    double S = (double)t->seq_length, sl = S / (double)s->cp_degree;
    double b = (double)s->micro_batch_size;
    double h = (double)m->hidden_size, a = (double)m->num_attention_heads;
    double T = b * sl;
    double rep = (s->tp_degree > 1 && s->sequence_parallel) ? tp : 1.0;
    double hbm = d->hbm_bandwidth * d->hbm_efficiency;
    double cast = 0.0, fused = 0.0;
    if (aps_prec_quantized(prec))
        aps_cast_bytes(t, &cast, &fused);
    double up = m->mlp == APS_MLP_SWIGLU ? 2.0 : 1.0;
    /* bytes an MLP keeps per token and element of its width, the same in
     * the dense FFN the block replaces, the experts (TorchTitan's eager
     * GroupedExperts is unfused as its FeedForward: h = silu(gmm(x, w1)) *
     * gmm(x, w3), torchtitan/models/common/moe.py:94-103 @ b5bcd76c) and
     * the shared expert (memory.c aps_mlp_bytes_per_width) */
    double wb = aps_mlp_bytes_per_width(m, t);
    double act_b = aps_act_fn_bytes(m, t);

    if (m->kv_lora_rank > 0) {
        /* MLA: its projections instead of Q/K/V/O; core attention with
         * (dn + dr)-wide scores and dv-wide values */
        double k = (double)m->num_query_groups, dh = (double)m->head_dim;
        double qr = (double)m->q_lora_rank, kr = (double)m->kv_lora_rank;
        double dn = (double)m->qk_nope_head_dim;
        double dr = (double)m->qk_rope_head_dim, dv = (double)m->v_head_dim;
        double g = -aps_gemm_time(d, prec, T, (a + 2.0 * k) * dh / tp, h) -
                   aps_gemm_time(d, prec, T, h, a * dh / tp);
        if (qr > 0)
            g += aps_gemm_time(d, prec, T, qr, h) +
                 aps_gemm_time(d, prec, T, a * (dn + dr) / tp, qr);
        else
            g += aps_gemm_time(d, prec, T, a * (dn + dr) / tp, h);
        g += aps_gemm_time(d, prec, T, kr + dr, h) +
             aps_gemm_time(d, prec, T, a * (dn + dv) / tp, kr) +
             aps_gemm_time(d, prec, T, h, a * dv / tp);
        /* Kimi K3's output gate: g_proj h -> a dv (KimiMLAAttention.
         * forward @ 36044ad3 l.525-526); its sigmoid and product, 10
         * bytes of traffic per context element, are not priced */
        if (m->mla_output_gate)
            g += aps_gemm_time(d, prec, T, a * dv / tp, h);
        out->mla_gemm_fwd = g;
        double keys = aps_attention_keys(m, S, t->flash_attention);
        double core = 2.0 * b * sl * keys * a * ((dn + dr + dv) - 2.0 * dh) / tp;
        double rate = d->peak_flops_bf16 * aps_attention_efficiency(d, t);
        out->mla_attn_fwd = core / rate;
        out->mla_attn_bwd = core * (t->flash_attention ? APS_FLASH_BWD_RATIO
                                                       : APS_GEMM_BWD_RATIO) /
                            rate;
        /* saved: the compressed q and kv (norm inputs, up-projection
         * inputs) on every TP rank; Q, K (a (dn + dr) each), V and the
         * context (a dv) split, against GQA's Q, K, V and context */
        double keep = T * ((A + Ain) * (qr + kr) + A * dr);
        double split = T * (A * (2.0 * a * (dn + dr) + a * dv) + Ain * a * dv) /
                       tp;
        /* the output gate's product keeps the sigmoid's output and the
         * context */
        if (m->mla_output_gate)
            split += T * 2.0 * A * a * dv / tp;
        double gqa = T * (A * (a * dh + 2.0 * k * dh) + Ain * a * dh) / tp;
        out->mla_act = keep + split - gqa;
        /* mla_up_proj: the up projections re-run, Q, K, V freed */
        out->mla_up_fwd = (qr > 0 ? aps_gemm_time(d, prec, T, a * (dn + dr) / tp,
                                                  qr) : 0.0) +
                          aps_gemm_time(d, prec, T, a * (dn + dv) / tp, kr);
        out->mla_up_act = A * T * (2.0 * a * (dn + dr) + a * dv) / tp;
        out->mla_params = mla_delta_params(m, tp, &out->mla_matmul_params);
        aps_dsa_layer_cost(m, d, t, s, out);
        scale_mla_delta(out, aps_gdn_attn_share(m));
    } else if (aps_model_is_dsv4(m)) {
        aps_dsv4_layer_cost(m, d, t, s, out);
    } else if (aps_model_has_msa(m)) {
        aps_msa_layer_cost(m, d, t, s, out);
    }
    if (m->num_experts <= 0) {
        if (aps_op_sac_on(t, s))
            op_sac_recompute(m, d, t, s, out);
        return;
    }

    double E = (double)m->num_experts, K = (double)m->experts_per_token;
    double ep = (double)aps_moe_ep(s), etp = (double)aps_moe_etp(s);
    double fe = (double)m->moe_ffn_hidden_size;
    double fs = (double)m->shared_expert_ffn_hidden_size;
    double f = (double)m->ffn_hidden_size;
    double local = E / ep;
    double load = aps_moe_load_factor(t, s);
    double Tin = T / rep;                 /* tokens entering the block */
    double Te = aps_moe_expert_rows(m, t, s); /* rows the busiest rank runs */
    /* the rows the experts' saved tensors have: the static budget under
     * a rank capacity factor (padding rows included), else the busiest
     * rank's; none kept per layer when the paged stash takes them
     * (aps_moe_stage_memory prices the stash) */
    moe_sync_free(m, t, s, Tin * K * etp, out);
    double Tm = out->static_rows > 0 ? out->static_rows : Te;
    double kept_rows = out->stash_row_bytes > 0 ? 0.0 : Tm;
    /* the width the experts and the dispatcher work at, and the latent
     * projections' (0 without latent MoE; moe.c file comment) */
    double w = aps_moe_expert_width(m);
    double l = (double)m->moe_latent_size;

    /* GEMMs: minus the dense FFN, plus router, shared expert, experts,
     * the latent projections on the block's tokens */
    double g = -aps_gemm_time(d, prec, T, up * f / tp, h) -
               aps_gemm_time(d, prec, T, h, f / tp);
    g += aps_gemm_time(d, APS_PREC_BF16, Tin, E, h); /* router, bf16 */
    if (fs > 0)
        g += aps_gemm_time(d, prec, T, up * fs / tp, h) +
             aps_gemm_time(d, prec, T, h, fs / tp);
    g += aps_moe_grouped_fwd(m, d, t, s, false) +
         aps_moe_grouped_fwd(m, d, t, s, true);
    if (l > 0)
        g += aps_gemm_time(d, prec, Tin, l, h) + aps_gemm_time(d, prec, Tin, h, l);
    out->gemm_fwd = g;
    /* memory-bound: activation functions, permute and unpermute, the
     * router's softmax / sigmoid and top-k over fp32 scores */
    /* TE's fused grouped MLP runs the experts' activation in fc1's GEMM
     * epilogue (its backward in fc2's dgrad GEMM): no pass of its own */
    bool fused_mlp = t->cutedsl_fused_grouped_mlp;
    double clamp_b = eager_glu_clamp(m, t) ? APS_EAGER_GLU_CLAMP_BYTES : 0.0;
    double expert_act = fused_mlp ? 0.0 : (act_b + clamp_b) * Te * fe / etp;
    double bytes = expert_act + act_b * (T * fs / tp - T * f / tp) +
                   APS_MOE_PERMUTE_PASSES * A * Tin * K * load * w +
                   2.0 * APS_FP32_BYTES * Tin * E;
    out->membound_fwd = bytes / hbm;
    out->router_fwd = 2.0 * APS_FP32_BYTES * Tin * E / hbm;
    if (eager_expert_bias(m, t)) {
        out->bias_fwd = APS_EAGER_EXPERT_BIAS_FWD_BYTES * Te * w / hbm;
        out->bias_bwd = APS_EAGER_EXPERT_BIAS_BWD_BYTES * Te * w / hbm;
    }
    if (aps_prec_quantized(prec)) {
        /* experts: the permuted input (unfused), fc2's input from the
         * activation (fused); backward the output gradient and fc1's
         * output gradient; minus the dense FFN's (compute.c) */
        double fw = cast * Te * w + fused * Te * fe / etp -
                    fused * T * (h / rep + f / tp);
        double bw = cast * Te * w + fused * Te * up * fe / etp -
                    cast * T * h - fused * T * up * f / tp;
        /* the fused grouped MLP under MXFP8 writes fc2's input and fc1's
         * output gradient quantized from those GEMM epilogues (cuDNN
         * grouped_gemm_glu / dglu, d_dtype float8_e4m3fn); NVFP4 still
         * quantizes both apart (TransformerEngine ops/fused/grouped_mlp.py
         * @ d0067d0da l.1356-1400, l.1572-1588, l.2300-2320) */
        if (fused_mlp && prec == APS_PREC_MXFP8) {
            fw -= fused * Te * fe / etp;
            bw -= fused * Te * up * fe / etp;
        }
        /* the latent projections (plain TELinear, unfused): their inputs
         * forward (h, l), their output gradients backward (l, h) */
        if (l > 0) {
            fw += cast * Tin * (h + l);
            bw += cast * Tin * (l + h);
        }
        if (fs > 0) {
            fw += fused * T * (h / rep + fs / tp);
            bw += cast * T * h + fused * T * up * fs / tp;
        }
        out->cast_fwd = fw / hbm;
        out->cast_bwd = bw / hbm;
    }
    /* the dense FFN's TP collectives go unless a shared expert keeps
     * them (SharedExpertMLP gathers and reduce-scatters its sequence):
     * one block's, of the layer's blocks (compute.c tp_fwd: a transformer
     * layer two, a hybrid layer one) */
    aps_hybrid_counts mix;
    aps_hybrid_mix(m, &mix);
    out->drop_mlp_tp = fs > 0 ? 0.0 : 1.0 / mix.blocks;

    /* saved activations: minus the dense FFN's (memory.c), plus the
     * router scores and routing probabilities (fp32), the permuted input,
     * the experts' fc1 outputs and fc2 input (the probabilities multiply
     * the activation's output inside the experts, experts.py
     * activation_func_with_probs: nothing more saved), the shared
     * expert's */
    out->act = -wb * T * f / tp + APS_FP32_BYTES * Tin * (E + K) +
               Ain * kept_rows * w + wb * kept_rows * fe / etp +
               wb * T * fs / tp;
    /* fc2_latent_proj's input, the combined latent tokens (fc1's is the
     * block's input, saved already); Kimi K3's norm before it keeps its
     * input too (KimiK3MoE.routed_expert_norm @ 36044ad3) */
    out->act += Ain * Tin * l + (m->moe_latent_norm ? A * Tin * l : 0.0);
    /* SiTU in the experts (_weighted_situ @ 36044ad3): the fp32 product
     * with the routing weights keeps one more fp32 operand a row */
    if (m->glu_activation == APS_GLU_SITU)
        out->act += APS_FP32_BYTES * kept_rows * fe / etp;
    /* a framework that multiplies the routing scores outside the experts
     * keeps one routed-token operand, T_in k rows of h, for the scores'
     * gradient (profile.c moe_score_operand_bytes) */
    out->act += aps_recipe_moe_score_operand_bytes(t) * Tin * K * w;

    /* token dispatch and combine, each way, forward (backward the same:
     * the gradients travel back the way the tokens came) */
    double bw, alpha, comm = 0.0, buf = 0.0;
    double row = A * w; /* latent MoE: l wide (moe_layer.py l.488-493) */
    if (s->moe_token_dispatcher == APS_MOE_ALLGATHER) {
        int64_t g2 = aps_moe_ep(s) * aps_moe_etp(s);
        aps_group_link(c, 1, g2, &bw, &alpha);
        double all = row * Tin * (double)g2;
        comm = aps_allgather_time(g2, all, bw, alpha) +
               aps_reducescatter_time(g2, all, bw, alpha);
        /* a group of one gathers nothing: _gather_along_first_dim returns
         * its input when the group's world size is 1 (Megatron-LM
         * d98e8a64 megatron/core/tensor_parallel/mappings.py) */
        buf = g2 > 1 ? 2.0 * all : 0.0;
    } else {
        /* copies each token sends: one per routed expert (alltoall), one
         * per distinct destination rank (flex); spread evenly over the ep
         * ranks, of which g share the sender's NVLink domain.  Across
         * domains flex (DeepEP) sends one copy per destination domain over
         * RDMA and forwards it on NVLink (deepseek-ai/DeepEP README) */
        int64_t gd = aps_group_domain_members(c, aps_moe_etp(s), aps_moe_ep(s));
        double copies = K, remote = K * (ep - (double)gd) / ep;
        if (s->moe_token_dispatcher == APS_MOE_FLEX && ep > 1) {
            copies = ep * (1.0 - experts_miss(E, K, local));
            remote = aps_moe_flex_remote_domains(m, E, K, ep / (double)gd);
        }
        double send = row * Tin * copies * load;
        double inter = row * Tin * remote * load;
        double intra = send * ((double)gd - 1.0) / ep;
        comm = 2.0 * aps_group_alltoall_time(c, aps_moe_etp(s), aps_moe_ep(s),
                                             gd >= aps_moe_ep(s) ? send : intra,
                                             gd >= aps_moe_ep(s) ? 0.0 : inter);
        /* send and receive buffers only when tokens leave the rank: at
         * ep 1 Megatron's _AllToAll returns its input ("Bypass the
         * function if we are using only 1 GPU", Megatron-LM d98e8a64
         * megatron/core/tensor_parallel/mappings.py l.433-436) and
         * TorchTitan applies no ExpertParallel dispatch at all
         * (models/deepseek_v3/infra/parallelize.py l.90 @ 99fee81:
         * apply_moe_ep_tp only with TP or EP enabled) */
        buf = ep > 1 ? send + moe_receive_bytes(row, send, out) : 0.0;
        if (etp > 1) {
            double bw2, alpha2, gathered = row * Te;
            aps_group_link(c, 1, aps_moe_etp(s), &bw2, &alpha2);
            comm += aps_allgather_time(aps_moe_etp(s), gathered, bw2, alpha2) +
                    aps_reducescatter_time(aps_moe_etp(s), gathered, bw2,
                                           alpha2);
            buf += gathered;
        }
    }
    out->ep_fwd = comm;
    out->ep_bwd = comm;
    out->ep_buffer = buf;

    /* recompute modules: moe re-runs the whole layer (router, dispatch,
     * experts, combine: megatron/core/transformer/moe/moe_layer.py
     * checkpoints its forward) and frees everything inside it; mlp on an
     * MoE layer has no dense FFN to re-run */
    out->dense_mlp_fwd = aps_mlp_fwd_time(m, d, t, s);
    out->dense_mlp_act = aps_mlp_saved_bytes(m, t, s);
    out->moe_fwd = out->gemm_fwd + out->membound_fwd + out->cast_fwd +
                   out->bias_fwd + out->dense_mlp_fwd;
    out->moe_int_act = out->act + out->dense_mlp_act;
    out->shared_act = wb * T * fs / tp;
    out->shared_fwd = fs > 0 ? aps_gemm_time(d, prec, T, up * fs / tp, h) +
                                   aps_gemm_time(d, prec, T, h, fs / tp) +
                                   act_b * T * fs / tp / hbm
                             : 0.0;
    out->actfn_act = Ain * kept_rows * fe / etp;
    out->actfn_fwd = (act_b + clamp_b) * Te * fe / etp / hbm;
    double clamp_kept = 0.0;
    if (clamp_b > 0.0) { /* freed with the activation under moe_act */
        clamp_kept = APS_EAGER_GLU_CLAMP_SAVED * kept_rows * fe / etp;
        out->act += clamp_kept;
        out->moe_int_act += clamp_kept;
        out->actfn_act += clamp_kept;
    }
    /* fine-grained offload (offload.c): expert_fc1 the experts' fc1
     * input, moe_act their activation's input (fc1's output), the fused
     * grouped MLP every tensor it saves (both and fc2's input) */
    double fc1_in = kept_rows * w, fc1_out = kept_rows * up * fe / etp;
    out->offload_act =
        aps_offload_tensor(t, APS_OFM_EXPERT_FC1 | APS_OFM_FUSED_GROUP_MLP,
                           Ain * fc1_in, fc1_in) +
        aps_offload_tensor(t, APS_OFM_MOE_ACT | APS_OFM_FUSED_GROUP_MLP,
                           A * fc1_out + clamp_kept, fc1_out) +
        aps_offload_tensor(t, APS_OFM_FUSED_GROUP_MLP,
                           (wb - up * A) * kept_rows * fe / etp, fc1_out / up);
    /* the MoE block replaces the dense FFN aps_layer_params_tp counted,
     * its biases included */
    double dense_bias = ffn_bias_tp(m, (double)m->ffn_hidden_size,
                                    (double)m->hidden_size, tp);
    out->dense_params = moe_dense_part(m, tp) - dense_ffn_tp(m, tp) -
                        dense_bias;
    out->dense_matmul_params = out->dense_params - moe_dense_bias(m, tp) +
                               dense_bias;
    out->expert_params = moe_expert_part(m, s);
    out->expert_matmul_params = moe_expert_matmul(m, s);
    /* the router's and preprocess's kernels at the device's shortest
     * kernel each (the layer program's count, graphed or not) */
    aps_host_program k;
    aps_kernel_program_build(m, t, s, NULL, &k);
    aps_router_floor(d, &k, out);
    if (aps_op_sac_on(t, s))
        op_sac_recompute(m, d, t, s, out);
}

void aps_moe_stage(const aps_model *m, const aps_training *t,
                   const aps_strategy *s, const aps_layout *lay,
                   const aps_moe_cost *mc, int64_t i, aps_moe_stage_cost *out)
{
    memset(out, 0, sizeof *out);
    if (!aps_model_is_moe(m))
        return;
    unsigned mods = s->layer_recompute == APS_RECOMPUTE_SELECTIVE
                        ? aps_recompute_modules(t, s) : 0u;
    double L = (double)aps_layout_run_layers(lay, i);
    double rc = (double)aps_layout_run_recompute(lay, i);
    double nm = (double)aps_moe_stage_moe_layers(m, lay, i);
    double nl = aps_model_has_attn_delta(m) ? L : 0.0;
    /* recomputed layers: the rank's MoE share of them */
    double rm = L > 0 ? rc * nm / L : 0.0, rl = aps_model_has_attn_delta(m) ? rc : 0.0;
    double gm = mc->gemm_fwd, gl = mc->mla_gemm_fwd;
    double fm = gm + mc->membound_fwd + mc->cast_fwd + mc->bias_fwd;
    double fl = gl + mc->mla_attn_fwd + mc->dsa_indexer_fwd; /* no bwd */
    out->moe_layers = nm;
    out->attn_delta_fwd = nl > 0 ? fl : 0.0;
    out->router_floor_fwd = mc->router_floor_fwd;
    /* the router's and preprocess's kernels at their floor (layerprog.c
     * aps_router_floor) */
    out->comp_fwd = nm * (fm + mc->router_floor_fwd) + nl * fl;
    out->comp_bwd = nm * (2.0 * gm + 2.0 * mc->membound_fwd + mc->cast_bwd +
                          mc->bias_bwd + mc->router_floor_bwd) +
                    nl * (2.0 * gl + mc->mla_attn_bwd + mc->dsa_indexer_bwd);
    out->wgrad = nm * gm + nl * gl;
    out->recompute = rm * (fm + mc->router_floor_fwd) + rl * fl;
    out->ep_fwd = nm * mc->ep_fwd;
    out->ep_bwd = nm * mc->ep_bwd + rm * mc->ep_fwd;
    out->drop_tp_layers = nm * mc->drop_mlp_tp;
    out->drop_tp_recompute = rm * mc->drop_mlp_tp;
    /* selective recompute modules on the layers not fully recomputed */
    double km = nm - rm, kl = nl - rl;
    if (mods & APS_RCM_MOE) {
        out->recompute += km * (mc->moe_fwd + mc->router_floor_fwd);
        out->ep_bwd += km * mc->ep_fwd; /* dispatched and combined again */
    } else {
        if (mods & APS_RCM_SHARED_EXPERTS)
            out->recompute += km * mc->shared_fwd;
        if (mods & APS_RCM_MOE_ACT)
            out->recompute += km * mc->actfn_fwd;
    }
    if (mods & APS_RCM_MLP) /* compute.c's selective_fwd counted every layer */
        out->recompute -= km * mc->dense_mlp_fwd;
    /* TorchTitan's op-level checkpointing before the all-to-alls were in
     * its save list (torchtitan c4e2291, PR 1672; training.
     * sac_save_alltoall = false): the backward's recompute dispatches and
     * combines again, as under the moe module above */
    if (aps_op_sac_on(t, s) && !aps_op_sac_saves_dispatch(t))
        out->ep_bwd += km * mc->ep_fwd;
    /* what op-level checkpointing recomputes in the MoE and MLA layers
     * beyond compute.c's dense layer (0 otherwise: op_sac_recompute) */
    out->recompute += km * mc->sac_moe_fwd + kl * mc->sac_mla_fwd;
    if (mods & APS_RCM_MLA_UP_PROJ)
        out->recompute += kl * mc->mla_up_fwd;
    /* --moe-shared-expert-overlap (SharedExpertMLP on its own stream,
     * megatron/core/transformer/moe/shared_experts.py): the shared
     * expert's forward beside dispatch + combine, its backward (2 x)
     * beside theirs; the all-gather dispatcher does not overlap it */
    if (t->moe_shared_expert_overlap && mc->shared_fwd > 0 &&
        s->moe_token_dispatcher != APS_MOE_ALLGATHER) {
        double hf = mc->shared_fwd < mc->ep_fwd ? mc->shared_fwd : mc->ep_fwd;
        double sb = APS_GEMM_BWD_RATIO * mc->shared_fwd;
        double hb = sb < mc->ep_bwd ? sb : mc->ep_bwd;
        out->ep_hidden_fwd = nm * hf;
        out->ep_hidden_bwd = nm * hb;
    }
}

/** Under TorchTitan's op-level selective checkpointing (opsac.c): per
 *  MoE layer and per MLA layer, the bytes saved beyond a dense GQA
 *  layer's (memory.c's act_selective, aps_op_sac_bytes): *moe and *mla;
 *  *rebuilt what recomputing one such layer in the backward brings back
 *  beyond the dense layer's recompute: the rest of its full saved set
 *  (mc->act, mc->mla_act, the Megatron-layout count of the MoE block's
 *  and MLA's saved tensors). */
static void op_sac_kept_bytes(const aps_model *m, const aps_training *t,
                              const aps_strategy *s, const aps_moe_cost *mc,
                              double *moe, double *mla, double *rebuilt)
{
    bool has_mla = m->kv_lora_rank > 0, has_moe = m->num_experts > 0;
    double dense = aps_op_sac_layer_bytes(m, t, s, has_mla, false);
    *mla = has_mla ? dense - aps_op_sac_bytes(m, t, s) : 0.0;
    *moe = has_moe ? aps_op_sac_layer_bytes(m, t, s, has_mla, true) - dense
                   : 0.0;
    double rest = (has_moe ? mc->act - *moe : 0.0) +
                  (has_mla ? mc->mla_act - *mla : 0.0);
    *rebuilt = rest > 0.0 ? rest : 0.0;
}

/** Per MoE layer and per MLA layer, the saved bytes that selective
 *  recompute with modules mods keeps beyond the dense layer's
 *  (memory.c's act_selective, which the mlp module already relieved of
 *  the dense FFN): *moe and *mla; *rebuilt the largest one-layer set the
 *  modules free, alive again while that layer is recomputed. */
static void moe_kept_bytes(const aps_model *m, const aps_moe_cost *mc,
                           unsigned mods, double *moe, double *mla,
                           double *rebuilt)
{
    double inner = mc->moe_int_act;
    if (mods & APS_RCM_MOE)
        inner = 0.0;
    else
        inner -= ((mods & APS_RCM_SHARED_EXPERTS) ? mc->shared_act : 0.0) +
                 ((mods & APS_RCM_MOE_ACT) ? mc->actfn_act : 0.0);
    *moe = inner - ((mods & APS_RCM_MLP) ? 0.0 : mc->dense_mlp_act);
    double up = (m->kv_lora_rank > 0 && (mods & APS_RCM_MLA_UP_PROJ))
                    ? mc->mla_up_act : 0.0;
    *mla = mc->mla_act - up;
    *rebuilt = (m->num_experts > 0 ? mc->moe_int_act - inner : 0.0) + up;
}

/** Under full recompute, what the MoE and MLA layers among the largest
 *  group rank i rebuilds at once hold beyond the dense GQA layers
 *  memory.c's transient counts (group x its act_full): their whole saved
 *  sets are alive again while the group's backward runs (Megatron's
 *  CheckpointFunction re-runs the group's forward saving everything,
 *  megatron/core/tensor_parallel/random.py @ d98e8a64); per MoE layer
 *  mc->act (the MoE block in place of the dense FFN), per MLA layer
 *  mc->mla_act, for as many of the group's layers as the rank has. */
static double full_recompute_rebuilt(const aps_strategy *s,
                                     const aps_layout *lay,
                                     const aps_moe_cost *mc, int64_t i,
                                     double rc, double nm, double nl)
{
    if (s->layer_recompute != APS_RECOMPUTE_FULL || rc <= 0)
        return 0.0;
    double kept_inputs, group;
    aps_recompute_groups(s, lay, i, rc, &kept_inputs, &group);
    double moe = nm < group ? nm : group, mla = nl < group ? nl : group;
    double extra = moe * (mc->act > 0 ? mc->act : 0.0) +
                   mla * (mc->mla_act > 0 ? mc->mla_act : 0.0);
    return extra;
}

/** The MoE layers of rank i whose routed tensors the paged stash holds
 *  at its peak, the count its capture measures (moe/paged_stash.py
 *  on_save_for_backward adds a layer's tokens when autograd saves them,
 *  on_get_saved_tensor takes them off when the backward reads them):
 *  the layers that keep theirs, per micro-batch in flight, and those
 *  rebuilt at once in the backward (a full-recompute group, or the one
 *  MoE layer the moe recompute module re-runs). */
static double stash_live_layers(const aps_training *t, const aps_strategy *s,
                                const aps_layout *lay, int64_t i,
                                unsigned mods, double inflight, double nm)
{
    double L = (double)aps_layout_run_layers(lay, i);
    double rc = (double)aps_layout_run_recompute(lay, i);
    double kept = L > 0 ? (L - rc) / L : 0.0;
    double live = (mods & APS_RCM_MOE) ? 0.0 : inflight * kept * nm;
    if (s->layer_recompute == APS_RECOMPUTE_FULL && rc > 0) {
        double kept_inputs, group;
        aps_recompute_groups(s, lay, i, rc, &kept_inputs, &group);
        live += nm < group ? nm : group;
    } else if ((mods & APS_RCM_MOE) && L > rc && nm > 0) {
        live += 1.0;
    }
    /* EP overlap: the older micro-batch's layer still holds its tokens
     * while the newer one's forward stashes its own (memory.c
     * stage_activations) */
    if (t->overlap_moe_expert_parallel_comm && !(mods & APS_RCM_MOE) &&
        L > rc && nm > 0)
        live += 1.0;
    return live;
}

/** The FSDP buffers of the experts while one MoE layer runs, when FSDP
 *  shards them (edp > 1) and holds neither the whole stage gathered nor
 *  every gradient unsharded (the two cases aps_moe_stage_memory adds
 *  whole): memory.c fsdp_buffers counts the units of a dense layer, so
 *  the experts' gathered weights and their unsharded gradients before the
 *  reduce-scatter come on top, one MoE layer's local experts.  TorchTitan
 *  and AutoModel's own MoE wrap the experts as a unit of their own
 *  (fully_shard(experts) on the expert mesh, AutoModel moe/parallelizer.py
 *  apply_fsdp @ 89e3a9fdd), so the unit gathered next while they run is
 *  the next layer's attention, counted by fsdp_buffers.  A class AutoModel
 *  builds through transformers is wrapped one decoder layer a unit, the
 *  experts inside it (training.transformers_model): where MoE layers
 *  follow each other the next unit gathered holds experts too, two
 *  layers' worth. */
static void expert_unit_buffers(const aps_model *m, const aps_training *t,
                                const aps_strategy *s, const aps_layout *lay,
                                const aps_dp_plan *plan,
                                const aps_moe_cost *mc, int64_t edp,
                                double hm, aps_stage_estimate *st)
{
    if (!plan->fsdp_like || plan->mfsdp != APS_MFSDP_NONE || edp <= 1 ||
        hm <= 0)
        return;
    double units = experts_in_layer_unit(t) && hm >= 2.0 &&
                           m->moe_layer_freq <= 1
                       ? 2.0
                       : 1.0;
    if (aps_profile(t)->gather_budget <= 0 && !aps_fsdp_holds_stage(t, s, lay))
        st->mem[APS_MEM_COMM_FSDP] += aps_gathered_param_bytes(
            t, units * mc->expert_params, units * mc->expert_matmul_params);
    if (!aps_fsdp_grads_deferred(t, lay))
        st->mem[APS_MEM_COMM_FSDP] += plan->grad_reduce * mc->expert_params;
}

/** Rank i's paged stash, bytes: its CUDA buffers (aps_moe_stash_bytes)
 *  and one layer's stashed tensors at their static shape, alive beside
 *  them while the stash copies them in the forward and reloads them in
 *  the backward (stash_row_bytes); 0 without the stash. */
static double moe_stash_memory(const aps_model *m, const aps_training *t,
                               const aps_strategy *s, const aps_layout *lay,
                               const aps_moe_cost *mc, int64_t i,
                               double inflight, unsigned mods)
{
    double nm = (double)aps_moe_stage_moe_layers(m, lay, i);
    if (!(mc->stash_row_bytes > 0) || !(nm > 0))
        return 0.0;
    double live = stash_live_layers(t, s, lay, i, mods, inflight, nm);
    return aps_moe_stash_bytes(m, t, s, mc->stash_tokens, live) +
           mc->static_rows * mc->stash_row_bytes;
}

void aps_moe_stage_params(const aps_model *m, const aps_layout *lay,
                          const aps_moe_cost *mc, int64_t i,
                          aps_moe_held *out)
{
    memset(out, 0, sizeof *out);
    if (!aps_model_is_moe(m))
        return;
    double L = (double)aps_layout_run_layers(lay, i);
    double nm = (double)aps_moe_stage_moe_layers(m, lay, i);
    bool delta = aps_model_has_attn_delta(m);
    /* the layers whose weights the rank holds: not the MTP depths that
     * run another depth's (training.mtp_repeated_layer) */
    double shared = (double)aps_layout_mtp_shared_depths(lay, i);
    double hm = nm - shared * (double)mtp_depth_moe_layers(m);
    double hl = delta ? L - shared * (double)lay->mtp_depth_layers : 0.0;
    out->moe_layers = hm;
    out->psi = hm * mc->dense_params + hl * mc->mla_params;
    out->matmul = hm * mc->dense_matmul_params + hl * mc->mla_matmul_params;
    out->experts = hm * mc->expert_params;
    out->expert_matmul = hm * mc->expert_matmul_params;
    out->layer = mc->dense_params + (delta ? mc->mla_params : 0.0);
    out->layer_matmul =
        mc->dense_matmul_params + (delta ? mc->mla_matmul_params : 0.0);
    out->unit = out->layer + mc->expert_params;
    out->unit_matmul = out->layer_matmul + mc->expert_matmul_params;
}

double aps_moe_unit_growth(const aps_moe_held *h, double layers, bool experts,
                           double *matmul)
{
    double u = experts ? h->unit : h->layer;
    bool grows = h->moe_layers > 0 && (u > 0 || h->moe_layers >= layers);
    *matmul = grows ? (experts ? h->unit_matmul : h->layer_matmul) : 0.0;
    return grows ? u : 0.0;
}

void aps_moe_stage_memory(const aps_model *m, const aps_training *t,
                          const aps_strategy *s, const aps_layout *lay,
                          const aps_dp_plan *plan, const aps_moe_cost *mc,
                          int64_t i, double per_layer_kept,
                          aps_stage_estimate *st)
{
    if (!aps_model_is_moe(m))
        return;
    double L = (double)aps_layout_run_layers(lay, i);
    double rc = (double)aps_layout_run_recompute(lay, i);
    double nm = (double)aps_moe_stage_moe_layers(m, lay, i);
    double nl = aps_model_has_attn_delta(m) ? L : 0.0;
    aps_moe_held held;
    aps_moe_stage_params(m, lay, mc, i, &held);
    double hm = held.moe_layers;
    /* non-expert parameters: sharded as the dense ones */
    double psi = held.psi, matmul = held.matmul;
    double dm[APS_MEM_COUNT] = {0};
    aps_model_states(t, plan, psi, matmul, dm);
    for (int k = APS_MEM_PARAMS; k <= APS_MEM_OPTIMIZER_STATES; k++)
        st->mem[k] += dm[k];
    st->params += psi;
    /* expert parameters: their gradients and optimizer states sharded
     * over the expert-data-parallel group (distributed optimizer per
     * expert-dp group, megatron/core/distributed; TorchTitan shards the
     * experts over dp_shard x cp x tp / ep: the same size), less the
     * replicas under HSDP (aps_moe_expert_shard) */
    double pe = held.experts;
    aps_dp_plan eplan = *plan;
    int64_t edp = aps_moe_expert_shard(t, s, plan);
    eplan.shard_group = edp;
    eplan.bytes.shard_group = (double)edp;
    if (edp <= 1)
        eplan.bytes.shard_weights = eplan.bytes.shard_grads =
            eplan.bytes.shard_optimizer = 0;
    double em[APS_MEM_COUNT] = {0};
    aps_model_states(t, &eplan, pe, held.expert_matmul, em);
    for (int k = APS_MEM_PARAMS; k <= APS_MEM_OPTIMIZER_STATES; k++)
        st->mem[k] += em[k];
    st->expert_params = pe;
    /* gradients held unsharded until the last micro-batch
     * (aps_fsdp_grads_deferred: AutoModel's deferred sync, and the
     * pipeline stage's backward under TorchTitan and AutoModel, profile
     * pp_unsharded_grads): the FSDP buffers held every stage parameter's
     * unsharded fp32 gradient as the dense model counts them (memory.c
     * fsdp_buffers, on the same condition); the MoE layers' non-expert
     * difference corrects that, and experts sharded over ep_shard (edp >
     * 1: FSDP on their own mesh, AutoModel moe/parallelizer.py apply_fsdp,
     * TorchTitan's efsdp) keep theirs unsharded too; with edp = 1 FSDP
     * ignores the experts (ignored_params) and their gradients are the
     * grads category.  (Once gated on aps_recipe_defer_grad_sync too, a
     * TorchTitan DeepSeek-V3 at PP 8 kept 35 GB of a dense FFN's
     * gradients its MoE layers do not have: an out-of-sample check.) */
    if (plan->fsdp_like && plan->mfsdp == APS_MFSDP_NONE && aps_fsdp_grads_deferred(t, lay))
        st->mem[APS_MEM_COMM_FSDP] +=
            APS_FP32_BYTES * (psi + (edp > 1 ? pe : 0.0));
    /* likewise the unsharded parameters when FSDP holds the whole stage
     * gathered (aps_fsdp_holds_stage; memory.c fsdp_buffers counted the
     * dense FFN): the MoE block's non-expert part instead, and experts
     * sharded over ep_shard (edp > 1) held gathered too (AutoModel
     * moe/parallelizer.py apply_fsdp @ 89e3a9fdd: fully_shard(experts,
     * reshard_after_forward = not pp_enabled)); with edp = 1 they are no
     * FSDP parameters (ignored_params) and are counted in params.  Not
     * under a gather budget (DeepSpeed's), which caps the dense count. */
    if (plan->fsdp_like && plan->mfsdp == APS_MFSDP_NONE &&
        aps_profile(t)->gather_budget <= 0 && aps_fsdp_holds_stage(t, s, lay))
        st->mem[APS_MEM_COMM_FSDP] += aps_gathered_param_bytes(
            t, psi + (edp > 1 ? pe : 0.0),
            matmul + (edp > 1 ? held.expert_matmul : 0.0));
    expert_unit_buffers(m, t, s, lay, plan, mc, edp, hm, st);
    /* activations of the layers that keep theirs (not recomputed): the
     * MoE and MLA differences, per_layer_kept = in-flight micro-batches
     * x the fraction of the rank's layers not recomputed */
    double kept = L > 0 ? (L - rc) / L : 0.0;
    unsigned mods = s->layer_recompute == APS_RECOMPUTE_SELECTIVE
                        ? aps_recompute_modules(t, s) : 0u;
    double moe_b, mla_b, rebuilt;
    if (aps_op_sac_on(t, s))
        op_sac_kept_bytes(m, t, s, mc, &moe_b, &mla_b, &rebuilt);
    else
        moe_kept_bytes(m, mc, mods, &moe_b, &mla_b, &rebuilt);
    st->mem[APS_MEM_ACTIVATIONS] +=
        per_layer_kept * kept * (nm * moe_b + nl * mla_b);
    if (L > rc)
        st->mem[APS_MEM_ACTIVATIONS] += rebuilt;
    /* EP overlap: one layer's saved set more (memory.c stage_activations),
     * of an MoE layer: its MoE and MLA parts */
    if (t->overlap_moe_expert_parallel_comm && L > rc && nm > 0)
        st->mem[APS_MEM_ACTIVATIONS] += moe_b + (nl > 0 ? mla_b : 0.0);
    st->mem[APS_MEM_ACTIVATIONS] += full_recompute_rebuilt(s, lay, mc, i, rc,
                                                           nm, nl);
    if (nm > 0)
        st->mem[APS_MEM_COMM_EP] = mc->ep_buffer;
    st->mem[APS_MEM_ACTIVATIONS] += moe_stash_memory(m, t, s, lay, mc, i,
                                                     per_layer_kept, mods);
}

/** Forward FLOPs per sequence of one MLA layer over the GQA layer of the
 *  same widths (0 without MLA). */
static double mla_flops_delta(const aps_model *m, double S, bool causal)
{
    if (aps_model_is_dsv4(m)) /* its attention's difference (dsv4.c) */
        return aps_dsv4_flops_delta(m, S, causal);
    if (m->kv_lora_rank <= 0)
        return 0.0;
    /* num_floating_point_operations, multi_latent_attention branch:
     * q_lora_rank (h + a (dn + dr) + 1) (or h a (dn + dr)), kv_lora_rank
     * (h + a (dn + dv) + 1), h dr, a dv h per token, 2 FLOPs each;
     * core 2 S keys a ((dn + dr) + dv) per sequence */
    double h = (double)m->hidden_size, a = (double)m->num_attention_heads;
    double k = (double)m->num_query_groups, d = (double)m->head_dim;
    double qr = (double)m->q_lora_rank, kr = (double)m->kv_lora_rank;
    double dn = (double)m->qk_nope_head_dim;
    double dr = (double)m->qk_rope_head_dim, dv = (double)m->v_head_dim;
    double q = qr > 0 ? qr * (h + a * (dn + dr) + 1.0) : h * a * (dn + dr);
    double mla = q + kr * (h + a * (dn + dv) + 1.0) + h * dr + a * dv * h;
    double gqa = h * a * d + 2.0 * h * k * d + a * d * h;
    double keys = aps_attention_keys(m, S, causal);
    return 2.0 * S * (mla - gqa) + 2.0 * S * keys * a * (dn + dr + dv - 2.0 * d);
}

double aps_moe_ffn_flops_delta(const aps_model *m, double S)
{
    double h = (double)m->hidden_size, up = m->mlp == APS_MLP_SWIGLU ? 3.0 : 2.0;
    /* routed experts at their width (training.py l.852-858: l f_e k and
     * the projections' 2 h l with latent MoE) */
    double ffn = up * aps_moe_expert_width(m) * (double)m->experts_per_token *
                     (double)m->moe_ffn_hidden_size +
                 up * h * ((double)m->shared_expert_ffn_hidden_size -
                           (double)m->ffn_hidden_size);
    if (m->moe_latent_size > 0)
        ffn += 2.0 * h * (double)m->moe_latent_size;
    return 2.0 * S * ffn;
}

double aps_moe_flops_layer_delta(const aps_model *m, double S, bool causal,
                                 int64_t i)
{
    if (!aps_model_is_moe(m))
        return 0.0;
    return mla_flops_delta(m, S, causal) +
           (aps_model_is_moe_layer(m, i) ? aps_moe_ffn_flops_delta(m, S) : 0.0);
}

double aps_moe_flops_delta(const aps_model *m, double S, bool causal)
{
    if (!aps_model_is_moe(m))
        return 0.0;
    /* every layer's MLA difference, each MoE layer's expert difference
     * (aps_moe_flops_layer_delta, summed without redoing the MLA terms) */
    double moe_layers = (double)aps_model_moe_layers_in(m, 0, m->num_layers);
    return (double)m->num_layers * mla_flops_delta(m, S, causal) +
           (m->num_experts > 0 ? moe_layers * aps_moe_ffn_flops_delta(m, S) : 0.0);
}
