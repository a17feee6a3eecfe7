/*
 * memory.c -- what a device holds: model states (MODELING.md s.3.1) and the
 * activations one layer saves for backward (s.3.2).
 *
 * Activation derivation, per layer, per micro-batch, per device, in bytes.
 * s' = s / c (context parallel), b micro-batch size, t TP degree,
 * A = 2 (bf16/fp16 activations).  "rep" tensors are replicated across TP
 * ranks unless sequence parallelism splits them along the sequence (/t).
 *
 *   tensor saved for backward          bytes                     split
 *   input of norm 1                    A s' b h                  rep
 *   input of QKV linear (norm 1 out)   Ain s' b h                rep
 *   Q (after RoPE)                     A s' b a d                /t
 *   K, V                               A s' b k d each           /t
 *   [qk_norm] Q, K before their norms  A s' b (a + k) d          /t
 *   attention core, non-flash:
 *     softmax output                   A a s' s b                /t
 *     dropout mask, dropout output     (1 + A) a s' s b          /t (dropout)
 *   attention core, flash:
 *     log-sum-exp (fp32)               4 a s' b                  /t
 *   context (input of out-proj)        Ain s' b a d              /t
 *   dropout mask after attention       1 s' b h                  rep (dropout)
 *   input of norm 2                    A s' b h                  rep
 *   input of MLP (norm 2 out)          Ain s' b h                rep
 *   GELU MLP: fc1 out, fc2 in          (A + Ain) s' b f          /t
 *   SwiGLU MLP: gate, up, product      (2 A + Ain) s' b f        /t
 *   dropout mask after MLP             1 s' b h                  rep (dropout)
 *
 * Ain = A, except 1 with fp8 under TransformerEngine (megatron, deepspeed
 * profiles), which saves the fp8 inputs of its GEMMs.  Under TorchTitan
 * (fsdp2) with SP the QKV and MLP inputs are saved all-gathered, not /t
 * (gemm_input_bytes below).
 * With GPT-3 shapes (k = a, a d = h, f = 4h, GELU, LayerNorm, dropout,
 * no flash) this sums to s b h (34 + 5 a s / h) without parallelism,
 * s b h (10 + 24/t + 5 a s/(h t)) with TP, s b h (34/t + 5 a s/(h t)) with
 * TP and SP: Korthikanti et al. 2022 (arXiv:2205.05198) Table 2 and
 * eqs. 1-3.  Norm statistics (fp32 mean/rstd, 4 s b each) are left out as
 * the paper does.
 *
 * Selective recompute drops the attention-core terms (softmax/dropout
 * outputs, or the flash LSE): Megatron's --recompute-granularity selective.
 * With the fsdp2 profile "selective" is TorchTitan's op-level selective
 * checkpointing instead (aps_op_sac_bytes, opsac.c).  Full recompute keeps only the layer input,
 * A s' b h, sequence-split with SP (Megatron checkpoints the SP-sharded
 * hidden state; Table 2's "2sbh" is the t = 1 / no-SP case).
 */
#include <math.h>
#include "internal.h"

double aps_mlp_bytes_per_width(const aps_model *m, const aps_training *t)
{
    /* fc1 outputs (gate and up, or the GELU input) in bf16, and the fc2
     * input (their product, or the GELU output); an unfused SwiGLU --
     * LlamaMLP's down_proj(act_fn(gate_proj(x)) * up_proj(x)), Megatron's
     * legacy swiglu F.silu(x[0]) * x[1] on the chunks of the fc1 output
     * (FlagScale 26cd664 megatron/model/transformer.py:142-144),
     * TorchTitan's eager FeedForward and GroupedExperts (recipe.c) --
     * also keeps the SiLU's output: 4 tensors of the width where the fused
     * SwiGLU keeps 3 */
    bool swiglu = m->mlp == APS_MLP_SWIGLU;
    /* Kimi K3's SiTU in fp32 eager ops (SituAndMul @ 36044ad3): tanh's
     * output, beta times it, the sigmoid's output, their product, the
     * bounded up projection's tanh output and itself, each fp32 and kept
     * by the op after it; the bf16 fc1 outputs are not kept (float()
     * keeps nothing) */
    if (swiglu && m->glu_activation == APS_GLU_SITU)
        return APS_SITU_SAVED_FP32 * APS_FP32_BYTES + aps_gemm_input_bytes(t);
    return (swiglu ? 2.0 : 1.0) * APS_ACT_BYTES + aps_gemm_input_bytes(t) +
           (swiglu && aps_recipe_unfused_swiglu(t) ? APS_ACT_BYTES : 0.0);
}

double aps_mlp_saved_bytes(const aps_model *m, const aps_training *t,
                           const aps_strategy *s)
{
    double T = (double)t->seq_length / (double)s->cp_degree *
               (double)s->micro_batch_size;
    return aps_mlp_bytes_per_width(m, t) * T *
           (double)m->ffn_hidden_size / (double)s->tp_degree;
}

/** Bytes of one of the two column-parallel GEMM inputs a layer saves (the
 *  QKV input, the MLP input) per micro-batch on one rank.  Megatron's
 *  sequence-parallel linears save the sequence shard and all-gather it
 *  again in the backward (tensor_parallel/layers.py
 *  LinearWithGradAccumulationAndAsyncCommunication): Ain s' b h / t.
 *  TorchTitan's save what PrepareModuleInput all-gathered to Replicate()
 *  in front of the ColwiseParallel wq/wk/wv and w1/w3: the whole
 *  sequence, in the dtype of the gather (aps_tp_gather_bytes: float8
 *  when Float8ColwiseParallel casts before it), s' b h
 *  (torchtitan parallelize_llama.py apply_tp @ 9dec370; profile
 *  sp_saves_gathered). */
static double gemm_input_bytes(const aps_training *t, const aps_strategy *s,
                               double sl, double h)
{
    double b = (double)s->micro_batch_size;
    bool sp = s->tp_degree > 1 && s->sequence_parallel;
    if (sp && aps_profile(t)->sp_saves_gathered)
        return aps_tp_gather_bytes(t) * sl * b * h;
    return aps_gemm_input_bytes(t) * sl * b * h /
           (sp ? (double)s->tp_degree : 1.0);
}

/** The saved set of the largest kind of layer in the mix w (bytes):
 *  `replicated` is a layer's norm input and output tensors (one block in a
 *  hybrid Mamba-2 pattern, whose layers are attention, an MLP or Mamba-2;
 *  both blocks in a Gated DeltaNet model, whose layers are the MLP with
 *  attention or the delta rule); `mean` the mix's mean layer, returned for
 *  a model whose layers are all alike.  An MoE layer counts as its dense
 *  MLP here: moe.c adds its block's difference to the transient. */
static double largest_layer_set(const aps_hybrid_counts *w, bool hybrid,
                                double replicated, double attn, double mlp,
                                double mamba, double gdn, double mean)
{
    double best = 0.0;
    if (hybrid) { /* one block a layer */
        if (w->attn_share > 0) best = fmax(best, replicated + attn);
        if (w->mlp_share > 0) best = fmax(best, replicated + mlp);
        if (w->mamba_share > 0) best = fmax(best, replicated + mamba);
        return best;
    }
    if (w->gdn_share > 0) {
        double base = replicated + w->mlp_share * mlp;
        if (w->attn_share > 0) best = fmax(best, base + attn);
        return fmax(best, base + gdn);
    }
    return mean;
}

/** Bytes one attention block of kind x saves over T tokens on one of tp
 *  ranks beyond its norm: Q, K, V (two tensors also when V is K's
 *  projection output, through its own norm), the context (the output
 *  projection's input), the Q/K norms' inputs, the output gate's sigmoid
 *  and context. */
static double attn_saved_bytes(const aps_model *m, const aps_training *t,
                               double T, double tp, const aps_attn_kind *x)
{
    /* Inputs of the linear layers (QKV, out-proj, fc1, fc2): fp8 with
     * TransformerEngine, which saves the fp8 cast it computed with for the
     * weight-gradient GEMM (transformer_engine/pytorch/module/
     * layernorm_linear.py, linear.py: saved inputmat); bf16 otherwise. */
    double A = APS_ACT_BYTES, Ain = aps_gemm_input_bytes(t);
    double a = x->a, k = aps_kv_core_groups(x->k, tp), d = x->d;
    double attn = A * T * (a * d + k * d + k * x->dv) / tp /* Q, K, V */
                  + Ain * T * a * x->dv / tp;              /* context */
    if (m->qk_norm)
        attn += A * T * (a + k) * d / tp;
    if (m->attention_output_gate) /* the gate's sigmoid and the context */
        attn += 2.0 * A * T * a * d / tp;
    if (m->attention_head_gate) /* the gate's input and the context */
        attn += A * T * a * (d + 1.0) / tp;
    return attn;
}

/** What the core_attn and attn_proj offload modules move to host of one
 *  attention layer of kind x (offload.c): *qkv the core's inputs Q, K, V
 *  and the context (attn_proj: the output projection's input, whose
 *  storage the core's saved output shares), *core the core's own saved
 *  tensors (core_layer bytes of core_elems elements each), which the
 *  core_attn recompute module frees instead. */
static void attn_offload_bytes(const aps_training *t, double T, double tp,
                               const aps_attn_kind *x, double core_layer,
                               double core_elems, double *qkv, double *core)
{
    double A = APS_ACT_BYTES, Ain = aps_gemm_input_bytes(t);
    double kc = aps_kv_core_groups(x->k, tp);
    double q = T * x->a * x->d / tp, k = T * kc * x->d / tp;
    double v = T * kc * x->dv / tp, ctx = T * x->a * x->dv / tp;
    *qkv = aps_offload_tensor(t, APS_OFM_CORE_ATTN, A * q, q) +
           aps_offload_tensor(t, APS_OFM_CORE_ATTN, A * k, k) +
           aps_offload_tensor(t, APS_OFM_CORE_ATTN, A * v, v) +
           aps_offload_tensor(t, APS_OFM_ATTN_PROJ, Ain * ctx, ctx);
    *core = aps_offload_tensor(t, APS_OFM_CORE_ATTN, core_layer, core_elems);
}

void aps_layer_activations(const aps_model *m, const aps_training *t,
                           const aps_strategy *s, const aps_hybrid_counts *mix,
                           aps_layer_cost *out)
{
    double A = APS_ACT_BYTES;
    double tp = (double)s->tp_degree;
    double sl = (double)t->seq_length / (double)s->cp_degree; /* s' */
    double S = (double)t->seq_length;
    double b = (double)s->micro_batch_size;
    double h = (double)m->hidden_size, a = (double)m->num_attention_heads;
    double rep = (s->tp_degree > 1 && s->sequence_parallel) ? tp : 1.0;
    double sbh_rep = sl * b * h / rep;
    double drop = aps_recipe_hidden_dropout(t) ? 1.0 : 0.0;
    double adrop = aps_recipe_attention_dropout(t) ? 1.0 : 0.0;

    double gemm_in = gemm_input_bytes(t, s, sl, h); /* QKV, MLP inputs */
    /* per block (hybrid.c: a transformer layer is two): the norm's input,
     * its output (the first GEMM's input, gemm_input_bytes), the dropout
     * mask */
    aps_hybrid_counts w;
    if (mix != NULL)
        w = *mix;
    else
        aps_hybrid_mix(m, &w);
    double replicated = w.blocks * ((A + drop * APS_MASK_BYTES) * sbh_rep +
                                    gemm_in);
    double attn = 0.0; /* the mean layer's, kind by kind */
    aps_attn_kind kind[APS_ATTN_KINDS];
    int nk = aps_attn_kinds(m, kind);
    double a_mean = 0.0; /* query heads of the mean layer */
    for (int i = 0; i < nk; i++) {
        attn += kind[i].share * attn_saved_bytes(m, t, sl * b, tp, &kind[i]);
        a_mean += kind[i].share * kind[i].a;
    }
    a = a_mean;
    double mlp = aps_mlp_saved_bytes(m, t, s); /* unfused SwiGLU included */
    /* Hugging Face's eager modules (transformers 00227283 models/llama/
     * modeling_llama.py, the code of the 4.3x releases): LlamaRMSNorm runs
     * hidden_states.to(torch.float32), whose pow(2) and multiply keep that
     * fp32 copy (4 bytes) besides the bf16 normalized tensor the weight
     * multiplies (the table's norm input, A) and the output (the GEMM
     * input) */
    if (t->hf_eager_layer)
        replicated += w.blocks * APS_FP32_BYTES * sbh_rep;
    double mamba = w.mamba_share > 0 ? aps_mamba_saved_bytes(m, t, sl * b, tp)
                                     : 0.0;
    double gdn = w.gdn_share > 0 ? aps_gdn_saved_bytes(m, t, sl * b, tp) : 0.0;
    double split = w.attn_share * attn + w.mlp_share * mlp +
                   w.mamba_share * mamba + w.gdn_share * gdn;

    double core_layer; /* an attention layer's core */
    if (t->flash_attention)
        core_layer = APS_FP32_BYTES * a * sl * b / tp;
    else
        core_layer = (A + adrop * (APS_MASK_BYTES + A)) * a * sl * S * b / tp;
    double core = w.attn_share * core_layer;
    /* fine-grained offload of the attention modules (offload.c) */
    out->offload_attn = out->offload_core = 0.0;
    if (t->offload_modules & APS_OFM_CORE_ATTN) {
        double elems = t->flash_attention ? a * sl * b / tp
                                          : a * sl * S * b / tp;
        for (int i = 0; i < nk; i++) { /* the core per kind: its heads */
            double r = a > 0 ? kind[i].a / a : 0.0, qkv, kc;
            attn_offload_bytes(t, sl * b, tp, &kind[i], r * core_layer,
                               r * elems, &qkv, &kc);
            out->offload_attn += w.attn_share * kind[i].share * qkv;
            out->offload_core += w.attn_share * kind[i].share * kc;
        }
    }

    /* Kimi K3's attention residuals: the mixes' fp32 values and keys,
     * whole on every rank (attnres.c); no recompute module drops them */
    double attnres = aps_attnres_saved_per_token(m) * sl * b;
    out->act_full = replicated + split + core + attnres;
    out->act_full_max = largest_layer_set(&w, aps_model_is_hybrid(m), replicated,
                                          attn + core_layer, mlp, mamba, gdn,
                                          out->act_full - attnres) +
                        attnres;
    /* selective: what the recompute modules keep (aps_recompute_modules):
     * core_attn drops the core's, mlp the MLP's inner activations (fc1
     * outputs, fc2 input), layernorm the norms' outputs (the QKV and MLP
     * GEMM inputs); each module's input stays saved */
    unsigned mods = aps_recompute_modules(t, s);
    out->act_selective =
        aps_profile(t)->op_sac_selective
            ? aps_op_sac_bytes(m, t, s) + attnres
            : out->act_full - ((mods & APS_RCM_CORE_ATTN) ? core : 0.0) -
                  ((mods & APS_RCM_MLP) ? w.mlp_share * mlp : 0.0) -
                  ((mods & APS_RCM_LAYERNORM) ? w.blocks * gemm_in : 0.0);
    /* under full recompute a layer keeps its input; Kimi K3's layers also
     * their block stack, and its output mix its saved set (attnres.c) */
    out->act_input = A * sbh_rep + aps_attnres_kept_per_token(m) * sl * b;
}

double aps_layer_activation_bytes(const aps_model *m, const aps_training *t,
                                  const aps_strategy *s, aps_recompute rc)
{
    aps_layer_cost lc;
    aps_layer_activations(m, t, s, NULL, &lc);
    switch (rc) {
    case APS_RECOMPUTE_SELECTIVE: return lc.act_selective;
    case APS_RECOMPUTE_FULL: return lc.act_input;
    default: return lc.act_full;
    }
}

void aps_model_state_bytes(const aps_training *t, const aps_strategy *s,
                           aps_state_bytes *out)
{
    aps_dp_plan plan;
    aps_dp_plan_build(t, s, &plan);
    *out = plan.bytes;
}

void aps_dp_plan_build(const aps_training *t, const aps_strategy *s,
                       aps_dp_plan *plan)
{
    const aps_framework_profile *fw = aps_profile(t);
    aps_state_bytes *by = &plan->bytes;
    by->weight = fw->weight_bytes;
    by->grad = aps_recipe_grad_bytes(t);
    plan->grad_reduce = aps_recipe_grad_reduce_bytes(t);
    by->optimizer = t->optimizer == APS_OPT_SGD ? fw->optimizer_bytes_sgd
                                                : fw->optimizer_bytes_adam;
    /* apex DistributedFusedAdam store_param_remainders (NeMo 1.x with
     * megatron_amp_O2 and bf16, nemo/collections/nlp/models/
     * language_modeling/megatron_base_model.py): the fp32 master is the
     * bf16 weight plus a 16-bit remainder, 2 bytes less per parameter */
    if (t->store_param_remainders && by->weight == APS_ACT_BYTES)
        by->optimizer -= APS_ACT_BYTES;
    /* Megatron's precision-aware optimizer with --exp-avg-dtype and
     * --exp-avg-sq-dtype bf16 (NeMo's DeepSeek-V3 recipe,
     * nemo/collections/llm/recipes/deepseek_v3.py @ 8cfedd72): Adam's two
     * moments in bf16, the fp32 master kept */
    if (t->exp_avg_bf16 && t->optimizer != APS_OPT_SGD)
        by->optimizer -= APS_ADAM_MOMENTS * (APS_FP32_BYTES - APS_ACT_BYTES);
    /* bf16 weights with no master (training.bf16_weights, AutoModel): the
     * gradient in the parameters' dtype, the optimizer's buffers too */
    if (t->bf16_weights) {
        by->weight = APS_ACT_BYTES; /* by->grad: aps_recipe_grad_bytes */
        by->optimizer = (t->optimizer == APS_OPT_SGD ? 1.0 : APS_ADAM_MOMENTS) *
                        APS_ACT_BYTES;
    }
    int64_t R = s->dp_degree, S = s->fsdp_degree, c = s->cp_degree;
    /* TorchTitan shards over dp_shard x cp whenever CP is on, even with
     * dp_shard = 1 (the profile's shard_over_cp) */
    if (S > 1 || (aps_profile(t)->shard_over_cp && c > 1)) {
        /* FSDP / HSDP: everything sharded over S (and the CP ranks, which
         * hold the same parameters: TorchTitan's dp_shard_cp mesh). */
        plan->shard_group = S * c;
        plan->replicate = R;
        plan->dp_group = S * c;
        plan->fsdp_like = true;
        by->shard_weights = by->shard_grads = by->shard_optimizer = 1;
    } else {
        int64_t z = s->zero_stage, I = t->distributed_optimizer_instances;
        /* Megatron's partial distributed optimizer: I instances of R c / I
         * consecutive ranks, each sharding the optimizer (parallel_state.py
         * :922-1000 @ d98e8a64; check.c checks I divides R c) */
        if (z != 1 || I < 1 || (R * c) % I != 0)
            I = 1;
        plan->shard_group = R * c / I;
        plan->replicate = I;
        plan->dp_group = R * c;
        plan->fsdp_like = z >= 3 && R * c > 1;
        by->shard_optimizer = z >= 1;
        by->shard_grads = z >= 2;
        by->shard_weights = z >= 3;
    }
    by->shard_group = (double)plan->shard_group;
    plan->mfsdp = aps_mfsdp_sharding_of(t, s);
}

/**
 * Bytes of persistent model state for psi parameters (matmul_psi of them
 * in linear layers) under the plan.
 *
 * Quantized GEMMs under TransformerEngine (megatron, deepspeed profiles)
 * keep the quantized copies of each weight, both layouts
 * (aps_weight_copy_bytes), across the micro-batches of a step
 * (is_first_microbatch caching) -- only for weights the rank holds whole:
 * FSDP-sharded weights are quantized per gathered unit, counted with the
 * gather buffers (aps_stage_memory).  With fp8_param_gather a framework
 * whose weights are a compute copy beside an fp32 master (weight bytes
 * below 4: Megatron, DeepSpeed) holds the matrices in the quantized
 * format instead (Megatron --fp8-param-gather: the parameters are TE
 * Float8Tensors, the transpose made from them: both layouts for a whole
 * weight, one for a shard), sharded as the weights are; with an fp32 master as the weight (PyTorch FSDP) only the gather
 * changes.
 */
void aps_model_states(const aps_training *t, const aps_dp_plan *plan,
                      double psi, double matmul_psi, double mem[])
{
    const aps_state_bytes *by = &plan->bytes;
    double G = (double)plan->shard_group;
    double wshard = by->shard_weights ? G : 1.0;
    double copy = aps_weight_copy_bytes(t);
    mem[APS_MEM_PARAMS] = psi * by->weight / wshard;
    if (aps_recipe_fp8_param_gather(t) && by->weight < APS_FP32_BYTES)
        /* a whole weight keeps both layouts (the transpose cached across
         * micro-batches); a shard keeps the gathered layout only */
        mem[APS_MEM_PARAMS] +=
            matmul_psi * ((by->shard_weights ? aps_quantized_bytes(t->precision)
                                             : copy) - by->weight) / wshard;
    else if (copy > 0 && aps_profile(t)->transformer_engine &&
             !by->shard_weights)
        mem[APS_MEM_PARAMS] += matmul_psi * copy;
    mem[APS_MEM_GRADS] = psi * by->grad / (by->shard_grads ? G : 1.0);
    mem[APS_MEM_OPTIMIZER_STATES] =
        psi * by->optimizer / (by->shard_optimizer ? G : 1.0);
}

/** GPUs of one node in a process group of g ranks whose consecutive
 *  members are `stride` ranks apart, on nodes of G GPUs (ranks placed in
 *  Megatron's order, TP innermost, then CP, DP, PP). */
static int64_t group_local(int64_t g, int64_t stride, int64_t G)
{
    if (G < 1 || stride >= G)
        return 1;
    int64_t per_node = G / (stride > 0 ? stride : 1);
    return per_node < g ? per_node : g;
}

/** Bytes of one NCCL communicator of g ranks, `local` of them in this
 *  node: its channel buffers (device.nccl_comm_bytes) plus, on NVSwitch
 *  multicast parts, the NVLS buffers NCCL sets up for a communicator with
 *  more than 2 GPUs in the node, nccl_nvls_bytes_per_rank per GPU of the
 *  node (src/transport/nvls.cc: nChannels * 2 * buffSize * nHeads, a head
 *  per GPU).  Counted for communicators inside one node only: NCCL 2.20
 *  sets NVLS up on single-node communicators only (v2.20.5-1 nvls.cc
 *  l.240, comm->nNodes > 1 returns), 2.17-2.19 and 2.21 on also across
 *  nodes (then a lower bound). */
static double comm_bytes(const aps_cluster *c, int64_t g, int64_t local)
{
    if (g <= 1)
        return 0.0;
    double b = c->device.nccl_comm_bytes;
    if (local > 2 && local == g)
        b += c->device.nccl_nvls_bytes_per_rank * (double)local;
    return b;
}

/** Bytes of the NCCL communicators rank i creates, outside PyTorch's
 *  allocator: one per process group of size > 1 it communicates over --
 *  TP, CP, PP, the data-parallel (sharding) group, HSDP's replicate
 *  group, EP and expert DP -- plus the framework's own
 *  (aps_framework_profile): Megatron's gradient-norm group (the world,
 *  or one optimizer instance of it, under the distributed optimizer, else
 *  TP x PP) and, with PP and tied
 *  embeddings, the embedding group of the first and last stage; with
 *  training.dp_loss_group the DP group the loss is reported over. */
static double nccl_bytes(const aps_model *m, const aps_cluster *c,
                         const aps_training *t, const aps_strategy *s,
                         const aps_dp_plan *plan, const aps_layout *lay,
                         int64_t i)
{
    const aps_framework_profile *fw = aps_profile(t);
    int64_t G = c->devices_per_node;
    int64_t tp = s->tp_degree, cp = s->cp_degree, pp = s->pp_degree;
    int64_t dp = s->dp_degree * s->fsdp_degree; /* R S */
    int64_t world = tp * cp * dp * pp;
    double b = 0.0;
    b += comm_bytes(c, tp, group_local(tp, 1, G));
    b += comm_bytes(c, cp, group_local(cp, tp, G));
    b += comm_bytes(c, pp, group_local(pp, tp * cp * dp, G));
    /* the sharding / data-parallel group: DP with CP folded in (R c or
     * S c ranks) starts next to TP */
    b += comm_bytes(c, plan->dp_group, group_local(plan->dp_group, tp, G));
    if (plan->fsdp_like && plan->replicate > 1)
        b += comm_bytes(c, plan->replicate,
                        group_local(plan->replicate, tp * plan->dp_group, G));
    /* the partial distributed optimizer's intra- and inter-instance groups
     * beside the whole one (parallel_state.py:984-1000) */
    if (!plan->fsdp_like && plan->replicate > 1) {
        int64_t S = plan->shard_group;
        b += comm_bytes(c, S, group_local(S, tp, G));
        b += comm_bytes(c, plan->replicate,
                        group_local(plan->replicate, tp * S, G));
    }
    int64_t ep = aps_moe_ep(s);
    if (ep > 1)                                        /* expert parallel */
        b += comm_bytes(c, ep, group_local(ep, tp * cp, G));
    if (ep > 1 && aps_moe_edp(s) > 1)                  /* expert DP */
        b += comm_bytes(c, aps_moe_edp(s),
                        group_local(aps_moe_edp(s), tp * cp * ep, G));
    if (fw->grad_stats_world_group) {
        /* under the distributed optimizer the intra-instance group: the
         * world, or world / I ranks with I instances (Megatron-LM d98e8a64
         * parallel_state.py l.1563-1577, optimizer/__init__.py l.671-674;
         * Megatron-FSDP's HSDP l.1100-1104) */
        int64_t inst = plan->replicate > 1 ? plan->replicate : 1;
        if (plan->bytes.shard_optimizer)
            b += comm_bytes(c, world / inst, group_local(world / inst, 1, G));
        else if (tp * pp > 1) /* TP x PP: a group of its own */
            b += comm_bytes(c, tp * pp,
                            group_local(tp, 1, G) *
                                group_local(pp, tp * cp * dp, G));
    }
    /* the reported loss all-reduced over the DP group without CP
     * (Megatron-LM core_v0.6.0 pretrain_gpt.py:135 and training/utils.py:
     * 100, average_losses_across_data_parallel_group; core_v0.7.0-0.10.0
     * pretrain_gpt.py all_reduce(reporting_loss, group=mpu.
     * get_data_parallel_group())): parallel_state.py makes it apart from
     * the DP-with-CP group the gradients use even when CP is 1 (l.289-301
     * @ core_v0.6.0) */
    if (t->dp_loss_group)
        b += comm_bytes(c, dp, group_local(dp, tp * cp, G));
    if (fw->tied_embedding_group && m->tie_word_embeddings && lay->p > 1 &&
        (i == 0 || i == lay->p - 1))
        b += comm_bytes(c, 2, group_local(2, tp * cp * dp * (pp - 1), G));
    return b;
}

/** Bytes of one micro-batch's hidden states on one device: s' b h, split
 *  over the TP ranks under SP. */
static double hidden_bytes_rep(const aps_model *m, const aps_strategy *s,
                               const aps_layout *lay)
{
    double tp = (double)lay->t, h = (double)m->hidden_size;
    double sl = (double)lay->s_local, b = (double)lay->b;
    double rep = (lay->t > 1 && s->sequence_parallel) ? tp : 1.0;
    return sl * b * h / rep;
}

/** Full recompute of rc layers on rank i: layer inputs kept (one per
 *  layer; uniform: one per group of recompute_num_layers layers of each
 *  model chunk) and the layers of the largest group rebuilt at once in
 *  the backward. */
void aps_recompute_groups(const aps_strategy *s, const aps_layout *lay,
                          int64_t i, double rc, double *kept_inputs,
                          double *group)
{
    *kept_inputs = rc;
    *group = 1.0;
    if (!(rc > 0 && s->recompute_method == APS_RECOMPUTE_UNIFORM))
        return;
    int64_t n = s->recompute_num_layers[i] > 0 ? s->recompute_num_layers[i]
                                               : 1;
    *kept_inputs = 0.0;
    *group = 0.0;
    for (int64_t k = 0; k < lay->v; k++) {
        int64_t ck = aps_layout_chunk(lay, i, k);
        *kept_inputs += (double)((ck + n - 1) / n);
        double g = (double)(ck < n ? ck : n);
        *group = g > *group ? g : *group;
    }
}

/** Hidden-state-sized tensors one multi-token-prediction depth saves for
 *  its backward besides its transformer layer's (multi_token_prediction
 *  .py @ d98e8a64): the enorm and hnorm inputs (1 each), the
 *  concatenated 2h-wide eh_proj input (2), the final-norm and output-layer
 *  inputs (1 each). */
#define APS_MTP_SAVED_HIDDEN 6.0

/** Of APS_MTP_SAVED_HIDDEN, the hidden-state-sized tensors a depth rebuilds
 *  under uniform full recompute: its checkpoint (_checkpointed_forward of
 *  _proj_and_transformer_layer, multi_token_prediction.py:1361-1424,
 *  1621-1629 @ d98e8a64) keeps its inputs, the enorm and hnorm inputs
 *  already counted, and rebuilds the concatenated 2h-wide eh_proj input
 *  (2) with the transformer layer, whose own input is then not kept. */
#define APS_MTP_RECOMPUTED_HIDDEN 2.0

/** Micro-batches whose activations rank i holds at its peak, per kind of
 *  tensor.  `rank`: the rank's decoder layers' (aps_layout_inflight, each
 *  chunk by its share of them; reported as st->inflight_microbatches);
 *  `last`: its last model chunk's (aps_layout_chunk_inflight: one or two
 *  under interleaved 1F1B, which runs a last-chunk forward's backward
 *  next), for the tensors of that chunk alone -- the MTP depths' layers,
 *  the final norm's and the output layer's inputs (0 on other ranks);
 *  `all` and `kept`: the two weighted by layers (MTP layers at `last`),
 *  over all layers (for the recomputed layers' inputs) and over the layers
 *  that keep their activations (for the kept sets, which the MoE terms
 *  read too: moe.c aps_moe_stage_memory). */
typedef struct {
    double rank, last, all, kept;
} stage_inflight;

static void stage_inflight_counts(const aps_layout *lay, int64_t i,
                                  stage_inflight *c)
{
    c->rank = c->all = c->kept = aps_layout_inflight(lay, i);
    c->last = i == aps_layout_last_rank(lay)
                  ? aps_layout_chunk_inflight(lay, i, lay->v - 1)
                  : 0.0;
    double mtp_l = (double)aps_layout_mtp_layers(lay, i);
    if (!(mtp_l > 0))
        return;
    double main_l = (double)lay->layers[i];
    double mtp_k = lay->mtp_recompute ? 0.0 : mtp_l;
    double main_k = main_l - (double)lay->recompute[i];
    if (main_k + mtp_k > 0)
        c->kept = (main_k * c->rank + mtp_k * c->last) / (main_k + mtp_k);
    c->all = (main_l * c->rank + mtp_l * c->last) / (main_l + mtp_l);
}

/** Activations held by rank i at its peak: in-flight micro-batches times
 *  the rank's saved activations per micro-batch (stage_inflight_counts),
 *  plus the transient of recompute; sets st->inflight_microbatches and
 *  *kept_inflight (the count of the sets its kept layers save). */
static double stage_activations(const aps_model *m, const aps_training *t,
                                const aps_strategy *s, const aps_layout *lay,
                                const aps_layer_cost *lc, int64_t i,
                                aps_stage_estimate *st, double *kept_inflight)
{
    double sbh_rep = hidden_bytes_rep(m, s, lay);
    double layers = (double)aps_layout_run_layers(lay, i);
    double rc = (double)aps_layout_run_recompute(lay, i);
    double per_layer = s->layer_recompute == APS_RECOMPUTE_SELECTIVE
                           ? lc->act_selective : lc->act_full;
    double kept_inputs, group;
    aps_recompute_groups(s, lay, i, rc, &kept_inputs, &group);
    /* activation offload: the saved activations of the first offloaded
     * layers leave the device (TE get_cpu_offload_context: layer i's copy
     * runs during layer i + 1's forward and comes back during the
     * backward of the layer after it).  The peak, at the end of the
     * forward, holds the other layers only: the copies are done by then,
     * and in the backward the offloaded layers return after the later
     * layers' activations are freed. */
    double off = (double)aps_recipe_offload_layers(
        t, lay->layers[i] - lay->recompute[i], lay->v);
    double per_mb_kept = (layers - rc - off) * per_layer;
    double per_mb = kept_inputs * lc->act_input;
    if (i == 0 && aps_recipe_hidden_dropout(t))
        per_mb += APS_MASK_BYTES * sbh_rep;        /* embedding dropout */
    /* final-norm, output inputs; MTP's per depth: tensors of the last
     * model chunk, held for its micro-batches in flight, not the rank's
     * (interleaved 1F1B runs each last-chunk forward's backward next:
     * one or two, where the rank holds p + 1 of its first chunk) */
    double last_mb = 0.0;
    if (i == aps_layout_last_rank(lay)) {
        double mtp_saved = APS_MTP_SAVED_HIDDEN -
                           (lay->mtp_recompute ? APS_MTP_RECOMPUTED_HIDDEN : 0.0);
        last_mb = (2.0 + mtp_saved * (double)lay->mtp) * APS_ACT_BYTES * sbh_rep;
        if (t->hf_eager_layer) /* the final LlamaRMSNorm's fp32 copy */
            last_mb += APS_FP32_BYTES * sbh_rep;
    }
    /* fine-grained offload: what the offload modules move to host, less
     * the groups that stay (offload.c) */
    double off_margin;
    per_mb -= aps_offload_stage_bytes(m, t, s, lay, lc, i, &off_margin);
    stage_inflight n;
    stage_inflight_counts(lay, i, &n);
    *kept_inflight = n.kept;
    st->inflight_microbatches = n.rank;
    /* Full recompute: while a layer is recomputed its whole activation set
     * is alive once more (the transient peak of the backward); of a group
     * of several, the largest kind the rank holds and the rest as its mean
     * layer (a rank that mixes kinds: its peak layer, not the mean) */
    double transient = rc > 0 ? lc->act_full_max + (group - 1.0) * lc->act_full
                              : 0.0;
    /* Selective recompute rebuilds what it dropped for one layer at a
     * time in the backward: that difference is alive once more. */
    if (s->layer_recompute == APS_RECOMPUTE_SELECTIVE && layers > rc &&
        lc->act_full - lc->act_selective > transient)
        transient = lc->act_full - lc->act_selective;
    /* EP overlap (Megatron's combined 1F1B): each step runs a layer's
     * forward of the newer micro-batch beside a layer's backward of the
     * older, which frees its saved tensors only after both (Megatron-LM
     * d98e8a64 megatron/core/models/common/model_chunk_schedule_plan.py
     * l.560-575: run(f_layer, b_layer), then b_layer.release_state()): one
     * layer's saved set more than the schedule's in-flight micro-batches;
     * its MoE and MLA parts in moe.c aps_moe_stage_memory */
    if (t->overlap_moe_expert_parallel_comm && layers > rc)
        transient += per_layer;
    return n.kept * per_mb_kept + n.all * per_mb + n.last * last_mb + off_margin +
           transient;
}

double aps_gathered_param_bytes(const aps_training *t, double gathered,
                                double gm)
{
    double A = APS_ACT_BYTES, copy = aps_weight_copy_bytes(t);
    double held = A * gathered;
    if (aps_recipe_fp8_param_gather(t))
        /* TE keeps both layouts of the gathered weight; torchao's
         * float8 all-gather delivers one, the transpose made per GEMM */
        held += ((aps_profile(t)->transformer_engine
                      ? copy : aps_quantized_bytes(t->precision)) - A) * gm;
    else if (aps_profile(t)->transformer_engine)
        held += copy * gm;
    return held;
}

bool aps_fsdp_grads_deferred(const aps_training *t, const aps_layout *lay)
{
    const aps_framework_profile *fw = aps_profile(t);
    return (lay->p > 1 && fw->pp_unsharded_grads) ||
           (lay->m > 1 && aps_recipe_defer_grad_sync(t));
}

bool aps_fsdp_holds_stage(const aps_training *t, const aps_strategy *s,
                          const aps_layout *lay)
{
    return !s->reshard_after_forward ||
           (lay->p > 1 && aps_profile(t)->pp_unsharded_grads);
}

/** Parameters of rank i (psi in all) whose unsharded fp32 gradients
 *  accumulate at once when FSDP defers its reduction: every one, except
 *  under torch.distributed.pipelining's Interleaved1F1B (pp_schedule 1f1b,
 *  vpp_degree > 1, profile pp_unsharded_grads) with one round (m < 2p):
 *  there a rank runs each model chunk's backwards one after another
 *  (schedules.py @ pytorch 1fd7abc2 ScheduleInterleaved1F1B:
 *  number_of_rounds = max(1, m // p), backward_stage_index steps to the
 *  next chunk every microbatches_per_round backwards) and the stage's
 *  last backward reduce-scatters its chunk (stage.py
 *  backward_maybe_with_nosync, run_post_backward), so one chunk's are
 *  held: psi less the layers (layer parameters each) of the rank's other
 *  chunks than its largest (the embedding and output layer stay in,
 *  whichever chunk holds them). */
static double deferred_grad_params(const aps_training *t,
                                   const aps_layout *lay, int64_t i,
                                   double psi, double layer)
{
    if (!(lay->p > 1 && lay->v > 1 && lay->sched == APS_PP_1F1B &&
          aps_profile(t)->pp_unsharded_grads && lay->m < 2 * lay->p))
        return psi;
    int64_t big = 0, all = aps_layout_run_layers(lay, i);
    for (int64_t k = 0; k < lay->v; k++) {
        int64_t n = aps_layout_chunk(lay, i, k);
        big = n > big ? n : big;
    }
    double kept = psi - (double)(all - big) * layer;
    return kept > 0.0 ? kept : psi;
}

/** FSDP buffers of rank i (psi parameters): the unsharded parameters of
 *  the current and the prefetched unit (or all units when not resharding
 *  after forward) in the gather dtype -- bf16, or the quantized format
 *  with fp8_param_gather -- with, for quantized GEMMs, their quantized
 *  copies (both layouts; the gathered weight is one of them with
 *  fp8_param_gather), plus one unit's unsharded gradients before
 *  reduce-scatter; each capped by the profile's gather / reduce budget
 *  (DeepSpeed ZeRO-3).  An MoE layer's unit is its own parameters, not
 *  the dense FFN's; its experts are a unit of their own (moe.c
 *  expert_unit_buffers). */
static double fsdp_buffers(const aps_model *m, const aps_training *t,
                           const aps_strategy *s, const aps_layout *lay,
                           const aps_dp_plan *plan,
                           const aps_moe_held *moe, int64_t i, double psi)
{
    double layers = (double)aps_layout_run_layers(lay, i);
    double moe_matmul;
    double grow = aps_moe_unit_growth(moe, layers, false, &moe_matmul);
    double unit = aps_largest_unit_params(
        m, lay, i, aps_largest_layer_params(m, lay, i) + grow);
    double layer_unit = aps_stage_layer_params_tp(m, lay, i) + grow;
    bool whole = aps_fsdp_holds_stage(t, s, lay);
    double gathered = whole ? psi : unit + layer_unit;
    /* deferred gradient sync (profile defer_grad_sync, AutoModel):
     * with more than one micro-batch the unsharded fp32 gradients of
     * every unit stay until the last micro-batch's reduce-scatter */
    bool deferred = aps_fsdp_grads_deferred(t, lay);
    double reducing =
        deferred ? deferred_grad_params(t, lay, i, psi, layer_unit) : unit;
    const aps_framework_profile *fw = aps_profile(t);
    if (fw->gather_budget > 0 && gathered > fw->gather_budget)
        gathered = fw->gather_budget;
    if (fw->reduce_budget > 0 && reducing > fw->reduce_budget)
        reducing = fw->reduce_budget;
    double layer_matmul = aps_stage_layer_matmul_params(m, lay, i) /
                          (double)lay->t;
    /* (the whole stage's MoE difference: aps_moe_stage_memory) */
    double gm = whole ? layers * layer_matmul
                      : 2.0 * (layer_matmul + moe_matmul);
    gm = gm < gathered ? gm : gathered; /* of which in linear layers */
    double held = aps_gathered_param_bytes(t, gathered, gm);
    double unsharded_grad = deferred ? APS_FP32_BYTES : plan->grad_reduce;
    return held + unsharded_grad * reducing;
}

/** Data-parallel buffers without weight sharding: DeepSpeed's gradient
 *  reduce bucket and, with sharded optimizer states, its parameter
 *  all-gather bucket; torch DDP's buckets in flight; none for Megatron's
 *  contiguous grad buffer. */
static double dp_buffers(const aps_training *t, const aps_dp_plan *plan)
{
    const aps_framework_profile *fw = aps_profile(t);
    double bytes = 0.0;
    if (fw->dp_buffers == APS_DP_BUFFERS_DEEPSPEED) {
        bytes = fw->dp_reduce_bucket * plan->bytes.grad;
        if (plan->bytes.shard_optimizer)
            bytes += fw->dp_allgather_bucket * APS_ACT_BYTES;
    } else if (fw->dp_buffers == APS_DP_BUFFERS_DDP) {
        bytes = t->ddp_bucket_bytes * (double)t->ddp_buckets_in_flight;
    }
    return bytes;
}

/** CP buffers of one rank, bytes (bf16): ring, the K/V chunks in flight
 *  (2) and their dK, dV; all-gather, the whole sequence's K/V and their
 *  gradients; a2a, the contiguous send copies of Q, K, V and the
 *  all-to-all's receive buffers (flash_attn_a2a_communicate, context_
 *  parallel.py:425, 473 @ d0067d0d: movedim(...).contiguous() and
 *  torch.empty_like), b s/c tokens of (a + 2k)/t heads each, the backward's
 *  dQ, dK, dV as large and not at the same time.  The received Q, K, V
 *  and the output are what the attention saves for its backward (l.4536-
 *  4576), as many elements as the p2p path's local Q, K, V, O: counted
 *  with the activations, not here. */
static double cp_kind_buffers(const aps_training *t,
                              const aps_strategy *s, const aps_layout *lay,
                              const aps_attn_kind *x)
{
    double A = APS_ACT_BYTES, tp = (double)lay->t;
    double sl = (double)lay->s_local, b = (double)lay->b;
    double d = x->d, k = aps_kv_core_groups(x->k, tp);
    if (s->cp_comm_type == APS_CP_A2A)
        return 2.0 * A * b * sl *
               ((x->a + k) * d + k * x->dv) / tp;
    double kv = A * b * k * (d + x->dv) / tp;      /* K and V per token */
    double chunk = s->cp_comm_type == APS_CP_ALL_GATHER
                       ? kv * (double)t->seq_length       /* gathered */
                       : 2.0 * kv * sl;                   /* 2 in flight */
    return 2.0 * chunk; /* + dK, dV in backward */
}

/** The CP buffers of the largest attention kind (one layer's in use at a
 *  time): cp_kind_buffers. */
static double cp_buffers(const aps_model *m, const aps_training *t,
                         const aps_strategy *s, const aps_layout *lay)
{
    aps_attn_kind x[APS_ATTN_KINDS];
    int n = aps_attn_kinds(m, x);
    double best = 0.0;
    for (int i = 0; i < n; i++)
        if (x[i].layers > 0)
            best = fmax(best, cp_kind_buffers(t, s, lay, &x[i]));
    return best;
}

/** With fewer KV heads than TP ranks (aps_kv_core_groups), the QKV
 *  projection's output gathered over the TP group, bf16, of the largest
 *  such kind: every column of the fused projection for the rank's b s/c
 *  tokens (get_query_key_value_tensors l.1864 @ d98e8a64), twice at its
 *  peak -- the all-gather's output and the torch.cat that reorders it
 *  (tensor_parallel/mappings.py _gather_along_last_dim) -- and then alive
 *  until TransformerEngine copies the rank's Q, K, V out of it (their
 *  strides fit no packed layout: get_qkv_layout's "not_supported" branch,
 *  utils.py @ d0067d0d, makes them contiguous); its gradient, as large and
 *  copied the same way before the reduce-scatter, not at the same time.
 *  0 when tp divides the heads. */
static double kv_gather_buffer(const aps_model *m, const aps_layout *lay)
{
    aps_attn_kind x[APS_ATTN_KINDS];
    int n = aps_attn_kinds(m, x);
    double best = 0.0, tp = (double)lay->t;
    for (int i = 0; i < n; i++)
        if (x[i].layers > 0 && x[i].k < tp)
            best = fmax(best, 2.0 * APS_ACT_BYTES * (double)lay->s_local *
                                  (double)lay->b *
                                  aps_attn_kind_in_width(m, &x[i]));
    return best;
}

/** Communication buffers of rank i into mem: TP with SP, the gathered
 *  full-sequence input of a linear, or with replicated KV heads the
 *  gathered QKV output when larger (kv_gather_buffer); FSDP or DP
 *  buffers; PP, send and receive buffers per neighbour; CP,
 *  cp_buffers. */
static void comm_buffers(const aps_model *m, const aps_training *t,
                         const aps_strategy *s, const aps_layout *lay,
                         const aps_dp_plan *plan, const aps_moe_held *held,
                         int64_t i, double psi, double *mem)
{
    double A = APS_ACT_BYTES;
    double sl = (double)lay->s_local, b = (double)lay->b;
    if (lay->t > 1 && s->sequence_parallel)
        mem[APS_MEM_COMM_TP] = A * sl * b * (double)m->hidden_size;
    mem[APS_MEM_COMM_TP] =
        fmax(mem[APS_MEM_COMM_TP], kv_gather_buffer(m, lay));
    if (plan->mfsdp != APS_MFSDP_NONE)
        mem[APS_MEM_COMM_FSDP] =
            aps_mfsdp_buffers(m, t, lay, plan, held, i, psi);
    else if (plan->fsdp_like)
        mem[APS_MEM_COMM_FSDP] = fsdp_buffers(m, t, s, lay, plan, held, i, psi);
    else if (plan->dp_group > 1)
        mem[APS_MEM_COMM_DP] = dp_buffers(t, plan);
    if (lay->p > 1) {
        double neighbours = (lay->v > 1 || (i > 0 && i < lay->p - 1)) ? 2 : 1;
        mem[APS_MEM_COMM_PP] =
            neighbours * 2.0 * A * hidden_bytes_rep(m, s, lay);
    }
    if (lay->c > 1)
        mem[APS_MEM_COMM_CP] = cp_buffers(m, t, s, lay);
}

/** TransformerEngine's cuBLAS workspace per GEMM stream, bytes: 32 MiB
 *  plus 1,024 B "for NVFP4 GEMM ... alignment and misc scales" where the
 *  device's compute capability major is 9 or more (Hopper, Blackwell;
 *  AMD CDNA 3 reports 9 too), 4 MiB on older parts (TransformerEngine
 *  d0067d0da transformer_engine/pytorch/cpp_extensions/gemm.py
 *  get_cublas_workspace_size_bytes).  apsearch tells the two apart by fp8
 *  tensor cores (peak_flops_fp8 > 0): every preset that has them has a
 *  major of 9 or more, every one without has less. */
#define APS_TE_WORKSPACE_SM90 (32.0 * 1048576.0 + 1024.0)
#define APS_TE_WORKSPACE_OLDER (4.0 * 1048576.0)
/** Workspaces of one grouped GEMM call, one per compute stream
 *  (get_cublas_workspace(..., grouped_gemm=True): tex.get_num_cublas_
 *  streams(), transformer_engine/common/util/multi_stream.cpp
 *  num_compute_streams = 4). */
#define APS_TE_GROUPED_STREAMS 4.0
/** Workspaces of a userbuffers (TP communication overlap) GEMM
 *  (gemm.py _NUM_MAX_UB_STREAMS = 3). */
#define APS_TE_UB_STREAMS 3.0

/** TransformerEngine's cuBLAS workspaces on one rank, bytes: allocated
 *  once per device at the first GEMM of each kind and kept for the run
 *  (get_cublas_workspace is an lru_cache of torch.empty): one for plain
 *  GEMMs, one per compute stream for the experts' grouped GEMMs (MoE
 *  with --moe-grouped-gemm), one per userbuffers stream with
 *  --tp-comm-overlap.  0 for a framework whose GEMMs are not TE's. */
static double te_workspaces(const aps_model *m, const aps_cluster *c,
                            const aps_training *t, const aps_strategy *s,
                            const aps_layout *lay)
{
    if (!aps_profile(t)->te_gemm_workspaces)
        return 0.0;
    double ws = c->device.peak_flops_fp8 > 0 ? APS_TE_WORKSPACE_SM90
                                             : APS_TE_WORKSPACE_OLDER;
    double n = 1.0;
    if (aps_model_is_moe(m) && s->moe_grouped_gemm != 0)
        n += APS_TE_GROUPED_STREAMS;
    if (t->tp_comm_overlap && lay->t > 1)
        n += APS_TE_UB_STREAMS;
    return n * ws;
}

static void allocator_peaks(const aps_cluster *c, const aps_training *t,
                            double nccl, aps_stage_estimate *st);

/** The loss at its peak on the last stage, bytes: one set of logits per
 *  output head (1 + MTP depths) at the loss's bytes per logit
 *  (recipe.c).  Chunked (training.loss_chunks, TorchTitan's
 *  ChunkedLossWrapper, no MTP head), one chunk's logits at a time plus
 *  the float32 gradient of the whole micro-batch's hidden states its
 *  GradAccumulator fills and the chunk's own gradient in the activation
 *  dtype (torchtitan/components/loss.py ChunkedLossWrapper.__call__,
 *  GradAccumulator @ b5bcd76c: the hidden states are replicated over TP
 *  before chunking, so the buffer is not divided by it); after the last
 *  chunk, `grad_accumulator.result().to(hidden_states.dtype)` holds the
 *  fp32 buffer and its bf16 copy at once, 6 s b h, the peak when the
 *  chunks are many. */
static double logits_loss_bytes(const aps_model *m, const aps_training *t,
                                const aps_layout *lay)
{
    double tokens = (double)lay->s_local * (double)lay->b;
    double logits = aps_recipe_logits_bytes_tp(t, lay->t) * tokens *
                    lay->vocab_padded / (double)lay->t;
    double chunks = lay->mtp > 0 ? 1.0 : (double)aps_recipe_loss_chunks(t);
    if (chunks <= 1.0)
        return (1.0 + (double)lay->mtp) * logits;
    double h = (double)m->hidden_size;
    double loop = logits / chunks +
                  (APS_FP32_BYTES + APS_ACT_BYTES / chunks) * tokens * h;
    double after = (APS_FP32_BYTES + APS_ACT_BYTES) * tokens * h;
    return loop > after ? loop : after;
}

/** What a full-iteration CUDA graph keeps that the eager step and the
 *  per-layer graphs do not, bytes on rank i: StaticBufferLoader's copy of
 *  every micro-batch's inputs, one set of num_microbatches per model
 *  chunk that reads data (Megatron-LM d98e8a64 megatron/core/
 *  full_cuda_graph.py FullCudaGraphWrapper.data_read; pretrain_gpt.py
 *  is_dataset_built_on_rank: the first and last stages, TP rank 0, the
 *  rank this estimate prices).  The capture's private pool (get_graph_
 *  pool) holds what the captured forward-backward allocates, which the
 *  other categories already price as the step's peak; how much more the
 *  caching allocator keeps there (frees that cross streams during the
 *  capture) is not in Megatron's code and is not priced. */
static double full_graph_inputs(const aps_training *t, const aps_strategy *s,
                                const aps_layout *lay, int64_t i)
{
    if (t->framework != APS_FW_MEGATRON ||
        aps_cuda_graph_effective_scope(t, s) != APS_CG_FULL_ITERATION)
        return 0.0;
    bool last = i == aps_layout_last_rank(lay) && (lay->p > 1 || lay->v > 1);
    double readers = (i == 0 ? 1.0 : 0.0) + (last ? 1.0 : 0.0);
    return readers * (double)lay->m * (double)lay->b *
           (double)t->seq_length * APS_BATCH_BYTES_PER_TOKEN;
}

void aps_stage_memory(const aps_model *m, const aps_cluster *c,
                      const aps_training *t, const aps_strategy *s,
                      const aps_layout *lay, const aps_dp_plan *plan,
                      const aps_layer_cost *lc, int64_t i,
                      aps_stage_estimate *st)
{
    aps_layer_cost own; /* a hybrid rank's layers (aps_stage_layer_cost) */
    lc = aps_stage_layer_cost(m, c, t, s, lay, lc, i, &own);
    double *mem = st->mem;
    for (int j = 0; j < APS_MEM_COUNT; j++)
        mem[j] = 0.0;
    double psi = aps_stage_params(m, lay, i);
    double matmul_psi = aps_stage_matmul_params(m, lay, i);
    st->params = psi;
    st->expert_params = 0.0; /* aps_moe_stage_memory */
    aps_model_states(t, plan, psi, matmul_psi, mem);
    double kept_inflight;
    mem[APS_MEM_ACTIVATIONS] = stage_activations(m, t, s, lay, lc, i, st,
                                                 &kept_inflight) +
                               full_graph_inputs(t, s, lay, i);
    if (i == aps_layout_last_rank(lay))
        mem[APS_MEM_LOGITS_LOSS] = logits_loss_bytes(m, t, lay);
    aps_moe_held held; /* an MoE layer's Megatron-FSDP unit */
    aps_moe_stage_params(m, lay, &lc->moe, i, &held);
    comm_buffers(m, t, s, lay, plan, &held, i, psi, mem);
    aps_moe_stage_memory(m, t, s, lay, plan, &lc->moe, i, kept_inflight, st);
    mem[APS_MEM_WORKSPACES] = te_workspaces(m, c, t, s, lay);

    allocator_peaks(c, t, nccl_bytes(m, c, t, s, plan, lay, i), st);
}

/** The three peaks of stage estimate st from its categories: max
 *  allocated (every category but `reserved`), max reserved (allocated
 *  plus the allocator's fragmentation under training.expandable_segments),
 *  device memory in use (reserved plus the CUDA context and one NCCL
 *  communicator's buffers per process group, outside PyTorch's
 *  allocator); `reserved` holds the difference. */
static void allocator_peaks(const aps_cluster *c, const aps_training *t,
                            double nccl, aps_stage_estimate *st)
{
    double *mem = st->mem;
    double allocated = 0.0;
    for (int j = 0; j < APS_MEM_COUNT; j++)
        if (j != APS_MEM_RESERVED)
            allocated += mem[j];
    double fragmentation = aps_recipe_fragmentation(t) * allocated;
    double outside = c->device.cuda_context_bytes + nccl;
    mem[APS_MEM_RESERVED] = fragmentation + outside;
    st->mem_allocated = allocated;
    st->mem_reserved = allocated + fragmentation;
    st->mem_total = st->mem_reserved + outside;
    st->mem_limited = aps_memory_checked(t, st);
}

double aps_memory_limit(const aps_cluster *c, const aps_training *t)
{
    return t->memory_limit_bytes > 0
               ? t->memory_limit_bytes
               : c->device.memory_bytes - t->memory_margin_bytes;
}

double aps_memory_checked(const aps_training *t, const aps_stage_estimate *st)
{
    if (!(t->memory_limit_bytes > 0))
        return st->mem_total; /* the device's capacity holds everything */
    switch (t->memory_limit_kind) {
    case APS_MEM_KIND_ALLOCATED: return st->mem_allocated;
    case APS_MEM_KIND_DEVICE: return st->mem_total;
    default: return st->mem_reserved;
    }
}
