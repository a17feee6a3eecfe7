/*
 * apsearch/types.h -- the plain-data inputs and outputs of the estimators.
 *
 * Units everywhere: bytes, seconds, FLOPs, FLOP/s, bytes/s, held as double;
 * counts (layers, degrees, batch sizes) as int64_t.  Field names follow
 * Megatron-LM and TorchTitan (shared/design/MODELING.md section 1).
 *
 * Every struct has an aps_*_defaults() initialiser in core.h; callers fill a
 * defaulted struct and then pass it to aps_*_validate() before estimating.
 */
#ifndef APSEARCH_TYPES_H
#define APSEARCH_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Largest pipeline degree the fixed-size per-stage arrays hold. */
#define APS_MAX_STAGES 256
/** Largest accepted parallel degree or batch dimension (aps_check_degrees:
 *  tp, pp, vpp, cp, dp, fsdp, micro_batch_size, micro_batch_num): 2^24. */
#define APS_MAX_DEGREE (INT64_C(1) << 24)
/** Most cells a simulated pipeline schedule holds: micro_batch_num x
 *  pp_degree x vpp_degree, each cell a forward and a backward finish time
 *  (16 bytes) and up to four ops of a zero-bubble order (48 bytes): 2^22,
 *  at most 256 MiB.  A pipelined strategy beyond it is refused before
 *  anything is allocated (aps_check_schedule_size); 16384 micro-batches
 *  over 256 model chunks still fit. */
#define APS_MAX_SCHEDULE_CELLS (INT64_C(1) << 22)
/** Capacity of aps_model.moe_dense_layers (explicit dense layers of an
 *  MoE model, Qwen's mlp_only_layers). */
#define APS_MAX_DENSE_LAYER_LIST 64
/** Largest accepted count of multi-token-prediction modules
 *  (aps_model.mtp_layers, aps_training.mtp_num_layers); DeepSeek-V3
 *  publishes one. */
#define APS_MAX_MTP_LAYERS 64
/** Most layers of a hybrid layer pattern (aps_model.hybrid_layer_pattern,
 *  without the NUL); Nemotron-H-56B has 118. */
#define APS_MAX_HYBRID_LAYERS 512
/** Capacity of name strings, including the NUL. */
#define APS_NAME_LEN 64
/** A tri-state option left to the framework's default. */
#define APS_DEFAULT (-1)
/** Megatron-LM's num_layers_at_start_in_bf16 and num_layers_at_end_in_bf16
 *  when first_last_layers_bf16 is on and they are unset
 *  (transformer_config.py l.652-658 @ d98e8a64). */
#define APS_BF16_LAYERS_DEFAULT 1
/** Capacity of a filter reason message, including the NUL: the longest a
 *  check writes (a hybrid model's FSDP2 refusal with its fix, about 300
 *  bytes) with room to spare; a longer one ends in "..." (aps_fmt). */
#define APS_REASON_LEN 512

/* ------------------------------------------------------------------ status */

/** Result of every C API call (SQLite style: 0 is success). */
typedef enum {
    APS_OK = 0,
    APS_EINVAL,        /**< bad input: a field out of range; message names it */
    APS_ENOTIMPL,      /**< a model or strategy apsearch does not model (MoE) */
    APS_ERANGE,        /**< a value overflows what can be represented */
    APS_ENOMEM         /**< an allocation the estimate needs failed (the
                            process's memory limit, e.g. ulimit -v) */
} aps_status;

/* ------------------------------------------------------------------- model */

/** MLP kind: swiglu (gated, 3 matrices), gelu (2 matrices), relu2 (2
 *  matrices, squared ReLU max(x, 0)^2 without a gate: Nemotron-H
 *  mlp_hidden_act "relu2", Megatron --squared-relu), xielu (2 matrices,
 *  xIELU between them: Apertus's hidden_act "xielu", whose alpha_p and
 *  alpha_n are APS_XIELU_PARAMS learned scalars per MLP, transformers
 *  activations.py XIELUActivation); gelu, relu2 and xielu have the same
 *  FLOPs and saved bytes (an element-wise activation of the fc1 output). */
typedef enum {
    APS_MLP_SWIGLU = 0,
    APS_MLP_GELU,
    APS_MLP_RELU2,
    APS_MLP_XIELU
} aps_mlp;
/** Learned scalars of one xIELU activation: alpha_p and alpha_n, each an
 *  nn.Parameter of shape (1,); beta and eps are buffers (transformers
 *  activations.py XIELUActivation; swiss-ai/Megatron-LM 81d44dbe
 *  megatron/training/activations.py XIELU). */
#define APS_XIELU_PARAMS 2
/** The activation of a gated MLP (mlp = swiglu, "gated, 3 matrices"): SiLU
 *  (SwiGLU, the default); GELU with the tanh approximation (GeGLU as Gemma's
 *  gelu_pytorch_tanh); quick GELU x * sigmoid(1.702 x) (gpt-oss's experts);
 *  Kimi K3's SiTU, beta tanh(g / beta) sigmoid(g) times the bounded up
 *  projection beta' tanh(u / beta'), in fp32 eager ops (NeMo AutoModel
 *  components/models/kimi_k3/model.py @ 36044ad3 SituAndMul): it changes
 *  the saved bytes and the memory traffic (memory.c, compute.c).  The
 *  others change neither memory nor FLOPs; the launch configs write them. */
typedef enum {
    APS_GLU_SILU = 0, APS_GLU_GELU_TANH, APS_GLU_QUICK_GELU, APS_GLU_SITU,
    APS_GLU_GELU /**< exact (erf) GELU: transformers' "gelu" (GeGLU) */
} aps_glu_activation;
typedef enum { APS_NORM_RMSNORM = 0, APS_NORM_LAYERNORM } aps_norm;
/** The mixer of a model's linear-attention layers (src/core/gdn.c):
 *  Qwen3-Next's Gated DeltaNet (one decay per head, a fused in_proj),
 *  Kimi Linear's Kimi Delta Attention (one decay per key channel from a
 *  low-rank forget gate, a low-rank output gate; transformers models/
 *  kimi_linear, NeMo AutoModel components/models/kimi_linear @ 36044ad3)
 *  or LFM2's gated short convolution (in_proj h -> 3h into B, C, x; a
 *  depthwise causal conv over B x; C times its output; out_proj h -> h;
 *  transformers models/lfm2 Lfm2ShortConv @ 0096ba4f) or MiniMax-Text-01
 *  / M1's lightning attention (qkv_proj h -> 3 H d through SiLU, a decayed
 *  linear attention over blocks of linear_block_size tokens, an RMSNorm
 *  over H d gated by sigmoid(output_gate(x)), out_proj; transformers
 *  models/minimax MiniMaxLightningAttention @ 008e5743) or Jamba's
 *  Mamba-1 mixer (in_proj h -> 2D into x, z; a depthwise causal conv over
 *  x; x_proj D -> R + 2N into dt, B, C, each RMS-normed; dt_proj R -> D;
 *  the selective scan over a D x N state; out_proj D -> h; transformers
 *  models/jamba JambaMambaMixer, src/core/selscan.c). */
typedef enum {
    APS_LINEAR_GDN = 0, APS_LINEAR_KDA, APS_LINEAR_SHORT_CONV,
    APS_LINEAR_LIGHTNING, APS_LINEAR_MAMBA1
} aps_linear_attention;
/** Position embedding: RoPE, learned absolute, ALiBi, or none (Nemotron-H's
 *  attention layers: Megatron --position-embedding-type none). */
typedef enum {
    APS_POS_ROPE = 0, APS_POS_LEARNED, APS_POS_ALIBI, APS_POS_NONE
} aps_pos;
/** RoPE frequency scaling, Hugging Face `rope_scaling.rope_type` (or
 *  `type`): none; llama3 (Llama 3.1/3.2/3.3: long wavelengths divided by
 *  the factor, short kept, a smooth ramp between); linear (positions
 *  divided by the factor); yarn; longrope.  Does not change memory or
 *  FLOPs. */
typedef enum {
    APS_ROPE_SCALING_NONE = 0, APS_ROPE_SCALING_LLAMA3,
    APS_ROPE_SCALING_LINEAR, APS_ROPE_SCALING_YARN,
    APS_ROPE_SCALING_LONGROPE /* Phi-3 / PhiMoE: per-dim short and long
                                 factors (transformers
                                 _compute_longrope_parameters) */
} aps_rope_scaling;

/**
 * normalized_model_config: a dense decoder-only transformer.
 * Symbols of MODELING.md: L, h, a, k, d, f, V.
 */
typedef struct {
    char name[APS_NAME_LEN];
    int64_t num_layers;              /**< L */
    int64_t hidden_size;             /**< h */
    int64_t num_attention_heads;     /**< a */
    int64_t num_query_groups;        /**< k (kv heads); = a for MHA */
    int64_t head_dim;                /**< d; h/a unless set explicitly */
    int64_t ffn_hidden_size;         /**< f */
    int64_t vocab_size;              /**< V, unpadded */
    int64_t max_position_embeddings; /**< learned positions only */
    int64_t norms_per_layer;         /**< 2 (pre-attn, pre-mlp); Gemma-2: 4 */
    aps_mlp mlp;
    aps_norm norm;
    aps_pos position_embedding;
    bool norm_bias;                  /**< LayerNorm with bias (GPT); MPT: off */
    bool qkv_bias;                   /**< Q, K, V biases (Qwen2, GPT-2) */
    bool attn_out_bias;              /**< attention output projection bias */
    bool mlp_bias;                   /**< MLP biases; with experts, every
                                          expert's (gpt-oss gate_up_proj_bias,
                                          down_proj_bias) and the shared
                                          expert's */
    bool qk_norm;                    /**< per-head RMSNorm on Q and K (Qwen3) */
    bool qk_norm_full_width;         /**< with qk_norm: one RMSNorm over the
                                          whole Q projection (a*d weights) and
                                          one over the whole K (k*d), not per
                                          head (OLMoE: transformers
                                          OlmoeAttention q_norm, k_norm) */
    bool qk_norm_head_weights;       /**< with qk_norm: per-head norms whose
                                          weight is each head's own, a*d for
                                          Q and k*d for K, split with the
                                          heads (Command R+: transformers
                                          CohereAttention q_norm, k_norm of
                                          (heads, head_dim)); the statistic
                                          per head, as Qwen3's */
    bool qk_norm_weightless;         /**< with qk_norm: per-head RMSNorms
                                          without a weight (Muse Glimmer:
                                          NeMo AutoModel 36044ad3
                                          MuseGlimmerScalelessRMSNorm), 0
                                          parameters, the same work */
    bool attention_sinks;            /**< a learned sink logit per query head
                                          and layer (a weights; gpt-oss:
                                          transformers GptOssAttention.sinks);
                                          counted, not in the attention cost */
    bool tie_word_embeddings;
    bool reordered_norm;             /**< the layer's two norms after
                                          attention and after the MLP,
                                          before each residual add, not
                                          before them (OLMo 2 / Olmo 3:
                                          transformers Olmo2DecoderLayer
                                          post_attention_layernorm,
                                          post_feedforward_layernorm;
                                          OLMo-core "reordered_norm").  The
                                          same parameters and work */
    bool rotary_interleaved;         /**< RoPE rotates pairs of even and
                                          odd dims (GLM-4: transformers
                                          modeling_glm apply_rotary_pos_emb
                                          repeat_interleave), not first and
                                          second halves; Megatron
                                          TransformerConfig.rotary_interleaved.
                                          Changes no estimate */
    bool embedding_norm;             /**< a norm (of the model's kind) on
                                          the word embeddings, before the
                                          first layer (BLOOM: transformers
                                          word_embeddings_layernorm);
                                          counted with the embedding on
                                          the first stage, its work not
                                          priced */
    bool norm_weightless;            /**< every norm (the layers' and the
                                          final one) without a learnable
                                          weight or bias: 0 parameters
                                          (OLMo 1: transformers
                                          OlmoLayerNorm, F.layer_norm(x,
                                          shape, None, None)).  The same
                                          work */
    bool parallel_attn_mlp;          /**< attention and MLP read the same
                                          normed input and add to the
                                          residual together (Cohere2:
                                          transformers Cohere2DecoderLayer,
                                          one input_layernorm).  The same
                                          work; norms_per_layer says the
                                          norms */
    bool mup_multipliers;            /**< constant multipliers on the
                                          embeddings, the residual
                                          branches, the attention scores
                                          (in place of 1/sqrt(d)) and the
                                          logits (Granite: transformers
                                          GraniteConfig embedding_multiplier,
                                          residual_multiplier,
                                          attention_multiplier,
                                          logits_scaling; Cohere2's
                                          logit_scale).  Changes no
                                          estimate */
    bool lm_head_bias;               /**< the output layer has a bias of V
                                          (PhiMoE: transformers
                                          PhimoeForCausalLM lm_head,
                                          bias=config.lm_head_bias) */
    int64_t sliding_window;          /**< local attention window, tokens
                                          (Mistral-7B-v0.1 4096); 0: none */
    int64_t sliding_window_layers;   /**< layers that use it (Gemma-2: every
                                          other); 0 with a window: all */
    bool qk_l2_norm;                 /**< Q and K L2-normalised per head,
                                          without weights, on the layers with
                                          RoPE (Llama 4: transformers
                                          Llama4TextL2Norm, use_qk_norm,
                                          modeling_llama4.py @ 000c33fd); no
                                          parameters; not with qk_norm */
    int64_t nope_layer_period;       /**< k > 0: every k-th layer (1-based)
                                          has no position embedding (Llama 4
                                          NoPE layers, no_rope_layer_interval
                                          4; Megatron --no-rope-freq k), in
                                          [2, num_layers], RoPE only; changes
                                          no estimate; 0: RoPE on every layer */
    int64_t attention_chunk_size;    /**< C > 0: chunked attention, a query
                                          attends only to the keys of its own
                                          C-token chunk (Llama 4
                                          attention_chunk_size 8192,
                                          transformers create_chunked_causal_
                                          mask); on chunked_attention_layers
                                          layers; not with a sliding window;
                                          0: none */
    int64_t chunked_attention_layers; /**< layers that use it (Llama 4: the
                                          RoPE layers); 0 with a chunk: all */
    int64_t sliding_window_period;   /**< k > 0: the windowed layers are those
                                          whose 1-based number is not a
                                          multiple of k (Gemma-2, gpt-oss 2,
                                          Gemma-3 6: transformers' layer_types;
                                          Megatron --window-attn-skip-freq k),
                                          and sliding_window_layers is
                                          L - floor(L / k); 0: not given */
    char sliding_window_layout[APS_MAX_HYBRID_LAYERS + 1]; /**< one letter
                                          a layer, S windowed, F full, where
                                          no period places the window (CWM:
                                          the 0-based layers i % 4 == 0 full,
                                          transformers modular_cwm.py; Megatron
                                          --window-attn-skip-freq's list form,
                                          1 windowed, 0 full); its S count is
                                          sliding_window_layers; not with a
                                          period; "": not given */
    /* A second attention shape on the layers without the sliding window
     * (Gemma 4's full-attention layers: transformers Gemma4TextAttention,
     * models/gemma4/modeling_gemma4.py @ c308a309).  All three 0 / false:
     * every layer has the shape above.  Not with multi-head latent
     * attention, a hybrid or Gated DeltaNet model, DSA or chunking. */
    int64_t global_head_dim;         /**< head width of those layers (HF
                                          global_head_dim); 0: head_dim */
    int64_t global_num_attention_heads; /**< their query heads (HF
                                          num_attention_heads_per_layer on
                                          the full-attention layers,
                                          Laguna); 0: num_attention_heads */
    int64_t global_num_query_groups; /**< their KV heads (HF
                                          num_global_key_value_heads with
                                          attention_k_eq_v); 0:
                                          num_query_groups */
    bool global_k_eq_v;              /**< those layers have no V projection:
                                          V is K's projection output through
                                          its own weightless norm (HF
                                          attention_k_eq_v); K and V are
                                          still two tensors */
    /* MiMo-V2-Flash's attention (vLLM vllm/model_executor/models/
     * mimo_v2_flash.py @ 01ed47b4, MiMoV2Attention): V heads narrower than
     * Q/K's, and sinks on the windowed layers only.  Not with multi-head
     * latent attention, a hybrid or Gated DeltaNet model, DSA or the
     * attention output gate. */
    int64_t attn_v_head_dim;         /**< V head width of every attention
                                          layer (HF v_head_dim beside
                                          head_dim, MiMo-V2-Flash 128 with
                                          192): v_proj k x it, o_proj reads
                                          a x it; 0: the layer's head
                                          width */
    bool window_attention_sinks;     /**< with attention_sinks: the sinks
                                          are on the windowed layers only
                                          (HF add_swa_attention_sink_bias
                                          without add_full_attention_sink_
                                          bias); needs a global attention
                                          shape */
    /* Numerics that change neither memory nor FLOPs, carried so that the
     * launch configs describe the exact model.  0 = not given (the
     * framework's default) or none; otherwise finite and > 0. */
    double rope_theta;               /**< RoPE base (HF rope_theta: Llama 2
                                          10000, Llama 3.1 500000); 0: not
                                          given */
    aps_rope_scaling rope_scaling_type; /**< none unless a factor is given */
    double rope_scaling_factor;      /**< rope_scaling.factor (Llama 3.1: 8);
                                          0: none; needs a scaling type */
    double low_freq_factor;          /**< llama3 scaling: rope_scaling.
                                          low_freq_factor (1); 0: not given */
    double high_freq_factor;         /**< llama3 scaling: rope_scaling.
                                          high_freq_factor (4); 0: not given */
    int64_t original_max_position_embeddings; /**< rope_scaling.original_max_
                                          position_embeddings, the pre-scaling
                                          context (8192); 0: not given */
    double yarn_beta_fast;           /**< yarn scaling: rope_scaling.beta_fast,
                                          rotations where the ramp ends
                                          (DeepSeek-V3: 32); 0: not given */
    double yarn_beta_slow;           /**< yarn scaling: rope_scaling.beta_slow
                                          (DeepSeek-V3: 1); 0: not given */
    double yarn_mscale;              /**< yarn scaling: rope_scaling.mscale,
                                          the cos/sin magnitude's log
                                          coefficient (DeepSeek-V3: 1);
                                          0: not given */
    double yarn_mscale_all_dim;      /**< yarn scaling: rope_scaling.
                                          mscale_all_dim, the softmax scale's
                                          (DeepSeek-V3: 1); 0: not given
                                          (Megatron's and transformers'
                                          default) */
    double yarn_attention_factor;    /**< yarn scaling: rope_scaling.
                                          attention_factor, the cos/sin
                                          factor given outright (transformers
                                          _compute_yarn_parameters uses it in
                                          place of the mscale ratio); 0: not
                                          given */
    bool yarn_no_truncate;           /**< yarn scaling: rope_scaling.truncate
                                          is false (gpt-oss): the ramp's ends
                                          are not rounded to integers
                                          (Megatron's --no-yarn-correction-
                                          range-round-to-int); false: rounded,
                                          transformers' default */
    double rotary_percent;           /**< fraction of each head's Q/K dims
                                          RoPE rotates, the rest pass through
                                          (HF partial_rotary_factor: GLM-4.5
                                          0.5, transformers modeling_glm4_moe.py
                                          apply_rotary_pos_emb @ 000c33fd;
                                          Megatron --rotary-percent); in
                                          (0, 1], RoPE only; 0: not given
                                          (1, every dim) */
    double norm_eps;                 /**< epsilon of every RMSNorm/LayerNorm
                                          (HF rms_norm_eps, layer_norm_eps(ilon));
                                          0: not given */
    aps_glu_activation glu_activation; /**< the gated MLP's activation
                                          (mlp = swiglu only) */
    double glu_linear_offset;        /**< act(gate) * (up + offset) (gpt-oss
                                          1); 0: none; mlp = swiglu only */
    double glu_clamp;                /**< gate clamped to <= c, up to [-c, c]
                                          before the activation (gpt-oss
                                          swiglu_limit 7); 0: none */
    double attn_logit_softcapping;   /**< attention scores c tanh(s / c)
                                          (Gemma-2 50); 0: none */
    double final_logit_softcapping;  /**< output logits c tanh(z / c)
                                          (Gemma-2 30); 0: none */
    /* Mixture of experts (issue 13).  num_experts = 0: a dense model, and
     * every field below down to moe_dense_layers must be 0 / false / empty.
     * Layer i (0-based) has routed experts when i >= moe_first_dense_layers,
     * i % moe_layer_freq == moe_layer_phase and i is not listed in
     * moe_dense_layers; the other layers have a dense FFN of width
     * ffn_hidden_size.  Estimated by src/core/moe.c (the strategy's
     * ep_degree, etp_degree, dispatcher, capacity, grouped GEMM). */
    int64_t num_experts;             /**< E: routed experts per MoE layer
                                          (HF num_local_experts, num_experts,
                                          n_routed_experts); 0: dense */
    int64_t experts_per_token;       /**< top-k (HF num_experts_per_tok),
                                          in [1, E] */
    int64_t moe_ffn_hidden_size;     /**< width of one routed expert (HF
                                          moe_intermediate_size; Mixtral:
                                          intermediate_size) */
    int64_t shared_expert_ffn_hidden_size; /**< total width of the always-
                                          active shared expert(s) (DeepSeek
                                          n_shared_experts x moe_intermediate_
                                          size; Qwen2-MoE shared_expert_
                                          intermediate_size); 0: none */
    bool shared_expert_gate;         /**< Qwen2-MoE: a sigmoid gate h -> 1
                                          on the shared expert (h weights) */
    bool moe_router_bias;            /**< a per-expert router score bias (E
                                          weights; DeepSeek-V3 e_score_
                                          correction_bias, Megatron --moe-
                                          router-enable-expert-bias) */
    bool moe_router_fp32;            /**< the router's logits and the
                                          experts' weighting in fp32
                                          (Megatron --moe-router-dtype fp32,
                                          as Megatron-Bridge's bridge of the
                                          family sets it); a launch setting:
                                          changes no estimate */
    int64_t moe_latent_size;         /**< latent MoE (Nemotron 3 Super; HF
                                          moe_latent_size, Megatron --moe-
                                          latent-size): each MoE block
                                          projects the token h -> l before
                                          dispatch (fc1_latent_proj) and
                                          l -> h after combine
                                          (fc2_latent_proj), both duplicated
                                          over TP; the routed experts and the
                                          dispatcher work at width l, the
                                          router and the shared expert at h
                                          (moe.c); 0: none */
    bool moe_latent_norm;            /**< an RMSNorm over the experts'
                                          l-wide output before the up
                                          projection (Kimi K3 latent_moe_
                                          use_norm, KimiK3MoE.routed_
                                          expert_norm) */
    bool moe_router_sigmoid;         /**< the routing scores are sigmoids of
                                          the logits, with no expert bias
                                          (Llama 4 Llama4Router; Megatron
                                          --moe-router-score-function
                                          sigmoid); moe_router_bias implies a
                                          sigmoid already; no parameters */
    bool moe_router_softmax_bias;    /**< with moe_router_bias: the expert
                                          bias is added to softmax scores, not
                                          sigmoids, to choose the top-k (ERNIE
                                          4.5 Ernie4_5_MoeStatics); Megatron
                                          takes the bias with sigmoid scores
                                          only; no parameters */
    bool moe_router_input_probs;     /**< the routing weight scales the
                                          expert's input, not its output
                                          (Llama 4 Llama4TextMoe: routed_in =
                                          hidden * score; Megatron --moe-
                                          apply-probs-on-input); top-1 only;
                                          no parameters */
    bool moe_router_scales;          /**< the router scales its input by h
                                          weights and the chosen experts'
                                          weights by E per-expert weights
                                          (Gemma 4 Gemma4TextRouter scale,
                                          per_expert_scale; h + E per MoE
                                          layer) */
    bool moe_router_linear_bias;     /**< the router's linear layer has a
                                          bias added to the logits before
                                          top-k (E weights; gpt-oss:
                                          transformers GptOssTopKRouter.bias);
                                          not moe_router_bias's load-balancing
                                          selection bias */
    /* Router settings of the model's training recipe (HF config.json; see
     * lua/apsearch/hf.lua).  They change no estimate: no memory, FLOP or
     * time term reads them; the launchers write them (lua/apsearch/launch)
     * and src/core/model.c only checks them.  0 / false: not given (the
     * framework's default applies). */
    double moe_aux_loss_coeff;       /**< load-balancing loss coefficient
                                          (HF router_aux_loss_coef: Mixtral,
                                          Qwen2/Qwen3-MoE, OLMoE; aux_loss_
                                          alpha: DeepSeek-V2/V3; Megatron
                                          --moe-aux-loss-coeff, Megatron-
                                          Bridge CONFIG_MAPPING @ v0.5.0);
                                          finite, >= 0; 0: not given */
    bool moe_seq_aux_loss;           /**< the loss is computed per sequence
                                          (DeepSeek seq_aux = true; Megatron
                                          --moe-router-load-balancing-type
                                          seq_aux_loss); needs
                                          moe_aux_loss_coeff > 0 */
    int64_t moe_router_num_groups;   /**< group-limited routing: experts in
                                          this many equal groups (DeepSeek
                                          n_group; Megatron --moe-router-
                                          num-groups); divides num_experts;
                                          0: no groups */
    int64_t moe_router_group_topk;   /**< groups each token may use (DeepSeek
                                          topk_group; --moe-router-group-
                                          topk), in [1, moe_router_num_
                                          groups], and those groups hold at
                                          least experts_per_token experts */
    int64_t moe_router_group_score_topk; /**< a group's score is the sum of
                                          its this-many best expert scores
                                          (DeepSeek-V3 noaux_tc: 2, top-2;
                                          DeepSeek-V2 group_limited_greedy:
                                          1, the max); Megatron's group_
                                          limited_topk uses experts_per_
                                          token / group_topk; in [1, num_
                                          experts / num_groups]; 0: not
                                          given (Megatron's rule) */
    double moe_router_topk_scaling_factor; /**< the routing weights are
                                          multiplied by it (DeepSeek routed_
                                          scaling_factor; --moe-router-topk-
                                          scaling-factor); finite, >= 0;
                                          0: not given (no scaling) */
    bool moe_router_pre_softmax;     /**< the chosen experts' weights are
                                          their scores over all experts, not
                                          renormalised over the top k (HF
                                          norm_topk_prob = false; Megatron
                                          --moe-router-pre-softmax: softmax
                                          before top-k); false: renormalised
                                          (Mixtral, norm_topk_prob = true;
                                          Megatron's default) */
    int64_t moe_first_dense_layers;  /**< leading layers with a dense FFN
                                          (DeepSeek first_k_dense_replace) */
    int64_t moe_layer_freq;          /**< k >= 1: every k-th layer is MoE
                                          (DeepSeek moe_layer_freq, Qwen
                                          decoder_sparse_step); 0 with
                                          num_experts > 0 is read as 1 */
    int64_t moe_layer_phase;         /**< which of each k layers: i % k ==
                                          phase, in [0, k) (DeepSeek 0, Qwen
                                          (i + 1) % k == 0: k - 1) */
    int64_t moe_dense_layer_count;   /**< entries of moe_dense_layers */
    int64_t moe_dense_layers[APS_MAX_DENSE_LAYER_LIST]; /**< explicit dense
                                          layers, 0-based, ascending (Qwen
                                          mlp_only_layers) */
    /* Multi-head latent attention (DeepSeek-V2/V3).  kv_lora_rank = 0:
     * ordinary attention and the other four must be 0; kv_lora_rank > 0:
     * Q/K/V/O come from these instead of a, k and d (head_dim then holds
     * qk_nope_head_dim + qk_rope_head_dim). */
    int64_t q_lora_rank;             /**< query compression rank; 0: none
                                          (a plain q_proj, DeepSeek-V2-Lite) */
    int64_t kv_lora_rank;            /**< joint K/V compression rank */
    int64_t qk_nope_head_dim;        /**< per-head Q/K width without RoPE */
    int64_t qk_rope_head_dim;        /**< per-head Q/K width with RoPE (the K
                                          part shared by every head) */
    int64_t v_head_dim;              /**< per-head V width */
    /* Hybrid Mamba-2 models (Nemotron-H; src/core/hybrid.c).  An empty
     * hybrid_layer_pattern: a transformer, every layer attention + MLP, and
     * the mamba_* fields must be 0.  Otherwise each character is one layer
     * (one pre-norm and one mixer, megatron/core/models/hybrid/
     * hybrid_layer_allocation.py @ d98e8a64 Symbols): M Mamba-2, * self-
     * attention, - MLP, E MoE (num_experts ...); num_layers its length. */
    char hybrid_layer_pattern[APS_MAX_HYBRID_LAYERS + 1]; /**< Megatron
                                          --hybrid-layer-pattern (HF
                                          hybrid_override_pattern) */
    int64_t mamba_num_heads;         /**< nh: SSM heads (HF mamba_num_heads) */
    int64_t mamba_head_dim;          /**< P: channels per head; d_inner =
                                          nh P (HF mamba_head_dim) */
    int64_t mamba_state_dim;         /**< N: state size (HF ssm_state_size) */
    int64_t mamba_num_groups;        /**< G: B/C groups (HF n_groups) */
    int64_t mamba_conv_kernel;       /**< depthwise conv width (HF
                                          conv_kernel); 0: 4 */
    int64_t mamba_chunk_size;        /**< SSD chunk length Q (HF chunk_size);
                                          0: 128; changes no estimate */
    bool mamba_no_rmsnorm;           /**< the Mamba-2 mixer gates its output
                                          without the gated RMSNorm, so it
                                          has no norm weights (Megatron
                                          MambaMixer rmsnorm=False; HF
                                          Falcon-H1 mamba_rms_norm false) */
    char mtp_layer_pattern[APS_MAX_HYBRID_LAYERS + 1]; /**< the layers of
                                          each multi-token-prediction depth
                                          of a hybrid model, in the
                                          pattern's symbols (HF
                                          mtp_hybrid_override_pattern;
                                          Megatron the part after '/' of
                                          --hybrid-layer-pattern); empty:
                                          none (hybrid.c) */
    /* Gated DeltaNet linear attention (Qwen3-Next; src/core/gdn.c).
     * linear_attention_period = 0 and no linear_attention_pattern: none,
     * and the linear_* fields must be 0.  k > 0: layer i (1-based) has gated softmax attention when i % k
     * == 0, else a Gated DeltaNet mixer (HF full_attention_interval;
     * Megatron --linear-attention-freq k). */
    int64_t linear_attention_period; /**< k; 0: every layer attention */
    int64_t linear_num_key_heads;    /**< nk: q / k heads of the delta rule */
    int64_t linear_num_value_heads;  /**< nv: v / gate heads; nk divides it */
    int64_t linear_key_head_dim;     /**< dk */
    int64_t linear_value_head_dim;   /**< dv */
    int64_t linear_conv_kernel_dim;  /**< depthwise conv width (HF 4;
                                          LFM2's conv_L_cache, 3); 0 for
                                          lightning attention (no conv) */
    int64_t linear_block_size;       /**< tokens of one block of lightning
                                          attention (HF block_size, 256):
                                          within a block the decayed
                                          attention is computed as Q K^T,
                                          across blocks through the H d x d
                                          state; 0 for the other mixers */
    int64_t linear_inner_size;       /**< D: channels of a Mamba-1 mixer
                                          (HF mamba_expand x hidden_size);
                                          0 for the other mixers */
    int64_t linear_state_dim;        /**< N: state per channel of a Mamba-1
                                          mixer (HF mamba_d_state, 16) */
    int64_t linear_dt_rank;          /**< R: rank of a Mamba-1 mixer's time
                                          step projection (HF mamba_dt_rank,
                                          ceil(hidden_size / 16) for "auto") */
    bool linear_beta_doubled;        /**< the Gated DeltaNet's beta is 2
                                          sigmoid(b), in [0, 2] (OLMo Hybrid
                                          linear_allow_neg_eigval,
                                          transformers modular_olmo_hybrid.py
                                          @ 009e78d6); element-wise, changes
                                          no estimate; Megatron-LM's is
                                          sigmoid(b) */
    bool linear_output_gate_full_rank; /**< KDA's output gate one h -> V
                                          projection (Kimi K3 use_full_rank_
                                          gate, g_proj), not the low-rank
                                          pair g_a, g_b */
    bool mla_output_gate;            /**< MLA's context multiplied by
                                          sigmoid(x W_g), W_g h x a dv
                                          (Kimi K3 mla_use_output_gate,
                                          KimiMLAAttention.g_proj) */
    int64_t attn_res_block_size;     /**< Kimi K3's block attention
                                          residuals (AttnRes, src/core/
                                          attnres.c): each sub-layer's input
                                          a softmax mix of the completed
                                          blocks of this many layers and the
                                          running sum; 0: the additive
                                          residual */
    /* Heterogeneous layers (Llama-Nemotron NAS, HF model_type nemotron-nas,
     * block_configs; Megatron --heterogeneous-layers-config-path;
     * src/core/nas.c).  Empty patterns: every layer alike. */
    char nas_attention_pattern[APS_MAX_HYBRID_LAYERS + 1]; /**< one letter
                                          a layer: A attention (GQA of
                                          num_query_groups), - none (no-op:
                                          no block, no norm) */
    char nas_ffn_pattern[APS_MAX_HYBRID_LAYERS + 1]; /**< one letter a
                                          layer: a, b, ... the MLP of that
                                          width of nas_ffn_widths, - none */
    char nas_ffn_widths[APS_MAX_HYBRID_LAYERS + 1]; /**< the MLP widths
                                          the letters name, comma separated
                                          ("28672,7168"); ffn_hidden_size is
                                          the widest */
    aps_linear_attention linear_attention; /**< the linear layers' mixer:
                                          Gated DeltaNet (default), Kimi
                                          Delta Attention, LFM2's gated
                                          short convolution, MiniMax's
                                          lightning attention or Jamba's
                                          Mamba-1 mixer (gdn.c; the short
                                          convolution reads only
                                          linear_conv_kernel_dim, its
                                          width is hidden_size; Mamba-1
                                          reads linear_inner_size,
                                          linear_state_dim, linear_dt_rank
                                          and the conv width) */
    char linear_attention_pattern[APS_MAX_HYBRID_LAYERS + 1]; /**< one
                                          letter a layer, L linear
                                          attention, A full attention
                                          (Kimi Linear's full_attn_layers;
                                          Megatron --linear-attention-freq
                                          as a list); empty: the period's
                                          rule.  Set instead of
                                          linear_attention_period */
    bool attention_output_gate;      /**< the softmax attention's output is
                                          multiplied by sigmoid(x W_g), W_g
                                          in q_proj (its width doubles:
                                          transformers Qwen3NextAttention;
                                          Megatron --attention-output-gate) */
    bool attention_head_gate;        /**< one gate per query head on the
                                          attention output: g_proj h x a,
                                          softplus (Laguna gating true /
                                          "per-head", transformers
                                          LagunaAttention) or sigmoid
                                          (Step-3.5 use_head_wise_attn_
                                          gate, vLLM step3p5.py),
                                          multiplied into the context head
                                          by head; not with
                                          attention_output_gate */
    bool norm_zero_centered;         /**< norm weights w used as 1 + w
                                          (Qwen3NextRMSNorm, Nemotron's
                                          LayerNorm1P; Megatron
                                          --apply-layernorm-1p); changes no
                                          estimate */
    int64_t mtp_layers;              /**< multi-token-prediction modules (HF
                                          num_nextn_predict_layers); counted
                                          apart (aps_param_counts.mtp), not in
                                          total */
    bool mtp_shared_embeddings;      /**< the MTP modules run the model's own
                                          embedding and output layer, with no
                                          copies of them in the checkpoint
                                          (Ling 2.0's BailingMoeV2MTPLayer);
                                          false: DeepSeek-V3's checkpoint
                                          copies, counted in
                                          aps_param_counts.mtp */
    /* DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5; src/core/dsa.c):
     * on every MLA layer a lightning indexer scores each query against its
     * causal keys and the attention reads only the index_topk best
     * (Megatron-LM d98e8a64 megatron/core/transformer/
     * experimental_attention_variant/dsa.py DSAIndexer, DSAttention;
     * transformers DeepseekV32Indexer).  index_n_heads = 0: none, and the
     * other two must be 0; > 0 needs multi-head latent attention. */
    int64_t index_n_heads;           /**< indexer heads Hi (HF index_n_heads;
                                          Megatron --dsa-indexer-n-heads) */
    int64_t index_head_dim;          /**< indexer head width Di, its first
                                          qk_rope_head_dim rotated (HF
                                          index_head_dim; --dsa-indexer-
                                          head-dim) */
    int64_t index_topk;              /**< keys each query attends to (HF
                                          index_topk; --dsa-indexer-topk) */
    bool index_rope_interleave;      /**< the indexer's RoPE rotates
                                          interleaved pairs (GLM-5 HF
                                          indexer_rope_interleave; Megatron
                                          --dsa-indexer-rope-interleaved);
                                          changes no estimate; DSA only */
    /* Cross-layer top-k sharing (GLM-5.2; Megatron-LM d98e8a64 megatron/
     * core/transformer/experimental_attention_variant/dsa.py
     * is_dsa_skip_topk_layer): 1-based layer n computes its own top-k iff
     * max(n - max(offset, 1), 0) % freq == 0, every other layer builds no
     * indexer and reuses the top-k of the last computing layer before it,
     * which must be in its own pipeline model chunk.  0 or 1: every layer
     * computes (Megatron's default 1). */
    int64_t index_topk_freq;         /**< HF index_topk_freq; Megatron
                                          --dsa-indexer-topk-freq */
    int64_t index_skip_topk_offset;  /**< HF index_skip_topk_offset;
                                          --dsa-indexer-skip-topk-offset */
    /* MiniMax-M3's block-sparse attention (src/core/msa.c; NeMo
     * AutoModel 00affc66 components/models/minimax_m3_vl/layers.py
     * MiniMaxM3Indexer, select_sparse_blocks): on msa_layers of the
     * layers a selection-only indexer scores every causal key and each
     * query attends to the msa_topk_blocks best blocks of msa_block_size
     * keys (its own block, msa_local_blocks = 1, and the first
     * msa_init_blocks forced).  msa_layers = 0: none, and the rest 0;
     * GQA mixture-of-experts models only. */
    int64_t msa_layers;              /**< layers with it (HF
                                          sparse_attention_config.
                                          sparse_attention_freq non-zero) */
    int64_t msa_index_heads;         /**< index query heads Hi
                                          (sparse_num_index_heads) */
    int64_t msa_index_dim;           /**< their width Di, and the one
                                          shared index key's
                                          (sparse_index_dim) */
    int64_t msa_block_size;          /**< keys per block B
                                          (sparse_block_size) */
    int64_t msa_topk_blocks;         /**< blocks a query attends to K
                                          (sparse_topk_blocks) */
    int64_t msa_init_blocks;         /**< leading blocks always attended
                                          (sparse_init_block) */
    int64_t msa_local_blocks;        /**< the query's own block attended:
                                          1 (sparse_local_block) */
    /* DeepSeek-V4 (src/core/dsv4.c; transformers models/deepseek_v4/
     * modeling_deepseek_v4.py @ 36145589): shared-KV MQA (num_query_groups
     * 1) with a low-rank query (q_lora_rank), a grouped low-rank output
     * projection, sinks and a sliding window on every layer; on csa_layers
     * layers a compressor of csa_compress_rate tokens per entry with the
     * lightning indexer (index_n_heads, index_head_dim, index_topk), on
     * hca_layers one of hca_compress_rate; hyper-connections of hc_mult
     * residual streams around every block.  hc_mult = 0: none, and every
     * field below must be 0. */
    int64_t hc_mult;                 /**< mHC residual streams n (HF
                                          hc_mult, 4) */
    int64_t hc_sinkhorn_iters;       /**< Sinkhorn-Knopp iterations of the
                                          comb matrix (HF hc_sinkhorn_iters,
                                          20) */
    int64_t o_groups;                /**< head groups g of the grouped
                                          output projection (HF o_groups) */
    int64_t o_lora_rank;             /**< each group's output width r (HF
                                          o_lora_rank): o_a a d -> g r in g
                                          blocks, o_b g r -> h */
    int64_t csa_layers;              /**< layers with compressed sparse
                                          attention (HF compress_ratios
                                          entries 4 / layer_types
                                          compressed_sparse_attention) */
    int64_t hca_layers;              /**< layers with heavily compressed
                                          attention (compress_ratios 128 /
                                          heavily_compressed_attention); the
                                          rest are sliding-window only */
    int64_t csa_compress_rate;       /**< tokens per CSA entry m (4) */
    int64_t hca_compress_rate;       /**< tokens per HCA entry m' (128) */
    int64_t moe_hash_layers;         /**< leading MoE layers routed by a
                                          token-id table (HF num_hash_layers /
                                          mlp_layer_types hash_moe); the gate
                                          GEMM still runs: no cost apart */
} aps_model;

/* ----------------------------------------------------------------- cluster */

/**
 * One accelerator and its links.  Bandwidths are one direction, per GPU.
 * The efficiency fields are the calibratable parameters of MODELING.md s.4.
 */
typedef struct {
    char name[APS_NAME_LEN];
    double memory_bytes;          /**< capacity visible to the process */
    double peak_flops_bf16;       /**< dense, also used for fp16 */
    double peak_flops_fp8;        /**< dense; 0 if the device has no fp8;
                                       also MXFP8 where the device has
                                       block-scaled tensor cores */
    double peak_flops_fp4;        /**< dense NVFP4; 0 if the device has no
                                       block-scaled (MX / NVFP4) tensor
                                       cores, which MXFP8 needs too */
    double host_bandwidth;        /**< device <-> host memory, one
                                       direction, bytes/s (PCIe Gen5 x16
                                       on x86 hosts, NVLink-C2C on Grace):
                                       activation offload */
    double peak_flops_fp32;       /**< dense, non-tensor-core */
    double hbm_bandwidth;         /**< bytes/s */
    double intra_node_bandwidth;  /**< NVLink per GPU, one direction, bytes/s
                                       (all of a GPU's links to its peers) */
    int64_t intra_node_links;     /**< 0: the host's GPUs meet behind a
                                       switch (NVSwitch), any group of
                                       them reaches intra_node_bandwidth;
                                       L > 0: a fully connected mesh of L
                                       direct links per GPU, each carrying
                                       intra_node_bandwidth / L, so a group
                                       of m GPUs in a host uses m - 1 of
                                       them (AMD Infinity Fabric, 7 links
                                       in an 8-GPU host) */
    double inter_node_bandwidth;  /**< NIC per GPU, one direction, bytes/s */
    double intra_node_latency;    /**< alpha per ring step inside a node, s */
    double inter_node_latency;    /**< alpha per ring step across nodes, s */
    double cuda_context_bytes;    /**< CUDA context + kernels, outside allocator */
    double nccl_comm_bytes;       /**< per NCCL communicator */
    double nccl_nvls_bytes_per_rank; /**< NCCL's NVLS (NVLink SHARP)
                                       buffers on each GPU, per GPU of a
                                       communicator inside one node, for
                                       communicators with more than 2 GPUs
                                       in the node on parts with NVSwitch
                                       multicast (Hopper, Blackwell); 0:
                                       no NVLS (memory.c) */
    double gemm_efficiency;       /**< eta_max: large-GEMM fraction of peak */
    double gemm_half_dim;         /**< k0: GEMM depth K at which the
                                       pipeline term K / (K + k0) halves
                                       the efficiency (src/core/gemm.c) */
    double gemm_tile_m;           /**< GEMM output tile rows (tokens); 0:
                                       no tile or wave quantization */
    double gemm_tile_n;           /**< GEMM output tile columns (features) */
    int64_t sm_count;             /**< SMs (NVIDIA) or CUs (AMD) the tiles
                                       run on in waves; 0: no wave term */
    double gemm_fixed_seconds;    /**< s of every GEMM kernel whatever its
                                       size (launch to first tile, drain) */
    double fp8_gemm_efficiency;   /**< eta_max of fp8 GEMMs */
    double attention_efficiency;  /**< fused (flash) attention kernels,
                                       fraction of the bf16 peak */
    double unfused_attention_efficiency; /**< attention without flash
                                       attention (Megatron's
                                       --attention-backend unfused): the
                                       QK^T and PV batched GEMMs, fraction
                                       of the bf16 peak; the softmax
                                       traffic is counted apart */
    double hbm_efficiency;        /**< achievable fraction of HBM bandwidth */
    double collective_efficiency; /**< bus bandwidth / link bandwidth (NCCL) */
    double host_seconds_per_kernel; /**< host time per kernel the
                                       framework's Python code launches
                                       (op dispatch, autograd, launch), s;
                                       a property of the host CPU (x86 or
                                       Grace: presets.c) */
    double host_seconds_per_loop_kernel; /**< host time per kernel launched
                                       from a C++ loop inside one op
                                       (TransformerEngine's per-expert
                                       quantize kernels), s */
    double host_seconds_per_loop_gemm; /**< host time per GEMM of
                                       TransformerEngine's multi-stream
                                       cuBLASLt loop (the per-expert
                                       GEMMs of GroupedLinear: descriptors,
                                       heuristic query and launch per
                                       GEMM), s */
    double gpu_seconds_per_kernel; /**< GPU time between two kernels of
                                       one stream when the second is
                                       already queued (the front end
                                       starting it), s; every kernel of a
                                       layer program pays it (presets.c,
                                       layerprog.c) */
    double gpu_min_kernel_seconds; /**< the shortest a kernel runs, s:
                                       the MoE router's and dispatcher
                                       preprocess's kernels on T x E
                                       tensors run at least this each
                                       (presets.c, layerprog.c) */
    double ssd_scan_rate;         /**< forward rate of Mamba-2's chunked
                                       SSD scan kernels (mamba_ssm's
                                       Triton kernels), state elements
                                       (tokens x d_inner x d_state) per
                                       second; 0: derived from
                                       hbm_bandwidth (compute.c
                                       aps_ssd_scan_rate) */
} aps_device;

/** What CUDA graphs capture (Megatron-Core --cuda-graph-impl and
 *  --cuda-graph-scope / --cuda-graph-modules, megatron/core/transformer/
 *  enums.py CudaGraphScope @ d98e8a64): the whole layer (TE impl without
 *  a scope), the attention, the MoE router with the dispatcher's
 *  preprocess (moe_router + moe_preprocess), both, or the whole step
 *  (--cuda-graph-impl full_iteration).  Captured kernels cost the host
 *  one graph launch instead of one launch each. */
/** Which peak the memory limit bounds (training.memory_limit_kind):
 *  PyTorch's max_memory_reserved (the caching allocator's segments, what
 *  Megatron's memory report and TorchTitan's log print), max_memory_
 *  allocated (live tensors), or device memory in use (reserved plus the
 *  CUDA context and NCCL buffers, what nvidia-smi shows). */
typedef enum {
    APS_MEM_KIND_RESERVED = 0, APS_MEM_KIND_ALLOCATED, APS_MEM_KIND_DEVICE
} aps_mem_kind;

/** The flex dispatcher's communication library (Megatron-LM
 *  --moe-flex-dispatcher-backend, transformer_config.py @ d98e8a64 l.898,
 *  default deepep): DeepEP, or NVIDIA's HybridEP (TMA / IBGDA kernels,
 *  multi-node NVLink). */
typedef enum {
    APS_FLEX_DEEPEP = 0, APS_FLEX_HYBRIDEP
} aps_flex_backend;

/** The RMSNorm kernel NeMo AutoModel runs (its BackendConfig.rms_norm,
 *  nemo_automodel/components/models/common/utils.py @ 36044ad3): the
 *  framework's own (unset), "torch_fp32" (eager PyTorch in fp32, the
 *  default) or "te" (TransformerEngine's fused RMSNorm). */
typedef enum {
    APS_RMS_NORM_FRAMEWORK = 0, APS_RMS_NORM_TORCH_FP32, APS_RMS_NORM_TE
} aps_rms_norm_backend;

/** The attention kernel NeMo AutoModel's own model classes run (its
 *  BackendConfig.attn, nemo_automodel/components/models/common/utils.py
 *  @ 36044ad3): unset (TransformerEngine's, its default on a GPU with
 *  TransformerEngine; a model built through transformers runs SDPA),
 *  "te", "sdpa" (PyTorch's scaled_dot_product_attention) or "flex"
 *  (FlexAttention).  The estimate reads it where op-level selective
 *  checkpointing saves the kernel's output (sdpa, flex) or runs it again
 *  (te: opsac.c); its efficiency is the software stack's (apsearch.stacks
 *  attention_backend). */
typedef enum {
    APS_ATTN_FRAMEWORK = 0, APS_ATTN_TE, APS_ATTN_SDPA, APS_ATTN_FLEX
} aps_attn_backend;

/** What training.cuda_graphs capture: whole layers (APS_CG_LAYER), a set
 *  of Megatron-Core's per-layer modules (--cuda-graph-modules,
 *  transformer_config.py @ d98e8a64 CudaGraphModule: the bits ATTN, MLP,
 *  MAMBA and MOE_ROUTER, the last with the dispatcher's preprocess, in any
 *  combination), the whole iteration, or nothing.  The module bits are
 *  bit flags; APS_CG_ATTN_MOE_ROUTER is their most common pair. */
typedef enum {
    APS_CG_LAYER = 0,
    APS_CG_ATTN = 1,          /**< the attention block */
    APS_CG_MOE_ROUTER = 2,    /**< MoE router and dispatcher preprocess */
    APS_CG_ATTN_MOE_ROUTER = 3,
    APS_CG_MAMBA = 4,         /**< a hybrid model's Mamba-2 mixer */
    APS_CG_MLP = 8,           /**< a dense MLP block */
    APS_CG_MODULES = 15,      /**< every module bit */
    APS_CG_FULL_ITERATION = 16,
    APS_CG_NONE = 32
} aps_cuda_graph_scope;

/** cluster_config. */
typedef struct {
    aps_device device;
    int64_t num_devices;      /**< N */
    int64_t devices_per_node; /**< G: GPUs per host (compute tray) */
    int64_t nvlink_domain_size; /**< GPUs of the job in one NVLink domain
                                     (GB200/GB300 NVL72 rack: 4 per tray,
                                     up to 72 per domain, jobs often use 64);
                                     0 = one host (devices_per_node) */
} aps_cluster;

/* ---------------------------------------------------------------- training */

/** GEMM precision of the linear layers (activations between layers stay
 *  bf16).  fp8: per-tensor scaling (TransformerEngine delayed/current
 *  scaling, torchao float8 tensorwise); mxfp8: one power-of-two (E8M0)
 *  scale per 32 elements (TransformerEngine MXFP8BlockScaling, Blackwell);
 *  nvfp4: E2M1 4-bit values, an E4M3 scale per 16 elements and an fp32
 *  scale per tensor (TransformerEngine NVFP4BlockScaling, Blackwell). */
typedef enum {
    APS_PREC_BF16 = 0, APS_PREC_FP16, APS_PREC_FP8, APS_PREC_MXFP8,
    APS_PREC_NVFP4
} aps_precision;
/** Adam and AdamW keep the same states (master copy, m, v). */
typedef enum { APS_OPT_ADAM = 0, APS_OPT_SGD, APS_OPT_ADAMW } aps_optimizer;
typedef enum {
    APS_FW_MEGATRON = 0, /**< Megatron-LM / NeMo */
    APS_FW_FSDP2,        /**< TorchTitan (FSDP2, DTensor) */
    APS_FW_FSDP,         /**< PyTorch FSDP1 (llm-foundry) */
    APS_FW_DEEPSPEED,    /**< DeepSpeed ZeRO */
    APS_FW_AUTOMODEL     /**< NVIDIA NeMo AutoModel (FSDP2 over Hugging
                              Face models; MoE with DeepEP / HybridEP or
                              an all-gather dispatcher) */
} aps_framework;
/** Megatron-LM's FSDP implementation (framework megatron): PyTorch's
 *  FSDP2 (--use-torch-fsdp2) or Megatron-FSDP (--use-megatron-fsdp,
 *  megatron/core/distributed/fsdp/ @ d98e8a64). */
typedef enum {
    APS_FSDP_IMPL_TORCH_FSDP2 = 0, /**< --use-torch-fsdp2 (the default) */
    APS_FSDP_IMPL_MEGATRON_FSDP    /**< --use-megatron-fsdp */
} aps_fsdp_impl;

/**
 * training_config plus the framework overheads that are not device facts.
 * All *_overlap fields are fractions in [0, 1] of the named compute window
 * that can hide the named communication.
 */
typedef struct {
    int64_t global_batch_size;     /**< B, sequences */
    int64_t seq_length;            /**< s, tokens */
    aps_precision precision;
    aps_optimizer optimizer;
    aps_framework framework;
    bool flash_attention;          /**< default on */
    int dropout;                   /**< hidden and attention dropout on
                                        (1) or off (0); APS_DEFAULT (-1) =
                                        the framework's default (on in
                                        Megatron-LM and Megatron-DeepSpeed,
                                        off in TorchTitan and llm-foundry;
                                        recipe.c aps_recipe_dropout) */
    double attention_dropout;      /**< probability of the attention-
                                        probability dropout (Megatron
                                        --attention-dropout), in [0, 1);
                                        APS_DEFAULT (-1) = from `dropout`
                                        (on: the framework's 0.1) */
    double hidden_dropout;         /**< probability of the dropout after
                                        attention, after the MLP and after
                                        the embedding (Megatron
                                        --hidden-dropout), in [0, 1);
                                        APS_DEFAULT (-1) = from `dropout` */
    int fp8_param_gather;          /**< fp8 family: weights kept and
                                        gathered in fp8 (Megatron
                                        --fp8-param-gather, torchao float8
                                        all-gather), no separate bf16 copy
                                        for the GEMMs; APS_DEFAULT (-1) =
                                        the framework's default (off) */
    int grad_reduce_in_fp32;       /**< main gradients kept and reduced in
                                        fp32 (1) or in the parameter dtype
                                        (0); APS_DEFAULT (-1) = the
                                        framework's default (recipe.c) */
    int64_t activation_offload_layers; /**< layers per model chunk whose
                                        saved activations go to host memory
                                        (Megatron --cpu-offloading-num-
                                        layers); 0 = none */
    unsigned offload_modules;      /**< megatron: bits of
                                        aps_offload_module whose saved
                                        tensors go to host memory (Megatron
                                        --fine-grained-activation-offloading
                                        --offload-modules); 0 = none */
    double activation_offload_fraction; /**< with offload_modules: the
                                        share of each model chunk's offload
                                        groups (module x layer) offloaded,
                                        the earliest in forward order
                                        (--activation-offload-fraction);
                                        0-1, default 1 */
    bool tp_comm_overlap;          /**< TP collectives pipelined with the
                                        GEMMs (Megatron --tp-comm-overlap,
                                        TE userbuffers; TorchTitan async
                                        TP); default off */
    bool cuda_graphs;              /**< CUDA graphs captured for the
                                        layers (Megatron --cuda-graph-impl
                                        transformer_engine); default off */
    aps_cuda_graph_scope cuda_graph_scope; /**< what the graphs capture
                                        when cuda_graphs is on (layerprog.c) */
    bool moe_router_fusion;        /**< MoE: the router's top-k, softmax
                                        and aux-loss kernels fused (Megatron
                                        --moe-router-fusion, TransformerEngine
                                        >= 2.7): 31 forward kernels, 72
                                        without (layerprog.c); default on,
                                        as the launch file writes it */
    bool cutedsl_fused_grouped_mlp; /**< MoE, megatron, mxfp8 / nvfp4 on
                                        Blackwell: TransformerEngine's fused
                                        grouped MLP (--use-transformer-engine-
                                        op-fuser, NVTE_CUTEDSL_FUSED_GROUPED_
                                        MLP=1; Megatron-Bridge
                                        cutedsl_fused_grouped_mlp): the
                                        experts' activation runs in fc1's
                                        GEMM epilogue and its backward in
                                        fc2's dgrad GEMM, with MXFP8 their
                                        quantizes too (moe.c); default off */
    aps_rms_norm_backend rms_norm_backend; /**< automodel: the RMSNorm
                                        kernel (BackendConfig.rms_norm);
                                        unset: the framework's (eager
                                        fp32 for AutoModel) */
    aps_attn_backend attn_backend; /**< automodel: the attention kernel
                                        (BackendConfig.attn); unset:
                                        AutoModel's default */
    aps_flex_backend moe_flex_dispatcher_backend; /**< MoE, flex
                                        dispatcher: DeepEP (Megatron's
                                        default) or HybridEP; decides the
                                        host sync of a capacity-factor run
                                        and whether padding to capacity is
                                        allowed (layerprog.c, moe.c) */
    bool moe_shared_expert_overlap; /**< MoE: the shared expert runs on
                                        its own stream beside the token
                                        dispatch and combine, hiding them
                                        (Megatron --moe-shared-expert-
                                        overlap, alltoall and flex
                                        dispatchers); default off */
    bool overlap_moe_expert_parallel_comm; /**< MoE: the combined 1F1B
                                        schedule runs one micro-batch's
                                        forward beside another's backward,
                                        each one's dispatch and combine
                                        hidden behind the other's compute
                                        (Megatron --overlap-moe-expert-
                                        parallel-comm: EP > 1, alltoall or
                                        flex, virtual pipeline under PP, no
                                        full recompute, not with the
                                        shared-expert overlap); default
                                        off */
    double moe_expert_rank_capacity_factor; /**< MoE, Megatron flex
                                        dispatcher with HybridEP: each
                                        expert rank's static token budget
                                        over the balanced share (Megatron
                                        --moe-expert-rank-capacity-factor):
                                        the receive buffer and the experts'
                                        tensors get a fixed shape, capturable
                                        by CUDA graphs (moe.c
                                        aps_moe_static_rows); 0 = unset
                                        (Megatron's None: sized per step) */
    bool moe_paged_stash;          /**< MoE: the routed experts' saved
                                        tensors packed into preallocated
                                        paged buffers (Megatron
                                        --moe-paged-stash; needs the rank
                                        capacity factor; moe.c
                                        aps_moe_stash_bytes); default off */
    double moe_paged_stash_buffer_size_factor_cuda; /**< the stash's size
                                        over the balanced routed tokens
                                        (Megatron --moe-paged-stash-buffer-
                                        size-factor-cuda, > 0: the avg-based
                                        sizing); 0 = Megatron's default
                                        APS_PAGED_STASH_FACTOR_CUDA */
    int64_t moe_paged_stash_page_size; /**< tokens per stash page
                                        (Megatron --moe-paged-stash-page-
                                        size); 0 = Megatron's default
                                        APS_PAGED_STASH_PAGE_SIZE */
    bool first_last_layers_bf16;   /**< Megatron --first-last-layers-bf16:
                                        under fp8, mxfp8 or nvfp4 the first
                                        and last decoder layers run without
                                        the quantized autocast, in bf16
                                        (Megatron-LM d98e8a64 fp8_utils.py
                                        is_first_last_bf16_layer; priced by
                                        bf16layers.c); default off */
    int64_t num_layers_at_start_in_bf16; /**< of them the first ones, global
                                        layer index < this (Megatron
                                        --num-layers-at-start-in-bf16, >= 0);
                                        APS_DEFAULT (-1) = unset: Megatron's
                                        default APS_BF16_LAYERS_DEFAULT */
    int64_t num_layers_at_end_in_bf16; /**< the last ones, index >=
                                        num_layers - this (Megatron
                                        --num-layers-at-end-in-bf16, >= 0);
                                        APS_DEFAULT (-1) = unset, as above */
    bool dp_loss_group;            /**< Megatron-LM all-reduces the
                                        reported loss over the data-parallel
                                        group without CP, a communicator
                                        apart from the gradients' DP-with-CP
                                        group (pretrain_gpt.py loss_func,
                                        core_v0.6.0 to core_v0.10.0;
                                        memory.c nccl_bytes); default off */
    bool unfused_swiglu;           /**< SwiGLU as F.silu(x[0]) * x[1] on
                                        the chunks of the fc1 output, not
                                        a fused kernel: the SiLU's output
                                        is kept too, 2 bytes more per
                                        element of the MLP width (Megatron
                                        legacy --transformer-impl local,
                                        FlagScale; implied by
                                        hf_eager_layer); default off */
    bool hf_eager_layer;           /**< the layers are Hugging Face
                                        transformers' eager modules
                                        (LlamaRMSNorm upcasting its input
                                        to fp32, SiLU(gate) * up unfused),
                                        not the framework's fused layer:
                                        4 bytes more per element of each
                                        norm's input, 2 more per element of
                                        the SwiGLU MLP's width (memory.c);
                                        default off */
    bool exp_avg_bf16;             /**< Adam's moments (exp_avg and
                                        exp_avg_sq) held in bf16 (Megatron
                                        --use-precision-aware-optimizer
                                        --exp-avg-dtype bf16
                                        --exp-avg-sq-dtype bf16; NeMo's
                                        DeepSeek-V3 recipe): 2 x 2 bytes
                                        less per parameter; default off */
    bool bf16_weights;             /**< weights, gradients and Adam's
                                        moments held in bf16 with no fp32
                                        master copy: NeMo AutoModel's MoE
                                        models cast themselves to bf16 in
                                        initialize_weights (e.g. models/
                                        qwen3_moe/model.py:254-268 @
                                        89e3a9fdd, dtype = bfloat16), and
                                        torch.optim keeps its moments in
                                        the parameters' dtype: 2 + 2 + 4
                                        bytes per parameter (SGD 2 + 2 +
                                        2); framework automodel only;
                                        default off */
    bool transformers_model;       /**< NeMo AutoModel builds the model
                                        through transformers, not a model
                                        of its own (its registry has no
                                        class for the config's
                                        architectures[0]: _transformers/
                                        model_init.py is_custom_model
                                        False @ 36044ad3); such a model
                                        is no MoEFSDPSyncMixin, so expert
                                        parallelism is refused
                                        (capabilities.py validate_for_mesh,
                                        moe.c); framework automodel only;
                                        default off (set by the policy
                                        from the config's class) */
    bool store_param_remainders;   /**< bf16 Adam: the fp32 master held
                                        as the bf16 weight plus a 16-bit
                                        remainder (apex DistributedFused-
                                        Adam, NeMo 1.x); default off */
    int64_t vocab_size_divisible_by; /**< Megatron make_vocab_size_divisible_by;
                                        0 = framework default (128 for
                                        megatron/deepspeed, 1 otherwise) */
    double logits_bytes;           /**< bytes per logit of the loss at its
                                        peak (on the last stage, per logit
                                        of the rank's vocabulary shard);
                                        0 = the framework profile's (and
                                        its compiled / loss-parallel
                                        variants).  Megatron-LM before
                                        core 0.8 holds 10 (memory.c) */
    double memory_limit_bytes;     /**< 0: device capacity - memory_margin;
                                        a limit on the peak
                                        memory_limit_kind names, with the
                                        device memory in use still under
                                        capacity - memory_margin when the
                                        limit is within the capacity (one
                                        above it bounds nothing else) */
    double memory_margin_bytes;    /**< kept free below capacity */
    double allocator_fragmentation;/**< reserved over allocated, less 1,
                                        of PyTorch's caching allocator
                                        with fixed segments */
    double allocator_fragmentation_expandable; /**< the same with
                                        expandable segments */
    int expandable_segments;       /**< PYTORCH_CUDA_ALLOC_CONF=
                                        expandable_segments:True (1) or
                                        not (0); APS_DEFAULT (-1) = the
                                        framework's launcher's default
                                        (recipe.c) */
    aps_mem_kind memory_limit_kind;/**< the peak memory_limit_bytes bounds
                                        (default reserved); the device's
                                        capacity always bounds device
                                        memory in use */
    double ddp_bucket_bytes;       /**< torch DDP bucket_cap_mb (25 MB) */
    int64_t ddp_buckets_in_flight; /**< buckets alive at once (2) */
    double dp_overlap;             /**< of the last micro-batch's backward */
    double fsdp_overlap;           /**< of each micro-batch's fwd / bwd */
    double tp_overlap;             /**< of the layer compute (0: exposed) */
    double pp_p2p_overlap;         /**< of the stage compute */
    double overlap_interference;   /**< fraction of the communication time
                                        hidden behind compute that still
                                        lengthens it (SMs and HBM shared) */
    bool torch_compile;            /**< PyTorch frameworks (fsdp2, fsdp):
                                        elementwise kernels fused by
                                        torch.compile (TorchTitan
                                        training.compile); default false,
                                        eager, as the frameworks default */
    int compile_loss;              /**< the loss compiled (TorchTitan
                                        compile.components "loss", since
                                        2025-04), with or without the
                                        model; APS_DEFAULT (-1) = as
                                        torch_compile */
    int loss_fp32_upcast;          /**< NeMo AutoModel MaskedCrossEntropy
                                        fp32_upcast (components/loss/
                                        masked_ce.py:24 @ 36044ad3,
                                        default True): false keeps the
                                        loss in bf16, 6 bytes per logit
                                        instead of 12 (recipe.c).
                                        APS_DEFAULT (-1) = the profile's
                                        (automodel: true) */
    int64_t loss_chunks;           /**< TorchTitan's ChunkedLossWrapper
                                        num_chunks (torchtitan/components/
                                        loss.py:544 @ b5bcd76c, default
                                        8): the output layer and the loss
                                        run over that many chunks of the
                                        micro-batch's tokens, one chunk's
                                        logits alive at a time; 1 = the
                                        plain cross entropy; 0 = the
                                        profile's (fsdp2: 8, others 1) */
    int defer_fsdp_grad_sync;      /**< NeMo AutoModel FSDP2Config.
                                        defer_fsdp_grad_sync (distributed/
                                        config.py:318 @ 36044ad3, default
                                        True): FSDP gradients reduce-
                                        scattered once, after the last
                                        micro-batch; false: every micro-
                                        batch.  APS_DEFAULT (-1) = the
                                        profile's (automodel: true) */
    int fuse_qkv;                  /**< TorchTitan: one fused wqkv
                                        projection (FusedQKVLinear;
                                        make_gqa_config fuse_qkv, the
                                        builders' default from 3396a4b37,
                                        2026-06-24); its output is one mm
                                        of op-level selective
                                        checkpointing's count (opsac.c).
                                        APS_DEFAULT (-1) = yes, 0 = wq,
                                        wk, wv apart (TorchTitan before) */
    int sac_save_alltoall;         /**< TorchTitan op-level selective
                                        checkpointing saves the
                                        all-to-all outputs (the MoE
                                        token dispatch and combine;
                                        torchtitan c4e2291, 2025-09-06, on);
                                        APS_DEFAULT (-1) = yes, 0 = the
                                        policy before it */
    bool overlap_p2p_comm;         /**< Megatron --overlap-p2p-communication
                                        (default on): the interleaved
                                        schedule hides its sends behind the
                                        next chunk except in warmup and
                                        flush; else pp_p2p_overlap */
    double moe_load_imbalance;     /**< MoE: tokens the busiest expert-
                                        parallel rank receives over the
                                        balanced share, >= 1; 0 = APS_MOE_
                                        LOAD_IMBALANCE (moe.c).  Capped by
                                        strategy moe_capacity_factor */
    int64_t mtp_num_layers;        /**< multi-token-prediction depths
                                        trained with the model (Megatron
                                        --mtp-num-layers; megatron/core/
                                        transformer/multi_token_prediction
                                        .py): each an extra layer of the
                                        last decoder layer's type, an
                                        eh_proj (2h -> h), three norms and
                                        the output layer and loss again, on
                                        the stage of the loss; 0 = none
                                        (the default); Megatron-LM only */
    bool mtp_repeated_layer;       /**< one MTP depth's weights run
                                        mtp_num_layers times (Megatron
                                        --mtp-use-repeated-layer,
                                        multi_token_prediction.py @
                                        d98e8a64 l.1831-1832, 1958-1968):
                                        the time and activations of every
                                        depth, the parameters of one */
    aps_fsdp_impl fsdp_impl;       /**< framework megatron: the FSDP
                                        implementation that runs fsdp_degree
                                        > 1 and zero_stage 2 / 3; default
                                        torch_fsdp2 */
    double suggested_communication_unit_size; /**< Megatron-FSDP's
                                        --suggested-communication-unit-size,
                                        elements: the gradient reduce-scatter
                                        queue holds that many, the parameter
                                        prefetch half; 0 = Megatron's default
                                        (max(1e9, 2 x mean unit) under
                                        optim_grads_params, else 1e9:
                                        megatron_fsdp.py:420-444) */
    bool fsdp_double_buffer;       /**< Megatron-FSDP --fsdp-double-buffer
                                        (forced by --use-nccl-ub): a
                                        persistent pool of two layers'
                                        parameter and gradient buckets,
                                        which caps the prefetch and the
                                        reduce queue at two layers;
                                        default off */
    int64_t distributed_optimizer_instances; /**< Megatron's --num-
                                        distributed-optimizer-instances
                                        with the distributed optimizer
                                        (zero_stage 1): copies of the
                                        optimizer across the data-parallel
                                        group, each sharded over dp x cp /
                                        this many consecutive ranks; 0 or 1
                                        = one */
    int64_t local_batch_size;      /**< sequences per data-parallel rank
                                        in one forward-backward pass of
                                        TorchTitan (training.local_batch_
                                        size; HEAD: parallelism.num_pp_
                                        microbatches x the micro-batch)
                                        or NeMo AutoModel (step_scheduler.
                                        local_batch_size): with pipeline
                                        parallelism a step runs (B / D) /
                                        this many passes, each one
                                        pipeline schedule of this / b
                                        micro-batches; without it the
                                        micro-batch itself.  0 = the
                                        rank's whole step in one pass (as
                                        apsearch's launch files write) */
    int64_t dp_collective_rails;   /**< NICs per node that data-parallel and
                                        sharding collectives spread over;
                                        0 = the framework's default (all of
                                        them, except DeepSpeed ZeRO: 1) */
    double dsa_indexer_loss_coeff; /**< DeepSeek Sparse Attention: > 0
                                        trains the lightning indexer with
                                        its KL loss over the top-k keys at
                                        this weight (Megatron --dsa-
                                        indexer-loss-coeff with --dsa-
                                        indexer-use-sparse-loss; Megatron-
                                        Bridge's GLM-5 bridge 0.001); dsa.c
                                        prices the loss's target and the
                                        indexer's backward; 0 = untrained,
                                        Megatron's default; DSA models
                                        only */
} aps_training;

/* ---------------------------------------------------------------- strategy */

typedef enum {
    APS_RECOMPUTE_NONE = 0,
    APS_RECOMPUTE_SELECTIVE,   /**< core attention only (Korthikanti s.5) */
    APS_RECOMPUTE_FULL         /**< whole layers (recompute_method) */
} aps_recompute;

/** How full recompute picks its layers (Megatron --recompute-method,
 *  megatron/core/transformer/transformer_block.py _checkpointed_forward). */
typedef enum {
    APS_RECOMPUTE_BLOCK = 0,   /**< the first recompute_num_layers layers of
                                    each model chunk, each checkpointed on
                                    its own; the rest keep everything */
    APS_RECOMPUTE_UNIFORM      /**< every layer, in groups of
                                    recompute_num_layers checkpointed
                                    together: one input per group is kept,
                                    a whole group is rebuilt at once */
} aps_recompute_method;

/** How layers are split over pipeline stages when stage_partition is not
 *  given (the rules and their sources: pipeline.c split_rule; names:
 *  aps_pipeline_split_name). */
typedef enum {
    APS_SPLIT_EVEN = 0,        /**< L / (p v) per model chunk */
    APS_SPLIT_EMBEDDING_LOSS,  /**< embedding and loss count as one layer
                                    each (Megatron --account-for-embedding-
                                    in-pipeline-split and --account-for-
                                    loss-in-pipeline-split; TorchTitan's
                                    default split) */
    APS_SPLIT_DEEPSPEED_TYPE,  /**< Megatron-DeepSpeed --pp-partition-method
                                    'type:transformer|embedding' */
    APS_SPLIT_FILL_LAST,       /**< ceil(L / (p v)) per model chunk, the
                                    last chunk the rest (NVIDIA's
                                    DeepSeek-V3 layouts, Megatron
                                    --pipeline-model-parallel-layout) */
    APS_SPLIT_FILL_FIRST       /**< floor(L / (p v)) per model chunk, one
                                    more to each of the first L mod (p v)
                                    (NeMo AutoModel's split,
                                    generate_hf_model_fqn_per_model_part) */
} aps_pipeline_split;

/** Pipeline schedule (strategy pp_schedule), named as PyTorch pipelining's
 *  classes (torch/distributed/pipelining/schedules.py, pytorch 1fd7abc2). */
typedef enum {
    APS_PP_1F1B = 0,           /**< 1F1B; interleaved 1F1B when v > 1
                                    (Megatron's order, schedule.c) */
    APS_PP_INTERLEAVED_ZB,     /**< ScheduleInterleavedZeroBubble (ZB1P):
                                    backward split into input (I) and
                                    weight (W) gradients, W deferred */
    APS_PP_ZBV,                /**< ScheduleZBVZeroBubble: v = 2, stages
                                    i and 2p - 1 - i on rank i */
    APS_PP_DUALPIPEV           /**< ScheduleDualPipeV (pytorch 00722e64):
                                    the same V, forward and backward of
                                    two micro-batches paired, m >= 2p */
} aps_pp_schedule;

/** What Megatron-Core's selective recompute re-runs in the backward
 *  (--recompute-granularity selective --recompute-modules ...,
 *  TransformerConfig.recompute_modules, megatron/core/transformer/
 *  transformer_config.py @ d98e8a64): the module's forward is
 *  checkpointed, its inner activations freed and rebuilt in the backward
 *  from its saved input.  core_attn: the attention core; layernorm: the
 *  input and pre-MLP norms (their outputs, the QKV and MLP GEMM inputs);
 *  mla_up_proj: MLA's up projections and RoPE (Q, K, V); mlp: a dense
 *  MLP; moe: a whole MoE layer (router, dispatch, experts, combine);
 *  moe_act: the experts' activation function (needs grouped GEMM);
 *  shared_experts: the shared expert.  Bits of
 *  aps_strategy.recompute_modules. */
typedef enum {
    APS_RCM_CORE_ATTN = 1u << 0,
    APS_RCM_MOE_ACT = 1u << 1,
    APS_RCM_LAYERNORM = 1u << 2,
    APS_RCM_MLA_UP_PROJ = 1u << 3,
    APS_RCM_MLP = 1u << 4,
    APS_RCM_MOE = 1u << 5,
    APS_RCM_SHARED_EXPERTS = 1u << 6
} aps_recompute_module;
/** Number of aps_recompute_module bits. */
#define APS_RCM_COUNT 7

/** The modules whose saved tensors Megatron-Core's fine-grained
 *  activation offloading moves to host memory in the forward and back
 *  before the backward (--fine-grained-activation-offloading
 *  --offload-modules ..., TransformerConfig.offload_modules,
 *  megatron/core/transformer/transformer_config.py @ d98e8a64 l.1323-1361;
 *  megatron/core/pipeline_parallel/fine_grained_activation_offload.py).
 *  Each offloads what autograd saves inside the module: expert_fc1 the
 *  experts' fc1 input (moe/experts.py l.928-939), moe_act their
 *  activation's input (fc1's output, l.941-1038), fused_group_mlp the
 *  whole fused grouped MLP's saved set (l.785-823), core_attn the
 *  attention core's (Q, K, V and the softmax statistics), attn_proj the
 *  output projection's input (the context; with core_attn only).  The
 *  norm and QKV modules Megatron also offers (attn_norm, qkv_linear,
 *  mlp_norm, gdp_qkv) are not modelled: refused naming them.  Bits of
 *  aps_training.offload_modules. */
typedef enum {
    APS_OFM_EXPERT_FC1 = 1u << 0,
    APS_OFM_MOE_ACT = 1u << 1,
    APS_OFM_FUSED_GROUP_MLP = 1u << 2,
    APS_OFM_CORE_ATTN = 1u << 3,
    APS_OFM_ATTN_PROJ = 1u << 4
} aps_offload_module;
/** Number of aps_offload_module bits. */
#define APS_OFM_COUNT 5

/** How a MoE layer moves tokens to the experts (Megatron-Core
 *  --moe-token-dispatcher-type, megatron/core/transformer/moe/
 *  token_dispatcher.py @ d98e8a64): alltoall (MoEAlltoAllTokenDispatcher:
 *  each token's hidden state sent to the EP ranks of its top-k experts and
 *  back), allgather (MoEAllGatherTokenDispatcher: every token gathered on
 *  every EP x ETP rank, outputs reduce-scattered back), flex
 *  (MoEFlexTokenDispatcher, DeepEP / HybridEP kernels: all-to-all volume
 *  with one copy of a token per destination rank, Megatron-LM only).
 *  The value 0 (alltoall) is apsearch's default, as NeMo's MoE recipes
 *  set it; Megatron-LM's own default, allgather, is chosen explicitly. */
typedef enum {
    APS_MOE_ALLTOALL = 0, APS_MOE_ALLGATHER, APS_MOE_FLEX
} aps_moe_dispatcher;

typedef enum {
    APS_CP_P2P = 0,      /**< ring attention, K/V chunks passed round a ring */
    APS_CP_ALL_GATHER,   /**< K/V all-gathered (Llama 3) */
    APS_CP_A2A           /**< heads scattered, sequence gathered by all-to-alls
                              of Q, K, V and O (DeepSpeed-Ulysses; TE
                              AttnFuncWithCPAndQKVOA2A, Megatron
                              --cp-comm-type a2a) */
} aps_cp_comm;

/**
 * strategy_config: one candidate.  Ranks are laid out tp, cp, fsdp(S),
 * dp(R), pp from innermost to outermost (Megatron's tp-cp-dp-pp order).
 */
typedef struct {
    int64_t dp_degree;           /**< R: replicate data-parallel degree */
    int64_t fsdp_degree;         /**< S: shard degree (1 = no sharding) */
    int64_t zero_stage;          /**< 0..3 over the DP group when S = 1 */
    bool reshard_after_forward;  /**< S > 1: false = shard_grad_op / ZeRO-2 */
    int64_t tp_degree;           /**< t */
    bool sequence_parallel;      /**< SP on/off (Megatron --sequence-parallel) */
    int64_t pp_degree;           /**< p */
    int64_t vpp_degree;          /**< v, model chunks per pipeline rank */
    int64_t cp_degree;           /**< c */
    aps_cp_comm cp_comm_type;
    int64_t micro_batch_size;    /**< b, sequences */
    int64_t micro_batch_num;     /**< m; 0 = derive B / (b * D) */
    int64_t stage_partition[APS_MAX_STAGES]; /**< layers per pipeline rank
                                                 (p entries) or per model
                                                 chunk in schedule order
                                                 (p v entries, chunk j on
                                                 rank j mod p; Megatron
                                                 --pipeline-model-parallel-
                                                 layout); all 0 = split by
                                                 pipeline_split + offset */
    aps_pipeline_split pipeline_split;
    int64_t layer_offset[APS_MAX_STAGES];    /**< shift from even split */
    aps_recompute layer_recompute;
    unsigned recompute_modules;  /**< layer_recompute = selective with the
                                      megatron profile: the modules
                                      re-run in the backward, bits of
                                      aps_recompute_module (Megatron
                                      --recompute-modules); 0 = core_attn,
                                      Megatron's default */
    aps_recompute_method recompute_method;
    int64_t recompute_num_layers[APS_MAX_STAGES]; /**< per rank; -1 = all.
                                                      uniform: the group
                                                      size (entry 0) */
    bool allow_idle_devices;     /**< devices used may be < N */
    bool balance_stages;         /**< p > 1: choose stage_partition to
                                      balance stage time (balance.c) */
    bool auto_recompute;         /**< full recompute: per stage, the fewest
                                      layers that bring it under the memory
                                      limit (recompute_num_layers chosen) */
    bool hsdp;                   /**< given as HSDP (hsdp_*_degree): both
                                      S > 1 and R > 1 are then required */
    aps_pp_schedule pp_schedule; /**< p > 1: the pipeline schedule */
    /* Mixture of experts (issue 13); ignored for a dense model, where
     * ep_degree and etp_degree must stay 0 or 1.  The expert layers fold
     * the same GPUs as etp (innermost), ep, expert-dp, pp (Megatron-Core
     * parallel_state.py initialize_model_parallel @ d98e8a64: expert
     * rank generator tp-ep-dp-pp, expert_data_parallel_size = world /
     * (etp x ep x pp)). */
    int64_t ep_degree;           /**< expert parallelism (Megatron
                                      --expert-model-parallel-size,
                                      TorchTitan expert_parallel_degree):
                                      each rank holds E / ep experts;
                                      0 = 1 */
    int64_t etp_degree;          /**< tensor parallelism inside each expert
                                      (--expert-tensor-parallel-size);
                                      0 = tp_degree (Megatron's default) */
    aps_moe_dispatcher moe_token_dispatcher;
    double moe_capacity_factor;  /**< per-expert capacity as a multiple of
                                      the balanced load, tokens over it
                                      dropped (--moe-expert-capacity-
                                      factor); 0 = dropless */
    int moe_grouped_gemm;        /**< one grouped GEMM for the local
                                      experts (--moe-grouped-gemm) or one
                                      GEMM per expert (0); APS_DEFAULT (-1)
                                      = on (NeMo's MoE recipes) */
    int64_t microbatch_group_size; /**< interleaved 1F1B (pp_degree > 1,
                                      vpp_degree > 1): micro-batches run
                                      one model chunk after another
                                      (Megatron --microbatch-group-size-
                                      per-virtual-pipeline-stage,
                                      ModelParallelConfig.microbatch_
                                      group_size_per_vp_stage); 0 =
                                      pp_degree, Megatron's default */
} aps_strategy;

/* ---------------------------------------------------------------- results */

/** memory_breakdown categories (bytes, per device). */
typedef enum {
    APS_MEM_PARAMS = 0,
    APS_MEM_GRADS,
    APS_MEM_OPTIMIZER_STATES,
    APS_MEM_ACTIVATIONS,
    APS_MEM_COMM_TP,
    APS_MEM_COMM_FSDP,
    APS_MEM_COMM_DP,
    APS_MEM_COMM_PP,
    APS_MEM_COMM_CP,
    APS_MEM_LOGITS_LOSS,
    APS_MEM_RESERVED,
    APS_MEM_COMM_EP,    /**< MoE token dispatch buffers (moe.c) */
    APS_MEM_WORKSPACES, /**< TransformerEngine's cuBLAS GEMM workspaces
                             (memory.c te_workspaces) */
    APS_MEM_COUNT
} aps_mem_category;

/** performance_breakdown categories (seconds per step). */
typedef enum {
    APS_PERF_COMPUTE_FWD = 0,
    APS_PERF_COMPUTE_BWD,
    APS_PERF_RECOMPUTE,
    APS_PERF_TP_COMM,
    APS_PERF_CP_COMM,
    APS_PERF_PP_P2P,
    APS_PERF_PP_BUBBLE,
    APS_PERF_FSDP_ALLGATHER,
    APS_PERF_FSDP_REDUCESCATTER,
    APS_PERF_DP_GRAD_SYNC,
    APS_PERF_HSDP_REPLICATE_SYNC,
    APS_PERF_OPTIMIZER,
    APS_PERF_OFFLOAD,          /**< activation copies to and from host */
    APS_PERF_EP_COMM,          /**< MoE token dispatch and combine (moe.c) */
    APS_PERF_HOST,             /**< the host launching kernels (layerprog.c):
                                    total launch time; exposed, what the
                                    GPU waits for it */
    APS_PERF_KERNEL_GAPS,      /**< the GPU idle between queued kernels
                                    (layerprog.c): kernels x
                                    gpu_seconds_per_kernel */
    APS_PERF_COUNT
} aps_perf_category;

/** Filter reason codes (MODELING.md section 5). */
typedef enum {
    APS_REASON_NONE = 0,
    APS_REASON_INVALID_DEGREE,     /**< a degree or size < 1 */
    APS_REASON_TP_DIVISIBILITY,
    APS_REASON_CP_DIVISIBILITY,
    APS_REASON_PP_DIVISIBILITY,
    APS_REASON_PP_PARTITION,       /**< bad stage_partition / layer_offset */
    APS_REASON_VPP_INVALID,
    APS_REASON_BATCH_DIVISIBILITY,
    APS_REASON_DEVICE_COUNT,       /**< product of degrees > N */
    APS_REASON_IDLE_DEVICES,       /**< product < N and idle not allowed */
    APS_REASON_HSDP_INVALID,
    APS_REASON_ZERO_STAGE_INVALID,
    APS_REASON_MEMORY_LIMIT,
    APS_REASON_FRAMEWORK_UNSUPPORTED, /**< the framework cannot run it */
    APS_REASON_EP_DIVISIBILITY,    /**< MoE: experts / ep, ep x etp x pp
                                        and the GPUs, etp and the expert
                                        width (moe.c) */
    APS_REASON_NOT_MODELLED,       /**< the framework runs it, apsearch does
                                        not price it (yet): e.g. context
                                        parallelism of Mamba-2 layers */
    APS_REASON_COUNT
} aps_reason;

/** Per pipeline rank (one "stage" per pipeline rank, all its chunks). */
typedef struct {
    int64_t first_layer;          /**< the layers of the ranks before it,
                                       in rank order: its first layer's
                                       0-based index with one chunk a rank;
                                       under interleaving (vpp > 1) its
                                       chunks are spread over the model
                                       (aps_layout_rank_spans) and this is
                                       not where they start */
    int64_t num_layers;           /**< decoder layers */
    int64_t mtp_layers;           /**< multi-token-prediction layers after
                                       them (training.mtp_num_layers
                                       depths of one layer, or of a hybrid
                                       model's mtp_layer_pattern, on the
                                       rank of the last model chunk) */
    int64_t recompute_layers;     /**< layers fully recomputed */
    double params;                /**< parameters held (after TP), count;
                                       MoE: all but the routed experts */
    double expert_params;         /**< routed-expert parameters held (E /
                                       ep experts / etp per MoE layer) */
    double inflight_microbatches; /**< activation sets alive at the peak */
    double mem[APS_MEM_COUNT];    /**< bytes */
    double mem_total;             /**< device memory in use: every
                                       category, bytes */
    double mem_allocated;         /**< max allocated: all categories but
                                       `reserved`, bytes */
    double mem_reserved;          /**< max reserved: allocated plus the
                                       allocator's fragmentation, bytes */
    double mem_limited;           /**< the figure the memory limit bounds
                                       (aps_memory_checked), bytes */
    double time_fwd;              /**< one micro-batch, s (compute + exposed
                                       TP/CP comm + recompute excluded) */
    double time_bwd;              /**< one micro-batch incl. recompute, s */
    double host_fwd, host_bwd;    /**< one micro-batch: the host's time
                                       launching the layers' kernels, s
                                       (layerprog.c; within time_fwd /
                                       time_bwd, which take the larger) */
} aps_stage_estimate;

/** Everything one evaluation returns. */
typedef struct {
    bool feasible;
    aps_reason reason;
    char reason_msg[APS_REASON_LEN];
    int64_t micro_batch_num;      /**< m actually used, per step */
    int64_t gradient_accumulation_steps; /**< pipeline schedules per step,
                                       each of micro_batch_num / this
                                       micro-batches (training.
                                       local_batch_size); 1 otherwise */
    int64_t devices_used;
    double vocab_padded;          /**< V padded for memory and FLOPs */
    double params_total;          /**< whole model, unpadded V */
    int64_t worst_stage;          /**< stage with the largest memory */
    double mem[APS_MEM_COUNT];    /**< worst stage, bytes */
    double mem_peak;              /**< worst stage total (device memory
                                       in use), bytes */
    double mem_allocated;         /**< worst stage max allocated, bytes */
    double mem_reserved;          /**< worst stage max reserved, bytes */
    double mem_limited;           /**< worst stage figure the limit
                                       bounds, bytes */
    double mem_limit;             /**< bytes */
    double perf_total[APS_PERF_COUNT];   /**< s per step */
    double perf_exposed[APS_PERF_COUNT]; /**< s per step on critical path */
    double step_time;             /**< sum of exposed, s */
    double tokens_per_s;
    double tokens_per_s_per_gpu;
    double model_flops_per_step;  /**< causal attention, no recompute */
    double hardware_flops_per_step; /**< with recompute */
    double model_tflops_per_gpu;  /**< 1e12 FLOP/s */
    double mfu;                   /**< fraction */
    double hfu;                   /**< fraction */
    int64_t num_stages;
    aps_stage_estimate stages[APS_MAX_STAGES];
} aps_estimate;

#ifdef __cplusplus
}
#endif
#endif /* APSEARCH_TYPES_H */
