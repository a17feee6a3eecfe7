-- tests/lua/models_kimi_linear_spec.lua -- Kimi Linear (model_type
-- kimi_linear): Kimi Delta Attention on the layers of
-- linear_attn_config.kda_layers, MLA without RoPE on full_attn_layers,
-- read as NeMo AutoModel builds it (components/models/kimi_linear @
-- 36044ad3) and priced for AutoModel (src/core/gdn.c): the count module
-- by module, the pattern, Kimi K3's keys refused by name, the framework
-- rules and the launch files.

local cjson = require "cjson"
local hf = require "apsearch.hf"
local core = require "apsearch.core"
local H = require "spec_helpers"

-- moonshotai/Kimi-Linear-48B-A3B-Instruct's config.json keys, typed:
-- transformers' KimiLinearConfig defaults (configuration_kimi_linear.py @
-- 630ebd85, documented as that checkpoint's) and its linear_attn_config
-- (1-based layer lists), as copies of the file in the public code index
-- give them (no unmodified copy was reachable; examples/models/README.md)
local function config()
  return {
    architectures = { "KimiLinearForCausalLM" }, model_type = "kimi_linear",
    vocab_size = 163840, hidden_size = 2304, intermediate_size = 9216, num_hidden_layers = 27,
    num_attention_heads = 32, num_key_value_heads = 32, head_dim = 72, hidden_act = "silu",
    rms_norm_eps = 1e-5, rope_theta = 10000.0, tie_word_embeddings = false, model_max_length = 1048576,
    q_lora_rank = cjson.null, kv_lora_rank = 512, qk_nope_head_dim = 128, qk_rope_head_dim = 64,
    v_head_dim = 128, mla_use_nope = true,
    num_experts = 256, num_experts_per_token = 8, num_shared_experts = 1, moe_intermediate_size = 1024,
    moe_router_activation_func = "sigmoid", moe_renormalize = true, routed_scaling_factor = 2.446,
    use_grouped_topk = true, num_expert_group = 1, topk_group = 1, first_k_dense_replace = 1,
    moe_layer_freq = 1, num_nextn_predict_layers = 0,
    linear_attn_config = { full_attn_layers = { 4, 8, 12, 16, 20, 24, 27 }, head_dim = 128, num_heads = 32,
      short_conv_kernel_size = 4,
      kda_layers = { 1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 14, 15, 17, 18, 19, 21, 22, 23, 25, 26 } },
  }
end

local function write_config(c)
  local path = H.tmpdir() .. "/kimi-linear.json"
  H.write(path, cjson.encode(c))
  return path
end

describe("Kimi Linear", function()
  -- h 2304, 27 layers, H = 32 KDA heads of d = 128 (H d = 4096):
  -- KDA (20 layers): q, k, v 3 x 2304 x 4096, convs 3 x 4096 x 4, f_a and
  --   g_a 2 x 2304 x 128, f_b and g_b 2 x 128 x 4096, b_proj 2304 x 32,
  --   A_log 32, dt_bias 4096, o_norm 128, o_proj 4096 x 2304;
  -- MLA (7 layers): q_proj 2304 x 32 x 192, kv_a 2304 x 576, kv_a_norm
  --   512, kv_b 512 x 32 x 256, o_proj 4096 x 2304;
  -- 2 norms of 2304 a layer; layer 1 a SwiGLU MLP of 9216; the other 26
  -- 256 experts of 1024 (top 8), a shared expert of 1024, the router 256 x
  -- 2304 and its e_score_correction_bias 256; untied embedding and
  -- lm_head of 163840 x 2304; the final norm.
  it("counts 49,122,681,728 parameters, 3,484,459,904 active", function()
    local kda = 3 * 2304 * 4096 + 3 * 4096 * 4 + 2 * 2304 * 128 + 2 * 128 * 4096 + 2304 * 32 + 32 + 4096 +
      128 + 4096 * 2304
    local mla = 2304 * 32 * 192 + 2304 * 576 + 512 + 512 * 32 * 256 + 4096 * 2304
    local expert = 3 * 2304 * 1024
    local moe = 256 * expert + expert + 256 * 2304 + 256
    local total = 20 * kda + 7 * mla + 27 * 2 * 2304 + 3 * 2304 * 9216 + 26 * moe + 2 * 163840 * 2304 + 2304
    local active = total - 26 * 248 * expert
    assert.are.equal(39514272, kda)
    assert.are.equal(49122681728, total)
    assert.are.equal(3484459904, active)
    local m = hf.from_config(config(), "k.json")
    assert.are.same({ "kda", "LLLALLLALLLALLLALLLALLLALLA", 32, 32, 128, 128, 4 }, { m.linear_attention,
      m.linear_attention_pattern, m.linear_num_key_heads, m.linear_num_value_heads, m.linear_key_head_dim,
      m.linear_value_head_dim, m.linear_conv_kernel_dim })
    assert.are.same({ 512, 128, 64, 128, "none", 1048576 }, { m.kv_lora_rank, m.qk_nope_head_dim,
      m.qk_rope_head_dim, m.v_head_dim, m.position_embedding, m.max_position_embeddings })
    assert.are.same({ 256, 8, 1024, 1024, 1, true, 2.446 }, { m.num_experts, m.experts_per_token,
      m.moe_ffn_hidden_size, m.shared_expert_ffn_hidden_size, m.moe_first_dense_layers, m.moe_router_bias,
      m.moe_router_topk_scaling_factor })
    local pc = core.model_params(m)
    assert.are.equal(total, pc.total)
    assert.are.equal(active, pc.active)
  end)

  -- Kimi K3 (the held-out multimodal file; its text model as NeMo
  -- AutoModel components/models/kimi_k3 @ 36044ad3 builds it): h 7168, 93
  -- layers; KDA (69 layers) of 96 heads of 128 (V 12,288) with the
  -- full-rank output gate: q, k, v 3 h V, convs 3 V 4, f_a h 128, f_b 128
  -- V, b_proj h 96, g_proj h V, A_log 96, dt_bias V, o_norm 128, o_proj V h;
  -- MLA (24 layers) of 96 heads with q_lora 1536 and the output gate: q_a
  -- h 1536 + 1536, q_b 1536 x 96 x 192, kv_a h 576 + 512, kv_b 512 x 96 x
  -- 256, o_proj 96 x 128 x h, g_proj h x 96 x 128; per layer 2 norms and
  -- the attention residuals' 2 norms and 2 h -> 1 projections (6 h);
  -- layer 1 a SiTU MLP of 33,792; 92 MoE layers: 896 latent experts of
  -- 3 x 3584 x 3072 (top 16), the router 896 h and its bias 896, 2 shared
  -- experts (3 h 6144), the latent projections 2 h 3584 and their norm
  -- 3584; untied embedding and lm_head 163,840 x h; the final norm and the
  -- output mix's norm and projection (3 h).
  it("reads Kimi K3's text model: 2,779,484,476,000 parameters, 105,364,017,760 active", function()
    local h, V = 7168, 12288
    local kda = 3 * h * V + 3 * V * 4 + h * 128 + 128 * V + h * 96 + h * V + 96 + V + 128 + V * h
    local mla = h * 1536 + 1536 + 1536 * 96 * 192 + h * 576 + 512 + 512 * 96 * 256 + 96 * 128 * h +
      h * 96 * 128
    local expert = 3 * 3584 * 3072
    local moe = 896 * expert + 896 * h + 896 + 3 * h * 6144 + 2 * h * 3584 + 3584
    local total = 69 * kda + 24 * mla + 93 * 6 * h + 3 * h * 33792 + 92 * moe + 2 * 163840 * h + 3 * h
    local active = total - 92 * (896 - 16) * expert
    assert.are.equal(2779484476000, total)
    assert.are.equal(105364017760, active)
    local path = H.ROOT .. "/tests/fixtures/heldout_configs/moonshotai--Kimi-K3.json"
    local m = hf.load(path)
    assert.are.same({ "situ", 12, true, true, 3584, true, 1536 }, { m.glu_activation, m.attn_res_block_size,
      m.mla_output_gate, m.linear_output_gate_full_rank, m.moe_latent_size, m.moe_latent_norm, m.q_lora_rank })
    local pc = core.model_params(m)
    assert.are.equal(total, pc.total)
    assert.are.equal(active, pc.active)
    -- a search as AutoModel runs it (no TP; its block-aligned PP not
    -- priced): on 2,048 H100 nothing fits, and the report says by how much
    local code, out, err = H.apsearch("run", "--model", path, "--cluster", "h100-sxm-80gb:256x8")
    assert.are.equal(1, code, err)
    assert.matches("framework = automodel", err, 1, true)
    assert.matches("tp_degree = {1}, cp_degree = {1}, pp_degree = {1}", err, 1, true)
    assert.matches("MEMORY_LIMIT", out, 1, true)
    -- AutoModel's deferred gradient sync is named as what to relax
    assert.matches("--set training.defer_fsdp_grad_sync=false", out, 1, true)
    code, out = H.apsearch("estimate", "--model", path, "--cluster", "h100-sxm-80gb:192x8",
      "--strategy", "pp_degree=3,fsdp_degree=512,ep_degree=64")
    assert.matches("Kimi K3 over pipeline stages", out, 1, true)
  end)

  it("fills a Kimi K3 config's missing keys with KimiK3TextConfig's defaults", function()
    local path = H.ROOT .. "/tests/fixtures/heldout_configs/moonshotai--Kimi-K3.json"
    local c = cjson.decode(H.read(path))
    -- AutoModel builds KimiK3TextConfig(**text_config): the output gate,
    -- the latent norm and width, the block size and SiTU default on
    c.text_config.mla_use_output_gate, c.text_config.latent_moe_use_norm = nil, nil
    c.text_config.routed_expert_hidden_size, c.text_config.attn_res_block_size = nil, nil
    c.text_config.hidden_act = "silu" -- ignored: KimiK3MLP and KimiK3MoE build SiTU
    local m = hf.from_config(c, "k3.json")
    assert.are.same({ true, true, 3584, 12, "situ" }, { m.mla_output_gate, m.moe_latent_norm, m.moe_latent_size,
      m.attn_res_block_size, m.glu_activation })
    assert.are.equal(2779484476000, core.model_params(m).total)
    -- null turns the attention residuals off (KimiDecoderLayer: is not
    -- None); 0 divides by zero in AutoModel and is refused
    c.text_config.attn_res_block_size = cjson.null
    assert.are.equal(2779484476000 - 93 * 4 * 7168 - 2 * 7168, core.model_params(hf.from_config(c, "k3.json")).total)
    c.text_config.attn_res_block_size = 0
    assert.matches("k3.json: text_config: attn_res_block_size: expected a positive integer",
      H.err_of(hf.from_config, c, "k3.json"), 1, true)
  end)

  it("refuses Kimi K3's settings on a model without what they act on", function()
    local m = hf.from_config(config(), "k.json")
    m.linear_attention, m.linear_attention_pattern = nil, nil
    m.linear_num_key_heads, m.linear_num_value_heads, m.linear_key_head_dim = nil, nil, nil
    m.linear_value_head_dim, m.linear_conv_kernel_dim = nil, nil
    m.attn_res_block_size = 12
    assert.matches("model.attn_res_block_size: Kimi K3's setting given without Kimi Delta Attention layers",
      H.err_of(core.model_params, m), 1, true)
    m = hf.from_config(config(), "k.json")
    m.moe_latent_norm = true
    assert.matches("model.moe_latent_norm: Kimi K3's setting given without latent experts",
      H.err_of(core.model_params, m), 1, true)
    -- SiTU is Kimi K3's (AutoModel's SituAndMul): not on a Llama
    local llama = H.example_model("llama-3.1-8b")
    llama.glu_activation = "situ"
    assert.matches("model.glu_activation: Kimi K3's setting given without Kimi Delta Attention layers",
      H.err_of(core.model_params, llama), 1, true)
  end)

  it("refuses layer lists that miss or repeat a layer, and what AutoModel refuses", function()
    local c = config()
    table.remove(c.linear_attn_config.kda_layers) -- layer 26
    assert.matches("k.json: linear_attn_config: layer 26 is in neither full_attn_layers nor kda_layers",
      H.err_of(hf.from_config, c, "k.json"), 1, true)
    c = config()
    c.linear_attn_config.full_attn_layers[7] = 4
    assert.matches("linear_attn_config.full_attn_layers[6]: layer 4 is listed twice",
      H.err_of(hf.from_config, c, "k.json"), 1, true)
    c = config()
    c.q_lora_rank = 1536
    assert.matches("q_lora_rank: expected null (NeMo AutoModel's Kimi Linear MLA has no query compression",
      H.err_of(hf.from_config, c, "k.json"), 1, true)
    c = config()
    c.mla_use_nope = false
    assert.matches("mla_use_nope", H.err_of(hf.from_config, c, "k.json"), 1, true)
    c = config()
    c.linear_attn_config.full_attn_layers = {}
    assert.matches("k.json: linear_attn_config.full_attn_layers: needs at least one layer",
      H.err_of(hf.from_config, c, "k.json"), 1, true)
    c = config()
    c.num_nextn_predict_layers = 1
    assert.matches("k.json: num_nextn_predict_layers: expected 0: MTP layers beside linear attention",
      H.err_of(hf.from_config, c, "k.json"), 1, true)
    -- no KDA layer: an MLA model, not pinned to AutoModel
    c = config()
    c.linear_attn_config.full_attn_layers, c.linear_attn_config.kda_layers = {}, {}
    for i = 1, 27 do c.linear_attn_config.full_attn_layers[i] = i end
    local m = hf.from_config(c, "k.json")
    assert.are.same({ false, false }, { m.linear_attention ~= nil, m.linear_attention_pattern ~= nil })
  end)

  it("refuses KDA in a model table without Kimi Linear's MLA", function()
    local m = hf.from_config(config(), "k.json")
    m.position_embedding = "rope"
    local e = H.err_of(core.model_params, m)
    assert.matches("model.linear_attention: kda is priced as NeMo AutoModel's Kimi Linear", e, 1, true)
  end)

  it("is searched as NeMo AutoModel runs it: FSDP2 and EP, no TP, PP or CP", function()
    local path = write_config(config())
    local code, out, err = H.apsearch("run", "--model", path, "--cluster", "h100-sxm-80gb:2x8", "--format", "json")
    assert.are.equal(0, code, err)
    assert.matches("a built policy uses framework = automodel", err, 1, true)
    assert.matches("tp_degree = {1}, cp_degree = {1}, pp_degree = {1}", err, 1, true)
    local top = cjson.decode(out).top_k_strategies[1]
    assert.are.same({ 1, 1, 1 }, { top.tp_degree, top.pp_degree, top.cp_degree })
    assert.is_true(top.ep_degree > 1)
    -- Megatron has no KDA layer: refused once, before any search
    code, _, err = H.apsearch("run", "--model", path, "--cluster", "h100-sxm-80gb:2x8",
      "--set", "training.framework=megatron")
    assert.are.equal(2, code)
    assert.matches("training.framework: kimi-linear has Kimi Delta Attention layers, priced for NeMo AutoModel " ..
      "only", err, 1, true)
    -- only AutoModel's file builds KDA: --launchable another engine is
    -- refused once, not as every candidate's LAUNCH_DIFFERS
    code, _, err = H.apsearch("run", "--model", path, "--cluster", "h100-sxm-80gb:2x8", "--launchable", "megatron")
    assert.are.equal(2, code)
    assert.matches("--launchable: launchable: kimi-linear's Kimi Delta Attention layers are built by the automodel " ..
      "launch file only", err, 1, true)
    -- no strategy splits its sequence: a long one still gives every GPU one
    code, _, err = H.apsearch("run", "--model", path, "--cluster", "h100-sxm-80gb:8x8", "--set",
      "training.seq_length=131072")
    assert.matches("global batch 64 x 131072", err, 1, true)
    assert.matches("at least a sequence a GPU (64): no strategy splits a sequence", err, 1, true)
    -- AutoModel's Kimi Linear has no pipeline parallelism
    code, out = H.apsearch("estimate", "--model", path, "--cluster", "h100-sxm-80gb:3x8",
      "--strategy", "pp_degree=3,fsdp_degree=8,ep_degree=8")
    assert.matches("supports_pp = False", out, 1, true)
  end)

  it("writes AutoModel's KimiLinear48BConfig and says Megatron's script is not this model", function()
    local path = write_config(config())
    local dir = H.tmpdir() .. "/out"
    local code, _, err = H.apsearch("run", "--model", path, "--cluster", "h100-sxm-80gb:2x8", "--out", dir,
      "-k", "1", "--quiet")
    assert.are.equal(0, code, err)
    local yaml = H.read(dir .. "/launch/rank1_automodel.yaml")
    assert.matches("_target_: nemo_automodel.components.models.kimi_linear.config.KimiLinear48BConfig." ..
      "from_pretrained", yaml, 1, true)
    assert.matches("activation_checkpointing: ", yaml, 1, true)
    assert.is_nil(yaml:find("NOT EXPRESSIBLE", 1, true), yaml:match("# NOT EXPRESSIBLE[^\n]*"))
    local sh = H.read(dir .. "/launch/rank1_megatron.sh")
    assert.matches("# NOT WRITTEN: Kimi Delta Attention on the linear layers (LLLALLLALLLALLLALLLALLLALLA", sh, 1,
      true)
    assert.is_nil(sh:find("--experimental-attention-variant", 1, true))
  end)
end)
