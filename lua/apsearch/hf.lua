--- Import a Hugging Face `config.json` into an apsearch model table.
--
-- The model table has the fields of `aps_model` (include/apsearch/types.h):
-- name, num_layers, hidden_size, num_attention_heads, num_query_groups,
-- head_dim, ffn_hidden_size, vocab_size, max_position_embeddings,
-- norms_per_layer, mlp, norm, position_embedding, norm_bias, qkv_bias,
-- attn_out_bias, mlp_bias, qk_norm, qk_norm_full_width, qk_l2_norm,
-- attention_sinks, nope_layer_period, attention_chunk_size,
-- chunked_attention_layers, tie_word_embeddings, sliding_window,
-- sliding_window_layers, and the numerics the launch configs write (they
-- change neither memory nor FLOPs): rope_theta, rope_scaling_type,
-- rope_scaling_factor, low_freq_factor, high_freq_factor,
-- original_max_position_embeddings, norm_eps, rotary_percent; for MoE and MLA models
-- num_experts, experts_per_token, moe_ffn_hidden_size,
-- shared_expert_ffn_hidden_size, shared_expert_gate, moe_router_bias,
-- moe_router_linear_bias, moe_router_sigmoid, moe_router_input_probs,
-- moe_first_dense_layers, moe_layer_freq, moe_layer_phase, moe_dense_layers,
-- q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
-- v_head_dim, mtp_layers, and the router settings of the model's
-- training recipe (they change no estimate; the launchers write them):
-- moe_aux_loss_coeff, moe_seq_aux_loss, moe_router_num_groups,
-- moe_router_group_topk, moe_router_group_score_topk,
-- moe_router_topk_scaling_factor, moe_router_pre_softmax.  It is plain data: the
-- parameter counts come from `core.model_params(model)`.
--
-- Numerics (every model type; absent or null: not set, i.e. 0 in the core):
-- `rope_theta` (GPT-NeoX: `rotary_emb_base`); `rope_scaling` = {`rope_type`
-- (or the older `type`), `factor`, `low_freq_factor`, `high_freq_factor`,
-- `original_max_position_embeddings`} with rope_type one of M.ROPE_SCALING
-- ("default" or a null `rope_scaling`: none); `rms_norm_eps`,
-- `layer_norm_epsilon` (GPT-2) or `layer_norm_eps` (GPT-NeoX) -> norm_eps;
-- `partial_rotary_factor` in (0, 1] -> rotary_percent (1: not carried).
--
-- Supported `model_type`s and what they imply (transformers' modeling files):
--
-- * `llama`, `mistral`, `phi3`: RMSNorm, RoPE, gated MLP (SwiGLU), GQA via
--   `num_key_value_heads`; llama's `attention_bias` puts biases on q, k, v
--   and o, `mlp_bias` on the MLP.
-- * `qwen2`: as llama with q, k, v biases (never on o_proj).
-- * `qwen3`: as llama plus per-head RMSNorm on q and k (`qk_norm`), explicit
--   `head_dim` (default 128, a*d may differ from h), `attention_bias` on q,k,v,o.
-- * `gemma`, `gemma2`: explicit `head_dim` (default 256), tied embeddings
--   (default true).  The activation is `gelu_pytorch_tanh` but the MLP is
--   gated with three h x f matrices (gate, up, down), so it maps to
--   `mlp = "swiglu"`, which in apsearch means "gated, 3 matrices" (the
--   FLOP and parameter counts are those of any GLU variant).  gemma2 has four
--   RMSNorms per layer (pre/post attention, pre/post feed-forward).
-- * `gpt2`: keys `n_embd`, `n_layer`, `n_head`, `n_inner` (null -> 4*n_embd),
--   `n_positions`; learned positions, LayerNorm with bias, biases on every
--   linear, GELU (2 matrices), tied embeddings.
-- * `gpt_neox`: LayerNorm with bias, RoPE, GELU, biases on every linear
--   (`attention_bias`, default true), untied input/output embeddings.
-- * `mpt`: `d_model`, `n_layers`, `n_heads`, `expansion_ratio`, `max_seq_len`;
--   `no_bias` (default true) drops every bias including LayerNorm's; ALiBi
--   (no position parameters) when `attn_config.alibi`, else learned
--   positions; GQA via `attn_config.kv_n_heads`; tied embeddings.
-- * `seed_oss` (Seed-OSS): llama with q, k, v biases (`attention_bias`,
--   default true) and the o_proj bias apart (`attention_out_bias`).
-- * `qwen3_vl_text`, `qwen3_vl_moe_text`, `qwen3_5_text`,
--   `qwen3_5_moe_text`: the text models of Qwen3-VL (read as qwen3 /
--   qwen3_moe) and Qwen3.5 (as qwen3_next: with dense MLPs, or every layer
--   MoE); a multimodal wrapper whose text model
--   has a reader trains that text model (M.wrapped_text), said in a note.
-- * `smollm3` (SmolLM3): llama with RoPE only where `no_rope_layers` is 1
--   (default: all but every `no_rope_layer_interval`-th) ->
--   nope_layer_period; tied embeddings by default.
-- * `lfm2` (LFM2, LFM2.5): gated short convolutions on the `conv` layers
--   of `layer_types` (or all but `full_attn_idxs`) -> linear_attention
--   short_conv with its pattern, GQA with q/k norms on the others, the
--   MLP width of M.lfm2_ffn_width (builders.lfm2).
--
-- Dropout: the model table has no dropout field (dropout is a training
-- option, `training.dropout`), so `from_config` returns it in its second
-- value: `info.dropout` is true when any of `attn_pdrop`, `resid_pdrop`,
-- `embd_pdrop` (GPT-2), `hidden_dropout`, `attention_dropout` (GPT-NeoX,
-- Llama family), `hidden_dropout_prob`, `attention_probs_dropout_prob`
-- (BERT-style), `residual_dropout` (Seed-OSS) is a number > 0 (`info.dropout_key` names the first such
-- key, `info.dropout_value` its value); `info.dropout_stated` is true when
-- any of them is present, 0 included, and when none is (the class's
-- default then states it, below).  A multimodal config (Gemma 3,
-- Llama 4) that states none at the top level is read in its
-- `text_config`.  A policy whose model is a config that states dropout
-- trains as it says (`training.dropout = info.dropout`)
-- unless the policy sets `training.dropout` itself (apsearch.policy; the
-- policy wins); a config that states none takes its configuration
-- class's default (M.DROPOUT_CLASS_DEFAULTS: on for GPT-2, GPTBigCode and
-- Ling 1.x, off for every other class), which is then what it states.
-- Each must be a probability in [0, 1) when it is a number; null or
-- absent: not stated.
--
-- Mixture-of-experts types (issue 13; M.moe_supported) import with their
-- experts, so that `core.model_params` counts total and active parameters
-- exactly (shared/models/moe/param_counts.csv), and the core estimates
-- them with their expert terms (src/core/moe.c):
--
-- * `mixtral`: llama plus `num_local_experts` experts of `intermediate_size`
--   on every layer, top-k `num_experts_per_tok`; the top-k weights
--   renormalised (MixtralSparseMoeBlock).
-- * `qwen2_moe` (Qwen1.5-MoE, Qwen2-MoE): qwen2 plus `num_experts` experts
--   of `moe_intermediate_size`, a shared expert of
--   `shared_expert_intermediate_size` with its sigmoid gate; layer i has
--   experts when (i + 1) % `decoder_sparse_step` == 0 and i is not in
--   `mlp_only_layers` (the others: dense `intermediate_size`); the top-k
--   weights renormalised only when `norm_topk_prob` (default false:
--   moe_router_pre_softmax).
-- * `qwen3_moe`: qwen3 (q/k norms) plus the experts as qwen2_moe, no
--   shared expert.
-- * `phimoe` (Phi-3.5-MoE): mixtral with biased LayerNorms,
--   `attention_bias` and `lm_head_bias` (builders.phimoe); top 2 only
--   (sparsemixer routes every token to 2 experts whatever
--   `num_experts_per_tok` says).
-- * `deepseek_v2`, `deepseek_v3`: multi-head latent attention
--   (`q_lora_rank` (null: none), `kv_lora_rank`, `qk_nope_head_dim`,
--   `qk_rope_head_dim`, `v_head_dim`), `n_routed_experts` of
--   `moe_intermediate_size`, `n_shared_experts` of the same width, the first
--   `first_k_dense_replace` layers dense and then every `moe_layer_freq`-th
--   layer MoE, the router's score bias with `topk_method = "noaux_tc"`
--   (always in V3), `num_nextn_predict_layers` MTP modules (counted apart);
--   the router as `deepseek_router` below reads it (`scoring_func`,
--   `topk_method`, `n_group`, `topk_group`, `norm_topk_prob`,
--   `routed_scaling_factor`, `aux_loss_alpha`, `seq_aux`).
--
-- Router settings (MoE types; absent or null: not set, the framework's
-- default): `router_aux_loss_coef` (mixtral, qwen2_moe, qwen3_moe) or
-- `aux_loss_alpha` (deepseek) > 0 -> moe_aux_loss_coeff (Megatron-Bridge
-- v0.5.0 model_bridge.py CONFIG_MAPPING), with DeepSeek's `seq_aux`
-- (default true) -> moe_seq_aux_loss; `n_group` > 1 and `topk_group` ->
-- moe_router_num_groups, moe_router_group_topk (only with topk_method
-- group_limited_greedy or noaux_tc) and moe_router_group_score_topk
-- (M.GROUP_SCORE_TOPK); `routed_scaling_factor` ->
-- moe_router_topk_scaling_factor where the gate applies it;
-- top-k weights not renormalised (`norm_topk_prob` false, the Qwen and
-- DeepSeek default) -> moe_router_pre_softmax.  They change no memory,
-- FLOP or time estimate.
--
-- The 2025 families (issue 25; builders below cite their transformers
-- classes):
--
-- * `olmoe`: llama with RMSNorms over the full Q and K projections
--   (qk_norm_full_width), num_experts experts on every layer, no shared
--   expert, norm_topk_prob (default false).
-- * `dbrx`: `d_model`, `n_heads`, `n_layers`, `max_seq_len`, `attn_config`
--   {kv_n_heads, clip_qkv, rope_theta}, `ffn_config` {ffn_hidden_size,
--   moe_num_experts, moe_top_k, moe_jitter_eps, moe_loss_weight,
--   moe_normalize_expert_weights}; LayerNorm without bias, no linear biases.
-- * `gpt_oss`: q/k/v/o biases, attention sinks, expert biases (mlp_bias),
--   a router with a bias (moe_router_linear_bias), the window on the
--   `sliding_attention` layers of `layer_types`, YaRN.
-- * `gemma3_text`, `gemma3` (its `text_config`): Gemma-2's layer plus
--   per-head Q/K norms, the window on `layer_types` or every layer but each
--   `sliding_window_pattern`-th; absent keys take Gemma3TextConfig's
--   defaults; the vision tower of `gemma3` is counted apart
--   (info.vision_params).
-- * `glm4_moe` (GLM-4.5, GLM-4.6): q/k/v biases (`attention_bias`, none on
--   o_proj), per-head Q/K norms (`use_qk_norm`), partial RoPE
--   (`partial_rotary_factor`, default 0.5), `first_k_dense_replace` dense
--   layers then `n_routed_experts` + `n_shared_experts` experts of
--   `moe_intermediate_size`, DeepSeek-V3's router (`norm_topk_prob` default
--   true), `num_nextn_predict_layers` MTP modules (counted apart).
-- * `glm4_moe_lite` (GLM-4.7-Flash): DeepSeek-V3's multi-head latent
--   attention with GLM-4.5's experts and router (`n_routed_experts`,
--   `n_shared_experts`, `norm_topk_prob` default true), the dense layers
--   from `mlp_layer_types` (default: the first; `first_k_dense_replace`
--   must agree), absent keys Glm4MoeLiteConfig's defaults.
-- * `deepseek_v32` (DeepSeek-V3.2), `glm_moe_dsa` (GLM-5): DeepSeek-V3's
--   MLA and experts plus DeepSeek Sparse Attention, `index_n_heads`,
--   `index_head_dim`, `index_topk` (and GLM-5's `indexer_rope_interleave`),
--   absent keys their config classes' defaults; GLM-5.2's cross-layer
--   top-k sharing (`indexer_types` "shared", `index_topk_freq` > 1 with
--   `index_skip_topk_offset`) as Megatron-Core's schedule, indexers on the
--   computing layers only.
-- * `llama4_text`, `llama4` (its `text_config`): experts on every
--   `interleave_moe_layer_step`-th layer (or `moe_layers`), one shared
--   expert, dense layers of `intermediate_size_mlp`, a top-1 sigmoid router
--   on the expert input, NoPE layers (`no_rope_layers` /
--   `no_rope_layer_interval`) as a period, weightless L2 Q/K norms
--   (`use_qk_norm`), chunked attention on the RoPE layers; absent keys
--   take Llama4TextConfig's defaults; the vision tower of `llama4` is
--   counted apart (info.vision_params).
-- * `gemma4_text`, `gemma4` (its `text_config`, the vision tower counted
--   apart, info.vision_params; transformers modeling_gemma4.py
--   @ c308a309): Gemma 3's layer with a weightless
--   v_norm; on the full-attention layers of `layer_types` (default every
--   6th; the last always) `global_head_dim` wide heads and, with
--   `attention_k_eq_v`, `num_global_key_value_heads` KV heads without a
--   V projection (global_head_dim, global_num_query_groups,
--   global_k_eq_v); with `enable_moe_block` `num_experts` experts of
--   `moe_intermediate_size`, top `top_k_experts`, beside the dense MLP
--   (read as a shared expert of `intermediate_size`), the router's
--   scales (moe_router_scales) and 3 more norms; RoPE per layer type
--   noted; per-layer inputs (`hidden_size_per_layer_input` > 0), KV
--   sharing (`num_kv_shared_layers` > 0) and `use_bidirectional_attention`
--   "all" refused; absent keys take Gemma4TextConfig's defaults.
-- * `hy_v3` (Tencent Hy3, Hy3-preview): GQA without biases, per-head Q/K
--   norms, the dense layers of `mlp_layer_types` (default the first;
--   `first_k_dense_replace` must agree), `num_experts` experts of
--   `moe_intermediate_size` (`expert_hidden_dim`) and `num_shared_experts`
--   shared ones, a sigmoid router with the expert score bias, top-k
--   renormalised times `router_scaling_factor`; `num_nextn_predict_layers`
--   MTP layers counted apart; absent keys HYV3Config's defaults.
-- * `sarvam_moe` (Sarvam 30B): Qwen3's attention (`attention_bias`, per-head
--   Q/K norms), `first_k_dense_replace` dense layers, then `num_experts`
--   (`n_routed_experts`) + `num_shared_experts` experts of
--   `moe_intermediate_size`, a group-limited sigmoid router with the
--   expert score bias (`n_group`, `topk_group`, `norm_topk_prob`,
--   `routed_scaling_factor`); absent keys SarvamMoeConfig's defaults.
-- * `sarvam_mla` (Sarvam 105B): DeepSeek-V3's (`deepseek_v3`) with
--   SarvamMLAConfig's defaults, `num_experts` / `num_shared_experts`
--   aliases, RoPE type "deepseek_yarn" read as YaRN.
-- * `minimax_m2` (MiniMax-M2, M2.1, M2.5, M2.7): GQA without biases, Q/K
--   RMSNorms over the whole projections (`qk_norm_type` per_layer), RoPE
--   on `rotary_dim` of `head_dim`,
--   `num_local_experts` experts of `intermediate_size` on every layer, a
--   sigmoid router with the expert score bias, top-k renormalised; the
--   MTP modules (`num_mtp_modules`) are not built by transformers (a note).
--
-- The dense families of issue 25's second batch (builders below cite their
-- transformers files):
--
-- * `nemotron` (Nemotron-4, Minitron): NemotronMLP (squared ReLU, no gate:
--   mlp relu2), LayerNorm1P with bias (norm_zero_centered), RoPE on
--   `partial_rotary_factor` (default 0.5), epsilon `norm_eps`.
-- * `arcee` (AFM-4.5B): Llama's layer with NemotronMLP.
-- * `ernie4_5` (ERNIE-4.5-0.3B): Llama's layer, `head_dim` (default 128),
--   `use_bias` on every projection, RoPE in interleaved pairs, tied.
-- * `starcoder2`: LayerNorms with bias (`norm_epsilon`), `use_bias`
--   (default true), a GELU MLP of two matrices, the window on every layer.
-- * `stablelm`: LayerNorms with bias, `use_qkv_bias`, RoPE on
--   `partial_rotary_factor` (default 0.25), `use_parallel_residual`,
--   `qk_layernorm` (per-head LayerNorms, qk_norm_head_weights).
-- * `phi` (Phi-2): one LayerNorm feeding attention and a GELU MLP in
--   parallel, biases everywhere including the lm_head.
--
-- The third batch:
--
-- * `cohere` (Command R, R+, Aya 23, Aya Expanse): Cohere2's layer (one
--   bias-free LayerNorm feeding attention and the SwiGLU MLP in parallel,
--   RoPE in interleaved pairs, `logit_scale`, tied) on every layer, no
--   window; `use_qk_norm`: per-head Q/K LayerNorms with a weight per head
--   (qk_norm_head_weights).
-- * `glm` (GLM-4-9B-chat-hf, glm-4-9b-hf): GLM-4-0414's attention (q/k/v
--   biases, `head_dim` default 128, RoPE on `partial_rotary_factor`,
--   default 0.5, in interleaved pairs) and fused SwiGLU with two RMSNorms
--   per layer; 2 KV heads when the key is absent.
-- * `olmo` (OLMo 1): Llama's layer with LayerNorms that have no weight or
--   bias (norm_weightless: no parameters), `clip_qkv` noted.
-- * `bamba` (Bamba-9B): Granite 4.0's hybrid blocks (builders.bamba) with
--   attention at `attn_layer_indices` and RoPE on half of each head.
-- * `falcon_h1` (Falcon-H1): every layer a parallel layer P, Mamba-2 and
--   GQA attention side by side under one norm, then a SwiGLU MLP
--   (builders.falcon_h1); the Mamba-2 gated norm only with mamba_rms_norm.
-- * `mamba2` (Mamba-2, Mamba-Codestral): num_hidden_layers Mamba-2 layers,
--   nothing else (builders.mamba2).
-- * `gpt_bigcode` (StarCoder, SantaCoder): GPT-2's layer with one K and V
--   head (`multi_query`, default true), the GELU of `activation_function`.
-- * `gptj` (GPT-J-6B): one LayerNorm feeding attention (no biases) and a
--   GELU MLP (biases) in parallel, RoPE on `rotary_dim` of each head in
--   interleaved pairs, an lm_head with its bias.
-- * `falcon` (Falcon-7B/40B/180B): multi-query or `num_kv_heads` (new
--   decoder architecture) attention, `bias`, attention and a GELU MLP in
--   parallel on one or two LayerNorms; `alibi` refused.
-- * `glm4v_text` (GLM-4.1V's text model; `glm4v` wrappers are read
--   through it): GLM-4-0414's layer with q/k/v biases always and head width
--   hidden_size / num_attention_heads.
-- * `helium` (Kyutai Helium-1): Llama's layer with RoPE in interleaved
--   pairs and no o_proj bias.
-- * `bloom` (BLOOM): ALiBi, a LayerNorm on the word embeddings
--   (embedding_norm), biases everywhere, a 4 x hidden GELU MLP, tied.
--
-- Hybrid Mamba-2 models:
--
-- * `nemotron_h` (NVIDIA Nemotron-H, transformers configuration_nemotron_h.py
--   @ 13923c63): `hybrid_override_pattern` (or `layers_block_type`) gives one
--   mixer per layer, M Mamba-2, * attention, - MLP, E MoE ->
--   hybrid_layer_pattern, its length num_layers; `mamba_num_heads`,
--   `mamba_head_dim` (d_inner = their product, NemotronHMamba2Mixer),
--   `ssm_state_size`, `n_groups`, `conv_kernel`, `chunk_size` -> mamba_*;
--   a squared-ReLU MLP without gate (`mlp_hidden_act` "relu2" -> mlp relu2);
--   attention without position embedding, `head_dim` (older configs:
--   `attention_head_dim`, default 128); one RMSNorm per layer; no biases
--   (Megatron's MambaMixer asserts none and a conv bias).  Absent keys take
--   NemotronHConfig's defaults (M.NEMOTRON_H_DEFAULTS); the legacy names
--   `mamba_n_groups`, `mamba_d_conv`, `mamba_expand`, `mamba_chunk_size`,
--   `mamba_conv_bias` are read as transformers' __post_init__ does.
--   The E layers (Nemotron 3) are NemotronHMOE blocks: `n_routed_experts`
--   squared-ReLU experts of `moe_intermediate_size` (up and down
--   projections, no gate), top `num_experts_per_tok`, one shared expert of
--   `moe_shared_expert_intermediate_size`, NemotronHTopkRouter (DeepSeek-
--   V3's: sigmoid scores plus `e_score_correction_bias`, `n_group` /
--   `topk_group`, `norm_topk_prob`, `routed_scaling_factor`);
--   `moe_latent_size` (latent MoE, Nemotron 3 Super: fc1_latent_proj /
--   fc2_latent_proj around the routed experts, which run at that width)
--   -> moe_latent_size.  `num_nextn_predict_layers` multi-token-prediction
--   depths (-> mtp_layers), each the layers of `mtp_hybrid_override_pattern`
--   (-> mtp_layer_pattern; required with them, as Megatron-Bridge's
--   nemotron_h_bridge.py @ 067f987df _hf_mtp_config requires it).
--
-- What such a config has that no estimate term prices (sinks' softmax
-- column, clamps, soft-capping, the vision tower, ...) is listed in
-- info.notes, one line each starting with the file; `apsearch run` and
-- `inspect` print them on stderr as `apsearch: note: ...`.
--
-- Other configs with experts (`num_local_experts`, `num_experts`,
-- `n_routed_experts`, `moe_num_experts` > 1, or "moe" in model_type:
-- Phi-3.5-MoE, ...) are refused with a `NotImplemented:` error naming the
-- key; the types of M.UNMODELLED name what is not modelled, and
-- DeepSeek Sparse Attention's keys on a type that does not read them are
-- refused; a multimodal config of a type without a reader says
-- whether its `text_config` imports on its own.
-- @module apsearch.hf
local cjson = require "cjson"
local util = require "apsearch.util"
local lfs = require "lfs"

local M = {}

--- Supported model types, in the order listed in error messages.
M.supported = { "llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2",
                "gemma3_text", "gemma3", "phi3", "gpt2", "gpt_neox", "mpt", "nemotron_h", "smollm3",
                "qwen3_vl_text", "seed_oss", "qwen3_5_text", "olmo2", "olmo3", "glm4", "granite", "exaone4",
                "qwen2_vl", "qwen2_5_vl", "hunyuan_v1_dense", "ministral3", "cohere2", "nemotron", "arcee",
                "ernie4_5", "starcoder2", "stablelm", "phi", "cohere", "glm", "olmo", "bamba", "gpt_bigcode", "gptj", "falcon", "bloom", "helium", "glm4v_text",
                "mimo", "PanguEmbedded", "openpangu_dense", "jais2", "youtu", "nanochat", "cwm", "olmo_hybrid",
                "falcon_h1", "mamba2" }

--- config.json key of each model field for error messages (Llama-family
-- names; GPT-2 and MPT configs use their own, listed in the builders).
M.CONFIG_KEY = {
  num_layers = "num_hidden_layers", hidden_size = "hidden_size",
  num_attention_heads = "num_attention_heads",
  num_query_groups = "num_key_value_heads", ffn_hidden_size = "intermediate_size",
  vocab_size = "vocab_size", head_dim = "head_dim",
  max_position_embeddings = "max_position_embeddings",
  moe_router_num_groups = "n_group", moe_router_group_topk = "topk_group",
  hybrid_layer_pattern = "hybrid_override_pattern", mamba_num_heads = "mamba_num_heads",
  mamba_head_dim = "mamba_head_dim", mamba_state_dim = "ssm_state_size",
  mamba_num_groups = "n_groups", mamba_conv_kernel = "conv_kernel", mamba_chunk_size = "chunk_size",
  linear_attention_period = "full_attention_interval", linear_num_key_heads = "linear_num_key_heads",
  linear_num_value_heads = "linear_num_value_heads", linear_key_head_dim = "linear_key_head_dim",
  linear_value_head_dim = "linear_value_head_dim", linear_conv_kernel_dim = "linear_conv_kernel_dim",
}

local function is_null(v) return v == nil or v == cjson.null end

-- One line for the import's notes: a feature the config has that the
-- estimate does not price, prefixed with the file.
local function note(notes, file, fmt, ...)
  notes[#notes + 1] = file .. ": " .. string.format(fmt, ...)
end

--- transformers' YaRN ramp when the config gives no betas
-- (modeling_rope_utils._compute_yarn_parameters: beta_fast "or 32",
-- beta_slow "or 1"); the launchers write them for a yarn model without.
M.YARN_BETA_DEFAULTS = { beta_fast = 32, beta_slow = 1 }

--- A yarn model's beta as transformers uses it: the model's
-- `yarn_<name>` when given (> 0), else M.YARN_BETA_DEFAULTS[name].
-- @tparam table m model table
-- @tparam string name "beta_fast" or "beta_slow"
-- @treturn number (a float)
function M.yarn_beta(m, name)
  local v = m["yarn_" .. name] or 0
  return (v > 0 and v or M.YARN_BETA_DEFAULTS[name]) + 0.0
end

--- transformers' get_mscale (modeling_rope_utils._compute_yarn_parameters;
-- YaRN, arXiv:2309.00071 eq. 22 with sqrt(1/t) = 0.1 ln s + 1): the
-- magnitude 0.1 * mscale * ln(scale) + 1, and 1 when scale <= 1.
-- Megatron's _yarn_get_mscale and MindFormers' are the same function.
-- @tparam number scale the RoPE scaling factor (> 0)
-- @tparam[opt=1] number mscale the log coefficient
-- @treturn number (>= 1 for mscale >= 0)
function M.yarn_get_mscale(scale, mscale)
  if scale <= 1 then return 1.0 end
  return 0.1 * (mscale or 1) * math.log(scale) + 1.0
end

--- The cos/sin factor transformers applies for a yarn model
-- (_compute_yarn_parameters' attention_factor): the config's
-- attention_factor when given, else get_mscale(f, mscale) /
-- get_mscale(f, mscale_all_dim) when both are non-zero, else
-- get_mscale(f).  f is rope_scaling.factor (transformers releases that
-- take max_position_embeddings / original_max_position_embeddings
-- instead agree whenever the config is consistent, as DeepSeek-V3's and
-- Qwen2.5's are: 163840 / 4096 = 40, 131072 / 32768 = 4).
-- @tparam table m model table (rope_scaling_type "yarn")
-- @treturn number the factor (DeepSeek-V3: 1; Qwen2.5 factor 4: 1.13863)
function M.yarn_attention_factor(m)
  local f, ms, md = m.rope_scaling_factor or 1, m.yarn_mscale or 0, m.yarn_mscale_all_dim or 0
  if (m.yarn_attention_factor or 0) > 0 then return m.yarn_attention_factor + 0.0 end
  if ms > 0 and md > 0 then return M.yarn_get_mscale(f, ms) / M.yarn_get_mscale(f, md) end
  return M.yarn_get_mscale(f)
end

--- The `mscale` that makes a framework's get_mscale(f, mscale) /
-- get_mscale(f, mscale_all_dim) (Megatron YarnRotaryEmbedding,
-- MindFormers FreqsMgr) equal transformers' factor M.yarn_attention_factor
-- for the mscale_all_dim `md` the launcher writes: the config's mscale
-- when it gives both and no attention_factor, else
-- (a * get_mscale(f, md) - 1) / (0.1 ln f), solved from 0.1 ms ln f + 1 =
-- a * get_mscale(f, md).
-- @tparam table m model table (yarn)
-- @tparam number md the mscale_all_dim written (0: none)
-- @treturn number|nil the mscale; nil when f <= 1 (every mscale then gives
--   1) and the factor is not 1
function M.yarn_mscale_for(m, md)
  local f, ms = m.rope_scaling_factor or 1, m.yarn_mscale or 0
  if (m.yarn_attention_factor or 0) <= 0 and ms > 0 and md > 0 and md == (m.yarn_mscale_all_dim or 0) then
    return ms + 0.0
  end
  local a = M.yarn_attention_factor(m)
  if f <= 1 then return a == 1 and 1.0 or nil end
  if (m.yarn_attention_factor or 0) <= 0 and md == 0 then return 1.0 end -- get_mscale(f) / 1
  return (a * M.yarn_get_mscale(f, md) - 1) / (0.1 * math.log(f))
end

--- The pre-scaling context a yarn model's ramp is computed from, as
-- transformers takes it: rope_scaling.original_max_position_embeddings,
-- else max_position_embeddings (_compute_yarn_parameters).
-- @tparam table m model table (yarn)
-- @treturn integer|nil nil when the model gives neither
function M.yarn_original(m)
  local v = m.original_max_position_embeddings or 0
  if v <= 0 then v = m.max_position_embeddings or 0 end
  return v > 0 and math.tointeger(v) or nil
end

--- RoPE scaling types the model carries (`rope_scaling.rope_type`).
M.ROPE_SCALING = { "llama3", "linear", "yarn", "longrope" }

--- config.json keys of the norm epsilon, first present wins (NemotronConfig
-- calls it norm_eps, Starcoder2Config norm_epsilon).
M.NORM_EPS_KEYS = { "rms_norm_eps", "layer_norm_epsilon", "layer_norm_eps", "norm_eps", "norm_epsilon" }

--- Largest integer a config.json field may hold: the widest dimension or
-- count the core accepts for any model field (APS_MAX_WIDTH, 2^24,
-- src/core/model.c); the core bounds layer and expert counts further
-- (2^16) and names them.  A bigger value (`q_lora_rank = 1e30`) is refused
-- at import, naming the file and the key.
M.MAX_CONFIG_INT = 1 << 24

-- v as an integer in [min (0 or 1), M.MAX_CONFIG_INT]; raises
-- `<file>: <key>: expected a positive integer <= 16777216 (got v)` (or
-- `an integer in [0, 16777216]`) for anything else.
local function config_int(v, min, file, key)
  if not util.is_integer(v) or v < min or v > M.MAX_CONFIG_INT then
    local want = min == 1 and ("a positive integer <= %d"):format(M.MAX_CONFIG_INT)
      or ("an integer in [%d, %d]"):format(min, M.MAX_CONFIG_INT)
    util.fail(file, key, "expected " .. want, v)
  end
  return math.tointeger(v)
end

-- A finite number >= 0 at cfg[key] (nil when absent or null).
local function nonneg(cfg, key, file)
  local v = cfg[key]
  if is_null(v) then return nil end
  if type(v) ~= "number" or not (v >= 0 and v < math.huge) then
    util.fail(file, key, "expected a finite number >= 0", v)
  end
  return v + 0.0
end

-- A positive finite number at cfg[key] (nil when absent or null).
local function positive(cfg, key, file)
  local v = cfg[key]
  if is_null(v) then return nil end
  if type(v) ~= "number" or not (v > 0 and v < math.huge) then
    util.fail(file, key, "expected a finite number > 0", v)
  end
  return v + 0.0
end

--- The fraction of each head RoPE rotates: `partial_rotary_factor`
-- (transformers apply_rotary_pos_emb rotates the first head_dim * factor
-- dims, modeling_glm4_moe.py @ 000c33fd), else `default` (a builder's
-- class default); 1 or absent: every dim (nil, the core's 0).
-- @tparam table cfg the decoded config
-- @tparam string file for errors
-- @tparam[opt] number default the class's default when the key is absent
-- @treturn number|nil the fraction in (0, 1), nil for all of it
-- @raise `<file>: partial_rotary_factor: expected a number in (0, 1] (got v)`
function M.rotary_fraction(cfg, file, default)
  local v = cfg.partial_rotary_factor
  if is_null(v) then v = default end
  if v == nil then return nil end
  if type(v) ~= "number" or not (v > 0 and v <= 1) then
    util.fail(file, "partial_rotary_factor", "expected a number in (0, 1]", v)
  end
  return v < 1 and v + 0.0 or nil
end

-- A config value apsearch does not price, refused with the file, key,
-- value and why.
local function not_modelled(file, key, why, v)
  error(("NotImplemented: %s: %s: %s (got %s)"):format(file, key, why, util.describe(v)), 0)
end

--- The config keys that set a weight's count or shape (sizes, and the
-- bias switches attention_bias and mlp_bias): taken from a config
-- class's default (a config.json that leaves one out), they change the
-- parameter count, so a load says which (M.from_config's note).  The keys a
-- model's own note already names (num_key_value_heads) are left out.
M.COUNT_KEYS = {}
for _, k in ipairs({ "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                     "num_attention_heads", "moe_intermediate_size", "shared_expert_intermediate_size",
                     "moe_num_experts", "num_experts", "n_routed_experts", "num_local_experts",
                     "moe_num_shared_experts", "n_shared_experts", "num_shared_experts", "moe_k",
                     "num_experts_per_tok", "moe_topk", "first_k_dense_replace", "moe_layer_freq",
                     "moe_layer_start_index", "moe_layer_end_index", "moe_layer_interval",
                     "decoder_sparse_step", "kv_lora_rank", "q_lora_rank", "qk_nope_head_dim",
                     "qk_rope_head_dim", "v_head_dim", "attention_bias", "mlp_bias" }) do
  M.COUNT_KEYS[k] = true
end

-- During M.from_config's build: the M.COUNT_KEYS class_defaults filled,
-- key -> value (nil outside one).
local shape_defaults

-- cfg with every absent or null key of `defaults` filled in: the
-- defaults transformers' config class gives a key a config.json leaves out.
local function with_defaults(cfg, defaults)
  local t = {}
  for k, v in pairs(cfg) do t[k] = v end
  for k, v in pairs(defaults) do
    if is_null(t[k]) then t[k] = v end
  end
  return t
end

-- with_defaults for a language model's config class defaults (a
-- M.<FAMILY>_DEFAULTS table): the M.COUNT_KEYS it fills are noted.
local function class_defaults(cfg, defaults)
  for k, v in pairs(defaults) do
    if shape_defaults and M.COUNT_KEYS[k] and (type(v) == "number" or type(v) == "boolean") and is_null(cfg[k]) then
      shape_defaults[k] = v
    end
  end
  return with_defaults(cfg, defaults)
end

--- Refuses a null among `keys` of a config whose class has no use for
-- one (it would fail on it, where with_defaults would read the default).
-- @raise `<file>: <key>: null is not a value here (<class> ...) (got null)`
local function refuse_nulls(raw, keys, file, class)
  for _, k in ipairs(keys) do
    if raw[k] == cjson.null then
      util.fail(file, k, ("null is not a value here (%s computes with it)"):format(class), raw[k])
    end
  end
end

-- cfg with each absent or null key of `aliases` (old name -> name)
-- filled in from its old name: a config class's attribute_map.
local function with_aliases(cfg, aliases)
  local t = {}
  for k, v in pairs(cfg) do t[k] = v end
  for alias, key in pairs(aliases) do
    if is_null(t[key]) and not is_null(cfg[alias]) then t[key] = cfg[alias] end
  end
  return t
end

-- A setting of the config that must hold for the layers apsearch prices;
-- `name` the key as the file spells it (default: key).
local function require_value(cfg, key, want, file, why, name)
  if cfg[key] ~= want then
    util.fail(file, name or key, "expected " .. util.describe(want) .. " (" .. why .. ")", cfg[key])
  end
end

-- A gated MLP the builder prices as SwiGLU: `hidden_act` absent, null or
-- "silu" (the classes' default); another activation is refused, `why`
-- saying which MLP.
local function require_silu(cfg, file, why)
  -- transformers' ACT2CLS maps "swish" to the same SiLU
  if not is_null(cfg.hidden_act) and cfg.hidden_act ~= "swish" then
    require_value(cfg, "hidden_act", "silu", file, why)
  end
end


--- LongRoPE (Phi-3, Phi-3.5-MoE): per-dimension `short_factor` and
-- `long_factor` lists, no single factor.  The factor is the context
-- extension transformers derives, max_position_embeddings /
-- original_max_position_embeddings (modeling_rope_utils.py
-- _compute_longrope_parameters @ 040e1a7e; the original context from
-- rope_scaling, as PhimoeConfig copies it, or from the config's top level,
-- Phi3Config), else rope_scaling.factor, else 1.  Positions only: it
-- changes neither FLOPs nor memory.  Each list holds one factor > 0 per
-- rotated pair, int(head_dim * partial_rotary_factor) // 2 of them
-- (_validate_longrope_parameters; _compute_longrope_parameters divides
-- each pair's frequency by its factor, so another length does not
-- broadcast against the pairs and a factor <= 0 gives no frequency).
-- @raise `<file>: rope_scaling: short_factor: expected an array of numbers`
local function longrope(m, cfg, rs, file, where)
  local head_dim = m.head_dim or m.hidden_size // m.num_attention_heads
  local pairs_n = math.floor(head_dim * (m.rotary_percent or 1)) // 2
  for _, k in ipairs({ "short_factor", "long_factor" }) do
    local v = rs[k]
    local ok = type(v) == "table" and #v > 0
    for i = 1, ok and #v or 0 do ok = ok and type(v[i]) == "number" end
    if not ok then util.fail(where, k, "expected an array of numbers", v) end
    if #v ~= pairs_n then
      util.fail(where, k, ("expected %d factors, one per rotated pair of the head's %d RoPE dims (got %d)")
        :format(pairs_n, 2 * pairs_n, #v), nil, false)
    end
    for i = 1, #v do
      if not (v[i] > 0 and v[i] < math.huge) then
        util.fail(where, k .. "[" .. (i - 1) .. "]", "expected a finite number > 0", v[i])
      end
    end
  end
  local omp, omp_where = rs.original_max_position_embeddings, where
  if is_null(omp) then omp, omp_where = cfg.original_max_position_embeddings, file end
  if not is_null(omp) then
    m.original_max_position_embeddings = config_int(omp, 1, omp_where, "original_max_position_embeddings")
  end
  local mp, o = m.max_position_embeddings or 0, m.original_max_position_embeddings or 0
  if o > 0 and mp > 0 then
    m.rope_scaling_factor = mp / o
  elseif not m.rope_scaling_factor then
    m.rope_scaling_factor = 1.0
  end
  return m
end

--- The per-layer-type entries a transformers-5 `rope_parameters` may
-- hold (Gemma 3, Olmo 3): the full-attention layers' is the model's RoPE
-- (the one a launch file carries; the windowed layers' base is a numeric
-- no estimate reads).
M.ROPE_LAYER_TYPES = { "full_attention", "sliding_attention" }

-- transformers 5's `rope_parameters` (modeling_rope_utils RopeParameters):
-- one object, or one per layer type ({sliding_attention = {...},
-- full_attention = {...}}); returns the model's (nil: none) and its
-- path for errors.
local function rope_parameters(cfg, file)
  local rp = cfg.rope_parameters
  if is_null(rp) then return nil end
  if type(rp) ~= "table" or #rp > 0 then
    util.fail(file, "rope_parameters", "expected an object or null", rp)
  end
  local per_type = false
  for _, kind in ipairs(M.ROPE_LAYER_TYPES) do
    local v = rp[kind]
    if v ~= nil and (type(v) ~= "table" or #v > 0) then
      util.fail(file, "rope_parameters." .. kind, "expected an object", v)
    end
    per_type = per_type or v ~= nil
  end
  if not per_type then return rp, "rope_parameters" end
  return rp.full_attention, "rope_parameters.full_attention"
end

-- rope_theta, rope_scaling, partial RoPE and the norm epsilon into the
-- model table.  rope_parameters' rope_theta and partial_rotary_factor win
-- over the top-level keys (transformers 5 convert_rope_params_to_dict
-- setdefault()s the top-level rope_theta into it); a rope_scaling wins over
-- its scaling (it replaces or updates rope_parameters there).
local function numerics(m, cfg, file)
  local rp, rp_key = rope_parameters(cfg, file)
  local rp_where = rp and (file .. ": " .. rp_key)
  m.rope_theta = (rp and positive(rp, "rope_theta", rp_where)) or positive(cfg, "rope_theta", file)
    or positive(cfg, "rotary_emb_base", file) or m.rope_theta
  if rp and not is_null(rp.partial_rotary_factor) then
    m.rotary_percent = M.rotary_fraction(rp, rp_where, m.rotary_percent)
  else
    m.rotary_percent = M.rotary_fraction(cfg, file, m.rotary_percent)
  end
  for _, k in ipairs(M.NORM_EPS_KEYS) do
    local v = positive(cfg, k, file)
    if v then m.norm_eps = v break end
  end
  local rs, key = cfg.rope_scaling, "rope_scaling"
  if is_null(rs) and rp and (rp.rope_type ~= nil or rp.type ~= nil) then
    rs, key = rp, rp_key
  end
  if is_null(rs) then return m end
  local where = file .. ": " .. key
  if type(rs) ~= "table" then util.fail(file, key, "expected an object or null", rs) end
  local kind = rs.rope_type
  if is_null(kind) then kind = rs.type end
  -- Qwen2-VL / Qwen2.5-VL's multimodal RoPE ("mrope": transformers reads
  -- it as default RoPE over three position ids; on text they coincide)
  if is_null(kind) or kind == "default" or kind == "mrope" then return m end
  -- "dynamic": NTK scaling that acts only past the trained context (RoPE
  -- within it); with Hunyuan's `alpha`, NTK-alpha, a static base of
  -- rope_theta x alpha^(d / (d - 2)) for head width d (Hunyuan's
  -- HunYuanDynamicNTKAlphaRotaryEmbedding), read into rope_theta
  if kind == "dynamic" then
    local alpha = positive(rs, "alpha", where)
    if alpha and alpha ~= 1 then
      local d = m.head_dim or m.hidden_size // m.num_attention_heads
      -- (HunYuan's base * alpha ** (dim / (dim - 2)) divides by zero at a
      -- head width of 2; a base past the doubles is no RoPE)
      if d <= 2 then
        util.fail(where, "alpha", ("needs a head width above 2 (alpha^(d / (d - 2)) with d = %d)"):format(d), alpha)
      end
      local theta = (m.rope_theta or 10000.0) * alpha ^ (d / (d - 2))
      if not (util.is_finite(theta) and theta > 0) then
        util.fail(where, "alpha", ("gives a RoPE base of %s (rope_theta x alpha^(%d / %d))"):format(
          util.describe(theta), d, d - 2), alpha)
      end
      m.rope_theta = theta
    end
    return m
  end
  local known = false
  for _, k in ipairs(M.ROPE_SCALING) do known = known or k == kind end
  if not known then
    util.fail(where, "rope_type", "unsupported RoPE scaling (supported: default, " ..
      util.join(M.ROPE_SCALING) .. ")", kind)
  end
  m.rope_scaling_type = kind
  m.rope_scaling_factor = positive(rs, "factor", where)
  if kind == "longrope" then return longrope(m, cfg, rs, file, where) end
  if not m.rope_scaling_factor then util.fail(where, "factor", "required key is missing", nil) end
  if kind == "llama3" then
    m.low_freq_factor = positive(rs, "low_freq_factor", where)
    m.high_freq_factor = positive(rs, "high_freq_factor", where)
  elseif kind == "yarn" then
    -- transformers modeling_rope_utils._compute_yarn_parameters: the ramp
    -- between beta_fast and beta_slow rotations (absent or null: 32 and
    -- 1, "or 32", "or 1"), cos/sin scaled by get_mscale(factor, mscale)
    -- / get_mscale(factor, mscale_all_dim) when both are non-zero, else
    -- by get_mscale(factor); DeepSeek's attention multiplies the softmax
    -- scale by get_mscale(factor, mscale_all_dim)^2 when it is non-zero
    -- (modeling_deepseek.py DeepseekV3Attention).  0 = not given.
    -- attention_factor replaces the cos/sin factor outright; truncate
    -- false (gpt-oss) keeps the ramp's ends fractional (default true).
    m.yarn_beta_fast = positive(rs, "beta_fast", where)
    m.yarn_beta_slow = positive(rs, "beta_slow", where)
    m.yarn_attention_factor = positive(rs, "attention_factor", where)
    if not is_null(rs.truncate) then
      if type(rs.truncate) ~= "boolean" then util.fail(where, "truncate", "expected true or false", rs.truncate) end
      if rs.truncate == false then m.yarn_no_truncate = true end
    end
    for key, field in pairs({ mscale = "yarn_mscale", mscale_all_dim = "yarn_mscale_all_dim" }) do
      local v = nonneg(rs, key, where)
      if v and v > 0 then m[field] = v end
    end
  end
  local omp = rs.original_max_position_embeddings
  if not is_null(omp) then
    m.original_max_position_embeddings = config_int(omp, 1, where, "original_max_position_embeddings")
  end
  return m
end

--- config.json keys of dropout probabilities, in the order they are
-- checked: GPT-2 (transformers GPT2Config), GPT-NeoX and the Llama family
-- (GPTNeoXConfig, LlamaConfig.attention_dropout), BERT-style configs
-- (BertConfig), Seed-OSS and StarCoder2 (residual_dropout; StarCoder2's
-- embedding_dropout).  Any of them > 0 means the model trains with dropout.
M.DROPOUT_KEYS = { "attn_pdrop", "resid_pdrop", "embd_pdrop", "hidden_dropout",
                   "attention_dropout", "hidden_dropout_prob",
                   "attention_probs_dropout_prob", "residual_dropout", "embedding_dropout" }

--- Dropout of the configuration classes whose defaults are not 0, for a
-- config.json that states none of M.DROPOUT_KEYS: transformers'
-- GPT2Config and GPTBigCodeConfig (attn_pdrop, resid_pdrop, embd_pdrop
-- 0.1; configuration_gpt2.py, configuration_gpt_bigcode.py) and Ling 1.x's
-- BailingMoeConfig (attention_dropout 0.1; inclusionAI/Ling 69823a61).
-- Every other class apsearch reads defaults its attention_dropout (or
-- hidden / residual dropout) to 0.0 and its modules have no other dropout
-- (LlamaConfig, Gemma3TextConfig, Qwen2MoeConfig, DeepseekV2Config,
-- MiniMaxM2Config, ...), so such a config trains without dropout, as
-- transformers builds it: key -> probability.
-- `attention` and `hidden` are the class's two probabilities (the
-- residual and embedding ones alike for GPT-2).
M.DROPOUT_CLASS_DEFAULTS = {
  gpt2 = { "attn_pdrop", 0.1, attention = 0.1, hidden = 0.1 },
  gpt_bigcode = { "attn_pdrop", 0.1, attention = 0.1, hidden = 0.1 },
  bailing_moe = { "attention_dropout", 0.1, attention = 0.1, hidden = 0.0 },
}

--- The keys of M.DROPOUT_KEYS that drop attention probabilities
-- (Megatron's --attention-dropout); the others drop a layer's outputs
-- and the embedding's (--hidden-dropout).
M.ATTENTION_DROPOUT_KEYS = { attn_pdrop = true, attention_dropout = true,
                             attention_probs_dropout_prob = true }

--- Whether a config asks for dropout: the first of M.DROPOUT_KEYS that is
-- a number > 0; and whether it says at all (any of them present, 0
-- included: Llama's attention_dropout = 0.0 says "none").
-- @tparam table cfg decoded config.json
-- @tparam string file its name, for errors
-- The two probabilities, attention and hidden (M.ATTENTION_DROPOUT_KEYS
-- and the rest), are each the first key of its kind the config states, 0
-- for a kind it does not state (its modules have none of it).
-- @treturn boolean, string|nil key, number|nil value, boolean stated,
--   table `{attention = p, hidden = p}`
-- @raise `<file>: <key>: expected a dropout probability in [0, 1) (got v)`
--   for a number outside [0, 1) or a non-number other than null
local function dropout_of(cfg, file)
  local found, key, value, stated = false, nil, nil, false
  local prob = {}
  for _, k in ipairs(M.DROPOUT_KEYS) do
    local v = cfg[k]
    if not is_null(v) then
      stated = true
      if type(v) ~= "number" or not (v >= 0 and v < 1) then
        util.fail(file, k, "expected a dropout probability in [0, 1)", v)
      end
      if v > 0 and not found then found, key, value = true, k, v end
      local kind = M.ATTENTION_DROPOUT_KEYS[k] and "attention" or "hidden"
      if prob[kind] == nil then prob[kind] = v end
    end
  end
  prob.attention, prob.hidden = prob.attention or 0.0, prob.hidden or 0.0
  return found, key, value, stated, prob
end

--- Edits between a missing config key and a key of the file that is
-- named as its misspelling (num_hiden_layers: one); a longer name that
-- merely begins the same (intermediate_size_mlp) is another key.
M.MISSPELT_KEY_EDITS = 1

-- "required key is missing", with the file's own key when it is a
-- misspelling of it (M.MISSPELT_KEY_EDITS), and whether one was named
--- Keys other model types give the same quantity under (an expert count
-- is `num_local_experts` in Mixtral, `num_experts` in Qwen MoE,
-- `n_routed_experts` in DeepSeek): a config that has one of them where its
-- type reads another is told so, not that the key is simply missing.
M.SAME_QUANTITY_KEYS = {
  num_experts = { "num_local_experts", "n_routed_experts" },
  num_local_experts = { "num_experts", "n_routed_experts" },
  n_routed_experts = { "num_local_experts", "num_experts" },
  num_experts_per_tok = { "num_experts_per_token", "moe_k", "top_k" },
}

local function missing_problem(cfg, key)
  for _, other in ipairs(M.SAME_QUANTITY_KEYS[key] or {}) do
    if not is_null(cfg[other]) then
      return ("required key is missing; the file has %s, which this model type does not read (it reads %s)")
        :format(other, key), true
    end
  end
  local suggest, best, bd = require "apsearch.suggest", nil, M.MISSPELT_KEY_EDITS + 1
  local present = {}
  for k, v in pairs(cfg) do
    if type(k) == "string" and not is_null(v) then present[#present + 1] = k end
  end
  table.sort(present)
  for _, k in ipairs(present) do
    local dist = suggest.distance(key, k, M.MISSPELT_KEY_EDITS)
    if dist < bd then best, bd = k, dist end
  end
  if not best then return "required key is missing" end
  return ("required key is missing; the file has %s: misspelt?"):format(util.describe(best)), true
end

-- Reader bound to one config and file, raising errors that name both.
local function reader(cfg, file)
  local r = {}
  function r.has(key) return not is_null(cfg[key]) end
  function r.int(key, default)
    local v = cfg[key]
    if is_null(v) then
      if default ~= nil then return default end
      local problem, named = missing_problem(cfg, key)
      util.fail(file, key, problem, nil, not named)
    end
    return config_int(v, 1, file, key)
  end
  function r.bool(key, default)
    local v = cfg[key]
    if is_null(v) then return default end
    if type(v) ~= "boolean" then util.fail(file, key, "expected true or false", v) end
    return v
  end
  return r
end

--- Finds an expert count in a config (top level or `ffn_config`).
-- @treturn string|nil key, number|nil value
local function moe_key(cfg)
  local keys = { "num_local_experts", "num_experts", "n_routed_experts",
                 "moe_num_experts" }
  for _, scope in ipairs({ cfg, type(cfg.ffn_config) == "table" and cfg.ffn_config or {} }) do
    for _, k in ipairs(keys) do
      local v = scope[k]
      if type(v) == "number" and v > 1 then return k, v end
    end
  end
  return nil
end

--- Model name from a config path: the file name without `.json` (and
-- without a `_config` / `-config` / `.config` suffix: a download saved as
-- `Kimi-K2.5_config.json` is Kimi-K2.5), or the directory name for a file
-- called `config.json`.
local function name_from_path(path)
  local base = util.basename(path):gsub("%.json$", "")
  local named = base:match("^(.+)[_%-.]config$")
  if named then base = named end
  -- the Hugging Face cache: .../models--ORG--NAME/snapshots/<commit>/config.json
  local cached = path:match("models%-%-[^/]-%-%-([^/]+)/snapshots/[^/]+/config%.json$")
  if cached then
    base = cached
  elseif base == "config" then
    local dir = util.basename(util.dirname(path))
    if dir ~= "" and dir ~= "." and dir ~= "/" then base = dir end
  end
  if #base > 63 then base = base:sub(1, 63) end
  return base
end

--- The number of KV heads a config class gives a config.json that leaves
-- num_key_value_heads out (absent, not null), for the classes whose default is a number
-- rather than the head count (transformers models/<type>/configuration_
-- <type>.py @ 008e5743, phimoe and gpt_oss @ 040e1a7e / 02b8f42b, jamba @
-- 008f5c8c, stablelm and lfm2 @ 05cd1ec1): read as that, with a note.
-- The other llama-family classes take num_attention_heads
-- (LlamaConfig: None -> the heads), said by the note of KV_HEADS_DEFAULTED.
M.KV_HEADS_CLASS_DEFAULTS = { mistral = 8, ministral3 = 8, mixtral = 8, qwen2 = 32, qwen3 = 32, qwen2_moe = 16,
  qwen3_moe = 4, qwen3_next = 2, phimoe = 8, gemma = 16, gemma2 = 4, exaone4 = 32, seed_oss = 8, dots1 = 32,
  glm4_moe = 8, gpt_oss = 8, smollm3 = 4, stablelm = 32, jamba = 8, ernie4_5 = 2, ernie4_5_moe = 4,
  minimax_m2 = 8, lfm2 = 8 }

-- The models llama_like read without num_key_value_heads (weak keys):
-- from_config notes them, as the count moves with it.
local KV_HEADS_DEFAULTED = setmetatable({}, { __mode = "k" })

-- Llama family defaults: RMSNorm, RoPE, gated MLP, no biases.
local function llama_like(r, cfg, file, opts)
  -- LlamaMLP and its copies apply ACT2FN[hidden_act] to the gate: only
  -- silu is the SwiGLU priced here (a builder with its own MLP says so)
  if not opts.own_activation then
    require_silu(cfg, file, "the gated MLP is priced as SwiGLU; transformers applies hidden_act to its gate")
  end
  local m = {
    num_layers = r.int("num_hidden_layers"),
    hidden_size = r.int("hidden_size"),
    num_attention_heads = r.int("num_attention_heads"),
    ffn_hidden_size = r.int("intermediate_size"),
    vocab_size = r.int("vocab_size"),
    norms_per_layer = opts.norms_per_layer or 2,
    mlp = "swiglu", norm = "rmsnorm", position_embedding = "rope",
    norm_bias = false, qkv_bias = false, attn_out_bias = false,
    mlp_bias = false, qk_norm = false,
    tie_word_embeddings = r.bool("tie_word_embeddings", opts.tied or false),
  }
  m.num_query_groups = r.int("num_key_value_heads", m.num_attention_heads)
  if not r.has("num_key_value_heads") then KV_HEADS_DEFAULTED[m] = true end
  if r.has("max_position_embeddings") then
    m.max_position_embeddings = r.int("max_position_embeddings")
  end
  if r.has("head_dim") or opts.head_dim then
    m.head_dim = r.int("head_dim", opts.head_dim)
  end
  return m
end

-- Sliding-window attention: `sliding_window` tokens on `layers` of the
-- layers (nil: all); absent or null: none.
local function window(m, r, layers)
  if r.has("sliding_window") then
    m.sliding_window = r.int("sliding_window")
    m.sliding_window_layers = layers or m.num_layers
  end
  return m
end

local builders = {}

-- Llama's layer; `opts` as llama_like's (arcee: its own MLP activation)
local function llama_layer(r, cfg, file, opts)
  local m = llama_like(r, cfg, file, opts or {})
  local ab = r.bool("attention_bias", false)
  m.qkv_bias, m.attn_out_bias = ab, ab
  m.mlp_bias = r.bool("mlp_bias", false)
  return m
end

function builders.llama(r, cfg, file) return llama_layer(r, cfg, file) end

--- InternLM2 / InternLM2.5 (`internlm2`, remote code: modeling_internlm2.py
-- as OpenGVLab/InternVL 34a81000 and SGLang copy it, InternLM2Config
-- "Modified from transformers.model.llama.configuration_llama"): Llama's
-- layer with one packed `wqkv` GEMM of (heads + 2 x kv heads) x head_dim
-- and `wo`, both with a bias when `bias` (InternLM2Config's default true),
-- head_dim always hidden_size / num_attention_heads (InternLM2Attention
-- raises otherwise; a head_dim key is not read), the w1 / w3 / w2 SwiGLU
-- MLP without biases, `output` untied unless tie_word_embeddings. No
-- dropout in any attention class.
function builders.internlm2(r, cfg, file)
  local m = llama_like(r, cfg, file, {})
  if m.hidden_size % m.num_attention_heads ~= 0 then
    util.fail(file, "num_attention_heads", ("hidden_size %d is not a multiple of it (InternLM2Attention " ..
      "raises)"):format(m.hidden_size), m.num_attention_heads)
  end
  m.head_dim = nil -- hidden_size // num_attention_heads (from_config)
  local b = r.bool("bias", true)
  m.qkv_bias, m.attn_out_bias = b, b
  return m
end

--- InternLM3 (`internlm3`, remote code: modeling_internlm3.py, as a public
-- copy of it and the Neuron port agree): Llama's layer with q / k / v
-- biases when `qkv_bias`, o_proj and the SwiGLU MLP's biases when `bias`
-- (both false in InternLM3Config, as TensorRT-LLM's local copy of it for
-- its tests gives them), head_dim from the config when given.
function builders.internlm3(r, cfg, file)
  local m = llama_like(r, cfg, file, {})
  m.qkv_bias = r.bool("qkv_bias", false)
  local b = r.bool("bias", false)
  m.attn_out_bias, m.mlp_bias = b, b
  return m
end

--- EXAONE 3.0 / 3.5 (`exaone`, LG AI Research; remote code
-- modeling_exaone.py, as TensorRT-LLM's reference copy of ExaoneAttention
-- and ExaoneMLP for its tests and MLX's port read it): Llama's layer
-- under GPT-2's names -- ln_1, attn.attention q / k / v / out_proj
-- without biases (head_dim from the config when given, else
-- hidden_size / num_attention_heads), ln_2, the SwiGLU c_fc_0 / c_fc_1 /
-- c_proj without biases -- keyed `num_layers`, `activation_function`,
-- `layer_norm_epsilon`; EXAONE-3.5-2.4B ties wte and lm_head.
-- tie_word_embeddings must be given (no copy of ExaoneConfig's default was
-- read).
function builders.exaone(_, cfg, file)
  if is_null(cfg.num_layers) then util.fail(file, "num_layers", "required key is missing", nil) end
  if is_null(cfg.tie_word_embeddings) then
    util.fail(file, "tie_word_embeddings", "required key is missing (EXAONE-3.5-2.4B ties, 7.8B and 32B do not)", nil)
  end
  local c = with_aliases(cfg, { num_layers = "num_hidden_layers", activation_function = "hidden_act" })
  if not is_null(c.hidden_act) and c.hidden_act ~= "swish" then
    require_value(c, "hidden_act", "silu", file, "EXAONE's c_fc_0 / c_fc_1 MLP is priced as SwiGLU; it applies " ..
      "the activation to c_fc_0", is_null(cfg.hidden_act) and "activation_function" or "hidden_act")
  end
  return llama_like(reader(c, file), c, file, { own_activation = true })
end

--- openPangu-Embedded (model_type PanguEmbedded, remote code:
-- IDLEOAK/openpangu-lightweight-methods @ 26a4a87d modeling_openpangu_
-- dense.py): LlamaForCausalLM whose PanguEmbeddedAttention gives q, k, v
-- and o a bias when the config's `bias` is true, and whose
-- PanguEmbeddedMLP has none; the rest is Llama's (decoder layer, norms,
-- RoPE).
builders["PanguEmbedded"] = function(r, cfg, file)
  local m = llama_like(r, cfg, file, {})
  -- PanguEmbeddedConfig (its configuration_openpangu_dense.py): bias=True
  -- by default
  local b = r.bool("bias", true)
  m.qkv_bias, m.attn_out_bias = b, b
  return m
end
--- The same model under the type name of its transformers port
-- (PanguEmbeddedConfig.model_type "openpangu_dense").
builders.openpangu_dense = builders["PanguEmbedded"]

--- Seed-OSS (transformers models/seed_oss: modular_seed_oss.py @ 6e4054ae,
-- configuration_seed_oss.py @ d9aa776f): Llama's layer with q, k, v
-- biases (attention_bias, default true), an o_proj bias of its own
-- (attention_out_bias, default false), mlp_bias (default false) and
-- head_dim (default 128); dropout by residual_dropout and
-- attention_dropout (M.DROPOUT_KEYS).
function builders.seed_oss(r, cfg, file)
  require_silu(cfg, file, "Seed-OSS's SwiGLU MLP")
  local m = llama_like(r, cfg, file, { head_dim = 128 })
  m.qkv_bias = r.bool("attention_bias", true)
  m.attn_out_bias = r.bool("attention_out_bias", false)
  m.mlp_bias = r.bool("mlp_bias", false)
  return m
end

-- Mistral-7B-v0.1 and Phi-3: the window on every layer
-- (transformers MistralAttention / Phi3Attention pass it to flash attention)
function builders.mistral(r, cfg, file)
  return window(llama_like(r, cfg, file, {}), r)
end

--- Ministral 3 / Devstral 2 text models (ministral3; transformers
-- modeling_ministral3.py): Mistral's layer; `rope_parameters`'
-- llama_4_scaling_beta scales the queries by 1 + beta log(1 + floor(p /
-- original_max_position_embeddings)) at position p, 1 inside the original
-- context (noted: element-wise, not priced, and launch files do not
-- write it).
function builders.ministral3(r, cfg, file, notes)
  local m = builders.mistral(r, cfg, file)
  local rp = type(cfg.rope_parameters) == "table" and cfg.rope_parameters or {}
  local beta = positive(rp, "llama_4_scaling_beta", file .. ": rope_parameters")
  if beta then
    note(notes, file, "rope_parameters.llama_4_scaling_beta %s scales the queries past the original context " ..
      "(1 within it): element-wise, not priced, not written into launch files", util.describe(beta))
  end
  return m
end

function builders.phi3(r, cfg, file)
  return window(llama_like(r, cfg, file, {}), r)
end

--- Phi-4-reasoning-vision (`phi4-siglip`, remote code Phi4ForCausalLMV):
-- its language model is Phi3ForCausalLM on the top-level config (vLLM
-- vllm/model_executor/models/phi4siglip.py @ 055e47c2:
-- init_vllm_registered_model(hf_config=config, architectures=
-- ["Phi3ForCausalLM"])), beside a SigLIP2 tower (vision_config,
-- mm_hidden_size) and a two-layer projector, which are not counted.
builders["phi4-siglip"] = function(r, cfg, file, notes)
  note(notes, file, "model_type phi4-siglip is multimodal: the estimate trains its Phi-3 language model; the " ..
    "SigLIP2 vision tower (vision_config) and its projector are neither modelled nor counted")
  return builders.phi3(r, cfg, file)
end

--- RoPE scaling types Phi3Config reads as longrope, for the Phi-3 configs
-- written before it had that name (configuration_phi3.py @ 008e5743
-- convert_rope_params_to_dict: "su" or "yarn" -> "longrope").
M.PHI3_LONGROPE_ALIASES = { su = true, yarn = true }

--- A config as its model type's config class reads it, before any builder
-- (type -> function(cfg, file) returning the config to read; raises
-- `<file>: <key>: ...` for a value the class cannot take).
M.ADJUST = {}

function M.ADJUST.phi3(cfg)
  local rs = cfg.rope_scaling
  if type(rs) ~= "table" then return cfg end
  local kind = rs.rope_type
  if is_null(kind) then kind = rs.type end
  if not M.PHI3_LONGROPE_ALIASES[kind] then return cfg end
  local t, c = {}, {}
  for k, v in pairs(rs) do t[k] = v end
  for k, v in pairs(cfg) do c[k] = v end
  t.rope_type, t.type, c.rope_scaling = "longrope", nil, t
  return c
end

-- Qwen2/Qwen3: with use_sliding_window, layers from max_window_layers up
-- (transformers Qwen2Attention: layer_idx >= max_window_layers)
local function qwen_window(m, r, cfg, file)
  if r.bool("use_sliding_window", false) then
    local first = cfg.max_window_layers
    if is_null(first) then first = m.num_layers end
    first = math.min(config_int(first, 0, file, "max_window_layers"), m.num_layers)
    if first < m.num_layers then window(m, r, m.num_layers - first) end
  end
  return m
end

function builders.qwen2(r, cfg, file)
  local m = llama_like(r, cfg, file, {})
  m.qkv_bias = true -- Qwen2Attention: q/k/v_proj bias=True, o_proj bias=False
  return qwen_window(m, r, cfg, file)
end

--- Qwen2-VL and Qwen2.5-VL (transformers Qwen2VLConfig, Qwen2_5_VLConfig:
-- the text model from `text_config`, else from the top-level keys, as
-- the classes build Qwen2_5_VLTextConfig(**kwargs) when none is given;
-- modeling_qwen2_5_vl.py Qwen2_5_VLTextModel): Qwen2's layer (q/k/v
-- biases), its multimodal RoPE read as RoPE; the vision tower is neither
-- modelled nor counted (noted).
local function qwen_vl(r, cfg, file, notes)
  local text = cfg
  if type(cfg.text_config) == "table" and #cfg.text_config == 0 then
    text = with_defaults(cfg.text_config, { tie_word_embeddings = cfg.tie_word_embeddings })
    r = reader(text, file .. ": text_config")
  elseif not is_null(cfg.text_config) then
    util.fail(file, "text_config", "expected an object or null", cfg.text_config)
  end
  note(notes, file, "model_type %s is multimodal: the estimate trains its text model (Qwen2's layer); " ..
    "the vision tower (vision_config) is neither modelled nor counted", tostring(cfg.model_type))
  local m = builders.qwen2(r, text, file)
  -- numerics() reads the top level: the text_config's own RoPE base
  if text ~= cfg then m.rope_theta = positive(text, "rope_theta", file .. ": text_config") end
  return m
end
builders.qwen2_vl, builders.qwen2_5_vl = qwen_vl, qwen_vl

-- Qwen3's layer; `head_dim` the class's default when the key is absent
-- (Qwen3Config's 128; nil: hidden_size / num_attention_heads, what
-- Qwen3MoeAttention's getattr(config, "head_dim", hidden_size //
-- num_attention_heads) takes under Qwen3MoeConfig, which has no head_dim
-- field: configuration_qwen3_moe.py @ 008e5743)
local function qwen3_layer(r, cfg, file, head_dim)
  local m = qwen_window(llama_like(r, cfg, file, { head_dim = head_dim }), r, cfg, file)
  local ab = r.bool("attention_bias", false)
  m.qkv_bias, m.attn_out_bias = ab, ab
  m.qk_norm = true -- Qwen3Attention: q_norm, k_norm RMSNorm(head_dim)
  return m
end

function builders.qwen3(r, cfg, file) return qwen3_layer(r, cfg, file, 128) end

--- transformers' activation names (ACT2FN) of a gated MLP -> the model
-- field glu_activation: "gelu" is ACT2FN's exact (erf) GELUActivation,
-- which a re-saved Gemma 3 config may name (transformers activations.py
-- ACT2CLS; Gemma3MLP looks hidden_activation up there).
M.GLU_ACTIVATIONS = { gelu_pytorch_tanh = "gelu_tanh", silu = "silu", gelu = "gelu" }

--- The Gemma family's MLP activation: `hidden_activation` (GemmaConfig,
-- Gemma2Config, Gemma3TextConfig; absent or null: gelu_pytorch_tanh, the
-- classes' default) as glu_activation.
-- @tparam table cfg the decoded config
-- @tparam string file for errors
-- @treturn string "gelu_tanh", "gelu" or "silu"
function M.gemma_activation(cfg, file)
  local v = cfg.hidden_activation
  if is_null(v) then v = "gelu_pytorch_tanh" end
  local a = M.GLU_ACTIVATIONS[v]
  if not a then util.fail(file, "hidden_activation", "expected gelu_pytorch_tanh, gelu or silu", v) end
  return a
end

-- Gemma 1, 2 and 3 scale their RMSNorms by 1 + w, w initialised to 0
-- (transformers GemmaRMSNorm, Gemma2RMSNorm, Gemma3RMSNorm: `output *
-- (1.0 + self.weight.float())`; VaultGemmaRMSNorm is Gemma2RMSNorm), as
-- Megatron-Bridge's providers set layernorm_zero_centered_gamma
-- (NVIDIA-NeMo/Megatron-Bridge 067f987d src/megatron/bridge/models/gemma/
-- gemma_provider.py:45, gemma2_provider.py:488, gemma3_provider.py:67; Gemma
-- 4's gemma4_provider.py:284 False: its norm scales by w).
function builders.gemma(r, cfg, file)
  -- gated MLP (gate_proj, up_proj, down_proj) with GELU-tanh: "swiglu" here
  local m = llama_like(r, cfg, file, { head_dim = 256, tied = true, own_activation = true })
  m.glu_activation = M.gemma_activation(cfg, file)
  m.norm_zero_centered = true -- GemmaRMSNorm: x * (1 + w) (builders.gemma's comment)
  return m
end

--- Gemma2Config's soft-capping defaults (transformers configuration_gemma2.py):
-- a key absent from config.json takes these, a null one means none.
M.GEMMA2_SOFTCAPPING = { attn_logit_softcapping = 50.0, final_logit_softcapping = 30.0 }

-- Soft-capping values of a config into the model (absent: `defaults`'s,
-- null: none) and the notes.
local function softcapping(m, cfg, file, notes, defaults)
  for _, k in ipairs({ "attn_logit_softcapping", "final_logit_softcapping" }) do
    local cap = cfg[k] == nil and defaults[k] or positive(cfg, k, file)
    if cap then
      m[k] = cap
      note(notes, file, "%s = %s (tanh soft-capping) is element-wise; not priced", k, util.describe(cap))
    end
  end
  return m
end

function builders.gpt2(r, cfg, file)
  local h = r.int("n_embd")
  return {
    num_layers = r.int("n_layer"),
    hidden_size = h,
    num_attention_heads = r.int("n_head"),
    num_query_groups = r.int("n_head"),
    ffn_hidden_size = r.int("n_inner", 4 * h),
    vocab_size = r.int("vocab_size"),
    max_position_embeddings = r.int("n_positions"),
    norms_per_layer = 2,
    mlp = "gelu", norm = "layernorm", position_embedding = "learned",
    norm_bias = true, qkv_bias = true, attn_out_bias = true, mlp_bias = true,
    qk_norm = false,
    tie_word_embeddings = r.bool("tie_word_embeddings", true),
  }
end

function builders.gpt_neox(r, cfg, file)
  local a = r.int("num_attention_heads")
  local bias = r.bool("attention_bias", true)
  local m = {
    num_layers = r.int("num_hidden_layers"),
    hidden_size = r.int("hidden_size"),
    num_attention_heads = a,
    num_query_groups = a,
    ffn_hidden_size = r.int("intermediate_size"),
    vocab_size = r.int("vocab_size"),
    norms_per_layer = 2,
    mlp = "gelu", norm = "layernorm", position_embedding = "rope",
    norm_bias = true, qkv_bias = bias, attn_out_bias = bias, mlp_bias = true,
    qk_norm = false,
    tie_word_embeddings = r.bool("tie_word_embeddings", false),
  }
  if r.has("max_position_embeddings") then
    m.max_position_embeddings = r.int("max_position_embeddings")
  end
  return m
end

function builders.mpt(r, cfg, file)
  local h = r.int("d_model")
  local a = r.int("n_heads")
  local attn = type(cfg.attn_config) == "table" and cfg.attn_config or {}
  local ar = reader(attn, file .. ": attn_config")
  local alibi = ar.bool("alibi", false)
  local learned = r.bool("learned_pos_emb", true)
  local bias = not r.bool("no_bias", true)
  local ratio = cfg.expansion_ratio
  if is_null(ratio) then ratio = 4 end
  if type(ratio) ~= "number" or ratio <= 0 or not util.is_integer(ratio * h)
    or ratio * h > M.MAX_CONFIG_INT then
    util.fail(file, "expansion_ratio", ("expected a positive number with expansion_ratio * d_model " ..
      "integral and <= %d"):format(M.MAX_CONFIG_INT), ratio)
  end
  return {
    num_layers = r.int("n_layers"),
    hidden_size = h,
    num_attention_heads = a,
    num_query_groups = ar.int("kv_n_heads", a),
    ffn_hidden_size = math.tointeger(ratio * h),
    vocab_size = r.int("vocab_size"),
    max_position_embeddings = r.int("max_seq_len", 2048),
    norms_per_layer = 2,
    mlp = "gelu", norm = "layernorm",
    position_embedding = alibi and "alibi" or (learned and "learned" or "rope"),
    norm_bias = bias, qkv_bias = bias, attn_out_bias = bias, mlp_bias = bias,
    qk_norm = false,
    tie_word_embeddings = true, -- MPT has no separate lm_head
  }
end

---------------------------------------------------------------- mixture of experts

-- Integer in [0, M.MAX_CONFIG_INT] at cfg[key] (default when absent or
-- null).
local function count(cfg, key, default, file)
  local v = cfg[key]
  if is_null(v) then return default end
  return config_int(v, 0, file, key)
end

-- Qwen's mlp_only_layers: 0-based layers with a dense MLP.
local function layer_list(cfg, key, L, file)
  local v = cfg[key]
  if is_null(v) then return nil end
  local keys = 0
  if type(v) == "table" then for _ in pairs(v) do keys = keys + 1 end end
  -- a JSON object ({"0": 1}) decodes to a table with no array part
  if type(v) ~= "table" or keys ~= #v then util.fail(file, key, "expected an array of layer indices", v) end
  local out, seen = {}, {}
  for i = 1, #v do
    local x = v[i]
    if not util.is_integer(x) or x < 0 or x >= L then
      util.fail(file, key .. "[" .. (i - 1) .. "]", "expected a layer index in [0, " .. L .. ")", x)
    end
    x = math.tointeger(x)
    if not seen[x] then seen[x] = true out[#out + 1] = x end
  end
  table.sort(out)
  if #out == 0 then return nil end
  return out
end

--- How transformers' DeepSeek gates score a group of experts for
-- group-limited routing: the sum of this many best expert scores per
-- group, by `topk_method` (DeepSeek-V2 modeling_deepseek.py MoEGate
-- "group_limited_greedy": the group's max; DeepSeek-V3 MoEGate and
-- transformers DeepseekV3TopkRouter "noaux_tc": the sum of its top 2).
-- "greedy" (DeepseekV2Config's default) routes without groups.
M.GROUP_SCORE_TOPK = { group_limited_greedy = 1, noaux_tc = 2 }

-- The load-balancing loss coefficient: router_aux_loss_coef (Mixtral,
-- Qwen2/Qwen3-MoE, OLMoE) or aux_loss_alpha (DeepSeek), as Megatron-Bridge
-- v0.5.0 CONFIG_MAPPING maps both to moe_aux_loss_coeff; 0 or absent: none.
local function aux_loss(m, cfg, file, key)
  local a = nonneg(cfg, key, file)
  if a and a > 0 then m.moe_aux_loss_coeff = a end
end

-- Mixtral (transformers MixtralSparseMoeBlock): every layer's FFN is
-- num_local_experts experts of width intermediate_size, router h*E.
function builders.mixtral(r, cfg, file)
  local m = window(llama_like(r, cfg, file, {}), r)
  m.num_experts = r.int("num_local_experts")
  m.experts_per_token = r.int("num_experts_per_tok", 2) -- MixtralConfig default
  m.moe_ffn_hidden_size = m.ffn_hidden_size
  -- MixtralSparseMoeBlock: softmax, top-k, renormalised (routing_weights /=
  -- their sum): Megatron's default top-k-then-softmax, no key to read
  aux_loss(m, cfg, file, "router_aux_loss_coef")
  return m
end

--- The experts every token of a PhiMoE model is routed to: sparsemixer's
-- two picks (transformers modular_phimoe.py @ 0233e509).
M.PHIMOE_TOP_K = 2

--- PhiMoE (Phi-3.5-MoE; transformers models/phimoe, modular_phimoe.py
-- and configuration_phimoe.py @ 040e1a7e): Mixtral's layer with
-- LayerNorms that have a bias (PhimoeDecoderLayer input_layernorm,
-- post_attention_layernorm and the final norm: nn.LayerNorm, elementwise
-- affine), q/k/v/o biases when attention_bias, num_local_experts SwiGLU
-- experts of intermediate_size with a bias-free router, and an lm_head
-- bias when lm_head_bias (both default false).  SparseMixer routing
-- (sparsemixer, top 2) chooses the same 2 experts' work as a softmax top-k
-- router: priced as one.  sparsemixer picks a first and then a second
-- expert whatever num_experts_per_tok says (its top_k argument is unused,
-- modular_phimoe.py @ 0233e509), so the key must be 2 and there must be
-- a second expert to pick; PhimoeConfig raises a TypeError when an object
-- rope_scaling lacks a number short_mscale or long_mscale.
function builders.phimoe(r, cfg, file, notes)
  require_silu(cfg, file, "PhiMoE's SwiGLU experts")
  if not is_null(cfg.num_experts_per_tok) then
    require_value(cfg, "num_experts_per_tok", M.PHIMOE_TOP_K, file,
      "sparsemixer routes every token to 2 experts whatever this key says")
  end
  if r.int("num_local_experts") < M.PHIMOE_TOP_K then
    util.fail(file, "num_local_experts", "expected at least 2 (sparsemixer picks a second expert)",
      cfg.num_local_experts)
  end
  local rs = cfg.rope_scaling
  for _, k in ipairs(type(rs) == "table" and { "short_mscale", "long_mscale" } or {}) do
    if type(rs[k]) ~= "number" or not (rs[k] > -math.huge and rs[k] < math.huge) then
      util.fail(file .. ": rope_scaling", k, "expected a number (PhimoeConfig requires it)", rs[k])
    end
  end
  local m = builders.mixtral(r, cfg, file)
  m.norm, m.norm_bias = "layernorm", true
  local ab = r.bool("attention_bias", false)
  m.qkv_bias, m.attn_out_bias = ab, ab
  m.lm_head_bias = r.bool("lm_head_bias", false)
  if m.num_experts > 0 then
    note(notes, file, "SparseMixer routing (PhimoeRouter) is priced as softmax top-%d routing (same " ..
      "experts' work); frameworks without it train top-k softmax routing", m.experts_per_token)
  end
  return m
end

-- Qwen2-MoE / Qwen3-MoE (transformers Qwen2MoeDecoderLayer): layer i has
-- experts unless listed in mlp_only_layers and when (i + 1) is a multiple
-- of decoder_sparse_step; the others a dense MLP of intermediate_size.
local function qwen_moe(m, r, cfg, file)
  m.num_experts = r.int("num_experts")
  m.experts_per_token = r.int("num_experts_per_tok")
  m.moe_ffn_hidden_size = r.int("moe_intermediate_size")
  local step = r.int("decoder_sparse_step", 1)
  if step > m.num_layers then
    util.fail(file, "decoder_sparse_step", "no layer would have experts (num_hidden_layers = " ..
      m.num_layers .. ")", step)
  end
  m.moe_layer_freq = step
  m.moe_layer_phase = step - 1
  m.moe_dense_layers = layer_list(cfg, "mlp_only_layers", m.num_layers, file)
  aux_loss(m, cfg, file, "router_aux_loss_coef")
  -- Qwen2MoeSparseMoeBlock / Qwen3MoeSparseMoeBlock: softmax over all
  -- experts, top-k, renormalised only when norm_topk_prob (the configs'
  -- default false)
  if not r.bool("norm_topk_prob", false) then m.moe_router_pre_softmax = true end
  return m
end

-- Qwen1.5-MoE / Qwen2-MoE: q, k, v biases; a shared expert of
-- shared_expert_intermediate_size with a sigmoid gate h -> 1.
builders.qwen2_moe = function(r, cfg, file)
  local m = llama_like(r, cfg, file, {})
  m.qkv_bias = true
  qwen_moe(qwen_window(m, r, cfg, file), r, cfg, file)
  local fs = count(cfg, "shared_expert_intermediate_size", nil, file)
  if fs == nil then util.fail(file, "shared_expert_intermediate_size", "required key is missing", nil) end
  if fs > 0 then
    m.shared_expert_ffn_hidden_size = fs
    m.shared_expert_gate = true
  end
  return m
end

-- Qwen3-MoE: as qwen3 (q/k norms, head_dim; absent: hidden_size /
-- num_attention_heads), no shared expert.
builders.qwen3_moe = function(r, cfg, file)
  local m = qwen3_layer(r, cfg, file, nil)
  return qwen_moe(m, r, cfg, file)
end

-- DeepSeek's router (modeling_deepseek.py MoEGate of each model's own
-- repository, DeepseekV2Config / DeepseekV3Config defaults): the score is
-- sigmoid with the noaux_tc expert bias (V3), else softmax
-- (`scoring_func`, checked against it); `topk_method` group_limited_greedy
-- or noaux_tc limits a token to `topk_group` of `n_group` groups (n_group
-- 1: no limit); the top-k weights are renormalised when top_k > 1 and
-- `norm_topk_prob` (default false); `routed_scaling_factor` multiplies
-- them (V2: only when not renormalised); `aux_loss_alpha` > 0 is the
-- load-balancing loss coefficient, per sequence when `seq_aux` (default
-- true).
local function deepseek_router(m, r, cfg, file, v3, method, norm_default)
  local sf = cfg.scoring_func
  local want = m.moe_router_bias and "sigmoid" or "softmax"
  if not is_null(sf) and sf ~= want then
    util.fail(file, "scoring_func", string.format("expected %s with topk_method %s (%s's gate)",
      want, method, v3 and "DeepSeek-V3" or "DeepSeek-V2"), sf)
  end
  local k = m.experts_per_token
  local renorm = k > 1 and r.bool("norm_topk_prob", norm_default or false)
  if not renorm then m.moe_router_pre_softmax = true end
  local rsf = nonneg(cfg, "routed_scaling_factor", file)
  if rsf and rsf > 0 and (v3 or not renorm) then m.moe_router_topk_scaling_factor = rsf end
  if M.GROUP_SCORE_TOPK[method] then
    -- at least 1: the gate views the scores as n_group groups of
    -- n_routed_experts // n_group (0 divides by zero there)
    local g = is_null(cfg.n_group) and 1 or config_int(cfg.n_group, 1, file, "n_group")
    if g > 1 then
      m.moe_router_num_groups = g
      m.moe_router_group_topk = r.int("topk_group")
      m.moe_router_group_score_topk = M.GROUP_SCORE_TOPK[method]
    end
  end
  aux_loss(m, cfg, file, "aux_loss_alpha")
  if m.moe_aux_loss_coeff and r.bool("seq_aux", true) then m.moe_seq_aux_loss = true end
  return m
end

-- The experts under the names Ling 1.x, K-EXAONE, Hy3 and Sarvam 30B give
-- them: num_experts of moe_intermediate_size, top num_experts_per_tok,
-- num_shared_experts shared ones of the same width (one MLP of their sum).
local function shared_experts_block(m, r, c, file)
  m.num_experts = r.int("num_experts")
  m.experts_per_token = r.int("num_experts_per_tok")
  m.moe_ffn_hidden_size = r.int("moe_intermediate_size")
  local shared = count(c, "num_shared_experts", 0, file)
  if shared > 0 then m.shared_expert_ffn_hidden_size = shared * m.moe_ffn_hidden_size end
  return m
end

-- The layers from `first_k_dense_replace` on have experts; at least one
-- must.
local function first_dense(m, cfg, file)
  local first = count(cfg, "first_k_dense_replace", 0, file)
  if first >= m.num_layers then
    util.fail(file, "first_k_dense_replace", "no layer would have experts (num_hidden_layers = " ..
      m.num_layers .. ")", first)
  end
  if first > 0 then m.moe_first_dense_layers = first end
  return m
end

-- DeepSeek's experts: n_routed_experts of moe_intermediate_size, top
-- num_experts_per_tok, n_shared_experts shared ones of the same width (one
-- MLP of their sum), dense layers before first_k_dense_replace.
local function deepseek_experts(m, r, cfg, file)
  m.num_experts = r.int("n_routed_experts")
  m.experts_per_token = r.int("num_experts_per_tok")
  m.moe_ffn_hidden_size = r.int("moe_intermediate_size")
  local shared = count(cfg, "n_shared_experts", 0, file)
  if shared > 0 then m.shared_expert_ffn_hidden_size = shared * m.moe_ffn_hidden_size end
  return first_dense(m, cfg, file)
end

-- DeepSeek-V2/V3 (modeling_deepseek.py): multi-head latent attention;
-- n_shared_experts experts of moe_intermediate_size always active; the
-- first first_k_dense_replace layers and those with i % moe_layer_freq ~= 0
-- dense (intermediate_size); topk_method "noaux_tc" (always for V3) adds
-- the router's e_score_correction_bias (E); num_nextn_predict_layers MTP
-- modules (counted apart).
-- The Llama-like layer with DeepSeek's multi-head latent attention
-- (DeepseekV3Attention and its copies): q_a_proj (h x q_lora_rank, none
-- when q_lora_rank is null: q_proj), its RMSNorm, q_b_proj, kv_a_proj_
-- with_mqa (h x (kv_lora_rank + qk_rope_head_dim)), its RMSNorm, kv_b_proj,
-- o_proj; attention_bias (biases on q_a, kv_a and o) refused.
local function mla_layer(r, cfg, file)
  local m = llama_like(r, cfg, file, {})
  if r.bool("attention_bias", false) then
    error(string.format("NotImplemented: %s: attention_bias = true with multi-head latent " ..
      "attention is not modelled", file), 0)
  end
  m.num_query_groups = m.num_attention_heads -- MLA: every head its own K/V
  local qr = count(cfg, "q_lora_rank", 0, file)
  if qr > 0 then m.q_lora_rank = qr end -- null: no query compression
  m.kv_lora_rank = r.int("kv_lora_rank")
  m.qk_nope_head_dim = r.int("qk_nope_head_dim")
  m.qk_rope_head_dim = r.int("qk_rope_head_dim")
  m.v_head_dim = r.int("v_head_dim")
  m.head_dim = m.qk_nope_head_dim + m.qk_rope_head_dim
  return m
end

local function deepseek(r, cfg, file, v3)
  local m = mla_layer(r, cfg, file)
  local mtp = count(cfg, "num_nextn_predict_layers", 0, file)
  if mtp > 0 then m.mtp_layers = mtp end
  if count(cfg, "n_routed_experts", 0, file) == 0 then return m end
  deepseek_experts(m, r, cfg, file)
  m.moe_layer_freq = r.int("moe_layer_freq", 1)
  local method = cfg.topk_method
  if is_null(method) then method = v3 and "noaux_tc" or "greedy" end
  if type(method) ~= "string" or not (method == "greedy" or M.GROUP_SCORE_TOPK[method]) then
    util.fail(file, "topk_method", "expected greedy, group_limited_greedy or noaux_tc", method)
  end
  if v3 or method == "noaux_tc" then m.moe_router_bias = true end
  return deepseek_router(m, r, cfg, file, v3, method)
end

--- DeepseekV2Config's defaults (transformers configuration_deepseek_v2.py
-- @ 008e5743) for the count and shape keys a `deepseek_v2` config may leave
-- out (num_experts_per_tok has no default there: a config must give it).
M.DEEPSEEK_V2_DEFAULTS = {
  vocab_size = 32000, hidden_size = 4096, intermediate_size = 11008, num_hidden_layers = 32,
  num_attention_heads = 32, first_k_dense_replace = 0, kv_lora_rank = 512, q_lora_rank = 1536,
  n_routed_experts = 64, n_shared_experts = 2, qk_nope_head_dim = 128, qk_rope_head_dim = 64,
  v_head_dim = 128, moe_intermediate_size = 1407, topk_method = "greedy",
}

--- DeepseekV3Config's defaults (transformers configuration_deepseek_v3.py
-- @ 008e5743; DeepSeek-V3's shape, which Kimi-K2's `kimi_k2` configs load
-- with) for the keys a `deepseek_v3` config may leave out: a DeepSeek-V3 or
-- Kimi-K2 file without n_routed_experts is transformers' 256 experts, not a
-- dense model.
M.DEEPSEEK_V3_DEFAULTS = {
  vocab_size = 129280, hidden_size = 7168, intermediate_size = 18432, moe_intermediate_size = 2048,
  num_hidden_layers = 61, num_attention_heads = 128, n_shared_experts = 1, n_routed_experts = 256,
  kv_lora_rank = 512, q_lora_rank = 1536, qk_rope_head_dim = 64, v_head_dim = 128,
  qk_nope_head_dim = 128, num_experts_per_tok = 8, first_k_dense_replace = 3,
}

--- The DeepSeek keys whose null the original remote code
-- (modeling_deepseek.py: `if config.q_lora_rank is None`, `config.
-- n_routed_experts is not None and ...`, `if config.n_shared_experts is not
-- None`) reads as none: q_proj without compression, dense layers, no shared
-- expert.  Only an absent one takes the class default.
M.DEEPSEEK_NULL_MEANS_NONE = { "q_lora_rank", "n_routed_experts", "n_shared_experts" }

-- class_defaults for DeepSeek's classes, an explicit null of
-- M.DEEPSEEK_NULL_MEANS_NONE kept.
local function deepseek_defaults(cfg, defaults, file)
  local none = {}
  for _, k in ipairs(M.DEEPSEEK_NULL_MEANS_NONE) do none[k] = true end
  -- any other count key's null is passed to the class as None, which
  -- builds no model (nn.Linear(h, None + 64), layer_idx >= None): refused,
  -- not read as the class default (a breaker's round 10)
  local keys = {}
  for k in pairs(defaults) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do
    if cfg[k] == cjson.null and not none[k] then
      util.fail(file, k, "null is no value here: transformers passes None to the config class, which builds no " ..
        "model with it (leave the key out for the class default)", cfg[k])
    end
  end
  local c = class_defaults(cfg, defaults)
  for k in pairs(none) do
    if cfg[k] == cjson.null then
      c[k] = cjson.null
      if shape_defaults then shape_defaults[k] = nil end
    end
  end
  return c
end

builders.deepseek_v2 = function(_, cfg, file)
  local c = deepseek_defaults(cfg, M.DEEPSEEK_V2_DEFAULTS, file)
  return deepseek(reader(c, file), c, file, false)
end
builders.deepseek_v3 = function(_, cfg, file)
  local c = deepseek_defaults(cfg, M.DEEPSEEK_V3_DEFAULTS, file)
  return deepseek(reader(c, file), c, file, true)
end

--- YoutuConfig's defaults (transformers configuration_youtu.py @
-- 008e5743, documented as tencent/Youtu-LLM-2B's) for the keys a
-- config.json may leave out.
M.YOUTU_DEFAULTS = {
  vocab_size = 128256, hidden_size = 2048, intermediate_size = 6144, num_hidden_layers = 32,
  num_attention_heads = 16, kv_lora_rank = 512, q_lora_rank = 1536, qk_rope_head_dim = 64, v_head_dim = 128,
  qk_nope_head_dim = 128, hidden_act = "silu", tie_word_embeddings = true, attention_bias = false,
}

--- Youtu-LLM (`youtu`, Tencent; transformers modular_youtu.py @ 07497505):
-- Llama's dense layer (SwiGLU MLP of intermediate_size, two RMSNorms) with
-- DeepSeek-V3's multi-head latent attention (YoutuAttention); tied
-- embeddings by default. YoutuConfig removes DeepSeek-V3's MoE and MTP
-- keys: a config that still has them gets none.
function builders.youtu(_, cfg, file)
  local c = class_defaults(cfg, M.YOUTU_DEFAULTS)
  if cfg.q_lora_rank == cjson.null then c.q_lora_rank = nil end -- q_proj
  return mla_layer(reader(c, file), c, file)
end

--- Keys a model's transformers class never reads although the reader it
-- shares here would: those its config class removes from its parent's
-- (`key = AttributeError()` or `del`), and the parent's keys its own
-- modules ignore.  from_config reads a config.json without them, before
-- any check, so a file that still carries them is read as transformers
-- builds it.
-- youtu: YoutuConfig removes DeepSeek-V3's MoE and MTP keys
-- (modular_youtu.py @ 07497505); mistral4: Mistral4MoE / Mistral4TopkRouter
-- read no scoring_func, topk_method, moe_layer_freq or MTP depth
-- (modeling_mistral4.py @ 0205eec1); solar_open: SolarOpenConfig removes
-- first_k_dense_replace and use_qk_norm, and Glm4MoeTopkRouter is sigmoid
-- whatever scoring_func says (modular_solar_open.py @ 02e8340b);
-- exaone_moe: DeepseekV3TopkRouter is sigmoid whatever scoring_func says
-- (modular_exaone_moe.py @ 02e8340b); flex_olmo: FlexOlmoConfig deletes
-- clip_qkv (modular_flex_olmo.py @ 008e5743); olmo_hybrid:
-- OlmoHybridConfig removes head_dim, mlp_bias, pretraining_tp
-- (modular_olmo_hybrid.py @ 009e78d6); nanochat: no attention
-- soft-capping (modular_nanochat.py @ a1530d2a).
M.IGNORED_KEYS = {
  youtu = { "n_shared_experts", "n_routed_experts", "output_router_logits", "routed_scaling_factor", "n_group",
    "topk_group", "num_experts_per_tok", "first_k_dense_replace", "norm_topk_prob", "pretraining_tp",
    "moe_intermediate_size", "num_mtp_layers" },
  mistral4 = { "scoring_func", "topk_method", "num_nextn_predict_layers", "moe_layer_freq" },
  solar_open = { "first_k_dense_replace", "use_qk_norm", "num_nextn_predict_layers", "scoring_func", "topk_method" },
  exaone_moe = { "scoring_func", "topk_method" },
  flex_olmo = { "clip_qkv" },
  olmo_hybrid = { "head_dim", "mlp_bias", "pretraining_tp" },
  nanochat = { "attn_logit_softcapping" },
}

--- Mistral4Config's defaults (transformers configuration_mistral4.py @
-- 008e5743, documented as mistralai/Mistral-Small-4-119B-2603's), for the
-- keys a config.json may leave out.
M.MISTRAL4_DEFAULTS = {
  vocab_size = 131072, hidden_size = 4096, intermediate_size = 12288, moe_intermediate_size = 2048,
  num_hidden_layers = 36, num_attention_heads = 32, n_shared_experts = 1, n_routed_experts = 128,
  routed_scaling_factor = 1.0, kv_lora_rank = 256, q_lora_rank = 1024, qk_rope_head_dim = 64,
  v_head_dim = 128, qk_nope_head_dim = 64, n_group = 1, topk_group = 1, num_experts_per_tok = 4,
  first_k_dense_replace = 0, norm_topk_prob = true, hidden_act = "silu", tie_word_embeddings = false,
  attention_bias = false,
}
--- Mistral4Config's rope_parameters when the config gives none (its
-- __post_init__; rope_theta 10000, YaRN factor 128 over 8192 tokens).
M.MISTRAL4_ROPE = { type = "yarn", rope_theta = 10000.0, factor = 128.0, original_max_position_embeddings = 8192,
  beta_fast = 32.0, beta_slow = 1.0, mscale_all_dim = 1.0, mscale = 1.0, llama_4_scaling_beta = 0.1 }
--- The attribute_map of Mistral4Config and SolarOpenConfig: a config's
-- num_local_experts is n_routed_experts (PreTrainedConfig.__setattr__).
M.N_ROUTED_ALIASES = { num_local_experts = "n_routed_experts" }

--- Mistral Small 4 (`mistral4`, also the text_config of its `mistral3`
-- wrapper; transformers modeling_mistral4.py @ 0205eec1 / modular_
-- mistral4.py @ 02075795): DeepSeek-V3's multi-head latent attention
-- (Mistral4Attention; the query's per-position llama-4 scale is one
-- elementwise product, not priced) and its MoE block on every layer from
-- first_k_dense_replace on (Mistral4MoE: n_routed_experts of moe_
-- intermediate_size, shared experts of moe_intermediate_size x
-- n_shared_experts, dense layers of intermediate_size). Its router
-- (Mistral4TopkRouter: E x h, no bias, no e_score_correction_bias) takes a
-- softmax, keeps topk_group of n_group groups by their top-2 sum,
-- renormalises the top-k weights when norm_topk_prob and multiplies them
-- by routed_scaling_factor. No MTP module, no moe_layer_freq, no
-- scoring_func or topk_method: the class reads none of them.
function builders.mistral4(_, cfg, file, notes, extra)
  local c = class_defaults(with_aliases(cfg, M.N_ROUTED_ALIASES), M.MISTRAL4_DEFAULTS)
  if cfg.q_lora_rank == cjson.null then c.q_lora_rank = nil end -- q_proj
  if is_null(cfg.rope_parameters) and is_null(cfg.rope_scaling) and is_null(cfg.rope_theta) then
    c.rope_parameters = M.MISTRAL4_ROPE
  end
  local rp = type(c.rope_parameters) == "table" and c.rope_parameters or {}
  local beta = rp.llama_4_scaling_beta
  if type(beta) == "number" and beta ~= 0 then
    note(notes, file, "rope_parameters.llama_4_scaling_beta %s scales the queries by position (1 + beta " ..
      "log(1 + floor(p / original_max_position_embeddings))): element-wise, not priced; Megatron-LM has no " ..
      "such scale, so its script trains without it", util.describe(beta))
  end
  extra.own_numerics = true
  local r = reader(c, file)
  local m = deepseek_experts(mla_layer(r, c, file), r, c, file)
  return numerics(deepseek_router(m, r, c, file, true, "noaux_tc"), c, file)
end

--- Glm4MoeConfig's defaults for keys a config.json may leave out
-- (transformers configuration_glm4_moe.py @ 008c726d): RoPE on half of
-- each head, no attention biases, top-k weights renormalised, no expert
-- groups.
M.GLM4_MOE_DEFAULTS = { partial_rotary_factor = 0.5, attention_bias = false, norm_topk_prob = true }

-- GLM-4.5 / GLM-4.6 (transformers modeling_glm4_moe.py @ 000c33fd:
-- Glm4MoeAttention, Glm4MoeMoE, Glm4MoeTopkRouter, Glm4MoeDecoderLayer):
-- q, k, v with attention_bias biases, o_proj without; per-head q_norm and
-- k_norm RMSNorm(head_dim) when use_qk_norm; RoPE on partial_rotary_factor
-- of each head; layer i >= first_k_dense_replace has n_routed_experts
-- experts of moe_intermediate_size and n_shared_experts shared ones of
-- the same width (Glm4MoeMLP(moe_intermediate_size * n_shared_experts)),
-- the others a dense MLP of intermediate_size; the router (E x h, no bias)
-- scores with a sigmoid plus e_score_correction_bias (E), keeps the best
-- topk_group of n_group groups by their top-2 sum, renormalises the top-k
-- weights when norm_topk_prob and multiplies them by routed_scaling_factor
-- (DeepSeek-V3's noaux_tc gate); num_nextn_predict_layers MTP modules,
-- which transformers does not build (counted apart).
function builders.glm4_moe(_, raw, file)
  local D = M.GLM4_MOE_DEFAULTS
  local cfg = class_defaults(raw, D)
  local r = reader(cfg, file)
  local m = llama_like(r, cfg, file, {})
  m.qkv_bias, m.attn_out_bias = r.bool("attention_bias", D.attention_bias), false
  m.qk_norm = r.bool("use_qk_norm", false)
  m.rotary_percent = M.rotary_fraction(cfg, file, D.partial_rotary_factor)
  m.num_experts = r.int("n_routed_experts")
  m.experts_per_token = r.int("num_experts_per_tok")
  m.moe_ffn_hidden_size = r.int("moe_intermediate_size")
  local shared = count(cfg, "n_shared_experts", nil, file)
  if shared == nil then util.fail(file, "n_shared_experts", "required key is missing", nil) end
  if shared > 0 then m.shared_expert_ffn_hidden_size = shared * m.moe_ffn_hidden_size end
  first_dense(m, cfg, file)
  local mtp = count(cfg, "num_nextn_predict_layers", 0, file)
  if mtp > 0 then m.mtp_layers = mtp end
  m.moe_router_bias = true
  return deepseek_router(m, r, cfg, file, true, "noaux_tc", D.norm_topk_prob)
end

--- SolarOpenConfig's defaults (transformers configuration_solar_open.py
-- @ 008e5743, documented as upstage/Solar-Open-100B's), for the keys a
-- config.json may leave out; RoPE on every dimension (partial_rotary_
-- factor 1.0, set before Glm4MoeConfig's 0.5).
M.SOLAR_OPEN_DEFAULTS = {
  vocab_size = 196608, hidden_size = 4096, num_hidden_layers = 48, num_attention_heads = 64,
  num_key_value_heads = 8, head_dim = 128, hidden_act = "silu", tie_word_embeddings = false,
  attention_bias = false, moe_intermediate_size = 1280, num_experts_per_tok = 8, n_shared_experts = 1,
  n_routed_experts = 128, routed_scaling_factor = 1.0, n_group = 1, topk_group = 1, norm_topk_prob = true,
  partial_rotary_factor = 1.0,
}
--- SolarOpenConfig.default_theta: the RoPE base when the config gives none.
M.SOLAR_OPEN_DEFAULT_THETA = 1000000.0

--- Solar Open (`solar_open`, Upstage; transformers modular_solar_open.py
-- @ 02e8340b): Llama's attention (q, k, v biases when attention_bias, o_proj
-- without; no Q/K norms) and GLM-4.5's MoE block (Glm4MoeMoE: the sigmoid
-- router with e_score_correction_bias, n_shared_experts shared experts) on
-- every layer. SolarOpenConfig removes intermediate_size,
-- first_k_dense_replace and use_qk_norm (AttributeError): no dense layer,
-- whatever a config.json says; Megatron's unused --ffn-hidden-size is
-- written as the expert width.
function builders.solar_open(_, cfg, file)
  local c = class_defaults(with_aliases(cfg, M.N_ROUTED_ALIASES), M.SOLAR_OPEN_DEFAULTS)
  c.intermediate_size = c.moe_intermediate_size
  local m = builders.glm4_moe(reader(c, file), c, file)
  m.rope_theta = M.SOLAR_OPEN_DEFAULT_THETA -- numerics keeps a config's own
  return m
end

--- Glm4vMoeTextConfig's defaults that differ from Glm4MoeConfig's
-- (transformers modular_glm4v_moe.py @ 0067189d): q, k, v biases.
M.GLM4V_MOE_TEXT_DEFAULTS = { attention_bias = true }

--- GLM-4.5V's text model (glm4v_moe_text, the text_config of glm4v_moe;
-- transformers modular_glm4v_moe.py @ 0067189d): GLM-4.5's layers and
-- experts (builders.glm4_moe) with Glm4Attention, which has no Q/K norms
-- (Glm4vMoeTextConfig drops use_qk_norm: not read), `attention_bias`
-- default true; its multimodal RoPE sections rotate text tokens as 1-D
-- RoPE on `partial_rotary_factor` of each head (apply_rotary_pos_emb of
-- GPT-NeoX: the two halves, as GLM-4.5's).
function builders.glm4v_moe_text(_, cfg, file)
  local c = class_defaults(cfg, M.GLM4V_MOE_TEXT_DEFAULTS)
  c.use_qk_norm = nil
  return builders.glm4_moe(reader(c, file), c, file)
end

--- BailingMoeV2Config's defaults for the keys a config.json may leave out
-- (Megatron-Bridge 067f987df src/megatron/bridge/models/bailing/
-- configuration_bailing_moe_v2.py, "local copy of the configuration from
-- inclusionAI/Ling-mini-2.0"): Ling-mini-2.0's shapes, Q/K norms on, no
-- biases, expert groups 8 / 4, no MTP module. RoPE covers the whole head
-- unless the config gives partial_rotary_factor (BailingMoeV2Attention
-- reads it with hasattr, default 1.0).
M.BAILING_MOE_V2_DEFAULTS = {
  vocab_size = 157184, hidden_size = 2048, intermediate_size = 5120, num_hidden_layers = 20,
  num_attention_heads = 16, num_key_value_heads = 4, hidden_act = "silu", use_qkv_bias = false,
  use_bias = false, tie_word_embeddings = false, max_position_embeddings = 32768, rope_theta = 600000.0,
  num_experts = 256, num_shared_experts = 1, num_experts_per_tok = 8, n_group = 8, topk_group = 4,
  moe_intermediate_size = 512, first_k_dense_replace = 1, head_dim = 128, use_qk_norm = true,
  num_nextn_predict_layers = 0, routed_scaling_factor = 1.0, partial_rotary_factor = 1.0,
  attention_dropout = 0.0, embedding_dropout = 0.0, output_dropout = 0.0, rms_norm_eps = 1e-6,
}

--- Keys whose JSON null BailingMoeV2Config keeps as None and its model
-- reads as false: no biases, no Q/K norms, tied embeddings off.
M.BAILING_NULL_FALSE = { "use_qkv_bias", "use_bias", "use_qk_norm", "tie_word_embeddings" }
--- Keys whose null is read otherwise (head_dim: h // heads) or not at all.
M.BAILING_NULL_OK = { head_dim = true, attention_dropout = true, embedding_dropout = true, output_dropout = true,
  use_qkv_bias = true, use_bias = true, use_qk_norm = true, tie_word_embeddings = true }

--- A Ling config (bailing_moe, bailing_moe_v2) as its class reads it:
-- `defaults` for a missing key; a JSON null is the class's None, which
-- both models read alike: head_dim from the width, no shared expert ("if
-- config.num_shared_experts is not None"), no biases, Q/K norms or tied
-- embeddings (M.BAILING_NULL_FALSE); any other null of `defaults` is
-- refused, with the message `why[key]` when given, unless `why[key]` is
-- false (the caller reads that None itself) or M.BAILING_NULL_OK has it
-- (read as the model reads None). embedding_dropout and output_dropout are stored and
-- never used by either model (they apply attention_dropout only): dropped.
-- @raise `<file>: <key>: null: <class> keeps None ...`
local function bailing_config(cfg, file, defaults, class, why)
  local c = with_defaults(cfg, defaults)
  local given_null = function(k) return cfg[k] ~= nil and is_null(cfg[k]) end
  if given_null("head_dim") or cfg.head_dim == 0 then c.head_dim = nil end -- head_dim or h // heads
  if given_null("num_shared_experts") then c.num_shared_experts = 0 end
  for _, k in ipairs(M.BAILING_NULL_FALSE) do
    if given_null(k) then c[k] = false end
  end
  for k in pairs(defaults) do
    if given_null(k) and k ~= "num_shared_experts" and not M.BAILING_NULL_OK[k] and why[k] ~= false then
      util.fail(file, k, why[k] or ("null: " .. class .. " keeps None, which its model cannot run with; give a value"),
        nil)
    end
  end
  c.embedding_dropout, c.output_dropout = nil, nil
  return c
end

--- A bailing_moe_v2 config as BailingMoeV2Config reads it
-- (bailing_config with M.BAILING_MOE_V2_DEFAULTS, for the RoPE base and
-- dropout too); a null num_experts is refused (the model would build every
-- layer dense).
function M.ADJUST.bailing_moe_v2(cfg, file)
  return bailing_config(cfg, file or "config.json", M.BAILING_MOE_V2_DEFAULTS, "BailingMoeV2Config",
    { num_experts = "null: BailingMoeV2Config keeps None and its model builds every layer dense; give the experts" })
end

--- Ling 2.0 / Ring 2.0 (`bailing_moe_v2`, inclusionAI; remote code, read
-- in the copy Megatron-Bridge vendors, 067f987df models/bailing/
-- modeling_bailing_moe_v2.py, and as its bridge builds it in Megatron-Core,
-- bailing_moe2_bridge.py): GLM-4.5's layer (builders.glm4_moe) under other
-- names. BailingMoeV2Attention: one query_key_value GEMM (biases when
-- use_qkv_bias), per-head query_layernorm / key_layernorm RMSNorm(head_dim)
-- when use_qk_norm, RoPE on partial_rotary_factor of each head, `dense`
-- (a bias when use_bias); layers from first_k_dense_replace on hold
-- BailingMoeV2SparseMoeBlock: num_experts experts of moe_intermediate_size,
-- top num_experts_per_tok, one shared MLP of moe_intermediate_size x
-- num_shared_experts (none when null), BailingMoeV2Gate (E x h, sigmoid
-- scores plus the expert_bias buffer, topk_group of n_group groups by
-- their top-2 sum, the top-k weights always renormalised and scaled by
-- routed_scaling_factor); num_nextn_predict_layers BailingMoeV2MTPLayer
-- modules after the layers, sharing the embedding and lm_head.
function builders.bailing_moe_v2(_, cfg, file)
  local c = with_defaults(cfg, {}) -- a copy; from_config has applied M.ADJUST.bailing_moe_v2
  c.n_routed_experts, c.n_shared_experts = c.num_experts, c.num_shared_experts
  c.attention_bias, c.norm_topk_prob = c.use_qkv_bias, true
  if type(c.use_bias) ~= "boolean" then util.fail(file, "use_bias", "expected true or false", c.use_bias) end
  local m = builders.glm4_moe(reader(c, file), c, file)
  m.attn_out_bias = c.use_bias
  if m.mtp_layers then m.mtp_shared_embeddings = true end
  return m
end

--- BailingMoeConfig's defaults for the keys a Ling 1.x config.json may
-- leave out (inclusionAI/Ling 69823a61 models/configuration_bailing_moe.py,
-- the remote code its Hub repositories' auto_map loads). Not here:
-- num_key_value_heads (the class's 0 divides by zero in BailingMoeAttention),
-- intermediate_size and moe_intermediate_size (None: required where a layer
-- uses them), head_dim (None: hidden_size // num_attention_heads).
M.BAILING_MOE_DEFAULTS = {
  vocab_size = 30592, hidden_size = 1024, num_hidden_layers = 24, num_attention_heads = 16,
  hidden_act = "silu", use_qkv_bias = false, use_bias = true, tie_word_embeddings = false,
  max_position_embeddings = 16384, rope_theta = 10000.0, num_experts = 16, num_shared_experts = 0,
  num_experts_per_tok = 2, norm_topk_prob = true, first_k_dense_replace = 0, attention_dropout = 0.1,
  rms_norm_eps = 1e-5,
}

--- A bailing_moe config as BailingMoeConfig reads it: its defaults
-- (M.BAILING_MOE_DEFAULTS); a JSON null is the class's None: no biases, no
-- tied embeddings, no shared expert ("if config.num_shared_experts is not
-- None"), every layer dense ("config.num_experts is not None"), head_dim
-- from the width; refused where the model cannot run with None.
-- embedding_dropout and output_dropout are stored and never used (the
-- model applies attention_dropout only).
-- @raise `<file>: num_key_value_heads: ...` when missing, null or 0
function M.ADJUST.bailing_moe(cfg, file)
  file = file or "config.json"
  local kv = cfg.num_key_value_heads
  if is_null(kv) or kv == 0 then
    util.fail(file, "num_key_value_heads", "BailingMoeConfig's default 0 (and None) fails in " ..
      "BailingMoeAttention (num_heads // num_key_value_heads): give the K/V heads", kv)
  end
  local c = bailing_config(cfg, file, M.BAILING_MOE_DEFAULTS, "BailingMoeConfig", { num_experts = false })
  if cfg.num_experts ~= nil and is_null(cfg.num_experts) then c.num_experts = nil end -- every layer dense
  return c
end

--- Ling 1.x (`bailing_moe`, inclusionAI: Ling-lite, Ling-lite-1.5,
-- Ling-plus, Ling-Coder-lite; remote code, inclusionAI/Ling 69823a61
-- models/modeling_bailing_moe.py, which vLLM's bailing_moe.py @ 00566618
-- adapts): Llama's layer under other names -- one query_key_value GEMM
-- (a bias when use_qkv_bias), `dense` (a bias when use_bias), RoPE on the
-- whole head, no Q/K norms; layers from first_k_dense_replace on hold
-- BailingMoeSparseMoeBlock: num_experts SwiGLU experts of
-- moe_intermediate_size, top num_experts_per_tok of a softmax over all of
-- them (BailingMoeGate: E x h, no bias; renormalised when top_k > 1 and
-- norm_topk_prob), one shared MLP of moe_intermediate_size x
-- num_shared_experts; the layers before it a BailingMoeMLP of
-- intermediate_size. An untied lm_head unless tie_word_embeddings; no
-- auxiliary loss (BailingMoeForCausalLM.forward returns aux_loss None);
-- `use_sliding_window` and the window keys are stored and not read by
-- any attention class. A model without experts (num_experts null) gets
-- Megatron's --ffn-hidden-size from intermediate_size; with no dense layer
-- and no intermediate_size the expert width stands in for that unused
-- value, as builders.solar_open does.
function builders.bailing_moe(_, cfg, file)
  require_silu(cfg, file, "Ling's MLP and experts are SwiGLU (BailingMoeMLP: act_fn(gate_proj(x)) * up_proj(x))")
  local c = with_defaults(cfg, {})
  local moe = not is_null(c.num_experts) -- null: from_config's M.ADJUST.bailing_moe made it none
  if moe and is_null(c.intermediate_size) and count(c, "first_k_dense_replace", 0, file) == 0 then
    c.intermediate_size = c.moe_intermediate_size
  end
  local r = reader(c, file)
  local m = llama_like(r, c, file, { own_activation = true })
  m.qkv_bias, m.attn_out_bias = r.bool("use_qkv_bias", false), r.bool("use_bias", true)
  if not moe then return m end
  shared_experts_block(m, r, c, file)
  first_dense(m, c, file)
  if not (m.experts_per_token > 1 and r.bool("norm_topk_prob", true)) then m.moe_router_pre_softmax = true end
  return m
end

--- dots.llm1 (dots1; transformers modular_dots1.py and configuration_dots1.py
-- @ 008e5743): Qwen3's attention (per-head Q/K norms) with DeepSeek-V3's
-- experts (Dots1MoE, Dots1TopkRouter: sigmoid scores with the
-- e_score_correction_bias, group-limited routing, routed_scaling_factor),
-- n_shared_experts x moe_intermediate_size shared, the first
-- first_k_dense_replace layers dense; the window of `sliding_window` on
-- the layers from max_window_layers on (Dots1Config: 62, none).
function builders.dots1(r, cfg, file)
  require_silu(cfg, file, "dots.llm1's SwiGLU MLP and experts")
  local m = llama_like(r, cfg, file, {})
  local ab = r.bool("attention_bias", false)
  m.qkv_bias, m.attn_out_bias, m.qk_norm = ab, ab, true
  local first = cfg.max_window_layers
  if is_null(first) then first = 62 end
  first = math.min(config_int(first, 0, file, "max_window_layers"), m.num_layers)
  if first < m.num_layers then window(m, r, m.num_layers - first) end
  deepseek_experts(m, r, cfg, file)
  m.moe_router_bias = true
  -- Dots1Config reads no scoring_func (the router is always sigmoid with
  -- the bias): a config's value is not checked
  local c = {}
  for k, v in pairs(cfg) do if k ~= "scoring_func" then c[k] = v end end
  return deepseek_router(m, r, c, file, true, "noaux_tc", false)
end

--- MiMo (XiaomiMiMo/MiMo-7B-Base, -SFT, -RL: model_type mimo, remote code
-- of its Hub repository, MiMoForCausalLM(Qwen2ForCausalLM) around
-- MiMoModel(Qwen2Model); vLLM vllm/model_executor/models/mimo.py and
-- mimo_mtp.py @ 0bb55d60): Qwen2's model, q/k/v biases included
-- (Qwen2Attention), read as builders.qwen2 reads it.  Its
-- num_nextn_predict_layers multi-token-prediction layers
-- (model.mtp_layers.N, MiMoMultiTokenPredictorLayer: token_layernorm,
-- hidden_layernorm, input_proj 2h x h without a bias, a Qwen2 decoder
-- layer, final_layernorm) share the model's embedding and lm_head, so
-- they are not DeepSeek-V3's MTP module that mtp_layers counts (with an
-- embedding and output layer of its own, src/core/model.c): they are
-- neither counted nor priced, and a note says so.
function builders.mimo(r, cfg, file, notes)
  local m = builders.qwen2(r, cfg, file)
  local mtp = count(cfg, "num_nextn_predict_layers", 0, file)
  if mtp > 0 then
    note(notes, file, "the checkpoint's %d multi-token-prediction layer(s) (num_nextn_predict_layers: " ..
      "model.mtp_layers, each a Qwen2 decoder layer, input_proj 2h x h and three more RMSNorms, sharing the " ..
      "embedding and lm_head) are neither counted nor priced", mtp)
  end
  return m
end

---------------------------------------------------------------- 2025 families (issue 25)

-- A nested config object at cfg[key] (DBRX attn_config / ffn_config,
-- Gemma 3 text_config / vision_config): {} when absent or null, unless
-- required.
local function sub_config(cfg, key, file, required)
  local v = cfg[key]
  if is_null(v) then
    if required then util.fail(file, key, "required key is missing", nil) end
    return {}
  end
  -- (a JSON array decodes to a table too: one with entries is refused)
  if type(v) ~= "table" or #v > 0 then util.fail(file, key, "expected an object", v) end
  return v
end

--- The shape keys a multimodal wrapper's text model reads from its
-- `text_config` only: at the file's top level, with no text_config
-- giving them, they are a text config saved under the wrapper's type.
M.TEXT_SHAPE_KEYS = { "num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads" }

--- The model_types whose builder reads the text model from
-- `text_config` itself (qwen_vl, and text_config() below), not through
-- M.wrapped_text.
M.TEXT_CONFIG_BUILDERS = { qwen2_vl = true, qwen2_5_vl = true, gemma3 = true, gemma4 = true, llama4 = true }

-- A multimodal wrapper's `text_config` (sub_config), refused when the
-- file's top level has M.TEXT_SHAPE_KEYS the text_config does not give:
-- the wrapper's class (Gemma3Config, Gemma4Config, Llama4Config) ignores
-- them and builds its text model from the text class's defaults (Gemma
-- 3 27B's text fields under model_type gemma3, as in a Megatron-Bridge
-- test fixture, are a 2.6B model to transformers).
local function text_config(cfg, file, text_type)
  local text = sub_config(cfg, "text_config", file, false)
  local keys, values = {}, {}
  for _, k in ipairs(M.TEXT_SHAPE_KEYS) do
    if type(cfg[k]) == "number" and is_null(text[k]) then
      keys[#keys + 1], values[#values + 1] = k, util.describe(cfg[k])
    end
  end
  if #keys > 0 then
    util.fail(file, table.concat(keys, ", "), ("model_type %s reads its text model from text_config, not the " ..
      "top level: transformers ignores these (%s) and builds the text model's defaults; move them into " ..
      "text_config, or set model_type to %s"):format(tostring(cfg.model_type), table.concat(values, ", "),
      text_type), nil, false)
  end
  return text
end

--- Attention kinds of transformers' `layer_types` (GptOssConfig,
-- Gemma3TextConfig), true for the windowed ones.
M.LAYER_TYPES = { sliding_attention = true, full_attention = false }

--- Attention kinds of Llama4TextConfig's `layer_types`, true for the
-- chunked ones.
M.LLAMA4_LAYER_TYPES = { chunked_attention = true, full_attention = false }

-- The layers of `layer_types` v (one entry per layer) whose kind is true
-- in `kinds` (a table of two names, the restricted one first in `names`).
local function layer_type_count(v, L, file, kinds, names)
  if type(v) ~= "table" or #v ~= L then
    util.fail(file, "layer_types", "expected an array of num_hidden_layers = " .. L ..
      " entries", v)
  end
  local n = 0
  for i = 1, L do
    local restricted = kinds[v[i]]
    if restricted == nil then
      util.fail(file, "layer_types[" .. (i - 1) .. "]", ('expected "%s" or "%s"'):format(names[1], names[2]), v[i])
    end
    if restricted then n = n + 1 end
  end
  return n
end

-- The windowed layers of `layer_types` (one entry per layer), or nil
-- when the config has none.
local function sliding_layer_count(cfg, L, file)
  local v = cfg.layer_types
  if is_null(v) then return nil end
  return layer_type_count(v, L, file, M.LAYER_TYPES, { "sliding_attention", "full_attention" })
end

-- The chunked layers of Llama 4's `layer_types`.
local function config_layer_types(v, L, file)
  return layer_type_count(v, L, file, M.LLAMA4_LAYER_TYPES, { "chunked_attention", "full_attention" })
end

-- The window of `sliding_window` on `n` layers; none when n is 0 (every
-- layer full) or the config gives no window.
local function window_on(m, r, n)
  if n > 0 then window(m, r, n) end
  return m
end

--- The period k of windowed layers, as Megatron's --window-attn-skip-freq
-- k and transformers' sliding_window_pattern count it: layer i (1-based)
-- is windowed exactly when i % k ~= 0.
-- @tparam function windowed windowed(i) for i = 1..L
-- @tparam integer L layers
-- @treturn integer|nil k in [2, L], or nil when no k fits (or all layers
--   are windowed: no period needed)
function M.window_period(windowed, L)
  for k = 2, L do
    local fits = true
    for i = 1, L do
      if windowed(i) ~= (i % k ~= 0) then fits = false break end
    end
    if fits then return k end
  end
  return nil
end

-- The model's window period from `layer_types` (validated by
-- sliding_layer_count), else from `default_k` (the class's rule); only
-- when the window is on some but not all layers.  Layer types no period
-- fits are kept as sliding_window_layout (S windowed, F full).
local function set_window_period(m, cfg, default_k)
  local n, L = m.sliding_window_layers or 0, m.num_layers
  if not m.sliding_window or n == 0 or n == L then return m end
  local v = cfg.layer_types
  if is_null(v) then
    m.sliding_window_period = default_k
  else
    local function windowed(i) return M.LAYER_TYPES[v[i]] end
    m.sliding_window_period = M.window_period(windowed, L)
    if not m.sliding_window_period then
      local letters = {}
      for i = 1, L do letters[i] = windowed(i) and "S" or "F" end
      m.sliding_window_layout = table.concat(letters)
    end
  end
  return m
end


-- A number the notes quote (clip_qkv, swiglu_limit, soft-capping): > 0
-- and finite, or nil when absent or null.
local function quoted(cfg, key, file) return positive(cfg, key, file) end

--- gpt-oss's layer pattern when `layer_types` is absent (GptOssConfig
-- __post_init__): layer i is windowed when (i + 1) % 2 ~= 0.
M.GPT_OSS_WINDOW_EVERY = 2

--- gpt-oss's expert activation (transformers modeling_gpt_oss.py
-- GptOssExperts: gate clamped to <= limit, up to [-limit, limit], glu =
-- gate * sigmoid(alpha gate), out = (up + offset) * glu): alpha 1.702 is
-- quick GELU's, offset 1, limit GptOssConfig's swiglu_limit default.
M.GPT_OSS_GLU = { offset = 1.0, limit = 7.0 }

-- gpt-oss (transformers modeling_gpt_oss.py: GptOssAttention, GptOssMLP,
-- GptOssTopKRouter, GptOssExperts; GptOssConfig defaults head_dim 64,
-- attention_bias true, num_experts_per_tok 4): q, k, v, o with biases,
-- a sink logit per head, num_local_experts experts of intermediate_size
-- with gate_up / down biases, a router with a bias; every layer MoE; the
-- window on the sliding_attention layers of layer_types.  The router
-- takes the top-k logits and softmaxes them: renormalised.
function builders.gpt_oss(r, cfg, file, notes)
  local m = llama_like(r, cfg, file, { head_dim = 64 })
  local ab = r.bool("attention_bias", true)
  m.qkv_bias, m.attn_out_bias = ab, ab
  m.attention_sinks, m.mlp_bias, m.moe_router_linear_bias = true, true, true
  m.num_experts = r.int("num_local_experts")
  m.experts_per_token = r.int("num_experts_per_tok", 4)
  m.moe_ffn_hidden_size = m.ffn_hidden_size
  local L = m.num_layers
  window_on(m, r, sliding_layer_count(cfg, L, file) or L - L // M.GPT_OSS_WINDOW_EVERY)
  set_window_period(m, cfg, M.GPT_OSS_WINDOW_EVERY)
  m.glu_activation, m.glu_linear_offset = "quick_gelu", M.GPT_OSS_GLU.offset
  m.glu_clamp = positive(cfg, "swiglu_limit", file) or M.GPT_OSS_GLU.limit
  aux_loss(m, cfg, file, "router_aux_loss_coef")
  note(notes, file, "attention sinks (one learned logit per head and layer, %d per layer) are counted " ..
    "in the parameters; the softmax column they add is not in the attention FLOPs or time",
    m.num_attention_heads)
  local limit = quoted(cfg, "swiglu_limit", file)
  note(notes, file, "the experts' clamped SwiGLU (swiglu_limit %s) is estimated as SwiGLU, plus the eager " ..
    "clamps Megatron-Core runs before its fused kernel (docs/modeling.md \"Mixture of experts\"); other " ..
    "frameworks' clamps and the (up + 1) are element-wise and not priced",
    limit and util.describe(limit) or "absent: GptOssConfig's 7.0")
  -- OpenAI's model card counts 5.1B active for gpt-oss-120b (3.6B for 20b):
  -- one vocabulary matrix fewer than apsearch's active count, which takes
  -- both the input embedding and the untied output layer
  note(notes, file, "the active count includes the input embedding and the output layer (%d x %d each); the " ..
    "model card's active figure counts one of them", m.vocab_size, m.hidden_size)
  return m
end

-- The clamp of clip_qkv (DBRX attn_config, OLMoE) in the notes.
local function clip_note(notes, cfg, file, where)
  local clip = quoted(cfg, "clip_qkv", file)
  if clip then
    note(notes, where, "clip_qkv = %s clamps Q, K and V element-wise; not priced", util.describe(clip))
  end
end

-- OLMoE (transformers modeling_olmoe.py OlmoeAttention, OlmoeSparseMoeBlock;
-- OlmoeConfig defaults num_experts_per_tok 8, norm_topk_prob false):
-- llama attention (attention_bias on q, k, v, o) with RMSNorms over the
-- full Q and K projections (q_norm hidden_size wide, k_norm head_dim *
-- num_key_value_heads), num_experts experts of intermediate_size on
-- every layer, no shared expert, a router without bias.
function builders.olmoe(r, cfg, file, notes)
  local m = llama_like(r, cfg, file, {})
  local ab = r.bool("attention_bias", false)
  m.qkv_bias, m.attn_out_bias = ab, ab
  m.qk_norm, m.qk_norm_full_width = true, true
  m.num_experts = r.int("num_experts")
  m.experts_per_token = r.int("num_experts_per_tok", 8)
  m.moe_ffn_hidden_size = m.ffn_hidden_size
  aux_loss(m, cfg, file, "router_aux_loss_coef")
  if not r.bool("norm_topk_prob", false) then m.moe_router_pre_softmax = true end
  clip_note(notes, cfg, file, file)
  note(notes, file, "the Q/K norms span the whole projection (OlmoeAttention q_norm, k_norm): under " ..
    "tensor parallelism their statistic needs a reduction across the ranks, which is not priced")
  return m
end

--- FlexOlmoConfig's defaults (transformers modular_flex_olmo.py @
-- 008e5743, documented as allenai/FlexOlmo-7x7B-1T's) for the keys a
-- config.json may leave out, and its RoPE base (default_theta).
M.FLEX_OLMO_DEFAULTS = {
  vocab_size = 100352, hidden_size = 4096, intermediate_size = 11008, num_hidden_layers = 32,
  num_attention_heads = 32, hidden_act = "silu", tie_word_embeddings = false, attention_bias = false,
  num_experts_per_tok = 5, num_experts = 7, router_aux_loss_coef = 0.01, norm_topk_prob = false,
}
M.FLEX_OLMO_DEFAULT_THETA = 500000.0

--- FlexOlmo (flex_olmo; transformers modular_flex_olmo.py @ 008e5743):
-- OLMoE's MoE layer (builders.olmoe: experts of intermediate_size on
-- every layer, softmax router, Q/K norms over the whole projection --
-- Olmo2Attention's) with OLMo 2's norms after attention and MLP
-- (FlexOlmoDecoderLayer: reordered_norm).
function builders.flex_olmo(_, cfg, file, notes)
  local c = class_defaults(with_aliases(cfg, { num_local_experts = "num_experts" }), M.FLEX_OLMO_DEFAULTS)
  local m = builders.olmoe(reader(c, file), c, file, notes)
  m.reordered_norm = true
  m.rope_theta = M.FLEX_OLMO_DEFAULT_THETA -- numerics keeps a config's own
  return m
end

--- Granite's multipliers (GraniteConfig, GraniteMoeConfig: embedding_
-- multiplier, residual_multiplier, attention_multiplier -- the attention
-- scale itself, in place of 1/sqrt(d) -- and logits_scaling): constants
-- the estimate does not read; the model carries mup_multipliers and the
-- note quotes them.
M.GRANITE_MULTIPLIERS = { "embedding_multiplier", "residual_multiplier", "attention_multiplier", "logits_scaling" }

local function granite_common(m, r, cfg, file, notes)
  require_silu(cfg, file, "Granite's SwiGLU MLP")
  local ab = r.bool("attention_bias", false)
  m.qkv_bias, m.attn_out_bias = ab, ab
  m.mup_multipliers = true
  local said = {}
  for _, k in ipairs(M.GRANITE_MULTIPLIERS) do
    local v = positive(cfg, k, file)
    said[#said + 1] = ("%s %s"):format(k, v and util.describe(v) or "1.0 (absent)")
  end
  note(notes, file, "Granite's multipliers (%s) are constants: not priced", table.concat(said, ", "))
  return m
end

--- Granite 3.x dense (transformers modeling_granite.py, GraniteConfig
-- defaults: attention_bias and mlp_bias false, untied): Llama's layer
-- with the multipliers (M.GRANITE_MULTIPLIERS).
function builders.granite(r, cfg, file, notes)
  local m = granite_common(llama_like(r, cfg, file, {}), r, cfg, file, notes)
  m.mlp_bias = r.bool("mlp_bias", false)
  return m
end

--- Granite MoE (granite-3.x-a*m; transformers modeling_granitemoe.py @
-- 013458c1, GraniteMoeMoE): every layer's FFN is num_local_experts SwiGLU
-- experts of intermediate_size (input_linear h -> 2f, output_linear f ->
-- h, no biases), a bias-free router whose top-k logits are softmaxed
-- (Megatron's default top-k then softmax); GraniteMoeShared
-- (modeling_granitemoeshared.py) adds an ungated shared MLP of
-- shared_intermediate_size (0: none).
function builders.granitemoe(r, cfg, file, notes)
  local m = granite_common(llama_like(r, cfg, file, {}), r, cfg, file, notes)
  m.num_experts = r.int("num_local_experts", 8)
  m.experts_per_token = r.int("num_experts_per_tok", 2)
  m.moe_ffn_hidden_size = m.ffn_hidden_size
  aux_loss(m, cfg, file, "router_aux_loss_coef")
  return m
end

function builders.granitemoeshared(r, cfg, file, notes)
  local m = builders.granitemoe(r, cfg, file, notes)
  local fs = count(cfg, "shared_intermediate_size", 0, file)
  if fs > 0 then m.shared_expert_ffn_hidden_size = fs end
  return m
end

-- A per-layer list key of a Hunyuan config (num_experts, moe_topk,
-- num_shared_expert, moe_intermediate_size: int or one value per layer)
-- as one integer; a list whose values differ is refused (the layers would
-- differ, which the mean layer does not price).
local function uniform_int(cfg, key, default, min, file)
  local v = cfg[key]
  if is_null(v) then return default end
  if type(v) == "table" then
    if #v == 0 then util.fail(file, key, "expected an integer or a non-empty list", v) end
    for i = 2, #v do
      if v[i] ~= v[1] then
        error(("NotImplemented: %s: %s: layers with different values are not modelled (got %s)"):format(
          file, key, util.describe(v)), 0)
      end
    end
    v = v[1]
  end
  return config_int(v, min, file, key)
end

--- Hunyuan dense (hunyuan_v1_dense; transformers modeling_hunyuan_v1_dense.py)
-- and MoE (hunyuan_v1_moe; modular_hunyuan_v1_moe.py @ 05bf8f64): Llama's
-- layer with per-head Q/K RMSNorms after RoPE (query_layernorm,
-- key_layernorm of head_dim); the MoE layer a shared SwiGLU MLP of
-- intermediate_size beside num_experts SwiGLU experts of intermediate_size
-- (HunYuanMoEV1MLP builds both from config.intermediate_size) and a
-- bias-free router (softmax, top-k renormalised).  transformers' gate
-- drops tokens beyond a capacity of top-k x tokens / experts; the
-- estimate prices the strategy's dispatcher (noted).
local function hunyuan(r, cfg, file, notes, moe)
  require_silu(cfg, file, "Hunyuan's SwiGLU MLP")
  local m = llama_like(r, cfg, file, {})
  local ab = r.bool("attention_bias", false)
  m.qkv_bias, m.attn_out_bias, m.qk_norm = ab, ab, true
  if moe then
    local f = m.ffn_hidden_size
    local E = uniform_int(cfg, "num_experts", 1, 1, file)
    if E < 2 then
      util.fail(file, "num_experts", "expected at least 2 experts" ..
        (is_null(cfg.num_experts) and " (absent: HunYuanMoEV1Config's default is 1)" or ""), cfg.num_experts)
    end
    local mf = uniform_int(cfg, "moe_intermediate_size", f, 1, file)
    if mf ~= f then
      util.fail(file, "moe_intermediate_size", ("expected intermediate_size = %d (transformers builds the experts " ..
        "and the shared MLP of it)"):format(f), cfg.moe_intermediate_size)
    end
    local shared = uniform_int(cfg, "num_shared_expert", 1, 0, file)
    if shared > 1 then util.fail(file, "num_shared_expert", "expected 0 or 1 (one shared MLP)", cfg.num_shared_expert) end
    m.num_experts, m.experts_per_token, m.moe_ffn_hidden_size = E, uniform_int(cfg, "moe_topk", 1, 1, file), f
    m.shared_expert_ffn_hidden_size = f
    note(notes, file, "transformers' Hunyuan gate drops tokens past a capacity of top-k x tokens / experts; the " ..
      "estimate prices the strategy's dispatcher (dropless unless moe_capacity_factor)")
  end
  return m
end

function builders.hunyuan_v1_dense(r, cfg, file, notes) return hunyuan(r, cfg, file, notes, false) end
function builders.hunyuan_v1_moe(r, cfg, file, notes) return hunyuan(r, cfg, file, notes, true) end

--- The fraction of each head GLM's RoPE rotates when the config gives no
-- `partial_rotary_factor` (GlmConfig.__post_init__ setdefault, Glm4Config).
M.GLM_ROTARY_FRACTION = 0.5

-- GLM's attention and MLP (GlmAttention, GlmMLP; transformers
-- modular_glm.py @ 0325dc46, Glm4 imports them): Llama's attention with
-- q, k, v biases when `attention_bias` (default true) and none on o_proj,
-- `head_dim` (default 128), RoPE on `partial_rotary_factor` (default 0.5)
-- of each head in interleaved pairs (its rotate_half over the even and
-- odd dims: rotary_interleaved), the fused gate_up SwiGLU (Phi3MLP: the
-- same 3 h f weights); `norms` RMSNorms per layer; `why` names the MLP
-- in a refused `hidden_act`.
local function glm_layer(r, cfg, file, norms, why)
  require_silu(cfg, file, why)
  local m = llama_like(r, cfg, file, { head_dim = 128, norms_per_layer = norms })
  m.qkv_bias, m.attn_out_bias = r.bool("attention_bias", true), false
  m.rotary_percent = M.rotary_fraction(cfg, file, M.GLM_ROTARY_FRACTION)
  m.rotary_interleaved = true
  return m
end

--- GLM-4 dense (GLM-4-9B/32B-0414; transformers modular_glm4.py @
-- 08c53278, GlmAttention, Glm4Config defaults head_dim 128,
-- partial_rotary_factor 0.5, attention_bias true): Llama's attention with
-- q/k/v biases (o_proj none), RoPE on half of each head in interleaved
-- pairs, a fused gate_up SwiGLU (Phi3MLP: the same 3 h f weights) and
-- four RMSNorms per layer (input, post_self_attn, post_attention,
-- post_mlp).
function builders.glm4(r, cfg, file)
  return glm_layer(r, cfg, file, 4, "GLM-4's SwiGLU MLP")
end

--- Glm4vTextConfig's defaults of the keys read here (transformers
-- configuration_glm4v.py @ 05cd1ec1): 2 KV heads; no partial_rotary_factor
-- default (absent: RoPE on every dim, the rope init's 1.0).
M.GLM4V_TEXT_DEFAULTS = { num_key_value_heads = 2 }

--- GLM-4.1V's text model (glm4v_text, the text_config of glm4v;
-- transformers modeling_glm4v.py @ 005612ef, Glm4vTextAttention,
-- Glm4vTextDecoderLayer): GLM-4-0414's layer (glm_layer, four RMSNorms)
-- whose q, k, v always have biases and whose head width is always
-- hidden_size / num_attention_heads (Glm4vTextConfig reads neither
-- attention_bias nor head_dim), RoPE on `partial_rotary_factor` (absent:
-- every dim) in interleaved pairs; its multimodal RoPE sections
-- (mrope_section) rotate text tokens as 1-D RoPE.
function builders.glm4v_text(_, cfg, file)
  local c = class_defaults(cfg, M.GLM4V_TEXT_DEFAULTS)
  c.head_dim, c.attention_bias = nil, true
  local m = glm_layer(reader(c, file), c, file, 4, "GLM-4.1V's SwiGLU MLP")
  m.head_dim = nil
  m.rotary_percent = M.rotary_fraction(c, file)
  return m
end

--- GlmConfig's defaults of the keys read here (transformers
-- configuration_glm.py @ 008e5743): an absent num_key_value_heads is 2,
-- not num_attention_heads.
M.GLM_DEFAULTS = { num_key_value_heads = 2 }

--- GLM-4-9B-chat-hf / glm-4-9b-hf (glm; transformers modular_glm.py @
-- 0325dc46): GLM-4-0414's attention, RoPE and MLP (glm_layer) with
-- LlamaDecoderLayer's two RMSNorms per layer (input_layernorm,
-- post_attention_layernorm); untied by default.
function builders.glm(_, cfg, file)
  local c = class_defaults(cfg, M.GLM_DEFAULTS)
  return glm_layer(reader(c, file), c, file, 2, "GLM's SwiGLU MLP")
end

--- HeliumConfig's defaults of the keys read here (transformers
-- configuration_helium.py @ 008e5743): an absent num_key_value_heads is
-- 20, not num_attention_heads; RoPE base 100000 (default_theta).
M.HELIUM_DEFAULTS = { head_dim = 128, num_key_value_heads = 20, rope_theta = 100000.0 }

--- Helium (helium: Kyutai Helium-1; transformers modular_helium.py @
-- 0911f54a): Llama's layer (q, k, v biases when `attention_bias`,
-- `mlp_bias`, `head_dim` default 128) whose o_proj is hidden_size x
-- hidden_size without bias (so num_attention_heads x head_dim must be
-- hidden_size) and whose RoPE rotates interleaved pairs
-- (rotary_interleaved); untied by default.
function builders.helium(_, raw, file)
  require_silu(raw, file, "Helium's SwiGLU MLP")
  local c = class_defaults(raw, M.HELIUM_DEFAULTS)
  local r = reader(c, file)
  local m = llama_like(r, c, file, {})
  if m.num_attention_heads * m.head_dim ~= m.hidden_size then
    util.fail(file, "head_dim", ("expected hidden_size / num_attention_heads = %s (HeliumAttention's o_proj is " ..
      "hidden_size x hidden_size)"):format(m.hidden_size / m.num_attention_heads), c.head_dim)
  end
  m.qkv_bias, m.attn_out_bias, m.mlp_bias = r.bool("attention_bias", false), false, r.bool("mlp_bias", false)
  m.rotary_interleaved, m.rope_theta = true, c.rope_theta
  return m
end

--- OlmoLayerNorm's epsilon (transformers modular_olmo.py @ 00a98e71:
-- F.layer_norm(..., eps=1e-5), fixed; OlmoConfig has no epsilon key).
M.OLMO_NORM_EPS = 1e-5

--- OLMo 1 (olmo: OLMo-1B-hf, OLMo-7B-hf, OLMo-7B-0424-hf; transformers
-- modular_olmo.py @ 00a98e71, OlmoConfig defaults attention_bias false,
-- untied): Llama's attention (q, k, v, o biases when `attention_bias`)
-- and SwiGLU MLP without biases (OlmoMLP), and OlmoLayerNorm -- a
-- LayerNorm with no learnable weight or bias -- as the layers' two norms
-- and the final one (norm_weightless); `clip_qkv` clamps Q, K and V
-- (noted, as OLMoE's).
function builders.olmo(r, cfg, file, notes)
  require_silu(cfg, file, "OLMo's SwiGLU MLP")
  local m = llama_like(r, cfg, file, {})
  local ab = r.bool("attention_bias", false)
  m.qkv_bias, m.attn_out_bias = ab, ab
  m.norm, m.norm_bias, m.norm_weightless, m.norm_eps = "layernorm", false, true, M.OLMO_NORM_EPS
  clip_note(notes, cfg, file, file)
  return m
end

--- OLMo 2 (transformers modular_olmo2.py @ 008f5c8c; Olmo2Config
-- defaults: attention_bias false, untied): Llama's attention with RMSNorms
-- over the whole Q and K projections (q_norm a*d wide, k_norm k*d) and the
-- layer's two norms after attention and after the MLP (post_attention_
-- layernorm, post_feedforward_layernorm; no input norm): reordered_norm.
function builders.olmo2(r, cfg, file, notes)
  require_silu(cfg, file, "OLMo's SwiGLU MLP")
  local m = llama_like(r, cfg, file, {})
  local ab = r.bool("attention_bias", false)
  m.qkv_bias, m.attn_out_bias = ab, ab
  m.qk_norm, m.qk_norm_full_width, m.reordered_norm = true, true, true
  note(notes, file, "the Q/K norms span the whole projection (Olmo2Attention q_norm, k_norm): under " ..
    "tensor parallelism their statistic needs a reduction across the ranks, which is not priced")
  return m
end

-- A window of `sliding_window` (null: none) on the sliding_attention
-- layers of `layer_types`, else on every layer but each k-th, and no RoPE
-- on the global layers (EXAONE 4, Cohere2: "global NoPE",
-- nope_layer_period the window's period).
-- The NoPE layers are then the full ones: every layer full, or full
-- layers no period counts (sliding_window_layout), are refused -- the
-- model's RoPE layers would not be the script's.
local function global_nope_window(m, r, cfg, file, k)
  if is_null(cfg.sliding_window) then return end
  local L = m.num_layers
  local n = sliding_layer_count(cfg, L, file) or (L - L // k)
  if n == 0 then
    not_modelled(file, "layer_types", "every layer full_attention beside a sliding_window: the class applies RoPE " ..
      "to none of them (its full layers are NoPE)", cfg.layer_types)
  end
  window_on(m, r, n)
  set_window_period(m, cfg, k)
  if m.sliding_window_layout then
    not_modelled(file, "layer_types", "full (NoPE) layers no period counts: only every k-th layer's NoPE is " ..
      "modelled (nope_layer_period)", cfg.layer_types)
  end
  if m.sliding_window and m.sliding_window_period then m.nope_layer_period = m.sliding_window_period end
end

--- Cohere2Config's defaults of the keys read here (transformers
-- configuration_cohere2.py).
M.COHERE2_DEFAULTS = { sliding_window = 4096, sliding_window_pattern = 4, tie_word_embeddings = true,
  logit_scale = 0.0625 }

-- The layer Command R (cohere; modular_cohere.py @ 03ea97ae) and Command
-- R7B / A (cohere2, which imports its classes) share: one CohereLayerNorm
-- per layer -- a LayerNorm without bias -- whose output feeds attention and
-- the SwiGLU MLP in parallel, both added to the residual
-- (CohereDecoderLayer: parallel_attn_mlp, norms_per_layer 1), q, k, v and
-- o biases when `attention_bias` (default false), RoPE in interleaved
-- pairs (CohereRotaryEmbedding repeat_interleave, rotate_half over the
-- even and odd dims: rotary_interleaved), the logits times `logit_scale`
-- (mup_multipliers, noted); tied embeddings by default.  `c` is the
-- config with its class's defaults filled in (`logit_scale`).
local function cohere_layer(r, c, file, notes, why)
  require_silu(c, file, why)
  local m = llama_like(r, c, file, { norms_per_layer = 1, tied = true })
  m.norm, m.norm_bias, m.parallel_attn_mlp, m.mup_multipliers = "layernorm", false, true, true
  local ab = r.bool("attention_bias", false)
  m.qkv_bias, m.attn_out_bias = ab, ab
  m.rotary_interleaved = true
  note(notes, file, "logit_scale %s multiplies the logits: a constant, not priced", util.describe(positive(c,
    "logit_scale", file)))
  return m
end

--- Command R7B / Command A (cohere2; transformers modular_cohere2.py @
-- 008e5743, Cohere2DecoderLayer): Command R's layer (cohere_layer); the
-- window on the sliding_attention layers (`layer_types`, else every layer
-- but each `sliding_window_pattern`-th) and RoPE on those only
-- (Cohere2Attention: the global layers NoPE).
function builders.cohere2(r, cfg, file, notes)
  local c = class_defaults(cfg, M.COHERE2_DEFAULTS)
  if cfg.sliding_window == cjson.null then c.sliding_window = nil end
  r = reader(c, file)
  local m = cohere_layer(r, c, file, notes, "Cohere2's SwiGLU MLP")
  global_nope_window(m, r, c, file, config_int(c.sliding_window_pattern, 1, file, "sliding_window_pattern"))
  return m
end

--- CohereConfig's defaults of the keys read here (transformers
-- configuration_cohere.py @ 008e5743).
M.COHERE_DEFAULTS = { tie_word_embeddings = true, logit_scale = 0.0625, use_qk_norm = false }

--- Command R / R+ / Command R 08-2024 / Aya 23 / Aya Expanse (cohere;
-- transformers modular_cohere.py @ 03ea97ae): Command R's layer
-- (cohere_layer) with RoPE on every layer and no window; `use_qk_norm`
-- (Command R+: CohereAttention's q_norm and k_norm, bias-free LayerNorms
-- over each head whose weight is the head's own, num_attention_heads x
-- head_dim and num_key_value_heads x head_dim) -> qk_norm with
-- qk_norm_head_weights.
function builders.cohere(r, cfg, file, notes)
  local c = class_defaults(cfg, M.COHERE_DEFAULTS)
  r = reader(c, file)
  local m = cohere_layer(r, c, file, notes, "Cohere's SwiGLU MLP")
  if r.bool("use_qk_norm") then m.qk_norm, m.qk_norm_head_weights = true, true end
  return m
end

--- Exaone4Config's window (modular_exaone4.py @ 008e5743): 4096 tokens
-- when the key is absent (null: none), on every layer but each
-- `sliding_window_pattern`-th (default 4; a string such as "LLLG" its
-- length) when `layer_types` is absent.
M.EXAONE4_WINDOW, M.EXAONE4_PATTERN = 4096, 4

--- EXAONE 4.0 (exaone4; transformers modular_exaone4.py @ 008e5743):
-- Llama's attention with per-head Q/K RMSNorms (Exaone4Attention q_norm,
-- k_norm of head_dim), OLMo 2's layer (the norms after attention and
-- MLP: reordered_norm), the window on the sliding_attention layers and,
-- with a window, no RoPE on the full-attention layers ("global NoPE":
-- nope_layer_period, the window's period).
function builders.exaone4(r, cfg, file, notes)
  require_silu(cfg, file, "EXAONE's SwiGLU MLP")
  if cfg.sliding_window == nil then
    cfg = with_defaults(cfg, { sliding_window = M.EXAONE4_WINDOW })
    r = reader(cfg, file)
  end
  local m = llama_like(r, cfg, file, {})
  m.qk_norm, m.reordered_norm = true, true
  local k = cfg.sliding_window_pattern
  if type(k) == "string" and k:match("^L*G$") then k = #k end
  if is_null(k) then k = M.EXAONE4_PATTERN end
  global_nope_window(m, r, cfg, file, config_int(k, 1, file, "sliding_window_pattern"))
  return m
end

--- Olmo3Config's window (modular_olmo3.py @ 02e8340b): `sliding_window`
-- 4096 tokens when the key is absent (null: none), on every layer but
-- each 4th when `layer_types` is absent.
M.OLMO3_WINDOW, M.OLMO3_FULL_EVERY = 4096, 4

--- Olmo 3: OLMo 2's layer with the window on the sliding_attention layers
-- of `layer_types`; its RoPE scaling applies to the full-attention layers
-- only (Olmo3Model), a numeric the estimate does not read.
function builders.olmo3(r, cfg, file, notes)
  if cfg.sliding_window == nil then
    cfg = with_defaults(cfg, { sliding_window = M.OLMO3_WINDOW })
    r = reader(cfg, file)
  end
  local m = builders.olmo2(r, cfg, file, notes)
  local L = m.num_layers
  window_on(m, r, sliding_layer_count(cfg, L, file) or L - L // M.OLMO3_FULL_EVERY)
  set_window_period(m, cfg, M.OLMO3_FULL_EVERY)
  if m.sliding_window and not is_null(cfg.rope_scaling) then
    note(notes, file, "RoPE scaling applies to the full-attention layers only (Olmo3Model); launch files " ..
      "scale every layer's positions")
  end
  return m
end

----------------------------------------------------------- 2024-26 dense families, second batch (issue 25)

--- transformers' ACT2FN name of the squared ReLU, max(x, 0)^2
-- (activations.py ReLUSquaredActivation), the non-gated MLP of NemotronMLP
-- and the classes built on it (ArceeMLP).
M.RELU2_ACT = "relu2"

-- NemotronMLP (modeling_nemotron.py @ 694aaa7f; ArceeMLP is the same
-- class): up_proj h x f and down_proj f x h, biases when `mlp_bias`
-- (default false), `hidden_act` between them (absent: the classes'
-- default relu2) -> mlp relu2, Megatron --squared-relu.  Another
-- activation is refused: the same two matrices with it are not priced.
local function relu2_mlp(m, r, cfg, file, why)
  if not is_null(cfg.hidden_act) then require_value(cfg, "hidden_act", M.RELU2_ACT, file, why) end
  m.mlp, m.mlp_bias = "relu2", r.bool("mlp_bias", false)
  return m
end

--- NemotronConfig's fraction of each head RoPE rotates when the config
-- gives no `partial_rotary_factor` (configuration_nemotron.py @ 05cd1ec1).
M.NEMOTRON_ROTARY_FRACTION = 0.5

--- Nemotron-4 / Minitron (nemotron; transformers modeling_nemotron.py @
-- 694aaa7f, configuration_nemotron.py @ 05cd1ec1): Llama's attention
-- (q, k, v, o biases when `attention_bias`, default false; `head_dim`,
-- default h / a), RoPE on the first `partial_rotary_factor` (default 0.5)
-- of each head, NemotronMLP (squared ReLU, no gate, relu2_mlp) and two
-- NemotronLayerNorm1P per layer plus the final one: LayerNorms with bias
-- whose weight is used as 1 + w (norm_zero_centered, Megatron
-- --apply-layernorm-1p); the epsilon is `norm_eps`; untied by default.
function builders.nemotron(r, cfg, file)
  -- a hybrid's layer pattern would be dropped by this dense reader
  for _, key in ipairs({ "hybrid_override_pattern", "layers_block_type" }) do
    if not is_null(cfg[key]) then
      util.fail(file, key, "a Nemotron-H layer pattern on a dense Nemotron config (model_type nemotron_h " ..
        "reads it)", cfg[key])
    end
  end
  local m = relu2_mlp(llama_like(r, cfg, file, { own_activation = true }), r, cfg, file, "NemotronMLP's squared ReLU")
  m.norm, m.norm_bias, m.norm_zero_centered = "layernorm", true, true
  local ab = r.bool("attention_bias", false)
  m.qkv_bias, m.attn_out_bias = ab, ab
  m.rotary_percent = M.rotary_fraction(cfg, file, M.NEMOTRON_ROTARY_FRACTION)
  return m
end

--- AFM-4.5B (arcee; transformers modular_arcee.py @ 031734d9): Llama's
-- layer (builders.llama: `attention_bias`, `head_dim`) with NemotronMLP
-- in place of the SwiGLU (ArceeMLP: up and down projections, squared
-- ReLU, `mlp_bias`).
function builders.arcee(r, cfg, file)
  return relu2_mlp(llama_layer(r, cfg, file, { own_activation = true }), r, cfg, file, "ArceeMLP's squared ReLU")
end

--- transformers' ACT2FN name of xIELU (activations.py XIELUActivation),
-- ApertusConfig's default `hidden_act`.
M.XIELU_ACT = "xielu"

--- Apertus (apertus; transformers models/apertus/modular_apertus.py @
-- 008e5743; swiss-ai/Apertus-8B-2509 8,053,338,176, -70B-2509): Llama's
-- attention (q, k, v, o biases when `attention_bias`, default false) with
-- per-head RMSNorms on q and k that ApertusAttention always builds (the
-- config's `qk_norm` and `post_norm` are not read), two RMSNorms per layer
-- (attention_layernorm, feedforward_layernorm), ApertusMLP: up_proj and
-- down_proj without bias whatever `mlp_bias` says, ACT2FN[hidden_act]
-- between them -- xIELU by default (mlp xielu: its alpha_p and alpha_n
-- counted, APS_XIELU_PARAMS), the squared ReLU of NemotronMLP it derives
-- from when `hidden_act` says relu2; untied by default.
function builders.apertus(r, cfg, file)
  local m = llama_like(r, cfg, file, { own_activation = true })
  local act = cfg.hidden_act
  if is_null(act) then act = M.XIELU_ACT end
  if act == M.XIELU_ACT then
    m.mlp = "xielu"
  elseif act == M.RELU2_ACT then
    m.mlp = "relu2"
  else
    util.fail(file, "hidden_act", "expected xielu or relu2 (ApertusMLP's two matrices are priced with those)", act)
  end
  local ab = r.bool("attention_bias", false)
  m.qkv_bias, m.attn_out_bias = ab, ab
  m.qk_norm = true
  return m
end

--- Jais2Config's defaults (transformers configuration_jais2.py @
-- 008e5743, documented as inceptionai/Jais-2-8B-Chat's) for the keys a
-- config.json may leave out; num_key_value_heads absent: one per head; no
-- RoPE base of its own (PreTrainedConfig's 10000).
M.JAIS2_DEFAULTS = {
  vocab_size = 150272, hidden_size = 3328, intermediate_size = 26624, num_hidden_layers = 32,
  num_attention_heads = 26, hidden_act = "relu2", tie_word_embeddings = false, attention_bias = true,
  mlp_bias = true, max_position_embeddings = 8192,
}

--- Jais 2 (jais2; transformers modular_jais2.py @ 1060b88e): Llama's
-- attention (q, k, v, o biases when `attention_bias`, default true),
-- NemotronMLP (up and down projections with `mlp_bias`, default true;
-- squared ReLU) and two nn.LayerNorm (weight and bias) a layer plus the
-- final one, epsilon `layer_norm_eps`; untied.
function builders.jais2(_, cfg, file)
  local c = class_defaults(cfg, M.JAIS2_DEFAULTS)
  local r = reader(c, file)
  local m = relu2_mlp(llama_layer(r, c, file, { own_activation = true }), r, c, file, "Jais2MLP's squared ReLU")
  m.norm, m.norm_bias = "layernorm", true
  return m
end

--- NanoChatConfig's defaults (transformers configuration_nanochat.py @
-- 008e5743) for the keys a config.json may leave out.
M.NANOCHAT_DEFAULTS = {
  vocab_size = 50304, hidden_size = 768, intermediate_size = 8192, num_hidden_layers = 12,
  num_attention_heads = 6, hidden_act = "relu2", final_logit_softcapping = 15.0, attention_bias = false,
  tie_word_embeddings = false,
}

--- nanochat (nanochat; transformers modular_nanochat.py @ a1530d2a):
-- Qwen3's attention (q, k, v, o biases when `attention_bias`) whose Q/K
-- norms have no weight (Llama4TextL2Norm: qk_norm_weightless), every norm
-- weightless (norm_weightless) with one more on the embeddings before the
-- first layer (NanoChatModel: embedding_norm), a squared-ReLU MLP of two
-- projections without bias (NanoChatMLP fc1, fc2), the logits
-- soft-capped (final_logit_softcapping, null: none); untied.
function builders.nanochat(_, cfg, file, notes)
  local c = class_defaults(cfg, M.NANOCHAT_DEFAULTS)
  if cfg.final_logit_softcapping == cjson.null then c.final_logit_softcapping = nil end
  local r = reader(c, file)
  local m = relu2_mlp(llama_layer(r, c, file, { own_activation = true }), r, c, file, "NanoChatMLP's squared ReLU")
  m.mlp_bias = false
  m.qk_norm, m.qk_norm_weightless = true, true
  m.norm_weightless, m.embedding_norm = true, true
  return softcapping(m, c, file, notes, {})
end

--- Gemma-2's window period: the even-numbered (0-based) layers are local
-- (Gemma2Config.__post_init__'s default `layer_types`: sliding_attention
-- when (i + 1) % 2, transformers configuration_gemma2.py @ 008e5743), so
-- every 2nd layer (1-based) is global.
M.GEMMA2_WINDOW_PERIOD = 2

--- Gemma 2 (gemma2): head_dim 256, four RMSNorms per layer, GeGLU,
-- soft-capping, tied; the window `sliding_window` on the sliding_attention
-- layers of `layer_types`, or of the class's default (every other layer,
-- M.GEMMA2_WINDOW_PERIOD).
function builders.gemma2(r, cfg, file, notes)
  local m = llama_like(r, cfg, file, { head_dim = 256, tied = true, norms_per_layer = 4, own_activation = true })
  local L, k = m.num_layers, M.GEMMA2_WINDOW_PERIOD
  window_on(m, r, sliding_layer_count(cfg, L, file) or L - L // k)
  set_window_period(m, cfg, k)
  m.qkv_bias = r.bool("attention_bias", false)
  m.attn_out_bias = m.qkv_bias
  m.glu_activation = M.gemma_activation(cfg, file)
  m.norm_zero_centered = true -- Gemma2RMSNorm: x * (1 + w) (builders.gemma's comment)
  return softcapping(m, cfg, file, notes, M.GEMMA2_SOFTCAPPING)
end

--- VaultGemma (vaultgemma: google/vaultgemma-1b; transformers
-- modular_vaultgemma.py @ 0eec8c78): Gemma 2's model (VaultGemmaConfig is
-- Gemma2Config: head_dim 256, GeGLU, soft-capping, tied) whose decoder
-- layer drops the post-attention and post-feedforward norms (two RMSNorms
-- per layer, not four); its window as Gemma 2 reads it.
function builders.vaultgemma(r, cfg, file, notes)
  local m = builders.gemma2(r, cfg, file, notes)
  m.norms_per_layer = 2
  return m
end

--- MinistralConfig's defaults (transformers modular_ministral.py @
-- 05cd1ec1, documented as mistralai/Ministral-8B-Instruct-2410's) of the
-- keys a config.json may leave out: its shapes, 8 KV heads (a null: one
-- per head, the class's "backward compatibility"), the window of 4096
-- tokens (a null: none), untied.
M.MINISTRAL_DEFAULTS = { vocab_size = 32000, hidden_size = 4096, intermediate_size = 14336,
  num_hidden_layers = 32, num_attention_heads = 32, num_key_value_heads = 8, sliding_window = 4096,
  tie_word_embeddings = false, max_position_embeddings = 4096 * 32 }

--- Ministral (ministral: Ministral-8B-Instruct-2410; transformers
-- modular_ministral.py @ 05cd1ec1): Qwen2's layer without biases
-- (MinistralAttention's q, k, v and Qwen2's o_proj have none), `head_dim`
-- (default h / a), the window `sliding_window` on the sliding_attention
-- layers of `layer_types` (absent: every layer when there is a window,
-- MinistralConfig.__init__).
function builders.ministral(_, cfg, file)
  local c = class_defaults(cfg, M.MINISTRAL_DEFAULTS)
  if cfg.sliding_window == cjson.null then c.sliding_window = nil end
  if cfg.num_key_value_heads == cjson.null then c.num_key_value_heads = nil end
  local r = reader(c, file)
  local m = llama_like(r, c, file, {})
  if is_null(c.sliding_window) then return m end
  window_on(m, r, sliding_layer_count(c, m.num_layers, file) or m.num_layers)
  return set_window_period(m, c, nil)
end

--- CwmConfig's defaults (transformers modular_cwm.py @ 000c33fd,
-- documented as facebook/cwm's) for the keys a config.json may leave
-- out; its RoPE base (rope_parameters' default rope_theta, llama3-scaled);
-- without `layer_types`, layer i (0-based) attends fully when i %
-- M.CWM_FULL_EVERY == 0, else within the window.
M.CWM_DEFAULTS = {
  vocab_size = 128256, hidden_size = 6144, intermediate_size = 21504, num_hidden_layers = 64,
  num_attention_heads = 48, num_key_value_heads = 8, head_dim = 128, hidden_act = "silu",
  tie_word_embeddings = false, mlp_bias = false, sliding_window = 8192,
}
M.CWM_FULL_EVERY = 4
--- CwmConfig's rope_parameters when the config gives none (llama3 scaling)
M.CWM_ROPE = { rope_theta = 1000000.0, factor = 16.0, high_freq_factor = 4.0, low_freq_factor = 1.0,
  original_max_position_embeddings = 8192, rope_type = "llama3" }

--- Code World Model (cwm; transformers modular_cwm.py @ 000c33fd): Llama's
-- layer with no attention bias (CwmConfig deletes attention_bias; CwmAttention
-- q, k, v and Qwen2Attention's o_proj without), `mlp_bias`, the window of
-- `sliding_window` (0 or null: none) on the sliding_attention layers of
-- `layer_types` (default: all but the 0-based multiples of 4, the first
-- layer of each four full -- no period counts that way, so the layout
-- is kept: sliding_window_layout).
function builders.cwm(_, cfg, file, _, extra)
  local c = class_defaults(cfg, M.CWM_DEFAULTS)
  if cfg.sliding_window == cjson.null or cfg.sliding_window == 0 then c.sliding_window = nil end
  if is_null(cfg.rope_parameters) and is_null(cfg.rope_scaling) and is_null(cfg.rope_theta) then
    c.rope_parameters = M.CWM_ROPE
  end
  c.attention_bias = false
  local r = reader(c, file)
  local m = llama_layer(r, c, file)
  extra.own_numerics = true
  if is_null(c.sliding_window) then return numerics(m, c, file) end
  local L = m.num_layers
  if is_null(c.layer_types) then
    local types = {}
    for i = 1, L do types[i] = (i - 1) % M.CWM_FULL_EVERY == 0 and "full_attention" or "sliding_attention" end
    c.layer_types = types
  end
  window_on(m, r, sliding_layer_count(c, L, file))
  return numerics(set_window_period(m, c, nil), c, file)
end

--- Ernie4_5Config's defaults (configuration_ernie4_5.py @ 2b6c089d) of the
-- keys whose absence changes the count or the numerics read here; a
-- null num_key_value_heads is num_attention_heads (the class's "backward
-- compatibility"), an absent one 2.
M.ERNIE45_DEFAULTS = { head_dim = 128, num_key_value_heads = 2, tie_word_embeddings = true, use_bias = false,
  rope_theta = 500000.0, max_position_embeddings = 131072 }

--- ERNIE 4.5 dense (ernie4_5: ERNIE-4.5-0.3B; transformers
-- modeling_ernie4_5.py @ 9243e99d): Llama's layer with `head_dim`
-- (default 128) and one `use_bias` (default false) for q, k, v, o and the
-- gate, up and down projections (never the lm_head); RoPE over the whole
-- head in interleaved pairs (its apply_rotary_pos_emb: rotate_half over
-- the even and odd dims, rotary_interleaved); tied by default.
function builders.ernie4_5(_, cfg, file)
  require_silu(cfg, file, "ERNIE 4.5's SwiGLU MLP")
  local c = class_defaults(cfg, M.ERNIE45_DEFAULTS)
  if cfg.num_key_value_heads == cjson.null then c.num_key_value_heads = nil end
  local r = reader(c, file)
  local m = llama_like(r, c, file, { tied = true })
  local b = r.bool("use_bias")
  m.qkv_bias, m.attn_out_bias, m.mlp_bias = b, b, b
  m.rotary_interleaved = true
  m.rope_theta = c.rope_theta -- the class's default when the config has none (numerics keeps a given one)
  return m
end

--- Starcoder2Config's defaults (configuration_starcoder2.py @ 77efc55c)
-- of the keys whose absence changes the count: biases on every
-- projection, tied embeddings.
M.STARCODER2_DEFAULTS = { use_bias = true, tie_word_embeddings = true }

--- transformers' ACT2FN names of a non-gated MLP the core prices as
-- mlp "gelu" (two matrices): the erf GELU and its tanh approximations
-- (GELU-tanh is noted: element-wise, estimated as GELU).
M.GELU_ACTIVATIONS = { gelu = true, gelu_pytorch_tanh = true, gelu_new = true }

-- The note that `what`, a tanh approximation of GELU, is priced as GELU.
local function gelu_tanh_note(notes, file, what)
  note(notes, file, "%s (the tanh approximation of GELU) is element-wise: estimated as GELU; Megatron-LM's " ..
    "non-gated MLP applies the erf GELU", what)
end

-- The GELU of a non-gated MLP the core prices as mlp "gelu": `hidden_act`
-- (or `key`, GPT-style configs' activation_function; absent: `default`,
-- the class's) one of M.GELU_ACTIVATIONS, else refused naming `why`; a
-- tanh approximation is noted (element-wise).
local function gelu_mlp(m, cfg, file, notes, default, why, key)
  key = key or "hidden_act"
  local act = cfg[key]
  if is_null(act) then act = default end
  if not M.GELU_ACTIVATIONS[act] then
    util.fail(file, key, "expected gelu, gelu_pytorch_tanh or gelu_new (" .. why .. ")", act)
  end
  m.mlp = "gelu"
  if act ~= "gelu" then gelu_tanh_note(notes, file, key .. " " .. act) end
  return m
end

--- StarCoder2 (starcoder2; transformers modular_starcoder2.py @ ae005ce1):
-- Mistral's attention with one `use_bias` (default true) for q, k, v, o
-- and the MLP's c_fc (h x f) and c_proj (f x h), a GELU between them
-- (`hidden_act`, default gelu_pytorch_tanh), two nn.LayerNorms per layer
-- and the final one, always with bias, epsilon `norm_epsilon`; the window
-- of `sliding_window` (null: none) on every layer; tied by default;
-- dropout by `residual_dropout`, `embedding_dropout`, `attention_dropout`.
function builders.starcoder2(_, cfg, file, notes)
  local c = class_defaults(cfg, M.STARCODER2_DEFAULTS)
  local r = reader(c, file)
  local m = gelu_mlp(window(llama_like(r, c, file, { own_activation = true }), r), c, file, notes, "gelu_pytorch_tanh",
    "Starcoder2MLP's two matrices are priced with GELU")
  local b = r.bool("use_bias")
  m.norm, m.norm_bias = "layernorm", true
  m.qkv_bias, m.attn_out_bias, m.mlp_bias = b, b, b
  return m
end

--- GPTBigCodeConfig's defaults of the keys read here (transformers
-- configuration_gpt_bigcode.py @ 05ff2e98): multi-query attention, the
-- tanh GELU (tied embeddings: builders.gpt2's default).
M.GPT_BIGCODE_DEFAULTS = { multi_query = true, activation_function = "gelu_pytorch_tanh" }

--- StarCoder / SantaCoder (gpt_bigcode; transformers
-- modeling_gpt_bigcode.py @ 008e5743): GPT-2's layer (builders.gpt2:
-- `n_embd`, `n_layer`, `n_head`, `n_inner` (null: 4 x n_embd),
-- `n_positions` learned positions, LayerNorms and every linear with
-- bias, tied) whose c_attn projects one K and one V head shared by every
-- query head when `multi_query` (default true; false: n_head of each),
-- and a GELU MLP (`activation_function`, default gelu_pytorch_tanh).
-- `add_cross_attention` (an encoder-decoder's cross-attention blocks in
-- every layer) is refused.
function builders.gpt_bigcode(r, raw, file, notes)
  local cfg = class_defaults(raw, M.GPT_BIGCODE_DEFAULTS)
  r = reader(cfg, file)
  if r.bool("add_cross_attention", false) then
    util.fail(file, "add_cross_attention", "expected false (cross-attention to an encoder is not modelled)", true)
  end
  local m = gelu_mlp(builders.gpt2(r, cfg, file), cfg, file, notes, nil, "GPTBigCodeMLP's c_fc and c_proj " ..
    "are priced with GELU", "activation_function")
  if r.bool("multi_query") then m.num_query_groups = 1 end
  return m
end

--- GPTJConfig's defaults of the keys read here (transformers
-- configuration_gptj.py): untied, the tanh GELU of gelu_new, RoPE on the
-- first 64 dims of each head.
M.GPTJ_DEFAULTS = { tie_word_embeddings = false, activation_function = "gelu_new", rotary_dim = 64 }

--- GPT-J (gptj: GPT-J-6B; transformers modeling_gptj.py @ 00b676f8):
-- GPT-2's shapes (builders.gpt2: `n_embd`, `n_layer`, `n_head`, `n_inner`,
-- `n_positions`) in GPTJBlock: one LayerNorm with bias (ln_1) feeding
-- attention and the MLP in parallel (parallel_attn_mlp), q, k, v and
-- out_proj without biases, fc_in and fc_out with biases and the GELU of
-- `activation_function`, RoPE on the first `rotary_dim` dims of each head
-- (null: all) in interleaved pairs (rotate_every_two: rotary_interleaved),
-- no position table; the lm_head has a bias (lm_head_bias); untied by
-- default.
function builders.gptj(_, raw, file, notes)
  local cfg = class_defaults(raw, M.GPTJ_DEFAULTS)
  if raw.rotary_dim == cjson.null then cfg.rotary_dim = nil end
  local r = reader(cfg, file)
  local m = gelu_mlp(builders.gpt2(r, cfg, file), cfg, file, notes, nil, "GPTJMLP's fc_in and fc_out are priced " ..
    "with GELU", "activation_function")
  m.position_embedding, m.norms_per_layer, m.parallel_attn_mlp = "rope", 1, true
  m.qkv_bias, m.attn_out_bias, m.lm_head_bias, m.rotary_interleaved = false, false, true, true
  local d = m.hidden_size // m.num_attention_heads
  if r.has("rotary_dim") then
    local rd = r.int("rotary_dim")
    if rd > d or rd % 2 ~= 0 then
      util.fail(file, "rotary_dim", ("expected an even number of dims <= the head's %d"):format(d), cfg.rotary_dim)
    end
    if rd < d then m.rotary_percent = rd / d end
  end
  return m
end

--- FalconConfig's defaults of the keys read here (transformers
-- configuration_falcon.py): Falcon-7B's shapes' flags -- multi-query,
-- parallel attention and MLP, no linear biases, GELU, tied.
M.FALCON_DEFAULTS = { multi_query = true, parallel_attn = true, bias = false, alibi = false,
  new_decoder_architecture = false, activation = "gelu", tie_word_embeddings = true, max_position_embeddings = 2048 }

--- The older names FalconConfig still reads (its attribute_map and the
-- n_embed keyword) for the keys the reader takes.
M.FALCON_ALIASES = { n_layer = "num_hidden_layers", n_head = "num_attention_heads", n_head_kv = "num_kv_heads",
  n_embed = "hidden_size" }

--- The older names BloomConfig still reads (its attribute_map and the
-- n_embed keyword).
M.BLOOM_ALIASES = { n_layer = "num_hidden_layers", n_head = "num_attention_heads", n_embed = "hidden_size" }

--- The LayerNorms in parallel FalconDecoderLayer builds for the new
-- decoder architecture when the config gives none (ln_attn, ln_mlp).
M.FALCON_NEW_ARCH_NORMS = 2

--- Falcon (falcon: Falcon-7B/40B/180B, Falcon2-11B; transformers
-- modeling_falcon.py, FalconAttention, FalconMLP, FalconDecoderLayer):
-- query_key_value projects a query heads and, with
-- `new_decoder_architecture`, `num_kv_heads` K and V heads each; else one
-- (`multi_query`, default true) or a (3 x hidden); dense (o), the MLP's
-- dense_h_to_4h (`ffn_hidden_size`, default 4 x hidden) and
-- dense_4h_to_h have biases exactly when `bias` (default false), the MLP
-- the GELU of `activation`.  With `parallel_attn` (default true) attention
-- and MLP add to the residual together, reading one input_layernorm or,
-- with `num_ln_in_parallel_attn` 2 (the new architecture's default), a
-- LayerNorm each (ln_attn, ln_mlp); else two LayerNorms in sequence.
-- LayerNorms always with bias; RoPE (rotate_half); tied by default.
-- `alibi` (Falcon-RW) is refused.
function builders.falcon(_, raw, file, notes)
  local cfg = class_defaults(with_aliases(raw, M.FALCON_ALIASES), M.FALCON_DEFAULTS)
  local r = reader(cfg, file)
  if r.bool("alibi") then
    error(("NotImplemented: %s: alibi: Falcon-RW's ALiBi attention is not modelled for Falcon (its launch files " ..
      "would train RoPE) (got true)"):format(file), 0)
  end
  local h, a = r.int("hidden_size"), r.int("num_attention_heads")
  local new_arch, parallel = r.bool("new_decoder_architecture"), r.bool("parallel_attn")
  local kv = a
  if new_arch then
    kv = r.int("num_kv_heads", a)
  elseif r.bool("multi_query") then
    kv = 1
  elseif r.has("num_kv_heads") and r.int("num_kv_heads") ~= a then
    util.fail(file, "num_kv_heads", ("expected %d, num_attention_heads (query_key_value is 3 x hidden_size " ..
      "without new_decoder_architecture or multi_query)"):format(a), cfg.num_kv_heads)
  end
  local norms = 2
  if parallel then
    local n = cfg.num_ln_in_parallel_attn
    if is_null(n) and new_arch then n = M.FALCON_NEW_ARCH_NORMS end
    norms = n == M.FALCON_NEW_ARCH_NORMS and 2 or 1
  end
  local bias = r.bool("bias")
  local m = {
    num_layers = r.int("num_hidden_layers"), hidden_size = h, num_attention_heads = a, num_query_groups = kv,
    ffn_hidden_size = r.int("ffn_hidden_size", 4 * h), vocab_size = r.int("vocab_size"),
    norms_per_layer = norms, norm = "layernorm", position_embedding = "rope",
    norm_bias = true, qkv_bias = bias, attn_out_bias = bias, mlp_bias = bias, qk_norm = false,
    parallel_attn_mlp = parallel or nil, tie_word_embeddings = r.bool("tie_word_embeddings"),
  }
  if r.has("max_position_embeddings") then m.max_position_embeddings = r.int("max_position_embeddings") end
  if parallel and norms == 2 then
    note(notes, file, "attention and the MLP read a LayerNorm each (ln_attn, ln_mlp) and add to the residual " ..
      "together: counted as two norms per layer")
  end
  return gelu_mlp(m, cfg, file, notes, nil, "FalconMLP's two matrices are priced with GELU", "activation")
end

--- BLOOM (bloom: BLOOM-560m ... BLOOM-176B; transformers
-- modeling_bloom.py): `n_embed` (or `hidden_size`), `n_layer`,
-- `num_attention_heads` (or `n_head`); a LayerNorm with bias on the word
-- embeddings (word_embeddings_layernorm: embedding_norm), then per layer
-- input_layernorm, query_key_value h x 3h and dense h x h with biases,
-- post_attention_layernorm, the MLP's dense_h_to_4h and dense_4h_to_h
-- (always 4 x hidden, with biases) around BloomGelu (the tanh GELU,
-- noted), ln_f; ALiBi positions (no parameters); the lm_head tied.
-- `apply_residual_connection_post_layernorm` true (the residual taken
-- after the norm) is refused.
function builders.bloom(_, raw, file, notes)
  local cfg = with_aliases(raw, M.BLOOM_ALIASES)
  local r = reader(cfg, file)
  if r.bool("apply_residual_connection_post_layernorm", false) then
    error(("NotImplemented: %s: apply_residual_connection_post_layernorm: the residual taken after each " ..
      "LayerNorm is not modelled (got true)"):format(file), 0)
  end
  local h = r.int("hidden_size")
  local m = {
    num_layers = r.int("num_hidden_layers"), hidden_size = h, num_attention_heads = r.int("num_attention_heads"),
    ffn_hidden_size = M.BLOOM_FFN_FACTOR * h, vocab_size = r.int("vocab_size"),
    norms_per_layer = 2, mlp = "gelu", norm = "layernorm", position_embedding = "alibi",
    norm_bias = true, qkv_bias = true, attn_out_bias = true, mlp_bias = true, qk_norm = false,
    embedding_norm = true, tie_word_embeddings = r.bool("tie_word_embeddings", true),
  }
  m.num_query_groups = m.num_attention_heads
  if r.has("seq_length") then m.max_position_embeddings = r.int("seq_length") end
  gelu_tanh_note(notes, file, "BloomGelu")
  return m
end

--- BloomMLP's width as a multiple of the hidden size (dense_h_to_4h; no
-- config key sets it).
M.BLOOM_FFN_FACTOR = 4

--- PhiConfig's fraction of each head RoPE rotates when the config gives no
-- `partial_rotary_factor` (configuration_phi.py @ 90f2781a).
M.PHI_ROTARY_FRACTION = 0.5

--- Phi-2 / Phi-1.5 (phi; transformers modular_phi.py @ b39782da): one
-- nn.LayerNorm with bias per layer feeding attention and the MLP in
-- parallel (PhiDecoderLayer: attn + mlp + residual; parallel_attn_mlp),
-- q, k, v and dense (o) with biases, the MLP fc1 and fc2 with biases and
-- a GELU (`hidden_act`, default gelu_new), RoPE on
-- `partial_rotary_factor` (default 0.5) of each head, the final
-- LayerNorm, an lm_head with its bias (lm_head_bias, the checkpoint's
-- lm_head.bias); untied by default.  `qk_layernorm` (LayerNorms on Q and
-- K of h / a with bias) is refused.
function builders.phi(r, cfg, file, notes)
  if r.bool("qk_layernorm", false) then
    error(("NotImplemented: %s: qk_layernorm: Phi's LayerNorms with bias on Q and K are not modelled (got true)")
      :format(file), 0)
  end
  local m = gelu_mlp(llama_like(r, cfg, file, { norms_per_layer = 1, own_activation = true }), cfg, file, notes,
    "gelu_new", "PhiMLP's fc1 and fc2 are priced with GELU")
  m.norm, m.norm_bias, m.parallel_attn_mlp, m.lm_head_bias = "layernorm", true, true, true
  m.qkv_bias, m.attn_out_bias, m.mlp_bias = true, true, true
  m.rotary_percent = M.rotary_fraction(cfg, file, M.PHI_ROTARY_FRACTION)
  return m
end

--- StableLmConfig's fraction of each head RoPE rotates when the config
-- gives no `partial_rotary_factor` (configuration_stablelm.py @ 1459750d).
M.STABLELM_ROTARY_FRACTION = 0.25

--- StableLM (stablelm: StableLM-3B-4E1T, StableLM 2; transformers
-- modeling_stablelm.py @ bf112caa): q, k, v with biases when
-- `use_qkv_bias` (default false), o_proj never, head width h / a (no
-- head_dim key is read), RoPE on `partial_rotary_factor` (default 0.25)
-- of each head, a SwiGLU MLP without biases, nn.LayerNorms with bias
-- (`layer_norm_eps`); with `use_parallel_residual` one LayerNorm feeds
-- attention and MLP in parallel (parallel_attn_mlp), else two in
-- sequence; untied by default.  `qk_layernorm` (StableLM 2 12B:
-- StableLmLayerNormPerHead, a bias-free LayerNorm of its own for each Q
-- and each K head) -> qk_norm with qk_norm_head_weights.
function builders.stablelm(r, cfg, file)
  require_silu(cfg, file, "StableLmMLP's SwiGLU")
  local m = llama_like(r, cfg, file, {})
  if r.bool("qk_layernorm", false) then m.qk_norm, m.qk_norm_head_weights = true, true end
  m.head_dim = nil -- StableLmAttention: hidden_size // num_attention_heads
  m.norm, m.norm_bias = "layernorm", true
  m.qkv_bias, m.attn_out_bias = r.bool("use_qkv_bias", false), false
  if r.bool("use_parallel_residual", false) then m.parallel_attn_mlp, m.norms_per_layer = true, 1 end
  m.rotary_percent = M.rotary_fraction(cfg, file, M.STABLELM_ROTARY_FRACTION)
  return m
end

--- MiniMaxM2Config's defaults (transformers configuration_minimax_m2.py @
-- 3e108993) for the keys a `minimax_m2` config may leave out.
M.MINIMAX_M2_DEFAULTS = {
  vocab_size = 200064, hidden_size = 3072, intermediate_size = 1536, num_hidden_layers = 62,
  num_attention_heads = 48, num_key_value_heads = 8, head_dim = 128, num_experts_per_tok = 8,
  num_local_experts = 256, tie_word_embeddings = false,
}

--- Keys of MiniMax's config.json that transformers' classes do not read
-- but hard-wire (modular_minimax_m2.py @ ea9df1d3): the value they
-- implement, what it is, and (absent key) the value assumed.  A config
-- with another value is refused.
M.MINIMAX_M2_FIXED = {
  { "use_qk_norm", true, "attention without Q/K norms (MiniMaxM2Attention always has them)" },
  { "qk_norm_type", "per_layer", "Q/K norms other than over the whole projection (FlexOlmoAttention's)" },
  { "scoring_func", "sigmoid", "a router without sigmoid scores (MiniMaxM2TopKRouter)" },
  { "use_routing_bias", true, "a sigmoid router without the expert score bias (MiniMaxM2SparseMoeBlock)" },
}

-- The keys of `fixed` ({key, value, what} entries: M.MINIMAX_M2_FIXED,
-- M.MINIMAX_M3_FIXED, M.STEP3P5_FIXED) at the value the reference
-- implements (absent: assumed); NotImplemented otherwise, saying what is
-- not modelled.
local function refuse_unfixed(cfg, file, fixed)
  for _, f in ipairs(fixed) do
    local key, want, what = f[1], f[2], f[3]
    if not is_null(cfg[key]) and cfg[key] ~= want then
      error(("NotImplemented: %s: %s: %s is not modelled (expected %s, got %s)"):format(file, key, what,
        util.describe(want), util.describe(cfg[key])), 0)
    end
  end
end

-- MiniMax's attention kinds: every entry of `attn_type_list` must be 1
-- (softmax attention); 0 is MiniMax-Text-01's lightning attention.
local function minimax_attention_types(v, L, file)
  if is_null(v) then return end
  if type(v) ~= "table" or #v ~= L then
    util.fail(file, "attn_type_list", "expected an array of num_hidden_layers = " .. L .. " entries", v)
  end
  for i = 1, L do
    if v[i] ~= 1 then
      error(("NotImplemented: %s: attn_type_list[%d]: only softmax attention (1) is modelled; 0 is " ..
        "lightning (linear) attention (got %s)"):format(file, i - 1, util.describe(v[i])), 0)
    end
  end
end

-- RoPE on `rotary_dim` of the head width (default `default`); numerics()
-- lets a partial_rotary_factor the file gives win.
local function minimax_rotary(m, r, file, default)
  local hd = m.head_dim or m.hidden_size // m.num_attention_heads
  local rd = r.int("rotary_dim", default or hd)
  if rd > hd then util.fail(file, "rotary_dim", "expected at most head_dim = " .. hd, rd) end
  if rd < hd then m.rotary_percent = rd / hd end
end

--- Builds the model table of a `minimax_m2` config (MiniMax-M2, M2.1,
-- M2.5, M2.7; transformers modular_minimax_m2.py @ ea9df1d3:
-- MiniMaxM2Attention, MiniMaxM2TopKRouter, MiniMaxM2SparseMoeBlock,
-- MixtralExperts): q, k, v, o without biases; Q/K RMSNorms over the
-- whole projections (q_norm a*d, k_norm kv*d, as FlexOlmoAttention's);
-- RoPE on rotary_dim of head_dim (MiniMaxM2Config
-- convert_rope_params_to_dict: partial_rotary_factor = rotary_dim /
-- head_dim, default 1/2); every layer num_local_experts SwiGLU experts
-- of intermediate_size, a router h x E without bias scoring with a
-- sigmoid plus the e_score_correction_bias (E) it selects with, the top-k
-- weights renormalised; no shared expert.  The MTP modules (use_mtp,
-- num_mtp_modules) are not built by transformers and not priced: a note.
-- @tparam table _ the reader of the raw config (unused: read with the defaults)
-- @tparam table cfg the decoded config.json
-- @tparam string file for errors
-- @tparam table notes the import's notes
-- @treturn table model table
-- @raise `<file>: <key>: <problem> (got <value>)`; NotImplemented for
--   lightning-attention layers, a shared expert, or a value of
--   M.MINIMAX_M2_FIXED transformers does not implement
function builders.minimax_m2(_, cfg, file, notes)
  local t = class_defaults(cfg, M.MINIMAX_M2_DEFAULTS)
  local r = reader(t, file)
  local m = llama_like(r, t, file, {})
  minimax_attention_types(cfg.attn_type_list, m.num_layers, file)
  refuse_unfixed(cfg, file, M.MINIMAX_M2_FIXED)
  if count(t, "shared_intermediate_size", 0, file) > 0 then
    error(("NotImplemented: %s: shared_intermediate_size: MiniMax's shared expert is not modelled (got %s)")
      :format(file, util.describe(cfg.shared_intermediate_size)), 0)
  end
  m.qk_norm, m.qk_norm_full_width = true, true
  minimax_rotary(m, r, file, m.head_dim // 2)
  m.num_experts = r.int("num_local_experts")
  m.experts_per_token = r.int("num_experts_per_tok")
  m.moe_ffn_hidden_size = m.ffn_hidden_size
  m.moe_router_bias = true
  aux_loss(m, t, file, "router_aux_loss_coef")
  local mtp = r.bool("use_mtp", false) and count(cfg, "num_mtp_modules", 0, file) or 0
  if mtp > 0 then
    note(notes, file, "the checkpoint's %d multi-token-prediction modules (num_mtp_modules) are not built " ..
      "by transformers and are not priced", mtp)
  end
  return m
end

--- MiniMaxConfig's defaults (transformers models/minimax/modular_minimax.py
-- @ 008e5743) for the keys a `minimax` config may leave out.
M.MINIMAX_DEFAULTS = {
  vocab_size = 32000, hidden_size = 4096, intermediate_size = 14336, num_hidden_layers = 32,
  num_attention_heads = 32, num_key_value_heads = 8, num_experts_per_tok = 2, num_local_experts = 8,
  block_size = 256, tie_word_embeddings = false,
}

-- MiniMax-Text-01 / M1's layer kinds as the linear_attention_pattern (L
-- lightning, A softmax attention): transformers' `layer_types`
-- ("linear_attention" / "full_attention"), the remote code's
-- `attn_type_list` (0 lightning, 1 softmax; MiniMaxM1DecoderLayer), or
-- MiniMaxConfig.__post_init__'s default, softmax on the even 0-based
-- layers.  Both keys given must agree.
local function minimax_layer_kinds(cfg, L, file)
  local kinds = { linear_attention = "L", full_attention = "A" }
  local function read(key, v, map)
    if type(v) ~= "table" or #v ~= L then
      util.fail(file, key, "expected an array of num_hidden_layers = " .. L .. " entries", v)
    end
    local p = {}
    for i = 1, L do
      p[i] = map(v[i])
      if not p[i] then util.fail(file, key .. "[" .. (i - 1) .. "]", "expected " .. map(nil), v[i]) end
    end
    return table.concat(p)
  end
  local from_types = not is_null(cfg.layer_types) and read("layer_types", cfg.layer_types, function(x)
    if x == nil then return '"linear_attention" or "full_attention"' end
    return kinds[x]
  end)
  local from_list = not is_null(cfg.attn_type_list) and read("attn_type_list", cfg.attn_type_list, function(x)
    if x == nil then return "0 (lightning attention) or 1 (softmax attention)" end
    return (x == 0 and "L") or (x == 1 and "A") or nil
  end)
  if from_types and from_list and from_types ~= from_list then
    util.fail(file, "attn_type_list", "expected the layers of layer_types (" .. from_types .. ")", from_list)
  end
  if from_types or from_list then return from_types or from_list end
  local p = {}
  for i = 0, L - 1 do p[i + 1] = i % 2 == 0 and "A" or "L" end
  return table.concat(p)
end

--- MiniMax-Text-01 and MiniMax-M1 (`minimax`, transformers
-- models/minimax/modular_minimax.py @ 008e5743; the remote-code types
-- `minimax_text_01` and `minimax_m1` are read by their classes): Mixtral's
-- layer (GQA attention, num_local_experts SwiGLU experts with a softmax
-- top-k router) with lightning attention on the layers M.minimax_layer_kinds
-- gives: qkv_proj h -> 3 H d through SiLU, output_gate h -> H d, an RMSNorm
-- over H d, out_proj, the decayed linear attention in blocks of
-- `block_size` tokens (src/core/gdn.c).  RoPE on rotary_dim of the head
-- width.  The residual scales (full_attn_alpha_factor ..., the remote
-- code's layernorm_*_alpha) and `postnorm` change no cost.  The remote
-- code's shared expert (shared_intermediate_size, with a sigmoid
-- coefficient) is not in transformers' class: refused.
-- @raise `<file>: <key>: <problem> (got <value>)`; NotImplemented for a
--   shared expert or a sliding window
function builders.minimax(_, cfg, file, notes)
  -- MiniMaxConfig computes with these (its strict dataclass types them
  -- int): a null one is no value, not its default
  refuse_nulls(cfg, { "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
    "num_experts_per_tok", "num_local_experts", "block_size" }, file, "MiniMaxConfig")
  local t = class_defaults(cfg, M.MINIMAX_DEFAULTS)
  local r = reader(t, file)
  local m = llama_like(r, t, file, {})
  if count(t, "shared_intermediate_size", 0, file) > 0 then
    error(("NotImplemented: %s: shared_intermediate_size: MiniMax's shared expert (the remote code's " ..
      "shared_mlp with its coefficient gate) is not in transformers' MiniMaxForCausalLM and is not modelled " ..
      "(got %s)"):format(file, util.describe(cfg.shared_intermediate_size)), 0)
  end
  if not is_null(cfg.sliding_window) then
    error(("NotImplemented: %s: sliding_window: a window on MiniMax's softmax layers beside lightning " ..
      "attention is not modelled (got %s)"):format(file, util.describe(cfg.sliding_window)), 0)
  end
  minimax_rotary(m, r, file)
  m.num_experts = r.int("num_local_experts")
  m.experts_per_token = r.int("num_experts_per_tok")
  m.moe_ffn_hidden_size = m.ffn_hidden_size
  aux_loss(m, t, file, "router_aux_loss_coef")
  local pattern = minimax_layer_kinds(cfg, m.num_layers, file)
  if not pattern:find("L", 1, true) then return m end -- every layer softmax: Mixtral's
  if not pattern:find("A", 1, true) then
    error(("NotImplemented: %s: layer_types: a MiniMax model without a softmax-attention layer is not " ..
      "modelled"):format(file), 0)
  end
  m.linear_attention = "lightning"
  m.linear_attention_pattern = pattern
  m.linear_num_key_heads, m.linear_num_value_heads = m.num_attention_heads, m.num_attention_heads
  m.linear_key_head_dim = m.head_dim or m.hidden_size // m.num_attention_heads
  m.linear_value_head_dim = m.linear_key_head_dim
  m.linear_block_size = r.int("block_size")
  m.linear_conv_kernel_dim = 0
  note(notes, file, "MiniMax's lightning attention is trained by NeMo AutoModel through transformers' " ..
    "MiniMaxForCausalLM only (FSDP2; no tensor, pipeline, context or expert parallelism): a built policy uses " ..
    "framework = automodel")
  return m
end

---------------------------------------------------------------- Jamba
-- transformers configuration_jamba.py @ 161d2bed (JambaConfig; transformers
-- 5.x's adds attribute_map num_local_experts -> num_experts) and modular_jamba.py
-- @ 01596202 (JambaAttentionDecoderLayer, JambaMambaDecoderLayer,
-- JambaMambaMixer, JambaSparseMoeBlock).

--- JambaConfig's defaults of the keys read here ("auto" dt rank: ceil of
-- hidden_size / M.JAMBA_DT_RANK_DIVISOR).
M.JAMBA_DEFAULTS = { vocab_size = 65536, hidden_size = 4096, intermediate_size = 14336, num_hidden_layers = 32,
  num_attention_heads = 32, num_key_value_heads = 8, num_experts_per_tok = 2, num_experts = 16,
  expert_layer_period = 2, expert_layer_offset = 1, attn_layer_period = 8, attn_layer_offset = 4,
  mamba_d_state = 16, mamba_d_conv = 4, mamba_expand = 2, mamba_dt_rank = "auto", mamba_conv_bias = true,
  mamba_proj_bias = false, use_mamba_kernels = true, tie_word_embeddings = false }

--- JambaConfig's "auto" mamba_dt_rank: math.ceil(hidden_size / 16).
M.JAMBA_DT_RANK_DIVISOR = 16

--- config.json keys of the model fields a jamba config sets under its own
-- names, for the core's errors.
M.JAMBA_CONFIG_KEYS = { linear_inner_size = "mamba_expand", linear_state_dim = "mamba_d_state",
  linear_dt_rank = "mamba_dt_rank", linear_conv_kernel_dim = "mamba_d_conv",
  linear_attention_pattern = "num_hidden_layers", moe_layer_freq = "expert_layer_period",
  moe_layer_phase = "expert_layer_offset" }

-- A JambaConfig period and offset: offset < period (JambaConfig's
-- _check_supported_offset raises otherwise).
local function jamba_period(r, cfg, key, file)
  local period, offset = r.int(key .. "_period"), config_int(cfg[key .. "_offset"], 0, file, key .. "_offset")
  if offset >= period then
    util.fail(file, key .. "_offset", ("expected less than %s_period = %d (JambaConfig raises)"):format(key,
      period), offset)
  end
  return period, offset
end

--- Jamba (`jamba`: Jamba v0.1, 1.5, 1.6, 1.7, Jamba Reasoning): Mistral's
-- layer without positions (JambaAttention applies no rotary embedding)
-- whose mixer is attention on the layers i % attn_layer_period ==
-- attn_layer_offset and Jamba's Mamba-1 mixer on the others (D =
-- mamba_expand x hidden_size channels, mamba_d_state, mamba_dt_rank,
-- mamba_d_conv: src/core/selscan.c), and whose FFN is num_experts SwiGLU
-- experts of intermediate_size on the layers i % expert_layer_period ==
-- expert_layer_offset (a softmax top-k router, the chosen weights not
-- renormalised) and a SwiGLU MLP on the others (every layer with one
-- expert).  Priced as NeMo AutoModel trains transformers' JambaForCausalLM
-- with mamba_ssm's kernels.
-- @raise `<file>: <key>: <problem> (got <value>)`; NotImplemented for
--   projection biases, a conv without bias, use_mamba_kernels false or
--   no attention layer
function builders.jamba(_, raw, file, notes, extra)
  -- JambaConfig keeps a null (None) where its modules then fail or build
  -- another layer (a conv without bias, slow_forward): no default for them
  refuse_nulls(raw, { "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
    "num_experts_per_tok", "attn_layer_period", "attn_layer_offset", "expert_layer_period", "expert_layer_offset",
    "mamba_d_state", "mamba_d_conv", "mamba_expand", "mamba_dt_rank", "hidden_act", "mamba_conv_bias",
    "mamba_proj_bias", "use_mamba_kernels" }, file, "JambaConfig")
  if raw.num_experts == cjson.null and is_null(raw.num_local_experts) then
    refuse_nulls(raw, { "num_experts" }, file, "JambaConfig")
  end
  extra.config_keys = M.JAMBA_CONFIG_KEYS
  if not is_null(raw.num_experts) and not is_null(raw.num_local_experts) and
      raw.num_experts ~= raw.num_local_experts then
    util.fail(file, "num_local_experts", "expected num_experts (JambaConfig reads one as the other)",
      raw.num_local_experts)
  end
  local cfg = class_defaults(with_aliases(raw, { num_local_experts = "num_experts" }), M.JAMBA_DEFAULTS)
  -- JambaConfig: a None num_key_value_heads is num_attention_heads
  if raw.num_key_value_heads == cjson.null then cfg.num_key_value_heads = cfg.num_attention_heads end
  local r = reader(cfg, file)
  local m = llama_like(r, cfg, file, {})
  m.position_embedding = "none"
  for _, k in ipairs({ "mamba_proj_bias", "mamba_conv_bias", "use_mamba_kernels" }) do
    if r.bool(k) ~= M.JAMBA_DEFAULTS[k] then
      not_modelled(file, k, ({ mamba_proj_bias = "biases on the Mamba-1 in_proj and out_proj are not modelled",
        mamba_conv_bias = "a Mamba-1 conv without bias is not modelled",
        use_mamba_kernels = "transformers' slow_forward (a Python loop over the sequence, without mamba_ssm's " ..
          "kernels) is not modelled" })[k], cfg[k])
    end
  end
  if not is_null(raw.sliding_window) then
    note(notes, file, "sliding_window: JambaAttention passes no window to its attention: not priced (as it runs)")
  end
  local ap, ao = jamba_period(r, cfg, "attn_layer", file)
  local p = {}
  for i = 0, m.num_layers - 1 do p[i + 1] = i % ap == ao and "A" or "L" end
  local pattern = table.concat(p)
  local E = r.int("num_experts")
  local ep, eo = jamba_period(r, cfg, "expert_layer", file)
  if E > 1 and eo < m.num_layers then
    m.num_experts, m.experts_per_token = E, r.int("num_experts_per_tok")
    m.moe_ffn_hidden_size = m.ffn_hidden_size
    -- a period beyond the layers: the one layer eo (i % L == eo for i < L)
    m.moe_layer_freq, m.moe_layer_phase = math.min(ep, m.num_layers), eo
    m.moe_router_pre_softmax = true -- JambaSparseMoeBlock: softmax, top-k, no renormalisation
    aux_loss(m, cfg, file, "router_aux_loss_coef")
  end
  if not pattern:find("L", 1, true) then return m end -- every layer attention
  if not pattern:find("A", 1, true) then
    not_modelled(file, "attn_layer_offset", ("a Jamba model without an attention layer (num_hidden_layers = %d) " ..
      "is not modelled"):format(m.num_layers), ao)
  end
  local expand, h = cfg.mamba_expand, m.hidden_size
  if not util.is_integer(expand) or expand < 1 or expand * h > M.MAX_CONFIG_INT then
    util.fail(file, "mamba_expand", "expected a positive integer (JambaConfig: intermediate_size = mamba_expand x " ..
      "hidden_size)", expand)
  end
  local rank = cfg.mamba_dt_rank
  if rank == "auto" then rank = (h + M.JAMBA_DT_RANK_DIVISOR - 1) // M.JAMBA_DT_RANK_DIVISOR end
  m.linear_attention, m.linear_attention_pattern = "mamba1", pattern
  m.linear_inner_size = math.tointeger(expand * h)
  m.linear_state_dim = r.int("mamba_d_state")
  m.linear_dt_rank = config_int(rank, 1, file, "mamba_dt_rank")
  m.linear_conv_kernel_dim = r.int("mamba_d_conv")
  note(notes, file, "Jamba's Mamba-1 layers are trained by NeMo AutoModel through transformers' JambaForCausalLM " ..
    "only (FSDP2; no tensor, pipeline, context or expert parallelism): a built policy uses framework = automodel")
  return m
end

--- Glm4MoeLiteConfig's defaults (transformers modular_glm4_moe_lite.py @
-- 75a5f8b5; they are GLM-4.7-Flash's shape) for the keys a
-- `glm4_moe_lite` config may leave out; topk_method is Glm4MoeTopkRouter's
-- (noaux_tc: sigmoid scores with the expert score bias).
M.GLM4_MOE_LITE_DEFAULTS = {
  vocab_size = 154880, hidden_size = 2048, intermediate_size = 10240, moe_intermediate_size = 1536,
  num_hidden_layers = 47, num_attention_heads = 20, num_key_value_heads = 20, n_shared_experts = 1,
  n_routed_experts = 64, routed_scaling_factor = 1.8, kv_lora_rank = 512, q_lora_rank = 768,
  qk_rope_head_dim = 64, v_head_dim = 256, qk_nope_head_dim = 192, n_group = 1, topk_group = 1,
  num_experts_per_tok = 4, norm_topk_prob = true, max_position_embeddings = 202752, rms_norm_eps = 1e-5,
  tie_word_embeddings = false, attention_bias = false, topk_method = "noaux_tc",
}

--- Glm4MoeLiteConfig's dense layers when `mlp_layer_types` is absent: the
-- first (["dense"] + ["sparse"] * (num_hidden_layers - 1)).
M.GLM4_MOE_LITE_DENSE_DEFAULT = 1

-- The dense layers of a glm4_moe_lite config as Glm4MoeLiteDecoderLayer
-- builds them: `mlp_layer_types` ("dense" / "sparse", one per layer),
-- else the first M.GLM4_MOE_LITE_DENSE_DEFAULT; into
-- moe_first_dense_layers when they lead, else moe_dense_layers.  The
-- class does not read first_k_dense_replace: one that disagrees is
-- refused rather than silently ignored.
-- The model's dense layers (0-based indices, ascending) as its fields:
-- leading ones as moe_first_dense_layers, any other set as
-- moe_dense_layers (at most M.MAX_DENSE_LAYERS, else an error naming key
-- and its value v).
local function set_dense_layers(m, dense, file, key, v)
  local lead = 0
  while lead < #dense and dense[lead + 1] == lead do lead = lead + 1 end
  m.moe_first_dense_layers, m.moe_dense_layers = nil, nil
  if lead == #dense then
    if lead > 0 then m.moe_first_dense_layers = lead end
  elseif #dense > M.MAX_DENSE_LAYERS then
    util.fail(file, key, ("has %d dense layers; at most %d are modelled"):format(#dense, M.MAX_DENSE_LAYERS), v)
  else
    m.moe_dense_layers = dense
  end
  return m
end

-- The dense layers `mlp_layer_types` ("dense" / "sparse", one per layer)
-- gives, else the first `first` (clamped: at least one layer must have
-- experts), into m's fields (set_dense_layers); `class` names the config
-- class in an error.  With `fk_checked`, a first_k_dense_replace that
-- disagrees with the list is refused (the class does not read it).
local function mlp_layer_types_dense(m, cfg, file, first, fk_checked, class)
  local L, v = m.num_layers, cfg.mlp_layer_types
  local dense = {}
  if is_null(v) then
    for i = 0, first - 1 do dense[#dense + 1] = i end
  else
    if type(v) ~= "table" or #v ~= L then
      util.fail(file, "mlp_layer_types", "expected an array of num_hidden_layers = " .. L .. " entries", v)
    end
    for i = 1, L do
      if v[i] ~= "dense" and v[i] ~= "sparse" then
        util.fail(file, "mlp_layer_types[" .. (i - 1) .. "]", 'expected "dense" or "sparse"', v[i])
      end
      if v[i] == "dense" then dense[#dense + 1] = i - 1 end
    end
  end
  if #dense == L and is_null(v) then
    util.fail(file, "num_hidden_layers", ("no layer would have experts: without mlp_layer_types %s makes the " ..
      "first %d dense"):format(class, first), L)
  end
  if #dense == L then util.fail(file, "mlp_layer_types", "no layer would have experts", v) end
  local leading = #dense == 0 or dense[#dense] == #dense - 1
  local fk = cfg.first_k_dense_replace
  if fk_checked and not is_null(fk) and not leading then
    util.fail(file, "first_k_dense_replace", ("cannot say the dense layers of mlp_layer_types, which do not all " ..
      "lead: leave it out (%s builds mlp_layer_types', not this key's)"):format(class), fk)
  end
  if fk_checked and not is_null(fk) and fk ~= #dense then
    util.fail(file, "first_k_dense_replace", ("expected %d, the leading dense layers of mlp_layer_types " ..
      "(%s builds those, not this key's)"):format(#dense, class), fk)
  end
  return set_dense_layers(m, dense, file, is_null(v) and "first_k_dense_replace" or "mlp_layer_types", v)
end

-- Glm4MoeLiteConfig's dense layers (and the classes that copy its
-- mlp_layer_types: DeepseekV32Config, GlmMoeDsaConfig, Laguna's).
local function glm4_moe_lite_dense(m, cfg, file)
  return mlp_layer_types_dense(m, cfg, file, M.GLM4_MOE_LITE_DENSE_DEFAULT, true, "Glm4MoeLiteConfig")
end

--- Builds the model table of a `glm4_moe_lite` config (GLM-4.7-Flash;
-- transformers modular_glm4_moe_lite.py @ 75a5f8b5): Glm4MoeLiteAttention
-- is DeepseekV3Attention (multi-head latent attention), the MoE layers
-- Glm4MoeMoE (n_routed_experts of moe_intermediate_size, n_shared_experts
-- shared ones, the noaux_tc router with its score bias, top-k
-- renormalised when norm_topk_prob, routed_scaling_factor), the dense
-- layers Glm4MoeMLP of intermediate_size, placed by mlp_layer_types;
-- num_nextn_predict_layers MTP modules (transformers skips them,
-- _keys_to_ignore_on_load_unexpected) counted apart as DeepSeek's.
-- @tparam table _ the reader of the raw config (unused: read with the defaults)
-- @tparam table cfg the decoded config.json
-- @tparam string file for errors
-- @treturn table model table
-- @raise `<file>: <key>: <problem> (got <value>)`
function builders.glm4_moe_lite(_, cfg, file)
  local t = class_defaults(cfg, M.GLM4_MOE_LITE_DEFAULTS)
  local m = deepseek(reader(t, file), t, file, true)
  return numerics(glm4_moe_lite_dense(m, t, file), t, file)
end

-- The per-layer SwiGLU clamps of `swiglu_limits` / `swiglu_limits_shared`
-- (Step-3.5, K-EXAONE: a limit > 0 clamps that layer's gate and up
-- projections) in the notes: element-wise, they change no estimate.
local function swiglu_limits_note(notes, cfg, file)
  local clamps = 0
  for _, key in ipairs({ "swiglu_limits", "swiglu_limits_shared" }) do
    for _, v in ipairs(type(cfg[key]) == "table" and cfg[key] or {}) do
      if type(v) == "number" and v > 0 then clamps = clamps + 1 end
    end
  end
  if clamps > 0 then
    note(notes, file, "%d per-layer SwiGLU clamps (swiglu_limits, swiglu_limits_shared) are element-wise and " ..
      "change no estimate", clamps)
  end
end

--- ExaoneMoeConfig's defaults (transformers modular_exaone_moe.py @
-- 02e8340b) for the keys a config.json may leave out (its class defaults,
-- not K-EXAONE's shapes); the window's defaults are EXAONE 4.0's
-- (M.EXAONE4_WINDOW, M.EXAONE4_PATTERN).
M.EXAONE_MOE_DEFAULTS = {
  vocab_size = 102400, hidden_size = 4096, intermediate_size = 16384, num_hidden_layers = 32,
  num_attention_heads = 32, num_key_value_heads = 32, hidden_act = "silu", tie_word_embeddings = false,
  first_k_dense_replace = 1, moe_intermediate_size = 1024, num_experts = 64, num_experts_per_tok = 8,
  num_shared_experts = 1, norm_topk_prob = true, routed_scaling_factor = 2.5, n_group = 1, topk_group = 1,
}

--- K-EXAONE (`exaone_moe`, LG AI Research; transformers modular_exaone_moe.py
-- @ 02e8340b): EXAONE 4.0's attention (Exaone4Attention: per-head Q/K
-- norms, the window on the sliding layers, no RoPE on the full layers when
-- there is a window) in OLMoE's pre-norm layer (OlmoeDecoderLayer: two
-- norms, not EXAONE 4.0's reordered ones); the MLP a DeepSeek-V3 MoE block
-- (num_experts of moe_intermediate_size, num_shared_experts shared ones,
-- the sigmoid router with e_score_correction_bias, group-limited, top-k
-- renormalised when norm_topk_prob, times routed_scaling_factor) on the
-- "sparse" layers of mlp_layer_types (else every layer from
-- first_k_dense_replace on), a dense MLP of intermediate_size on the others.
-- The checkpoint's MTP weights (mtp.*) are skipped by transformers: not
-- counted; per-layer swiglu_limits are noted.
function builders.exaone_moe(_, cfg, file, notes)
  local c = class_defaults(cfg, M.EXAONE_MOE_DEFAULTS)
  local r = reader(c, file)
  local m = builders.exaone4(r, c, file, notes)
  m.reordered_norm = nil
  shared_experts_block(m, r, c, file)
  local first = count(c, "first_k_dense_replace", 0, file)
  if is_null(c.mlp_layer_types) and first >= m.num_layers then
    util.fail(file, "first_k_dense_replace", "no layer would have experts (num_hidden_layers = " ..
      m.num_layers .. ")", first)
  end
  mlp_layer_types_dense(m, c, file, first, false, "ExaoneMoeConfig")
  swiglu_limits_note(notes, c, file)
  m.moe_router_bias = true
  return deepseek_router(m, r, c, file, true, "noaux_tc")
end

--- HYV3Config's defaults (transformers configuration_hy_v3.py @ fd9688a1)
-- for the keys a `hy_v3` config may leave out: Hy3's own shapes.
M.HY_V3_DEFAULTS = {
  vocab_size = 120832, hidden_size = 4096, intermediate_size = 13312, num_hidden_layers = 80,
  num_attention_heads = 64, num_key_value_heads = 8, head_dim = 128, hidden_act = "silu",
  tie_word_embeddings = false, attention_bias = false, mlp_bias = false, num_experts = 192,
  num_experts_per_tok = 8, num_shared_experts = 1, moe_intermediate_size = 1536, router_scaling_factor = 2.826,
}
--- The config.json key of each MoE model field of a `hy_v3` config, for
-- the core's errors.
M.HY_V3_CONFIG_KEYS = { num_experts = "num_experts", experts_per_token = "num_experts_per_tok",
                        moe_ffn_hidden_size = "moe_intermediate_size",
                        shared_expert_ffn_hidden_size = "num_shared_experts", mtp_layers = "num_nextn_predict_layers" }
--- Keys HYV3Config (a strict dataclass) holds as int or float, or that
-- HYV3MoE computes with: null is refused, not read as the default.
M.HY_V3_NOT_NULL = { "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                     "num_key_value_heads", "head_dim", "num_experts", "num_experts_per_tok", "num_shared_experts",
                     "moe_intermediate_size", "router_scaling_factor", "rms_norm_eps", "max_position_embeddings" }

--- The keys deepseek_router reads.
M.DEEPSEEK_ROUTER_KEYS = { "n_group", "topk_group", "aux_loss_alpha", "seq_aux", "scoring_func", "topk_method",
                           "routed_scaling_factor", "norm_topk_prob" }

-- Config copy c without the keys of deepseek_router that a router read
-- through it does not have (all but those of `keep`, a set): a stray one
-- then changes nothing, as transformers ignores it too (Hy3's
-- HYV3TopKRouter has no groups and no aux loss; Sarvam 30B's
-- SarvamMoeTopkRouter reads groups, norm_topk_prob and the scaling only).
local function strip_deepseek_router_keys(c, keep)
  for _, k in ipairs(M.DEEPSEEK_ROUTER_KEYS) do
    if not (keep and keep[k]) then c[k] = nil end
  end
end
--- HYV3Config.default_theta: the RoPE base when the config gives none.
M.HY_V3_DEFAULT_THETA = 11158840.0
--- HYV3Config's dense layers when `mlp_layer_types` is absent: the first
-- (["dense"] + ["sparse"] * (num_hidden_layers - 1), its __post_init__).
M.HY_V3_DENSE_DEFAULT = 1

--- Keys of Hy3's config.json that transformers' classes do not read but
-- hard-wire (modular_hy_v3.py @ 3c2ba330; Megatron-Bridge hy_v3_bridge.py
-- @ 067f987d sets the same): the value they implement and what another
-- would be.  A config with another value is refused.
M.HY_V3_FIXED = {
  { "qk_norm", true, "attention without Q/K norms (HYV3Attention, ApertusAttention, always has them)" },
  { "moe_router_use_sigmoid", true, "a router without sigmoid scores (HYV3TopKRouter)" },
  { "moe_router_enable_expert_bias", true, "a sigmoid router without the expert score bias (HYV3MoE)" },
  { "route_norm", true, "top-k weights that are not renormalised (HYV3TopKRouter always divides by their sum)" },
  { "attention_bias", false, "attention biases (Megatron-Bridge's provider sets add_qkv_bias false)" },
  { "mlp_bias", false, "MLP biases (Megatron-Bridge's provider sets add_bias_linear false)" },
}

--- Builds the model table of a `hy_v3` config (Tencent Hy3, Hy3-preview;
-- transformers modular_hy_v3.py @ 3c2ba330: HYV3Attention = ApertusAttention,
-- HYV3TopKRouter, HYV3MoE, HYV3DecoderLayer; Megatron-Bridge
-- hy_v3/hy_v3_bridge.py @ 067f987d and NeMo AutoModel
-- components/models/hy_v3 @ 36044ad3 build the same): GQA of head_dim
-- without biases, per-head Q/K RMSNorms, RoPE on every dimension; the
-- "sparse" layers of mlp_layer_types (default every layer but the first)
-- num_experts SwiGLU experts of moe_intermediate_size (legacy alias
-- expert_hidden_dim) and num_shared_experts shared ones of the same width
-- (one HYV3MLP of their sum), a router h x E without bias scoring with a
-- sigmoid plus the e_score_correction_bias (E) it selects with, the top-k
-- weights renormalised and times router_scaling_factor; a dense MLP of
-- intermediate_size on the others.  num_nextn_predict_layers MTP modules
-- (the checkpoint's layer num_hidden_layers, which transformers skips and
-- Megatron-Bridge maps to mtp_num_layers) are counted apart, as
-- DeepSeek-V3's, without embedding or output layer of their own.  enable_lm_head_fp32, enable_attention_fp32_softmax and
-- enable_moe_fp32_combine are read by neither Megatron-Bridge nor
-- AutoModel: a note.
-- @tparam table _ the reader of the raw config (unused: read with the defaults)
-- @tparam table cfg the decoded config.json
-- @tparam string file for errors
-- @tparam table notes the import's notes
-- @tparam table extra the builder's extras (config_keys)
-- @treturn table model table
-- @raise `<file>: <key>: <problem> (got <value>)`; NotImplemented for a
--   value of M.HY_V3_FIXED the classes do not implement
function builders.hy_v3(_, cfg, file, notes, extra)
  refuse_nulls(cfg, M.HY_V3_NOT_NULL, file, "HYV3Config")
  local c = class_defaults(with_aliases(cfg, { num_local_experts = "num_experts" }), M.HY_V3_DEFAULTS)
  nonneg(c, "router_scaling_factor", file)
  if count(c, "num_shared_experts", 0, file) == 0 then
    not_modelled(file, "num_shared_experts", "no shared expert: transformers' HYV3MoE then builds " ..
      "HYV3MLP(intermediate_size = 0), which falls back to intermediate_size, while Megatron-Bridge builds none",
      c.num_shared_experts)
  end
  -- DeepSeek-V3's router under its names (deepseek_router): renormalised
  -- (route_norm, held true below), scaled by router_scaling_factor; the
  -- DeepSeek keys HYV3TopKRouter has no use for are not read
  strip_deepseek_router_keys(c)
  c.routed_scaling_factor, c.norm_topk_prob = c.router_scaling_factor, true
  extra.config_keys = M.HY_V3_CONFIG_KEYS
  local r = reader(c, file)
  refuse_unfixed(cfg, file, M.HY_V3_FIXED)
  local m = llama_like(r, c, file, {})
  m.qk_norm = true
  m.rope_theta = M.HY_V3_DEFAULT_THETA -- numerics keeps a config's own
  shared_experts_block(m, r, c, file)
  local alias = c.expert_hidden_dim
  if not is_null(alias) and alias ~= m.moe_ffn_hidden_size then
    util.fail(file, "expert_hidden_dim", "expected moe_intermediate_size = " .. m.moe_ffn_hidden_size ..
      " (its legacy alias; Megatron-Bridge writes both alike)", alias)
  end
  mlp_layer_types_dense(m, c, file, M.HY_V3_DENSE_DEFAULT, true, "HYV3Config")
  local mtp = count(c, "num_nextn_predict_layers", 0, file)
  -- the checkpoint's MTP layer holds no embedding or output layer of its
  -- own (Megatron-Bridge maps enorm, hnorm, eh_proj, final_layernorm and
  -- the decoder layer only): the model's are shared
  if mtp > 0 then m.mtp_layers, m.mtp_shared_embeddings = mtp, true end
  local fp32 = {}
  for _, k in ipairs({ "enable_lm_head_fp32", "enable_attention_fp32_softmax", "enable_moe_fp32_combine" }) do
    if c[k] == true then fp32[#fp32 + 1] = k end
  end
  if #fp32 > 0 then
    note(notes, file, "%s: read by neither Megatron-Bridge nor NeMo AutoModel (transformers reads only " ..
      "enable_moe_fp32_combine, an element-wise add): the logits and the softmax are priced in the training " ..
      "dtype", util.join(fp32))
  end
  m.moe_router_bias = true
  return deepseek_router(m, r, c, file, true, "noaux_tc")
end

--- SarvamMoeConfig's defaults (transformers configuration_sarvam_moe.py @
-- 0684546d, documented as sarvamai/sarvam-30b's) for the keys a
-- `sarvam_moe` config may leave out; head_dim then hidden_size /
-- num_attention_heads (its __post_init__).
M.SARVAM_MOE_DEFAULTS = {
  vocab_size = 262144, hidden_size = 4096, intermediate_size = 8192, moe_intermediate_size = 1024,
  num_hidden_layers = 19, num_attention_heads = 64, num_key_value_heads = 4, hidden_act = "silu",
  tie_word_embeddings = false, attention_bias = false, num_experts = 128, num_shared_experts = 1,
  num_experts_per_tok = 6, n_group = 1, topk_group = 1, first_k_dense_replace = 1, norm_topk_prob = true,
  routed_scaling_factor = 2.5, router_aux_loss_coef = 0.001,
}

--- SarvamMoeConfig's attribute_map (old name -> name).
M.SARVAM_MOE_ALIASES = { num_local_experts = "num_experts", n_routed_experts = "num_experts",
                         n_shared_experts = "num_shared_experts" }

--- Keys of Sarvam's remote-code configuration_sarvam_moe.py (the Hub
-- repository's auto_map) that transformers' SarvamMoe classes do not read
-- but hard-wire: the value they implement, what another would be.
M.SARVAM_MOE_FIXED = {
  { "use_qk_norm", true, "attention without Q/K norms (SarvamMoeAttention, Qwen3Attention, always has them)" },
  { "moe_router_enable_expert_bias", true,
    "a router without the expert score bias (SarvamMoeTopkRouter always adds it)" },
  { "use_qkv_bias", false, "the remote code's QKV biases (transformers' SarvamMoe reads attention_bias)" },
  { "use_bias", false, "the remote code's linear biases (transformers' SarvamMoe has none)" },
}

--- The config.json key of each MoE model field of a `sarvam_moe` config.
M.SARVAM_MOE_CONFIG_KEYS = { num_experts = "num_experts", experts_per_token = "num_experts_per_tok",
                             moe_ffn_hidden_size = "moe_intermediate_size",
                             shared_expert_ffn_hidden_size = "num_shared_experts" }
--- Keys SarvamMoeConfig (a strict dataclass) holds as int, float or bool:
-- null is refused, not read as the default (head_dim may be null).
M.SARVAM_MOE_NOT_NULL = { "vocab_size", "hidden_size", "intermediate_size", "moe_intermediate_size",
                          "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "num_experts",
                          "num_shared_experts", "num_experts_per_tok", "n_group", "topk_group",
                          "first_k_dense_replace", "norm_topk_prob", "routed_scaling_factor", "rms_norm_eps" }

--- Builds the model table of a `sarvam_moe` config (Sarvam 30B; transformers
-- modular_sarvam_moe.py @ 0684546d: SarvamMoeAttention = Qwen3Attention,
-- SarvamMoeTopkRouter, SarvamMoeSparseMoeBlock, SarvamMoeDecoderLayer;
-- Megatron-Bridge sarvam/sarvam_moe_bridge.py @ 067f987d builds the same):
-- q, k, v, o with attention_bias biases, per-head Q/K RMSNorms, RoPE on
-- every dimension; layers from first_k_dense_replace on num_experts
-- SwiGLU experts of moe_intermediate_size and num_shared_experts shared ones
-- of the same width (one MLP of their sum), a router h x E without bias in
-- fp32 scoring with a sigmoid plus the e_score_correction_bias (E) it
-- selects with, group-limited (n_group, topk_group: DeepSeek-V3's top-2
-- group scores), the top-k weights renormalised when norm_topk_prob and
-- times routed_scaling_factor; a dense MLP of intermediate_size before.
-- The load-balancing loss (router_aux_loss_coef) is computed only with
-- output_router_logits (MixtralForCausalLM).
-- @tparam table _ the reader of the raw config (unused: read with the defaults)
-- @tparam table cfg the decoded config.json
-- @tparam string file for errors
-- @tparam table notes the import's notes (unused)
-- @tparam table extra the builder's extras (config_keys)
-- @treturn table model table
-- @raise `<file>: <key>: <problem> (got <value>)`; NotImplemented for a
--   value of M.SARVAM_MOE_FIXED the classes do not implement
function builders.sarvam_moe(_, cfg, file, _, extra)
  refuse_unfixed(cfg, file, M.SARVAM_MOE_FIXED)
  refuse_nulls(cfg, M.SARVAM_MOE_NOT_NULL, file, "SarvamMoeConfig")
  local c = with_aliases(cfg, M.SARVAM_MOE_ALIASES)
  strip_deepseek_router_keys(c, { n_group = true, topk_group = true, norm_topk_prob = true,
                                  routed_scaling_factor = true })
  c = class_defaults(c, M.SARVAM_MOE_DEFAULTS)
  local r = reader(c, file)
  local m = llama_like(r, c, file, {})
  local ab = r.bool("attention_bias", false)
  m.qkv_bias, m.attn_out_bias, m.qk_norm = ab, ab, true
  shared_experts_block(m, r, c, file)
  first_dense(m, c, file)
  m.moe_router_bias = true
  deepseek_router(m, r, c, file, true, "noaux_tc")
  if r.bool("output_router_logits", false) then aux_loss(m, c, file, "router_aux_loss_coef") end
  extra.config_keys = M.SARVAM_MOE_CONFIG_KEYS
  return m
end

--- SarvamMLAConfig's defaults (transformers configuration_sarvam_mla.py @
-- 0f5d73df, documented as sarvamai/sarvam-105b's; a DeepseekV3Config)
-- for the keys a `sarvam_mla` config may leave out.
M.SARVAM_MLA_DEFAULTS = {
  vocab_size = 262144, hidden_size = 4096, intermediate_size = 16384, moe_intermediate_size = 2048,
  num_hidden_layers = 32, num_attention_heads = 64, n_shared_experts = 1, n_routed_experts = 128,
  routed_scaling_factor = 2.5, kv_lora_rank = 512, qk_rope_head_dim = 64, v_head_dim = 128,
  qk_nope_head_dim = 128, n_group = 16, topk_group = 2, num_experts_per_tok = 8, first_k_dense_replace = 1,
  norm_topk_prob = true, hidden_act = "silu", tie_word_embeddings = false, attention_bias = false,
  topk_method = "noaux_tc",
}

-- A copy of rope settings `rs` whose type "deepseek_yarn" (Sarvam 105B's
-- Hub config) is YaRN's, as SarvamMLAConfig.convert_rope_params_to_dict
-- renames it; others as they are.
local function deepseek_yarn_as_yarn(rs)
  if type(rs) ~= "table" or (rs.type ~= "deepseek_yarn" and rs.rope_type ~= "deepseek_yarn") then return rs end
  local t = {}
  for k, v in pairs(rs) do t[k] = v end
  if t.type == "deepseek_yarn" then t.type = "yarn" end
  if t.rope_type == "deepseek_yarn" then t.rope_type = "yarn" end
  return t
end

--- Builds the model table of a `sarvam_mla` config (Sarvam 105B;
-- transformers modular_sarvam_mla.py @ 29686707: every class DeepSeek-V3's,
-- SarvamMLAConfig a DeepseekV3Config with Sarvam's defaults; Megatron-Bridge
-- sarvam/sarvam_mla_bridge.py @ 067f987d): DeepSeek-V3's multi-head latent
-- attention, experts and noaux_tc router (builders.deepseek_v3), the Hub
-- file's num_experts / num_shared_experts read as n_routed_experts /
-- n_shared_experts and its head_dim (kv_lora_rank + qk_rope_head_dim, for
-- vLLM) dropped, as SarvamMLAConfig does; RoPE "deepseek_yarn" is YaRN.
-- @tparam table _ the reader of the raw config (unused: read with the defaults)
-- @tparam table cfg the decoded config.json
-- @tparam string file for errors
-- @tparam table notes the import's notes
-- @tparam table extra the builder's extras (own_numerics)
-- @treturn table model table
-- @raise `<file>: <key>: <problem> (got <value>)`
function builders.sarvam_mla(_, cfg, file, notes, extra)
  local c = with_aliases(cfg, { num_experts = "n_routed_experts", num_shared_experts = "n_shared_experts" })
  if not is_null(c.head_dim) then
    note(notes, file, "head_dim %s (kv_lora_rank + qk_rope_head_dim, for vLLM's MLA) is not the heads' width: " ..
      "SarvamMLAConfig drops it, and the heads are qk_nope_head_dim + qk_rope_head_dim wide", util.describe(c.head_dim))
  end
  c.head_dim, c.q_head_dim = nil, nil
  c = class_defaults(c, M.SARVAM_MLA_DEFAULTS)
  c.rope_scaling, c.rope_parameters = deepseek_yarn_as_yarn(c.rope_scaling), deepseek_yarn_as_yarn(c.rope_parameters)
  extra.own_numerics = true
  return numerics(deepseek(reader(c, file), c, file, true), c, file)
end

--- DeepseekV32Config's defaults (transformers modular_deepseek_v32.py @
-- 01f8fa55: DeepSeek-V3's shape on Glm4MoeLiteConfig, every layer DSA)
-- for the keys a `deepseek_v32` config may leave out; the router is
-- Glm4MoeLite's noaux_tc (sigmoid scores with the expert score bias).
M.DEEPSEEK_V32_DEFAULTS = {
  vocab_size = 129280, hidden_size = 7168, intermediate_size = 18432, moe_intermediate_size = 2048,
  num_hidden_layers = 61, num_attention_heads = 128, num_key_value_heads = 128, n_shared_experts = 1,
  n_routed_experts = 256, routed_scaling_factor = 2.5, kv_lora_rank = 512, q_lora_rank = 1536,
  qk_rope_head_dim = 64, v_head_dim = 128, qk_nope_head_dim = 128, n_group = 8, topk_group = 4,
  num_experts_per_tok = 8, norm_topk_prob = true, max_position_embeddings = 163840, rms_norm_eps = 1e-6,
  tie_word_embeddings = false, attention_bias = false, first_k_dense_replace = 3, topk_method = "noaux_tc",
  index_topk = 2048, index_head_dim = 128, index_n_heads = 64,
}

--- GlmMoeDsaConfig's defaults (transformers configuration_glm_moe_dsa.py
-- @ 008e5743; GLM-5's shape) for the keys a `glm_moe_dsa` config may leave
-- out.
M.GLM_MOE_DSA_DEFAULTS = {
  vocab_size = 154880, hidden_size = 6144, intermediate_size = 12288, moe_intermediate_size = 2048,
  num_hidden_layers = 78, num_attention_heads = 64, num_key_value_heads = 64, n_shared_experts = 1,
  n_routed_experts = 256, routed_scaling_factor = 2.5, kv_lora_rank = 512, q_lora_rank = 2048,
  qk_rope_head_dim = 64, v_head_dim = 256, qk_nope_head_dim = 192, n_group = 1, topk_group = 1,
  num_experts_per_tok = 8, norm_topk_prob = true, max_position_embeddings = 202752, rms_norm_eps = 1e-5,
  tie_word_embeddings = false, attention_bias = false, first_k_dense_replace = 3, topk_method = "noaux_tc",
  index_topk = 2048, index_head_dim = 128, index_n_heads = 32,
}

--- Whether the 0-based layer i computes its own top-k under cross-layer
-- sharing of index_topk_freq = freq after index_skip_topk_offset = offset:
-- Megatron-LM d98e8a64 megatron/core/transformer/experimental_attention_
-- variant/dsa.py is_dsa_skip_topk_layer on the 1-based layer i + 1 (vLLM's
-- GLM-5.2 schedule, max(i - offset + 1, 0) % freq == 0, is the same).
-- @tparam integer i 0-based layer
-- @tparam integer freq layers per computing layer (>= 1)
-- @tparam integer offset index_skip_topk_offset (>= 0)
-- @treturn boolean
function M.dsa_computes_topk(i, freq, offset)
  return math.max(i + 1 - math.max(offset, 1), 0) % freq == 0
end

-- GlmMoeDsaConfig's cross-layer top-k sharing (GLM-5.2, IndexShare): a
-- "shared" layer of indexer_types (an S of index_topk_pattern) builds no
-- indexer and reuses the last computing layer's top-k (vLLM serves it
-- without those layers' indexer weights).  Megatron-Core expresses it as
-- index_topk_freq and index_skip_topk_offset only, so both must be given
-- and any per-layer list must be that schedule.  Sets m.index_topk_freq
-- and m.index_skip_topk_offset (src/core/dsa.c prices the mean layer).
local function topk_sharing(m, cfg, file)
  local types, pattern = cfg.indexer_types, cfg.index_topk_pattern
  local L = m.num_layers
  if not is_null(pattern) then
    if type(pattern) ~= "string" or #pattern ~= L or pattern:find("[^FS]") then
      util.fail(file, "index_topk_pattern", ("expected %d letters F (computes its top-k) or S (shares)"):format(L), pattern)
    end
    local list = {}
    for i = 1, L do list[i] = pattern:sub(i, i) == "S" and "shared" or "full" end
    types = list
  elseif not is_null(types) then
    if type(types) ~= "table" or #types ~= L then
      util.fail(file, "indexer_types", ("expected a list of %d entries \"full\" or \"shared\""):format(L), types)
    end
    for i, v in ipairs(types) do
      if v ~= "full" and v ~= "shared" then util.fail(file, ("indexer_types[%d]"):format(i - 1), 'expected "full" or "shared"', v) end
    end
  end
  local shares = count(cfg, "index_topk_freq", 1, file) > 1
  for _, v in ipairs(type(types) == "table" and types or {}) do shares = shares or v == "shared" end
  if not shares then return m end
  for _, k in ipairs({ "index_topk_freq", "index_skip_topk_offset" }) do
    if is_null(cfg[k]) then
      util.fail(file, k, "required with cross-layer top-k sharing (Megatron-Core's --dsa-indexer-topk-freq and " ..
        "--dsa-indexer-skip-topk-offset express the schedule)", cfg[k])
    end
  end
  local freq = count(cfg, "index_topk_freq", 1, file)
  local offset = config_int(cfg.index_skip_topk_offset, 0, file, "index_skip_topk_offset")
  if freq < 2 then util.fail(file, "index_topk_freq", "expected >= 2 when layers share their top-k", cfg.index_topk_freq) end
  for i, v in ipairs(type(types) == "table" and types or {}) do
    if (v == "full") ~= M.dsa_computes_topk(i - 1, freq, offset) then
      error(("NotImplemented: %s: indexer_types[%d]: %s differs from the schedule of index_topk_freq = %d and " ..
        "index_skip_topk_offset = %d, the only one Megatron-Core expresses (got %s)"):format(file, i - 1,
        util.describe(v), freq, offset, util.describe(v)), 0)
    end
  end
  m.index_topk_freq, m.index_skip_topk_offset = freq, offset
  return m
end

-- DeepSeek Sparse Attention on a DeepSeek-V3-like model (DeepseekV32Config,
-- GlmMoeDsaConfig): DeepSeek-V3's MLA and MoE read with the class's
-- defaults, the dense layers from mlp_layer_types when given (else the
-- first first_k_dense_replace), and the indexer's index_n_heads,
-- index_head_dim, index_topk (src/core/dsa.c prices them).
local function dsa_model(cfg, file, defaults)
  local t = with_defaults(cfg, defaults)
  local r = reader(t, file)
  local m = deepseek(r, t, file, true)
  if not is_null(t.mlp_layer_types) then glm4_moe_lite_dense(m, t, file) end
  m.index_n_heads = r.int("index_n_heads")
  m.index_head_dim = r.int("index_head_dim")
  m.index_topk = r.int("index_topk")
  if r.bool("indexer_rope_interleave", false) then m.index_rope_interleave = true end
  return numerics(topk_sharing(m, t, file), t, file)
end

--- Builds the model table of a `deepseek_v32` config (DeepSeek-V3.2;
-- transformers modular_deepseek_v32.py @ 01f8fa55 DeepseekV32Attention:
-- DeepSeek-V3's MLA with a DeepseekV32Indexer per layer).
function builders.deepseek_v32(_, cfg, file) return dsa_model(cfg, file, M.DEEPSEEK_V32_DEFAULTS) end

--- Builds the model table of a `glm_moe_dsa` config (GLM-5; transformers
-- modular_glm_moe_dsa.py: GlmMoeDsaIndexer is DeepseekV32Indexer, the
-- layers DeepSeek-V3.2's).
function builders.glm_moe_dsa(_, cfg, file) return dsa_model(cfg, file, M.GLM_MOE_DSA_DEFAULTS) end

--- DbrxConfig's defaults for keys a config.json may leave out
-- (transformers configuration_dbrx.py DbrxAttentionConfig, DbrxFFNConfig).
M.DBRX_DEFAULTS = { kv_n_heads = 1, ffn_hidden_size = 3584, moe_num_experts = 4, moe_top_k = 1,
                    max_seq_len = 2048, moe_normalize_expert_weights = 1 }

-- DBRX's routing weights: divided by their L_p norm, p =
-- moe_normalize_expert_weights (null: not divided).  p = 1 is the top-k
-- renormalisation; another p has no router field (noted).
local function dbrx_router(m, ffn, file, notes)
  local p = ffn.moe_normalize_expert_weights
  if p == nil then p = M.DBRX_DEFAULTS.moe_normalize_expert_weights end
  if p == cjson.null then m.moe_router_pre_softmax = true return m end
  if type(p) ~= "number" or not (p > 0 and p < math.huge) then
    util.fail(file, "moe_normalize_expert_weights", "expected a finite number > 0 or null", p)
  end
  if p ~= 1 then
    note(notes, file, "moe_normalize_expert_weights = %s (an L_%s norm of the top-k weights) has no " ..
      "router field; the launchers write Megatron's renormalisation", util.describe(p), util.describe(p))
  end
  return m
end

-- DBRX (transformers modeling_dbrx.py DbrxAttention, DbrxNormAttentionNorm,
-- DbrxRouter, DbrxExpertGLU): d_model, n_heads, n_layers, max_seq_len;
-- attn_config {kv_n_heads, clip_qkv, rope_theta}; ffn_config
-- {ffn_hidden_size, moe_num_experts, moe_top_k, moe_jitter_eps,
-- moe_normalize_expert_weights}.  Wqkv h x (h + 2 kv d) and out_proj
-- without biases, LayerNorms without bias (nn.LayerNorm(d_model,
-- bias=False)), a router h x E without bias, every layer E gated experts
-- (w1, v1, w2) of ffn_hidden_size, untied lm_head.
function builders.dbrx(r, cfg, file, notes)
  local attn = sub_config(cfg, "attn_config", file, false)
  local ffn = sub_config(cfg, "ffn_config", file, true)
  local ar, fr = reader(attn, file .. ": attn_config"), reader(ffn, file .. ": ffn_config")
  local D = M.DBRX_DEFAULTS
  local m = {
    num_layers = r.int("n_layers"), hidden_size = r.int("d_model"),
    num_attention_heads = r.int("n_heads"),
    num_query_groups = ar.int("kv_n_heads", D.kv_n_heads),
    ffn_hidden_size = fr.int("ffn_hidden_size", D.ffn_hidden_size),
    vocab_size = r.int("vocab_size"),
    max_position_embeddings = r.int("max_seq_len", D.max_seq_len),
    norms_per_layer = 2, mlp = "swiglu", norm = "layernorm", position_embedding = "rope",
    norm_bias = false, qkv_bias = false, attn_out_bias = false, mlp_bias = false, qk_norm = false,
    tie_word_embeddings = r.bool("tie_word_embeddings", false),
  }
  m.num_experts = fr.int("moe_num_experts", D.moe_num_experts)
  m.experts_per_token = fr.int("moe_top_k", D.moe_top_k)
  m.moe_ffn_hidden_size = m.ffn_hidden_size
  m.rope_theta = positive(attn, "rope_theta", file .. ": attn_config")
  aux_loss(m, cfg, file, "router_aux_loss_coef")
  if not m.moe_aux_loss_coeff then aux_loss(m, ffn, file .. ": ffn_config", "moe_loss_weight") end
  clip_note(notes, attn, file .. ": attn_config", file)
  local jitter = quoted(ffn, "moe_jitter_eps", file .. ": ffn_config")
  if jitter then
    note(notes, file, "moe_jitter_eps = %s multiplies the router input by noise in training; not priced",
      util.describe(jitter))
  end
  return dbrx_router(m, ffn, file .. ": ffn_config", notes)
end

--- Gemma3TextConfig's defaults (transformers configuration_gemma3.py
-- @ 008f5c8c): the keys a nested `text_config` of Gemma 3's published
-- multimodal configs leaves out.
M.GEMMA3_TEXT_DEFAULTS = {
  vocab_size = 262208, hidden_size = 2304, intermediate_size = 9216,
  num_hidden_layers = 26, num_attention_heads = 8, num_key_value_heads = 4,
  head_dim = 256, max_position_embeddings = 131072, rms_norm_eps = 1e-6,
  rope_theta = 1000000.0, rope_local_base_freq = 10000.0, sliding_window = 4096,
  sliding_window_pattern = 6,
  tie_word_embeddings = true,
}

-- Gemma 3's text model (transformers modeling_gemma3.py Gemma3Attention,
-- Gemma3DecoderLayer, Gemma3MLP): Gemma-2's layer (4 RMSNorms, GeGLU
-- with 3 matrices, head_dim, tied embeddings) plus per-head q_norm and
-- k_norm; the window on the sliding_attention layers of layer_types,
-- else on every layer but each sliding_window_pattern-th.
local function gemma3_text(cfg, file, notes)
  -- the shape keys taken from the defaults are said: a `text_config` of
  -- {} or null is Gemma 3 4B's text model, which should not pass unseen
  local absent = {}
  for _, k in ipairs({ "num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads",
                       "num_key_value_heads", "head_dim", "vocab_size" }) do
    if is_null(cfg[k]) then absent[#absent + 1] = ("%s %s"):format(k, util.describe(M.GEMMA3_TEXT_DEFAULTS[k])) end
  end
  if #absent > 0 then
    note(notes, file, "the text model's %s taken from transformers' Gemma3TextConfig defaults (not in the config)",
      table.concat(absent, ", "))
  end
  local t = with_defaults(cfg, M.GEMMA3_TEXT_DEFAULTS)
  local r = reader(t, file)
  local m = llama_like(r, t, file, { tied = true, norms_per_layer = 4, own_activation = true })
  local ab = r.bool("attention_bias", false)
  m.qkv_bias, m.attn_out_bias = ab, ab
  m.qk_norm = true
  m.norm_zero_centered = true -- Gemma3RMSNorm: x * (1 + w) (builders.gemma's comment)
  local L = m.num_layers
  local n = sliding_layer_count(t, L, file) or L - L // r.int("sliding_window_pattern")
  window_on(m, r, n)
  set_window_period(m, t, r.int("sliding_window_pattern"))
  m.glu_activation = M.gemma_activation(t, file)
  softcapping(m, t, file, notes, {})
  local local_base = quoted(t, "rope_local_base_freq", file)
  if local_base and n > 0 then
    note(notes, file, "the windowed layers' RoPE base rope_local_base_freq = %s is not carried (rope_theta " ..
      "is the global layers'); it changes no estimate", util.describe(local_base))
  end
  return numerics(m, t, file)
end

builders.gemma3_text = function(r, cfg, file, notes) return gemma3_text(cfg, file, notes) end

--- SiglipVisionConfig's defaults (transformers configuration_siglip.py),
-- for the vision tower of a Gemma 3 multimodal config.
M.SIGLIP_DEFAULTS = { hidden_size = 768, intermediate_size = 3072, num_hidden_layers = 12,
                      num_channels = 3, image_size = 224, patch_size = 16 }

--- Parameters of Gemma 3's vision tower and projector, which apsearch
-- counts apart (it trains the text model): SigLIP (modeling_siglip.py
-- SiglipVisionEmbeddings conv C p^2 h + h and (image / p)^2 h positions;
-- per SiglipEncoderLayer q, k, v, out h^2 + h each, two LayerNorms 2 h
-- each, fc1 h f + f, fc2 f h + h; post_layernorm 2 h; with
-- vision_use_head (absent: true) SiglipMultiheadAttentionPoolingHead's
-- probe h, attention 4 h^2 + 4 h, LayerNorm 2 h and MLP) and
-- Gemma3MultiModalProjector (mm_input_projection_weight h x h_text,
-- mm_soft_emb_norm h).
-- @tparam table vc the decoded `vision_config`
-- @tparam integer text_h the text model's hidden_size
-- @tparam string file for errors
-- @treturn integer the vision tower's parameters
-- @treturn integer the projector's
function M.gemma3_vision_params(vc, text_h, file)
  local r = reader(with_defaults(vc, M.SIGLIP_DEFAULTS), file)
  local h, f, p = r.int("hidden_size"), r.int("intermediate_size"), r.int("patch_size")
  local side = r.int("image_size") // p
  local mlp = 2 * h * f + f + h
  local layer = 4 * (h * h + h) + 2 * (2 * h) + mlp
  local tower = r.int("num_channels") * p * p * h + h + side * side * h +
                r.int("num_hidden_layers") * layer + 2 * h
  if r.bool("vision_use_head", true) then
    tower = tower + h + 4 * (h * h + h) + 2 * h + mlp
  end
  return tower, h * text_h + h
end

-- Gemma 3 multimodal (Gemma3ForConditionalGeneration): the text model of
-- `text_config` (absent: every default), the vision tower of
-- `vision_config` counted apart (info.vision_params) and said so.
function builders.gemma3(r, cfg, file, notes, info)
  local where = file .. ": text_config"
  local m = gemma3_text(text_config(cfg, file, "gemma3_text"), where, notes)
  local tower, proj = M.gemma3_vision_params(sub_config(cfg, "vision_config", file, false),
    m.hidden_size, file .. ": vision_config")
  info.vision_params = tower + proj
  note(notes, file, "the vision tower (SigLIP, %d parameters) and the multimodal projector (%d) are " ..
    "counted apart, not in total or active and not estimated: apsearch trains the text model",
    tower, proj)
  return m
end

--- Gemma4TextConfig's defaults (transformers configuration_gemma4.py
-- @ 351f643a): the keys a `gemma4_text` config or Gemma 4's nested
-- `text_config` may leave out.
M.GEMMA4_TEXT_DEFAULTS = {
  vocab_size = 262144, hidden_size = 2304, intermediate_size = 9216, num_hidden_layers = 30,
  num_attention_heads = 8, num_key_value_heads = 4, head_dim = 256, max_position_embeddings = 131072,
  rms_norm_eps = 1e-6, sliding_window = 512, hidden_size_per_layer_input = 256, global_head_dim = 512,
  num_kv_shared_layers = 0, tie_word_embeddings = true,
}

--- Gemma4TextConfig.__post_init__'s layers when `layer_types` is absent:
-- layer i (1-based) has full attention when i % 6 == 0, the others the
-- window.
M.GEMMA4_WINDOW_PATTERN = 6

--- RMSNorms with a weight in one Gemma4TextDecoderLayer: input,
-- post-attention, pre- and post-feedforward; the MoE block adds
-- post_feedforward_layernorm_1, post_feedforward_layernorm_2 and
-- pre_feedforward_layernorm_2.
M.GEMMA4_NORMS, M.GEMMA4_MOE_NORMS = 4, 3

--- Gemma4TextConfig.__post_init__'s `rope_parameters` when absent, and
-- the RoPE types Gemma4TextRotaryEmbedding computes per layer type
-- (default; proportional on the full-attention layers, over
-- global_head_dim): both only rotate Q and K, which no estimate prices
-- apart from the kind of RoPE.
M.GEMMA4_ROPE_DEFAULTS = {
  sliding_attention = { rope_type = "default", rope_theta = 10000.0 },
  full_attention = { rope_type = "proportional", partial_rotary_factor = 0.25, rope_theta = 1000000.0 },
}
M.GEMMA4_ROPE_TYPES = { sliding_attention = { default = true },
                        full_attention = { default = true, proportional = true } }

--- The widest attention head FlashAttention and TransformerEngine's cuDNN
-- fused attention train on Hopper (apsearch.te_attention: fused_attn.cpp
-- :235 at TransformerEngine v2.2); a wider one falls back to unfused
-- attention there.
M.FUSED_ATTENTION_MAX_HEAD_DIM = 256

--- Config keys of the model fields Gemma 4 names its own way, for the
-- core's errors.
M.GEMMA4_CONFIG_KEYS = {
  num_experts = "num_experts", experts_per_token = "top_k_experts",
  moe_ffn_hidden_size = "moe_intermediate_size", global_head_dim = "global_head_dim",
  global_num_query_groups = "num_global_key_value_heads",
}

-- Gemma 4's layer types as Gemma4TextConfig.__post_init__ leaves them:
-- the config's (validated), else every GEMMA4_WINDOW_PATTERN-th layer
-- full; the last layer full whatever they say (noted when they differ).
local function gemma4_layer_types(t, L, file, notes)
  local types = {}
  if not is_null(t.layer_types) then sliding_layer_count(t, L, file) end
  for i = 1, L do
    types[i] = is_null(t.layer_types) and
      (i % M.GEMMA4_WINDOW_PATTERN == 0 and "full_attention" or "sliding_attention") or t.layer_types[i]
  end
  if types[L] ~= "full_attention" then
    note(notes, file, "the last layer is %s in %s: Gemma4TextConfig makes it full_attention; read so", types[L],
      is_null(t.layer_types) and "the default layer_types" or "layer_types")
    types[L] = "full_attention"
  end
  return types
end

-- Gemma 4's RoPE (rope_parameters, one object per layer type in use):
-- validated, the full-attention layers' rope_theta carried, the rest
-- noted; RoPE only rotates Q and K (element-wise: no estimate reads it).
local function gemma4_rope(m, t, types, file, notes)
  local rp = is_null(t.rope_parameters) and M.GEMMA4_ROPE_DEFAULTS or t.rope_parameters
  if type(rp) ~= "table" or #rp > 0 then util.fail(file, "rope_parameters", "expected an object or null", rp) end
  local used, said = {}, {}
  for i = 1, #types do used[types[i]] = true end
  for _, kind in ipairs(M.ROPE_LAYER_TYPES) do
    local p, key = rp[kind], "rope_parameters." .. kind
    if used[kind] then
      if type(p) ~= "table" or #p > 0 then util.fail(file, key, "expected an object", p) end
      local rt = is_null(p.rope_type) and "default" or p.rope_type
      if not M.GEMMA4_ROPE_TYPES[kind][rt] then
        not_modelled(file, key .. ".rope_type", "apsearch reads Gemma 4's " .. kind .. " layers with RoPE " ..
          util.join(util.sorted_keys(M.GEMMA4_ROPE_TYPES[kind])) .. " only", p.rope_type)
      end
      local theta = positive(p, "rope_theta", file .. ": " .. key)
      if not theta then util.fail(file, key .. ".rope_theta", "required key is missing", nil) end
      local frac = M.rotary_fraction(p, file .. ": " .. key)
      said[#said + 1] = ("%s %s, rope_theta %s%s"):format(kind, rt, util.describe(theta),
        frac and (", partial_rotary_factor " .. util.describe(frac)) or "")
      if kind == "full_attention" then m.rope_theta = theta end
    end
  end
  note(notes, file, "RoPE per layer type (%s) rotates Q and K only and changes no estimate; the model " ..
    "carries the full-attention layers' rope_theta", table.concat(said, "; "))
end

-- Gemma 4's attention (Gemma4TextAttention): per-head q_norm and k_norm
-- (head_dim weights each), a weightless v_norm, attention_bias on q, k,
-- v and o; on the full-attention layers global_head_dim (0: head_dim)
-- and, with attention_k_eq_v, num_global_key_value_heads KV heads whose
-- K projection is V's too (no v_proj).
local function gemma4_attention(m, r, t, file, notes)
  m.qk_norm = true
  local ab = r.bool("attention_bias", false)
  m.qkv_bias, m.attn_out_bias = ab, ab
  local gd = config_int(t.global_head_dim, 0, file, "global_head_dim")
  if gd > 0 and gd ~= m.head_dim then m.global_head_dim = gd end
  if gd > M.FUSED_ATTENTION_MAX_HEAD_DIM then
    note(notes, file, "global_head_dim %d is wider than the %d FlashAttention and cuDNN fused attention train " ..
      "(TransformerEngine v2.2's limit, read for Hopper; other parts: your kernels' own): TransformerEngine may run " ..
      "those layers' attention unfused; priced as training.flash_attention says",
      gd, M.FUSED_ATTENTION_MAX_HEAD_DIM)
  end
  if r.bool("attention_k_eq_v", false) then
    m.global_k_eq_v = true
    local g = r.int("num_global_key_value_heads")
    if g ~= m.num_query_groups then m.global_num_query_groups = g end
  elseif r.has("num_global_key_value_heads") then
    r.int("num_global_key_value_heads")
    note(notes, file, "num_global_key_value_heads is read only with attention_k_eq_v (Gemma4TextAttention); ignored")
  end
  note(notes, file, "v_norm (a weightless RMSNorm on V) is element-wise; not priced")
  local bidir = t.use_bidirectional_attention
  if bidir == "all" then
    not_modelled(file, "use_bidirectional_attention", "bidirectional attention on every token (no causal " ..
      "mask, a window of sliding_window // 2 + 1) is not modelled: apsearch trains a causal language model", bidir)
  elseif not is_null(bidir) and bidir ~= "vision" then
    util.fail(file, "use_bidirectional_attention", 'expected "vision", "all" or null', bidir)
  end
end

-- What Gemma 4 has that apsearch does not price: per-layer inputs and
-- KV sharing across layers (refused), and use_double_wide_mlp, which
-- widens only the KV-shared layers' MLPs (Gemma4TextMLP).
local function gemma4_refusals(r, t, file, notes)
  local ple = config_int(t.hidden_size_per_layer_input, 0, file, "hidden_size_per_layer_input")
  if ple > 0 then
    not_modelled(file, "hidden_size_per_layer_input", "Gemma 4's per-layer inputs (a vocab_size_per_layer_input " ..
      "x num_hidden_layers x hidden_size_per_layer_input embedding, its projection and each layer's gate) are " ..
      "not modelled; 0 (none) is", ple)
  end
  if r.has("vocab_size_per_layer_input") then r.int("vocab_size_per_layer_input") end
  local shared = config_int(t.num_kv_shared_layers, 0, file, "num_kv_shared_layers")
  if shared > 0 then
    not_modelled(file, "num_kv_shared_layers", "KV sharing (the last layers reuse an earlier layer's K and V " ..
      "without K/V projections) is not modelled; 0 (none) is", shared)
  end
  if r.bool("use_double_wide_mlp", false) then
    note(notes, file, "use_double_wide_mlp widens only the KV-shared layers' MLPs; there are none")
  end
end

-- Gemma 4's MoE block (enable_moe_block; Gemma4TextRouter,
-- Gemma4TextExperts): beside every layer's dense MLP of
-- intermediate_size, num_experts experts of moe_intermediate_size, the
-- top_k_experts of a softmax over them renormalised and scaled per
-- expert; the outputs summed.  The dense MLP is read as an always-on
-- expert (shared_expert_ffn_hidden_size, as Megatron's shared expert
-- runs beside the routed ones); the router's scale (h) and
-- per_expert_scale (E) as moe_router_scales.
local function gemma4_moe(m, r, file, notes)
  if not r.bool("enable_moe_block", false) then return end
  m.num_experts = r.int("num_experts")
  m.experts_per_token = r.int("top_k_experts")
  m.moe_ffn_hidden_size = r.int("moe_intermediate_size")
  m.shared_expert_ffn_hidden_size = m.ffn_hidden_size
  m.moe_router_scales = true
  m.norms_per_layer = M.GEMMA4_NORMS + M.GEMMA4_MOE_NORMS
  note(notes, file, "the router normalises its input (the residual) with a weightless RMSNorm, element-wise; " ..
    "not priced")
end

-- Gemma 4's text model (transformers modeling_gemma4.py @ c308a309
-- Gemma4TextModel, Gemma4TextDecoderLayer; configuration_gemma4.py
-- @ 351f643a Gemma4TextConfig).  Its numerics are its own (the RoPE per
-- layer type): info.own_numerics.
local function gemma4_text(cfg, file, notes, extra)
  local t = class_defaults(cfg, M.GEMMA4_TEXT_DEFAULTS)
  local r = reader(t, file)
  gemma4_refusals(r, t, file, notes)
  local m = llama_like(r, t, file, { tied = true, norms_per_layer = M.GEMMA4_NORMS, own_activation = true })
  m.glu_activation = M.gemma_activation(t, file)
  gemma4_attention(m, r, t, file, notes)
  local types = gemma4_layer_types(t, m.num_layers, file, notes)
  local n = 0
  for i = 1, #types do n = n + (types[i] == "sliding_attention" and 1 or 0) end
  window_on(m, r, n)
  set_window_period(m, { layer_types = types }, nil)
  gemma4_moe(m, r, file, notes)
  local cap = positive(t, "final_logit_softcapping", file)
  if cap then
    m.final_logit_softcapping = cap
    note(notes, file, "final_logit_softcapping = %s (tanh soft-capping) is element-wise; not priced",
      util.describe(cap))
  end
  local plain = with_defaults({}, t)
  plain.rope_parameters, plain.rope_theta = nil, nil
  numerics(m, plain, file)
  gemma4_rope(m, t, types, file, notes)
  note(notes, file, "layer_scalar (one value per layer, a buffer in the checkpoint) is not a parameter; not counted")
  extra.own_numerics = true
  extra.config_keys = M.GEMMA4_CONFIG_KEYS
  return m
end

builders.gemma4_text = function(r, cfg, file, notes, extra) return gemma4_text(cfg, file, notes, extra) end

--- Gemma4VisionConfig's defaults (configuration_gemma4.py @ 351f643a).
M.GEMMA4_VISION_DEFAULTS = {
  hidden_size = 768, intermediate_size = 3072, num_hidden_layers = 16, num_attention_heads = 12,
  num_key_value_heads = 12, head_dim = 64, patch_size = 16, position_embedding_size = 10240,
}

--- Gemma4VisionPatchEmbedder's input_proj takes RGB patches (3 channels
-- of patch_size^2) and its position_embedding_table has one table per
-- spatial axis (2).
M.GEMMA4_PATCH_CHANNELS, M.GEMMA4_POSITION_AXES = 3, 2

--- Parameters of Gemma 4's vision tower and of its projection into the
-- text model, which apsearch counts apart (it trains the text model;
-- modeling_gemma4.py @ c308a309): Gemma4VisionPatchEmbedder input_proj
-- 3 p^2 h and position_embedding_table 2 x position_embedding_size x h;
-- per Gemma4VisionEncoderLayer q h a d, k and v h k d, o a d h (no
-- biases; Gemma4ClippableLinear's bounds are buffers), q_norm and k_norm
-- d (v_norm has no weight), the gated MLP 3 h f and the same 4 RMSNorms
-- h as a text layer; Gemma4MultimodalEmbedder embedding_projection h x
-- h_text (its norm has no weight).  std_bias and std_scale are buffers.
-- @tparam table vc the decoded `vision_config`
-- @tparam integer text_h the text model's hidden_size
-- @tparam string file for errors
-- @treturn integer the vision tower's parameters
-- @treturn integer the projection's
function M.gemma4_vision_params(vc, text_h, file)
  local r = reader(with_defaults(vc, M.GEMMA4_VISION_DEFAULTS), file)
  local h, f, p = r.int("hidden_size"), r.int("intermediate_size"), r.int("patch_size")
  local a, k, d = r.int("num_attention_heads"), r.int("num_key_value_heads"), r.int("head_dim")
  local layer = 2 * h * a * d + 2 * h * k * d + 2 * d + 3 * h * f + M.GEMMA4_NORMS * h
  local tower = M.GEMMA4_PATCH_CHANNELS * p * p * h +
                M.GEMMA4_POSITION_AXES * r.int("position_embedding_size") * h + r.int("num_hidden_layers") * layer
  return tower, h * text_h
end

-- The config keys of the model fields `keys` names (beside
-- M.CONFIG_KEY's) inside a wrapper's text_config, for the core's errors.
local function text_config_keys(keys)
  local out = {}
  for f, k in pairs(M.CONFIG_KEY) do out[f] = "text_config: " .. k end
  for f, k in pairs(keys) do out[f] = "text_config: " .. k end
  return out
end

-- Gemma 4 multimodal (Gemma4ForConditionalGeneration; Gemma4Config
-- builds Gemma4TextConfig(**text_config), configuration_gemma4.py
-- @ 351f643a): the text model of `text_config` (absent: every default)
-- with the wrapper's tie_word_embeddings where it leaves it out; the
-- vision tower of `vision_config` (null: none) counted apart
-- (info.vision_params); the audio tower said, not counted.
function builders.gemma4(r, cfg, file, notes, info)
  local t = with_defaults(text_config(cfg, file, "gemma4_text"),
    { tie_word_embeddings = r.bool("tie_word_embeddings", true) })
  local m = gemma4_text(t, file .. ": text_config", notes, info)
  info.config_keys = text_config_keys(info.config_keys)
  if not is_null(cfg.vision_config) then
    local tower, proj = M.gemma4_vision_params(sub_config(cfg, "vision_config", file, false), m.hidden_size,
      file .. ": vision_config")
    info.vision_params = tower + proj
    note(notes, file, "the vision tower (%d parameters) and its projection into the text model (%d) are " ..
      "counted apart, not in total or active and not estimated: apsearch trains the text model", tower, proj)
  end
  if not is_null(cfg.audio_config) then
    note(notes, file, "the audio tower (audio_config) is neither modelled nor counted")
  end
  return m
end

--- Llama4TextConfig's defaults (transformers configuration_llama4.py @
-- 008e5743): the keys a `llama4_text` config or Llama 4's nested
-- `text_config` may leave out.  attention_chunk_size (8192) is read apart:
-- null there means no chunking.
M.LLAMA4_TEXT_DEFAULTS = {
  vocab_size = 202048, hidden_size = 5120, intermediate_size = 8192, intermediate_size_mlp = 16384,
  num_hidden_layers = 48, num_attention_heads = 40, num_key_value_heads = 8, head_dim = 128,
  max_position_embeddings = 131072, rms_norm_eps = 1e-5, rope_theta = 500000.0,
  num_experts_per_tok = 1, num_local_experts = 16, interleave_moe_layer_step = 1,
  use_qk_norm = true, router_aux_loss_coef = 0.001, no_rope_layer_interval = 4,
  attention_bias = false, tie_word_embeddings = false,
}

--- Llama4TextConfig's attention_chunk_size when the key is absent.
M.LLAMA4_CHUNK_DEFAULT = 8192

-- Which 0-based layers use RoPE: `no_rope_layers` (1: RoPE, 0: NoPE, one
-- per layer; absent or empty: every layer but each
-- no_rope_layer_interval-th, Llama4TextConfig.__post_init__).
local function llama4_rope_layers(r, cfg, L, file)
  local v = cfg.no_rope_layers
  local rope = {}
  if type(v) == "table" and #v > 0 then
    if #v < L then
      util.fail(file, "no_rope_layers", "expected an array of at least num_hidden_layers = " .. L ..
        " entries", v)
    end
    for i = 1, L do
      local x = v[i]
      if x ~= 0 and x ~= 1 and type(x) ~= "boolean" then
        util.fail(file, "no_rope_layers[" .. (i - 1) .. "]", "expected 1 (RoPE) or 0 (NoPE)", x)
      end
      rope[i] = x == 1 or x == true
    end
    return rope
  end
  if not is_null(v) and type(v) ~= "table" then
    util.fail(file, "no_rope_layers", "expected an array of 1 (RoPE) and 0 (NoPE)", v)
  end
  local k = r.int("no_rope_layer_interval")
  for i = 1, L do rope[i] = i % k ~= 0 end
  return rope
end

-- The NoPE layers as a period k (every k-th layer, 1-based, without
-- RoPE); 0 when every layer has RoPE.  Other patterns are refused.
local function nope_period(rope, L, file)
  local any = false
  for i = 1, L do any = any or not rope[i] end
  if not any then return 0 end
  local k = M.window_period(function(i) return rope[i] end, L)
  if not k then
    local nope = {}
    for i = 1, L do if not rope[i] then nope[#nope + 1] = i end end
    util.fail(file, "no_rope_layers", "NoPE layers that are not every k-th layer are not modelled " ..
      "(the model's nope_layer_period takes a period); NoPE layers (1-based)", nope)
  end
  return k
end

-- The layers with experts: `moe_layers` (0-based) or every
-- interleave_moe_layer_step-th from step - 1 (Llama4TextConfig); an
-- explicit list becomes the dense layers it leaves out.
local function llama4_moe_layers(m, r, cfg, file)
  local L = m.num_layers
  if is_null(cfg.moe_layers) then
    local step = r.int("interleave_moe_layer_step")
    if step > L then
      util.fail(file, "interleave_moe_layer_step", "no layer would have experts (num_hidden_layers = " ..
        L .. ")", step)
    end
    m.moe_layer_freq, m.moe_layer_phase = step, step - 1
    return m
  end
  local moe = layer_list(cfg, "moe_layers", L, file)
  if not moe then util.fail(file, "moe_layers", "no layer would have experts", cfg.moe_layers) end
  local is_moe, dense = {}, {}
  for _, i in ipairs(moe) do is_moe[i] = true end
  for i = 0, L - 1 do
    if not is_moe[i] then dense[#dense + 1] = i end
  end
  if #dense > M.MAX_DENSE_LAYERS then
    util.fail(file, "moe_layers", ("leaves %d of %d layers dense; at most %d dense layers are modelled"):format(
      #dense, L, M.MAX_DENSE_LAYERS), cfg.moe_layers)
  end
  if #dense > 0 then m.moe_dense_layers = dense end
  return m
end

--- Capacity of the model's moe_dense_layers (APS_MAX_DENSE_LAYER_LIST,
-- include/apsearch/types.h).
M.MAX_DENSE_LAYERS = 64

-- Llama 4's attention: L2 Q/K norms on the RoPE layers (use_qk_norm), the
-- NoPE period, the chunk on the chunked_attention layers (layer_types,
-- else the RoPE layers), and the notes for what is not priced.
local function llama4_attention(m, r, t, cfg, file, notes)
  local L = m.num_layers
  local rope = llama4_rope_layers(r, t, L, file)
  local k = nope_period(rope, L, file)
  if k > 0 then m.nope_layer_period = k end
  if r.bool("use_qk_norm") then m.qk_l2_norm = true end
  local chunk = cfg.attention_chunk_size
  if chunk == nil then chunk = M.LLAMA4_CHUNK_DEFAULT end
  if chunk ~= cjson.null then
    local n = 0
    if is_null(t.layer_types) then
      for i = 1, L do if rope[i] then n = n + 1 end end
    else
      n = config_layer_types(t.layer_types, L, file)
    end
    if n > 0 then
      m.attention_chunk_size = config_int(chunk, 1, file, "attention_chunk_size")
      if n < L then m.chunked_attention_layers = n end
    end
  end
  local tuning = t.attn_temperature_tuning
  if k > 0 and (tuning == nil or tuning == true or (type(tuning) == "number" and tuning > 0)) then
    note(notes, file, "attn_temperature_tuning scales the NoPE layers' queries by position (1 + attn_scale " ..
      "log(1 + floor((p + 1) / floor_scale))): element-wise, not priced; 1 below floor_scale tokens")
  end
  return m
end

-- Llama 4's text model (transformers modeling_llama4.py @ 000c33fd:
-- Llama4TextAttention, Llama4TextMoe, Llama4Router, Llama4TextMLP,
-- Llama4TextDecoderLayer): q, k, v, o with attention_bias biases; the MoE
-- layers have num_local_experts experts of intermediate_size, one shared
-- expert of the same width (Llama4TextMLP(config)) and a router h x E
-- without bias whose top-k logits' sigmoids scale the experts' input; the
-- other layers a dense MLP of intermediate_size_mlp; RMSNorms; no
-- weights for the L2 Q/K norms.
local function llama4_text(cfg, file, notes)
  local t = class_defaults(cfg, M.LLAMA4_TEXT_DEFAULTS)
  local r = reader(t, file)
  local m = llama_like(r, t, file, {})
  m.ffn_hidden_size = r.int("intermediate_size_mlp")
  local ab = r.bool("attention_bias")
  m.qkv_bias, m.attn_out_bias = ab, ab
  m.num_experts = r.int("num_local_experts")
  m.experts_per_token = r.int("num_experts_per_tok")
  if m.experts_per_token ~= 1 then
    util.fail(file, "num_experts_per_tok", "expected 1: Llama4TextMoe's score on the expert input is " ..
      "modelled for top-1 routing only (Megatron's moe_apply_probs_on_input asserts it)", m.experts_per_token)
  end
  m.moe_ffn_hidden_size = r.int("intermediate_size")
  m.shared_expert_ffn_hidden_size = m.moe_ffn_hidden_size
  m.moe_router_sigmoid, m.moe_router_input_probs = true, true
  llama4_moe_layers(m, r, t, file)
  aux_loss(m, t, file, "router_aux_loss_coef")
  local jitter = nonneg(t, "router_jitter_noise", file)
  if jitter and jitter > 0 then
    note(notes, file, "router_jitter_noise = %s multiplies the router input by noise in training; not priced",
      util.describe(jitter))
  end
  llama4_attention(m, r, t, cfg, file, notes)
  return numerics(m, t, file)
end

builders.llama4_text = function(r, cfg, file, notes) return llama4_text(cfg, file, notes) end

--- Llama4VisionConfig's defaults (transformers configuration_llama4.py @
-- 008e5743) for the vision tower of a Llama 4 multimodal config.
M.LLAMA4_VISION_DEFAULTS = { hidden_size = 768, num_hidden_layers = 34, num_channels = 3,
  intermediate_size = 5632, vision_output_dim = 7680, image_size = 448, patch_size = 14,
  projector_input_dim = 4096, projector_output_dim = 4096 }

--- Parameters of Llama 4's vision tower and projector, which apsearch
-- counts apart (it trains the text model): Llama4VisionModel
-- (modeling_llama4.py @ 000c33fd) patch_embedding.linear C p^2 h (no
-- bias), class_embedding h, positional_embedding_vlm ((image / p)^2 + 1) h,
-- layernorm_pre and layernorm_post 2 h each; per Llama4VisionEncoderLayer
-- q, k, v, o h^2 + h each, fc1 h f + f, fc2 f h + h, two LayerNorms 2 h
-- each; vision_adapter fc1 f x projector_input_dim and fc2
-- projector_output_dim^2 (no biases); Llama4MultiModalProjector.linear_1
-- vision_output_dim x h_text (no bias).
-- @tparam table vc the decoded `vision_config`
-- @tparam integer text_h the text model's hidden_size
-- @tparam string file for errors
-- @treturn integer the vision tower's parameters
-- @treturn integer the projector's
function M.llama4_vision_params(vc, text_h, file)
  local r = reader(with_defaults(vc, M.LLAMA4_VISION_DEFAULTS), file)
  local h, f, p = r.int("hidden_size"), r.int("intermediate_size"), r.int("patch_size")
  local side = r.int("image_size") // p
  local layer = 4 * (h * h + h) + (h * f + f) + (f * h + h) + 2 * (2 * h)
  local pout = r.int("projector_output_dim")
  local tower = r.int("num_channels") * p * p * h + h + (side * side + 1) * h + 2 * (2 * h) +
                r.int("num_hidden_layers") * layer + f * r.int("projector_input_dim") + pout * pout
  return tower, r.int("vision_output_dim") * text_h
end

-- Llama 4 multimodal (Llama4ForConditionalGeneration): the text model of
-- `text_config` (absent: every default), the vision tower of
-- `vision_config` counted apart (info.vision_params) and said so.
function builders.llama4(r, cfg, file, notes, info)
  local m = llama4_text(text_config(cfg, file, "llama4_text"), file .. ": text_config", notes)
  local tower, proj = M.llama4_vision_params(sub_config(cfg, "vision_config", file, false),
    m.hidden_size, file .. ": vision_config")
  info.vision_params = tower + proj
  note(notes, file, "the vision tower (%d parameters) and the multimodal projector (%d) are counted apart, " ..
    "not in total or active and not estimated: apsearch trains the text model", tower, proj)
  return m
end

--- SmolLM3Config's defaults (transformers configuration_smollm3.py @
-- 6551e17f) for the keys a `smollm3` config may leave out;
-- tie_word_embeddings is PretrainedConfig's (SmolLM3ForCausalLM ties
-- lm_head to embed_tokens).
M.SMOLLM3_DEFAULTS = {
  vocab_size = 128256, hidden_size = 2048, intermediate_size = 11008, num_hidden_layers = 36,
  num_attention_heads = 16, num_key_value_heads = 4, max_position_embeddings = 32768,
  rms_norm_eps = 1e-6, rope_theta = 2000000.0, no_rope_layer_interval = 4, tie_word_embeddings = true,
}

--- Builds the model table of a `smollm3` config (SmolLM3; transformers
-- modular_smollm3.py: SmolLM3Attention is Llama's with RoPE only where
-- no_rope_layers[i] is 1, the MLP LlamaMLP): Llama's layer, the NoPE
-- layers (`no_rope_layers`, else every `no_rope_layer_interval`-th) as
-- nope_layer_period, tied embeddings by default.  A window (layer_types
-- sliding_attention, which SmolLM3Config puts on the NoPE layers) is
-- refused: the model's window period cannot place it there.
-- @tparam table _ the reader of the raw config (unused: read with the defaults)
-- @tparam table cfg the decoded config.json
-- @tparam string file for errors
-- @treturn table model table
-- @raise `<file>: <key>: <problem> (got <value>)`; NotImplemented for
--   sliding-window layers and NoPE layers that are not every k-th layer
function builders.smollm3(_, cfg, file)
  local t = class_defaults(cfg, M.SMOLLM3_DEFAULTS)
  local r = reader(t, file)
  local m = builders.llama(r, t, file)
  local L = m.num_layers
  local windowed, key = sliding_layer_count(t, L, file), "layer_types"
  if windowed == nil and r.bool("use_sliding_window", false) and r.has("sliding_window") then
    windowed, key = 1, "use_sliding_window" -- SmolLM3Config windows the NoPE layers
  end
  if (windowed or 0) > 0 then
    error(("NotImplemented: %s: %s: SmolLM3's sliding-window attention (on its NoPE layers) is not " ..
      "modelled (got %s)"):format(file, key, util.describe(cfg[key])), 0)
  end
  local k = nope_period(llama4_rope_layers(r, t, L, file), L, file)
  if k > 0 then m.nope_layer_period = k end
  return numerics(m, t, file)
end

---------------------------------------------------------------- hybrid Mamba-2 (Nemotron-H)

--- NemotronHConfig's class defaults (transformers configuration_nemotron_h.py
-- @ 13923c63) for the keys the import reads.
M.NEMOTRON_H_DEFAULTS = {
  vocab_size = 131072, hidden_size = 4096, num_attention_heads = 32, num_key_value_heads = 8,
  head_dim = 128, intermediate_size = 21504, mlp_hidden_act = "relu2", ssm_state_size = 128,
  mamba_num_heads = 128, mamba_head_dim = 64, mamba_hidden_act = "silu", n_groups = 8,
  conv_kernel = 4, expand = 2, chunk_size = 128, use_conv_bias = true, mamba_proj_bias = false,
  use_bias = false, attention_bias = false, mlp_bias = false, tie_word_embeddings = false,
  max_position_embeddings = 4096, num_nextn_predict_layers = 0,
}

--- Legacy config keys and the names transformers' NemotronHConfig.__post_init__
-- reads them as.
M.NEMOTRON_H_ALIASES = { mamba_n_groups = "n_groups", mamba_d_conv = "conv_kernel",
  mamba_expand = "expand", mamba_chunk_size = "chunk_size", mamba_conv_bias = "use_conv_bias" }

--- Layer kinds: pattern characters (Megatron-Core hybrid_layer_allocation.py
-- @ d98e8a64 Symbols) and `layers_block_type` names (new and legacy).
M.HYBRID_SYMBOLS = { M = "M", ["*"] = "*", ["-"] = "-", E = "E" }
M.HYBRID_BLOCK_TYPES = { linear_attention = "M", mamba = "M", full_attention = "*",
  attention = "*", mlp = "-", moe = "E" }

-- A list of layer kinds (`layers_block_type`, `mtp_layers_block_type`)
-- as M / * / - / E characters.
local function block_type_chars(list, file, key)
  if type(list) ~= "table" or #list == 0 then
    util.fail(file, key, "expected a non-empty list of mamba, attention, mlp or moe", list)
  end
  local chars = {}
  for i, t in ipairs(list) do
    chars[i] = M.HYBRID_BLOCK_TYPES[t] or util.fail(file, key .. "[" .. (i - 1) .. "]", "expected mamba, attention, " ..
      "mlp or moe", t)
  end
  return table.concat(chars)
end

-- The pattern of a string key and its list twin (the list form of
-- transformers' NemotronHConfig): either one, or both when they agree.
local function pattern_or_list(cfg, file, key, list_key)
  local v, list = cfg[key], cfg[list_key]
  local from_list = not is_null(list) and block_type_chars(list, file, list_key) or nil
  if is_null(v) then return from_list, list_key end
  if type(v) ~= "string" or #v == 0 then util.fail(file, key, "expected a non-empty string", v) end
  local bad = v:find("[^M%*%-E]")
  if bad then util.fail(file, key, ("character %d is not M, *, - or E"):format(bad), v) end
  if from_list and from_list ~= v then
    util.fail(file, key, ("disagrees with %s (%s): give one of them"):format(list_key, from_list), v)
  end
  return v, key
end

-- The layer pattern of a nemotron_h config: `hybrid_override_pattern` or
-- `layers_block_type`, as M / * / - / E characters.
local function nemotron_h_pattern(cfg, file)
  local v, key = pattern_or_list(cfg, file, "hybrid_override_pattern", "layers_block_type")
  if not v then
    util.fail(file, "hybrid_override_pattern", "required key is missing (or layers_block_type)", nil)
  end
  return v, key
end

-- The MoE blocks of a nemotron_h config with E layers (file comment,
-- "Hybrid Mamba-2 models"; transformers NemotronHMOE, NemotronHTopkRouter,
-- configuration_nemotron_h.py): experts, top-k, the shared expert, the
-- DeepSeek-V3 router with its expert bias.  Without E layers, none.
local function nemotron_h_moe(m, cfg, file, notes)
  if not m.hybrid_layer_pattern:find("E", 1, true) then
    if not is_null(cfg.moe_latent_size) then
      note(notes, file, "moe_latent_size = %s is not used: the pattern has no E (MoE) layers",
        util.describe(cfg.moe_latent_size))
    end
    return m
  end
  local r = reader(cfg, file)
  if not is_null(cfg.moe_latent_size) then m.moe_latent_size = r.int("moe_latent_size") end
  -- transformers builds one shared expert of moe_shared_expert_intermediate_size
  -- whatever n_shared_experts says (vLLM multiplies by it): only 1 is unambiguous
  if not is_null(cfg.n_shared_experts) and cfg.n_shared_experts ~= 1 then
    util.fail(file, "n_shared_experts", "expected 1 (one shared expert of " ..
      "moe_shared_expert_intermediate_size)", cfg.n_shared_experts)
  end
  if is_null(cfg.n_routed_experts) then
    util.fail(file, "n_routed_experts", "required key is missing (the pattern has E (MoE) layers)", nil)
  end
  m.num_experts = config_int(cfg.n_routed_experts, 2, file, "n_routed_experts")
  m.experts_per_token = r.int("num_experts_per_tok")
  m.moe_ffn_hidden_size = r.int("moe_intermediate_size")
  m.shared_expert_ffn_hidden_size = r.int("moe_shared_expert_intermediate_size")
  m.moe_router_bias = true -- e_score_correction_bias (E)
  return deepseek_router(m, r, cfg, file, true, "noaux_tc")
end


--- The layers of an MTP depth transformers' NemotronHConfig takes when a
-- config in its list form (`layers_block_type`) gives none
-- (configuration_nemotron_h.py: `mtp_layers_block_type` "defaults to
-- ['attention', 'moe']"), as pattern characters.
M.NEMOTRON_H_MTP_DEFAULT = "*E"

-- The layers of one MTP depth of a nemotron_h config: the string
-- `mtp_hybrid_override_pattern`, or the list `mtp_layers_block_type`
-- (transformers' newer spelling, as M.HYBRID_BLOCK_TYPES names its kinds);
-- nil with neither.
local function nemotron_h_mtp_pattern(cfg, file)
  return (pattern_or_list(cfg, file, "mtp_hybrid_override_pattern", "mtp_layers_block_type"))
end

-- The multi-token-prediction depths of a nemotron_h config (file comment,
-- "Hybrid Mamba-2 models"): `num_nextn_predict_layers` of the depth's
-- layers each (nemotron_h_mtp_pattern; with neither key, transformers'
-- default for a config in the list form, noted); none without depths.
local function nemotron_h_mtp(m, cfg, file, notes)
  local depths = config_int(cfg.num_nextn_predict_layers, 0, file, "num_nextn_predict_layers")
  local v = nemotron_h_mtp_pattern(cfg, file)
  -- without depths the pattern still says what a depth would hold: kept, so
  -- that training.mtp_num_layers can train some (Megatron's --mtp-num-layers)
  if depths == 0 and is_null(v) then return end
  if is_null(v) and not is_null(cfg.layers_block_type) and is_null(cfg.hybrid_override_pattern) then
    v = M.NEMOTRON_H_MTP_DEFAULT
    note(notes, file, "num_nextn_predict_layers %d with no MTP layer list: each depth taken as transformers' " ..
      "default mtp_layers_block_type ['attention', 'moe']", depths)
  end
  if is_null(v) then
    util.fail(file, "mtp_hybrid_override_pattern", "required with num_nextn_predict_layers > 0 " ..
      "(the layers of an MTP depth; or mtp_layers_block_type)", nil)
  end
  m.mtp_layers, m.mtp_layer_pattern = depths, v
end

--- Builds the model table of a `nemotron_h` config (file comment, "Hybrid
-- Mamba-2 models"): the pattern, the Mamba-2 widths, the squared-ReLU MLP,
-- attention without positions, one RMSNorm per layer, no biases.
-- @tparam table _ the reader of the top-level config (unused: the config
--   is read with NemotronHConfig's defaults filled in)
-- @tparam table raw the decoded config.json
-- @tparam string file for errors
-- @tparam table notes the import's notes
-- @treturn table model table
-- @raise `<file>: <key>: <problem> (got <value>)`
function builders.nemotron_h(_, raw, file, notes)
  -- cfg by transformers' names, NemotronHConfig's defaults filled in; key[k]
  -- the name the file used for k (a legacy alias, attention_head_dim), for
  -- errors
  local cfg, key = {}, setmetatable({}, { __index = function(_, k) return k end })
  for k, v in pairs(raw) do
    if not M.NEMOTRON_H_ALIASES[k] then cfg[k] = v end
  end
  -- a legacy key wins over its new name when a file has both, as
  -- __post_init__ pops it over the field (@ 13923c63); sorted, so that the
  -- result never depends on the table's order
  local legacy = {}
  for k in pairs(M.NEMOTRON_H_ALIASES) do legacy[#legacy + 1] = k end
  table.sort(legacy)
  -- (a null legacy key is popped over the field as None, which the
  -- mixer cannot build with: refused, not read as the default)
  refuse_nulls(raw, legacy, file, "NemotronHConfig")
  for _, k in ipairs(legacy) do
    if raw[k] ~= nil then
      local canon = M.NEMOTRON_H_ALIASES[k]
      cfg[canon], key[canon] = raw[k], k
    end
  end
  -- the older configs (Nemotron-H-8B) name it attention_head_dim
  if is_null(raw.head_dim) and not is_null(raw.attention_head_dim) then
    cfg.head_dim, key.head_dim = raw.attention_head_dim, "attention_head_dim"
  end
  cfg = class_defaults(cfg, M.NEMOTRON_H_DEFAULTS)
  local function int(k) return config_int(cfg[k], 1, file, key[k]) end
  local pattern, pkey = nemotron_h_pattern(cfg, file)
  if not is_null(cfg.num_hidden_layers) and int("num_hidden_layers") ~= #pattern then
    util.fail(file, "num_hidden_layers", ("expected %d, the layers of %s"):format(#pattern, pkey),
      cfg.num_hidden_layers)
  end
  require_value(cfg, "mlp_hidden_act", "relu2", file, "apsearch prices the squared-ReLU MLP")
  require_value(cfg, "mamba_hidden_act", "silu", file, "the Mamba-2 kernels' activation")
  require_value(cfg, "use_conv_bias", true, file, "Megatron's MambaMixer asserts a conv bias", key.use_conv_bias)
  for _, k in ipairs({ "use_bias", "mamba_proj_bias", "attention_bias", "mlp_bias" }) do
    require_value(cfg, k, false, file, "biases are not modelled on a hybrid model")
  end
  int("expand") -- checked; d_inner is mamba_num_heads x mamba_head_dim (NemotronHMamba2Mixer)
  local m = {
    num_layers = #pattern, hidden_size = int("hidden_size"),
    num_attention_heads = int("num_attention_heads"), num_query_groups = int("num_key_value_heads"),
    head_dim = int("head_dim"), ffn_hidden_size = int("intermediate_size"),
    vocab_size = int("vocab_size"), max_position_embeddings = int("max_position_embeddings"),
    norms_per_layer = 1, mlp = "relu2", norm = "rmsnorm", position_embedding = "none",
    norm_bias = false, qkv_bias = false, attn_out_bias = false, mlp_bias = false, qk_norm = false,
    tie_word_embeddings = reader(cfg, file).bool("tie_word_embeddings"),
    hybrid_layer_pattern = pattern, mamba_num_heads = int("mamba_num_heads"),
    mamba_head_dim = int("mamba_head_dim"), mamba_state_dim = int("ssm_state_size"),
    mamba_num_groups = int("n_groups"), mamba_conv_kernel = int("conv_kernel"),
    mamba_chunk_size = int("chunk_size"),
  }
  if reader(cfg, file).bool("residual_in_fp32", false) then
    note(notes, file, "residual_in_fp32: the fp32 residual stream is not priced (bf16 assumed)")
  end
  nemotron_h_mtp(m, cfg, file, notes)
  return nemotron_h_moe(m, cfg, file, notes)
end

--- GraniteMoeHybridConfig's defaults of the keys read here (transformers
-- configuration_granitemoehybrid.py).
M.GRANITE_HYBRID_DEFAULTS = { mamba_n_groups = 1, mamba_d_state = 256, mamba_d_conv = 4, mamba_expand = 2,
  mamba_chunk_size = 256, mamba_conv_bias = true, mamba_proj_bias = false, num_local_experts = 0,
  num_experts_per_tok = 0, shared_intermediate_size = 0, position_embedding_type = "nope", attention_bias = false }

-- The layers Bamba (modular_bamba.py @ 024072ac, BambaDecoderLayer) and
-- Granite 4.0 (GraniteMoeHybridDecoderLayer, built on it) share: each
-- layer is a mixer -- Mamba-2 or attention, `lt[i]` -- under
-- input_layernorm, then under a second norm an MLP of `ffn` (SwiGLU) or,
-- with `E` > 0 experts, the experts beside it as their shared expert.  As
-- a Megatron-Core hybrid pattern each layer is two blocks of one norm
-- each: M or *, then E or -.  The Mamba-2 mixer is BambaMixer:
-- d_inner = mamba_expand x hidden_size, which must equal mamba_n_heads x
-- mamba_d_head; a conv bias, no projection biases, no attention biases.
-- `lkey` names the layer list for errors, `pos` is "rope" or "none".
local function mamba2_hybrid(cfg, r, file, notes, lt, lkey, E, ffn, pos)
  local L = r.int("num_hidden_layers")
  if type(lt) ~= "table" or #lt ~= L then
    util.fail(file, lkey, "expected an array of num_hidden_layers = " .. L .. " entries", lt)
  end
  local chars = {}
  for i = 1, L do
    local mixer = ({ mamba = "M", attention = "*" })[lt[i]]
    if not mixer then util.fail(file, lkey .. "[" .. (i - 1) .. "]", "expected mamba or attention", lt[i]) end
    chars[#chars + 1] = mixer .. (E > 0 and "E" or "-")
  end
  require_value(cfg, "mamba_conv_bias", true, file, "Megatron's MambaMixer asserts a conv bias")
  for _, k in ipairs({ "mamba_proj_bias", "attention_bias" }) do
    require_value(cfg, k, false, file, "biases are not modelled on a hybrid model")
  end
  local m = {
    num_layers = 2 * L, hidden_size = r.int("hidden_size"),
    num_attention_heads = r.int("num_attention_heads"),
    num_query_groups = r.int("num_key_value_heads", r.int("num_attention_heads")),
    ffn_hidden_size = ffn, vocab_size = r.int("vocab_size"),
    norms_per_layer = 1, mlp = "swiglu", norm = "rmsnorm", position_embedding = pos,
    norm_bias = false, qkv_bias = false, attn_out_bias = false, mlp_bias = false, qk_norm = false,
    tie_word_embeddings = r.bool("tie_word_embeddings", false),
    hybrid_layer_pattern = table.concat(chars),
    mamba_num_heads = r.int("mamba_n_heads"), mamba_head_dim = r.int("mamba_d_head"),
    mamba_state_dim = r.int("mamba_d_state"), mamba_num_groups = r.int("mamba_n_groups"),
    mamba_conv_kernel = r.int("mamba_d_conv"), mamba_chunk_size = r.int("mamba_chunk_size"),
  }
  if r.has("max_position_embeddings") then m.max_position_embeddings = r.int("max_position_embeddings") end
  local expand = cfg.mamba_expand
  if type(expand) ~= "number" or expand * m.hidden_size ~= m.mamba_num_heads * m.mamba_head_dim then
    util.fail(file, "mamba_expand", ("expected mamba_expand x hidden_size = mamba_n_heads x mamba_d_head = %d"):format(
      m.mamba_num_heads * m.mamba_head_dim), expand)
  end
  return m
end

-- The note that a Bamba-style model's layers are two pattern blocks each
-- (mamba2_hybrid).
local function hybrid_blocks_note(notes, file, m)
  note(notes, file, "its %d layers are %d blocks of Megatron-Core's hybrid pattern (%s): each layer's mixer, " ..
    "then its MLP or experts; `num_layers` counts the blocks", m.num_layers // 2, m.num_layers,
    m.hybrid_layer_pattern:sub(1, 8) .. "...")
end

--- Granite 4.0 (granitemoehybrid; transformers modeling_granitemoehybrid.py,
-- GraniteMoeHybridDecoderLayer): Bamba's layers (mamba2_hybrid, from
-- `layer_types`) whose MLP is the shared SwiGLU of shared_intermediate_
-- size plus, with num_local_experts > 0, Granite's experts (a bias-free
-- top-k softmax router).  Positions: `position_embedding_type` nope (the
-- H models) or rope.  Granite's multipliers: mup_multipliers.
function builders.granitemoehybrid(_, raw, file, notes)
  local cfg = class_defaults(raw, M.GRANITE_HYBRID_DEFAULTS)
  local r = reader(cfg, file)
  local lt = cfg.layer_types
  if is_null(lt) then lt = cfg.layers_block_type end
  local E = count(cfg, "num_local_experts", 0, file)
  local pos = cfg.position_embedding_type
  if pos ~= "nope" and pos ~= "rope" then util.fail(file, "position_embedding_type", "expected nope or rope", pos) end
  local shared = r.int("shared_intermediate_size")
  local m = mamba2_hybrid(cfg, r, file, {}, lt, "layer_types", E, shared, pos == "rope" and "rope" or "none")
  if E > 0 then
    m.num_experts, m.experts_per_token = E, r.int("num_experts_per_tok")
    m.moe_ffn_hidden_size = r.int("intermediate_size")
    if shared > 0 then m.shared_expert_ffn_hidden_size = shared end
    aux_loss(m, cfg, file, "router_aux_loss_coef")
  end
  granite_common(m, r, cfg, file, notes)
  m.qkv_bias, m.attn_out_bias = false, false
  hybrid_blocks_note(notes, file, m)
  return m
end

--- BambaConfig's defaults of the keys read here (transformers
-- configuration_bamba.py @ 7a2983f2; mamba_d_head "auto" is
-- mamba_expand x hidden_size / mamba_n_heads).
M.BAMBA_DEFAULTS = { num_key_value_heads = 8, mamba_n_heads = 128, mamba_d_head = "auto", mamba_n_groups = 1,
  mamba_d_state = 256, mamba_d_conv = 4, mamba_expand = 2, mamba_chunk_size = 256, mamba_conv_bias = true,
  mamba_proj_bias = false, tie_word_embeddings = false }

--- The fraction of each attention head Bamba's RoPE rotates: BambaConfig
-- sets partial_rotary_factor to 0.5 whatever the config says ("hardcode
-- for BC").
M.BAMBA_ROTARY_FRACTION = 0.5

--- Bamba (bamba: Bamba-9B; transformers modular_bamba.py @ 024072ac,
-- configuration_bamba.py @ 7a2983f2): Mamba-2 layers with attention on
-- the 0-based `attn_layer_indices` (BambaConfig.layers_block_type), each
-- followed by a SwiGLU MLP of `intermediate_size` (mamba2_hybrid), the
-- attention Llama's without biases (BambaConfig fixes attention_bias
-- false) with RoPE on half of each head; `hidden_act` is the MLP's and the
-- Mamba mixer's activation (silu).  A `partial_rotary_factor` other than
-- 0.5 is refused: BambaConfig overwrites it.
function builders.bamba(_, raw, file, notes)
  require_silu(raw, file, "Bamba's SwiGLU MLP and Mamba-2 mixer")
  if not is_null(raw.partial_rotary_factor) and raw.partial_rotary_factor ~= M.BAMBA_ROTARY_FRACTION then
    util.fail(file, "partial_rotary_factor", ("expected %s or absent (BambaConfig sets it to %s)"):format(
      M.BAMBA_ROTARY_FRACTION, M.BAMBA_ROTARY_FRACTION), raw.partial_rotary_factor)
  end
  local cfg = class_defaults(raw, M.BAMBA_DEFAULTS)
  cfg.attention_bias = false
  local r = reader(cfg, file)
  local L, h = r.int("num_hidden_layers"), r.int("hidden_size")
  if cfg.mamba_d_head == "auto" and type(cfg.mamba_expand) == "number" then
    cfg.mamba_d_head = cfg.mamba_expand * h // r.int("mamba_n_heads")
  end
  local idx, lt = cfg.attn_layer_indices, {}
  for i = 1, L do lt[i] = "mamba" end
  if not is_null(idx) then
    if type(idx) ~= "table" or (#idx == 0 and next(idx) ~= nil) then
      util.fail(file, "attn_layer_indices", "expected an array of 0-based layer indices", idx)
    end
    for k, v in ipairs(idx) do
      local i = config_int(v, 0, file, "attn_layer_indices[" .. (k - 1) .. "]")
      if i >= L then
        util.fail(file, "attn_layer_indices[" .. (k - 1) .. "]", "expected a layer index below num_hidden_layers = " .. L, v)
      end
      lt[i + 1] = "attention"
    end
  end
  local m = mamba2_hybrid(cfg, r, file, notes, lt, "attn_layer_indices", 0, r.int("intermediate_size"), "rope")
  m.rotary_percent = M.BAMBA_ROTARY_FRACTION
  hybrid_blocks_note(notes, file, m)
  return m
end

---------------------------------------------------------------- Mamba-2 (pure)
-- transformers configuration_mamba2.py @ f2a39d49 (Mamba2Config) and
-- modeling_mamba2.py (Mamba2Block: one RMSNorm and a Mamba2Mixer; the
-- mixer's gated RMSNorm whatever `rms_norm` says); Megatron-LM's
-- pretrain_hybrid.py builds it from an all-M pattern.

--- Megatron-LM's ffn_hidden_size when not given, per unit of hidden_size
-- (megatron/training/arguments.py @ d98e8a64: 4 x hidden_size).
M.MEGATRON_FFN_PER_HIDDEN = 4

--- config.json keys of the model fields a mamba2 config sets (the
-- attention fields are the mixer's heads and groups), for the core's
-- errors.
M.MAMBA2_CONFIG_KEYS = { num_attention_heads = "num_heads", num_query_groups = "n_groups",
  head_dim = "head_dim", ffn_hidden_size = "hidden_size", mamba_num_heads = "num_heads",
  mamba_head_dim = "head_dim", mamba_state_dim = "state_size", mamba_num_groups = "n_groups",
  mamba_conv_kernel = "conv_kernel", mamba_chunk_size = "chunk_size", hybrid_layer_pattern = "num_hidden_layers" }

--- Mamba2Config's defaults of the keys read here.
M.MAMBA2_DEFAULTS = { num_heads = 128, head_dim = 64, vocab_size = 32768, hidden_size = 4096, state_size = 128,
  num_hidden_layers = 64, expand = 2, conv_kernel = 4, n_groups = 8, use_bias = false, use_conv_bias = true,
  chunk_size = 256, tie_word_embeddings = false }

--- Builds the model table of a `mamba2` config: num_hidden_layers
-- Mamba-2 layers (hybrid_layer_pattern all M), d_inner = expand x
-- hidden_size, which must equal num_heads x head_dim (the mixer reshapes
-- its input to num_heads heads of head_dim).  No attention layer: the
-- attention fields take the mixer's heads and groups, so they constrain
-- TP no more than the mixer does (Megatron-LM reads --num-attention-heads
-- for every model) and change no estimate; no MLP layer, so
-- ffn_hidden_size is Megatron-LM's default, 4 x hidden_size
-- (arguments.py @ d98e8a64), which changes no estimate either.
-- @tparam table _ the reader of the top-level config (unused)
-- @tparam table raw the decoded config.json
-- @tparam string file for errors
-- @tparam table notes the import's notes
-- @treturn table model table
-- @raise `<file>: <key>: <problem> (got <value>)`
function builders.mamba2(_, raw, file, notes, extra)
  require_silu(raw, file, "the Mamba-2 kernels' activation")
  refuse_nulls(raw, { "hidden_size", "num_hidden_layers", "num_heads", "head_dim", "state_size", "n_groups",
    "conv_kernel", "chunk_size", "expand", "vocab_size", "hidden_act", "use_conv_bias" }, file, "Mamba2Config")
  extra.config_keys = M.MAMBA2_CONFIG_KEYS
  local cfg = class_defaults(raw, M.MAMBA2_DEFAULTS)
  local r = reader(cfg, file)
  local h, nh, P = r.int("hidden_size"), r.int("num_heads"), r.int("head_dim")
  local expand = cfg.expand
  if type(expand) ~= "number" or expand * h ~= nh * P then
    util.fail(file, "expand", ("expected expand x hidden_size = num_heads x head_dim = %d"):format(nh * P), expand)
  end
  require_value(cfg, "use_conv_bias", true, file, "Megatron's MambaMixer asserts a conv bias")
  require_value(cfg, "use_bias", false, file, "biases are not modelled on a hybrid model")
  local L, G = r.int("num_hidden_layers"), r.int("n_groups")
  local m = {
    num_layers = L, hidden_size = h, num_attention_heads = nh, num_query_groups = G, head_dim = P,
    ffn_hidden_size = M.MEGATRON_FFN_PER_HIDDEN * h, vocab_size = r.int("vocab_size"), norms_per_layer = 1, mlp = "swiglu",
    norm = "rmsnorm", position_embedding = "none", norm_bias = false, qkv_bias = false, attn_out_bias = false,
    mlp_bias = false, qk_norm = false, tie_word_embeddings = r.bool("tie_word_embeddings", false),
    hybrid_layer_pattern = string.rep("M", L), mamba_num_heads = nh, mamba_head_dim = P,
    mamba_state_dim = r.int("state_size"), mamba_num_groups = G, mamba_conv_kernel = r.int("conv_kernel"),
    mamba_chunk_size = r.int("chunk_size"),
  }
  if r.bool("residual_in_fp32", true) then
    note(notes, file, "residual_in_fp32: the fp32 residual stream is not priced (bf16 assumed)")
  end
  return m
end

---------------------------------------------------------------- Falcon-H1 (parallel hybrid)
-- transformers configuration_falcon_h1.py @ 7abb76c5 (FalconH1Config) and
-- modular_falcon_h1.py @ 3c0a5c70 (FalconH1DecoderLayer, FalconH1Mixer,
-- FalconH1Attention = LlamaAttention, FalconH1MLP); trained by
-- Megatron-Bridge 067f987df src/megatron/bridge/models/falcon_h1
-- (FalconH1Bridge: every layer FalconH1Layer with use_mamba, use_attention
-- and use_mlp, the "P" symbol of its mamba_hybrid_layer_allocation.py).

--- config.json keys of the model fields a falcon_h1 config sets under its
-- own names, for the core's errors (the pattern is num_hidden_layers P's).
M.FALCON_H1_CONFIG_KEYS = { mamba_num_heads = "mamba_n_heads", mamba_head_dim = "mamba_d_head",
  mamba_state_dim = "mamba_d_state", mamba_num_groups = "mamba_n_groups", mamba_conv_kernel = "mamba_d_conv",
  mamba_chunk_size = "mamba_chunk_size", hybrid_layer_pattern = "num_hidden_layers" }

--- FalconH1Config's defaults of the keys read here.
M.FALCON_H1_DEFAULTS = { vocab_size = 128000, hidden_size = 4096, intermediate_size = 14336,
  num_hidden_layers = 32, num_attention_heads = 32, num_key_value_heads = 8, max_position_embeddings = 8192,
  mamba_d_ssm = 1024, mamba_n_heads = 128, mamba_d_head = "auto", mamba_n_groups = 1, mamba_d_state = 256,
  mamba_d_conv = 4, mamba_expand = 2, mamba_chunk_size = 256, mamba_conv_bias = true, mamba_proj_bias = false,
  mamba_rms_norm = false, projectors_bias = false, attention_bias = false, mlp_bias = false,
  tie_word_embeddings = false }

--- Falcon-H1's muP multipliers (FalconH1Config): scalars on the
-- embedding, the logits, each branch's input and output, the keys, the
-- MLP's gate and output and the five parts of the Mamba-2 in_proj output.
M.FALCON_H1_MULTIPLIERS = { "embedding_multiplier", "lm_head_multiplier", "attention_in_multiplier",
  "attention_out_multiplier", "key_multiplier", "ssm_in_multiplier", "ssm_out_multiplier", "mlp_multipliers",
  "ssm_multipliers" }

--- Builds the model table of a `falcon_h1` config: every layer one
-- parallel layer P (hybrid_layer_pattern): input_layernorm, a Mamba-2
-- mixer (FalconH1Mixer: d_inner = mamba_d_ssm, or mamba_expand x
-- hidden_size when null, = mamba_n_heads x mamba_d_head; its gated RMSNorm
-- only with mamba_rms_norm) beside GQA attention with RoPE (head_dim,
-- default hidden_size / num_attention_heads), then pre_ff_layernorm and a
-- SwiGLU MLP of intermediate_size.  Biases (attention_bias, mlp_bias,
-- mamba_proj_bias, projectors_bias) are refused, as on every hybrid model;
-- the multipliers change no estimate and are noted.
-- @tparam table _ the reader of the top-level config (unused: the config
--   is read with FalconH1Config's defaults filled in)
-- @tparam table raw the decoded config.json
-- @tparam string file for errors
-- @tparam table notes the import's notes
-- @treturn table model table
-- @raise `<file>: <key>: <problem> (got <value>)`
function builders.falcon_h1(_, raw, file, notes, extra)
  require_silu(raw, file, "Falcon-H1's SwiGLU MLP and Mamba-2 mixer")
  refuse_nulls(raw, { "hidden_size", "num_hidden_layers", "num_attention_heads", "mamba_n_heads", "mamba_d_head",
    "mamba_d_state", "mamba_n_groups", "mamba_d_conv", "mamba_chunk_size", "vocab_size", "intermediate_size",
    "mamba_conv_bias", "hidden_act" }, file, "FalconH1Config")
  -- a null mamba_d_ssm is mamba_expand x hidden_size: then expand is read
  if raw.mamba_d_ssm == cjson.null then refuse_nulls(raw, { "mamba_expand" }, file, "FalconH1Config") end
  extra.config_keys = M.FALCON_H1_CONFIG_KEYS
  if not is_null(raw.attn_layer_indices) then
    util.fail(file, "attn_layer_indices", "expected null (FalconH1Config runs attention on every layer)",
      raw.attn_layer_indices)
  end
  local cfg = class_defaults(raw, M.FALCON_H1_DEFAULTS)
  -- FalconH1Config: a null num_key_value_heads is num_attention_heads
  if raw.num_key_value_heads == cjson.null then cfg.num_key_value_heads = cfg.num_attention_heads end
  local r = reader(cfg, file)
  local L, h = r.int("num_hidden_layers"), r.int("hidden_size")
  local heads = r.int("num_attention_heads")
  -- mamba_d_ssm null: mamba_expand x hidden_size; absent: the default 1024
  local d = raw.mamba_d_ssm == cjson.null and r.int("mamba_expand") * h or r.int("mamba_d_ssm")
  local nh = r.int("mamba_n_heads")
  if d % nh ~= 0 then
    util.fail(file, "mamba_d_ssm", ("mamba_n_heads %d must divide the Mamba-2 width (FalconH1Config; absent: " ..
      "1024, null: mamba_expand x hidden_size)"):format(nh), d)
  end
  local P = cfg.mamba_d_head == "auto" and d // nh or r.int("mamba_d_head")
  if P * nh ~= d then
    util.fail(file, "mamba_d_head", ("expected mamba_n_heads x mamba_d_head = the Mamba-2 width %d " ..
      "(FalconH1Config)"):format(d), cfg.mamba_d_head)
  end
  require_value(cfg, "mamba_conv_bias", true, file, "Megatron's MambaMixer asserts a conv bias")
  for _, k in ipairs({ "mamba_proj_bias", "projectors_bias", "attention_bias", "mlp_bias" }) do
    require_value(cfg, k, false, file, "biases are not modelled on a hybrid model")
  end
  local m = {
    num_layers = L, hidden_size = h, num_attention_heads = heads,
    num_query_groups = r.int("num_key_value_heads"), head_dim = r.int("head_dim", h // heads),
    ffn_hidden_size = r.int("intermediate_size"), vocab_size = r.int("vocab_size"),
    max_position_embeddings = r.int("max_position_embeddings"),
    norms_per_layer = 1, mlp = "swiglu", norm = "rmsnorm", position_embedding = "rope",
    norm_bias = false, qkv_bias = false, attn_out_bias = false, mlp_bias = false, qk_norm = false,
    tie_word_embeddings = r.bool("tie_word_embeddings", false),
    hybrid_layer_pattern = string.rep("P", L),
    mamba_num_heads = nh, mamba_head_dim = P, mamba_state_dim = r.int("mamba_d_state"),
    mamba_num_groups = r.int("mamba_n_groups"), mamba_conv_kernel = r.int("mamba_d_conv"),
    mamba_chunk_size = r.int("mamba_chunk_size"),
    mamba_no_rmsnorm = not r.bool("mamba_rms_norm", false) or nil,
  }
  local given = {}
  for _, k in ipairs(M.FALCON_H1_MULTIPLIERS) do
    if not is_null(raw[k]) then given[#given + 1] = k end
  end
  if #given > 0 then
    note(notes, file, "Falcon-H1's multipliers (%s) are element-wise scalings: no estimate prices them",
      table.concat(given, ", "))
  end
  note(notes, file, "each of its %d layers is a parallel layer P: a Mamba-2 and an attention mixer side by " ..
    "side under one norm, then the MLP under a second (Megatron-Bridge's FalconH1Layer, built with an fp32 " ..
    "residual stream, not priced: bf16 assumed)", L)
  return m
end

---------------------------------------------------------------- Qwen3-Next (Gated DeltaNet)
-- transformers Qwen3NextConfig (configuration_qwen3_next.py @ 249ef816)
-- and Qwen3NextDecoderLayer / Qwen3NextGatedDeltaNet / Qwen3NextAttention /
-- Qwen3NextSparseMoeBlock (modeling_qwen3_next.py @ 7515843b).

--- Qwen3NextConfig's defaults of the keys read here.
M.QWEN3_NEXT_DEFAULTS = { full_attention_interval = 4, linear_conv_kernel_dim = 4,
  linear_key_head_dim = 128, linear_value_head_dim = 128, linear_num_key_heads = 16,
  linear_num_value_heads = 32, partial_rotary_factor = 0.25, shared_expert_intermediate_size = 512 }

-- The period k of the full-attention layers: full_attention_interval, or
-- layer_types when given (transformers builds the layers from it, the
-- interval only fills it in when absent), whose first full_attention
-- layer sets k and which must then follow Qwen3NextConfig's rule (layer
-- i, 0-based, full_attention iff (i + 1) % k == 0), the rule
-- Megatron-Core's --linear-attention-freq k builds; another list is
-- refused (the mean-layer pricing, src/core/gdn.c, needs the period).
local function qwen3_next_period(cfg, L, file)
  local k = count(cfg, "full_attention_interval", M.QWEN3_NEXT_DEFAULTS.full_attention_interval, file)
  if k < 1 or k > L then
    util.fail(file, "full_attention_interval", "expected an integer in [1, num_hidden_layers = " .. L .. "]",
      cfg.full_attention_interval)
  end
  local lt = cfg.layer_types
  if is_null(lt) then return k end
  if type(lt) ~= "table" or #lt ~= L then
    util.fail(file, "layer_types", "expected an array of num_hidden_layers = " .. L .. " layer types", lt)
  end
  -- layer_types, when given, is what transformers builds (the interval
  -- only fills it in when absent): its own period, the first full layer
  local p
  for i = 1, L do
    local t = lt[i]
    if t ~= "linear_attention" and t ~= "full_attention" then
      util.fail(file, "layer_types[" .. (i - 1) .. "]", "expected linear_attention or full_attention", t)
    end
    p = p or (t == "full_attention" and i or nil)
  end
  p = p or L + 1
  for i = 1, L do
    if (lt[i] == "full_attention") ~= (i % p == 0) then
      error(string.format("NotImplemented: %s: layer_types[%d]: %s breaks the period %d of the first " ..
        "full_attention layer (apsearch prices every k-th layer as full attention) (got %s)",
        file, i - 1, lt[i], p, util.describe(lt[i])), 0)
    end
  end
  if p > L then
    util.fail(file, "layer_types", "no full_attention layer (apsearch prices every k-th layer as full attention)",
      lt)
  end
  return p
end

-- The model table of a `qwen3_next` config (moe) or of Qwen3.5's dense
-- text model: Qwen3 attention (Q/K norms, head_dim) with its output gate
-- (q_proj 2 a d), partial RoPE, the Gated DeltaNet layers and their
-- widths, zero-centred RMSNorm, and with moe Qwen2-MoE experts with the
-- gated shared expert (else the dense SwiGLU MLP).  The checkpoint's MTP
-- module (mtp.*) is dropped by transformers
-- (_keys_to_ignore_on_load_unexpected) and not priced: a note says so.
-- Raises `<file>: <key>: <problem> (got <value>)`; NotImplemented for a
-- layer_types list without the period or attention biases.
local function gated_deltanet(r, cfg, file, notes, moe)
  local D = M.QWEN3_NEXT_DEFAULTS
  require_value(cfg, "hidden_act", "silu", file, "the Gated DeltaNet conv and the SwiGLU experts' activation")
  if r.bool("attention_bias", false) then
    error(("NotImplemented: %s: attention_bias: Qwen3-Next attention with biases is not modelled (got true)")
      :format(file), 0)
  end
  local mtp = 0
  for _, k in ipairs({ "num_nextn_predict_layers", "mtp_num_hidden_layers" }) do
    mtp = math.max(mtp, count(cfg, k, 0, file))
  end
  local m = builders.qwen3(r, cfg, file)
  m.linear_attention_period = qwen3_next_period(cfg, m.num_layers, file)
  for _, k in ipairs({ "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
                       "linear_value_head_dim" }) do
    m[k] = r.int(k, D[k])
  end
  m.linear_conv_kernel_dim = r.int("linear_conv_kernel_dim", D.linear_conv_kernel_dim)
  m.attention_output_gate = true -- Qwen3NextAttention: q_proj h -> a d 2, sigmoid gate
  m.norm_zero_centered = true    -- Qwen3NextRMSNorm: (1 + w)
  m.rotary_percent = M.rotary_fraction(cfg, file, D.partial_rotary_factor)
  if moe then
    qwen_moe(m, r, cfg, file)
    local fs = count(cfg, "shared_expert_intermediate_size", D.shared_expert_intermediate_size, file)
    if fs > 0 then m.shared_expert_ffn_hidden_size, m.shared_expert_gate = fs, true end
  end
  note(notes, file, "the checkpoint's multi-token-prediction module (mtp.*%s) is not loaded by " ..
    "transformers and is not priced", mtp > 0 and (", " .. mtp .. " layer" .. (mtp > 1 and "s" or "")) or "")
  return m
end

function builders.qwen3_next(r, cfg, file, notes)
  return gated_deltanet(r, cfg, file, notes, true)
end

--- Qwen3.5's dense text model (Qwen3_5TextConfig, transformers models/
-- qwen3_5 @ 8940358a: Qwen3_5DecoderLayer): Qwen3-Next's Gated DeltaNet and
-- gated attention layers, each followed by a SwiGLU MLP of
-- intermediate_size instead of experts.
function builders.qwen3_5_text(r, cfg, file, notes)
  return gated_deltanet(r, cfg, file, notes, false)
end

---------------------------------------------------------------- OLMo Hybrid

--- OlmoHybridConfig's defaults (transformers modular_olmo_hybrid.py @
-- 009e78d6, documented as allenai/Olmo-Hybrid-7B's) for the keys a
-- config.json may leave out; the linear widths' defaults are computed
-- (builders.olmo_hybrid).
M.OLMO_HYBRID_DEFAULTS = {
  vocab_size = 100352, hidden_size = 3840, intermediate_size = 11008, num_hidden_layers = 32,
  num_attention_heads = 30, max_position_embeddings = 65536, hidden_act = "silu", tie_word_embeddings = false,
  attention_bias = false, linear_conv_kernel_dim = 4,
}
--- OlmoHybridConfig.__post_init__'s layer types when the config gives
-- none: layer i (0-based) full attention when i % k == k - 1 (the last
-- layer when that leaves none), the others Gated DeltaNet.
M.OLMO_HYBRID_FULL_EVERY = 4

--- OLMo Hybrid (olmo_hybrid; transformers modular_olmo_hybrid.py @
-- 009e78d6): OLMo 3's attention layers (Q/K norms over the whole
-- projection, the norms after attention and MLP: builders.olmo2) between
-- Gated DeltaNet layers in Llama's pre-norm layer. OlmoHybridGatedDeltaNet
-- has separate q, k, v, a, b and g projections where Qwen3-Next fuses them
-- (in_proj_qkvz, in_proj_ba): the same weights, the conv over q, k and v
-- without bias, A_log, dt_bias and the gated RMSNorm of a value head, so
-- the Gated DeltaNet terms are Qwen3-Next's (linear_num_key_heads and
-- _value_heads default num_attention_heads, linear_key_head_dim
-- int(0.75 h / key heads), linear_value_head_dim twice that). RoPE only
-- when rope_parameters gives a rope_theta (the released checkpoints give
-- none: position_embedding "none"); the attention layers' reordered norms
-- are carried for the whole model (the linear layers' are before; the
-- same two norms a layer).
-- OLMo Hybrid's layer_types into the period of its full-attention layers
-- (1-based multiples of k), else the layer pattern (L Gated DeltaNet, A
-- attention: linear_attention_pattern); at least one of each, as
-- OlmoHybridConfig.validate_architecture asks.
local function olmo_hybrid_layers(m, lt, L, file)
  if type(lt) ~= "table" or #lt ~= L then
    util.fail(file, "layer_types", "expected an array of num_hidden_layers = " .. L .. " layer types", lt)
  end
  local letters, first = {}, nil
  for i = 1, L do
    if lt[i] ~= "linear_attention" and lt[i] ~= "full_attention" then
      util.fail(file, "layer_types[" .. (i - 1) .. "]", "expected linear_attention or full_attention", lt[i])
    end
    letters[i] = lt[i] == "full_attention" and "A" or "L"
    first = first or (letters[i] == "A" and i or nil)
  end
  local pattern = table.concat(letters)
  if not first or not pattern:find("L", 1, true) then
    util.fail(file, "layer_types", "expected at least one linear_attention and one full_attention layer", lt)
  end
  for i = 1, L do
    if (letters[i] == "A") ~= (i % first == 0) then
      m.linear_attention_pattern = pattern
      return m
    end
  end
  m.linear_attention_period = first
  return m
end

function builders.olmo_hybrid(_, cfg, file, notes, extra)
  local c = class_defaults(cfg, M.OLMO_HYBRID_DEFAULTS)
  local L = config_int(c.num_hidden_layers, 1, file, "num_hidden_layers")
  if is_null(c.layer_types) then
    local k, t, full = M.OLMO_HYBRID_FULL_EVERY, {}, false
    for i = 1, L do
      t[i] = (i - 1) % k == k - 1 and "full_attention" or "linear_attention"
      full = full or t[i] == "full_attention"
    end
    if not full then t[L] = "full_attention" end
    c.layer_types = t
  end
  local heads = config_int(c.num_attention_heads, 1, file, "num_attention_heads")
  c.linear_num_key_heads = is_null(c.linear_num_key_heads) and heads or c.linear_num_key_heads
  c.linear_num_value_heads = is_null(c.linear_num_value_heads) and heads or c.linear_num_value_heads
  if is_null(c.linear_key_head_dim) then
    c.linear_key_head_dim = math.floor(0.75 * config_int(c.hidden_size, 1, file, "hidden_size") /
      config_int(c.linear_num_key_heads, 1, file, "linear_num_key_heads"))
  end
  if is_null(c.linear_value_head_dim) then
    c.linear_value_head_dim = 2 * config_int(c.linear_key_head_dim, 1, file, "linear_key_head_dim")
  end
  local r = reader(c, file)
  local m = builders.olmo2(r, c, file, notes)
  m.linear_attention = "gated_deltanet"
  olmo_hybrid_layers(m, c.layer_types, L, file)
  for _, k in ipairs({ "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
                       "linear_value_head_dim", "linear_conv_kernel_dim" }) do
    m[k] = r.int(k)
  end
  if r.bool("linear_allow_neg_eigval", true) then m.linear_beta_doubled = true end
  local rp = c.rope_parameters
  if type(rp) ~= "table" or is_null(rp.rope_theta) then
    m.position_embedding = "none" -- OlmoHybridModel builds no rotary embedding
    extra.own_numerics = true
    c.rope_theta, c.rope_scaling = nil, nil
    local nm = numerics(m, c, file)
    nm.rope_theta = nil
    return nm
  end
  return m
end

---------------------------------------------------------------- AFMoE (Arcee Trinity)
-- transformers models/afmoe (configuration_afmoe.py @ 053f59ef,
-- modular_afmoe.py @ 06ee2866): AfmoeAttention is Llama's GQA with
-- per-head RMSNorms on Q and K and its output multiplied by
-- sigmoid(gate_proj(x)), gate_proj h -> a d; RoPE on the
-- sliding_attention layers only (is_local_attention), every
-- global_attn_every_n_layers-th layer full attention without RoPE; four
-- norms a layer (input, post-attention, pre-MLP, post-MLP); the first
-- num_dense_layers layers a SwiGLU MLP of intermediate_size, the others
-- AfmoeMoE: a sigmoid router h -> E without bias, its expert_bias (E, not
-- trained: requires_grad False), top-k renormalised and scaled by
-- route_scale, num_shared_experts shared experts of moe_intermediate_size
-- (one MLP of their sum); mup_enabled scales the embeddings.

--- AfmoeConfig's defaults of the keys read here.
M.AFMOE_DEFAULTS = { head_dim = 128, num_dense_layers = 1, num_experts = 64, num_experts_per_tok = 6,
  num_shared_experts = 2, moe_intermediate_size = 1408, route_scale = 1.0, global_attn_every_n_layers = 4 }

function builders.afmoe(r, cfg, file, notes)
  local D = M.AFMOE_DEFAULTS
  local m = llama_like(r, cfg, file, { norms_per_layer = 4, head_dim = D.head_dim })
  m.qk_norm, m.attention_output_gate = true, true
  local k = count(cfg, "global_attn_every_n_layers", D.global_attn_every_n_layers, file)
  if k < 1 then util.fail(file, "global_attn_every_n_layers", "expected a positive integer", cfg.global_attn_every_n_layers) end
  global_nope_window(m, r, cfg, file, k)
  m.num_experts = r.int("num_experts", D.num_experts)
  m.experts_per_token = r.int("num_experts_per_tok", D.num_experts_per_tok)
  m.moe_ffn_hidden_size = r.int("moe_intermediate_size", D.moe_intermediate_size)
  local shared = count(cfg, "num_shared_experts", D.num_shared_experts, file)
  if shared > 0 then m.shared_expert_ffn_hidden_size = shared * m.moe_ffn_hidden_size end
  local dense = count(cfg, "num_dense_layers", D.num_dense_layers, file)
  if dense >= m.num_layers then
    util.fail(file, "num_dense_layers", "no layer would have experts (num_hidden_layers = " .. m.num_layers .. ")",
      dense)
  end
  if dense > 0 then m.moe_first_dense_layers = dense end
  m.moe_router_bias = true -- expert_bias, the sigmoid router's (counted as the checkpoint holds it)
  local rs = nonneg(cfg, "route_scale", file)
  if rs and rs > 0 and rs ~= 1 then m.moe_router_topk_scaling_factor = rs end
  if r.bool("mup_enabled", false) then m.mup_multipliers = true end
  return m
end

---------------------------------------------------------------- Llama-Nemotron NAS (nemotron-nas)
-- DeciLM's block_configs (the HF config of nvidia/Llama-3_3-Nemotron-
-- Super-49B-v1 and its kin) as Megatron-Core reads them
-- (megatron/core/transformer/heterogeneous/heterogeneous_config.py @
-- d98e8a64: AttentionConfig from n_heads_in_group, MLPConfig from ffn_mult
-- through ffn_mult_to_intermediate_size; training/arguments.py
-- validate_model_config_args_from_heterogeneous_config: SiLU, RMSNorm,
-- GQA with one n_heads_in_group for every layer, RoPE with llama3
-- scaling).  A layer's attention or MLP replaced by a linear layer, and
-- attention windows, sinks or sparsity, are refused.

--- Megatron's ffn_mult_to_intermediate_size: int(2 ffn_mult h / 3)
-- rounded up to a multiple of 256; nil past 2^24 (no integer width).
function M.nas_ffn_width(mult, h)
  local n = math.floor(2 * mult * h / 3)
  if not (n >= 0 and n <= 2 ^ 24) then return nil end
  return math.tointeger(n % 256 == 0 and n or n + 256 - n % 256)
end

-- A flag of a block's attention or ffn: true, false or null (Megatron's
-- dataclasses test it for truth; apsearch takes only booleans).
local function nas_flag(t, k, key, file)
  local v = t[k]
  if is_null(v) then return false end
  if type(v) ~= "boolean" then util.fail(file, key .. "." .. k, "expected true or false", v) end
  return v
end

-- The attention letter of block i (0-based in messages) and its query
-- groups (nil: no attention), as AttentionConfig.build_config_from_dict
-- reads them: num_query_groups when given, else num_attention_heads //
-- n_heads_in_group.
local function nas_attention(b, i, heads, file)
  local a, key = b.attention, "block_configs[" .. i .. "].attention"
  if type(a) ~= "table" then util.fail(file, key, "expected an object", a) end
  for _, k in ipairs({ "window_length", "num_sink_tokens", "sparsify" }) do
    if not is_null(a[k]) then
      error(("NotImplemented: %s: %s.%s: attention windows, sinks and sparsity of heterogeneous layers are not " ..
        "modelled (got %s)"):format(file, key, k, util.describe(a[k])), 0)
    end
  end
  for _, k in ipairs({ "unshifted_sink", "use_prefill_window_in_sink_attention" }) do
    if nas_flag(a, k, key, file) then
      error(("NotImplemented: %s: %s.%s: attention sinks of heterogeneous layers are not modelled (got true)")
        :format(file, key, k), 0)
    end
  end
  if nas_flag(a, "replace_with_linear", key, file) then
    error(("NotImplemented: %s: %s.replace_with_linear: an attention block replaced by a linear layer is not " ..
      "modelled (got true)"):format(file, key), 0)
  end
  local no_op = nas_flag(a, "no_op", key, file)
  local given = not is_null(a.num_query_groups) and "num_query_groups" or
    (not is_null(a.n_heads_in_group) and "n_heads_in_group" or nil)
  if no_op then
    -- get_config_for_layer asserts a no-op layer has no query groups, and
    -- validate_model_config_args_from_heterogeneous_config counts every
    -- layer's n_heads_in_group
    if given then util.fail(file, key .. "." .. given, "expected null on a no_op layer", a[given]) end
    return "-"
  end
  if not given then util.fail(file, key .. ".n_heads_in_group", "expected an integer (or num_query_groups)", nil) end
  local v = config_int(a[given], 1, file, key .. "." .. given)
  local groups = given == "num_query_groups" and v or heads // v
  if given == "n_heads_in_group" and heads % v ~= 0 or given == "num_query_groups" and heads % v ~= 0 then
    util.fail(file, key .. "." .. given, "expected a divisor of num_attention_heads = " .. heads, a[given])
  end
  return "A", groups
end

-- The MLP width of block i (nil: none), as MLPConfig.build_config_from_dict
-- reads it: ffn_hidden_size when given, else from ffn_mult.
local function nas_ffn(b, i, h, file)
  local f, key = b.ffn or b.mlp, "block_configs[" .. i .. "].ffn"
  if type(f) ~= "table" then util.fail(file, key, "expected an object", f) end
  if not is_null(f.sparsify) then
    error(("NotImplemented: %s: %s.sparsify: sparse MLPs are not modelled (got %s)"):format(file, key,
      util.describe(f.sparsify)), 0)
  end
  if nas_flag(f, "replace_with_linear", key, file) then
    error(("NotImplemented: %s: %s.replace_with_linear: an MLP replaced by a linear layer is not modelled " ..
      "(got true)"):format(file, key), 0)
  end
  if nas_flag(f, "no_op", key, file) then return nil end
  if not is_null(f.ffn_hidden_size) then return config_int(f.ffn_hidden_size, 1, file, key .. ".ffn_hidden_size") end
  local mult = f.ffn_mult
  local w = type(mult) == "number" and mult > 0 and M.nas_ffn_width(mult, h)
  if not w or w < 1 then
    util.fail(file, key .. ".ffn_mult", "expected a multiplier giving a width in [1, 2^24] " ..
      "(int(2 ffn_mult hidden_size / 3) rounded up to 256)", f.ffn_mult)
  end
  return w
end

builders["nemotron-nas"] = function(_, cfg, file, notes)
  local blocks, r0 = cfg.block_configs, reader(cfg, file)
  local L = r0.int("num_hidden_layers")
  if type(blocks) ~= "table" or #blocks ~= L then
    util.fail(file, "block_configs", "expected an array of num_hidden_layers = " .. L .. " blocks", blocks)
  end
  require_value(cfg, "hidden_act", "silu", file, "Megatron's heterogeneous config asserts SiLU")
  for _, k in ipairs({ "attention_bias", "mlp_bias" }) do
    if r0.bool(k, false) then
      error(("NotImplemented: %s: %s: biases of heterogeneous layers are not modelled (got true)"):format(file, k), 0)
    end
  end
  if type(cfg.rope_scaling) ~= "table" then
    util.fail(file, "rope_scaling", "expected an object (Megatron's heterogeneous config reads its factor)",
      cfg.rope_scaling)
  end
  local h, heads = r0.int("hidden_size"), r0.int("num_attention_heads")
  local attn, ffn, widths, letter, group = {}, {}, {}, {}, nil
  for i, b in ipairs(blocks) do
    local a, g = nas_attention(b, i - 1, heads, file)
    if g then
      if group and g ~= group then
        error(("NotImplemented: %s: block_configs[%d].attention: %d query groups where earlier layers have %d " ..
          "(Megatron asserts one value for every layer) (got %d)"):format(file, i - 1, g, group, g), 0)
      end
      group = g
    end
    attn[i] = a
    local w = nas_ffn(b, i - 1, h, file)
    if w and not letter[w] then
      if #widths == 26 then
        error(("NotImplemented: %s: block_configs[%d].ffn: a 27th MLP width (apsearch names at most 26) (got %d)")
          :format(file, i - 1, w), 0)
      end
      widths[#widths + 1] = w
      letter[w] = string.char(string.byte("a") + #widths - 1)
    end
    ffn[i] = w and letter[w] or "-"
  end
  if not group then util.fail(file, "block_configs", "no layer has attention", cjson.null) end
  if #widths == 0 then util.fail(file, "block_configs", "no layer has an MLP", cjson.null) end
  local c = util.copy(cfg)
  local widest = 0
  for _, w in ipairs(widths) do widest = math.max(widest, w) end
  c.intermediate_size, c.num_key_value_heads = widest, group
  local r = reader(c, file)
  local m = llama_like(r, c, file, {})
  m.nas_attention_pattern, m.nas_ffn_pattern = table.concat(attn), table.concat(ffn)
  local ws = {}
  for k, w in ipairs(widths) do ws[k] = tostring(w) end
  m.nas_ffn_widths = table.concat(ws, ",")
  note(notes, file, "heterogeneous layers (block_configs): %d of %d with attention, MLP widths %s; priced for " ..
    "Megatron-LM (--heterogeneous-layers-config-path)", #(table.concat(attn):gsub("-", "")), L, m.nas_ffn_widths)
  return m
end

---------------------------------------------------------------- Muse Glimmer
-- NeMo AutoModel nemo_automodel/components/models/muse_glimmer @ 36044ad3
-- (config.py MuseGlimmerTextConfig and MuseGlimmerConfig; model.py
-- MuseGlimmerAttention l.175-210, MuseGlimmerDecoderLayer l.352-386,
-- MuseGlimmerModel l.424-460): GQA without biases, its Q and K
-- normalised per head by a weightless RMSNorm (use_qk_norm) and its output
-- multiplied by sigmoid(output_gate_proj(x)), output_gate_proj h -> a d
-- (use_attn_output_gate); sandwich norms (input, post-attention,
-- pre-MLP, post-MLP; RMSNorm weights stored as an offset from one) and a
-- SwiGLU MLP; a window on the sliding_attention layers of layer_types and
-- no RoPE on the layers whose layer_rope_theta is 0 (the full ones);
-- a weightless RMSNorm on the token embeddings (normalize_tok_embeddings);
-- the final norm's weight the gain itself; logits soft-capped and scaled
-- (final_logit_softcapping, output_multiplier), queries by
-- qk_scale_factor.  use_qk_norm, use_attn_output_gate and
-- normalize_tok_embeddings are MuseGlimmerConfig's (the wrapper's,
-- default true), not the text config's: M.WRAPPER_KEYS passes them on.

--- MuseGlimmerConfig's defaults of the wrapper keys its text model uses.
M.MUSE_GLIMMER_DEFAULTS = { use_qk_norm = true, use_attn_output_gate = true, normalize_tok_embeddings = true }

function builders.muse_glimmer_text(r, cfg, file, notes)
  require_value(cfg, "hidden_activation", "silu", file, "MuseGlimmerMLP is a SwiGLU (F.silu)")
  if r.bool("attention_bias", false) then
    util.fail(file, "attention_bias", "expected false (NeMo AutoModel's MuseGlimmerAttention builds its " ..
      "projections without biases)", true)
  end
  local m = llama_like(r, cfg, file, { norms_per_layer = 4, own_activation = true })
  local D = M.MUSE_GLIMMER_DEFAULTS
  m.norm_zero_centered = true -- MuseGlimmerRMSNorm: 1 + w (the final norm's w itself)
  if r.bool("use_attn_output_gate", D.use_attn_output_gate) then m.attention_output_gate = true end
  if r.bool("use_qk_norm", D.use_qk_norm) then m.qk_norm, m.qk_norm_weightless = true, true end
  m.mup_multipliers = true -- output_multiplier on the logits, qk_scale_factor on the queries
  softcapping(m, cfg, file, notes, {})
  -- the NoPE layers (layer_rope_theta 0) are the full-attention ones, as
  -- MuseGlimmerConfig derives both from one pattern
  local L, lt, th = m.num_layers, cfg.layer_types, cfg.layer_rope_theta
  if type(lt) == "table" and type(th) == "table" then
    if #th ~= L then util.fail(file, "layer_rope_theta", "expected " .. L .. " entries (num_hidden_layers)", th) end
    for i = 1, L do
      if (th[i] == 0) ~= (lt[i] == "full_attention") then
        util.fail(file, "layer_rope_theta[" .. (i - 1) .. "]", "expected 0 exactly on the full_attention layers " ..
          "(apsearch prices NoPE on the full layers)", th[i])
      end
    end
  end
  global_nope_window(m, r, cfg, file, 4)
  if r.bool("normalize_tok_embeddings", D.normalize_tok_embeddings) then
    note(notes, file, "the weightless RMSNorm on the token embeddings (normalize_tok_embeddings) is not priced")
  end
  note(notes, file, "read as NeMo AutoModel's Muse Glimmer text model (components/models/muse_glimmer)")
  return m
end

---------------------------------------------------------------- Kimi Linear (Kimi Delta Attention)
-- transformers models/kimi_linear (configuration_kimi_linear.py @ 630ebd85)
-- and NeMo AutoModel, which trains it (nemo_automodel/components/models/
-- kimi_linear config.py, model.py @ 36044ad3: KimiLinear48BConfig,
-- KimiMLAAttention, KimiDeltaAttention, KimiDecoderLayer): layer i
-- (1-based) has MLA when linear_attn_config.full_attn_layers lists it and
-- Kimi Delta Attention when kda_layers does (KimiLinear48BConfig requires
-- both lists); MLA without query compression and without RoPE
-- (KimiMLAAttention raises for q_lora_rank or mla_use_nope = false); the
-- MLP of DeepSeek-V3 (KimiMoE in vLLM kimi_linear.py: a sigmoid router with
-- e_score_correction_bias, num_shared_experts experts of
-- moe_intermediate_size, the first first_k_dense_replace layers dense of
-- intermediate_size, the others MoE when i % moe_layer_freq == 0).

--- What Kimi K3's text model (the same model_type: transformers
-- KimiLinearConfig's K3 fields, AutoModel's separate kimi_k3 model) adds
-- beyond Kimi Linear, each a key and its Kimi Linear value: a config that
-- sets one is read as Kimi K3 (kimi_k3 below).
M.KIMI_K3_KEYS = { mla_use_output_gate = false, attn_res_block_size = 0,
  routed_expert_hidden_size = cjson.null, latent_moe_use_norm = false, dense_ffn_hidden = cjson.null }
M.KIMI_K3_KDA_KEYS = { use_full_rank_gate = false }

-- The Kimi K3 keys cfg (and its linear_attn_config la) sets, in order.
local function kimi_k3_keys(cfg, la)
  local set = {}
  if cfg.hidden_act == "situ" then set[#set + 1] = "hidden_act situ" end
  for _, scope in ipairs({ { cfg, M.KIMI_K3_KEYS, "" }, { la, M.KIMI_K3_KDA_KEYS, "linear_attn_config." } }) do
    local keys = {}
    for k in pairs(scope[2]) do keys[#keys + 1] = k end
    table.sort(keys)
    for _, k in ipairs(keys) do
      local v, off = scope[1][k], scope[2][k]
      if not is_null(v) and v ~= off then set[#set + 1] = scope[3] .. k end
    end
  end
  return set
end

--- KimiK3TextConfig's defaults (NeMo AutoModel components/models/kimi_k3/
-- config.py l.31-86 @ 36044ad3): AutoModel reads a kimi_linear or kimi_k3
-- config as Kimi K3's (_transformers/registry.py l.333-334), so a key a
-- Kimi K3 config leaves out takes these; null keeps null (None).
M.KIMI_K3_DEFAULTS = { vocab_size = 163840, hidden_size = 7168, intermediate_size = 18432,
  num_hidden_layers = 93, num_attention_heads = 56, tie_word_embeddings = false, model_max_length = 1048576,
  moe_intermediate_size = 3072, moe_renormalize = true, moe_router_activation_func = "sigmoid",
  num_experts = 896, num_experts_per_token = 16, num_shared_experts = 2, routed_scaling_factor = 1.0,
  first_k_dense_replace = 1, moe_layer_freq = 1, num_expert_group = 1, topk_group = 1,
  routed_expert_hidden_size = 3584, latent_moe_use_norm = true, q_lora_rank = 1536, kv_lora_rank = 512,
  qk_nope_head_dim = 128, qk_rope_head_dim = 64, v_head_dim = 128, mla_use_nope = true,
  mla_use_output_gate = true, attn_res_block_size = 12, activation_situ_beta = 4.0,
  activation_situ_linear_beta = 25.0, num_nextn_predict_layers = 0 }

-- KimiK3TextConfig's default linear_attn_config for L layers: full
-- attention on 4, 8, ... and the last, KDA of 96 heads of 128 elsewhere,
-- the full-rank output gate (config.py l.91-104).
local function kimi_k3_linear_default(L)
  local full, kda, on = {}, {}, {}
  for i = 4, L, 4 do full[#full + 1], on[i] = i, true end
  if not on[L] then full[#full + 1], on[L] = L, true end
  for i = 1, L do if not on[i] then kda[#kda + 1] = i end end
  return { head_dim = 128, num_heads = 96, short_conv_kernel_size = 4, kda_layers = kda,
    full_attn_layers = full, use_full_rank_gate = true, gate_lower_bound = -5.0 }
end

-- A Kimi K3 config with KimiK3TextConfig's defaults filled in (a copy).
local function kimi_k3_config(cfg)
  local c = util.copy(cfg)
  for k, v in pairs(M.KIMI_K3_DEFAULTS) do
    if c[k] == nil then c[k] = v end
  end
  if c.linear_attn_config == nil then c.linear_attn_config = kimi_k3_linear_default(c.num_hidden_layers) end
  return c
end

--- What Kimi K3's text model adds (NeMo AutoModel components/models/
-- kimi_k3/model.py @ 36044ad3), into m: SiTU on every MLP whatever
-- hidden_act says (KimiK3MLP and KimiK3MoE build SituAndMul, l.327-330,
-- 1056-1060), MLA's output gate (KimiMLAAttention g_proj), the KDA
-- output gate's full rank (use_full_rank_gate), latent experts and their
-- norm (KimiK3MoE routed_expert_down/up_proj, routed_expert_norm), the
-- attention residuals (attn_res_block_size; null: none, 0 divides by
-- zero in KimiDecoderLayer l.1326).
local function kimi_k3(m, cfg, la, file, notes)
  if is_null(cfg.activation_situ_linear_beta) then
    error(("NotImplemented: %s: activation_situ_linear_beta: SiTU without the bounded up projection is not " ..
      "modelled (got null)"):format(file), 0)
  end
  positive(cfg, "activation_situ_linear_beta", file)
  m.glu_activation = "situ"
  local function flag(t, key, where)
    local v = t[key]
    if is_null(v) then return false end
    if type(v) ~= "boolean" then util.fail(file, where .. key, "expected true or false", v) end
    return v
  end
  m.mla_output_gate = flag(cfg, "mla_use_output_gate", "") or nil
  if not is_null(cfg.attn_res_block_size) then
    m.attn_res_block_size = config_int(cfg.attn_res_block_size, 1, file, "attn_res_block_size")
  end
  if is_null(cfg.routed_expert_hidden_size) then
    util.fail(file, "routed_expert_hidden_size", "expected the latent width (KimiK3MoE builds " ..
      "nn.Linear(hidden_size, routed_expert_hidden_size))", cfg.routed_expert_hidden_size)
  end
  m.moe_latent_size = config_int(cfg.routed_expert_hidden_size, 1, file, "routed_expert_hidden_size")
  m.moe_latent_norm = flag(cfg, "latent_moe_use_norm", "") or nil
  if not is_null(cfg.dense_ffn_hidden) and cfg.dense_ffn_hidden ~= cfg.intermediate_size then
    util.fail(file, "dense_ffn_hidden", "expected null or intermediate_size (NeMo AutoModel's Kimi K3 builds its " ..
      "dense layers of intermediate_size, transformers of dense_ffn_hidden)", cfg.dense_ffn_hidden)
  end
  m.linear_output_gate_full_rank = flag(la, "use_full_rank_gate", "linear_attn_config.") or nil
  note(notes, file, "read as NeMo AutoModel's Kimi K3 text model (components/models/kimi_k3)")
end

-- linear_attn_config's 1-based layer lists as linear_attention_pattern
-- (A full attention, L KDA); every layer in exactly one list.
local function kimi_pattern(la, L, file)
  local p = {}
  for _, list in ipairs({ { "full_attn_layers", "A" }, { "kda_layers", "L" } }) do
    local v = la[list[1]]
    local key = "linear_attn_config." .. list[1]
    if type(v) ~= "table" or (#v == 0 and next(v) ~= nil) then
      util.fail(file, key, "expected an array of 1-based layer numbers", v)
    end
    if list[2] == "A" and #v == 0 then
      util.fail(file, key, "needs at least one layer (apsearch prices a Kimi Linear model with MLA layers)", v)
    end
    for k, n in ipairs(v) do
      local i = config_int(n, 1, file, key .. "[" .. (k - 1) .. "]")
      if i > L then util.fail(file, key .. "[" .. (k - 1) .. "]", "expected a layer in [1, num_hidden_layers = " .. L .. "]", n) end
      if p[i] then util.fail(file, key .. "[" .. (k - 1) .. "]", "layer " .. i .. " is listed twice", n) end
      p[i] = list[2]
    end
  end
  for i = 1, L do
    if not p[i] then
      util.fail(file, "linear_attn_config", "layer " .. i .. " is in neither full_attn_layers nor kda_layers", cjson.null)
    end
  end
  return table.concat(p)
end

-- Kimi Linear, or Kimi K3's text model when k3 (its wrapper, or a config
-- with K3's keys: kimi_k3_keys).
local function kimi_linear(cfg, file, notes, k3)
  k3 = k3 or (type(cfg.linear_attn_config) == "table" and #kimi_k3_keys(cfg, cfg.linear_attn_config) > 0)
  if k3 then cfg = kimi_k3_config(cfg) end
  local la = cfg.linear_attn_config
  if type(la) ~= "table" or la[1] ~= nil then
    util.fail(file, "linear_attn_config", "expected an object (KimiLinear48BConfig requires kda_layers and " ..
      "full_attn_layers)", la)
  end
  if count(cfg, "num_nextn_predict_layers", 0, file) > 0 then
    util.fail(file, "num_nextn_predict_layers", "expected 0: MTP layers beside linear attention are not modelled",
      cfg.num_nextn_predict_layers)
  end
  require_value(cfg, "mla_use_nope", true, file, "NeMo AutoModel's KimiMLAAttention runs MLA without RoPE only")
  require_value(cfg, "moe_router_activation_func", "sigmoid", file,
    "the router with e_score_correction_bias is priced as DeepSeek-V3's sigmoid gate")
  if not k3 and not is_null(cfg.q_lora_rank) then
    util.fail(file, "q_lora_rank", "expected null (NeMo AutoModel's Kimi Linear MLA has no query compression; " ..
      "Kimi K3's has)", cfg.q_lora_rank)
  end
  -- DeepSeek-V3's names for Kimi Linear's MoE keys (vLLM KimiMoE), each
  -- checked under the file's own name first
  for _, k in ipairs({ "num_experts", "num_experts_per_token", "num_shared_experts", "num_expert_group" }) do
    if not is_null(cfg[k]) then config_int(cfg[k], k == "num_shared_experts" and 0 or 1, file, k) end
  end
  local c = util.copy(cfg)
  c.n_routed_experts, c.num_experts_per_tok = cfg.num_experts, cfg.num_experts_per_token
  c.n_shared_experts, c.n_group = cfg.num_shared_experts, cfg.num_expert_group
  c.norm_topk_prob = is_null(cfg.moe_renormalize) and true or cfg.moe_renormalize
  c.topk_method, c.scoring_func = "noaux_tc", "sigmoid"
  c.max_position_embeddings = cfg.model_max_length
  if k3 then c.hidden_act = "silu" end -- SiTU: kimi_k3 (llama_like asks for SwiGLU's silu)
  local m = deepseek(reader(c, file), c, file, true)
  if k3 then kimi_k3(m, cfg, la, file, notes) end
  m.position_embedding = "none"
  local lr = reader(la, file .. ": linear_attn_config")
  m.linear_attention_pattern = kimi_pattern(la, m.num_layers, file)
  if not is_null(la.gate_lower_bound) then
    note(notes, file, "linear_attn_config.gate_lower_bound %s bounds the KDA decay (numerics only, not priced)",
      util.describe(la.gate_lower_bound))
  end
  if not m.linear_attention_pattern:find("L", 1, true) then -- every layer MLA
    m.linear_attention_pattern = nil
    return m
  end
  m.linear_attention = "kda"
  m.linear_num_key_heads = lr.int("num_heads")
  m.linear_num_value_heads = m.linear_num_key_heads
  m.linear_key_head_dim = lr.int("head_dim")
  m.linear_value_head_dim = m.linear_key_head_dim
  m.linear_conv_kernel_dim = lr.int("short_conv_kernel_size")
  note(notes, file, "Kimi Delta Attention is trained by NeMo AutoModel only (FSDP2, expert and context " ..
    "parallelism; no tensor parallelism): a built policy uses framework = automodel")
  return m
end

function builders.kimi_linear(_, cfg, file, notes) return kimi_linear(cfg, file, notes, false) end

---------------------------------------------------------------- LFM2 (gated short convolutions)

--- Lfm2Config's class defaults (transformers configuration_lfm2.py @
-- 05cd1ec1) for the keys the import reads.
M.LFM2_DEFAULTS = {
  vocab_size = 65536, hidden_size = 2560, intermediate_size = 12288, num_hidden_layers = 32,
  num_attention_heads = 32, num_key_value_heads = 8, max_position_embeddings = 128000,
  norm_eps = 1e-5, tie_word_embeddings = true, conv_bias = false, conv_L_cache = 3,
  block_multiple_of = 256, block_ffn_dim_multiplier = 1.0, block_auto_adjust_ff_dim = true,
}

--- The widest MLP M.lfm2_ffn_width accepts from a multiplier (2^31: any
-- width beyond is a typo, and the core refuses it anyway).
M.LFM2_MAX_FFN = 2147483648

--- The MLP width Lfm2MLP builds (modeling_lfm2.py @ 0096ba4f): from
-- `block_ff_dim` when given (Lfm2Config reads it before
-- intermediate_size), with block_auto_adjust_ff_dim 2/3 of it, then with
-- a block_ffn_dim_multiplier that times it, rounded up to
-- block_multiple_of (LFM2-1.2B: 12288 -> 8192).
-- @tparam table t the config with Lfm2Config's defaults
-- @tparam string file for errors
-- @treturn integer ffn_hidden_size
function M.lfm2_ffn_width(t, file)
  local r = reader(t, file)
  local key = is_null(t.block_ff_dim) and "intermediate_size" or "block_ff_dim"
  local f = r.int(key)
  if not r.bool("block_auto_adjust_ff_dim", true) then return f end
  f = 2 * f // 3 -- int(2 * f / 3): exact for the integers a config holds
  if f < 1 then util.fail(file, key, "gives an MLP width below 1 (2/3 of it, Lfm2MLP)", t[key]) end
  local mult = t.block_ffn_dim_multiplier
  if is_null(mult) then return f end
  if type(mult) ~= "number" or mult <= 0 or mult ~= mult or mult == math.huge then
    util.fail(file, "block_ffn_dim_multiplier", "expected a positive number or null", mult)
  end
  local of = r.int("block_multiple_of")
  local scaled = mult * f
  if scaled < 1 or scaled > M.LFM2_MAX_FFN then
    util.fail(file, "block_ffn_dim_multiplier", ("gives an MLP width of %.6g, outside [1, %d]"):format(scaled,
      M.LFM2_MAX_FFN), mult)
  end
  f = math.tointeger(math.floor(scaled))
  return of * ((f + of - 1) // of)
end

-- LFM2's layer kinds as linear_attention_pattern (L the short
-- convolution, A attention): layer_types, or in older files the 0-based
-- full_attn_idxs (Lfm2Config: every layer attention when neither is
-- given).
local function lfm2_pattern(t, L, file)
  local p = {}
  if not is_null(t.layer_types) then
    local lt = t.layer_types
    if type(lt) ~= "table" or #lt ~= L then
      util.fail(file, "layer_types", "expected an array of num_hidden_layers = " .. L .. " entries", lt)
    end
    for i, k in ipairs(lt) do
      if k ~= "conv" and k ~= "full_attention" then
        util.fail(file, "layer_types[" .. (i - 1) .. "]", 'expected "conv" or "full_attention"', k)
      end
      p[i] = k == "conv" and "L" or "A"
    end
    return table.concat(p)
  end
  for i = 1, L do p[i] = "L" end
  local idx = t.full_attn_idxs
  if is_null(idx) then return string.rep("A", L) end
  if type(idx) ~= "table" or (#idx == 0 and next(idx) ~= nil) then
    util.fail(file, "full_attn_idxs", "expected an array of 0-based layer indices", idx)
  end
  for k, v in ipairs(idx) do
    local i = config_int(v, 0, file, "full_attn_idxs[" .. (k - 1) .. "]")
    if i >= L then util.fail(file, "full_attn_idxs[" .. (k - 1) .. "]", "expected a layer in [0, " .. L - 1 .. "]", v) end
    p[i + 1] = "A"
  end
  return table.concat(p)
end

-- A config of an LFM2 type that names another class builds that class
-- (transformers' auto classes and AutoModel's registry follow
-- architectures[0]): refused, not priced as LFM2.
local function lfm2_class(cfg, file, want)
  local a = cfg.architectures
  if is_null(a) then return end
  if type(a) ~= "table" or (a[1] ~= nil and a[1] ~= want) then
    util.fail(file, "architectures", ('expected ["%s"] for model_type %s'):format(want, tostring(cfg.model_type)), a)
  end
end

-- LFM2's own name for tied embeddings, read before tie_word_embeddings
-- (Lfm2Config / Lfm2MoeConfig: kwargs.get("tie_embedding", ...)).
local function lfm2_tie(cfg, t, file)
  if is_null(cfg.tie_embedding) then return end
  if type(cfg.tie_embedding) ~= "boolean" then
    util.fail(file, "tie_embedding", "expected true or false", cfg.tie_embedding)
  end
  t.tie_word_embeddings = cfg.tie_embedding
end

-- What LFM2 and LFM2-MoE share: the refused conv biases, per-head q/k
-- RMSNorms, RoPE (theta already placed in `t`) and the short-convolution
-- layers of `pattern` (at least one: without a conv layer it is still
-- transformers' class under AutoModel -- no TP plan, no pipeline forward:
-- gdn.c short_conv_refusal -- which no estimate without the mixer would
-- say). `pattern_key` names the config key the pattern came from.
local function lfm2_mixer(m, t, r, file, extra, pattern, pattern_key)
  if type(t.conv_bias) ~= "boolean" then util.fail(file, "conv_bias", "expected true or false", t.conv_bias) end
  if t.conv_bias then
    error(("NotImplemented: %s: conv_bias: LFM2's short-convolution biases (in_proj, conv, out_proj) are not " ..
      "modelled (got %s)"):format(file, util.describe(t.conv_bias)), 0)
  end
  m.qk_norm = true -- Lfm2Attention: q_layernorm, k_layernorm RMSNorm(head_dim)
  numerics(m, t, file)
  extra.own_numerics = true
  if not pattern:find("L", 1, true) then
    error(("NotImplemented: %s: %s: an LFM2 model without short-convolution layers (every layer attention) " ..
      "is not modelled"):format(file, pattern_key), 0)
  end
  m.linear_attention = "short_conv"
  m.linear_attention_pattern = pattern
  m.linear_conv_kernel_dim = r.int("conv_L_cache")
  return m
end

--- LFM2 and LFM2.5 (`lfm2`, Lfm2ForCausalLM; transformers models/lfm2 @
-- 0096ba4f): gated short-convolution layers (in_proj h -> 3h, a
-- depthwise causal conv of conv_L_cache taps, out_proj) among GQA
-- attention layers with per-head q/k RMSNorms; every layer a SwiGLU MLP
-- of M.lfm2_ffn_width; tied embeddings (`tie_embedding` or
-- tie_word_embeddings); the final norm is Lfm2Model.embedding_norm.
function builders.lfm2(_, cfg, file, notes, extra)
  -- Lfm2Config computes with these: a null one fails there
  refuse_nulls(cfg, { "block_ff_dim", "conv_L_cache", "hidden_size", "num_hidden_layers" }, file, "Lfm2Config")
  lfm2_class(cfg, file, "Lfm2ForCausalLM")
  local t = with_defaults(cfg, M.LFM2_DEFAULTS)
  -- `if config.block_auto_adjust_ff_dim:` (Lfm2MLP): null is false there
  if cfg.block_auto_adjust_ff_dim == cjson.null then t.block_auto_adjust_ff_dim = false end
  lfm2_tie(cfg, t, file)
  -- kwargs.get("theta", kwargs.get("rope_theta", 1e6)): theta first
  if not is_null(cfg.theta) then t.rope_theta = cfg.theta end
  local r = reader(t, file)
  local m = llama_like(r, t, file, { own_activation = true, tied = true })
  m.ffn_hidden_size = M.lfm2_ffn_width(t, file)
  lfm2_mixer(m, t, r, file, extra, lfm2_pattern(t, m.num_layers, file),
    is_null(t.layer_types) and "full_attn_idxs" or "layer_types")
  note(notes, file, "LFM2 is trained by NeMo AutoModel as transformers builds it (FSDP2; no tensor, pipeline " ..
    "or context parallelism): a built policy uses framework = automodel")
  return m
end

--- Lfm2MoeConfig's class defaults (transformers configuration_lfm2_moe.py
-- @ bd6769d7: LFM2-8B-A1B's sizes but 32 layers; default_theta 1e6) for
-- the keys the import reads.
M.LFM2_MOE_DEFAULTS = {
  vocab_size = 65536, hidden_size = 2048, intermediate_size = 7168, moe_intermediate_size = 1792,
  num_hidden_layers = 32, num_attention_heads = 32, num_key_value_heads = 8, max_position_embeddings = 128000,
  norm_eps = 1e-5, tie_word_embeddings = true, conv_bias = false, conv_L_cache = 3, num_dense_layers = 2,
  num_experts_per_tok = 4, num_experts = 32, use_expert_bias = true, routed_scaling_factor = 1.0,
  norm_topk_prob = true, rope_theta = 1000000.0,
}

--- LFM2-MoE (`lfm2_moe`, Lfm2MoeForCausalLM: LFM2-8B-A1B, LFM2-24B-A2B;
-- transformers models/lfm2_moe/modeling_lfm2_moe.py @ 772df24b): LFM2's
-- layers (builders.lfm2's mixer) from `layer_types` alone (the decoder
-- layer indexes it: a file without it fails there), with the first
-- `num_dense_layers` MLPs dense SwiGLU of intermediate_size as given (no
-- block_* width rule) and the others Lfm2MoeSparseMoeBlock: `num_experts`
-- SwiGLU experts of moe_intermediate_size, top num_experts_per_tok of
-- sigmoid scores (plus the expert_bias buffer to choose them when
-- use_expert_bias), renormalised when norm_topk_prob, times
-- routed_scaling_factor; a gate of E x h without bias; no shared expert,
-- no auxiliary loss. The expert_bias buffer is counted (E a layer), as
-- the checkpoint holds it.
function builders.lfm2_moe(_, cfg, file, notes, extra)
  -- Lfm2MoeConfig stores what it is given: a null is None there (a None
  -- width fails in the model; use_expert_bias, norm_topk_prob and the
  -- tie keys None are false)
  refuse_nulls(cfg, { "conv_L_cache", "hidden_size", "num_hidden_layers", "intermediate_size",
    "moe_intermediate_size", "num_experts", "num_experts_per_tok", "num_attention_heads", "num_key_value_heads",
    "vocab_size", "num_dense_layers", "use_expert_bias", "norm_topk_prob", "routed_scaling_factor",
    "tie_embedding", "tie_word_embeddings" }, file, "Lfm2MoeConfig")
  lfm2_class(cfg, file, "Lfm2MoeForCausalLM")
  if is_null(cfg.layer_types) then
    util.fail(file, "layer_types", "required key is missing: Lfm2MoeDecoderLayer indexes config.layer_types " ..
      "(Lfm2MoeConfig has no full_attn_idxs)", nil)
  end
  local t = class_defaults(cfg, M.LFM2_MOE_DEFAULTS)
  lfm2_tie(cfg, t, file)
  local r = reader(t, file)
  local m = llama_like(r, t, file, { own_activation = true, tied = true })
  lfm2_mixer(m, t, r, file, extra, lfm2_pattern(t, m.num_layers, file), "layer_types")
  m.num_experts = r.int("num_experts")
  m.experts_per_token = r.int("num_experts_per_tok")
  m.moe_ffn_hidden_size = r.int("moe_intermediate_size")
  local dense = count(t, "num_dense_layers", 0, file)
  if dense >= m.num_layers then
    util.fail(file, "num_dense_layers", "no layer would have experts (num_hidden_layers = " .. m.num_layers .. ")",
      dense)
  end
  if dense > 0 then m.moe_first_dense_layers = dense end
  if r.bool("use_expert_bias") then m.moe_router_bias = true else m.moe_router_sigmoid = true end
  deepseek_router(m, r, t, file, true, "noaux_tc", true)
  note(notes, file, "LFM2-MoE is trained by NeMo AutoModel as transformers builds it (FSDP2; no tensor, " ..
    "pipeline, context or expert parallelism): a built policy uses framework = automodel")
  return m
end

--- Kimi K3's text model through its wrapper (KimiK3Config builds
-- KimiK3TextConfig(**text_config), config.py l.311-312).
function builders.kimi_k3_text(_, cfg, file, notes) return kimi_linear(cfg, file, notes, true) end

--- Qwen3-VL's dense text model (transformers models/qwen3_vl/
-- configuration_qwen3_vl.py @ 000c33fd Qwen3VLTextConfig: head_dim 128,
-- untied, attention_bias on q, k, v, o; Qwen3's attention with Q/K norms
-- and gated MLP): read as qwen3.
builders.qwen3_vl_text = builders.qwen3

--- Qwen3-VL-MoE's text model (transformers models/qwen3_vl_moe/
-- modular_qwen3_vl_moe.py @ 02e8340b: Qwen3VLMoeTextConfig(Qwen3MoeConfig),
-- Qwen3MoeDecoderLayer, Qwen3-VL's text attention with Q/K norms): Qwen3-MoE
-- whose router always renormalises its top-k (Qwen3VLMoeTextTopKRouter;
-- the config has no norm_topk_prob) and whose class ties the embeddings
-- unless the config says otherwise (tie_word_embeddings default true).
function builders.qwen3_vl_moe_text(r, cfg, file)
  local c = with_defaults(cfg, { tie_word_embeddings = true })
  c.norm_topk_prob = true
  return builders.qwen3_moe(reader(c, file), c, file)
end

--- Qwen3OmniMoeTextConfig's defaults (transformers models/qwen3_omni_moe/
-- configuration_qwen3_omni_moe.py @ d9c9e55f), for the keys a thinker's
-- text_config leaves out.
M.QWEN3_OMNI_TEXT_DEFAULTS = { vocab_size = 3584, hidden_size = 2048, intermediate_size = 18944,
  num_hidden_layers = 28, num_attention_heads = 28, num_key_value_heads = 4, max_position_embeddings = 32768,
  rms_norm_eps = 1e-6, tie_word_embeddings = false, rope_theta = 1000000.0, attention_bias = false,
  decoder_sparse_step = 1, moe_intermediate_size = 768, num_experts_per_tok = 8, num_experts = 128,
  norm_topk_prob = true, router_aux_loss_coef = 0.001 }

--- Qwen3-Omni's thinker text model (transformers models/qwen3_omni_moe/
-- modular_qwen3_omni_moe.py @ f14d0cbc: Qwen3OmniMoeThinkerTextDecoderLayer
-- is Qwen3MoeDecoderLayer, its SparseMoeBlock Qwen3MoeSparseMoeBlock and
-- its attention Qwen3MoeAttention with sliding_window = None): Qwen3-MoE
-- with Qwen3OmniMoeTextConfig's defaults and no attention window whatever
-- the config says; shared_expert_intermediate_size, which the released
-- file gives as 0, builds nothing there (Qwen3MoeSparseMoeBlock has no
-- shared expert).
function builders.qwen3_omni_moe_text(_, cfg, file)
  local c = class_defaults(cfg, M.QWEN3_OMNI_TEXT_DEFAULTS)
  c.use_sliding_window, c.sliding_window, c.max_window_layers, c.layer_types = false, nil, nil, nil
  return builders.qwen3_moe(reader(c, file), c, file)
end

--- Qwen3.5-MoE's text model (transformers models/qwen3_5_moe/
-- modular_qwen3_5_moe.py @ e36255cb): Qwen3NextConfig without
-- intermediate_size, decoder_sparse_step, norm_topk_prob and
-- mlp_only_layers, so every layer is MoE (Qwen3_5MoeDecoderLayer) with
-- the renormalising router of Qwen3-VL-MoE; Qwen3-Next's attention, Gated
-- DeltaNet (Qwen3_5GatedDeltaNet: its projections split, the same
-- weights), experts and gated shared expert.  With no dense layer the
-- dense width is the expert's (it sizes nothing); the keys the class
-- deletes (intermediate_size, decoder_sparse_step, norm_topk_prob,
-- mlp_only_layers) are ignored as transformers ignores them.
-- @raise as builders.qwen3_next
function builders.qwen3_5_moe_text(r, cfg, file, notes)
  local c = {}
  for k, v in pairs(cfg) do c[k] = v end
  -- the keys Qwen3_5MoeTextConfig.__init__ deletes: ignored, as there
  c.decoder_sparse_step, c.mlp_only_layers = nil, nil
  c.intermediate_size = count(cfg, "moe_intermediate_size", nil, file)
  c.norm_topk_prob = true
  return builders.qwen3_next(reader(c, file), c, file, notes)
end

--- ERNIE 4.5 MoE's defaults (transformers configuration_ernie4_5_moe.py
-- @ f479d930 Ernie4_5_MoeConfig.__init__), for the keys a config.json
-- leaves out.
M.ERNIE45_MOE_DEFAULTS = { tie_word_embeddings = true, use_bias = false, moe_k = 6, moe_num_experts = 64,
  moe_num_shared_experts = 2, moe_layer_start_index = 1, moe_layer_end_index = -1, moe_layer_interval = 1,
  moe_intermediate_size = 1536, router_aux_loss_coef = 0.001, rope_theta = 500000.0,
  max_position_embeddings = 131072 }

--- ERNIE 4.5 MoE's config keys of the model fields an error may name.
M.ERNIE45_MOE_KEYS = { num_experts = "moe_num_experts", experts_per_token = "moe_k",
  moe_ffn_hidden_size = "moe_intermediate_size", shared_expert_ffn_hidden_size = "moe_num_shared_experts" }

--- ERNIE 4.5 MoE (transformers models/ernie4_5_moe: modular_ernie4_5_moe.py
-- @ a4d4492d, configuration_ernie4_5_moe.py @ f479d930): Llama's
-- attention; layer i (0-based) MoE when (i + 1) % moe_layer_interval == 0
-- and moe_layer_start_index <= i <= moe_layer_end_index (-1: the last
-- layer), else a SwiGLU MLP of intermediate_size; moe_num_experts
-- (attribute num_experts) SwiGLU experts of moe_intermediate_size, top
-- moe_k (num_experts_per_tok) of the softmax scores chosen with
-- Ernie4_5_MoeStatics' e_score_correction_bias (one per expert) added and
-- renormalised; the shared experts one ungated SwiGLU MLP of
-- moe_num_shared_experts x moe_intermediate_size; tied embeddings by
-- default; RoPE in interleaved pairs, as builders.ernie4_5.  use_bias would put biases on every projection and the
-- lm_head: not modelled.  transformers drops the MTP module (mtp*).
-- @raise NotImplemented for use_bias; `<file>: <key>: ...` as the readers
function builders.ernie4_5_moe(_, cfg, file, notes, extra)
  extra.config_keys = M.ERNIE45_MOE_KEYS
  require_silu(cfg, file, "ERNIE 4.5's SwiGLU experts and MLP")
  local c = class_defaults(cfg, M.ERNIE45_MOE_DEFAULTS)
  for alias, key in pairs({ num_experts = "moe_num_experts", num_experts_per_tok = "moe_k" }) do
    if is_null(cfg[key]) and not is_null(cfg[alias]) then c[key] = cfg[alias] end
  end
  local r = reader(c, file)
  if r.bool("use_bias") then
    error(("NotImplemented: %s: use_bias: ERNIE 4.5 with biases on every projection and the lm_head is " ..
      "not modelled (got true)"):format(file), 0)
  end
  local m = llama_like(r, c, file, { tied = true })
  m.rope_theta = c.rope_theta -- the class's default when the config has none (numerics keeps a given one)
  m.rotary_interleaved = true -- ERNIE 4.5's apply_rotary_pos_emb (modular_ernie4_5_moe.py imports it)
  m.num_experts, m.experts_per_token = r.int("moe_num_experts"), r.int("moe_k")
  m.moe_ffn_hidden_size = r.int("moe_intermediate_size")
  local L, k = m.num_layers, r.int("moe_layer_interval")
  local first = count(c, "moe_layer_start_index", nil, file)
  local last = c.moe_layer_end_index == -1 and L - 1 or count(c, "moe_layer_end_index", nil, file)
  if k > L or first > math.min(last, L - 1) then
    util.fail(file, "moe_layer_start_index", ("no layer would have experts (moe_layer_interval = %d, " ..
      "moe_layer_end_index = %d, num_hidden_layers = %d)"):format(k, last, L), first)
  end
  m.moe_layer_freq, m.moe_layer_phase = k, k - 1
  local dense = {}
  for i = k - 1, L - 1, k do
    if i < first or i > last then dense[#dense + 1] = i end
  end
  m.moe_dense_layers = #dense > 0 and dense or nil
  local shared = count(c, "moe_num_shared_experts", nil, file) * m.moe_ffn_hidden_size
  if shared > 0 then m.shared_expert_ffn_hidden_size = shared end
  m.moe_router_bias, m.moe_router_softmax_bias = true, true
  aux_loss(m, c, file, "router_aux_loss_coef")
  if count(c, "num_nextn_predict_layers", 0, file) > 0 then
    note(notes, file, "the checkpoint's multi-token-prediction module (mtp*) is not loaded by transformers " ..
      "and is not priced")
  end
  return m
end

---------------------------------------------------------------- MiMo-V2-Flash

-- MiMo-V2-Flash is read as vLLM builds it: vllm/model_executor/models/
-- mimo_v2_flash.py @ 01ed47b4166b26251895a9c298352fcdb2385149
-- (MiMoV2Attention, MiMoV2FlashDecoderLayer, MiMoV2MoE, MiMoV2MLP,
-- MiMoV2Model), which reads config.json's own keys; transformers'
-- models/mimo_v2_flash/modular_mimo_v2_flash.py builds the same modules.

--- The core's model fields under the names MiMo-V2-Flash's config gives
-- them (for the core's errors): the windowed layers' shape is the
-- model's, the full-attention layers' the global one.
M.MIMO_V2_CONFIG_KEYS = {
  num_query_groups = "swa_num_key_value_heads", head_dim = "swa_head_dim",
  global_num_query_groups = "num_key_value_heads", global_head_dim = "head_dim",
  attn_v_head_dim = "v_head_dim", sliding_window = "sliding_window_size",
  moe_router_num_groups = "n_group", moe_router_group_topk = "topk_group",
}

-- A per-layer list of 0/1 flags at cfg[key] (hybrid_layer_pattern:
-- 1 = sliding window, MiMoV2FlashDecoderLayer.is_compressed_softmax_layer;
-- moe_layer_freq: 1 = MoE, is_moe_layer): the flags and how many are 1.
local function layer_flags(cfg, key, L, file)
  local v = cfg[key]
  local keys = 0
  if type(v) == "table" then for _ in pairs(v) do keys = keys + 1 end end
  if type(v) ~= "table" or #v ~= L or keys ~= L then
    util.fail(file, key, "expected an array of num_hidden_layers = " .. L .. " entries of 0 or 1", v)
  end
  local flags, n = {}, 0
  for i = 1, L do
    if v[i] ~= 0 and v[i] ~= 1 then util.fail(file, key .. "[" .. (i - 1) .. "]", "expected 0 or 1", v[i]) end
    flags[i] = v[i] == 1
    if flags[i] then n = n + 1 end
  end
  return flags, n
end

-- The window: sliding_window_size (vLLM's key), sliding_window
-- (transformers') the same when both are given.
local function mimo_v2_window(cfg, file)
  local w, t = count(cfg, "sliding_window_size", nil, file), count(cfg, "sliding_window", nil, file)
  if w and t and w ~= t then
    util.fail(file, "sliding_window", ("expected sliding_window_size's %d (vLLM reads sliding_window_size, " ..
      "transformers sliding_window)"):format(w), t)
  end
  w = w or t
  if not w or w < 1 then
    util.fail(file, "sliding_window_size", "expected a window of >= 1 tokens for the layers " ..
      "hybrid_layer_pattern marks 1", cfg.sliding_window_size)
  end
  return w
end

-- One attention shape (MiMoV2Attention's arguments): KV heads, Q/K head
-- width, V head width (absent: the Q/K width).
local function mimo_v2_shape(r, kv, hd, vd)
  local d = r.int(hd)
  return { k = r.int(kv), d = d, v = r.int(vd, d), v_key = vd }
end

-- The V width of the layers in use: one for all of them (attn_v_head_dim),
-- nothing when each kind's V is as wide as its Q/K.
local function mimo_v2_v_width(m, file, used)
  local same = true
  for _, s in ipairs(used) do same = same and s.v == s.d end
  if same then return end
  for _, s in ipairs(used) do
    if s.v ~= used[1].v then
      not_modelled(file, s.v_key, ("V heads of another width than %s's %d: apsearch's V width is one for " ..
        "every layer"):format(used[1].v_key, used[1].v), s.v)
    end
  end
  m.attn_v_head_dim = used[1].v
end

-- The attention of both layer kinds: the windowed ones (hybrid_layer_
-- pattern 1) with the swa_* heads and a sink per query head when
-- add_swa_attention_sink_bias, the full ones with num_key_value_heads,
-- head_dim, v_head_dim and no sink (neither reference builds one there);
-- both with num_attention_heads query heads of their kind's Q/K width,
-- q/k/v biases when attention_bias, o_proj without.
local function mimo_v2_attention(m, r, cfg, file)
  local L = m.num_layers
  local _, n = layer_flags(cfg, "hybrid_layer_pattern", L, file)
  local qa, fa = r.int("swa_num_attention_heads"), m.num_attention_heads
  if r.bool("add_full_attention_sink_bias", false) then
    not_modelled(file, "add_full_attention_sink_bias", "sinks on the full-attention layers are built by neither " ..
      "vLLM's MiMoV2Attention nor transformers' MiMoV2FlashAttention; false is", true)
  end
  local sinks = r.bool("add_swa_attention_sink_bias", false)
  local full = mimo_v2_shape(r, "num_key_value_heads", "head_dim", "v_head_dim")
  local win = mimo_v2_shape(r, "swa_num_key_value_heads", "swa_head_dim", "swa_v_head_dim")
  m.qkv_bias = r.bool("attention_bias", false)
  local base = n > 0 and win or full
  m.num_query_groups, m.head_dim = base.k, base.d
  if n > 0 then
    m.sliding_window, m.sliding_window_layers = mimo_v2_window(cfg, file), n
    m.attention_sinks = sinks or nil
    m.num_attention_heads = qa -- the windowed layers' query heads
  end
  if n == 0 or n == L then return mimo_v2_v_width(m, file, { base }) end
  -- both kinds: the full layers' KV heads always given, so that the core
  -- prices the kinds apart (their sinks differ); their query heads when
  -- they differ from the windowed layers'
  m.global_num_query_groups = full.k
  if fa ~= qa then m.global_num_attention_heads = fa end
  if full.d ~= win.d then m.global_head_dim = full.d end
  m.window_attention_sinks = sinks or nil
  m.sliding_window_period = M.window_period(function(i) return cfg.hybrid_layer_pattern[i] == 1 end, L)
  mimo_v2_v_width(m, file, { win, full })
end

-- The MLPs: moe_layer_freq's 1 layers a MiMoV2MoE (n_routed_experts of
-- moe_intermediate_size, no shared expert; the gate h x E in float32 and
-- its e_score_correction_bias, sigmoid scores, grouped top-k of
-- DeepSeek-V3's noaux_tc), the 0 layers a MiMoV2MLP of intermediate_size;
-- SiLU only.
local function mimo_v2_moe(m, r, cfg, file)
  require_silu(cfg, file, "vLLM's MiMoV2MLP and MiMoV2MoE raise on any other activation")
  local flags, n = layer_flags(cfg, "moe_layer_freq", m.num_layers, file)
  if n == 0 then return end
  m.num_experts = r.int("n_routed_experts")
  m.experts_per_token = r.int("num_experts_per_tok")
  m.moe_ffn_hidden_size = r.int("moe_intermediate_size")
  local shared = count(cfg, "n_shared_experts", 0, file)
  if shared > 0 then
    not_modelled(file, "n_shared_experts", "MiMoV2MoE has no shared expert; 0 or null is", shared)
  end
  local dense, first = {}, 0
  for i = 1, m.num_layers do
    if not flags[i] then dense[#dense + 1] = i - 1 end
    if not flags[i] and first == i - 1 then first = i end
  end
  if first == #dense then
    m.moe_first_dense_layers = first > 0 and first or nil
  else
    m.moe_dense_layers = dense
  end
  if not is_null(cfg.scoring_func) then
    require_value(cfg, "scoring_func", "sigmoid", file, "MiMoV2MoE scores with a sigmoid whatever it says")
  end
  if not is_null(cfg.topk_method) then
    require_value(cfg, "topk_method", "noaux_tc", file, "MiMoV2MoE always adds e_score_correction_bias")
  end
  m.moe_router_bias = true
  deepseek_router(m, r, cfg, file, true, "noaux_tc", true)
end

-- What MiMo-V2-Flash has that changes no estimate, validated and noted.
local function mimo_v2_notes(m, cfg, file, notes)
  local swa_theta = positive(cfg, "swa_rope_theta", file)
  if swa_theta and m.sliding_window then
    note(notes, file, "the windowed layers' RoPE base swa_rope_theta %s rotates Q and K only and changes no " ..
      "estimate; the model carries the full-attention layers' rope_theta", util.describe(swa_theta))
  end
  local vs = positive(cfg, "attention_value_scale", file)
  if vs then
    note(notes, file, "attention_value_scale = %s multiplies V element-wise before attention; not priced",
      util.describe(vs))
  end
  if not is_null(cfg.attention_chunk_size) then
    count(cfg, "attention_chunk_size", nil, file)
    note(notes, file, "attention_chunk_size is read by neither vLLM's nor transformers' MiMo-V2-Flash " ..
      "modelling; ignored")
  end
  if m.attention_sinks then
    note(notes, file, "attention sinks (one learned logit per head, %d per windowed layer) are counted in the " ..
      "parameters; the softmax column they add is not in the attention FLOPs or time", m.num_attention_heads)
  end
  note(notes, file, "the card's 3-layer multi-token-prediction module (0.33B parameters per block; model.mtp.* " ..
    "in the checkpoint, skipped by vLLM's MiMoV2Model.load_weights) is not described by config.json: neither " ..
    "counted nor priced")
end

-- MiMo-V2-Flash (model_type mimo_v2_flash, MiMoV2FlashForCausalLM):
-- embeddings and lm_head (untied unless tie_word_embeddings), RMSNorm
-- before attention and MLP and after the last layer
-- (layernorm_epsilon), the attention and MLPs above.
function builders.mimo_v2_flash(r, cfg, file, notes, extra)
  local m = llama_like(r, cfg, file, {})
  m.head_dim = nil
  mimo_v2_attention(m, r, cfg, file)
  mimo_v2_moe(m, r, cfg, file)
  local eps = positive(cfg, "layernorm_epsilon", file)
  mimo_v2_notes(m, cfg, file, notes)
  m = numerics(m, cfg, file)
  m.norm_eps = m.norm_eps or eps
  extra.own_numerics = true
  extra.config_keys = M.MIMO_V2_CONFIG_KEYS
  return m
end

---------------------------------------------------------------- MiniMax-M3

-- MiniMax-M3 (model_type minimax_m3) is read as NeMo AutoModel builds its
-- text model: nemo_automodel/components/models/minimax_m3_vl/layers.py @
-- 00affc66 (MiniMaxM3Attention, MiniMaxM3Indexer, MiniMaxM3MLP, Block),
-- which mirrors SGLang's sglang.srt.models.minimax_m3.  GQA attention
-- (q h x a d, k and v h x k d, o a d x h, no biases) with per-head Gemma
-- Q/K norms; on the layers sparse_attention_config.sparse_attention_freq
-- marks, the selection-only indexer and block-sparse attention
-- (src/core/msa.c); the moe_layer_freq 0 layers a SwiGLU-OAI MLP of
-- dense_intermediate_size, the others num_local_experts of
-- intermediate_size (model.py build_moe_config; top num_experts_per_tok,
-- sigmoid scores with the routing bias, renormalised, routed_scaling_
-- factor) beside n_shared_experts x
-- shared_intermediate_size; Gemma RMSNorms; SwiGLU-OAI is gpt-oss's
-- clamped quick-GELU GLU (swiglu_alpha, swiglu_limit).

--- The MiniMax-M3 keys read with the value AutoModel implements (a
-- config giving another is refused, naming the key).
M.MINIMAX_M3_FIXED = {
  { "hidden_act", "swigluoai", "an MLP activation other than SwiGLU-OAI" },
  { "swiglu_alpha", 1.702, "a SwiGLU-OAI alpha other than quick GELU's 1.702" },
  { "qk_norm_type", "per_head", "Q/K norms other than per head (AutoModel asserts per_head)" },
  { "attention_output_gate", false, "the attention output gate (AutoModel asserts it off)" },
  { "scoring_func", "sigmoid", "router scores other than sigmoid" },
}

--- Config keys of the model fields MiniMax-M3 names its own way.
M.MINIMAX_M3_CONFIG_KEYS = {
  num_experts = "num_local_experts", experts_per_token = "num_experts_per_tok",
  moe_ffn_hidden_size = "moe_intermediate_size", ffn_hidden_size = "dense_intermediate_size",
  shared_expert_ffn_hidden_size = "shared_intermediate_size",
  msa_layers = "sparse_attention_config.sparse_attention_freq",
  msa_index_heads = "sparse_attention_config.sparse_num_index_heads",
  msa_index_dim = "sparse_attention_config.sparse_index_dim",
  msa_block_size = "sparse_attention_config.sparse_block_size",
  msa_topk_blocks = "sparse_attention_config.sparse_topk_blocks",
  msa_init_blocks = "sparse_attention_config.sparse_init_block",
  msa_local_blocks = "sparse_attention_config.sparse_local_block",
}

-- MiniMax-M3's sparse layers and their indexer (Block: sparse where
-- sparse_attention_freq is non-zero, all when it is absent; only the
-- selection-only indexer, sparse_disable_index_value non-zero).
local function minimax_m3_sparse(m, cfg, file)
  local sc = sub_config(cfg, "sparse_attention_config", file)
  -- Block: sparse_cfg.get("use_sparse_attention", True), a Python truth
  -- test: absent is on; false, 0, "", null, an empty list are off
  local use = sc.use_sparse_attention
  local off = use == false or use == 0 or use == "" or use == cjson.null or (type(use) == "table" and next(use) == nil)
  if next(sc) == nil or off then return end
  local where = file .. ": sparse_attention_config"
  local L, n = m.num_layers, 0
  local freq = sc.sparse_attention_freq
  if is_null(freq) then
    n = L
  else
    if type(freq) ~= "table" or #freq ~= L then
      util.fail(where, "sparse_attention_freq", "expected an array of num_hidden_layers = " .. L .. " entries", freq)
    end
    for i = 1, L do
      if type(freq[i]) ~= "number" then util.fail(where, ("sparse_attention_freq[%d]"):format(i - 1), "expected a number", freq[i]) end
      if freq[i] ~= 0 then n = n + 1 end
    end
  end
  if n == 0 then return end
  local dis = sc.sparse_disable_index_value
  if not is_null(dis) then
    if type(dis) ~= "table" or #dis ~= L then
      util.fail(where, "sparse_disable_index_value", "expected an array of num_hidden_layers = " .. L .. " entries", dis)
    end
    for i = 1, L do
      -- Python's `disable_flags[i] != 0`: False equals 0 there too
      if (is_null(freq) or freq[i] ~= 0) and (dis[i] == 0 or dis[i] == false) then
        not_modelled(where, ("sparse_disable_index_value[%d]"):format(i - 1), "an index value and output projection " ..
          "on a sparse layer (AutoModel implements the selection-only indexer)", 0)
      end
    end
  end
  local r = reader(sc, where)
  m.msa_layers = n
  m.msa_index_heads = r.int("sparse_num_index_heads")
  m.msa_index_dim = r.int("sparse_index_dim")
  m.msa_block_size = r.int("sparse_block_size")
  m.msa_topk_blocks = r.int("sparse_topk_blocks")
  local init = count(sc, "sparse_init_block", 0, where)
  if init > 0 then m.msa_init_blocks = init end
  local lb = count(sc, "sparse_local_block", 1, where)
  if lb ~= 1 then
    not_modelled(where, "sparse_local_block", "only 1 (the query's own block always attended, MiniMax-M3's) is " ..
      "modelled", lb)
  end
  m.msa_local_blocks = 1
  local st = sc.sparse_score_type
  if not is_null(st) and st ~= "max" and st ~= "lse" then
    util.fail(where, "sparse_score_type", 'expected "max" or "lse"', st)
  end
end

--- Builds the model table of a `minimax_m3` config (see above).
-- @tparam table _ the reader of the raw config (unused)
-- @tparam table cfg the decoded config.json
-- @tparam string file for errors
-- @tparam table notes collects the notes
-- @tparam table extra the builder's extras (config_keys)
-- @treturn table model table
-- @raise `<file>: <key>: <problem> (got <value>)`
function builders.minimax_m3(_, cfg, file, notes, extra)
  refuse_unfixed(cfg, file, M.MINIMAX_M3_FIXED)
  local r = reader(cfg, file)
  local m = llama_like(r, cfg, file, { own_activation = true })
  m.ffn_hidden_size = r.int("dense_intermediate_size")
  m.qk_norm = r.bool("use_qk_norm", false) or nil
  if r.bool("use_gemma_norm", false) then m.norm_zero_centered = true end
  m.glu_activation, m.glu_linear_offset = "quick_gelu", M.GPT_OSS_GLU.offset
  m.glu_clamp = positive(cfg, "swiglu_limit", file) or M.GPT_OSS_GLU.limit
  -- Block: every layer MoE without moe_layer_freq
  local flags, nm = {}, m.num_layers
  if not is_null(cfg.moe_layer_freq) then flags, nm = layer_flags(cfg, "moe_layer_freq", m.num_layers, file) end
  if nm > 0 then
    m.num_experts = r.int("num_local_experts")
    m.experts_per_token = r.int("num_experts_per_tok")
    -- model.py build_moe_config: moe_inter_dim = config.intermediate_size
    -- (nvidia/MiniMax-M3-NVFP4's text_config gives no moe_intermediate_size)
    m.moe_ffn_hidden_size = r.int("intermediate_size")
    local mi = cfg.moe_intermediate_size
    if not is_null(mi) and mi ~= m.moe_ffn_hidden_size then
      not_modelled(file, "moe_intermediate_size", ("experts of another width than intermediate_size = %d, which " ..
        "AutoModel's build_moe_config gives them"):format(m.moe_ffn_hidden_size), mi)
    end
    local shared = count(cfg, "n_shared_experts", 0, file)
    if shared > 0 then m.shared_expert_ffn_hidden_size = shared * r.int("shared_intermediate_size") end
    if r.bool("use_routing_bias", false) then m.moe_router_bias = true end
    local rsf = positive(cfg, "routed_scaling_factor", file)
    if rsf and rsf ~= 1 then m.moe_router_topk_scaling_factor = rsf end
    aux_loss(m, cfg, file, "router_aux_loss_coef")
    local dense = {}
    for i = 1, m.num_layers do if flags[i] == false then dense[#dense + 1] = i end end
    local lead = 0
    while lead < #dense and dense[lead + 1] == lead + 1 do lead = lead + 1 end
    if lead ~= #dense then
      not_modelled(file, "moe_layer_freq", "dense layers after the first MoE layer (AutoModel builds them; " ..
        "apsearch reads leading ones)", cfg.moe_layer_freq)
    end
    if lead > 0 then m.moe_first_dense_layers = lead end
    local fk = cfg.first_k_dense_replace
    if not is_null(fk) and fk ~= lead then
      util.fail(file, "first_k_dense_replace", ("expected %d, the leading dense layers of moe_layer_freq " ..
        "(AutoModel builds those, not this key's)"):format(lead), fk)
    end
  end
  minimax_m3_sparse(m, cfg, file)
  local mtp = count(cfg, "num_mtp_modules", 0, file)
  if mtp > 0 then
    note(notes, file, "the checkpoint's %d multi-token-prediction modules (num_mtp_modules) are not priced: " ..
      "AutoModel builds them (MiniMaxM3MTP) but not beside its MSA kernels ('supports MTP0 only')", mtp)
  end
  extra.config_keys = M.MINIMAX_M3_CONFIG_KEYS
  return numerics(m, cfg, file)
end

---------------------------------------------------------------- Step-3.5

-- Step-3.5-Flash (model_type step3p5, Step3p5ForCausalLM) is read as vLLM
-- builds it: vllm/model_executor/models/step3p5.py @ 01b50b9e.  Every
-- layer's Step3p5Attention has q a d, k and v k d (num_attention_groups),
-- o a d x h, per-head Gemma q_norm and k_norm, and with
-- use_head_wise_attn_gate a g_proj h x a (one sigmoid gate per head); the
-- layers of layer_types equal to attention_other_setting.attention_type
-- (sliding_attention) take that setting's heads, groups and head_dim and
-- the sliding_window.  Layers of moe_layers_enum are a FusedMoEBlock
-- (moe_num_experts of moe_intermediate_size, top moe_top_k, a gate h x E
-- in fp32 without bias and its router_bias, sigmoid scores, renormalised
-- with norm_expert_weight, moe_router_scaling_factor) beside a
-- share_expert of share_expert_dim; the others a Step3p5MLP of
-- intermediate_size; two Gemma RMSNorms a layer, the final norm, untied
-- lm_head.  The num_nextn_predict_layers MTP layers (model.layers.L..)
-- are skipped by vLLM's main model: noted, not counted.

--- Config keys of the model fields Step-3.5 names its own way.
M.STEP3P5_CONFIG_KEYS = {
  num_query_groups = "attention_other_setting.num_attention_groups", num_experts = "moe_num_experts",
  experts_per_token = "moe_top_k", moe_ffn_hidden_size = "moe_intermediate_size",
  shared_expert_ffn_hidden_size = "share_expert_dim",
  num_attention_heads = "attention_other_setting.num_attention_heads",
  global_num_attention_heads = "num_attention_heads", global_num_query_groups = "num_attention_groups",
}

-- The values vLLM's Step3p5 asserts or hard-wires (a config giving another
-- is refused, naming the key).
M.STEP3P5_FIXED = {
  { "att_impl_type", "GQA", "an attention other than GQA (Step3p5DecoderLayer raises)" },
  { "moe_router_activation", "sigmoid", "router scores other than sigmoid" },
  { "use_moe_router_bias", true, "a router without its bias (FusedMoEBlock asserts it)" },
  { "need_fp32_gate", true, "a router gate outside fp32 (FusedMoEBlock asserts it)" },
  { "sink", false, "attention sinks" },
}

-- The attention of both layer kinds: the full layers' num_attention_heads /
-- num_attention_groups / head_dim, the sliding ones' attention_other_setting.
local function step3p5_attention(m, r, cfg, file, L)
  local types = cfg.layer_types
  if type(types) ~= "table" or #types < L then
    util.fail(file, "layer_types", "expected at least num_hidden_layers = " .. L .. " entries", types)
  end
  local n = 0
  for i = 1, L do
    if types[i] ~= "full_attention" and types[i] ~= "sliding_attention" then
      util.fail(file, ("layer_types[%d]"):format(i - 1), 'expected "full_attention" or "sliding_attention" (0-based index)',
        types[i])
    end
    if types[i] == "sliding_attention" then n = n + 1 end
  end
  local full = { a = m.num_attention_heads, k = r.int("num_attention_groups"), d = r.int("head_dim") }
  local win = full
  local other = cfg.attention_other_setting
  if not is_null(other) then
    if type(other) ~= "table" then util.fail(file, "attention_other_setting", "expected an object", other) end
    if other.attention_type ~= "sliding_attention" then
      not_modelled(file, "attention_other_setting.attention_type", "another shape on layers other than the " ..
        "sliding_attention ones", other.attention_type)
    end
    local ro = reader(other, file .. ": attention_other_setting")
    win = { a = ro.int("num_attention_heads"), k = ro.int("num_attention_groups"), d = ro.int("head_dim") }
  end
  for _, kind in ipairs({ full, win }) do
    if kind.k < 2 then -- Step3p5Model.load_weights: "Only support GQA"
      not_modelled(file, "num_attention_groups", "one KV group (vLLM's Step3p5 asserts num_attention_groups > 1)",
        kind.k)
    end
  end
  local base = n > 0 and win or full
  m.num_attention_heads, m.num_query_groups, m.head_dim = base.a, base.k, base.d
  if n > 0 then
    m.sliding_window, m.sliding_window_layers = r.int("sliding_window"), n
    if n < L then
      if full.a ~= win.a then m.global_num_attention_heads = full.a end
      if full.k ~= win.k then m.global_num_query_groups = full.k end
      if full.d ~= win.d then m.global_head_dim = full.d end
      m.sliding_window_period = M.window_period(function(i) return types[i] == "sliding_attention" end, L)
    end
  end
  m.qk_norm = r.bool("use_qk_norm", false) or nil
  m.attention_head_gate = r.bool("use_head_wise_attn_gate", false) or nil
  m.qkv_bias = r.bool("attention_bias", false)
end

-- The MoE layers of moe_layers_enum (default 1 .. L - 1), the others dense.
local function step3p5_moe(m, r, cfg, file, L)
  local moe = {}
  local enum = cfg.moe_layers_enum
  if is_null(enum) then
    for i = 1, L - 1 do moe[i] = true end
  else
    if type(enum) ~= "string" then util.fail(file, "moe_layers_enum", "expected a comma-separated string", enum) end
    -- int(i) for i in enum.strip().split(","): every piece a decimal integer
    for tok in (enum .. ","):gmatch("([^,]*),") do
      local i = tok:match("^%s*(%d+)%s*$") and math.tointeger(tonumber(tok))
      if not i or i >= L then
        util.fail(file, "moe_layers_enum", ("expected comma-separated layer indices in [0, %d)"):format(L), enum)
      end
      moe[i] = true
    end
  end
  local dense = {}
  for i = 0, L - 1 do if not moe[i] then dense[#dense + 1] = i end end
  if #dense == L then return end
  set_dense_layers(m, dense, file, "moe_layers_enum", enum)
  m.num_experts = r.int("moe_num_experts")
  m.experts_per_token = r.int("moe_top_k")
  m.moe_ffn_hidden_size = r.int("moe_intermediate_size")
  -- FusedMoEBlock always builds the share_expert; the config classes that
  -- mirror Step3p5Config disagree on its default: required
  m.shared_expert_ffn_hidden_size = r.int("share_expert_dim")
  m.moe_router_bias = true
  -- vLLM's Step3p5Config: norm_expert_weight True by default
  if not r.bool("norm_expert_weight", true) then m.moe_router_pre_softmax = true end
  local rsf = positive(cfg, "moe_router_scaling_factor", file)
  if rsf and rsf ~= 1 then m.moe_router_topk_scaling_factor = rsf end
end

--- Builds the model table of a `step3p5` config (see above).
-- @tparam table _ the reader of the raw config (unused)
-- @tparam table cfg the decoded config.json
-- @tparam string file for errors
-- @tparam table notes collects the notes
-- @tparam table extra the builder's extras (config_keys, own_numerics)
-- @treturn table model table
-- @raise `<file>: <key>: <problem> (got <value>)`
function builders.step3p5(_, cfg, file, notes, extra)
  refuse_unfixed(cfg, file, M.STEP3P5_FIXED)
  if cfg.use_moe == false then not_modelled(file, "use_moe", "a dense Step-3.5 (vLLM builds MoE layers)", false) end
  -- vLLM's Step3p5Config defaults moe_router_activation to "softmax"
  if is_null(cfg.moe_router_activation) then
    not_modelled(file, "moe_router_activation", "router scores other than sigmoid (absent: Step3p5Config's " ..
      "\"softmax\") are not modelled", cfg.moe_router_activation)
  end
  local r = reader(cfg, file)
  local m = llama_like(r, cfg, file, {})
  local L = m.num_layers
  step3p5_attention(m, r, cfg, file, L)
  step3p5_moe(m, r, cfg, file, L)
  if r.bool("zero_centered", false) then m.norm_zero_centered = true end
  -- RoPE: one theta per layer (the full layers' carried), the llama3
  -- scaling on yarn_only_types' layers, partial rotation per layer: all
  -- rotate Q and K only
  local t = {}
  for k, v in pairs(cfg) do t[k] = v end
  local theta = cfg.rope_theta
  if type(theta) == "table" then
    local full
    for i = 1, L do
      if type(theta[i]) ~= "number" or not (theta[i] > 0 and theta[i] < math.huge) then
        util.fail(file, ("rope_theta[%d]"):format(i - 1), "expected a positive number per layer (0-based index)",
          theta[i])
      end
      if cfg.layer_types[i] == "full_attention" then full = full or theta[i] end
    end
    t.rope_theta = full or theta[1]
    note(notes, file, "rope_theta per layer (%s on the full-attention layers) and partial_rotary_factors rotate " ..
      "Q and K only and change no estimate; the model carries the full-attention layers' theta",
      util.describe(t.rope_theta))
  end
  t.partial_rotary_factors = nil
  swiglu_limits_note(notes, cfg, file)
  local mtp = count(cfg, "num_nextn_predict_layers", 0, file)
  if mtp > 0 then
    note(notes, file, "the checkpoint's %d multi-token-prediction layers (num_nextn_predict_layers) are skipped " ..
      "by vLLM's main model and neither counted nor priced", mtp)
  end
  extra.own_numerics = true
  extra.config_keys = M.STEP3P5_CONFIG_KEYS
  return numerics(m, t, file)
end

---------------------------------------------------------------- Laguna

-- Laguna (poolside; model_type laguna) is read as transformers builds it:
-- src/transformers/models/laguna/modeling_laguna.py @ 0205eec1 and
-- configuration_laguna.py @ 08911d5f.  LagunaAttention: q_proj h x a d of
-- the layer's own query heads (num_attention_heads_per_layer), k_proj and
-- v_proj h x k d, per-head q_norm / k_norm (RMSNorm(head_dim)), g_proj
-- h x a (gating true or "per-head": softplus, one gate per head; h x a d
-- for "per-element"), o_proj a d x h, biases on q, k, v, o with
-- attention_bias; the sliding_attention layers of layer_types windowed by
-- sliding_window.  The "dense" layers of mlp_layer_types (default the
-- first) a LagunaMLP of intermediate_size, the "sparse" ones a
-- LagunaSparseMoeBlock: num_experts of moe_intermediate_size, one shared
-- expert of shared_expert_intermediate_size, a router h x E without bias
-- and its e_score_correction_bias, sigmoid scores, the top-k renormalised,
-- times moe_routed_scaling_factor.  Untied lm_head by default.

--- LagunaConfig's defaults (configuration_laguna.py @ 08911d5f) for the
-- keys a config may leave out.
M.LAGUNA_DEFAULTS = {
  vocab_size = 100352, hidden_size = 2048, intermediate_size = 8192, num_hidden_layers = 40,
  num_attention_heads = 48, num_key_value_heads = 8, hidden_act = "silu", max_position_embeddings = 131072,
  rms_norm_eps = 1e-6, tie_word_embeddings = false, sliding_window = 512, moe_intermediate_size = 512,
  shared_expert_intermediate_size = 512, num_experts_per_tok = 8, num_experts = 256, router_aux_loss_coef = 0.001,
  head_dim = 128, attention_bias = false, gating = true, moe_routed_scaling_factor = 1.0,
  moe_router_logit_softcapping = 0.0,
}

--- Config keys of the model fields Laguna names its own way, for the
-- core's errors.
M.LAGUNA_CONFIG_KEYS = {
  num_experts = "num_experts", experts_per_token = "num_experts_per_tok",
  moe_ffn_hidden_size = "moe_intermediate_size", shared_expert_ffn_hidden_size = "shared_expert_intermediate_size",
  num_attention_heads = "num_attention_heads_per_layer", global_num_attention_heads = "num_attention_heads_per_layer",
}

-- The query heads of each layer kind from num_attention_heads_per_layer
-- (default num_attention_heads on every layer): one count per kind of
-- layer_types, else refused.  Returns the windowed and the full layers'.
local function laguna_heads(t, types, file)
  local L = #types
  local v = t.num_attention_heads_per_layer
  if is_null(v) then
    v = {}
    for i = 1, L do v[i] = t.num_attention_heads end
  end
  local keys = 0
  if type(v) == "table" then for _ in pairs(v) do keys = keys + 1 end end
  if type(v) ~= "table" or #v ~= L or keys ~= L then
    util.fail(file, "num_attention_heads_per_layer", "expected a list of num_hidden_layers = " .. L .. " entries", v)
  end
  local per, first = {}, {}
  for i = 1, L do
    local a = config_int(v[i], 1, file, ("num_attention_heads_per_layer[%d]"):format(i - 1))
    local kind = types[i]
    if per[kind] and per[kind] ~= a then
      not_modelled(file, ("num_attention_heads_per_layer[%d]"):format(i - 1), ("%s layers with %d query heads (entry " ..
        "%d) and %d (this one): apsearch prices one query-head count per layer type"):format(kind,
        per[kind], first[kind] - 1, a), a)
    end
    per[kind], first[kind] = a, first[kind] or i
  end
  return per.sliding_attention, per.full_attention
end

-- Laguna's attention: the window on the sliding_attention layers, each
-- kind's query heads, per-head Q/K norms, the output gate.
local function laguna_attention(m, r, t, file)
  local L = m.num_layers
  local n = sliding_layer_count(t, L, file) or 0
  local types = {}
  for i = 1, L do types[i] = n == 0 and "full_attention" or t.layer_types[i] end
  local sa, fa = laguna_heads(t, types, file)
  m.num_attention_heads = sa or fa
  if sa and fa and fa ~= sa then m.global_num_attention_heads = fa end
  window_on(m, r, n)
  -- the period, else the layout (Laguna's full layers 0, 4, 8, ... have
  -- none: Megatron's list form writes it), as set_window_period
  if n > 0 then set_window_period(m, { layer_types = types }, nil) end
  m.qk_norm = true
  local ab = r.bool("attention_bias", false)
  m.qkv_bias, m.attn_out_bias = ab, ab
  local g = t.gating
  if g == true or g == "per-head" then
    m.attention_head_gate = true
  elseif g == "per-element" then
    if m.global_num_attention_heads then
      not_modelled(file, "gating", ("a gate per head and channel beside two query-head counts (%d windowed, %d " ..
        "full): apsearch prices that gate on one attention shape"):format(m.num_attention_heads,
        m.global_num_attention_heads), g)
    end
    m.attention_output_gate = true
  elseif g ~= false then
    util.fail(file, "gating", 'expected true, false, "per-head" or "per-element"', g)
  end
end

-- Laguna's MLPs: the dense layers of mlp_layer_types, the experts and
-- their router on the rest.
local function laguna_moe(m, r, t, file, notes)
  glm4_moe_lite_dense(m, t, file)
  m.num_experts = r.int("num_experts")
  m.experts_per_token = r.int("num_experts_per_tok")
  m.moe_ffn_hidden_size = r.int("moe_intermediate_size")
  local shared = count(t, "shared_expert_intermediate_size", 0, file)
  if shared > 0 then m.shared_expert_ffn_hidden_size = shared end
  m.moe_router_bias = true -- sigmoid scores with e_score_correction_bias
  local rsf = positive(t, "moe_routed_scaling_factor", file)
  if rsf and rsf ~= 1 then m.moe_router_topk_scaling_factor = rsf end
  if r.bool("moe_apply_router_weight_on_input", false) then
    not_modelled(file, "moe_apply_router_weight_on_input", "transformers' Laguna raises NotImplementedError on it",
      true)
  end
  local cap = nonneg(t, "moe_router_logit_softcapping", file)
  if cap and cap > 0 then
    note(notes, file, "the router's logit soft-capping (moe_router_logit_softcapping %s) is element-wise and " ..
      "changes no estimate", util.describe(cap))
  end
  aux_loss(m, t, file, "router_aux_loss_coef")
end

--- Builds the model table of a `laguna` config (Laguna XS.2; see above).
-- @tparam table _ the reader of the raw config (unused: read with the defaults)
-- @tparam table cfg the decoded config.json
-- @tparam string file for errors
-- @tparam table notes collects the notes
-- @tparam table extra the builder's extras (config_keys)
-- @treturn table model table
-- @raise `<file>: <key>: <problem> (got <value>)`
function builders.laguna(_, cfg, file, notes, extra)
  local t = class_defaults(cfg, M.LAGUNA_DEFAULTS)
  local r = reader(t, file)
  local m = llama_like(r, t, file, {})
  laguna_attention(m, r, t, file)
  laguna_moe(m, r, t, file, notes)
  extra.config_keys = M.LAGUNA_CONFIG_KEYS
  return numerics(m, t, file)
end

---------------------------------------------------------------- DeepSeek-V4

-- DeepSeek-V4 (model_type deepseek_v4, DeepseekV4ForCausalLM) is read as
-- transformers builds it: src/transformers/models/deepseek_v4/
-- modeling_deepseek_v4.py @ 361455895daf94ca66f78cf6792b09af397b4b30 and
-- configuration_deepseek_v4.py @ b5b741e52e24b1c394ae4a0b13df86846284a1d3
-- (DeepseekV4Config.__post_init__ folds the legacy keys the published
-- config.json files give: compress_ratios, num_hash_layers,
-- qk_rope_head_dim); its MTP module as vLLM's vllm/model_executor/models/
-- deepseek_v4_mtp.py @ 45292767 loads the checkpoint's mtp.N.*.
-- src/core/dsv4.c prices what it adds to the GQA layer of its widths.

--- DeepseekV4Config's defaults for the keys a config.json may leave out
-- (sgl-project's DeepSeek-V4-Flash-FP8 gives no hidden_act, swiglu_limit,
-- routed_scaling_factor, rope_theta, ...): the class's field defaults.
M.DSV4_DEFAULTS = {
  hidden_act = "silu", swiglu_limit = 10.0, routed_scaling_factor = 1.5, rope_theta = 10000.0,
  compress_rope_theta = 160000.0, scoring_func = "sqrtsoftplus", norm_topk_prob = true,
  tie_word_embeddings = false, attention_bias = false, rms_norm_eps = 1e-6,
  hc_mult = 4, hc_sinkhorn_iters = 20, hc_eps = 1e-6, sliding_window = 128, o_groups = 8, o_lora_rank = 1024,
  index_n_heads = 64, index_head_dim = 128, index_topk = 512, num_nextn_predict_layers = 1,
  num_key_value_heads = 1, n_shared_experts = 1,
}

--- The compression rates of the two compressed kinds when the config
-- gives no compress_rates (configuration_deepseek_v4.py
-- default_compress_rates): CSA m = 4, HCA m' = 128.
M.DSV4_COMPRESS_RATES = { compressed_sparse_attention = 4, heavily_compressed_attention = 128 }

--- The attention kinds compress_ratios' entries name (configuration_
-- deepseek_v4.py _COMPRESS_RATIO_TO_LAYER_TYPE: 0 sliding, 4 CSA, 128 HCA;
-- any other entry raises a KeyError there).
M.DSV4_RATIO_KIND = { [0] = "sliding_attention", [4] = "compressed_sparse_attention",
                      [128] = "heavily_compressed_attention" }

--- Leading hash-routed MoE layers when the config gives neither
-- mlp_layer_types nor num_hash_layers (default_num_hash_layers).
M.DSV4_HASH_LAYERS = 3

--- The core's model fields under the names DeepSeek-V4's config gives
-- them (for the core's errors).
M.DSV4_CONFIG_KEYS = {
  num_query_groups = "num_key_value_heads", csa_layers = "compress_ratios", hca_layers = "compress_ratios",
  csa_compress_rate = "compress_rates", hca_compress_rate = "compress_rates",
  moe_hash_layers = "num_hash_layers", glu_clamp = "swiglu_limit",
  moe_router_topk_scaling_factor = "routed_scaling_factor", hc_mult = "hc_mult",
  hc_sinkhorn_iters = "hc_sinkhorn_iters", o_groups = "o_groups", o_lora_rank = "o_lora_rank",
  q_lora_rank = "q_lora_rank", index_n_heads = "index_n_heads", index_head_dim = "index_head_dim",
  index_topk = "index_topk", sliding_window = "sliding_window", head_dim = "head_dim",
  num_experts = "n_routed_experts", experts_per_token = "num_experts_per_tok",
  moe_ffn_hidden_size = "moe_intermediate_size", shared_expert_ffn_hidden_size = "moe_intermediate_size",
}

-- An array at cfg[key] of n or more entries (`extra` allowed beyond n:
-- compress_ratios lists the MTP layers' too).
local function dsv4_array(cfg, key, n, extra, file)
  local v = cfg[key]
  local keys = 0
  if type(v) == "table" then for _ in pairs(v) do keys = keys + 1 end end
  if type(v) ~= "table" or keys ~= #v or #v < n or #v > n + extra then
    util.fail(file, key, ("expected an array of num_hidden_layers = %d entries%s"):format(n,
      extra > 0 and (" (or %d with the MTP layers')"):format(n + extra) or ""), v)
  end
  return v
end

-- The rates of the two compressed kinds: compress_rates (an object keyed
-- by kind), else the legacy compress_rate_csa / compress_rate_hca, else
-- M.DSV4_COMPRESS_RATES.
local function dsv4_rates(cfg, file)
  local rates = { compressed_sparse_attention = M.DSV4_COMPRESS_RATES.compressed_sparse_attention,
                  heavily_compressed_attention = M.DSV4_COMPRESS_RATES.heavily_compressed_attention }
  local cr = cfg.compress_rates
  if not is_null(cr) then
    -- an object keyed by layer type; a list ([4, 128]) names no type
    if type(cr) ~= "table" or #cr > 0 then
      util.fail(file, "compress_rates", "expected an object of rates by layer type", cr)
    end
    for kind in pairs(rates) do
      if not is_null(cr[kind]) then rates[kind] = config_int(cr[kind], 1, file, "compress_rates." .. kind) end
    end
  end
  local csa = count(cfg, "compress_rate_csa", nil, file)
  local hca = count(cfg, "compress_rate_hca", nil, file)
  if csa then rates.compressed_sparse_attention = csa end
  if hca then rates.heavily_compressed_attention = hca end
  for kind, v in pairs(rates) do
    if v < 1 then util.fail(file, "compress_rates." .. kind, "expected a rate >= 1", v) end
  end
  return rates
end

-- The decoder layers' attention kinds as DeepseekV4Config.__post_init__
-- leaves them: layer_types (validated), else the legacy compress_ratios
-- (0, 4 or 128 each; entries past num_hidden_layers, the MTP layers',
-- must be 0: their layer is priced sliding-window only), else the class
-- default (2 HCA layers, then CSA and HCA alternating), noted.  Counts
-- of CSA and HCA layers.
local function dsv4_layer_kinds(cfg, L, mtp, file, notes)
  local csa, hca = 0, 0
  local function add(kind)
    if kind == "compressed_sparse_attention" then csa = csa + 1
    elseif kind == "heavily_compressed_attention" then hca = hca + 1 end
  end
  if not is_null(cfg.layer_types) then
    local t = dsv4_array(cfg, "layer_types", L, 0, file)
    for i = 1, L do
      if t[i] ~= "sliding_attention" and t[i] ~= "compressed_sparse_attention" and
         t[i] ~= "heavily_compressed_attention" then
        util.fail(file, ("layer_types[%d]"):format(i - 1), "expected sliding_attention, " ..
          "compressed_sparse_attention or heavily_compressed_attention", t[i])
      end
      add(t[i])
    end
    return csa, hca
  end
  if not is_null(cfg.compress_ratios) then
    local t = dsv4_array(cfg, "compress_ratios", L, mtp, file)
    for i = 1, #t do
      local kind = type(t[i]) == "number" and M.DSV4_RATIO_KIND[t[i]]
      if not kind then
        util.fail(file, ("compress_ratios[%d]"):format(i - 1), "expected 0, 4 or 128 (transformers' " ..
          "_COMPRESS_RATIO_TO_LAYER_TYPE: sliding, CSA, HCA)", t[i])
      end
      if i > L and t[i] ~= 0 then
        not_modelled(file, ("compress_ratios[%d]"):format(i - 1), "a compressed MTP layer: apsearch prices the " ..
          "MTP layer sliding-window only (0)", t[i])
      end
      if i <= L then add(kind) end
    end
    return csa, hca
  end
  for i = 1, L do
    add((i <= 2 or i % 2 == 1) and "heavily_compressed_attention" or "compressed_sparse_attention")
  end
  note(notes, file, "neither layer_types nor compress_ratios given: DeepseekV4Config's default schedule " ..
    "(2 HCA layers, then CSA and HCA alternating) is read")
  return csa, hca
end

-- Hash-routed layers: mlp_layer_types' hash_moe entries, else the legacy
-- num_hash_layers, else M.DSV4_HASH_LAYERS (capped at num_hidden_layers).
local function dsv4_hash_layers(cfg, L, file)
  if not is_null(cfg.mlp_layer_types) then
    local t, n = dsv4_array(cfg, "mlp_layer_types", L, 0, file), 0
    for i = 1, L do
      if t[i] ~= "hash_moe" and t[i] ~= "moe" then
        util.fail(file, ("mlp_layer_types[%d]"):format(i - 1), "expected hash_moe or moe", t[i])
      end
      if t[i] == "hash_moe" then n = n + 1 end
    end
    return n
  end
  local n = count(cfg, "num_hash_layers", M.DSV4_HASH_LAYERS, file)
  if n > L then
    util.fail(file, "num_hash_layers", ("expected at most num_hidden_layers = %d"):format(L), n)
  end
  return n
end

-- The attention: q_a_proj h -> q_lora_rank, q_b_proj to num_attention_
-- heads x head_dim, one kv_proj to head_dim whatever num_key_value_heads
-- says (refused when not 1), partial RoPE over qk_rope_head_dim
-- (partial_rotary_factor), the grouped output projection, a sink per
-- head, the window on every layer, the compressed kinds and the indexer.
local function dsv4_attention(m, r, cfg, file, notes)
  local L = m.num_layers
  if r.int("num_key_value_heads") ~= 1 then
    not_modelled(file, "num_key_value_heads", "DeepseekV4Attention builds one shared KV head (kv_proj h -> " ..
      "head_dim) whatever it says; 1 is", cfg.num_key_value_heads)
  end
  if r.bool("attention_bias") then
    not_modelled(file, "attention_bias", "DeepseekV4Attention's projections have no bias; false is", true)
  end
  m.num_query_groups = 1
  m.head_dim = r.int("head_dim")
  m.q_lora_rank = r.int("q_lora_rank")
  local rope = count(cfg, "qk_rope_head_dim", nil, file)
  if rope and is_null(cfg.partial_rotary_factor) then
    if rope > m.head_dim then
      util.fail(file, "qk_rope_head_dim", ("expected at most head_dim = %d"):format(m.head_dim), rope)
    end
    m.rotary_percent = rope < m.head_dim and rope / m.head_dim or nil
  end
  m.o_groups, m.o_lora_rank = r.int("o_groups"), r.int("o_lora_rank")
  m.sliding_window = r.int("sliding_window")
  m.attention_sinks = true
  local rates = dsv4_rates(cfg, file)
  m.csa_compress_rate = rates.compressed_sparse_attention
  m.hca_compress_rate = rates.heavily_compressed_attention
  local csa, hca = dsv4_layer_kinds(cfg, L, m.mtp_layers or 0, file, notes)
  m.csa_layers, m.hca_layers = csa, hca
  if csa > 0 then
    m.index_n_heads, m.index_head_dim = r.int("index_n_heads"), r.int("index_head_dim")
    m.index_topk = r.int("index_topk")
  end
  m.hc_mult, m.hc_sinkhorn_iters = r.int("hc_mult"), r.int("hc_sinkhorn_iters")
  positive(cfg, "hc_eps", file)
end

-- The MoE block on every layer: n_routed_experts of moe_intermediate_size
-- with the clamped SwiGLU (swiglu_limit), one shared expert of the same
-- width (DeepseekV4MLP reads intermediate_size = moe_intermediate_size:
-- one whatever n_shared_experts says, refused when not 1), the router
-- (gate h x E; sqrtsoftplus, softmax or sigmoid scores, the top-k
-- renormalised and scaled by routed_scaling_factor); e_score_correction_
-- bias and tid2eid are buffers, not parameters.
local function dsv4_moe(m, r, cfg, file)
  require_silu(cfg, file, "DeepseekV4Experts clamps and gates with SiLU")
  m.num_experts = r.int("n_routed_experts")
  m.experts_per_token = r.int("num_experts_per_tok")
  m.moe_ffn_hidden_size = r.int("moe_intermediate_size")
  m.ffn_hidden_size = m.moe_ffn_hidden_size -- no dense layer: never built
  local shared = count(cfg, "n_shared_experts", 1, file)
  if shared ~= 1 then
    not_modelled(file, "n_shared_experts", "DeepseekV4SparseMoeBlock builds one shared expert of " ..
      "moe_intermediate_size whatever it says; 1 is", shared)
  end
  m.shared_expert_ffn_hidden_size = m.moe_ffn_hidden_size
  local sf = cfg.scoring_func
  if sf ~= "sqrtsoftplus" and sf ~= "softmax" and sf ~= "sigmoid" then
    util.fail(file, "scoring_func", "expected sqrtsoftplus, softmax or sigmoid (DeepseekV4TopKRouter's score_fn)", sf)
  end
  if not is_null(cfg.topk_method) then
    require_value(cfg, "topk_method", "noaux_tc", file, "DeepseekV4TopKRouter adds e_score_correction_bias " ..
      "to choose the top-k")
  end
  if m.experts_per_token > 1 and not r.bool("norm_topk_prob", true) then m.moe_router_pre_softmax = true end
  local rsf = nonneg(cfg, "routed_scaling_factor", file)
  if rsf and rsf > 0 then m.moe_router_topk_scaling_factor = rsf end
  local limit = positive(cfg, "swiglu_limit", file)
  m.glu_clamp = limit
  m.moe_hash_layers = dsv4_hash_layers(cfg, m.num_layers, file)
end

-- What DeepSeek-V4 has that changes no estimate or is priced by an
-- approximation, noted.
local function dsv4_notes(m, cfg, file, notes)
  note(notes, file, "DeepSeek-V4: %d sliding-window, %d CSA (1 entry per %d tokens, the indexer's top-%s) and " ..
    "%d HCA (1 entry per %d tokens) layers, mHC of %d streams; the compressed keys are priced as the mean " ..
    "layer's (src/core/dsv4.c), not stage by stage", m.num_layers - m.csa_layers - m.hca_layers, m.csa_layers,
    m.csa_compress_rate, tostring(m.index_topk or 0), m.hca_layers, m.hca_compress_rate, m.hc_mult)
  note(notes, file, "the first %d MoE layers route by the token-id table tid2eid (hash_moe; a buffer of " ..
    "vocab_size x num_experts_per_tok, not a parameter) and still run the gate GEMM: priced as the others",
    m.moe_hash_layers)
  note(notes, file, "e_score_correction_bias (on the top-k routed layers) and tid2eid are buffers, not counted " ..
    "in the parameters; the %s scores change no estimate", util.describe(cfg.scoring_func))
  local ct = positive(cfg, "compress_rope_theta", file)
  if ct then
    note(notes, file, "compress_rope_theta %s (the compressed layers' RoPE base, with rope_scaling's yarn) " ..
      "changes no estimate; the model carries the sliding layers' rope_theta", util.describe(ct))
  end
  note(notes, file, "the indexer's scores, top-k and pooled keys run forward only (no indexer loss: " ..
    "Megatron-Bridge's DeepSeek-V4 recipes disable it); its scores are priced at S / (2 x %d) causal entries " ..
    "per query", m.csa_compress_rate)
  if not is_null(cfg.expert_dtype) then
    note(notes, file, "expert_dtype %s is the released checkpoint's expert format; training is priced in the " ..
      "run's precision", util.describe(cfg.expert_dtype))
  end
end

-- DeepSeek-V4 (model_type deepseek_v4, DeepseekV4ForCausalLM): embeddings
-- and lm_head (untied), the layers above with input_layernorm and
-- post_attention_layernorm, hc_head and the final norm; MTP modules
-- counted apart (num_nextn_predict_layers).
function builders.deepseek_v4(r0, cfg, file, notes, extra)
  cfg = class_defaults(cfg, M.DSV4_DEFAULTS)
  local r = reader(cfg, file)
  if r.bool("tie_word_embeddings") then
    not_modelled(file, "tie_word_embeddings", "DeepseekV4ForCausalLM's lm_head is its own; false is", true)
  end
  local m = {
    num_layers = r.int("num_hidden_layers"), hidden_size = r.int("hidden_size"),
    num_attention_heads = r.int("num_attention_heads"), vocab_size = r.int("vocab_size"),
    norms_per_layer = 2, mlp = "swiglu", norm = "rmsnorm", position_embedding = "rope",
    norm_bias = false, qkv_bias = false, attn_out_bias = false, mlp_bias = false, qk_norm = false,
    tie_word_embeddings = false,
  }
  if r.has("max_position_embeddings") then m.max_position_embeddings = r.int("max_position_embeddings") end
  local mtp = count(cfg, "num_nextn_predict_layers", 0, file)
  if mtp > 0 then m.mtp_layers = mtp end
  dsv4_attention(m, r, cfg, file, notes)
  dsv4_moe(m, r, cfg, file)
  dsv4_notes(m, cfg, file, notes)
  -- numerics of the sliding layers' RoPE: a nested rope_parameters'
  -- "main" entry (transformers 5's layout), else the top-level keys
  local rp = cfg.rope_parameters
  local ncfg = cfg
  if type(rp) == "table" and type(rp.main) == "table" then
    ncfg = with_defaults({ rope_parameters = rp.main }, cfg)
  end
  m = numerics(m, ncfg, file)
  extra.own_numerics = true
  extra.config_keys = M.DSV4_CONFIG_KEYS
  return m
end

--- Model types whose Megatron-Bridge bridge routes in fp32
-- (`provider.moe_router_dtype = "fp32"`; NVIDIA-NeMo/Megatron-Bridge
-- 067f987df src/megatron/bridge/models/, the file and line of each): their
-- MoE models get `moe_router_fp32` (Megatron `--moe-router-dtype fp32`).
-- Step-3.5's sets it when the config's need_fp32_gate is true. Not here:
-- qwen3_moe, qwen2_moe, mixtral, gpt_oss, llama4, ..., whose bridges leave
-- Megatron's default (the router in the activations' dtype).
M.ROUTER_FP32 = {
  deepseek_v2 = "deepseek/deepseek_v2_bridge.py:61", deepseek_v3 = "deepseek/deepseek_v3_bridge.py:75",
  deepseek_v32 = "deepseek/deepseek_v3_bridge.py:75", deepseek_v4 = "deepseek/deepseek_v4_bridge.py:492",
  kimi_k3_text = "kimi/kimi_k3_bridge.py:99", ernie4_5_moe = "ernie/ernie_45_bridge.py:227",
  exaone_moe = "exaone/exaone_moe/exaone_moe_provider.py:206", gemma4_text = "gemma/gemma4_provider.py:316",
  gemma4 = "gemma_vl/gemma4_vl_bridge.py:70 (Gemma4VLModelProvider of gemma/gemma4_provider.py:316)",
  glm4_moe = "glm/glm45_bridge.py:77", glm4_moe_lite = "glm/glm47_flash_bridge.py:88",
  glm_moe_dsa = "glm_moe_dsa/glm5_bridge.py:104", glm4v_moe_text = "glm_vl/glm_45v_provider.py:87",
  minimax_m3 = "minimax_m3/minimax_m3_bridge.py:357", nemotron_h = "nemotronh/nemotron_h_bridge.py:314",
  olmoe = "olmoe/olmoe_bridge.py:95", qwen3_next = "qwen/qwen3_next_bridge.py:76",
  qwen3_5_moe_text = "qwen_vl/qwen35_vl_provider.py:390", qwen3_vl_moe_text = "qwen_vl/qwen3_vl_provider.py:256",
  step3p5 = "stepfun/step35_bridge.py:366-367 (need_fp32_gate)", bailing_moe_v2 = "bailing/bailing_moe2_bridge.py:99",
  hy_v3 = "hy_v3/hy_v3_bridge.py:88",
  sarvam_moe = "sarvam/sarvam_provider.py:103", sarvam_mla = "sarvam/sarvam_provider.py:188",
}

--- Mixture-of-experts model types imported with their experts.
M.moe_supported = { "mixtral", "qwen2_moe", "qwen3_moe", "qwen3_next", "deepseek_v2", "deepseek_v3",
                    "olmoe", "dbrx", "gpt_oss", "glm4_moe", "glm4_moe_lite", "llama4_text", "llama4",
                    "minimax_m2", "qwen3_vl_moe_text", "qwen3_omni_moe_text", "qwen3_5_moe_text", "ernie4_5_moe",
                    "deepseek_v32", "glm_moe_dsa", "phimoe", "granitemoe", "granitemoeshared",
                    "granitemoehybrid", "hunyuan_v1_moe", "dots1", "glm4v_moe_text", "gemma4_text", "gemma4",
                    "mimo_v2_flash", "deepseek_v4", "laguna", "minimax_m3", "step3p5", "kimi_linear", "kimi_k3_text", "afmoe", "mistral4", "solar_open", "exaone_moe", "flex_olmo",
                    "bailing_moe_v2", "bailing_moe", "lfm2_moe", "minimax", "jamba", "hy_v3", "sarvam_moe", "sarvam_mla" }

--- Modelling classes (config.json `architectures`) of the supported
-- types: a config whose own model_type has no reader but whose class is
-- one of these (Kimi-K2: "kimi_k2" with DeepseekV3ForCausalLM, remote
-- code that is DeepSeek-V3's) is read as that class's type.
M.ARCHITECTURES = {
  DeepseekV3ForCausalLM = "deepseek_v3", DeepseekV2ForCausalLM = "deepseek_v2",
  LlamaForCausalLM = "llama", MistralForCausalLM = "mistral", MixtralForCausalLM = "mixtral",
  Qwen2ForCausalLM = "qwen2", Qwen3ForCausalLM = "qwen3", Qwen2MoeForCausalLM = "qwen2_moe", MiMoForCausalLM = "mimo",
  Qwen3MoeForCausalLM = "qwen3_moe", Qwen3NextForCausalLM = "qwen3_next", Glm4MoeForCausalLM = "glm4_moe",
  Glm4MoeLiteForCausalLM = "glm4_moe_lite",
  Llama4ForCausalLM = "llama4_text", Llama4ForConditionalGeneration = "llama4", Gemma4ForCausalLM = "gemma4_text",
  MiniMaxM2ForCausalLM = "minimax_m2", SmolLM3ForCausalLM = "smollm3", SeedOssForCausalLM = "seed_oss",
  Ernie4_5_MoeForCausalLM = "ernie4_5_moe", MiMoV2FlashForCausalLM = "mimo_v2_flash", LagunaForCausalLM = "laguna",
  DeepseekV32ForCausalLM = "deepseek_v32", GlmMoeDsaForCausalLM = "glm_moe_dsa",
  DeepseekV4ForCausalLM = "deepseek_v4", Mistral4ForCausalLM = "mistral4", SolarOpenForCausalLM = "solar_open", ExaoneMoeForCausalLM = "exaone_moe", Jais2ForCausalLM = "jais2", YoutuForCausalLM = "youtu", FlexOlmoForCausalLM = "flex_olmo", NanoChatForCausalLM = "nanochat", CwmForCausalLM = "cwm", OlmoHybridForCausalLM = "olmo_hybrid",
  PhimoeForCausalLM = "phimoe", PhiMoEForCausalLM = "phimoe", BailingMoeV2ForCausalLM = "bailing_moe_v2",
  BailingMoeForCausalLM = "bailing_moe", InternLM2ForCausalLM = "internlm2", InternLM3ForCausalLM = "internlm3",
  ExaoneForCausalLM = "exaone",
  Olmo2ForCausalLM = "olmo2", Olmo3ForCausalLM = "olmo3", Glm4ForCausalLM = "glm4",
  GraniteForCausalLM = "granite", GraniteMoeForCausalLM = "granitemoe", GraniteMoeSharedForCausalLM = "granitemoeshared",
  GraniteMoeHybridForCausalLM = "granitemoehybrid", Exaone4ForCausalLM = "exaone4",
  Ministral3ForCausalLM = "ministral3", Dots1ForCausalLM = "dots1", Cohere2ForCausalLM = "cohere2", HunYuanDenseV1ForCausalLM = "hunyuan_v1_dense", HunYuanMoEV1ForCausalLM = "hunyuan_v1_moe",
  Qwen2VLForConditionalGeneration = "qwen2_vl", Qwen2_5_VLForConditionalGeneration = "qwen2_5_vl",
  NemotronForCausalLM = "nemotron", ArceeForCausalLM = "arcee", Ernie4_5ForCausalLM = "ernie4_5",
  Ernie4_5_ForCausalLM = "ernie4_5", -- the name Baidu's own config.json files give the class
  Starcoder2ForCausalLM = "starcoder2", StableLmForCausalLM = "stablelm", PhiForCausalLM = "phi",
  CohereForCausalLM = "cohere", GlmForCausalLM = "glm", OlmoForCausalLM = "olmo", BambaForCausalLM = "bamba", FalconH1ForCausalLM = "falcon_h1", Mamba2ForCausalLM = "mamba2", GPTBigCodeForCausalLM = "gpt_bigcode", GPTJForCausalLM = "gptj", FalconForCausalLM = "falcon", BloomForCausalLM = "bloom", HeliumForCausalLM = "helium",
  Lfm2ForCausalLM = "lfm2", Lfm2MoeForCausalLM = "lfm2_moe",
  -- MiniMax-Text-01 / M1: transformers' class and the remote code's
  -- (MiniMaxAI/MiniMax-Text-01, MiniMax-M1-40k / 80k config.json)
  MiniMaxForCausalLM = "minimax", MiniMaxText01ForCausalLM = "minimax", MiniMaxM1ForCausalLM = "minimax",
  JambaForCausalLM = "jamba", HYV3ForCausalLM = "hy_v3",
  -- transformers' class and the Hub repository's remote code's (the one
  -- Megatron-Bridge registers its bridge under)
  SarvamMoeForCausalLM = "sarvam_moe", SarvamMoEForCausalLM = "sarvam_moe", SarvamMLAForCausalLM = "sarvam_mla",
}

--- Modelling classes of types apsearch knows and does not model
-- (M.UNMODELLED), for configs that name the class under another
-- model_type or none (sgl-project's DeepSeek-V4-Flash-FP8 and -Pro-FP8,
-- "deepseek_ref" with DeepseekV4ForCausalLM, are read by M.ARCHITECTURES
-- now that deepseek_v4 has a reader); nvidia/MiniMax-M3-NVFP4's
-- text_config gives no model_type, only MiniMaxM3SparseForCausalLM
-- (ai-dynamo/aiconfigurator @ 095f58a5, aic-core/src/aiconfigurator_core/
-- model_configs/); the classes are those the types' own configs name.
M.UNMODELLED_ARCHITECTURES = {
  MiniMaxM3ForCausalLM = "minimax_m3", PanguEmbeddedForCausalLM = "PanguEmbedded",
  Step3p5ForCausalLM = "step3p5",
  MiniMaxM3SparseForCausalLM = "minimax_m3",
  Step3p7FlashForCausalLM = "step3p7", Step3p7ForConditionalGeneration = "step3p7",
  Step3TextForCausalLM = "step3_text", Step3VLForConditionalGeneration = "step3_vl",
  -- the classes transformers' modeling files (and vLLM's registry, for
  -- MiniMax-Text-01 / M1) give the types M.UNMODELLED refuses
  Zamba2ForCausalLM = "zamba2", LongcatFlashForCausalLM = "longcat_flash",
  Gemma3nForConditionalGeneration = "gemma3n",
  Gemma3nForCausalLM = "gemma3n_text",
}

--- Model types whose released config.json files name more than one
-- model: the `architectures` class, which their auto_map loads, decides.
-- Ling 2.0's files say model_type bailing_moe, Ling 1.x's, beside
-- BailingMoeV2ForCausalLM (inclusionAI/Ling-flash-2.0 config.json).
M.CLASS_DECIDES = { bailing_moe = true }

--- Model types without a reader whose released config.json files name
-- the modelling class of one (their auto_map loads that remote code): a
-- copy of the file without `architectures` is read by that class.
-- Kimi-K2 (moonshotai/Kimi-K2-Instruct: model_type kimi_k2,
-- DeepseekV3ForCausalLM, modeling_deepseek.py).
M.TYPE_CLASSES = { kimi_k2 = "DeepseekV3ForCausalLM" }

--- Encoder-only model types of transformers (a bidirectional encoder
-- with a masked-LM head, no causal decoder): said as such when refused.
M.ENCODER_ONLY_TYPES = { bert = true, roberta = true, ["xlm-roberta"] = true, deberta = true,
  ["deberta-v2"] = true, electra = true, albert = true, distilbert = true, modernbert = true,
  camembert = true, mpnet = true, ernie = true, ["nomic_bert"] = true }

--- What an unsupported config is when it is not a decoder-only language
-- model: "an encoder-decoder model (is_encoder_decoder true)" (T5, BART,
-- Whisper: PretrainedConfig.is_encoder_decoder, transformers
-- configuration_utils.py) or "an encoder-only model (bert)"; nil else.
-- @tparam table cfg the config
-- @param mt its model_type
-- @treturn string|nil
function M.not_decoder_only(cfg, mt)
  if cfg.is_encoder_decoder == true then return "an encoder-decoder model (is_encoder_decoder true)" end
  if type(mt) == "string" and M.ENCODER_ONLY_TYPES[mt:lower()] then
    return ("an encoder-only model (%s)"):format(mt)
  end
  return nil
end

--- Model types without a reader whose name is close to a reader's but
-- whose model is not that reader's: no "did you mean" is offered (a
-- config renamed to the hint would be read as another model without a
-- word), the error says what differs instead.
M.NOT_LIKE = {
  qwen = 'Qwen v1 (QWenLMHeadModel: one c_attn GEMM with biases, no grouped K/V heads, an intermediate_size ' ..
    'twice its MLP width), not the model of "qwen2"',
  opt = 'OPT (learned positions, a ReLU MLP, LayerNorms with biases), not the model of "mpt"',
  falcon_mamba = 'Falcon-Mamba (Mamba-1 mixers without MLPs, through the fused mamba_inner_fn), not the model ' ..
    'of "falcon"; Mamba-1 mixers are modelled inside Jamba\'s layers ("jamba") only',
  mamba = 'Mamba-1 (the selective scan with x_proj and dt_proj, without MLPs, through the fused mamba_inner_fn), ' ..
    'not the SSD mixers of "mamba2"; Mamba-1 mixers are modelled inside Jamba\'s layers ("jamba") only',
  hunyuan = 'Hunyuan-Large (K/V shared across layers, use_cla and cla_share_factor), not the model of ' ..
    '"hunyuan_v1_moe"',
}

--- The model_type a config is read as: its own when a reader has it (for
-- M.CLASS_DECIDES, when its class is not another reader's) or
-- apsearch knows it does not model it (M.UNMODELLED: refused naming what
-- it lacks, whatever class `architectures` names), else that of its
-- `architectures` class (M.ARCHITECTURES, or M.UNMODELLED_ARCHITECTURES:
-- refused as that type).
-- @tparam table cfg config.json
-- @treturn any the model_type
-- @treturn string|nil the class it was taken from, when not its own
function M.model_type_of(cfg)
  local mt = cfg.model_type
  local arch = type(cfg.architectures) == "table" and cfg.architectures[1]
  if is_null(cfg.architectures) and type(mt) == "string" and not builders[mt] then
    arch = M.TYPE_CLASSES[mt] or arch
  end
  local as = type(arch) == "string" and M.ARCHITECTURES[arch]
  if type(mt) == "string" and builders[mt] and not (M.CLASS_DECIDES[mt] and as and as ~= mt) then
    return mt
  end
  -- an unmodelled type, or one of M.CLASS_DECIDES, whose class is a
  -- modelled one is that class's
  if as and builders[as] then return as, arch end
  if type(mt) == "string" and M.UNMODELLED[mt] then return mt end
  local un = type(arch) == "string" and M.UNMODELLED_ARCHITECTURES[arch]
  if un then return un, arch end
  return mt
end

-- How a refusal names the type a config is read as: `deepseek_v4`, or
-- for one taken from its class (M.model_type_of), its own model_type with
-- that class: `deepseek_ref (read as deepseek_v4 by its architectures
-- class DeepseekV4ForCausalLM)`, `(missing) (read as ...)`; quoted: the
-- config's own value as util.describe writes it.
local function read_as(cfg, mt, as, quoted)
  local function say(v) return quoted and util.describe(v) or util.clip(v) end
  if not as then return say(mt) end
  local own = cfg.model_type
  own = type(own) == "string" and own ~= "" and say(own) or "(missing)"
  return ("%s (read as %s by its architectures class %s)"):format(own, mt, as)
end

--- The model types whose builders read DeepSeek Sparse Attention's
-- indexer (M.DSA_KEYS): DeepSeek-V3.2 and GLM-5, and DeepSeek-V4 (its
-- CSA layers' indexer over compressed entries, src/core/dsv4.c).
M.DSA_TYPES = { deepseek_v32 = true, glm_moe_dsa = true, deepseek_v4 = true }

--- Why DSA keys on any other type are refused: that type's builder would
-- drop the indexer and price dense attention.
M.DSA_UNMODELLED = "DeepSeek Sparse Attention (the lightning indexer of index_n_heads x index_head_dim " ..
  "per layer and the top-index_topk sparse attention) is modelled for model_type deepseek_v32 and " ..
  "glm_moe_dsa only"

-- What Gemma 3n's text model has that apsearch does not model.
local GEMMA3N_UNMODELLED = "Gemma 3n's text model (AltUp's altup_num_inputs parallel streams, LAuReL's " ..
  "laurel_rank residual, per-layer inputs of hidden_size_per_layer_input, KV sharing across " ..
  "num_kv_shared_layers, activation_sparsity_pattern) is not modelled"

--- Model types apsearch knows and does not model, with what it lacks:
-- the refusal names it.
M.UNMODELLED = {
  -- each named by the config keys that carry what is not modelled
  -- vLLM vllm/model_executor/models/step3p7.py @ 22c552fa and SGLang
  -- python/sglang/srt/models/step3p7.py @ 07f4db31 run Step3p5ForCausalLM
  -- on its text_config (vLLM step3p5.py @ 01b50b9e: Step3p5Attention,
  -- Step3p5DecoderLayer, FusedMoEBlock), which reads keys no config of
  -- this type read here gives
  step3p7 = "Step-3.7-Flash without a text_config is not read: its language model is Step3p5ForCausalLM (vLLM " ..
    "step3p5.py; apsearch reads it as model_type step3p5), whose keys the released file gives in its text_config: " ..
    "the head-wise attention gate (use_head_wise_attn_gate), the windowed layers' own heads " ..
    "(attention_other_setting), moe_layers_enum, moe_num_experts and moe_top_k, per-layer SwiGLU clamps " ..
    "(swiglu_limits); a config giving num_experts, first_k_dense_replace and share_expert_dim instead says none of " ..
    "them: give the released config.json (Step3p7ForConditionalGeneration) or its text model as a step3p5 config",
  -- Step-3 (stepfun-ai/step3; remote code, and vLLM
  -- vllm/model_executor/models/step3_text.py @ 0169d396: Step3TextAttention
  -- projects the query through share_q_dim, inter_norm and wq to every
  -- head, with one K/V head of head_dim, replicated qkv_proj)
  step3_text = "Step-3's multi-matrix factorization attention (a share_q_dim low-rank query with its own norm " ..
    "and wq up-projection to every head, one K/V head of head_dim) is not modelled",
  step3_vl = "Step-3's language model (step3_text: a share_q_dim low-rank query with its own norm and wq " ..
    "up-projection to every head, one K/V head of head_dim) is not modelled, nor is its vision tower",
  -- transformers configuration_zamba2.py (Zamba2HybridLayer: a shared transformer block)
  zamba2 = "Zamba2's shared transformer blocks (num_mem_blocks of them, reused at the hybrid layers of " ..
    "layers_block_type, on the concatenation of the hidden state and the embeddings, with per-use LoRA adapters: " ..
    "adapter_rank, use_shared_attention_adapter, use_shared_mlp_adapter) are not modelled: apsearch's hybrid " ..
    "layers have weights of their own",
  -- transformers configuration_longcat_flash.py (LongcatFlashMoE, LongcatFlashDecoderLayer)
  longcat_flash = "LongCat-Flash's zero-computation experts (zero_expert_num, zero_expert_type: routed tokens that " ..
    "skip the FFN, so the active parameters vary per token) and its shortcut-connected layers (two MLA attention " ..
    "and two dense MLP blocks beside each MoE block, ffn_hidden_size and expert_ffn_hidden_size) are not modelled",
  -- transformers configuration_gemma3n.py (Gemma3nTextConfig)
  gemma3n = GEMMA3N_UNMODELLED .. ", nor are its vision and audio towers",
  gemma3n_text = GEMMA3N_UNMODELLED,
}

--- The keys of DeepSeek Sparse Attention's indexer (DeepseekV32Config,
-- GlmMoeDsaConfig): a config that has any is refused unless it is read as
-- one of M.DSA_TYPES (a DeepSeek-V3.2 config read as DeepSeek-V3 would
-- silently lose the indexer).
M.DSA_KEYS = { "index_n_heads", "index_head_dim", "index_topk" }

--- Types whose own builder reads their experts, outside the generic MoE
-- check (nemotron_h: the E layers of its pattern).
M.MOE_BUILDER_REFUSES = { nemotron_h = true }

--- Multimodal wrappers whose text model apsearch trains, with the type
-- that text model is read as: the wrapper's own text class, whatever the
-- text_config's model_type says (transformers builds sub_configs
-- ["text_config"](**text_config): Glm4vConfig, Glm4vMoeConfig, Qwen3VLConfig,
-- Qwen3VLMoeConfig, Qwen3_5Config, Qwen3_5MoeConfig); Kimi-K2.5's text_config is Kimi-K2,
-- whose remote code is DeepSeek-V3's (DeepseekV3ForCausalLM).
-- transformers fills a missing vision_config with the class's default, so
-- none is needed.
M.WRAPPERS = { glm4v = "glm4v_text", glm4v_moe = "glm4v_moe_text", qwen3_vl = "qwen3_vl_text", qwen3_vl_moe = "qwen3_vl_moe_text",
  qwen3_5 = "qwen3_5_text", qwen3_5_moe = "qwen3_5_moe_text", kimi_k25 = "deepseek_v3",
  -- Kimi-VL (moonshotai/Kimi-VL-A3B): NeMo AutoModel 36044ad3
  -- components/models/kimivl/model.py KimiVLConfig builds
  -- DeepseekV3Config(**text_config) and KimiVLModel a DeepseekV3Model on it
  kimi_vl = "deepseek_v3",
  -- NeMo AutoModel 00affc66 components/models/minimax_m3_vl: the text
  -- backbone is MiniMax-M3's (layers.py)
  minimax_m3_vl = "minimax_m3",
  -- NeMo AutoModel 36044ad3 components/models/kimi_k3: KimiK3ForConditionalGeneration's
  -- text model is Kimi Linear's layers with K3's additions (builders.kimi_linear)
  kimi_k3 = "kimi_k3_text",
  -- NeMo AutoModel 36044ad3 components/models/muse_glimmer
  muse_glimmer = "muse_glimmer_text",
  -- NeMo AutoModel 36044ad3 components/models/step3p7/model.py:
  -- Step3p7Model's language_model is Step3p5Model (its text_config's
  -- Step3p7TextConfig says model_type "step3p5")
  step3p7 = "step3p5",
  -- Megatron-Bridge 067f987d models/qwen_omni/qwen3_omni_bridge.py
  -- (Qwen3OmniBridge.provider_bridge): the thinker's text_config is the
  -- language model it trains (M.WRAPPER_TEXT_PATH)
  qwen3_omni_moe = "qwen3_omni_moe_text" }

--- Wrappers whose text model sits deeper than a top-level `text_config`,
-- with the keys down to it: Qwen3-Omni (qwen3_omni_moe) holds its
-- language model in the thinker (Qwen3OmniMoeConfig's thinker_config,
-- whose text_config is a Qwen3OmniMoeTextConfig; transformers
-- models/qwen3_omni_moe/configuration_qwen3_omni_moe.py @ d9c9e55f).
M.WRAPPER_TEXT_PATH = { qwen3_omni_moe = { "thinker_config", "text_config" } }

--- What a wrapper has beyond its vision tower that the estimate neither
-- trains nor counts, said in its note.
M.WRAPPER_UNTRAINED = {
  qwen3_omni_moe = "nor is the thinker's audio tower (thinker_config.audio_config); the talker and code2wav " ..
    "(talker_config, code2wav_config) are not trained, as Megatron-Bridge's Qwen3-Omni trains the thinker " ..
    "(qwen3_omni_bridge.py: \"converting thinker-side weights only\")",
}

--- Keys of a wrapper's own config its text model reads (NeMo AutoModel's
-- MuseGlimmerConfig holds use_qk_norm, use_attn_output_gate and
-- normalize_tok_embeddings for its text model), copied into the text
-- config read when the wrapper gives them.
M.WRAPPER_KEYS = { muse_glimmer = { "use_qk_norm", "use_attn_output_gate", "normalize_tok_embeddings" } }

--- Multimodal wrappers whose text model is whatever its text_config's own
-- model_type says (the value: the type when it says none), read through
-- when apsearch has a reader for that type: Mistral 3 (Mistral Small 3.1 /
-- 3.2, Magistral; Mistral3Config builds CONFIG_MAPPING[text_config
-- ["model_type"]], default "mistral", and Mistral3Model its AutoModel,
-- configuration_mistral3.py / modeling_mistral3.py @ 0db25542); GLM-4.6V
-- (Glm46VConfig builds CONFIG_MAPPING[text_config["model_type"]], default
-- "glm4v_text", and Glm46VModel its AutoModel; modular_glm46v.py @
-- 020a37d2; GLM-4.6V's glm4v_moe_text, GLM-4.6V-Flash's glm4v_text).
-- The LLaVA family, InternVL and Idefics 3 build their language model as
-- AutoModel.from_config(text_config) the same way, the text type defaulting
-- to "llama" (LlavaConfig, configuration_llava.py @ 053f59ef; LlavaNextConfig
-- @ 063b32f6; Idefics3Config @ 0025a6f5) or "qwen2" (LlavaOnevisionConfig @
-- 04ea11d8; InternVLConfig @ 04ea98d5, InternVL 3 / 3.5 "-hf" checkpoints);
-- their projector, like the vision tower, is not counted.
M.WRAPPERS_OWN_TEXT = { mistral3 = "mistral", glm46v = "glm4v_text", llava = "llama", llava_next = "llama",
  llava_onevision = "qwen2", internvl = "qwen2", idefics3 = "llama" }

--- Wrappers whose text model sits under another key than `text_config`,
-- its type chosen by the class its `architectures[0]` names, whatever its
-- model_type says: InternVL's remote code (internvl_chat, InternVL 1.5-3.5
-- in their original format) builds `llm_config` as LlamaConfig,
-- InternLM2Config, Phi3Config, Qwen2Config or Gemma2Config
-- (OpenGVLab/InternVL 016ae21f internvl_chat/internvl/model/internvl_chat/
-- configuration_internvl_chat.py) and, in InternVL 3.5's files, also
-- Qwen3Config, Qwen3MoeConfig or GptOssConfig; any other class raises
-- "Unsupported architecture" there.
M.WRAPPER_TEXT_BY_CLASS = {
  internvl_chat = { key = "llm_config", types = { LlamaForCausalLM = "llama", InternLM2ForCausalLM = "internlm2",
    Phi3ForCausalLM = "phi3", Qwen2ForCausalLM = "qwen2", Gemma2ForCausalLM = "gemma2", Qwen3ForCausalLM = "qwen3",
    Qwen3MoeForCausalLM = "qwen3_moe", GptOssForCausalLM = "gpt_oss" } },
}

--- The key of a wrapper's config that holds its text model.
-- @param mt the wrapper's model_type
-- @treturn string "text_config" or M.WRAPPER_TEXT_BY_CLASS's key
function M.text_key(mt)
  local by = type(mt) == "string" and M.WRAPPER_TEXT_BY_CLASS[mt]
  local path = type(mt) == "string" and M.WRAPPER_TEXT_PATH[mt]
  return by and by.key or path and table.concat(path, ".") or "text_config"
end

--- The table of a wrapper's config that holds its text model's key (the
-- config itself, or the thinker_config of M.WRAPPER_TEXT_PATH), that
-- key, and the holder's path for messages ("" or "thinker_config.").
-- @tparam table cfg config.json
-- @param mt the wrapper's model_type
-- @tparam string file for errors
-- @treturn table the holder
-- @treturn string the key of the text model in it
-- @treturn string the holder's path, "" or ending in "."
-- @raise `<file>: thinker_config: expected an object` for a holder that
--   is not one
function M.text_holder(cfg, mt, file)
  local path = type(mt) == "string" and M.WRAPPER_TEXT_PATH[mt]
  if not path then return cfg, "text_config", "" end
  local t = cfg
  for i = 1, #path - 1 do
    t = t[path[i]]
    if type(t) ~= "table" or #t > 0 then
      util.fail(file, table.concat(path, ".", 1, i), "expected an object", t)
    end
  end
  return t, path[#path], table.concat(path, ".", 1, #path - 1) .. "."
end

-- The text model of a wrapper of M.WRAPPER_TEXT_BY_CLASS as the config to
-- read (a copy, model_type set from its class), or nil for another type.
local function text_by_class(cfg, mt, file)
  local by = type(mt) == "string" and not builders[mt] and M.WRAPPER_TEXT_BY_CLASS[mt]
  if not by then return nil end
  local text = cfg[by.key]
  if type(text) ~= "table" or #text > 0 then
    util.fail(file, by.key, "expected an object", text)
  end
  local a = type(text.architectures) == "table" and text.architectures[1]
  local tmt = type(a) == "string" and by.types[a]
  if not tmt then
    util.fail(file, by.key .. ".architectures", ("expected a class the wrapper builds (%s)")
      :format(util.join(util.sorted_keys(by.types))), text.architectures)
  end
  local t = {}
  for k, v in pairs(text) do t[k] = v end
  t.model_type = tmt
  return t
end

--- The text model of a multimodal wrapper of M.WRAPPERS or M.WRAPPERS_OWN_TEXT (a config of a
-- type apsearch has no reader for, with a `text_config`), or of
-- M.WRAPPER_TEXT_BY_CLASS, as the config to read, or nil.
-- @tparam table cfg config.json
-- @param mt the model_type it is read as (M.model_type_of)
-- @tparam string file for errors
-- @treturn table|nil a copy of the text_config with the wrapper's text type
-- @raise `<file>: text_config: expected an object` for a wrapper whose
--   text_config is not one
function M.wrapped_text(cfg, mt, file)
  if type(mt) ~= "string" or builders[mt] then return nil end
  if M.WRAPPER_TEXT_BY_CLASS[mt] then return text_by_class(cfg, mt, file) end
  local fixed, own = M.WRAPPERS[mt], M.WRAPPERS_OWN_TEXT[mt]
  if fixed == nil and own == nil then return nil end
  local holder, key = M.text_holder(cfg, mt, file)
  local text = holder[key]
  if type(text) ~= "table" or #text > 0 then util.fail(file, M.text_key(mt), "expected an object", text) end
  local t = {}
  for k, v in pairs(text) do t[k] = v end
  if own then
    if is_null(t.model_type) then t.model_type = own end
    -- transformers builds CONFIG_MAPPING[text_config["model_type"]]: the
    -- type itself decides, not its class (a wrapper's type, "vicuna" or 7
    -- there is no text model apsearch reads)
    if type(t.model_type) ~= "string" or not builders[t.model_type] then return nil end
  else
    t.model_type = fixed
  end
  for _, k in ipairs(M.WRAPPER_KEYS[mt] or {}) do
    if cfg[k] ~= nil then t[k] = cfg[k] end
  end
  return t
end

-- A config apsearch can say more about than "unsupported": one with
-- DeepSeek Sparse Attention's keys (M.DSA_KEYS) not read as a DSA type
-- (M.DSA_TYPES); of a
-- type with no reader, a known unmodelled type (M.UNMODELLED) or a
-- multimodal wrapper (a text_config beside a vision or audio config)
-- whose text model has no reader either (one that has is read through,
-- M.from_config).  Raises NotImplemented; returns otherwise.
local function refuse_unmodelled(cfg, mt, file, as)
  -- (a multimodal wrapper of an unmodelled text model is said as such below)
  -- a wrapper of M.WRAPPERS fills in its class's default vision config
  -- (Step3p7Config), so its text_config alone makes it one
  local towers = type(cfg.text_config) == "table" and
    (type(cfg.vision_config) == "table" or type(cfg.audio_config) == "table" or
     (type(mt) == "string" and M.WRAPPERS[mt] ~= nil))
  if type(mt) == "string" and M.WRAPPERS[mt] and not is_null(cfg.text_config) and type(cfg.text_config) ~= "table" then
    util.fail(file, "text_config", "expected an object", cfg.text_config)
  end
  if type(mt) == "string" and not builders[mt] and M.UNMODELLED[mt] and not towers then
    error(("NotImplemented: %s: model_type: %s: %s"):format(file, read_as(cfg, mt, as), M.UNMODELLED[mt]), 0)
  end
  for _, k in ipairs(M.DSA_KEYS) do
    if not is_null(cfg[k]) and not M.DSA_TYPES[mt] then
      error(("NotImplemented: %s: %s: %s (got %s)"):format(file, k, M.DSA_UNMODELLED, util.describe(cfg[k])), 0)
    end
  end
  if type(mt) ~= "string" or builders[mt] then return end
  local text = cfg.text_config
  -- a wrapper of M.WRAPPERS_OWN_TEXT is multimodal without a vision_config
  -- (its class fills in the default one)
  local multimodal = type(cfg.vision_config) == "table" or type(cfg.audio_config) == "table" or
    M.WRAPPERS_OWN_TEXT[mt] ~= nil
  if type(text) ~= "table" or not multimodal or M.wrapped_text(cfg, mt, file) then
    return
  end
  local tmt, as = M.model_type_of(text)
  local why = type(tmt) == "string" and M.UNMODELLED[tmt]
  local how = M.WRAPPERS_OWN_TEXT[mt] and builders[tmt] and ("gives model_type %s, which %s builds as that type " ..
    "and apsearch does not read as a text model"):format(util.describe(text.model_type), mt)
    or builders[tmt] and ("is (model_type %s%s), but apsearch does not know what %s adds to it: " ..
    "import text_config as a config.json of its own to train the text model"):format(util.describe(text.model_type),
    as and (", read as " .. tmt) or "", mt)
    or ("is not either (%s%s)"):format(is_null(text.model_type) and not as and "it gives no model_type" or
      "model_type " .. read_as(text, tmt, as, true), why and (": " .. why) or "")
  error(("NotImplemented: %s: model_type: %s is multimodal: its vision tower (vision_config) is not modelled; " ..
    "its text_config %s"):format(file, mt, how), 0)
end

-- A checkpoint's quantization (quantization_config: gpt-oss's mxfp4, the
-- fp8 of DeepSeek-V3 / Kimi-K2 / Qwen3-FP8, NVIDIA's modelopt NVFP4,
-- compressed-tensors) is not what the estimate trains: one note naming its
-- quant_method and quant_algo, as far as it gives them (modelopt's files:
-- "modelopt NVFP4"; a static FP8 file gives quant_algo alone).
local function quantization_note(notes, q, file)
  if type(q) ~= "table" then return end
  local parts = {}
  for _, k in ipairs({ "quant_method", "quant_algo" }) do
    if type(q[k]) == "string" then parts[#parts + 1] = q[k] end
  end
  local how = #parts > 0 and table.concat(parts, " ") or "quantized"
  note(notes, file, "the checkpoint's %s weights (quantization_config) are not modelled: the estimate " ..
    "trains in training.precision", how)
end

-- Reads a multimodal wrapper's text model (M.wrapped_text): text_config
-- as a config of its own, with the wrapper's tie_word_embeddings where
-- the text_config leaves it out (transformers ties or unties the
-- wrapper's lm_head by the top-level key), errors naming
-- "<file>: text_config", and a note that the vision tower is neither
-- modelled nor counted.
-- The class a config file names first (architectures[1]), or nil.
local function first_class(cfg)
  local a = type(cfg.architectures) == "table" and cfg.architectures[1]
  return type(a) == "string" and a or nil
end

--- The defaults of a text class that a wrapper's text_config may lean on:
-- LLaVA 1.5's (llava-hf/llava-1.5-7b-hf) gives only vocab_size,
-- max_position_embeddings and rms_norm_eps of its Vicuna text model and
-- LlamaConfig fills the rest (configuration_llama.py @ 008e5743: the
-- Llama-2-7B shapes; num_key_value_heads and head_dim follow the heads);
-- LLaVA-NeXT's Mistral text_config (llava-hf/llava-v1.6-mistral-7b-hf)
-- leaves out the shapes MistralConfig fills (configuration_mistral.py @
-- 001f85b3: Mistral-7B's, 8 KV heads, a 4096-token window unless given,
-- a null one included).
M.WRAPPED_TEXT_DEFAULTS = {
  llama = { vocab_size = 32000, hidden_size = 4096, intermediate_size = 11008, num_hidden_layers = 32,
    num_attention_heads = 32, max_position_embeddings = 2048, rms_norm_eps = 1e-6 },
  mistral = { vocab_size = 32000, hidden_size = 4096, intermediate_size = 14336, num_hidden_layers = 32,
    num_attention_heads = 32, num_key_value_heads = 8, max_position_embeddings = 4096 * 32, rms_norm_eps = 1e-6,
    sliding_window = 4096 },
}

--- What an MoE config of an unsupported type is told to do instead: the
-- policy's model table takes the expert, shared-expert, dense-layer and
-- MLA fields (docs/policy.md "model").
M.MOE_TABLE_HINT = "write it as a policy's model table of its sizes (num_experts, experts_per_token, " ..
  "moe_ffn_hidden_size, shared_expert_ffn_hidden_size, moe_first_dense_layers, MLA's q_lora_rank / kv_lora_rank; " ..
  "docs/policy.md \"model\")"

local function read_wrapped(cfg, text, source, name)
  -- the wrapper's tie: its own, or the thinker's (M.WRAPPER_TEXT_PATH)
  local holder, _, at = M.text_holder(cfg, cfg.model_type, source)
  -- (a top-level one the thinker's overrides is still the file's and
  -- checked: PretrainedConfig reads it as a boolean)
  for _, h in ipairs({ cfg, holder }) do
    if not is_null(h.tie_word_embeddings) and type(h.tie_word_embeddings) ~= "boolean" then
      util.fail(source, (h == cfg and "" or at) .. "tie_word_embeddings", "expected true or false",
        h.tie_word_embeddings)
    end
  end
  local t = {}
  for k, v in pairs(text) do t[k] = v end
  for k, v in pairs(M.WRAPPED_TEXT_DEFAULTS[M.model_type_of(t)] or {}) do
    if t[k] == nil then t[k] = v end
  end
  if is_null(t.tie_word_embeddings) and not is_null(holder.tie_word_embeddings) then
    t.tie_word_embeddings = holder.tie_word_embeddings
  end
  local model, info = M.from_config(t, source .. ": " .. M.text_key(cfg.model_type), name or name_from_path(source))
  if is_null(text.quantization_config) then quantization_note(info.notes, cfg.quantization_config, source) end
  local untrained = M.WRAPPER_UNTRAINED[cfg.model_type]
  table.insert(info.notes, 1, ("%s: model_type %s is multimodal: the estimate trains its text model " ..
    "(%s, model_type %s); the vision tower (vision_config) is neither modelled nor counted%s")
    :format(source, tostring(cfg.model_type), M.text_key(cfg.model_type), tostring(t.model_type),
      untrained and (", " .. untrained) or ""))
  -- the class a framework builds is the wrapper's (AutoModel's registry is
  -- keyed by the file's architectures[0])
  info.architecture = first_class(cfg)
  return model, info
end

-- A model_type with no reader that is a supported type but for its
-- separators or case ("granite_moe", "Qwen3MoE"): refused as unsupported
-- with the type meant, before an MoE config would be refused as "not
-- modelled".
local function misspelt_type(mt, source)
  -- (no type name is as long as suggest.MAX_WORD)
  if type(mt) ~= "string" or builders[mt] or #mt > require("apsearch.suggest").MAX_WORD then return end
  local function bare(s) return (s:lower():gsub("[^%w]", "")) end
  local all = {}
  for _, t in ipairs(M.supported) do all[#all + 1] = t end
  for _, t in ipairs(M.moe_supported) do all[#all + 1] = t end
  local given = bare(mt)
  for _, t in ipairs(all) do
    if bare(t) == given then
      util.fail(source, "model_type", ('unsupported model type; did you mean "%s"?'):format(t), mt)
    end
  end
end

--- Config keys that, left out, silently take a default that changes the
-- model (the heads, layers and widths, the experts and their routing, the
-- tying, the RoPE base): a key a few edits from one of them, with that one
-- absent, is said (a new user's `num_key_value_head` turned a GQA model
-- into multi-head attention, 8.03B into 8.84B parameters, without a word).
M.SHAPE_KEYS = { "num_key_value_heads", "num_attention_heads", "num_hidden_layers", "hidden_size",
  "intermediate_size", "vocab_size", "head_dim", "max_position_embeddings", "tie_word_embeddings",
  "rope_theta", "rms_norm_eps", "num_experts_per_tok", "moe_intermediate_size", "num_experts",
  "n_routed_experts", "num_local_experts", "n_shared_experts", "first_k_dense_replace" }

--- Most edits (insertions, deletions, substitutions) between a config key
-- and one of M.SHAPE_KEYS for it to be read as that key misspelt: one, as
-- other families' own keys lie two away (v_head_dim, num_shared_experts,
-- num_experts_per_token: DeepSeek-V3, Hy3, Kimi K3).
M.MISSPELT_KEY_EDITS = 1

--- Notes for the top-level keys of a config that look like a misspelt
-- M.SHAPE_KEYS entry the config lacks (within M.MISSPELT_KEY_EDITS edits,
-- neither key a known one of the other).
-- @tparam table cfg decoded config.json
-- @tparam string source file name, for the notes
-- @tparam table notes the import's notes (appended to)
function M.misspelt_key_notes(cfg, source, notes)
  local known = {}
  for _, k in ipairs(M.SHAPE_KEYS) do known[k] = true end
  local suggest = require "apsearch.suggest"
  for _, k in ipairs(util.sorted_keys(cfg)) do
    if type(k) == "string" and not known[k] then
      for _, want in ipairs(M.SHAPE_KEYS) do
        if cfg[want] == nil and suggest.distance(k, want, M.MISSPELT_KEY_EDITS) <= M.MISSPELT_KEY_EDITS then
          note(notes, source, "key %q is none this reader takes; did you mean %q? (%s is not in the config: " ..
            "its default applies)", util.clip(k), want, want)
          break
        end
      end
    end
  end
end

--- The keys of the native checkpoint format's params.json that Mistral's
-- Hub repositories (mistralai/Devstral-Small-2507: dim, n_layers, n_heads,
-- n_kv_heads, hidden_dim, head_dim, norm_eps, vocab_size; mistral-inference)
-- and Meta's original Llama checkpoints ship beside config.json: a file
-- with all of them and no model_type is such a params.json.
M.NATIVE_PARAMS_KEYS = { "dim", "n_layers", "n_heads" }

--- Whether a decoded file is a native params.json (M.NATIVE_PARAMS_KEYS).
-- @tparam table cfg the decoded file
-- @treturn boolean
function M.is_native_params(cfg)
  for _, k in ipairs(M.NATIVE_PARAMS_KEYS) do
    if is_null(cfg[k]) then return false end
  end
  return true
end

--- Converts a decoded Hugging Face config table into a model table.
-- @tparam table cfg the decoded config.json
-- @tparam string source file name used in error messages (and for the name)
-- @tparam[opt] string name model name (default: derived from `source`)
-- @treturn table model table (fields of aps_model)
-- @treturn table info `{source=, model_type=, dropout=, dropout_stated=,
--   dropout_key=, dropout_value=, attention_dropout=, hidden_dropout=,
--   notes=, vision_params=}`: dropout is true
--   when the config sets a dropout probability > 0 (M.DROPOUT_KEYS),
--   dropout_stated when it has any of those keys (0 included) and, with
--   none, from its class's default (M.DROPOUT_CLASS_DEFAULTS; then always
--   true), with the first such key and value; attention_dropout and
--   hidden_dropout its two probabilities (dropout_of); notes, what the estimate does not price (strings
--   starting with the file); vision_params, a multimodal config's vision
--   tower and projector (counted apart), else nil
-- @raise `NotImplemented: <file>: MoE config (<key> = N) is not modelled; ...`
--   for an MoE config; `<file>: model_type: unsupported model type ...` for an
--   unknown type; `<file>: <key>: required key is missing (got nothing)` or a type
--   error naming the key.
-- A text model's keys saved under `text_config` for a model_type read
-- flat (no wrapper, M.wrapped_text), as that type's transformers class
-- takes none of them from text_config (a PretrainedConfig keeps an
-- unknown key as an attribute it never reads) and builds its defaults:
-- refused naming the keys, when the model built (`model`) differs from
-- text_config on one of M.TEXT_SHAPE_KEYS the top level leaves out, or
-- the build failed (`model` nil) with none of them at the top level and
-- two or more in text_config.  Not for a type whose builder reads
-- text_config itself (M.TEXT_CONFIG_BUILDERS); a type that names its
-- shape otherwise (DBRX's d_model) and builds what text_config says is
-- left alone.
local SHAPE_FIELD = {} -- config key -> model field (M.CONFIG_KEY reversed)
for f, k in pairs(M.CONFIG_KEY) do SHAPE_FIELD[k] = f end
local function flat_text_config(cfg, mt, source, model)
  local text = cfg.text_config
  if M.TEXT_CONFIG_BUILDERS[mt] or type(text) ~= "table" or #text > 0 then return end
  local nested = {}
  for _, k in ipairs(M.TEXT_SHAPE_KEYS) do
    if model == nil and not is_null(cfg[k]) then return end
    if is_null(cfg[k]) and not is_null(text[k]) and (model == nil or model[SHAPE_FIELD[k]] ~= text[k]) then
      nested[#nested + 1] = k
    end
  end
  if #nested < (model and 1 or 2) then return end
  util.fail(source, "text_config", ("model_type %s reads its keys at the top level, not from text_config, " ..
    "which gives %s: move text_config's keys to the top level, or name the wrapper's model_type"):format(
    util.clip(tostring(mt)), table.concat(nested, ", ")), nil, false)
end

function M.from_config(cfg, source, name)
  source = source or "config.json"
  if type(cfg) ~= "table" then
    util.fail(source, "(top level)", "expected a JSON object", cfg)
  end
  local mt, as = M.model_type_of(cfg)
  refuse_unmodelled(cfg, mt, source, as)
  local wrapped = M.wrapped_text(cfg, mt, source)
  if wrapped then return read_wrapped(cfg, wrapped, source, name) end
  misspelt_type(mt, source)
  if M.IGNORED_KEYS[mt] then
    local t = {}
    for k, v in pairs(cfg) do t[k] = v end
    for _, k in ipairs(M.IGNORED_KEYS[mt]) do t[k] = nil end
    cfg = t
  end
  local moe_ok = M.MOE_BUILDER_REFUSES[mt] or false
  for _, t in ipairs(M.moe_supported) do moe_ok = moe_ok or t == mt end
  local key, n = moe_key(cfg)
  if key and not moe_ok then
    local dym = type(mt) == "string" and (M.NOT_LIKE[mt] and "it is " .. M.NOT_LIKE[mt]
      or require("apsearch.suggest").did_you_mean(mt, M.moe_supported))
    error(string.format("NotImplemented: %s: MoE config (%s = %s) of model_type %s is not " ..
      "modelled%s (supported MoE types: %s); %s", source, key, util.describe(n), util.describe(mt),
      dym and ("; " .. dym) or "", util.join(M.moe_supported), M.MOE_TABLE_HINT), 0)
  end
  if not moe_ok and type(mt) == "string" and mt:lower():find("moe", 1, true) then
    error(string.format("NotImplemented: %s: MoE config (model_type = %q) is not modelled " ..
      "(supported MoE types: %s); %s", source, mt, util.join(M.moe_supported), M.MOE_TABLE_HINT), 0)
  end
  local all = {}
  for _, t in ipairs(M.supported) do all[#all + 1] = t end
  for _, t in ipairs(M.moe_supported) do all[#all + 1] = t end
  if is_null(mt) and M.is_native_params(cfg) then
    util.fail(source, "model_type", "required key is missing: the file has the keys of a native " ..
      "params.json (" .. util.join(M.NATIVE_PARAMS_KEYS) .. "), which Mistral's and Meta's Hub repositories " ..
      "ship beside the Hugging Face config.json: give that config.json", nil)
  end
  -- NVIDIA ModelOpt's hf_quant_config.json ({producer, quantization}; the
  -- Nemotron 3 Super and Ultra FP8 files have no producer: {quantization:
  -- {quant_algo, ...}}), shipped beside the config.json of every quantized
  -- checkpoint
  local q = cfg.quantization
  if is_null(mt) and type(q) == "table" and (type(cfg.producer) == "table" or type(q.quant_algo) == "string") then
    util.fail(source, "model_type", "required key is missing: the file is a quantization config " ..
      "(hf_quant_config.json: producer, quantization), which quantized checkpoints ship beside their " ..
      "config.json: give that config.json", nil)
  end
  if is_null(mt) then
    util.fail(source, "model_type", "required key is missing (supported: " ..
      util.join(all) .. ")", nil)
  end
  local build = builders[mt]
  if not build then
    local kind = M.not_decoder_only(cfg, mt)
    util.fail(source, "model_type", (M.NOT_LIKE[mt] and "unsupported model type: " .. M.NOT_LIKE[mt]
      or kind and ("unsupported model type: %s; apsearch models decoder-only language models"):format(kind)
      or require("apsearch.suggest").problem("unsupported model type", tostring(mt), all)) ..
      " (supported: " .. util.join(all) .. "); write another as a policy's " ..
      "model table of its sizes (docs/policy.md \"model\")", mt)
  end
  local notes, extra = {}, {}
  if as then
    notes[#notes + 1] = ("%s: model_type %s read as %s (" .. (is_null(cfg.architectures) and
      "its released config.json names %s in architectures" or "architectures names %s") ..
      ", that type's modelling class)")
      :format(source, (cfg.model_type == nil or is_null(cfg.model_type) or cfg.model_type == "") and "(missing)"
        or type(cfg.model_type) == "string" and util.clip(cfg.model_type) or util.describe(cfg.model_type), mt, as)
  end
  if M.ADJUST[mt] then cfg = M.ADJUST[mt](cfg, source) end
  local kv_class = M.KV_HEADS_CLASS_DEFAULTS[mt]
  -- the config keys a default filled, as an error about them says so
  local defaulted = {}
  -- (left out only: a null one is the class's None, which the classes
  -- that handle it read as num_attention_heads)
  if kv_class and cfg.num_key_value_heads == nil then
    defaulted.num_key_value_heads = ("not in the config: configuration_%s.py's default %d"):format(mt, kv_class)
    cfg = with_defaults(cfg, { num_key_value_heads = kv_class })
    note(notes, source, "num_key_value_heads is not in the config: read as %d, the config class's default " ..
      "(transformers configuration_%s.py); a model's own config states it", kv_class, mt)
  end
  M.misspelt_key_notes(cfg, source, notes)
  shape_defaults = {}
  local ok, model = pcall(build, reader(cfg, source), cfg, source, notes, extra)
  local recorded = shape_defaults
  shape_defaults = nil -- also when the build raised: no later load sees this one's
  if not ok then
    flat_text_config(cfg, mt, source)
    error(model, 0)
  end
  flat_text_config(cfg, mt, source, model)
  local filled = {}
  for k, v in pairs(recorded) do filled[#filled + 1] = ("%s = %s"):format(k, util.describe(v)) end
  if #filled > 0 then
    table.sort(filled)
    note(notes, source, "not in the config (or null there), taken from transformers' %s class defaults: %s (they set the " ..
      "parameter count; a model's own config states them)", mt, table.concat(filled, ", "))
  end
  -- (a builder that reads the groups from a key of its own, Step-3.5's
  -- num_attention_groups, leaves them other than the heads: no note)
  local kv_defaulted = KV_HEADS_DEFAULTED[model] and model.num_query_groups == model.num_attention_heads
  if kv_defaulted then
    defaulted.num_key_value_heads = "not in the config: read as num_attention_heads"
  end
  if kv_defaulted and (model.num_attention_heads or 0) > 1 then
    -- (LlamaConfig and its copies: num_key_value_heads None -> the heads)
    note(notes, source, "num_key_value_heads is not in the config: read as num_attention_heads = %d (multi-head " ..
      "attention), as LlamaConfig reads None; a grouped-query model's config states it",
      model.num_attention_heads)
  end
  if not extra.own_numerics then model = numerics(model, cfg, source) end
  if M.ROUTER_FP32[mt] and (model.num_experts or 0) > 0 and (mt ~= "step3p5" or cfg.need_fp32_gate == true) then
    model.moe_router_fp32 = true
  end
  quantization_note(notes, cfg.quantization_config, source)
  local dropout, dropout_key, dropout_value, dropout_stated, prob = dropout_of(cfg, source)
  if not dropout_stated and type(cfg.text_config) == "table" then
    dropout, dropout_key, dropout_value, dropout_stated, prob =
      dropout_of(cfg.text_config, source .. ": text_config")
  end
  if not dropout_stated then -- the configuration class's default says
    local default = M.DROPOUT_CLASS_DEFAULTS[mt]
    dropout, dropout_stated = default ~= nil, true
    if default then
      dropout_key, dropout_value = default[1] .. " (the class's default)", default[2]
      prob = { attention = default.attention, hidden = default.hidden }
    end
  end
  if model.head_dim == nil and model.hidden_size % model.num_attention_heads == 0 then
    model.head_dim = model.hidden_size // model.num_attention_heads
  end
  model.name = name or name_from_path(source)
  -- the core's checks (ranges, heads divisible by query groups, ...), with
  -- the file and the config key named
  local ok, err = pcall(require("apsearch.core").model_params, model)
  if not ok then
    local keys = extra.config_keys or M.CONFIG_KEY -- a builder's own names (ERNIE's moe_k, ...)
    local msg = tostring(err):gsub("^model%.([%w_]+)", function(f)
      local k = keys[f] or M.CONFIG_KEY[f]
      local why = k and defaulted[k] and ("; " .. defaulted[k]) or ""
      return k and (k .. " (model." .. f .. why .. ")") or ("model." .. f)
    end)
    error(source .. ": " .. msg, 0)
  end
  return model, { source = source, model_type = mt, dropout = dropout,
                  dropout_stated = dropout_stated,
                  attention_dropout = prob.attention, hidden_dropout = prob.hidden,
                  dropout_key = dropout_key, dropout_value = dropout_value,
                  notes = notes, vision_params = extra.vision_params,
                  architecture = first_class(cfg) }
end

--- The config file a model path names: `<path>/config.json` when `path`
-- is a directory (a Hugging Face snapshot, as `huggingface-cli download`
-- leaves it; a cache directory `models--ORG--NAME`: its snapshot's), else
-- `path` itself.
-- @tparam string path a config file or a snapshot directory
-- @treturn string the config file's path
-- @treturn boolean true when path was a directory
function M.config_path(path)
  if type(path) == "string" and lfs.attributes(path, "mode") == "directory" then
    local dir = path:gsub("/+$", "")
    if lfs.attributes(dir .. "/config.json", "mode") == nil then
      local snap = M.cache_snapshot(dir)
      if snap then return snap .. "/config.json", true end
    end
    return dir .. "/config.json", true
  end
  return path, false
end

--- The snapshot a Hugging Face cache directory (`models--ORG--NAME`, as
-- `huggingface_hub` keeps it) points to: the commit `refs/main` names,
-- else its only snapshot.
-- @tparam string dir
-- @treturn string|nil the snapshot directory
function M.cache_snapshot(dir)
  local snaps = dir .. "/snapshots"
  if lfs.attributes(snaps, "mode") ~= "directory" then return nil end
  local ref = util.read_file(dir .. "/refs/main")
  ref = ref and ref:match("^%s*(%x+)%s*$")
  if ref and lfs.attributes(snaps .. "/" .. ref, "mode") == "directory" then return snaps .. "/" .. ref end
  local only = nil
  for _, n in ipairs(util.listdir(snaps) or {}) do
    if lfs.attributes(snaps .. "/" .. n, "mode") == "directory" then
      if only then return nil end
      only = snaps .. "/" .. n
    end
  end
  return only
end

--- lua-cjson's error message with the line and column of the character it
-- names ("... at character 588" -> "... at line 23, column 5 (character
-- 588)"); unchanged when it names none.
-- @tparam string msg the decoder's message
-- @tparam string text the decoded text
-- @treturn string
function M.json_error_where(msg, text)
  local n = tonumber(msg:match("at character (%d+)"))
  if not n then return msg end
  local before = text:sub(1, n - 1)
  local line = select(2, before:gsub("\n", "")) + 1
  local col = n - (before:match(".*()\n") or 0)
  return (msg:gsub("at character %d+", ("at line %d, column %d (character %d)"):format(line, col, n)))
end

-- a Hugging Face Hub id given where a config goes (`meta-llama/Llama-3.1-8B`,
-- not a file here): what to give instead, or nil for another path
local function hub_hint(ref)
  local id = ref:gsub("/+$", "")
  if not id:match("^[%w][%w%-_%.]*/[%w][%w%-_%.]*$") or id:match("%.json$") then return nil end
  local presets = require "apsearch.presets"
  local name = id:match("/(.*)$"):lower()
  local hint = string.format("apsearch reads a config.json on disk, it does not download from the Hugging " ..
    "Face Hub (hf download %s config.json --local-dir DIR writes DIR/config.json)", id)
  -- only the preset of that very name: a near name is another model
  -- (Mixtral-8x22B is not mistral-7b)
  if presets.is_model(name) then return hint .. "; or its preset, " .. name end
  return hint
end

--- Reads and imports a Hugging Face config.json file, or the config.json
-- of a snapshot directory (the model is then named after the directory).
-- @tparam string path path of the config file
-- @tparam[opt] string name model name (default: the file name without .json,
--   or the directory name for `config.json`)
-- @treturn table model table
-- @treturn table info `{source=path, model_type=, dropout=, dropout_key=,
--   dropout_value=}` (as `from_config`)
-- @raise `<file>: cannot read (...)`, `<file>: invalid JSON (...)`, or any
--   error of `from_config`
--- Keys a config.json holds as an object (or null) wherever they stand:
-- lua-cjson decodes an empty array to the table an empty object decodes
-- to, so the text tells them apart (transformers builds no model from a
-- `text_config` or `rope_scaling` that is a list: Gemma3Config converts a
-- dict or None only, rope validation calls `.get` on it).
M.OBJECT_KEYS = { "text_config", "rope_scaling", "rope_parameters", "ffn_config", "attn_config" }

-- raises `<path>: <key>: expected an object or null (got an array)` for the
-- first key of M.OBJECT_KEYS the text gives an array
local function refuse_object_arrays(path, text)
  for _, k in ipairs(M.OBJECT_KEYS) do
    if text:find('"' .. k .. '"%s*:%s*%[') then
      util.fail(path, k, "expected an object or null (got an array)", nil, false)
    end
  end
end

-- raises `<path>:<line>: invalid JSON: a hexadecimal number 0x...` for a
-- number JSON does not have: lua-cjson reads 0x1000 as 4096, while
-- Python's json (and so transformers) refuses the file.  Its NaN and
-- Infinity, which Python's json reads too, are left to the range checks.
local function refuse_hex_numbers(path, text)
  if not text:find("0[xX]%x") then return end -- (most files: one pass)
  -- strings out (escapes first, so that an escaped quote ends none)
  local bare = text:gsub("\\.", ""):gsub('"[^"]*"', '""')
  local at = bare:find("[%[,:]%s*[-+]?0[xX]%x")
  if at then
    local _, lines = bare:sub(1, at):gsub("\n", "")
    error(("%s:%d: invalid JSON: a hexadecimal number %s (JSON numbers are decimal)"):format(path, lines + 1,
      bare:match("0[xX]%x+", at)), 0)
  end
end

function M.load(path, name)
  local dir = path
  local is_dir
  path, is_dir = M.config_path(path)
  if is_dir and lfs.attributes(path, "mode") == nil then
    error(string.format("%s: cannot read config: a directory without a config.json " ..
      "(give a Hugging Face config.json or a snapshot directory holding one)", dir), 0)
  end
  local text, err = util.read_file(path)
  if not text then
    local hint = lfs.attributes(dir) == nil and hub_hint(dir)
    error(string.format("%s: cannot read config: %s%s", hint and dir or path, tostring(err),
      hint and "; " .. hint or ""), 0)
  end
  -- a UTF-8 byte-order mark (what some editors write first) is not JSON
  text = text:gsub("^\239\187\191", "")
  if not text:find("%S") then
    error(string.format("%s: empty file (a Hugging Face config.json is one JSON object)", path), 0)
  end
  util.refuse_nul(path, text)
  local ok, cfg = pcall(cjson.decode, text)
  if not ok then
    error(string.format("%s: invalid JSON: %s", path, M.json_error_where(tostring(cfg), text)), 0)
  end
  util.refuse_duplicate_key(path, text)
  refuse_hex_numbers(path, text)
  refuse_object_arrays(path, text)
  -- an empty array decodes to the empty table an empty object does
  if type(cfg) ~= "table" or rawget(cfg, 1) ~= nil or text:match("^%s*%[") then
    error(string.format("%s: expected one JSON object (a Hugging Face config.json), got %s", path,
      type(cfg) == "table" and "an array" or cfg == cjson.null and "null" or "a " .. type(cfg)), 0)
  end
  return M.from_config(cfg, path, name)
end

-- Every type a reader has is a supported one (errors list them, hints draw
-- on them): those of M.supported and M.moe_supported in their order, then
-- the other readers' types by name.
do
  local listed = {}
  for _, t in ipairs(M.supported) do listed[t] = true end
  for _, t in ipairs(M.moe_supported) do listed[t] = true end
  local rest = {}
  for t in pairs(builders) do
    if not listed[t] then rest[#rest + 1] = t end
  end
  table.sort(rest)
  for _, t in ipairs(rest) do M.supported[#M.supported + 1] = t end
end

return M
