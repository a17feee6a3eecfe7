-- tests/lua/models_falcon_h1_spec.lua -- Falcon-H1 (model_type falcon_h1):
-- every layer a parallel layer P, a Mamba-2 mixer beside GQA attention
-- under one norm, then a SwiGLU MLP under a second (transformers
-- modular_falcon_h1.py @ 3c0a5c70 FalconH1DecoderLayer; Megatron-Bridge
-- 067f987df models/falcon_h1 FalconH1Layer, Symbols.PARALLEL 'P').  Exact
-- counts hand-computed from those classes, the estimate of a P layer
-- against the same mixers and MLP one after the other, refusals, and the
-- Megatron-LM script (NOT WRITTEN: Megatron-LM has no P symbol).

local core = require "apsearch.core"
local hf = require "apsearch.hf"
local H = require "spec_helpers"

local copy, err_of = H.copy, H.err_of

-- Falcon-H1-0.5B: Megatron-Bridge 067f987df tests/unit_tests/models/
-- falcon_h1/test_falcon_h1_bridge.py FALCON_H1_500M_CONFIG (the shape
-- keys), plus mamba_d_ssm, which that dict leaves out and FalconH1Bridge.
-- megatron_to_hf_config writes as mamba_num_heads x mamba_head_dim (24 x 64).
local F05 = {
  architectures = { "FalconH1ForCausalLM" }, model_type = "falcon_h1", attention_bias = false,
  attention_in_multiplier = 1.0, attention_out_multiplier = 0.9375, embedding_multiplier = 5.656854249492381,
  head_dim = 64, hidden_act = "silu", hidden_size = 1024, intermediate_size = 2048,
  key_multiplier = 0.39062499999999994, lm_head_multiplier = 0.0390625, mamba_chunk_size = 128,
  mamba_conv_bias = true, mamba_d_conv = 4, mamba_d_head = 64, mamba_d_ssm = 1536, mamba_d_state = 128,
  mamba_expand = 2, mamba_n_groups = 1, mamba_n_heads = 24, mamba_norm_before_gate = false,
  mamba_proj_bias = false, mamba_rms_norm = false, mamba_use_mlp = true, max_position_embeddings = 16384,
  mlp_bias = false, mlp_multipliers = { 0.8838834764831844, 0.5859375 }, num_attention_heads = 8,
  num_hidden_layers = 36, num_key_value_heads = 2, projectors_bias = false, rms_norm_eps = 1e-5,
  rope_theta = 100000000000.0, ssm_in_multiplier = 1.25,
  ssm_multipliers = { 0.3535533905932738, 0.25, 0.3535533905932738, 0.5, 0.3535533905932738 },
  ssm_out_multiplier = 0.23570226039551587, tie_word_embeddings = false, vocab_size = 32784,
}

-- Falcon-H1-Tiny-90M: the shape keys two independent loaders check
-- against the checkpoint's config (an mlx falcon_h1 test, "Values mirror
-- the real checkpoint"; a tt-forge converter's require_config, which adds
-- intermediate_size 768).
local TINY = {
  model_type = "falcon_h1", vocab_size = 32768, hidden_size = 512, intermediate_size = 768,
  num_hidden_layers = 24, num_attention_heads = 8, num_key_value_heads = 2, head_dim = 64,
  mamba_d_conv = 4, mamba_d_ssm = 768, mamba_d_state = 64, mamba_d_head = 32, mamba_n_heads = 24,
  mamba_n_groups = 1, mamba_conv_bias = true, mamba_proj_bias = false, mamba_rms_norm = false,
  tie_word_embeddings = true, attention_bias = false, projectors_bias = false,
}

describe("falcon_h1 import", function()
  -- per layer (FalconH1DecoderLayer): attention q 1024 x 512, k and v
  -- 1024 x 128, o 512 x 1024 = 1,310,720; MLP 3 x 1024 x 2048 =
  -- 6,291,456; Mamba-2 (FalconH1Mixer, d 1536, conv_dim 1536 + 2 x 128 =
  -- 1792): in_proj 1024 x (1536 + 1792 + 24) = 3,432,448, conv1d 1792 x 4
  -- + 1792 = 8,960, dt_bias, A_log, D 3 x 24, no gated norm
  -- (mamba_rms_norm false), out_proj 1536 x 1024 = 1,572,864: 5,014,344;
  -- input_layernorm and pre_ff_layernorm 2 x 1024.  36 layers of
  -- 12,618,568 = 454,268,448; embedding and lm_head 2 x 32784 x 1024;
  -- final_layernorm 1024.  Published: the family's 0.5B.
  it("Falcon-H1-0.5B: 521,411,104 parameters", function()
    local m, info = hf.from_config(copy(F05), "f.json")
    assert.are.same({ 36, string.rep("P", 36), 24, 64, 128, 1, 4, 128, true },
      { m.num_layers, m.hybrid_layer_pattern, m.mamba_num_heads, m.mamba_head_dim, m.mamba_state_dim,
        m.mamba_num_groups, m.mamba_conv_kernel, m.mamba_chunk_size, m.mamba_no_rmsnorm })
    assert.are.same({ 8, 2, 64, 2048, "swiglu", "rope" },
      { m.num_attention_heads, m.num_query_groups, m.head_dim, m.ffn_hidden_size, m.mlp, m.position_embedding })
    local c = core.model_params(m)
    assert.are.same({ 36, 36, 36 }, { c.mamba_layers, c.attention_layers, c.mlp_layers })
    assert.are.equal(454268448, c.layers)
    assert.are.equal(521411104, c.total)
    assert.truthy(table.concat(info.notes, "\n"):find("multipliers", 1, true))
  end)

  -- mamba_rms_norm true adds the gated RMSNorm's 1536 weights per layer
  it("the gated RMSNorm only with mamba_rms_norm", function()
    local c = copy(F05)
    c.mamba_rms_norm = true
    local m = hf.from_config(c, "f.json")
    assert.is_nil(m.mamba_no_rmsnorm)
    assert.are.equal(521411104 + 36 * 1536, core.model_params(m).total)
  end)

  -- per layer: attention 262,144 + 2 x 65,536 + 262,144 = 655,360; MLP
  -- 3 x 512 x 768 = 1,179,648; Mamba-2 (d 768, conv_dim 896): in_proj
  -- 512 x 1688 = 864,256, conv1d 896 x 5 = 4,480, 72, out_proj 393,216 =
  -- 1,262,024; two norms 1,024: 3,098,056 x 24 = 74,353,344; the tied
  -- embedding 32768 x 512 = 16,777,216; final norm 512.  Published: 90M.
  it("Falcon-H1-Tiny-90M: 91,131,072 parameters", function()
    local c = core.model_params(hf.from_config(copy(TINY), "t.json"))
    assert.are.equal(74353344, c.layers)
    assert.are.equal(91131072, c.total)
  end)

  it("refuses what FalconH1Config or the estimate does not take", function()
    local c = copy(F05)
    c.mamba_d_ssm = nil -- FalconH1Config's default 1024, which 24 heads do not divide
    assert.are.equal("f.json: mamba_d_ssm: mamba_n_heads 24 must divide the Mamba-2 width (FalconH1Config; " ..
      "absent: 1024, null: mamba_expand x hidden_size) (got 1024)", err_of(hf.from_config, c, "f.json"))
    c = copy(F05)
    c.mamba_d_head = 32
    assert.are.equal("f.json: mamba_d_head: expected mamba_n_heads x mamba_d_head = the Mamba-2 width 1536 " ..
      "(FalconH1Config) (got 32)", err_of(hf.from_config, c, "f.json"))
    c = copy(F05)
    c.attention_bias = true
    assert.are.equal("f.json: attention_bias: expected false (biases are not modelled on a hybrid model) " ..
      "(got true)", err_of(hf.from_config, c, "f.json"))
    -- FalconH1Config: a null num_key_value_heads is num_attention_heads
    c = copy(F05)
    c.num_key_value_heads = require("cjson").null
    assert.are.equal(8, hf.from_config(c, "f.json").num_query_groups)
    c = copy(F05)
    c.attn_layer_indices = { 0, 2 }
    assert.truthy(err_of(hf.from_config, c, "f.json"):find("f.json: attn_layer_indices: expected null", 1, true))
    -- the core's checks name the file's own keys; a null FalconH1Config
    -- would compute with is refused, not read as the default
    c = copy(F05)
    c.mamba_n_groups = 5
    assert.are.equal("f.json: mamba_n_groups (model.mamba_num_groups): 5 does not divide mamba_num_heads 24 " ..
      "(Megatron MambaMixer)", err_of(hf.from_config, c, "f.json"))
    c = copy(F05)
    c.mamba_n_heads = require("cjson").null
    assert.are.equal("f.json: mamba_n_heads: null is not a value here (FalconH1Config computes with it) (got null)",
      err_of(hf.from_config, c, "f.json"))
  end)
end)

describe("a parallel layer P", function()
  -- the same mixers and MLP one after the other (M*- per layer, one norm
  -- each) against P (two norms): one norm fewer per layer, the same GEMMs
  -- and attention (model FLOPs equal), one norm and residual add fewer of
  -- memory-bound work and of saved activations per layer
  it("counts one norm fewer than M*- and prices the same FLOPs", function()
    local p = hf.from_config(copy(F05), "f.json")
    local s = copy(p)
    s.hybrid_layer_pattern, s.num_layers = string.rep("M*-", 36), 108
    assert.are.equal(36 * 1024, core.model_params(s).total - core.model_params(p).total)
    local cluster = { device = "h100-sxm-80gb", num_devices = 8, devices_per_node = 8 }
    local tr = { global_batch_size = 64, seq_length = 4096, framework = "megatron", precision = "bf16" }
    local ep = core.context(p, cluster, tr):estimate({ dp_degree = 8, micro_batch_size = 1 })
    local es = core.context(s, cluster, tr):estimate({ dp_degree = 8, micro_batch_size = 1 })
    assert.is_true(ep.feasible and es.feasible)
    assert.are.equal(es.model_flops_per_step, ep.model_flops_per_step)
    assert.is_true(ep.performance_breakdown.compute_fwd.total < es.performance_breakdown.compute_fwd.total)
    assert.is_true(ep.memory_breakdown.activations < es.memory_breakdown.activations)
  end)

  -- TP: the P layer's mixers and MLP each have their parallel linears
  -- (falconh1_layer_specs.py), three all-gather / reduce-scatter pairs as
  -- M*- has; a hand-written table with 4 heads, groups and KV heads
  it("has the TP collectives of its three blocks", function()
    local p = hf.from_config(copy(F05), "f.json")
    p.num_attention_heads, p.num_query_groups, p.mamba_num_groups = 8, 4, 4
    p.mamba_num_heads, p.mamba_head_dim = 24, 64
    local s = copy(p)
    s.hybrid_layer_pattern, s.num_layers = string.rep("M*-", 36), 108
    local cluster = { device = "h100-sxm-80gb", num_devices = 8, devices_per_node = 8 }
    local tr = { global_batch_size = 64, seq_length = 4096, framework = "megatron", precision = "bf16" }
    local st = { dp_degree = 2, tp_degree = 4, sequence_parallel = true, micro_batch_size = 1 }
    local tp = core.context(p, cluster, tr):estimate(st).performance_breakdown.tp_comm.total
    local ts = core.context(s, cluster, tr):estimate(st).performance_breakdown.tp_comm.total
    assert.is_true(tp > 0)
    assert.is_true(math.abs(tp - ts) < 1e-12 * ts, ("P %.6f s, M*- %.6f s"):format(tp, ts))
  end)

  -- Megatron-Bridge 067f987df models/falcon_h1: no virtual stages
  -- (falconh1_provider.py:126), num_layers / pp per rank
  -- (falconh1_block.py:242), no recompute, no Megatron-FSDP, no per-layer
  -- CUDA graphs
  it("refuses what Megatron-Bridge's Falcon-H1 model cannot run", function()
    local p = hf.from_config(copy(F05), "f.json")
    local cluster = { device = "h100-sxm-80gb", num_devices = 8, devices_per_node = 8 }
    local tr = { global_batch_size = 64, seq_length = 4096, framework = "megatron", precision = "bf16" }
    local ctx = core.context(p, cluster, tr)
    local function why(st)
      local e = ctx:estimate(st)
      assert.is_false(e.feasible)
      return e.message
    end
    assert.is_true(ctx:estimate({ dp_degree = 2, pp_degree = 4, micro_batch_size = 1 }).feasible)
    assert.truthy(why({ dp_degree = 2, pp_degree = 4, vpp_degree = 3, micro_batch_size = 1 })
      :find("refuses virtual pipeline stages", 1, true))
    assert.truthy(why({ dp_degree = 1, pp_degree = 8, pipeline_split = "fill_last", micro_batch_size = 1 }):find("num_layers / pp_degree", 1, true))
    assert.truthy(why({ dp_degree = 8, layer_recompute = "full", micro_batch_size = 1 })
      :find("recomputes no activations", 1, true))
    -- Megatron-FSDP's default units (mcore_fsdp_adapter.py:171) do not
    -- include FalconH1Layer
    assert.truthy(why({ fsdp_degree = 8, micro_batch_size = 1 }):find("a FalconH1Layer is none", 1, true))
    tr.cuda_graphs, tr.cuda_graph_scope = true, "attn"
    assert.truthy(core.context(p, cluster, tr):estimate({ dp_degree = 8, micro_batch_size = 1 }).feasible == false)
    tr.cuda_graphs, tr.cuda_graph_scope = nil, nil
    -- the even split written out (a result.json records it so) runs; a
    -- balanced or any other split is not built (falconh1_block.py:242)
    assert.is_true(ctx:estimate({ dp_degree = 2, pp_degree = 4, stage_partition = { 9, 9, 9, 9 },
      micro_batch_size = 1 }).feasible)
    assert.truthy(why({ dp_degree = 2, pp_degree = 4, stage_partition = { 10, 8, 9, 9 }, micro_batch_size = 1 })
      :find("num_layers / pp_degree", 1, true))
    assert.truthy(why({ dp_degree = 4, pp_degree = 2, balance_stages = true, micro_batch_size = 1 })
      :find("num_layers / pp_degree", 1, true))
    -- no MTP, no activation offloading in models/falcon_h1
    tr.activation_offload_layers = 2
    assert.truthy(core.context(p, cluster, tr):estimate({ dp_degree = 8, micro_batch_size = 1 }).message
      :find("offloads no activations", 1, true))
  end)

  -- Megatron-Bridge's FalconH1 allocation (mamba_hybrid_layer_allocation.py
  -- :98) raises on a symbol outside M, *, -, P: no MoE layer beside P
  it("refuses MoE layers E beside parallel layers P", function()
    local p = hf.from_config(copy(F05), "f.json")
    p.hybrid_layer_pattern = "PE" .. string.rep("P", 34)
    p.num_experts, p.experts_per_token, p.moe_ffn_hidden_size = 8, 2, 512
    local e = core.context(p, { device = "h100-sxm-80gb", num_devices = 8, devices_per_node = 8 },
      { global_batch_size = 64, seq_length = 4096, framework = "megatron", precision = "bf16" })
      :estimate({ dp_degree = 8, micro_batch_size = 1 })
    assert.is_false(e.feasible)
    assert.truthy(e.message:find("accepts M, *, - and P only", 1, true), e.message)
  end)

  -- a hand-written table: norms_per_layer 1 unless given (policy.lua), and
  -- Megatron's pipeline separator '|' refused with where the split goes
  it("a hand-written hybrid table takes one norm per block and refuses '|'", function()
    local dir = H.tmpdir()
    local function policy(pattern)
      return ([[return { model = { name = "hyb", num_layers = %d, hidden_size = 1024, num_attention_heads = 8,
        num_query_groups = 2, head_dim = 64, ffn_hidden_size = 2048, vocab_size = 32768, mlp = "swiglu",
        norm = "rmsnorm", position_embedding = "rope", hybrid_layer_pattern = %q, mamba_num_heads = 24,
        mamba_head_dim = 64, mamba_state_dim = 128, mamba_num_groups = 1 },
        cluster = { device = "h100-sxm-80gb", num_devices = 8, devices_per_node = 8 },
        training = { global_batch_size = 64, seq_length = 4096 } }]]):format(#pattern:gsub("|", ""), pattern)
    end
    H.write(dir .. "/ok.lua", policy("PPM*-PM-"))
    local code, out, err = H.apsearch("estimate", dir .. "/ok.lua", "--strategy", "dp_degree=8")
    assert.are.equal(0, code, err)
    assert.truthy(out:find("feasible  yes", 1, true), out)
    H.write(dir .. "/bar.lua", policy("PPM*|-PM-"))
    code, _, err = H.apsearch("estimate", dir .. "/bar.lua", "--strategy", "dp_degree=8")
    assert.are.equal(2, code)
    assert.truthy(err:find("model.hybrid_layer_pattern: layer 4 is '|', Megatron's pipeline separator: give the " ..
      "layers only and the split as the strategy's stage_partition", 1, true), err)
  end)

  it("the Megatron-LM script builds each P as M*- and says so", function()
    local dir = H.tmpdir()
    local path = dir .. "/falcon-h1-0.5b.json"
    H.write(path, require("cjson").encode(F05))
    local code, _, err = H.apsearch("run", "--model", path, "--cluster", "h100-sxm-80gb:1x8", "--top-k", "1",
      "--out", dir .. "/out", "--quiet")
    assert.are.equal(0, code, err)
    local sh = H.read(dir .. "/out/launch/rank1_megatron.sh")
    assert.truthy(sh:find("NOT WRITTEN: Falcon-H1's 36 parallel layers P", 1, true))
    assert.truthy(sh:find("NOT WRITTEN: a Mamba-2 mixer without its gated RMSNorm", 1, true))
    assert.truthy(sh:find("--num-layers 108\n", 1, true))
    -- inspect names the P layers its kinds' rows each count
    local _, insp = H.apsearch("inspect", path)
    assert.truthy(insp:find("parallel_layers %(in each kind; one norm fewer%)%s+36\n"), insp)
    assert.truthy(sh:find("--hybrid-layer-pattern '" .. string.rep("M*-", 36) .. "'", 1, true))
  end)
end)
