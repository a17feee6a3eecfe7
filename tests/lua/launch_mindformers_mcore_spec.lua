--- MindFormers files of the use_legacy False models (Qwen3, Qwen3-MoE,
-- DeepSeek-V3 at mindspore-lab/mindformers fd4deebc): which family builds
-- a model, and the keys each writes, hand-checked against the models'
-- config.json and MindFormers' source (cited per test).  The same files
-- were loaded by MindFormers' own config classes, TransformerConfig and
-- LayerSetting (docs/launch.md).
local hf = require "apsearch.hf"
local policy = require "apsearch.policy"
local search = require "apsearch.search"
local launch = require "apsearch.launch"
local mindspore = require "apsearch.launch.mindspore"
local mcore = require "apsearch.launch.mindspore_mcore"

local ROOT = os.getenv("APS_ROOT") or "."

local function load(name) return (hf.load(ROOT .. "/examples/models/" .. name .. ".json")) end

-- The YAML of one strategy on `devices` H100s, and its notes.
local function yaml_of(model, strategy, training, devices)
  local tr = { global_batch_size = 64, seq_length = 4096, framework = "megatron" }
  for k, v in pairs(training or {}) do tr[k] = v end
  local p = policy.from_table({ model = model, cluster = { device = "h100-sxm-80gb", nodes = (devices or 8) // 8,
    devices_per_node = 8 }, training = tr, top_k = 1 }, ROOT .. "/examples/x.lua")
  local ctx = search.context(p)
  local est = ctx:estimate(strategy)
  local rec = { rank = 1, devices_used = est.devices_used, memory_cost = {}, performance_cost = {} }
  for k, v in pairs(est.strategy) do rec[k] = v end
  local stages = {}
  for i, st in ipairs(est.stages) do
    stages[i] = { num_layers = st.num_layers, recompute_layers = st.recompute_layers or 0 }
  end
  local result = { inputs = ctx:inputs(), top_k_strategies = { rec }, stage_summary = { { stages = stages } } }
  return mindspore.render(launch.context(result, rec))
end

-- The value text of `key` under model.model_config (4 spaces deep).
local function mc(text, key) return text:match("\n    " .. key .. ": ([^\n#]-)%s*[\n#]") end

local function has_note(notes, prefix)
  for _, n in ipairs(notes) do if n:sub(1, #prefix) == prefix then return true end end
  return false
end

describe("MindFormers' use_legacy False models (issue 25)", function()
  it("pick the family that builds the model, or say what the closest one lacks", function()
    for name, want in pairs({ ["qwen3-32b"] = "qwen3", ["qwen3-1.7b"] = "qwen3", ["qwen3-30b-a3b"] = "qwen3_moe",
        ["qwen3-235b-a22b"] = "qwen3_moe", ["deepseek-v3"] = "deepseek_v3", ["kimi-k2-instruct"] = "deepseek_v3" }) do
      local fam, lacks = mcore.family(load(name), 4096)
      assert.are.equal(want, fam, name)
      assert.are.same({}, lacks, name)
    end
    -- the qwen3 spec builds Q/K norms (get_gpt_layer_local_spec(qk_layernorm=True))
    local fam, lacks = mcore.family(load("llama-3.1-8b"), 4096)
    -- (Llama 3.1 scales RoPE as llama3: GPTModel's yarn embedding needs MLA's head dims)
    assert.are.same({ "qwen3", { "llama3 RoPE scaling (plain RoPE only without MLA)",
      "no Q/K norms (the qwen3 spec builds them)" } }, { fam, lacks })
    -- MiniMax-M2: norms over the whole projection, sigmoid scores with a bias
    fam, lacks = mcore.family(load("minimax-m2.7"), 4096)
    assert.are.equal("qwen3_moe", fam)
    assert.are.same({ "partial RoPE (rotary_percent 1.0 only)",
      "Q/K norms over the whole projection (per head in qwen3)",
      "sigmoid scores or an expert bias (qwen3_moe: softmax)" }, lacks)
  end)

  it("write Qwen3-32B by config.json's names, selective recompute in model_config", function()
    local text, notes = yaml_of(load("qwen3-32b"), { dp_degree = 2, tp_degree = 2, sequence_parallel = true,
      pp_degree = 2, zero_stage = 0, micro_batch_size = 1, layer_recompute = "selective" })
    assert.truthy(text:find("\nuse_legacy: False", 1, true))
    -- config.json: 64 layers, 64 heads of 128 (8192 > 5120), 8 KV heads, 25600
    assert.are.same({ '"qwen3"', '["Qwen3ForCausalLM"]', "64", "64", "8", "128", "25600", "True", '"swiglu"' },
      { mc(text, "model_type"), mc(text, "architectures"), mc(text, "num_hidden_layers"),
        mc(text, "num_attention_heads"), mc(text, "num_key_value_heads"), mc(text, "head_dim"),
        mc(text, "intermediate_size"), mc(text, "qk_layernorm"), mc(text, "hidden_act") })
    -- TransformerConfig reads select_recompute from model_config only
    -- (transformer_config_utils.py: recompute_config reaches it as recompute)
    assert.are.equal("['self_attention\\.core_attention']", mc(text, "select_recompute"))
    assert.truthy(text:find("\n  select_recompute: False\n", 1, true))
    assert.is_nil(text:find("LlamaConfig", 1, true))
    assert.is_false(has_note(notes, "NOT "), table.concat(notes, "\n"))
  end)

  it("write Qwen3-30B-A3B's experts and router, and sequence parallelism MoELayer needs with TP", function()
    local text, notes = yaml_of(load("qwen3-30b-a3b"), { dp_degree = 4, tp_degree = 2, sequence_parallel = false,
      ep_degree = 4, zero_stage = 0, micro_batch_size = 1 })
    -- config.json: 128 experts of 768, top-8 renormalised, router_aux_loss_coef 0.001
    assert.are.same({ '"qwen3_moe"', "128", "8", "768", "True", "True", "1.0", '["expert"]', "[0.001]" },
      { mc(text, "model_type"), mc(text, "num_experts"), mc(text, "num_experts_per_tok"),
        mc(text, "moe_intermediate_size"), mc(text, "moe_grouped_gemm"), mc(text, "norm_topk_prob"),
        mc(text, "routed_scaling_factor"), mc(text, "aux_loss_types"), mc(text, "aux_loss_factors") })
    assert.truthy(text:find("\n  expert_parallel: 4\n", 1, true))
    assert.truthy(text:find("\n  use_seq_parallel: True\n", 1, true))
    assert.is_true(has_note(notes, "NOT EXPRESSIBLE in MindFormers: tensor parallelism without sequence " ..
      "parallelism in an MoE model"))
    assert.is_nil(text:find("\nmoe_config:", 1, true))
  end)

  it("count DeepSeek-V3's MTP layer last in the offsets, and recompute it only as estimated", function()
    -- LayerSetting(num_layers + num_nextn_predict_layers): 61 + 1 = 62
    -- layers over 8 stages, 62 // 8 = 7 each plus offsets summing to
    -- 62 mod 8 = 6; the estimate's fill_last split 8 x 7 stages + 5, the
    -- MTP layer on the last stage: offsets +1 x 7 and 5 + 1 - 7 = -1
    local text = yaml_of(load("deepseek-v3"), { dp_degree = 8, pp_degree = 8, ep_degree = 8, zero_stage = 0,
      micro_batch_size = 1, pipeline_split = "fill_last", layer_recompute = "full", recompute_method = "block",
      recompute_num_layers = { 8, 8, 8, 8, 8, 8, 8, 5 } }, { mtp_num_layers = 1, global_batch_size = 512 }, 64)
    assert.are.equal("[1, 1, 1, 1, 1, 1, 1, -1]", mc(text, "offset"))
    assert.are.equal("1", mc(text, "num_nextn_predict_layers"))
    -- every decoder layer recomputed: counts per stage, not True (which
    -- would recompute the MTP layer, 8th on the last stage, too)
    assert.truthy(text:find("\n  recompute: [8, 8, 8, 8, 8, 8, 8, 5]", 1, true), text)
  end)

  it("write DeepSeek-V3's MLA, experts and YaRN by config.json's numbers", function()
    local text, notes = yaml_of(load("deepseek-v3"), { dp_degree = 8, pp_degree = 8, ep_degree = 8, zero_stage = 0,
      micro_batch_size = 1, layer_recompute = "full" }, { global_batch_size = 512 }, 64)
    assert.are.same({ "1536", "512", "128", "64", "128", "256", "1", "3", '"sigmoid"', "True", "2.5" },
      { mc(text, "q_lora_rank"), mc(text, "kv_lora_rank"), mc(text, "qk_nope_head_dim"),
        mc(text, "qk_rope_head_dim"), mc(text, "v_head_dim"), mc(text, "n_routed_experts"),
        mc(text, "n_shared_experts"), mc(text, "first_k_dense_replace"), mc(text, "scoring_func"),
        mc(text, "moe_router_enable_expert_bias"), mc(text, "routed_scaling_factor") })
    -- rope_scaling: factor 40, original 4096, beta 32 / 1, mscale 1 / 1
    for key, want in pairs({ type = '"yarn"', factor = "40.0", original_max_position_embeddings = "4096",
        beta_fast = "32.0", beta_slow = "1.0", mscale = "1.0", mscale_all_dim = "1.0" }) do
      assert.truthy(text:find("\n      " .. key .. ": " .. want .. "\n", 1, true), key)
    end
    assert.is_true(has_note(notes, "NOT EXPRESSIBLE in MindFormers: n_group = 8, topk_group = 4"))
    assert.is_true(has_note(notes, "NOTE: the expert bias moves only when"))
    -- no low-rank query projection: null (DeepseekV3Config's default is 1536)
    local m = load("deepseek-v3")
    m.q_lora_rank = 0
    text = yaml_of(m, { dp_degree = 8, pp_degree = 8, ep_degree = 8, zero_stage = 0, micro_batch_size = 1,
      layer_recompute = "full" }, { global_batch_size = 512 }, 64)
    assert.are.equal("null", mc(text, "q_lora_rank"))
  end)

  it("write DeepSeek-V3.2 as DeepSeek-V3's model without the indexer, and say so", function()
    -- the indexer is all the deepseek_v3 model lacks: it is written (MLA,
    -- experts, MTP) with the sparse attention dropped, as TorchTitan's file
    -- does, not as LlamaConfig's parallel settings alone (a new user's
    -- finding, 2026-12-07)
    local m = load("deepseek-v3.2")
    local fam, lacks, without = mcore.family(m, 4096)
    assert.are.same({ "deepseek_v3", {} }, { fam, lacks })
    assert.are.equal(1, #without)
    -- a family that cannot hold MLA lacks the indexer outright
    local dense = { num_layers = 2, hidden_size = 64, num_attention_heads = 4, num_query_groups = 4,
      ffn_hidden_size = 128, vocab_size = 100, index_n_heads = 8, qk_norm = true }
    local _, dense_lacks = mcore.family(dense, 4096)
    assert.is_truthy(table.concat(dense_lacks, "; "):find(mcore.DSA_LACK, 1, true))
    local text, notes = yaml_of(m, { dp_degree = 8, pp_degree = 8, ep_degree = 8, zero_stage = 0,
      micro_batch_size = 1, layer_recompute = "full" }, { global_batch_size = 512 }, 64)
    assert.are.same({ '"deepseek_v3"', "1536", "256" }, { mc(text, "model_type"), mc(text, "q_lora_rank"),
      mc(text, "n_routed_experts") })
    assert.is_true(has_note(notes, "NOT EXPRESSIBLE in MindFormers: DeepSeek Sparse Attention (the lightning " ..
      "indexer of 64 x 128 and top-2048 sparse attention): MindFormers' deepseek_v3 model has no indexer and " ..
      "attends densely; written without it"))
    assert.is_false(has_note(notes, "NOT WRITTEN: the model's architecture"))
  end)

  it("refuse what the training graph would build otherwise, or say so (a breaker's pass)", function()
    -- a dense MLA model: DeepseekV3Config's defaults would add 256 experts
    local m = load("deepseek-v3")
    m.num_experts, m.moe_first_dense_layers, m.shared_expert_ffn_hidden_size = nil, nil, nil
    local fam, lacks = mcore.family(m, 4096)
    assert.are.equal("deepseek_v3", fam)
    assert.are.same({ "MLA without experts (DeepseekV3Config's defaults build 256 experts)" }, lacks)
    -- two MTP layers: TransformerConfig takes one
    local text, notes = yaml_of(load("deepseek-v3"), { dp_degree = 8, pp_degree = 8, ep_degree = 8,
      zero_stage = 0, micro_batch_size = 1, layer_recompute = "full" }, { mtp_num_layers = 2,
      global_batch_size = 512 }, 64)
    assert.are.equal("1", mc(text, "num_nextn_predict_layers"))
    assert.is_true(has_note(notes, "NOT EXPRESSIBLE in MindFormers: training.mtp_num_layers = 2"))
    -- DeepSeek-V3 projects queries at rank 1536: no comment about no rank
    assert.are.equal("1536", mc(text, "q_lora_rank"))
    assert.is_nil(text:find("without a low rank", 1, true))
    -- experts split over TP: moe/ffn.py keeps each expert whole
    text, notes = yaml_of(load("qwen3-30b-a3b"), { dp_degree = 4, tp_degree = 2, sequence_parallel = true,
      ep_degree = 4, etp_degree = 2, zero_stage = 0, micro_batch_size = 1 })
    assert.is_true(has_note(notes, "NOT EXPRESSIBLE in MindFormers: etp_degree = 2"))
    assert.is_nil(text:find("expert_tensor_parallel_size", 1, true))
    -- yarn without mscale keys: transformers' 1 and 0, which the MLA
    -- softmax cannot tell apart
    m = load("deepseek-v3")
    m.yarn_mscale, m.yarn_mscale_all_dim = 0, 0
    text, notes = yaml_of(m, { dp_degree = 8, pp_degree = 8, ep_degree = 8, zero_stage = 0, micro_batch_size = 1,
      layer_recompute = "full" }, { global_batch_size = 512 }, 64)
    assert.truthy(text:find("\n      mscale: 1.0\n", 1, true))
    assert.truthy(text:find("\n      mscale_all_dim: 0.0\n", 1, true))
    assert.is_true(has_note(notes, "NOT EXPRESSIBLE in MindFormers: yarn mscale 1 with mscale_all_dim 0"))
  end)

  it("write Megatron's selective-recompute modules as the training graph's cell names", function()
    local q3, q30, ds = load("qwen3-32b"), load("qwen3-30b-a3b"), load("deepseek-v3")
    local function sel(m, mods) return { mcore.select_recompute(m, mods) } end
    -- unset: core_attn (TransformerConfig.recompute_modules' default)
    assert.are.same({ { "self_attention\\.core_attention" }, {} }, sel(q3, nil))
    assert.are.same({ { "self_attention\\.core_attention", "input_layernorm", "pre_mlp_layernorm" }, {} },
      sel(q3, "core_attn/layernorm"))
    -- every layer of Qwen3-30B-A3B is MoE: moe is the mlp cell of every
    -- layer, mlp (dense MLPs) re-runs nothing there
    assert.are.same({ { "mlp" }, {} }, sel(q30, "moe"))
    assert.are.same({ {}, {} }, sel(q30, "mlp"))
    -- DeepSeek-V3 has 3 dense layers first: moe alone is not the mlp cell of every layer
    assert.are.same({ {}, { "moe" } }, sel(ds, "moe"))
    assert.are.same({ { "mlp" }, { "moe_act" } }, sel(ds, "mlp/moe/moe_act"))
  end)

  it("write context parallelism as the training graph runs it: the sequence split, K/V gathered", function()
    local function cp(kind)
      return yaml_of(load("qwen3-1.7b"), { dp_degree = 4, cp_degree = 2, cp_comm_type = kind, zero_stage = 0,
        micro_batch_size = 1 }, { seq_length = 16384 })
    end
    -- no context_parallel_algo: its cp_comm_type is read by no training layer
    local text, notes = cp("all_gather")
    assert.truthy(text:find("\n  context_parallel: 2\n", 1, true))
    assert.is_nil(text:find("\n  context_parallel_algo:", 1, true))
    assert.is_false(has_note(notes, "NOT "))
    -- Ulysses is fixed at 1 (attention.py cp_ds = 1); no ring attention
    for _, kind in ipairs({ "a2a", "p2p" }) do
      text, notes = cp(kind)
      assert.is_nil(text:find("\n  context_parallel_algo:", 1, true))
      assert.is_true(has_note(notes, "NOT EXPRESSIBLE in MindFormers: cp_comm_type " .. kind .. ": "), kind)
    end
    -- Qwen3-1.7B ties its embeddings (config.json tie_word_embeddings true)
    assert.are.same({ "True", "False" }, { mc(text, "tie_word_embeddings"),
      mc(text, "untie_embeddings_and_output_weights") })
  end)
end)

describe("MindFormers offsets of a split it cannot express", function()
  it("are an even fill summing to layers mod (p x v), so that LayerSetting loads the file", function()
    -- Llama 3.1 405B's 126 layers over 16 x 2 chunks (a ZBV split, V order):
    -- 126 mod 32 = 30, one more layer to the last 15 chunks of each row
    local off = mindspore.even_fill_offset(16, 2, 30)
    local row = { 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 }
    assert.are.same({ row, row }, off)
    -- an odd remainder: the extra layer to the last row
    assert.are.same({ { 0, 0, 1, 1 }, { 0, 1, 1, 1 } }, mindspore.even_fill_offset(4, 2, 5))
    assert.are.same({ 0, 1, 1, 1 }, mindspore.even_fill_offset(4, 1, 3))
  end)
end)
