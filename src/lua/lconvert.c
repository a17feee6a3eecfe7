/*
 * src/lua/lconvert.c -- Lua table <-> apsearch struct conversion.
 *
 * Each struct of apsearch/types.h is described once, as a table of field
 * descriptors (name, kind, offset).  The same descriptors drive reading a
 * Lua table into the struct (one lua_next pass, so unknown fields are found
 * without a second walk) and pushing the struct back as a table, so the two
 * directions cannot drift apart and a normalized table always reads back.
 *
 * No C memory is allocated here; errors are raised with luaL_error only
 * while the destination structs are plain stack/userdata memory.
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "lconvert.h"

/* Enums are read and written through an int; make sure that is their size. */
_Static_assert(sizeof(aps_mlp) == sizeof(int), "enum size");
_Static_assert(sizeof(aps_norm) == sizeof(int), "enum size");
_Static_assert(sizeof(aps_pos) == sizeof(int), "enum size");
_Static_assert(sizeof(aps_rope_scaling) == sizeof(int), "enum size");
_Static_assert(sizeof(aps_precision) == sizeof(int), "enum size");
_Static_assert(sizeof(aps_optimizer) == sizeof(int), "enum size");
_Static_assert(sizeof(aps_framework) == sizeof(int), "enum size");
_Static_assert(sizeof(aps_recompute) == sizeof(int), "enum size");
_Static_assert(sizeof(aps_cp_comm) == sizeof(int), "enum size");

/* Strategy integers must fit in [-2^31, 2^31-1] so that products of degrees
 * in the core cannot overflow int64_t. */
#define APSL_STRATEGY_INT_MAX ((lua_Integer)INT32_MAX)
#define APSL_STRATEGY_INT_MIN ((lua_Integer)INT32_MIN)

/* ------------------------------------------------------------------ enums */

typedef struct {
    const char *name;
    int value;
} apsl_enum_item;

typedef struct {
    const apsl_enum_item *items; /* canonical spelling first for each value */
    int n;
    const char *expected;        /* list for messages */
} apsl_enum;

#define APSL_ENUM(var, list, ...)                                         \
    static const apsl_enum_item var##_items[] = {__VA_ARGS__};            \
    static const apsl_enum var = {var##_items,                            \
        (int)(sizeof(var##_items) / sizeof(var##_items[0])), list}

APSL_ENUM(enum_mlp, "swiglu, gelu, relu2, xielu",
          {"swiglu", APS_MLP_SWIGLU}, {"gelu", APS_MLP_GELU},
          {"relu2", APS_MLP_RELU2}, {"xielu", APS_MLP_XIELU});
APSL_ENUM(enum_glu_activation, "silu, gelu_tanh, quick_gelu, situ, gelu",
          {"silu", APS_GLU_SILU}, {"gelu_tanh", APS_GLU_GELU_TANH},
          {"quick_gelu", APS_GLU_QUICK_GELU}, {"situ", APS_GLU_SITU},
          {"gelu", APS_GLU_GELU});
APSL_ENUM(enum_linear_attention,
          "gated_deltanet, kda, short_conv, lightning, mamba1",
          {"gated_deltanet", APS_LINEAR_GDN}, {"kda", APS_LINEAR_KDA},
          {"short_conv", APS_LINEAR_SHORT_CONV},
          {"lightning", APS_LINEAR_LIGHTNING}, {"mamba1", APS_LINEAR_MAMBA1});
APSL_ENUM(enum_norm, "rmsnorm, layernorm",
          {"rmsnorm", APS_NORM_RMSNORM}, {"layernorm", APS_NORM_LAYERNORM});
APSL_ENUM(enum_pos, "rope, learned, alibi, none",
          {"rope", APS_POS_ROPE}, {"learned", APS_POS_LEARNED},
          {"alibi", APS_POS_ALIBI}, {"none", APS_POS_NONE});
APSL_ENUM(enum_rope_scaling, "none, llama3, linear, yarn, longrope",
          {"none", APS_ROPE_SCALING_NONE}, {"llama3", APS_ROPE_SCALING_LLAMA3},
          {"linear", APS_ROPE_SCALING_LINEAR}, {"yarn", APS_ROPE_SCALING_YARN},
          {"longrope", APS_ROPE_SCALING_LONGROPE});
APSL_ENUM(enum_precision, "bf16, fp16, fp8, mxfp8, nvfp4",
          {"bf16", APS_PREC_BF16}, {"fp16", APS_PREC_FP16},
          {"fp8", APS_PREC_FP8}, {"mxfp8", APS_PREC_MXFP8},
          {"nvfp4", APS_PREC_NVFP4});
APSL_ENUM(enum_optimizer, "adam, adamw, sgd",
          {"adam", APS_OPT_ADAM}, {"adamw", APS_OPT_ADAMW},
          {"sgd", APS_OPT_SGD});
APSL_ENUM(enum_framework, "megatron, fsdp2, fsdp, deepspeed, automodel",
          {"megatron", APS_FW_MEGATRON}, {"fsdp2", APS_FW_FSDP2},
          {"fsdp", APS_FW_FSDP}, {"deepspeed", APS_FW_DEEPSPEED},
          {"automodel", APS_FW_AUTOMODEL});
APSL_ENUM(enum_fsdp_impl, "torch_fsdp2, megatron_fsdp",
          {"torch_fsdp2", APS_FSDP_IMPL_TORCH_FSDP2},
          {"megatron_fsdp", APS_FSDP_IMPL_MEGATRON_FSDP});
APSL_ENUM(enum_mem_kind, "reserved, allocated, device",
          {"reserved", APS_MEM_KIND_RESERVED},
          {"allocated", APS_MEM_KIND_ALLOCATED},
          {"device", APS_MEM_KIND_DEVICE});
APSL_ENUM(enum_rms_norm_backend, "torch_fp32, te",
          {"torch_fp32", APS_RMS_NORM_TORCH_FP32}, {"te", APS_RMS_NORM_TE});
APSL_ENUM(enum_attn_backend, "te, sdpa, flex",
          {"te", APS_ATTN_TE}, {"sdpa", APS_ATTN_SDPA},
          {"flex", APS_ATTN_FLEX});
APSL_ENUM(enum_flex_backend, "deepep, hybridep",
          {"deepep", APS_FLEX_DEEPEP}, {"hybridep", APS_FLEX_HYBRIDEP});
APSL_ENUM(enum_cuda_graph_scope,
          "layer, full_iteration, none, or modules joined by '+' (attn, "
          "mlp, mamba, moe_router; e.g. attn+moe_router)",
          {"layer", APS_CG_LAYER}, {"full_iteration", APS_CG_FULL_ITERATION},
          {"none", APS_CG_NONE});
/* The module bits of aps_cuda_graph_scope by Megatron-Core's
 * --cuda-graph-modules names, in the order a scope is spelt back. */
static const apsl_enum_item cg_modules[] = {
    {"attn", APS_CG_ATTN}, {"mlp", APS_CG_MLP}, {"mamba", APS_CG_MAMBA},
    {"moe_router", APS_CG_MOE_ROUTER}};
#define APSL_CG_MODULE_COUNT (int)(sizeof cg_modules / sizeof cg_modules[0])
APSL_ENUM(enum_recompute, "none, selective, full",
          {"none", APS_RECOMPUTE_NONE}, {"selective", APS_RECOMPUTE_SELECTIVE},
          {"full", APS_RECOMPUTE_FULL});
APSL_ENUM(enum_recompute_method, "block, uniform",
          {"block", APS_RECOMPUTE_BLOCK}, {"uniform", APS_RECOMPUTE_UNIFORM});
APSL_ENUM(enum_pipeline_split, "even, embedding_loss, deepspeed_type, fill_last, fill_first",
          {"even", APS_SPLIT_EVEN}, {"embedding_loss", APS_SPLIT_EMBEDDING_LOSS},
          {"deepspeed_type", APS_SPLIT_DEEPSPEED_TYPE},
          {"fill_last", APS_SPLIT_FILL_LAST}, {"fill_first", APS_SPLIT_FILL_FIRST});
APSL_ENUM(enum_pp_schedule, "1f1b, interleaved_zero_bubble, zbv_zero_bubble, dualpipev",
          {"1f1b", APS_PP_1F1B},
          {"interleaved_zero_bubble", APS_PP_INTERLEAVED_ZB},
          {"zbv_zero_bubble", APS_PP_ZBV}, {"dualpipev", APS_PP_DUALPIPEV});
APSL_ENUM(enum_dispatcher, "alltoall, allgather, flex",
          {"alltoall", APS_MOE_ALLTOALL}, {"allgather", APS_MOE_ALLGATHER},
          {"flex", APS_MOE_FLEX});
APSL_ENUM(enum_cp_comm, "p2p, all_gather, a2a",
          {"p2p", APS_CP_P2P}, {"all_gather", APS_CP_ALL_GATHER},
          {"a2a", APS_CP_A2A});

static const char *enum_name(const apsl_enum *e, int v)
{
    for (int i = 0; i < e->n; i++)
        if (e->items[i].value == v)
            return e->items[i].name;
    return "unknown";
}

const char *apsl_mlp_name(aps_mlp v) { return enum_name(&enum_mlp, (int)v); }
const char *apsl_norm_name(aps_norm v) { return enum_name(&enum_norm, (int)v); }
const char *apsl_pos_name(aps_pos v) { return enum_name(&enum_pos, (int)v); }
const char *apsl_precision_name(aps_precision v)
{
    return enum_name(&enum_precision, (int)v);
}
const char *apsl_optimizer_name(aps_optimizer v)
{
    return enum_name(&enum_optimizer, (int)v);
}
const char *apsl_framework_name(aps_framework v)
{
    return enum_name(&enum_framework, (int)v);
}
const char *apsl_recompute_name(aps_recompute v)
{
    return enum_name(&enum_recompute, (int)v);
}
const char *apsl_cp_comm_name(aps_cp_comm v)
{
    return enum_name(&enum_cp_comm, (int)v);
}

/* ------------------------------------------------------ field descriptors */

typedef enum {
    FT_INT,     /* int64_t */
    FT_NUM,     /* double, finite */
    FT_BOOL,    /* bool */
    FT_TRI,     /* int: 1 true, 0 false, APS_DEFAULT (-1) absent */
    FT_ENUM,    /* int-sized enum, read from a string */
    FT_NAME,    /* char[APS_NAME_LEN] */
    FT_OPATTERN,/* char[APS_MAX_HYBRID_LAYERS + 1] (aps_model.hybrid_layer_
                   pattern), not pushed when empty */
    FT_INTARR,  /* int64_t[APS_MAX_STAGES], array of pp_degree integers */
    FT_RECOMP,  /* int64_t[APS_MAX_STAGES], integer or array */
    FT_DEVICE,  /* aps_device (cluster.device) */
    FT_SKIP,    /* accepted key handled elsewhere (device "base") */
    FT_OINT,    /* int64_t, not pushed when 0 (MoE/MLA fields of a dense
                   model: its table stays as before issue 13) */
    FT_OBOOL,   /* bool, not pushed when false */
    FT_DINT,    /* int64_t >= 0, APS_DEFAULT (-1) absent and not pushed:
                   0 stays an explicit value (aps_training.num_layers_at_
                   start_in_bf16) */
    FT_ONUM,    /* double, not pushed when 0 (MoE fields: a dense
                   strategy's table stays as before issue 13) */
    FT_DNUM,    /* double in [0, 1), APS_DEFAULT (-1) absent and not
                   pushed: 0 stays an explicit value (aps_training.
                   attention_dropout, hidden_dropout) */
    FT_FRAC,    /* double in [0, 1], APS_DEFAULT (-1) absent and not
                   pushed (aps_training.activation_offload_fraction) */
    FT_OENUM,   /* enum, not pushed when 0 (its default) */
    FT_LAYERS,  /* aps_model.moe_dense_layers (models only): array of layer
                   indices, its count in moe_dense_layer_count; not pushed
                   when empty */
    FT_CGSCOPE, /* aps_cuda_graph_scope: an enum_cuda_graph_scope name or
                   module names joined by '+' (cg_modules, any order) */
    FT_MODULES, /* unsigned bits of aps_recompute_module: Megatron's module
                   names separated by '/' or ',' (NeMo's "mla_up_proj/mlp/
                   moe") or an array of them; pushed back as the '/' string,
                   not pushed when 0 */
    FT_OFFMODS  /* unsigned bits of aps_offload_module, read and pushed as
                   FT_MODULES */
} apsl_ftype;

/* A set of module names (FT_MODULES, FT_OFFMODS): bit b is name(b). */
typedef struct {
    const char *(*name)(int b);
    int count;
    const char *what; /* "recompute module" */
    const char *flag; /* the Megatron flag and its choices, for errors */
} apsl_modset;

static const apsl_modset recompute_modset = {
    aps_recompute_module_name, APS_RCM_COUNT, "recompute module",
    "Megatron --recompute-modules: core_attn, moe_act, layernorm, "
    "mla_up_proj, mlp, moe, shared_experts"};
static const apsl_modset offload_modset = {
    aps_offload_module_name, APS_OFM_COUNT, "offload module",
    "Megatron --offload-modules, as modelled: expert_fc1, moe_act, "
    "fused_group_mlp, core_attn, attn_proj; attn_norm, qkv_linear, "
    "mlp_norm and gdp_qkv are not modelled"};

static const apsl_modset *modset_of(int type)
{
    return type == FT_OFFMODS ? &offload_modset : &recompute_modset;
}

typedef struct {
    const char *name;
    unsigned char len;       /* strlen(name) */
    unsigned char type;      /* apsl_ftype */
    signed char partner;     /* alias pair index, -1 if none */
    unsigned char is_alias;  /* not pushed back */
    size_t off;
    const apsl_enum *en;
} apsl_field;

#define FLD(st, f, ty, en) {#f, sizeof(#f) - 1, ty, -1, 0, offsetof(st, f), en}

static const apsl_field model_fields[] = {
    FLD(aps_model, name, FT_NAME, NULL),
    FLD(aps_model, num_layers, FT_INT, NULL),
    FLD(aps_model, hidden_size, FT_INT, NULL),
    FLD(aps_model, num_attention_heads, FT_INT, NULL),
    FLD(aps_model, num_query_groups, FT_INT, NULL),
    FLD(aps_model, head_dim, FT_INT, NULL),
    FLD(aps_model, ffn_hidden_size, FT_INT, NULL),
    FLD(aps_model, vocab_size, FT_INT, NULL),
    FLD(aps_model, max_position_embeddings, FT_INT, NULL),
    FLD(aps_model, norms_per_layer, FT_INT, NULL),
    FLD(aps_model, mlp, FT_ENUM, &enum_mlp),
    FLD(aps_model, norm, FT_ENUM, &enum_norm),
    FLD(aps_model, position_embedding, FT_ENUM, &enum_pos),
    FLD(aps_model, norm_bias, FT_BOOL, NULL),
    FLD(aps_model, qkv_bias, FT_BOOL, NULL),
    FLD(aps_model, attn_out_bias, FT_BOOL, NULL),
    FLD(aps_model, mlp_bias, FT_BOOL, NULL),
    FLD(aps_model, qk_norm, FT_BOOL, NULL),
    FLD(aps_model, qk_norm_full_width, FT_OBOOL, NULL),
    FLD(aps_model, qk_norm_head_weights, FT_OBOOL, NULL),
    FLD(aps_model, qk_norm_weightless, FT_OBOOL, NULL),
    FLD(aps_model, attention_sinks, FT_OBOOL, NULL),
    FLD(aps_model, sliding_window, FT_INT, NULL),
    FLD(aps_model, sliding_window_layers, FT_INT, NULL),
    FLD(aps_model, sliding_window_period, FT_OINT, NULL),
    FLD(aps_model, global_head_dim, FT_OINT, NULL),
    FLD(aps_model, global_num_attention_heads, FT_OINT, NULL),
    FLD(aps_model, global_num_query_groups, FT_OINT, NULL),
    FLD(aps_model, global_k_eq_v, FT_OBOOL, NULL),
    FLD(aps_model, attn_v_head_dim, FT_OINT, NULL),
    FLD(aps_model, window_attention_sinks, FT_OBOOL, NULL),
    FLD(aps_model, qk_l2_norm, FT_OBOOL, NULL),
    FLD(aps_model, nope_layer_period, FT_OINT, NULL),
    FLD(aps_model, attention_chunk_size, FT_OINT, NULL),
    FLD(aps_model, chunked_attention_layers, FT_OINT, NULL),
    FLD(aps_model, tie_word_embeddings, FT_BOOL, NULL),
    FLD(aps_model, lm_head_bias, FT_OBOOL, NULL),
    FLD(aps_model, rotary_interleaved, FT_OBOOL, NULL),
    FLD(aps_model, mup_multipliers, FT_OBOOL, NULL),
    FLD(aps_model, parallel_attn_mlp, FT_OBOOL, NULL),
    FLD(aps_model, norm_weightless, FT_OBOOL, NULL),
    FLD(aps_model, embedding_norm, FT_OBOOL, NULL),
    FLD(aps_model, reordered_norm, FT_OBOOL, NULL),
    FLD(aps_model, rope_theta, FT_NUM, NULL),
    FLD(aps_model, rope_scaling_type, FT_ENUM, &enum_rope_scaling),
    FLD(aps_model, rope_scaling_factor, FT_NUM, NULL),
    FLD(aps_model, low_freq_factor, FT_NUM, NULL),
    FLD(aps_model, high_freq_factor, FT_NUM, NULL),
    FLD(aps_model, original_max_position_embeddings, FT_INT, NULL),
    FLD(aps_model, yarn_beta_fast, FT_NUM, NULL),
    FLD(aps_model, yarn_beta_slow, FT_NUM, NULL),
    FLD(aps_model, yarn_mscale, FT_NUM, NULL),
    FLD(aps_model, yarn_mscale_all_dim, FT_NUM, NULL),
    FLD(aps_model, yarn_attention_factor, FT_ONUM, NULL),
    FLD(aps_model, yarn_no_truncate, FT_OBOOL, NULL),
    FLD(aps_model, norm_eps, FT_NUM, NULL),
    FLD(aps_model, rotary_percent, FT_ONUM, NULL),
    /* the gated MLP's activation and soft-capping (issue 25) */
    FLD(aps_model, glu_activation, FT_OENUM, &enum_glu_activation),
    FLD(aps_model, glu_linear_offset, FT_ONUM, NULL),
    FLD(aps_model, glu_clamp, FT_ONUM, NULL),
    FLD(aps_model, attn_logit_softcapping, FT_ONUM, NULL),
    FLD(aps_model, final_logit_softcapping, FT_ONUM, NULL),
    /* mixture of experts, multi-head latent attention (issue 13) */
    FLD(aps_model, num_experts, FT_OINT, NULL),
    FLD(aps_model, experts_per_token, FT_OINT, NULL),
    FLD(aps_model, moe_ffn_hidden_size, FT_OINT, NULL),
    FLD(aps_model, shared_expert_ffn_hidden_size, FT_OINT, NULL),
    FLD(aps_model, shared_expert_gate, FT_OBOOL, NULL),
    FLD(aps_model, moe_router_bias, FT_OBOOL, NULL),
    FLD(aps_model, moe_router_fp32, FT_OBOOL, NULL),
    FLD(aps_model, moe_latent_size, FT_OINT, NULL),
    FLD(aps_model, moe_router_sigmoid, FT_OBOOL, NULL),
    FLD(aps_model, moe_router_softmax_bias, FT_OBOOL, NULL),
    FLD(aps_model, moe_router_input_probs, FT_OBOOL, NULL),
    FLD(aps_model, moe_router_linear_bias, FT_OBOOL, NULL),
    FLD(aps_model, moe_router_scales, FT_OBOOL, NULL),
    FLD(aps_model, moe_aux_loss_coeff, FT_ONUM, NULL),
    FLD(aps_model, moe_seq_aux_loss, FT_OBOOL, NULL),
    FLD(aps_model, moe_router_num_groups, FT_OINT, NULL),
    FLD(aps_model, moe_router_group_topk, FT_OINT, NULL),
    FLD(aps_model, moe_router_group_score_topk, FT_OINT, NULL),
    FLD(aps_model, moe_router_topk_scaling_factor, FT_ONUM, NULL),
    FLD(aps_model, moe_router_pre_softmax, FT_OBOOL, NULL),
    FLD(aps_model, moe_first_dense_layers, FT_OINT, NULL),
    FLD(aps_model, moe_layer_freq, FT_OINT, NULL),
    FLD(aps_model, moe_layer_phase, FT_OINT, NULL),
    FLD(aps_model, moe_dense_layers, FT_LAYERS, NULL),
    FLD(aps_model, q_lora_rank, FT_OINT, NULL),
    FLD(aps_model, kv_lora_rank, FT_OINT, NULL),
    FLD(aps_model, qk_nope_head_dim, FT_OINT, NULL),
    FLD(aps_model, qk_rope_head_dim, FT_OINT, NULL),
    FLD(aps_model, v_head_dim, FT_OINT, NULL),
    FLD(aps_model, mtp_layers, FT_OINT, NULL),
    FLD(aps_model, mtp_shared_embeddings, FT_OBOOL, NULL),
    /* DeepSeek Sparse Attention's indexer (src/core/dsa.c) */
    FLD(aps_model, index_n_heads, FT_OINT, NULL),
    FLD(aps_model, index_head_dim, FT_OINT, NULL),
    FLD(aps_model, index_topk, FT_OINT, NULL),
    FLD(aps_model, index_rope_interleave, FT_OBOOL, NULL),
    FLD(aps_model, index_topk_freq, FT_OINT, NULL),
    FLD(aps_model, index_skip_topk_offset, FT_OINT, NULL),
    /* MiniMax-M3's block-sparse attention (src/core/msa.c) */
    FLD(aps_model, msa_layers, FT_OINT, NULL),
    FLD(aps_model, msa_index_heads, FT_OINT, NULL),
    FLD(aps_model, msa_index_dim, FT_OINT, NULL),
    FLD(aps_model, msa_block_size, FT_OINT, NULL),
    FLD(aps_model, msa_topk_blocks, FT_OINT, NULL),
    FLD(aps_model, msa_init_blocks, FT_OINT, NULL),
    FLD(aps_model, msa_local_blocks, FT_OINT, NULL),
    FLD(aps_model, hc_mult, FT_OINT, NULL),
    FLD(aps_model, hc_sinkhorn_iters, FT_OINT, NULL),
    FLD(aps_model, o_groups, FT_OINT, NULL),
    FLD(aps_model, o_lora_rank, FT_OINT, NULL),
    FLD(aps_model, csa_layers, FT_OINT, NULL),
    FLD(aps_model, hca_layers, FT_OINT, NULL),
    FLD(aps_model, csa_compress_rate, FT_OINT, NULL),
    FLD(aps_model, hca_compress_rate, FT_OINT, NULL),
    FLD(aps_model, moe_hash_layers, FT_OINT, NULL),
    /* hybrid Mamba-2 models (src/core/hybrid.c) */
    FLD(aps_model, hybrid_layer_pattern, FT_OPATTERN, NULL),
    FLD(aps_model, mamba_num_heads, FT_OINT, NULL),
    FLD(aps_model, mamba_head_dim, FT_OINT, NULL),
    FLD(aps_model, mamba_state_dim, FT_OINT, NULL),
    FLD(aps_model, mamba_num_groups, FT_OINT, NULL),
    FLD(aps_model, mamba_conv_kernel, FT_OINT, NULL),
    FLD(aps_model, mamba_chunk_size, FT_OINT, NULL),
    FLD(aps_model, mamba_no_rmsnorm, FT_OBOOL, NULL),
    FLD(aps_model, mtp_layer_pattern, FT_OPATTERN, NULL),
    /* Gated DeltaNet linear attention (src/core/gdn.c) */
    FLD(aps_model, linear_attention_period, FT_OINT, NULL),
    FLD(aps_model, linear_num_key_heads, FT_OINT, NULL),
    FLD(aps_model, linear_num_value_heads, FT_OINT, NULL),
    FLD(aps_model, linear_key_head_dim, FT_OINT, NULL),
    FLD(aps_model, linear_value_head_dim, FT_OINT, NULL),
    FLD(aps_model, linear_block_size, FT_OINT, NULL),
    FLD(aps_model, linear_inner_size, FT_OINT, NULL),
    FLD(aps_model, linear_state_dim, FT_OINT, NULL),
    FLD(aps_model, linear_dt_rank, FT_OINT, NULL),
    FLD(aps_model, linear_conv_kernel_dim, FT_OINT, NULL),
    FLD(aps_model, linear_attention, FT_OENUM, &enum_linear_attention),
    FLD(aps_model, linear_attention_pattern, FT_OPATTERN, NULL),
    FLD(aps_model, sliding_window_layout, FT_OPATTERN, NULL),
    FLD(aps_model, linear_output_gate_full_rank, FT_OBOOL, NULL),
    FLD(aps_model, linear_beta_doubled, FT_OBOOL, NULL),
    FLD(aps_model, nas_attention_pattern, FT_OPATTERN, NULL),
    FLD(aps_model, nas_ffn_pattern, FT_OPATTERN, NULL),
    FLD(aps_model, nas_ffn_widths, FT_OPATTERN, NULL),
    FLD(aps_model, mla_output_gate, FT_OBOOL, NULL),
    FLD(aps_model, attn_res_block_size, FT_OINT, NULL),
    FLD(aps_model, moe_latent_norm, FT_OBOOL, NULL),
    FLD(aps_model, attention_output_gate, FT_OBOOL, NULL),
    FLD(aps_model, attention_head_gate, FT_OBOOL, NULL),
    FLD(aps_model, norm_zero_centered, FT_OBOOL, NULL),
};
/** Bits of apsl_reader.seen. */
#define APSL_SEEN_BITS 192
_Static_assert(sizeof(model_fields) / sizeof(model_fields[0]) <= APSL_SEEN_BITS,
               "apsl_reader.seen has APSL_SEEN_BITS bits");

/* The device "base" pseudo-field is last so that push skips it by count. */
static const apsl_field device_fields[] = {
    FLD(aps_device, name, FT_NAME, NULL),
    FLD(aps_device, memory_bytes, FT_NUM, NULL),
    FLD(aps_device, peak_flops_bf16, FT_NUM, NULL),
    FLD(aps_device, peak_flops_fp8, FT_NUM, NULL),
    FLD(aps_device, peak_flops_fp4, FT_NUM, NULL),
    FLD(aps_device, peak_flops_fp32, FT_NUM, NULL),
    FLD(aps_device, hbm_bandwidth, FT_NUM, NULL),
    FLD(aps_device, host_bandwidth, FT_NUM, NULL),
    FLD(aps_device, intra_node_bandwidth, FT_NUM, NULL),
    FLD(aps_device, intra_node_links, FT_OINT, NULL),
    FLD(aps_device, inter_node_bandwidth, FT_NUM, NULL),
    FLD(aps_device, intra_node_latency, FT_NUM, NULL),
    FLD(aps_device, inter_node_latency, FT_NUM, NULL),
    FLD(aps_device, cuda_context_bytes, FT_NUM, NULL),
    FLD(aps_device, nccl_comm_bytes, FT_NUM, NULL),
    FLD(aps_device, nccl_nvls_bytes_per_rank, FT_NUM, NULL),
    FLD(aps_device, gemm_efficiency, FT_NUM, NULL),
    FLD(aps_device, gemm_half_dim, FT_NUM, NULL),
    FLD(aps_device, gemm_tile_m, FT_NUM, NULL),
    FLD(aps_device, gemm_tile_n, FT_NUM, NULL),
    FLD(aps_device, sm_count, FT_OINT, NULL),
    FLD(aps_device, gemm_fixed_seconds, FT_NUM, NULL),
    FLD(aps_device, fp8_gemm_efficiency, FT_NUM, NULL),
    FLD(aps_device, attention_efficiency, FT_NUM, NULL),
    FLD(aps_device, unfused_attention_efficiency, FT_NUM, NULL),
    FLD(aps_device, hbm_efficiency, FT_NUM, NULL),
    FLD(aps_device, collective_efficiency, FT_NUM, NULL),
    FLD(aps_device, host_seconds_per_kernel, FT_NUM, NULL),
    FLD(aps_device, host_seconds_per_loop_kernel, FT_NUM, NULL),
    FLD(aps_device, host_seconds_per_loop_gemm, FT_NUM, NULL),
    FLD(aps_device, gpu_seconds_per_kernel, FT_NUM, NULL),
    FLD(aps_device, gpu_min_kernel_seconds, FT_NUM, NULL),
    FLD(aps_device, ssd_scan_rate, FT_NUM, NULL),
    {"base", 4, FT_SKIP, -1, 1, 0, NULL},
};
#define DEVICE_NFIELDS ((int)(sizeof(device_fields) / sizeof(device_fields[0])))
#define DEVICE_NSTRUCT (DEVICE_NFIELDS - 1) /* without "base" */

static const apsl_field cluster_fields[] = {
    FLD(aps_cluster, device, FT_DEVICE, NULL),
    FLD(aps_cluster, num_devices, FT_INT, NULL),
    FLD(aps_cluster, devices_per_node, FT_INT, NULL),
    FLD(aps_cluster, nvlink_domain_size, FT_INT, NULL),
};

static const apsl_field training_fields[] = {
    FLD(aps_training, global_batch_size, FT_INT, NULL),
    FLD(aps_training, seq_length, FT_INT, NULL),
    FLD(aps_training, precision, FT_ENUM, &enum_precision),
    FLD(aps_training, optimizer, FT_ENUM, &enum_optimizer),
    FLD(aps_training, framework, FT_ENUM, &enum_framework),
    FLD(aps_training, flash_attention, FT_BOOL, NULL),
    FLD(aps_training, dropout, FT_TRI, NULL),
    FLD(aps_training, attention_dropout, FT_DNUM, NULL),
    FLD(aps_training, hidden_dropout, FT_DNUM, NULL),
    FLD(aps_training, fp8_param_gather, FT_TRI, NULL),
    FLD(aps_training, grad_reduce_in_fp32, FT_TRI, NULL),
    FLD(aps_training, activation_offload_layers, FT_INT, NULL),
    FLD(aps_training, offload_modules, FT_OFFMODS, NULL),
    FLD(aps_training, activation_offload_fraction, FT_FRAC, NULL),
    FLD(aps_training, tp_comm_overlap, FT_BOOL, NULL),
    FLD(aps_training, cuda_graphs, FT_BOOL, NULL),
    FLD(aps_training, cuda_graph_scope, FT_CGSCOPE, &enum_cuda_graph_scope),
    FLD(aps_training, store_param_remainders, FT_BOOL, NULL),
    FLD(aps_training, exp_avg_bf16, FT_OBOOL, NULL),
    FLD(aps_training, bf16_weights, FT_OBOOL, NULL),
    FLD(aps_training, hf_eager_layer, FT_OBOOL, NULL),
    FLD(aps_training, transformers_model, FT_OBOOL, NULL),
    FLD(aps_training, dp_loss_group, FT_OBOOL, NULL),
    FLD(aps_training, unfused_swiglu, FT_OBOOL, NULL),
    FLD(aps_training, moe_router_fusion, FT_BOOL, NULL),
    FLD(aps_training, cutedsl_fused_grouped_mlp, FT_BOOL, NULL),
    FLD(aps_training, rms_norm_backend, FT_OENUM, &enum_rms_norm_backend),
    FLD(aps_training, attn_backend, FT_OENUM, &enum_attn_backend),
    FLD(aps_training, moe_flex_dispatcher_backend, FT_ENUM, &enum_flex_backend),
    FLD(aps_training, moe_shared_expert_overlap, FT_OBOOL, NULL),
    FLD(aps_training, overlap_moe_expert_parallel_comm, FT_OBOOL, NULL),
    FLD(aps_training, moe_expert_rank_capacity_factor, FT_ONUM, NULL),
    FLD(aps_training, moe_paged_stash, FT_OBOOL, NULL),
    FLD(aps_training, moe_paged_stash_buffer_size_factor_cuda, FT_ONUM, NULL),
    FLD(aps_training, moe_paged_stash_page_size, FT_OINT, NULL),
    FLD(aps_training, first_last_layers_bf16, FT_OBOOL, NULL),
    FLD(aps_training, num_layers_at_start_in_bf16, FT_DINT, NULL),
    FLD(aps_training, num_layers_at_end_in_bf16, FT_DINT, NULL),
    FLD(aps_training, vocab_size_divisible_by, FT_INT, NULL),
    FLD(aps_training, memory_limit_bytes, FT_NUM, NULL),
    FLD(aps_training, memory_margin_bytes, FT_NUM, NULL),
    FLD(aps_training, logits_bytes, FT_NUM, NULL),
    FLD(aps_training, allocator_fragmentation, FT_NUM, NULL),
    FLD(aps_training, allocator_fragmentation_expandable, FT_NUM, NULL),
    FLD(aps_training, expandable_segments, FT_TRI, NULL),
    FLD(aps_training, memory_limit_kind, FT_ENUM, &enum_mem_kind),
    FLD(aps_training, ddp_bucket_bytes, FT_NUM, NULL),
    FLD(aps_training, ddp_buckets_in_flight, FT_INT, NULL),
    FLD(aps_training, dp_overlap, FT_NUM, NULL),
    FLD(aps_training, fsdp_overlap, FT_NUM, NULL),
    FLD(aps_training, tp_overlap, FT_NUM, NULL),
    FLD(aps_training, pp_p2p_overlap, FT_NUM, NULL),
    FLD(aps_training, overlap_interference, FT_NUM, NULL),
    FLD(aps_training, dp_collective_rails, FT_INT, NULL),
    FLD(aps_training, distributed_optimizer_instances, FT_INT, NULL),
    FLD(aps_training, local_batch_size, FT_INT, NULL),
    FLD(aps_training, fsdp_impl, FT_ENUM, &enum_fsdp_impl),
    FLD(aps_training, suggested_communication_unit_size, FT_NUM, NULL),
    FLD(aps_training, fsdp_double_buffer, FT_BOOL, NULL),
    FLD(aps_training, moe_load_imbalance, FT_ONUM, NULL),
    FLD(aps_training, dsa_indexer_loss_coeff, FT_ONUM, NULL),
    FLD(aps_training, mtp_num_layers, FT_INT, NULL),
    FLD(aps_training, mtp_repeated_layer, FT_OBOOL, NULL),
    FLD(aps_training, overlap_p2p_comm, FT_BOOL, NULL),
    FLD(aps_training, torch_compile, FT_BOOL, NULL),
    FLD(aps_training, compile_loss, FT_TRI, NULL),
    FLD(aps_training, sac_save_alltoall, FT_TRI, NULL),
    FLD(aps_training, fuse_qkv, FT_TRI, NULL),
    FLD(aps_training, defer_fsdp_grad_sync, FT_TRI, NULL),
    FLD(aps_training, loss_fp32_upcast, FT_TRI, NULL),
    FLD(aps_training, loss_chunks, FT_INT, NULL),
    /* the software stack (lua/apsearch/stacks.lua): its efficiency profile
     * is applied to the device in Lua; the core takes no field for it */
    {"stack", 5, FT_SKIP, -1, 1, 0, NULL},
    /* the software release (training.software): its release line's settings
     * are written into the training table in Lua (apsearch.stacks) */
    {"software", 8, FT_SKIP, -1, 1, 0, NULL},
};

/* Strategy fields, in this index order (used for aliases and arrays). */
enum {
    S_DP, S_FSDP, S_ZERO, S_RESHARD, S_TP, S_SP, S_PP, S_VPP, S_CP, S_CPCOMM,
    S_MBS, S_MBN, S_PART, S_OFFSET, S_RECOMP, S_RECOMPN, S_IDLE,
    S_BALANCE, S_AUTORC, S_RMETHOD, S_SPLIT, S_HSDP_SHARD, S_HSDP_REPL,
    S_PPSCHED, S_EP, S_ETP, S_DISPATCH, S_CAPACITY, S_GROUPED, S_RCMODS,
    S_MBGROUP, S_NFIELDS
};

static const apsl_field strategy_fields[] = {
    {"dp_degree", 9, FT_INT, S_HSDP_REPL, 0,
     offsetof(aps_strategy, dp_degree), NULL},
    {"fsdp_degree", 11, FT_INT, S_HSDP_SHARD, 0,
     offsetof(aps_strategy, fsdp_degree), NULL},
    FLD(aps_strategy, zero_stage, FT_INT, NULL),
    FLD(aps_strategy, reshard_after_forward, FT_BOOL, NULL),
    FLD(aps_strategy, tp_degree, FT_INT, NULL),
    FLD(aps_strategy, sequence_parallel, FT_BOOL, NULL),
    FLD(aps_strategy, pp_degree, FT_INT, NULL),
    FLD(aps_strategy, vpp_degree, FT_INT, NULL),
    FLD(aps_strategy, cp_degree, FT_INT, NULL),
    FLD(aps_strategy, cp_comm_type, FT_ENUM, &enum_cp_comm),
    FLD(aps_strategy, micro_batch_size, FT_INT, NULL),
    FLD(aps_strategy, micro_batch_num, FT_INT, NULL),
    FLD(aps_strategy, stage_partition, FT_INTARR, NULL),
    FLD(aps_strategy, layer_offset, FT_INTARR, NULL),
    FLD(aps_strategy, layer_recompute, FT_ENUM, &enum_recompute),
    FLD(aps_strategy, recompute_num_layers, FT_RECOMP, NULL),
    FLD(aps_strategy, allow_idle_devices, FT_BOOL, NULL),
    FLD(aps_strategy, balance_stages, FT_BOOL, NULL),
    FLD(aps_strategy, auto_recompute, FT_BOOL, NULL),
    FLD(aps_strategy, recompute_method, FT_ENUM, &enum_recompute_method),
    FLD(aps_strategy, pipeline_split, FT_ENUM, &enum_pipeline_split),
    {"hsdp_shard_degree", 17, FT_INT, S_FSDP, 1,
     offsetof(aps_strategy, fsdp_degree), NULL},
    {"hsdp_replicate_degree", 21, FT_INT, S_DP, 1,
     offsetof(aps_strategy, dp_degree), NULL},
    FLD(aps_strategy, pp_schedule, FT_ENUM, &enum_pp_schedule),
    FLD(aps_strategy, ep_degree, FT_OINT, NULL),
    FLD(aps_strategy, etp_degree, FT_OINT, NULL),
    FLD(aps_strategy, moe_token_dispatcher, FT_OENUM, &enum_dispatcher),
    FLD(aps_strategy, moe_capacity_factor, FT_ONUM, NULL),
    FLD(aps_strategy, moe_grouped_gemm, FT_TRI, NULL),
    FLD(aps_strategy, recompute_modules, FT_MODULES, NULL),
    FLD(aps_strategy, microbatch_group_size, FT_OINT, NULL),
};
_Static_assert(sizeof(strategy_fields) / sizeof(strategy_fields[0]) ==
               S_NFIELDS, "strategy field table");

#define NFIELDS(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* -------------------------------------------------------------- messages */

int apsl_error(lua_State *L, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lua_pushvfstring(L, fmt, ap);
    va_end(ap);
    return lua_error(L);
}

/** Characters of a string value a message quotes before "...". */
#define APSL_DESCRIBE_CHARS 40

const char *apsl_push_describe(lua_State *L, int idx)
{
    switch (lua_type(L, idx)) {
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx))
            return lua_pushfstring(L, "%I", (LUAI_UACINT)lua_tointeger(L, idx));
        return lua_pushfstring(L, "%f", (LUAI_UACNUMBER)lua_tonumber(L, idx));
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, idx, &len);
        if (len > APSL_DESCRIBE_CHARS) {
            /* lua_pushfstring takes no precision: cut the copy here */
            char cut[APSL_DESCRIBE_CHARS + 1];
            memcpy(cut, s, APSL_DESCRIBE_CHARS);
            cut[APSL_DESCRIBE_CHARS] = '\0';
            return lua_pushfstring(L, "\"%s...\"", cut);
        }
        return lua_pushfstring(L, "\"%s\"", s);
    }
    case LUA_TBOOLEAN:
        return lua_pushstring(L, lua_toboolean(L, idx) ? "boolean true"
                                                       : "boolean false");
    default:
        return lua_pushstring(L, luaL_typename(L, idx));
    }
}

/* Raises "<path>.<field>: expected <what> (got <value>)".  path may be a
 * table path such as "cluster.device"; field may carry an index "[3]". */
static int expected_error(lua_State *L, int vidx, const char *path,
                          const char *field, const char *what)
{
    vidx = lua_absindex(L, vidx);
    const char *got = apsl_push_describe(L, vidx);
    return apsl_error(L, "%s.%s: expected %s (got %s)", path, field, what,
                      got);
}

static int unknown_field_error(lua_State *L, int kidx, const char *path)
{
    kidx = lua_absindex(L, kidx);
    if (lua_type(L, kidx) == LUA_TSTRING)
        return apsl_error(L, "%s: unknown field \"%s\"", path,
                          lua_tostring(L, kidx));
    const char *got = apsl_push_describe(L, kidx);
    return apsl_error(L, "%s: unexpected key %s (fields are named)", path,
                      got);
}

/* --------------------------------------------------------------- readers */

static lua_Integer read_integer(lua_State *L, int vidx, const char *path,
                                const char *field)
{
    int isnum = 0;
    lua_Integer v;
    if (lua_isinteger(L, vidx))
        return lua_tointeger(L, vidx);
    if (lua_type(L, vidx) == LUA_TNUMBER) {
        v = lua_tointegerx(L, vidx, &isnum); /* 2.0 -> 2; 2.5, inf fail */
        if (isnum)
            return v;
    }
    expected_error(L, vidx, path, field, "an integer");
    return 0;
}

static lua_Integer read_strategy_integer(lua_State *L, int vidx,
                                         const char *path, const char *field)
{
    lua_Integer v = read_integer(L, vidx, path, field);
    if (v > APSL_STRATEGY_INT_MAX || v < APSL_STRATEGY_INT_MIN)
        apsl_error(L, "%s.%s: out of range (got %I; |value| must be < 2^31)",
                   path, field, (LUAI_UACINT)v);
    return v;
}

static double read_number(lua_State *L, int vidx, const char *path,
                          const char *field)
{
    if (lua_type(L, vidx) != LUA_TNUMBER)
        expected_error(L, vidx, path, field, "a number");
    double v = (double)lua_tonumber(L, vidx);
    if (!isfinite(v))
        expected_error(L, vidx, path, field, "a finite number");
    /* -0.0 is 0 (a JSON or Lua "-0.0" would print as "-0" in every output
     * that carries the field or a time it scales) */
    return v == 0.0 ? 0.0 : v;
}

static void read_string(lua_State *L, int vidx, const char *path,
                        const char *field, char *dst, size_t cap)
{
    size_t len;
    if (lua_type(L, vidx) != LUA_TSTRING)
        expected_error(L, vidx, path, field, "a string");
    const char *s = lua_tolstring(L, vidx, &len);
    if (len >= cap)
        apsl_error(L, "%s.%s: longer than %d bytes (got %d)", path, field,
                   (int)cap - 1, (int)len);
    if (strlen(s) != len)
        apsl_error(L, "%s.%s: contains a NUL byte", path, field);
    memcpy(dst, s, len + 1);
}

static int read_enum(lua_State *L, int vidx, const char *path,
                     const char *field, const apsl_enum *e)
{
    size_t len;
    if (lua_type(L, vidx) != LUA_TSTRING)
        expected_error(L, vidx, path, field, "a string");
    const char *s = lua_tolstring(L, vidx, &len);
    for (int i = 0; i < e->n; i++)
        if (strlen(e->items[i].name) == len &&
            memcmp(e->items[i].name, s, len) == 0)
            return e->items[i].value;
    const char *got = apsl_push_describe(L, vidx);
    apsl_error(L, "%s.%s: unknown value %s (expected %s)", path, field, got,
               e->expected);
    return 0;
}

/* FT_CGSCOPE: "layer" / "full_iteration" / "none", or module names joined
 * by '+' ("attn+mamba+moe_router", any order, each once) -> their bits. */
static int read_graph_scope(lua_State *L, int vidx, const char *path,
                            const char *field, const apsl_enum *e)
{
    if (lua_type(L, vidx) != LUA_TSTRING)
        expected_error(L, vidx, path, field, "a string");
    size_t n;
    const char *s = lua_tolstring(L, vidx, &n);
    for (int i = 0; i < e->n; i++)
        if (strlen(e->items[i].name) == n &&
            memcmp(e->items[i].name, s, n) == 0)
            return e->items[i].value;
    int bits = 0;
    for (size_t i = 0, j; i <= n; i = j + 1) {
        for (j = i; j < n && s[j] != '+'; j++)
            ;
        int bit = 0;
        for (int k = 0; k < APSL_CG_MODULE_COUNT; k++)
            if (strlen(cg_modules[k].name) == j - i &&
                memcmp(cg_modules[k].name, s + i, j - i) == 0)
                bit = cg_modules[k].value;
        if (bit == 0 || (bits & bit)) {
            const char *got = apsl_push_describe(L, vidx);
            apsl_error(L, "%s.%s: unknown value %s (expected %s%s)", path,
                       field, got, e->expected,
                       bit != 0 ? "; each module once" : "");
        }
        bits |= bit;
    }
    return bits;
}

/* Pushes scope v as read_graph_scope reads it: its name, or its modules
 * joined by '+' in cg_modules' order. */
static void push_graph_scope(lua_State *L, const apsl_enum *e, int v)
{
    (void)e; /* always enum_cuda_graph_scope */
    apsl_push_graph_scope(L, v);
}

void apsl_push_graph_scope(lua_State *L, int v)
{
    const apsl_enum *e = &enum_cuda_graph_scope;
    for (int i = 0; i < e->n; i++)
        if (e->items[i].value == v) {
            lua_pushstring(L, e->items[i].name);
            return;
        }
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int k = 0; k < APSL_CG_MODULE_COUNT; k++)
        if (v & cg_modules[k].value) {
            if (luaL_bufflen(&b) > 0)
                luaL_addchar(&b, '+');
            luaL_addstring(&b, cg_modules[k].name);
        }
    luaL_pushresult(&b);
}

/* Array of integers at vidx into dst (at most APS_MAX_STAGES); returns its
 * length.  Index errors name the 1-based position: stage_partition[3]. */
static int read_int_array(lua_State *L, int vidx, const char *path,
                          const char *field, int64_t *dst)
{
    vidx = lua_absindex(L, vidx);
    if (lua_type(L, vidx) != LUA_TTABLE)
        expected_error(L, vidx, path, field, "an array of integers");
    lua_Unsigned n = lua_rawlen(L, vidx);
    if (n > APS_MAX_STAGES)
        apsl_error(L, "%s.%s: at most %d entries (got %I)", path, field,
                   APS_MAX_STAGES, (LUAI_UACINT)n);
    for (lua_Integer i = 1; i <= (lua_Integer)n; i++) {
        lua_rawgeti(L, vidx, i);
        if (!lua_isinteger(L, -1)) {
            int isnum = 0;
            (void)lua_tointegerx(L, -1, &isnum);
            if (lua_type(L, -1) != LUA_TNUMBER || !isnum) {
                char idxname[96];
                snprintf(idxname, sizeof idxname, "%s[%lld]", field,
                         (long long)i);
                expected_error(L, -1, path, idxname, "an integer");
            }
        }
        lua_Integer v = lua_tointeger(L, -1);
        if (v > APSL_STRATEGY_INT_MAX || v < APSL_STRATEGY_INT_MIN)
            apsl_error(L, "%s.%s[%I]: out of range (got %I)", path, field,
                       (LUAI_UACINT)i, (LUAI_UACINT)v);
        dst[i - 1] = (int64_t)v;
        lua_pop(L, 1);
    }
    return (int)n;
}

static int find_field(const apsl_field *fs, int n, const char *k, size_t len)
{
    for (int i = 0; i < n; i++)
        if (fs[i].len == len && fs[i].name[0] == k[0] &&
            memcmp(fs[i].name, k, len) == 0)
            return i;
    return -1;
}

/* Called for a key no descriptor knows; may raise a better message. */
typedef void (*unknown_hook)(lua_State *L, int kidx, int vidx,
                             const char *path);

typedef struct {
    const char *path;
    const apsl_field *fields;
    int nfields;
    char *base;
    unknown_hook on_unknown;
    uint64_t seen[APSL_SEEN_BITS / 64]; /* bit i: field i was present */
    int arrlen[S_NFIELDS];/* FT_INTARR / FT_RECOMP lengths (-1: scalar) */
} apsl_reader;

/* True when field i of the reader's table was present. */
static bool seen_has(const apsl_reader *r, int i)
{
    return (r->seen[i / 64] >> (i % 64)) & 1u;
}

/* One module name of set ms (len bytes at name) as its bit; raises naming
 * the field and the name when the set has no such module. */
static unsigned module_bit(lua_State *L, const apsl_modset *ms,
                           const char *path, const char *field,
                           const char *name, size_t len)
{
    for (int k = 0; k < ms->count; k++) {
        const char *m = ms->name(k);
        if (strlen(m) == len && strncmp(m, name, len) == 0)
            return 1u << k;
    }
    /* lua_pushvfstring takes no "%.*s": the name is copied and cut */
    char cut[APSL_DESCRIBE_CHARS + 1];
    size_t k = len < APSL_DESCRIBE_CHARS ? len : APSL_DESCRIBE_CHARS;
    memcpy(cut, name, k);
    cut[k] = '\0';
    apsl_error(L, "%s.%s: unknown %s \"%s%s\" (%s)", path, field, ms->what,
               cut, len > k ? "..." : "", ms->flag);
    return 0;
}

/* FT_MODULES, FT_OFFMODS: "a/b,c" or {"a", "b"} -> bits of set ms. */
static unsigned read_modules(lua_State *L, const apsl_modset *ms, int vidx,
                             const char *path, const char *field)
{
    unsigned bits = 0;
    vidx = lua_absindex(L, vidx);
    if (lua_type(L, vidx) == LUA_TSTRING) {
        size_t n;
        const char *s = lua_tolstring(L, vidx, &n);
        size_t i = 0;
        while (i < n) {
            size_t j = i;
            while (j < n && s[j] != '/' && s[j] != ',')
                j++;
            if (j > i)
                bits |= module_bit(L, ms, path, field, s + i, j - i);
            i = j + 1;
        }
        return bits;
    }
    if (lua_type(L, vidx) != LUA_TTABLE)
        expected_error(L, vidx, path, field,
                       "module names (\"mla_up_proj/mlp/moe\" or an array)");
    lua_Unsigned len = lua_rawlen(L, vidx);
    for (lua_Integer i = 1; i <= (lua_Integer)len; i++) {
        lua_rawgeti(L, vidx, i);
        if (lua_type(L, -1) != LUA_TSTRING)
            expected_error(L, -1, path, field, "an array of module names");
        size_t n;
        const char *s = lua_tolstring(L, -1, &n);
        bits |= module_bit(L, ms, path, field, s, n);
        lua_pop(L, 1);
    }
    return bits;
}

static void read_value(lua_State *L, apsl_reader *r, int fi, int vidx)
{
    const apsl_field *f = &r->fields[fi];
    char *dst = r->base + f->off;
    switch ((apsl_ftype)f->type) {
    case FT_LAYERS: {
        int64_t *a = (int64_t *)(void *)dst;
        vidx = lua_absindex(L, vidx);
        if (lua_type(L, vidx) != LUA_TTABLE)
            expected_error(L, vidx, r->path, f->name, "an array of integers");
        lua_Unsigned len = lua_rawlen(L, vidx);
        if (len > APS_MAX_DENSE_LAYER_LIST)
            apsl_error(L, "%s.%s: at most %d entries (got %I)", r->path,
                       f->name, APS_MAX_DENSE_LAYER_LIST, (LUAI_UACINT)len);
        for (lua_Integer i = 1; i <= (lua_Integer)len; i++) {
            char idxname[96];
            lua_rawgeti(L, vidx, i);
            snprintf(idxname, sizeof idxname, "%s[%lld]", f->name,
                     (long long)i);
            a[i - 1] = (int64_t)read_integer(L, -1, r->path, idxname);
            lua_pop(L, 1);
        }
        int64_t cnt = (int64_t)len;
        memcpy(r->base + offsetof(aps_model, moe_dense_layer_count), &cnt,
               sizeof cnt);
        break;
    }
    case FT_OINT:
    case FT_INT: {
        int64_t v = (int64_t)(r->fields == strategy_fields
                        ? read_strategy_integer(L, vidx, r->path, f->name)
                        : read_integer(L, vidx, r->path, f->name));
        if (f->partner >= 0 && seen_has(r, f->partner)) {
            int64_t prev;
            memcpy(&prev, dst, sizeof prev);
            if (prev != v)
                apsl_error(L, "%s.%s: conflicts with %s (%I vs %I)", r->path,
                           f->name, r->fields[f->partner].name,
                           (LUAI_UACINT)v, (LUAI_UACINT)prev);
        }
        memcpy(dst, &v, sizeof v);
        break;
    }
    case FT_DINT: {
        int64_t v = (int64_t)read_integer(L, vidx, r->path, f->name);
        if (v < 0)
            apsl_error(L, "%s.%s: must be >= 0 (got %I)", r->path, f->name,
                       (LUAI_UACINT)v);
        memcpy(dst, &v, sizeof v);
        break;
    }
    case FT_ONUM:
    case FT_NUM: {
        double v = read_number(L, vidx, r->path, f->name);
        memcpy(dst, &v, sizeof v);
        break;
    }
    case FT_DNUM: {
        double v = read_number(L, vidx, r->path, f->name);
        if (!(v >= 0.0 && v < 1.0))
            apsl_error(L, "%s.%s: must be a probability in [0, 1) (got %f)",
                       r->path, f->name, (LUAI_UACNUMBER)v);
        memcpy(dst, &v, sizeof v);
        break;
    }
    case FT_FRAC: {
        double v = read_number(L, vidx, r->path, f->name);
        if (!(v >= 0.0 && v <= 1.0))
            apsl_error(L, "%s.%s: must be a fraction in [0, 1] (got %f)",
                       r->path, f->name, (LUAI_UACNUMBER)v);
        memcpy(dst, &v, sizeof v);
        break;
    }
    case FT_OBOOL:
    case FT_BOOL: {
        if (!lua_isboolean(L, vidx))
            expected_error(L, vidx, r->path, f->name, "a boolean");
        bool v = lua_toboolean(L, vidx) != 0;
        memcpy(dst, &v, sizeof v);
        break;
    }
    case FT_TRI: {
        if (!lua_isboolean(L, vidx))
            expected_error(L, vidx, r->path, f->name, "a boolean");
        int v = lua_toboolean(L, vidx) ? 1 : 0;
        memcpy(dst, &v, sizeof v);
        break;
    }
    case FT_OENUM:
    case FT_ENUM: {
        int v = read_enum(L, vidx, r->path, f->name, f->en);
        memcpy(dst, &v, sizeof v);
        break;
    }
    case FT_CGSCOPE: {
        int v = read_graph_scope(L, vidx, r->path, f->name, f->en);
        memcpy(dst, &v, sizeof v);
        break;
    }
    case FT_NAME:
        read_string(L, vidx, r->path, f->name, dst, APS_NAME_LEN);
        break;
    case FT_OPATTERN:
        read_string(L, vidx, r->path, f->name, dst,
                    APS_MAX_HYBRID_LAYERS + 1);
        break;
    case FT_MODULES:
    case FT_OFFMODS: {
        unsigned bits = read_modules(L, modset_of(f->type), vidx, r->path,
                                     f->name);
        memcpy(dst, &bits, sizeof bits);
        break;
    }
    case FT_INTARR:
        r->arrlen[fi] = read_int_array(L, vidx, r->path, f->name,
                                       (int64_t *)(void *)dst);
        break;
    case FT_RECOMP:
        if (lua_type(L, vidx) == LUA_TNUMBER) {
            int64_t v = (int64_t)read_strategy_integer(L, vidx, r->path,
                                                       f->name);
            int64_t *a = (int64_t *)(void *)dst;
            for (int i = 0; i < APS_MAX_STAGES; i++)
                a[i] = v;
            r->arrlen[fi] = -1;
        } else if (lua_type(L, vidx) == LUA_TTABLE) {
            r->arrlen[fi] = read_int_array(L, vidx, r->path, f->name,
                                           (int64_t *)(void *)dst);
        } else {
            expected_error(L, vidx, r->path, f->name,
                           "an integer or an array of integers");
        }
        break;
    case FT_DEVICE: {
        char path[64];
        snprintf(path, sizeof path, "%s.%s", r->path, f->name);
        apsl_check_device(L, vidx, (aps_device *)(void *)dst, path);
        break;
    }
    case FT_SKIP:
        break;
    }
    r->seen[fi / 64] |= (uint64_t)1 << (fi % 64);
}

/* One lua_next pass over the table at idx. */
static void read_table(lua_State *L, int idx, apsl_reader *r)
{
    idx = lua_absindex(L, idx);
    if (lua_type(L, idx) != LUA_TTABLE) {
        const char *got = apsl_push_describe(L, idx);
        apsl_error(L, "%s: expected a table (got %s)", r->path, got);
    }
    lua_pushnil(L);
    while (lua_next(L, idx) != 0) {
        int fi = -1;
        if (lua_type(L, -2) == LUA_TSTRING) {
            size_t len;
            const char *k = lua_tolstring(L, -2, &len);
            fi = find_field(r->fields, r->nfields, k, len);
        }
        if (fi < 0) {
            if (r->on_unknown != NULL)
                r->on_unknown(L, lua_absindex(L, -2), lua_absindex(L, -1),
                              r->path);
            unknown_field_error(L, -2, r->path);
        }
        read_value(L, r, fi, lua_absindex(L, -1));
        lua_pop(L, 1);
    }
}

/* A mixture-of-experts config never reaches the core as dense. */
static void model_unknown(lua_State *L, int kidx, int vidx, const char *path)
{
    static const char *const moe_keys[] = {
        "num_local_experts", "n_routed_experts", "moe_num_experts", NULL};
    if (lua_type(L, kidx) != LUA_TSTRING)
        return;
    const char *k = lua_tostring(L, kidx);
    for (int i = 0; moe_keys[i] != NULL; i++) {
        if (strcmp(k, moe_keys[i]) == 0 && lua_type(L, vidx) == LUA_TNUMBER &&
            lua_tonumber(L, vidx) > 1) {
            const char *got = apsl_push_describe(L, vidx);
            apsl_error(L, "%s.%s: a Hugging Face key; the model field is "
                          "num_experts (got %s experts)", path, k, got);
        }
    }
}

void apsl_check_model(lua_State *L, int idx, aps_model *m)
{
    apsl_reader r = {"model", model_fields, NFIELDS(model_fields),
                     (char *)m, model_unknown, {0}, {0}};
    aps_model_defaults(m);
    read_table(L, idx, &r);
}

static int push_preset_list(lua_State *L)
{
    luaL_Buffer b;
    size_t n = aps_device_preset_count();
    luaL_buffinit(L, &b);
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            luaL_addstring(&b, ", ");
        luaL_addstring(&b, aps_device_preset_name(i));
    }
    luaL_pushresult(&b);
    return 1;
}

static void load_preset(lua_State *L, int vidx, aps_device *d,
                        const char *path, const char *field)
{
    vidx = lua_absindex(L, vidx);
    const char *name = lua_tostring(L, vidx);
    if (aps_device_preset(name, d) != APS_OK) {
        const char *got = apsl_push_describe(L, vidx);
        push_preset_list(L);
        apsl_error(L, "%s%s%s: unknown device preset %s (known: %s)", path,
                   field[0] ? "." : "", field, got, lua_tostring(L, -1));
    }
}

void apsl_check_device(lua_State *L, int idx, aps_device *d, const char *path)
{
    idx = lua_absindex(L, idx);
    if (lua_type(L, idx) == LUA_TSTRING) {
        load_preset(L, idx, d, path, "");
        return;
    }
    if (lua_type(L, idx) != LUA_TTABLE) {
        const char *got = apsl_push_describe(L, idx);
        apsl_error(L, "%s: expected a preset name or a device table (got %s)",
                   path, got);
    }
    int has_base = lua_getfield(L, idx, "base") != LUA_TNIL;
    if (has_base) {
        if (lua_type(L, -1) != LUA_TSTRING)
            expected_error(L, -1, path, "base", "a device preset name");
        load_preset(L, -1, d, path, "base");
    } else {
        memset(d, 0, sizeof *d);
        strcpy(d->name, "custom");
    }
    lua_pop(L, 1);
    apsl_reader r = {path, device_fields, DEVICE_NFIELDS, (char *)d, NULL, {0},
                     {0}};
    read_table(L, idx, &r);
    if (!has_base) {
        /* every field but the name (0) and the optional ones (FT_OINT:
         * 0 when absent) must be set */
        for (int i = 1; i < DEVICE_NSTRUCT; i++)
            if (!seen_has(&r, i) && device_fields[i].type != FT_OINT)
                apsl_error(L, "%s.%s: missing (a device table without base "
                              "must set every field; or set base = "
                              "\"<preset>\")", path, device_fields[i].name);
    }
}

void apsl_check_cluster(lua_State *L, int idx, aps_cluster *c)
{
    apsl_reader r = {"cluster", cluster_fields, NFIELDS(cluster_fields),
                     (char *)c, NULL, {0}, {0}};
    memset(c, 0, sizeof *c);
    read_table(L, idx, &r);
    if (!seen_has(&r, 0))
        apsl_error(L, "cluster.device: missing (a device preset name or a "
                      "device table)");
}

void apsl_check_training(lua_State *L, int idx, aps_training *t)
{
    apsl_reader r = {"training", training_fields, NFIELDS(training_fields),
                     (char *)t, NULL, {0}, {0}};
    aps_training_defaults(t);
    read_table(L, idx, &r);
}

void apsl_check_strategy(lua_State *L, int idx, const aps_strategy *proto,
                         aps_strategy *s)
{
    apsl_reader r;
    r.path = "strategy";
    r.fields = strategy_fields;
    r.nfields = S_NFIELDS;
    r.base = (char *)s;
    r.on_unknown = NULL;
    memset(r.seen, 0, sizeof r.seen);
    memcpy(s, proto, sizeof *s);
    read_table(L, idx, &r);
    /* Given as HSDP: the core then requires both degrees > 1. */
    if (seen_has(&r, S_HSDP_SHARD) || seen_has(&r, S_HSDP_REPL))
        s->hsdp = true;
    if (seen_has(&r, S_PART) || seen_has(&r, S_OFFSET) || seen_has(&r, S_RECOMPN)) {
        static const int arrays[] = {S_PART, S_OFFSET, S_RECOMPN};
        for (int i = 0; i < 3; i++) {
            int fi = arrays[i];
            /* stage_partition: per rank, or per model chunk (p v) */
            if (seen_has(&r, fi) && r.arrlen[fi] >= 0 &&
                (int64_t)r.arrlen[fi] != s->pp_degree &&
                !(fi == S_PART &&
                  (int64_t)r.arrlen[fi] == s->pp_degree * s->vpp_degree))
                apsl_error(L, "strategy.%s: length must equal pp_degree%s "
                              "(got %d entries, pp_degree %I)",
                           strategy_fields[fi].name,
                           fi == S_PART ? " or pp_degree x vpp_degree" : "",
                           r.arrlen[fi], (LUAI_UACINT)s->pp_degree);
        }
        /* Given per model chunk (p v entries, v > 1), the core tells the
         * form by its entries (aps_partition_entries: per chunk when one
         * past the first p is not 0); a split with every chunk past the
         * first p empty would read as per rank, equal chunks: refused. */
        int64_t p = s->pp_degree, S = p * s->vpp_degree;
        if (seen_has(&r, S_PART) && s->vpp_degree > 1 && p >= 1 &&
            S <= APS_MAX_STAGES && (int64_t)r.arrlen[S_PART] == S &&
            aps_partition_entries(s) != S)
            apsl_error(L, "strategy.stage_partition: given per model chunk "
                          "(%I = pp_degree x vpp_degree entries), every "
                          "chunk after the first pp_degree = %I has 0 "
                          "layers; give a layer to one of them, or "
                          "pp_degree entries for equal chunks per rank",
                       (LUAI_UACINT)S, (LUAI_UACINT)p);
    }
}

/* ---------------------------------------------------------------- pushers */

static void push_int_array(lua_State *L, const int64_t *a, int64_t n)
{
    if (n < 0)
        n = 0;
    if (n > APS_MAX_STAGES)
        n = APS_MAX_STAGES;
    lua_createtable(L, (int)n, 0);
    for (int64_t i = 0; i < n; i++) {
        lua_pushinteger(L, (lua_Integer)a[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
}

static void push_fields(lua_State *L, const apsl_field *fs, int n,
                        const void *base_, int64_t arrn)
{
    const char *base = base_;
    lua_createtable(L, 0, n);
    for (int i = 0; i < n; i++) {
        const apsl_field *f = &fs[i];
        const char *src = base + f->off;
        if (f->is_alias)
            continue;
        switch ((apsl_ftype)f->type) {
        case FT_INT: {
            int64_t v;
            memcpy(&v, src, sizeof v);
            lua_pushinteger(L, (lua_Integer)v);
            break;
        }
        case FT_NUM: {
            double v;
            memcpy(&v, src, sizeof v);
            lua_pushnumber(L, (lua_Number)v);
            break;
        }
        case FT_BOOL: {
            bool v;
            memcpy(&v, src, sizeof v);
            lua_pushboolean(L, v);
            break;
        }
        case FT_OINT: {
            int64_t v;
            memcpy(&v, src, sizeof v);
            if (v == 0)
                continue;
            lua_pushinteger(L, (lua_Integer)v);
            break;
        }
        case FT_DINT: {
            int64_t v;
            memcpy(&v, src, sizeof v);
            if (v == APS_DEFAULT)
                continue; /* unset: Megatron's default */
            lua_pushinteger(L, (lua_Integer)v);
            break;
        }
        case FT_OBOOL: {
            bool v;
            memcpy(&v, src, sizeof v);
            if (!v)
                continue;
            lua_pushboolean(L, v);
            break;
        }
        case FT_ONUM: {
            double v;
            memcpy(&v, src, sizeof v);
            if (v == 0)
                continue;
            lua_pushnumber(L, (lua_Number)v);
            break;
        }
        case FT_DNUM:
        case FT_FRAC: {
            double v;
            memcpy(&v, src, sizeof v);
            if (v == APS_DEFAULT)
                continue; /* unset: from training.dropout, or 1 */
            lua_pushnumber(L, (lua_Number)v);
            break;
        }
        case FT_OENUM: {
            int v;
            memcpy(&v, src, sizeof v);
            if (v == 0)
                continue;
            lua_pushstring(L, enum_name(f->en, v));
            break;
        }
        case FT_MODULES:
        case FT_OFFMODS: {
            unsigned bits;
            memcpy(&bits, src, sizeof bits);
            if (bits == 0)
                continue;
            const apsl_modset *ms = modset_of(f->type);
            luaL_Buffer b;
            luaL_buffinit(L, &b);
            bool first = true;
            for (int k = 0; k < ms->count; k++)
                if (bits >> k & 1u) {
                    if (!first)
                        luaL_addchar(&b, '/');
                    luaL_addstring(&b, ms->name(k));
                    first = false;
                }
            luaL_pushresult(&b);
            break;
        }
        case FT_LAYERS: {
            int64_t cnt;
            memcpy(&cnt, base + offsetof(aps_model, moe_dense_layer_count),
                   sizeof cnt);
            if (cnt <= 0)
                continue;
            if (cnt > APS_MAX_DENSE_LAYER_LIST)
                cnt = APS_MAX_DENSE_LAYER_LIST;
            push_int_array(L, (const int64_t *)(const void *)src, cnt);
            break;
        }
        case FT_TRI: {
            int v;
            memcpy(&v, src, sizeof v);
            if (v == APS_DEFAULT)
                continue; /* absent: the framework's default */
            lua_pushboolean(L, v != 0);
            break;
        }
        case FT_ENUM: {
            int v;
            memcpy(&v, src, sizeof v);
            lua_pushstring(L, enum_name(f->en, v));
            break;
        }
        case FT_CGSCOPE: {
            int v;
            memcpy(&v, src, sizeof v);
            push_graph_scope(L, f->en, v);
            break;
        }
        case FT_NAME:
        case FT_OPATTERN: {
            size_t cap = f->type == FT_NAME ? APS_NAME_LEN
                                            : APS_MAX_HYBRID_LAYERS + 1;
            size_t len = 0;
            while (len < cap && src[len] != '\0')
                len++;
            if (len == 0 && f->type == FT_OPATTERN)
                continue;
            lua_pushlstring(L, src, len);
            break;
        }
        case FT_INTARR:
        case FT_RECOMP:
            push_int_array(L, (const int64_t *)(const void *)src, arrn);
            break;
        case FT_DEVICE:
            apsl_push_device(L, (const aps_device *)(const void *)src);
            break;
        case FT_SKIP:
            continue;
        }
        lua_setfield(L, -2, f->name);
    }
}

void apsl_push_model(lua_State *L, const aps_model *m)
{
    push_fields(L, model_fields, NFIELDS(model_fields), m, 0);
}

void apsl_push_device(lua_State *L, const aps_device *d)
{
    push_fields(L, device_fields, DEVICE_NSTRUCT, d, 0);
}

void apsl_push_cluster(lua_State *L, const aps_cluster *c)
{
    push_fields(L, cluster_fields, NFIELDS(cluster_fields), c, 0);
}

void apsl_push_training(lua_State *L, const aps_training *t)
{
    push_fields(L, training_fields, NFIELDS(training_fields), t, 0);
}

void apsl_push_strategy(lua_State *L, const aps_strategy *s)
{
    push_fields(L, strategy_fields, S_NFIELDS, s, s->pp_degree);
    /* a partition given per model chunk has p v entries */
    int64_t chunks = aps_partition_entries(s);
    if (chunks > s->pp_degree) {
        push_int_array(L, s->stage_partition, chunks);
        lua_setfield(L, -2, "stage_partition");
    }
}

/* --------------------------------------------------------------- results */

int apsl_is_device_field(const char *name, size_t len)
{
    return find_field(device_fields, DEVICE_NSTRUCT, name, len) >= 0;
}

static int is_comm_category(int c)
{
    return (c >= APS_MEM_COMM_TP && c <= APS_MEM_COMM_CP) ||
           c == APS_MEM_COMM_EP;
}

const char *apsl_mem_key(aps_mem_category c)
{
    static const char *const prefixes[] = {"comm_buffers.", "comm_buffers_",
                                           "comm_", NULL};
    const char *name = aps_mem_category_name(c);
    if (name == NULL)
        return "unknown";
    if (is_comm_category((int)c)) {
        for (int i = 0; prefixes[i] != NULL; i++) {
            size_t n = strlen(prefixes[i]);
            if (strncmp(name, prefixes[i], n) == 0)
                return name + n;
        }
    }
    return name;
}

void apsl_push_mem_breakdown(lua_State *L, const double mem[APS_MEM_COUNT],
                             double total)
{
    double comm_total = 0.0;
    lua_createtable(L, 0, APS_MEM_COUNT - 6 + 2);
    lua_createtable(L, 0, 7); /* comm_buffers */
    for (int c = 0; c < APS_MEM_COUNT; c++) {
        lua_pushnumber(L, (lua_Number)mem[c]);
        if (is_comm_category(c)) {
            comm_total += mem[c];
            lua_setfield(L, -2, apsl_mem_key((aps_mem_category)c));
        } else {
            lua_setfield(L, -3, apsl_mem_key((aps_mem_category)c));
        }
    }
    lua_pushnumber(L, (lua_Number)comm_total);
    lua_setfield(L, -2, "total");
    lua_setfield(L, -2, "comm_buffers");
    lua_pushnumber(L, (lua_Number)total);
    lua_setfield(L, -2, "total");
}

static void push_perf_breakdown(lua_State *L, const aps_estimate *e)
{
    lua_createtable(L, 0, APS_PERF_COUNT);
    for (int c = 0; c < APS_PERF_COUNT; c++) {
        const char *name = aps_perf_category_name((aps_perf_category)c);
        lua_createtable(L, 0, 2);
        lua_pushnumber(L, (lua_Number)e->perf_total[c]);
        lua_setfield(L, -2, "total");
        lua_pushnumber(L, (lua_Number)e->perf_exposed[c]);
        lua_setfield(L, -2, "exposed");
        lua_setfield(L, -2, name != NULL ? name : "unknown");
    }
}

static void push_stage(lua_State *L, const aps_stage_estimate *st, int i)
{
    lua_createtable(L, 0, 9);
    lua_pushinteger(L, i + 1);
    lua_setfield(L, -2, "stage");
    lua_pushinteger(L, (lua_Integer)st->first_layer);
    lua_setfield(L, -2, "first_layer");
    lua_pushinteger(L, (lua_Integer)st->num_layers);
    lua_setfield(L, -2, "num_layers");
    if (st->mtp_layers > 0) { /* with MTP only: other tables unchanged */
        lua_pushinteger(L, (lua_Integer)st->mtp_layers);
        lua_setfield(L, -2, "mtp_layers");
    }
    lua_pushinteger(L, (lua_Integer)st->recompute_layers);
    lua_setfield(L, -2, "recompute_layers");
    lua_pushnumber(L, (lua_Number)st->params);
    lua_setfield(L, -2, "params");
    if (st->expert_params > 0) { /* MoE only: dense tables unchanged */
        lua_pushnumber(L, (lua_Number)st->expert_params);
        lua_setfield(L, -2, "expert_params");
    }
    lua_pushnumber(L, (lua_Number)st->inflight_microbatches);
    lua_setfield(L, -2, "inflight_microbatches");
    apsl_push_mem_breakdown(L, st->mem, st->mem_total);
    lua_setfield(L, -2, "memory_breakdown");
    lua_pushnumber(L, (lua_Number)st->mem_allocated);
    lua_setfield(L, -2, "mem_allocated");
    lua_pushnumber(L, (lua_Number)st->mem_reserved);
    lua_setfield(L, -2, "mem_reserved");
    lua_pushnumber(L, (lua_Number)st->time_fwd);
    lua_setfield(L, -2, "time_fwd");
    lua_pushnumber(L, (lua_Number)st->time_bwd);
    lua_setfield(L, -2, "time_bwd");
    lua_pushnumber(L, (lua_Number)st->host_fwd);
    lua_setfield(L, -2, "host_fwd");
    lua_pushnumber(L, (lua_Number)st->host_bwd);
    lua_setfield(L, -2, "host_bwd");
}

#define SETNUM(name) \
    (lua_pushnumber(L, (lua_Number)e->name), lua_setfield(L, -2, #name))
#define SETINT(name) \
    (lua_pushinteger(L, (lua_Integer)e->name), lua_setfield(L, -2, #name))

void apsl_push_recipe(lua_State *L, const aps_training *t)
{
    aps_recipe r;
    aps_recipe_resolve(t, &r);
    const struct { const char *k; bool v; } flags[] = {
        {"grad_reduce_in_fp32", r.grad_reduce_in_fp32},
        {"fp8_param_gather", r.fp8_param_gather},
        {"compile_loss", r.compile_loss},
        {"dropout", r.dropout},
        {"attention_dropout", r.attention_dropout},
        {"hidden_dropout", r.hidden_dropout},
        {"expandable_segments", r.expandable_segments},
    };
    const struct { const char *k; double v; } bytes[] = {
        {"grad_bytes", r.grad_bytes},
        {"grad_reduce_bytes", r.grad_reduce_bytes},
        {"logits_bytes", r.logits_bytes},
        {"allocator_fragmentation", r.fragmentation},
    };
    lua_createtable(L, 0, 10);
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        lua_pushboolean(L, flags[i].v);
        lua_setfield(L, -2, flags[i].k);
    }
    for (size_t i = 0; i < sizeof bytes / sizeof bytes[0]; i++) {
        lua_pushnumber(L, bytes[i].v);
        lua_setfield(L, -2, bytes[i].k);
    }
}

void apsl_push_estimate(lua_State *L, const aps_estimate *e,
                        const aps_strategy *s)
{
    int64_t nst = e->num_stages;
    if (nst < 0)
        nst = 0;
    if (nst > APS_MAX_STAGES)
        nst = APS_MAX_STAGES;
    lua_createtable(L, 0, 28);
    lua_pushboolean(L, e->feasible);
    lua_setfield(L, -2, "feasible");
    if (!e->feasible || e->reason != APS_REASON_NONE) {
        lua_pushstring(L, aps_reason_code(e->reason));
        lua_setfield(L, -2, "reason");
        lua_pushstring(L, e->reason_msg);
        lua_setfield(L, -2, "message");
    }
    SETINT(micro_batch_num);
    SETINT(gradient_accumulation_steps);
    SETINT(devices_used);
    SETNUM(vocab_padded);
    SETNUM(params_total);
    if (nst > 0 && e->worst_stage >= 0) {
        lua_pushinteger(L, (lua_Integer)e->worst_stage + 1);
        lua_setfield(L, -2, "worst_stage");
    }
    SETINT(num_stages);
    SETNUM(mem_peak);
    SETNUM(mem_allocated);
    SETNUM(mem_reserved);
    SETNUM(mem_limit);
    SETNUM(step_time);
    SETNUM(tokens_per_s);
    SETNUM(tokens_per_s_per_gpu);
    SETNUM(model_flops_per_step);
    SETNUM(hardware_flops_per_step);
    SETNUM(model_tflops_per_gpu);
    SETNUM(mfu);
    SETNUM(hfu);
    apsl_push_mem_breakdown(L, e->mem, e->mem_peak);
    lua_setfield(L, -2, "memory_breakdown");
    push_perf_breakdown(L, e);
    lua_setfield(L, -2, "performance_breakdown");
    lua_createtable(L, (int)nst, 0);
    for (int i = 0; i < (int)nst; i++) {
        push_stage(L, &e->stages[i], i);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "stages");
    {
        /* With balance_stages / auto_recompute the core chose the
         * partition and the recompute counts: report those it used. */
        aps_strategy used = *s;
        if (nst == s->pp_degree && (s->balance_stages || s->auto_recompute)) {
            for (int64_t i = 0; i < nst; i++) {
                if (s->balance_stages) {
                    used.stage_partition[i] = e->stages[i].num_layers;
                    used.layer_offset[i] = 0;
                }
                if (s->auto_recompute)
                    used.recompute_num_layers[i] = e->stages[i].recompute_layers;
            }
            /* auto recompute that recomputes nothing is no recompute */
            int64_t total = 0;
            for (int64_t i = 0; i < nst; i++)
                total += e->stages[i].recompute_layers;
            if (s->auto_recompute && total == 0 &&
                s->layer_recompute == APS_RECOMPUTE_FULL) {
                used.layer_recompute = APS_RECOMPUTE_NONE;
                used.auto_recompute = false;
                for (int64_t i = 0; i < nst; i++)
                    used.recompute_num_layers[i] = -1;
            }
        }
        apsl_push_strategy(L, &used);
    }
    lua_setfield(L, -2, "strategy");
}
