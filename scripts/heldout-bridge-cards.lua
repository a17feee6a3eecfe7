#!/usr/bin/env lua5.4
--- Converts the measured performance items of NVIDIA Megatron-Bridge's
-- model verification cards (examples/model_verification_cards/*/card.yaml)
-- into a cases file of the validation schema (docs/accuracy.md "The cases
-- file"): the held-out set of docs/accuracy.md "Held out: Megatron-Bridge
-- verification cards".
--
-- Usage:
--   lua5.4 scripts/heldout-bridge-cards.lua GIT_DIR [COMMIT [OUT]] > /dev/null
--     writes tests/fixtures/heldout/megatron_bridge_cards.csv (or OUT) and
--     prints the items it left out, with the reason, on stderr.
-- GIT_DIR: a clone of NVIDIA-NeMo/Megatron-Bridge (a bare mirror will do);
-- COMMIT: the commit whose cards are read (default 067f987df).
--
-- What a card item gives (device, precision, nodes x GPUs per node and the
-- recipe function from its command, the command's --global_batch_size /
-- --seq_length overrides, the bridge_commit it ran at, the container, the
-- last-10-step averages of step time, model TFLOP/s and tokens/s per GPU)
-- is read from the card here.  What the recipe sets is TRANSCRIBED below
-- (RECIPES: one entry per recipe function, each setting with the file,
-- function and text that set it), and every transcription is checked
-- against the mirror at the item's bridge_commit: the cited text must
-- occur in the cited function of the cited file, and its line number is
-- read from there into the row's notes.  A cite that is not found stops
-- the script (exit 2): the table is not trusted past a commit it was not
-- read at.  The recipes are Python with helper calls and base configs;
-- they are read as code by hand (the entries name every helper they
-- follow), not parsed.

local function die(msg)
  io.stderr:write("heldout-bridge-cards.lua: ", msg, "\n")
  os.exit(2)
end
local GIT_DIR = arg[1] or die("usage: heldout-bridge-cards.lua GIT_DIR [COMMIT [OUT]]")
local COMMIT = arg[2] or "067f987df"
local ROOT = (arg[0]:match("^(.*)/[^/]*$") or ".") .. "/.."
package.path = ROOT .. "/lua/?.lua;" .. ROOT .. "/lua/?/init.lua;" .. package.path
local OUT = arg[3] or ROOT .. "/tests/fixtures/heldout/megatron_bridge_cards.csv"
local CARDS = "examples/model_verification_cards"

local show_cache = {}
local function git_show(ref, path)
  local key = ref .. ":" .. path
  if show_cache[key] == nil then
    local p = assert(io.popen(("git --git-dir=%q show %q 2>/dev/null"):format(GIT_DIR, key)))
    local s = p:read("a")
    p:close()
    show_cache[key] = s ~= "" and s or false
  end
  return show_cache[key] or nil
end

local function lines_of(text)
  local t = {}
  for l in (text .. (text:sub(-1) == "\n" and "" or "\n")):gmatch("([^\n]*)\n") do t[#t + 1] = l end
  return t
end

-- ------------------------------------------------------------- the cards

--- A YAML subset, as the cards are written: block mappings, block lists
-- of mappings ("- key: value"), plain and quoted scalars, folded (">")
-- and literal ("|") blocks, comments.  Each mapping keeps the line of
-- each key (`_line[key]`).
local function yaml_scalar(v)
  v = v:gsub("%s+#.*$", ""):gsub("%s+$", "")
  local q = v:match('^"(.*)"$') or v:match("^'(.*)'$")
  if q then return q end
  if v == "null" or v == "~" or v == "" then return nil end
  return v
end

local function parse_yaml(text, name)
  local L = lines_of(text)
  local i = 1
  local function indent(l) return #l:match("^( *)") end
  local function blank(l) return l:match("^%s*$") or l:match("^%s*#") end
  local function skip() while i <= #L and blank(L[i]) do i = i + 1 end end
  local parse_block
  local function parse_value(rest, ind, lineno)
    if rest == ">" or rest == ">-" or rest == "|" or rest == "|-" then
      local parts = {}
      while i <= #L and (blank(L[i]) or indent(L[i]) > ind) do
        if not blank(L[i]) then parts[#parts + 1] = L[i]:gsub("^%s+", "") end
        i = i + 1
      end
      return table.concat(parts, rest:sub(1, 1) == ">" and " " or "\n")
    end
    if rest ~= "" and not rest:match("^#") then return yaml_scalar(rest) end
    skip()
    if i > #L or indent(L[i]) <= ind and not L[i]:match("^%s*%- ") then return nil end
    return parse_block(indent(L[i]))
  end
  function parse_block(ind)
    skip()
    local node = { _line = {} }
    if L[i] and L[i]:sub(ind + 1, ind + 2) == "- " then
      -- a list of mappings or scalars
      while i <= #L do
        skip()
        if i > #L or indent(L[i]) ~= ind or L[i]:sub(ind + 1, ind + 2) ~= "- " then break end
        local body = L[i]:sub(ind + 3)
        local k, v = body:match("^([%w_%-%.]+):%s*(.-)%s*$")
        if k then
          -- the item's first key sits after "- ": re-read it as a mapping
          L[i] = string.rep(" ", ind + 2) .. body
          node[#node + 1] = parse_block(ind + 2)
        elseif body:match("^[>|]%-?$") then
          i = i + 1
          node[#node + 1] = parse_value(body, ind, i - 1)
        else
          node[#node + 1] = yaml_scalar(body)
          i = i + 1
        end
      end
      return node
    end
    while i <= #L do
      skip()
      if i > #L or indent(L[i]) < ind then break end
      if indent(L[i]) > ind then die(("%s:%d: unexpected indentation"):format(name, i)) end
      local k, rest = L[i]:match("^%s*([%w_%-%.]+):%s*(.-)%s*$")
      if not k then die(("%s:%d: not a mapping entry: %s"):format(name, i, L[i])) end
      local lineno = i
      i = i + 1
      node[k] = parse_value(rest, ind, lineno)
      node._line[k] = lineno
    end
    return node
  end
  return parse_block(0)
end

-- ------------------------------------------------------------- recipes

local SRC = "src/megatron/bridge/"

--- The body of function fn in text: its def line to the next line at the
-- def's indentation or less that starts a statement; returns first, last
-- line numbers.
local function fn_span(L, fn)
  for n, l in ipairs(L) do
    local ind = l:match("^(%s*)def " .. fn:gsub("%p", "%%%0") .. "%(")
    if ind then
      local last = #L
      for m = n + 1, #L do
        local lm = L[m]
        if lm:match("^%s*%S") and #lm:match("^(%s*)") <= #ind and not lm:match("^%s*[%)%]]") then
          last = m - 1
          break
        end
      end
      return n, last
    end
  end
  return nil
end

--- file:line of literal text pat in function fn of file at ref (the first
-- occurrence), or dies.
local function cite(ref, c)
  if not c.pat then return "ASSUMED: no line of the recipe chain sets it" end
  local path = c.file:match("^scripts/") and c.file or SRC .. c.file
  local text = git_show(ref, path) or die(("%s at %s: no such file"):format(path, ref))
  local L = lines_of(text)
  local first, last = 1, #L
  if c.fn then
    first, last = fn_span(L, c.fn)
    if not first then die(("%s at %s: no function %s"):format(path, ref, c.fn)) end
  end
  for n = first, last do
    if L[n]:find(c.pat, 1, true) then return ("%s:%d"):format(c.file, n) end
  end
  die(("%s at %s, %s: %q not found (the transcription does not hold at this commit)"):format(path, ref,
    c.fn or "file", c.pat))
end

-- Files, relative to src/megatron/bridge/.
local MP = "training/mixed_precision.py"
local BC = "perf_recipes/_common.py"
local QC = "perf_recipes/qwen/common.py"
local DC = "perf_recipes/deepseek/common.py"
local OC = "perf_recipes/gpt_oss/common.py"
local FLEX = "training/flex_dispatcher_backend.py"

--- A setting: column, value, and where it is set (file, function, text).
local function S(col, val, file, fn, pat) return { col = col, val = val, file = file, fn = fn, pat = pat } end
--- A fact the row states in notes only (not modelled, or not a column).
local function N(text, file, fn, pat) return { note = text, file = file, fn = fn, pat = pat } end

-- Qwen3 30B-A3B / 235B-A22B MXFP8 on GB200 / GB300: the perf recipe
-- (perf_recipes/qwen/<gpu>/qwen3_moe.py) and _enable_hybridep_full_
-- iteration_mxfp8 (perf_recipes/qwen/common.py), called after
-- _benchmark_common (which would otherwise switch the op fuser off)
local function qwen_mxfp8(gpu, fn, v)
  local P = "perf_recipes/qwen/" .. gpu .. "/qwen3_moe.py"
  local H = "_enable_hybridep_full_iteration_mxfp8"
  local s = {
    S("precision", "mxfp8", P, fn, '_perf_precision("fp8_mx")'),
    S("fp8_param_gather", "true", MP, "bf16_with_mxfp8_mixed", "cfg.fp8_param_gather = True"),
    S("tp_degree", v.tp, P, fn, "tensor_model_parallel_size = " .. v.tp),
    S("pp_degree", v.pp, P, fn, "pipeline_model_parallel_size = " .. v.pp),
    S("vpp_degree", v.vp or 1, P, fn, "virtual_pipeline_model_parallel_size = " .. (v.vp or "None")),
    S("cp_degree", 1, P, fn, "context_parallel_size = 1"),
    S("ep_degree", v.ep, P, fn, "expert_model_parallel_size = " .. v.ep),
    S("sequence_parallel", "false", P, fn, "sequence_parallel = False"),
    S("global_batch_size", v.gbs, P, fn, "global_batch_size = " .. v.gbs),
    S("micro_batch_size", v.mbs, P, fn, "micro_batch_size = " .. v.mbs),
    S("seq_length", 4096, P, fn, "cfg.model.seq_length = 4096"),
    S("layer_recompute", "none", P, fn, "recompute_granularity = None"),
    S("moe_token_dispatcher", "flex", P, fn, 'moe_token_dispatcher_type = "flex"'),
    S("moe_flex_dispatcher_backend", "hybridep", P, fn, 'moe_flex_dispatcher_backend = "hybridep"'),
    S("moe_router_force_load_balancing", "true", P, fn, "moe_router_force_load_balancing = True"),
    S("moe_router_fusion", "true", P, fn, "moe_router_fusion = True"),
    S("cuda_graphs", "true", QC, H, 'cuda_graph_impl = "full_iteration"'),
    S("cuda_graph_scope", "full_iteration", QC, H, 'cuda_graph_impl = "full_iteration"'),
    S("moe_paged_stash", "true", QC, H, "moe_paged_stash = True"),
    S("moe_expert_rank_capacity_factor", 1.5, QC, H, "moe_expert_rank_capacity_factor = 1.5"),
    S("moe_paged_stash_buffer_size_factor_cuda", 1.2, QC, H, "moe_paged_stash_buffer_size_factor_cuda = 1.2"),
    S("overlap_moe_expert_parallel_comm", "true", QC, H, "overlap_moe_expert_parallel_comm=True"),
    S("cutedsl_fused_grouped_mlp", "true", P, fn, '"NVTE_CUTEDSL_FUSED_GROUPED_MLP": 1'),
    N("use_transformer_engine_op_fuser True (with the env var above: TE's fused grouped MLP)", QC, H,
      "use_transformer_engine_op_fuser = True"),
    S("grad_reduce_in_fp32", "false", BC, "_benchmark_common", "cfg.ddp.grad_reduce_in_fp32 = False"),
    N("fp8_dot_product_attention True: NOT MODELLED (attention priced in bf16)", QC, H,
      "fp8_dot_product_attention = True"),
    N("delay_wgrad_compute True: not a column", QC, H, "delay_wgrad_compute=True"),
  }
  -- the base config (recipes/qwen/h100/qwen3_moe.py, imported by
  -- perf_recipes/qwen/common.py and recipes/qwen/qwen3_moe.py)
  s[#s + 1] = S("etp_degree", 1, "recipes/qwen/h100/qwen3_moe.py", v.base, "expert_tensor_parallel_size = 1")
  if v.pp > 1 then
    -- Megatron's --account-for-embedding/loss-in-pipeline-split
    s[#s + 1] = S("pipeline_layout", "account-embedding-loss", "recipes/qwen/h100/qwen3_moe.py", v.base,
      "account_for_embedding_in_pipeline_split = True")
    s[#s + 1] = N("account_for_loss_in_pipeline_split True", "recipes/qwen/h100/qwen3_moe.py", v.base,
      "account_for_loss_in_pipeline_split = True")
  end
  return { file = P, fn = fn, settings = s }
end

-- DeepSeek-V3: deepseek_v3_pretrain_config is recipes/deepseek/h100/
-- deepseek_v3.py deepseek_v3_pretrain_1024gpu_h100_bf16_config (the alias
-- in recipes/deepseek/deepseek_v3.py); _deepseek_v3_common in
-- perf_recipes/deepseek/common.py
local DSB, DSF = "recipes/deepseek/h100/deepseek_v3.py", "deepseek_v3_pretrain_1024gpu_h100_bf16_config"
local function dsv3_common(P, fn, v)
  return {
    S("tp_degree", v.tp, P, fn, "tensor_model_parallel_size = " .. v.tp),
    S("pp_degree", v.pp, P, fn, "pipeline_model_parallel_size = " .. v.pp),
    S("vpp_degree", v.vp, P, fn, "virtual_pipeline_model_parallel_size = " .. v.vp),
    S("cp_degree", 1, P, fn, "context_parallel_size = 1"),
    S("ep_degree", v.ep, P, fn, "expert_model_parallel_size = " .. v.ep),
    S("etp_degree", 1, DSB, DSF, "expert_tensor_parallel_size = 1"),
    S("sequence_parallel", v.tp > 1 and "true" or "false", P, fn,
      "sequence_parallel = " .. (v.tp > 1 and "True" or "False")),
    S("global_batch_size", v.gbs, P, fn, "global_batch_size = " .. v.gbs),
    S("micro_batch_size", v.mbs, P, fn, "micro_batch_size = " .. v.mbs),
    S("seq_length", 4096, DSB, DSF, "cfg.model.seq_length = 4096"),
    S("mtp_layers", 1, DSB, DSF, "mtp_num_layers = 1"),
    S("moe_router_force_load_balancing", "true", DC, "_deepseek_v3_common", "moe_router_force_load_balancing = True"),
    S("moe_router_fusion", "true", DC, "_deepseek_v3_common", "moe_router_fusion = True"),
    S("grad_reduce_in_fp32", "false", BC, "_benchmark_common", "cfg.ddp.grad_reduce_in_fp32 = False"),
    N("Adam moments and main gradients in bf16 (precision-aware optimizer): NOT a column, the estimate keeps " ..
      "fp32 moments", DSB, DSF, "exp_avg_dtype = torch.bfloat16"),
  }
end

local function dsv3_mxfp8(gpu, fn, v)
  local P = "perf_recipes/deepseek/" .. gpu .. "/deepseek_v3.py"
  local H = "_enable_deepseek_full_iteration_mxfp8"
  local s = dsv3_common(P, fn, v)
  for _, x in ipairs({
    S("precision", "mxfp8", P, fn, '_perf_precision("fp8_mx")'),
    S("fp8_param_gather", "true", MP, "bf16_with_mxfp8_mixed", "cfg.fp8_param_gather = True"),
    S("layer_recompute", v.recompute and "selective" or "none", v.recompute and DC or P,
      v.recompute and "_deepseek_v3_common" or fn,
      v.recompute and 'recompute_granularity = "selective"' or "recompute_modules = []"),
    S("moe_token_dispatcher", "flex", DC, H, 'moe_token_dispatcher_type = "flex"'),
    S("moe_flex_dispatcher_backend", "hybridep", DC, H, 'moe_flex_dispatcher_backend = "hybridep"'),
    S("cuda_graphs", "true", DC, H, 'cuda_graph_impl = "full_iteration"'),
    S("cuda_graph_scope", "full_iteration", DC, H, 'cuda_graph_impl = "full_iteration"'),
    S("moe_paged_stash", "true", DC, H, "moe_paged_stash = True"),
    S("moe_expert_rank_capacity_factor", 1.5, DC, H, "moe_expert_rank_capacity_factor = 1.5"),
    S("moe_paged_stash_buffer_size_factor_cuda", 1.2, DC, H, "moe_paged_stash_buffer_size_factor_cuda = 1.2"),
    S("overlap_moe_expert_parallel_comm", "true", DC, H, "overlap_moe_expert_parallel_comm = True"),
    S("cutedsl_fused_grouped_mlp", "true", P, fn, '"NVTE_CUTEDSL_FUSED_GROUPED_MLP": 1'),
    N("use_transformer_engine_op_fuser True", DC, H, "use_transformer_engine_op_fuser = True"),
    S("overlap_grad_reduce", "true", P, fn, "cfg.ddp.overlap_grad_reduce = True"),
    S("pipeline_layout", v.layout, P, fn, v.layout_pat),
    N("fp8_output_proj True: NOT MODELLED", P, fn, "fp8_output_proj=True"),
  }) do s[#s + 1] = x end
  if v.recompute then
    s[#s + 1] = S("recompute_modules", v.recompute, P, fn, 'recompute_modules = ["mla_up_proj"]')
  else
    s[#s + 1] = N("recompute_modules [] under the selective granularity: nothing recomputed (Megatron-Core fills " ..
      "core_attn only when the list is None: NVIDIA/Megatron-LM d98e8a64 megatron/core/transformer/" ..
      "transformer_config.py:1940-1941)", P, fn, "recompute_modules = []")
  end
  if v.fp8_dpa then
    s[#s + 1] = N("fp8_dot_product_attention True: NOT MODELLED (attention priced in bf16)", P, fn,
      "fp8_dot_product_attention=True")
  end
  return { file = P, fn = fn, settings = s }
end

-- Nemotron 3 (hybrid Mamba-2 + latent MoE): perf_recipes/nemotronh/
-- <gpu>/nemotronh.py on the base configs perf_recipes/nemotronh/common.py
-- imports at each commit (recipes/nemotronh/h100/nemotron_3_{nano,super}.py)
local NC = "perf_recipes/nemotronh/common.py"
local NANO_B, NANO_BF = "recipes/nemotronh/h100/nemotron_3_nano.py", "nemotron_3_nano_pretrain_8gpu_h100_bf16_config"
local SUP_B = "recipes/nemotronh/h100/nemotron_3_super.py"
local ROUTER_FUSION_DEFAULT = "moe_router_fusion false: no line of the recipe chain or the Nemotron-H provider " ..
  "(src/megatron/bridge/models/nemotronh) sets it; ASSUMED Megatron-Core's TransformerConfig default (False: " ..
  "NVIDIA/Megatron-LM d98e8a64 megatron/core/transformer/transformer_config.py:944)"
local NO_RECOMPUTE = "no recompute: no line of the base function or _pretrain_common sets recompute_granularity; " ..
  "ASSUMED Megatron-Core's default (none)"
local function super_mtp(base_fn)
  return {
    S("mtp_layers", 2, SUP_B, base_fn, "mtp_num_layers = 2"),
    S("mtp_repeated_layer", "true", SUP_B, base_fn, "mtp_use_repeated_layer = True"),
    N("keep_mtp_spec_in_bf16 True: NOT MODELLED (the MTP layers priced in the row's precision)", SUP_B, base_fn,
      "keep_mtp_spec_in_bf16 = True"),
  }
end
local function append(t, more) for _, x in ipairs(more) do t[#t + 1] = x end return t end

local RECIPES = {
  nemotron_3_nano_pretrain_8gpu_gb300_fp8mx_config = (function()
    local P, fn = "perf_recipes/nemotronh/gb300/nemotronh.py", "nemotron_3_nano_pretrain_8gpu_gb300_fp8mx_config"
    local BU = "_build_nemotron_3_nano_gb300_mxfp8"
    local D = "_apply_nemotron_3_nano_perf_defaults"
    return { file = P, fn = fn, settings = {
      N("base: " .. NANO_B .. " " .. NANO_BF .. " (recipes/nemotronh/nemotron_3_nano.py alias)", NC, nil,
        "from megatron.bridge.recipes.nemotronh.nemotron_3_nano import nemotron_3_nano_pretrain_config"),
      S("precision", "mxfp8", P, BU, '_perf_precision("fp8_mx")'),
      S("fp8_param_gather", "true", MP, "bf16_with_mxfp8_mixed", "cfg.fp8_param_gather = True"),
      N("first_last_layers_bf16 False: _perf_precision replaces the model recipe's mixed precision " ..
        "(MixedPrecisionConfig default), every layer quantized", MP, nil, "first_last_layers_bf16: bool = False"),
      S("tp_degree", 1, P, BU, "tensor_model_parallel_size = 1"),
      S("pp_degree", 1, P, BU, "pipeline_model_parallel_size = 1"),
      S("vpp_degree", 1, P, BU, "virtual_pipeline_model_parallel_size = None"),
      S("cp_degree", 1, P, BU, "context_parallel_size = 1"),
      S("ep_degree", 8, P, BU, "expert_model_parallel_size = 8"),
      S("etp_degree", 1, NANO_B, NANO_BF, "expert_tensor_parallel_size=1"),
      S("sequence_parallel", "false", P, BU, "sequence_parallel = False"),
      S("global_batch_size", 512, P, BU, "global_batch_size = 512"),
      S("micro_batch_size", 4, P, BU, "micro_batch_size = 4"),
      S("seq_length", 8192, NC, D, "cfg.model.seq_length = 8192"),
      S("layer_recompute", "none", NC, D, "recompute_granularity = None"),
      S("moe_token_dispatcher", "flex", NANO_B, NANO_BF, 'moe_token_dispatcher_type = "flex"'),
      S("moe_flex_dispatcher_backend", "hybridep", P, BU, 'moe_flex_dispatcher_backend = "hybridep"'),
      S("moe_router_force_load_balancing", "true", P, BU, "moe_router_force_load_balancing = True"),
      S("moe_router_fusion", "false", NANO_B, NANO_BF, "moe_router_fusion = False"),
      S("cuda_graphs", "true", P, BU, 'cuda_graph_impl = "transformer_engine"'),
      S("cuda_graph_scope", "attn+mamba+moe_router", P, BU,
        'set_cuda_graph_modules(cfg.model, ["attn", "mamba", "moe_router", "moe_preprocess"])'),
      S("overlap_moe_expert_parallel_comm", "false", NANO_B, NANO_BF, "overlap_moe_expert_parallel_comm = False"),
      S("cutedsl_fused_grouped_mlp", "true", P, fn, '"NVTE_CUTEDSL_FUSED_GROUPED_MLP": 1'),
      N("use_transformer_engine_op_fuser True, set after _benchmark_common", P, fn,
        "use_transformer_engine_op_fuser = True"),
      N("fp8_dot_product_attention True: NOT MODELLED (attention priced in bf16)", P, fn,
        "fp8_dot_product_attention = True"),
      S("grad_reduce_in_fp32", "false", BC, "_benchmark_common", "cfg.ddp.grad_reduce_in_fp32 = False"),
    } }
  end)(),
  nemotron_3_super_pretrain_64gpu_h100_bf16_config = (function()
    local P, fn = "perf_recipes/nemotronh/h100/nemotronh.py", "nemotron_3_super_pretrain_64gpu_h100_bf16_config"
    local B = "_nemotron_3_super_pretrain_64gpu_h100_bf16_config"
    return { file = P, fn = fn, settings = append({
      N("base: recipes/nemotronh/nemotron_3_super.py nemotron_3_super_pretrain_config = " .. SUP_B .. " " .. B ..
        " on nemotron_3_super_pretrain_16gpu_h100_bf16_config", "recipes/nemotronh/nemotron_3_super.py",
        "nemotron_3_super_pretrain_config", "return _nemotron_3_super_pretrain_64gpu_h100_bf16_config()"),
      S("precision", "bf16", P, fn, '_perf_precision("bf16")'),
      S("tp_degree", 1, SUP_B, B, "tensor_model_parallel_size = 1"),
      S("pp_degree", 2, SUP_B, B, "pipeline_model_parallel_size = 2"),
      S("vpp_degree", 1, SUP_B, B, "virtual_pipeline_model_parallel_size = None"),
      N("pipeline_model_parallel_layout None: Megatron's default split", SUP_B, B,
        "pipeline_model_parallel_layout = None"),
      S("cp_degree", 1, SUP_B, B, "context_parallel_size = 1"),
      S("ep_degree", 32, SUP_B, B, "expert_model_parallel_size = 32"),
      S("etp_degree", 1, SUP_B, B, "expert_tensor_parallel_size = 1"),
      S("sequence_parallel", "false", SUP_B, B, "sequence_parallel = False"),
      S("global_batch_size", 1280, SUP_B, B, "global_batch_size = 1280"),
      S("micro_batch_size", 1, SUP_B, B, "micro_batch_size = 1"),
      S("seq_length", 4096, SUP_B, B, "cfg.model.seq_length = 4096"),
      S("layer_recompute", "selective", SUP_B, B, 'recompute_granularity = "selective"'),
      S("recompute_modules", "layernorm/moe_act/moe/core_attn", SUP_B, B,
        'recompute_modules = ["layernorm", "moe_act", "moe", "core_attn"]'),
      S("moe_token_dispatcher", "flex", SUP_B, B, 'moe_token_dispatcher_type = "flex"'),
      S("moe_flex_dispatcher_backend", "hybridep", SUP_B, B, 'moe_flex_dispatcher_backend = "hybridep"'),
      S("moe_capacity_factor", 1.1, SUP_B, B, "moe_expert_capacity_factor = 1.10"),
      N("moe_pad_expert_input_to_capacity True", SUP_B, B, "moe_pad_expert_input_to_capacity = True"),
      S("moe_router_force_load_balancing", "true", P, fn, "moe_router_force_load_balancing = True"),
      S("moe_router_fusion", "false", nil, nil, nil),
      N(ROUTER_FUSION_DEFAULT),
      S("cuda_graphs", "false", SUP_B, B, 'cuda_graph_impl = "none"'),
      S("overlap_grad_reduce", "false", SUP_B, B, "cfg.ddp.overlap_grad_reduce = False"),
      S("grad_reduce_in_fp32", "false", BC, "_benchmark_common", "cfg.ddp.grad_reduce_in_fp32 = False"),
    }, super_mtp("nemotron_3_super_pretrain_16gpu_h100_bf16_config")) }
  end)(),
  nemotron_3_super_pretrain_64gpu_gb200_bf16_config = (function()
    local P, fn = "perf_recipes/nemotronh/gb200/nemotronh.py", "nemotron_3_super_pretrain_64gpu_gb200_bf16_config"
    local B = "nemotron_3_super_pretrain_8gpu_h100_bf16_config"
    return { file = P, fn = fn, settings = append({
      N("base: " .. SUP_B .. " " .. B .. " (the recipes/nemotronh/nemotron_3_super.py alias)",
        "recipes/nemotronh/nemotron_3_super.py", nil, "nemotron_3_super_pretrain_8gpu_h100_bf16_config as " ..
        "nemotron_3_super_pretrain_config"),
      S("precision", "bf16", P, fn, '_perf_precision("bf16")'),
      S("tp_degree", 2, P, fn, "tensor_model_parallel_size = 2"),
      S("pp_degree", 1, P, fn, "pipeline_model_parallel_size = 1"),
      S("vpp_degree", 1, P, fn, "virtual_pipeline_model_parallel_size = None"),
      S("cp_degree", 1, P, fn, "context_parallel_size = 1"),
      S("ep_degree", 64, P, fn, "expert_model_parallel_size = 64"),
      S("etp_degree", 1, P, fn, "expert_tensor_parallel_size = 1"),
      S("sequence_parallel", "true", P, fn, "sequence_parallel = True"),
      S("global_batch_size", 512, P, fn, "global_batch_size = 512"),
      S("micro_batch_size", 1, P, fn, "micro_batch_size = 1"),
      S("seq_length", 8192, SUP_B, B, "cfg.model.seq_length = 8192"),
      S("layer_recompute", "none", nil, nil, nil),
      N(NO_RECOMPUTE),
      S("moe_token_dispatcher", "flex", P, fn, 'moe_token_dispatcher_type = "flex"'),
      S("moe_flex_dispatcher_backend", "hybridep", P, fn, 'moe_flex_dispatcher_backend = "hybridep"'),
      S("moe_router_force_load_balancing", "true", NC, "_apply_nemotron_3_super_perf_defaults",
        "moe_router_force_load_balancing = True"),
      S("moe_router_fusion", "false", nil, nil, nil),
      N(ROUTER_FUSION_DEFAULT),
      S("cuda_graphs", "true", P, fn, 'cuda_graph_impl = "transformer_engine"'),
      S("cuda_graph_scope", "attn+mamba+moe_router", P, fn,
        'cuda_graph_scope = ["attn", "mamba", "moe_router", "moe_preprocess"]'),
      S("tp_comm_overlap", "false", "recipes/common.py", "_pretrain_common", "comm_overlap=None"),
      S("overlap_grad_reduce", "true", SUP_B, B, "cfg.ddp.overlap_grad_reduce = True"),
      S("grad_reduce_in_fp32", "false", NC, "_apply_nemotron_3_super_perf_defaults",
        "cfg.ddp.grad_reduce_in_fp32 = False"),
    }, super_mtp(B)) }
  end)(),
  nemotron_3_super_pretrain_64gpu_gb300_nvfp4_config = (function()
    local P, fn = "perf_recipes/nemotronh/gb300/nemotronh.py", "nemotron_3_super_pretrain_64gpu_gb300_nvfp4_config"
    local B = "nemotron_3_super_pretrain_16gpu_h100_bf16_config"
    return { file = P, fn = fn, settings = append({
      N("base: " .. SUP_B .. " " .. B .. " (imported by " .. NC .. ")", NC, nil,
        "nemotron_3_super_pretrain_16gpu_h100_bf16_config as nemotron_3_super_pretrain_config"),
      S("precision", "nvfp4", NC, "_nemotron_3_super_nvfp4_precision", "nemotron_3_super_bf16_with_nvfp4_mixed()"),
      S("fp8_param_gather", "false", NC, "_nemotron_3_super_nvfp4_precision", "cfg.fp4_param_gather = False"),
      S("first_last_layers_bf16", "true", MP, "nemotron_3_super_bf16_with_nvfp4_mixed",
        "cfg.first_last_layers_bf16 = True"),
      S("num_layers_at_start_in_bf16", 0, MP, nil, "num_layers_at_start_in_bf16: int = 0"),
      S("num_layers_at_end_in_bf16", 14, MP, "nemotron_3_super_bf16_with_nvfp4_mixed",
        "cfg.num_layers_at_end_in_bf16 = 14"),
      N("quant_recipe (TE quantization config: some projections kept in bf16): NOT MODELLED", P, fn,
        "load_quantization_recipe(str(_TE_QUANT_CFG_PATH))"),
      S("tp_degree", 1, P, fn, "tensor_model_parallel_size = 1"),
      S("pp_degree", 1, P, fn, "pipeline_model_parallel_size = 1"),
      S("vpp_degree", 1, P, fn, "virtual_pipeline_model_parallel_size = None"),
      S("cp_degree", 1, P, fn, "context_parallel_size = 1"),
      S("ep_degree", 64, P, fn, "expert_model_parallel_size = 64"),
      S("etp_degree", 1, P, fn, "expert_tensor_parallel_size = 1"),
      S("sequence_parallel", "false", P, fn, "sequence_parallel = False"),
      S("global_batch_size", 512, P, fn, "global_batch_size = 512"),
      S("micro_batch_size", 1, P, fn, "micro_batch_size = 1"),
      S("seq_length", 8192, SUP_B, B, "cfg.model.seq_length = 8192"),
      S("layer_recompute", "none", nil, nil, nil),
      N(NO_RECOMPUTE),
      S("moe_token_dispatcher", "flex", P, fn, 'moe_token_dispatcher_type = "flex"'),
      S("moe_flex_dispatcher_backend", "hybridep", P, fn, 'moe_flex_dispatcher_backend = "hybridep"'),
      S("moe_router_force_load_balancing", "true", NC, "_apply_nemotron_3_super_perf_defaults",
        "moe_router_force_load_balancing = True"),
      S("moe_router_fusion", "false", nil, nil, nil),
      N(ROUTER_FUSION_DEFAULT),
      S("cuda_graphs", "true", P, fn, 'cuda_graph_impl = "transformer_engine"'),
      S("cuda_graph_scope", "attn+mamba+moe_router", P, fn,
        'cuda_graph_scope = ["attn", "mamba", "moe_router", "moe_preprocess"]'),
      S("overlap_grad_reduce", "true", NC, "_apply_nemotron_3_super_perf_defaults",
        "cfg.ddp.overlap_grad_reduce = True"),
      S("grad_reduce_in_fp32", "false", NC, "_apply_nemotron_3_super_perf_defaults",
        "cfg.ddp.grad_reduce_in_fp32 = False"),
    }, super_mtp(B)) }
  end)(),

  qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config = (function()
    local P, fn = "perf_recipes/qwen/h100/qwen3_moe.py", "qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config"
    local B = "recipes/qwen/h100/qwen3_moe.py" -- the base, same function name (imported as
    -- _qwen3_30b_a3b_default_pretrain_config)
    return { file = P, fn = fn, settings = {
      N("base: " .. B .. " " .. fn, P, nil, "qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config as " ..
        "_qwen3_30b_a3b_default_pretrain_config"),
      S("precision", "bf16", P, fn, '_perf_precision("bf16")'),
      S("tp_degree", 1, B, fn, "tensor_model_parallel_size = 1"),
      S("pp_degree", 1, B, fn, "pipeline_model_parallel_size = 1"),
      S("vpp_degree", 1, B, fn, "virtual_pipeline_model_parallel_size = None"),
      S("cp_degree", 1, B, fn, "context_parallel_size = 1"),
      S("ep_degree", 16, B, fn, "expert_model_parallel_size = 16"),
      S("etp_degree", 1, B, fn, "expert_tensor_parallel_size = 1"),
      S("sequence_parallel", "false", B, fn, "sequence_parallel = False"),
      S("global_batch_size", 1024, B, fn, "global_batch_size = 1024"),
      S("micro_batch_size", 1, B, fn, "micro_batch_size = 1"),
      S("seq_length", 4096, B, fn, "cfg.model.seq_length = 4096"),
      S("layer_recompute", "none", B, fn, "recompute_granularity = None"),
      S("moe_token_dispatcher", "flex", B, fn, 'moe_token_dispatcher_type = "flex"'),
      S("moe_flex_dispatcher_backend", "hybridep", B, fn, 'moe_flex_dispatcher_backend = "hybridep"'),
      S("moe_router_force_load_balancing", "true", P, fn, "moe_router_force_load_balancing = True"),
      S("moe_router_fusion", "true", B, fn, "moe_router_fusion = True"),
      S("cuda_graphs", "true", B, fn, 'cuda_graph_impl = "transformer_engine"'),
      S("cuda_graph_scope", "moe_router", B, fn, 'cuda_graph_scope = ["moe_router", "moe_preprocess"]'),
      S("overlap_moe_expert_parallel_comm", "true", P, fn, "overlap_moe_expert_parallel_comm = True"),
      N("delay_wgrad_compute False", P, fn, "delay_wgrad_compute = False"),
      N("moe_permute_fusion_into_hybridep True: not a column", P, fn, "moe_permute_fusion_into_hybridep = True"),
      S("grad_reduce_in_fp32", "false", B, fn, "cfg.ddp.grad_reduce_in_fp32 = False"),
    } }
  end)(),
  qwen3_30b_a3b_pretrain_8gpu_gb200_fp8mx_config = qwen_mxfp8("gb200", "qwen3_30b_a3b_pretrain_8gpu_gb200_fp8mx_config",
    { tp = 1, pp = 1, ep = 8, gbs = 512, mbs = 4, base = "qwen3_30b_a3b_pretrain_8gpu_h100_bf16_config" }),
  qwen3_30b_a3b_pretrain_8gpu_gb300_fp8mx_config = qwen_mxfp8("gb300", "qwen3_30b_a3b_pretrain_8gpu_gb300_fp8mx_config",
    { tp = 1, pp = 1, ep = 8, gbs = 512, mbs = 8, base = "qwen3_30b_a3b_pretrain_8gpu_h100_bf16_config" }),
  qwen3_235b_a22b_pretrain_256gpu_gb200_fp8mx_config = qwen_mxfp8("gb200",
    "qwen3_235b_a22b_pretrain_256gpu_gb200_fp8mx_config", { tp = 1, pp = 8, vp = 3, ep = 32, gbs = 8192, mbs = 1,
      base = "qwen3_235b_a22b_pretrain_256gpu_h100_bf16_config" }),
  qwen3_235b_a22b_pretrain_256gpu_gb300_fp8mx_config = qwen_mxfp8("gb300",
    "qwen3_235b_a22b_pretrain_256gpu_gb300_fp8mx_config", { tp = 1, pp = 4, vp = 12, ep = 32, gbs = 8192, mbs = 2,
      base = "qwen3_235b_a22b_pretrain_256gpu_h100_bf16_config" }),

  deepseek_v3_pretrain_1024gpu_h100_bf16_config = (function()
    local P, fn = "perf_recipes/deepseek/h100/deepseek_v3.py", "deepseek_v3_pretrain_1024gpu_h100_bf16_config"
    local s = dsv3_common(P, fn, { tp = 2, pp = 8, vp = 4, ep = 64, gbs = 16384, mbs = 1 })
    for _, x in ipairs({
      S("precision", "bf16", P, fn, '_perf_precision("bf16")'),
      S("layer_recompute", "selective", DC, "_deepseek_v3_common", 'recompute_granularity = "selective"'),
      S("recompute_modules", "mla_up_proj/mlp", P, fn, 'recompute_modules = ["mla_up_proj", "mlp"]'),
      -- the base sets alltoall and then apply_flex_dispatcher_backend(...,
      -- "hybridep"), which makes it flex on a GPU of compute capability
      -- 8, 9 or 10 (H100: 9)
      S("moe_token_dispatcher", "flex", DSB, DSF, "apply_flex_dispatcher_backend(cfg.model, " ..
        "cfg.model.moe_flex_dispatcher_backend)"),
      S("moe_flex_dispatcher_backend", "hybridep", DSB, DSF, 'moe_flex_dispatcher_backend = "hybridep"'),
      N("flex on H100: ASSUMED the config is built on the training GPU (compute capability 9)", FLEX,
        "apply_flex_dispatcher_backend", "if not device_properties.major in [8, 9, 10]:"),
      S("cuda_graphs", "false", DSB, DSF, 'cuda_graph_impl = "none"'),
      S("overlap_moe_expert_parallel_comm", "false", DSB, DSF, "overlap_moe_expert_parallel_comm = False"),
      S("tp_comm_overlap", "false", DSB, DSF, "CommOverlapConfig(tp_comm_overlap=False)"),
      S("overlap_grad_reduce", "false", P, fn, "cfg.ddp.overlap_grad_reduce = False"),
      -- "Et|(tt|)*30mL": embedding + 1 layer, 30 stages of 2, MTP + loss
      S("pipeline_layout", "1" .. string.rep(",2", 30) .. ",0", P, fn, '"Et|(tt|)*30mL"'),
    }) do s[#s + 1] = x end
    return { file = P, fn = fn, settings = s }
  end)(),
  -- (4, 4) in _get_deepseek_v3_pipeline_layout: embedding + 4 layers, 14
  -- chunks of 4, 1 layer + MTP + loss
  deepseek_v3_pretrain_256gpu_gb200_fp8mx_config = dsv3_mxfp8("gb200", "deepseek_v3_pretrain_256gpu_gb200_fp8mx_config",
    { tp = 1, pp = 4, vp = 4, ep = 64, gbs = 4096, mbs = 1, recompute = "mla_up_proj",
      layout = string.rep("4,", 15) .. "1", layout_pat = "set_deepseek_v3_pipeline_model_parallel_layout(cfg.model)" }),
  -- "Et*4|(t*4|)*14tmL": embedding + 4 layers, 14 chunks of 4, 1 layer +
  -- MTP + loss; recompute_modules [] under _deepseek_v3_common's
  -- selective granularity: nothing recomputed
  deepseek_v3_pretrain_256gpu_gb300_fp8mx_config = dsv3_mxfp8("gb300", "deepseek_v3_pretrain_256gpu_gb300_fp8mx_config",
    { tp = 1, pp = 2, vp = 8, ep = 32, gbs = 4096, mbs = 1, fp8_dpa = true,
      layout = string.rep("4,", 15) .. "1", layout_pat = '"Et*4|(t*4|)*14tmL"' }),

  gpt_oss_120b_pretrain_64gpu_gb200_bf16_config = (function()
    local P, fn = "perf_recipes/gpt_oss/gb200/gpt_oss.py", "gpt_oss_120b_pretrain_64gpu_gb200_bf16_config"
    local B, BF = "recipes/gpt_oss/h100/gpt_oss.py", "gpt_oss_120b_pretrain_64gpu_h100_bf16_config"
    return { file = P, fn = fn, settings = {
      S("precision", "bf16", P, fn, '_perf_precision("bf16")'),
      S("tp_degree", 1, P, fn, "tensor_model_parallel_size = 1"),
      S("pp_degree", 1, P, fn, "pipeline_model_parallel_size = 1"),
      S("vpp_degree", 1, B, BF, "virtual_pipeline_model_parallel_size = None"),
      S("cp_degree", 1, B, BF, "context_parallel_size = 1"),
      S("ep_degree", 64, P, fn, "expert_model_parallel_size = 64"),
      S("etp_degree", 1, B, BF, "expert_tensor_parallel_size = 1"),
      S("sequence_parallel", "false", P, fn, "sequence_parallel = False"),
      S("global_batch_size", 1280, P, fn, "global_batch_size = 1280"),
      S("micro_batch_size", 4, P, fn, "micro_batch_size = 4"),
      S("seq_length", 4096, B, BF, "cfg.model.seq_length = 4096"),
      S("layer_recompute", "selective", P, fn, 'recompute_granularity = "selective"'),
      S("recompute_modules", "layernorm/moe_act", P, fn, 'recompute_modules = ["layernorm", "moe_act"]'),
      S("moe_token_dispatcher", "alltoall", B, BF, 'moe_token_dispatcher_type = "alltoall"'),
      S("moe_router_force_load_balancing", "true", P, fn, "moe_router_force_load_balancing = True"),
      S("moe_router_fusion", "true", P, fn, "moe_router_fusion = True"),
      S("cuda_graphs", "false", B, BF, 'cuda_graph_impl = "none"'),
      S("overlap_moe_expert_parallel_comm", "true", P, fn, "overlap_moe_expert_parallel_comm = True"),
      S("tp_comm_overlap", "false", P, fn, "CommOverlapConfig(tp_comm_overlap=False)"),
      S("grad_reduce_in_fp32", "false", BC, "_benchmark_common", "cfg.ddp.grad_reduce_in_fp32 = False"),
    } }
  end)(),
  gpt_oss_120b_pretrain_64gpu_gb300_fp8mx_config = (function()
    local P, fn = "perf_recipes/gpt_oss/gb300/gpt_oss.py", "gpt_oss_120b_pretrain_64gpu_gb300_fp8mx_config"
    local B, BF = "recipes/gpt_oss/h100/gpt_oss.py", "gpt_oss_120b_pretrain_64gpu_h100_bf16_config"
    local H = "_apply_gpt_oss_120b_full_iter_fp8mx_configs"
    return { file = P, fn = fn, settings = {
      S("precision", "mxfp8", P, fn, '_perf_precision("fp8_mx")'),
      S("fp8_param_gather", "true", MP, "bf16_with_mxfp8_mixed", "cfg.fp8_param_gather = True"),
      S("tp_degree", 1, P, fn, "tensor_model_parallel_size = 1"),
      S("pp_degree", 1, P, fn, "pipeline_model_parallel_size = 1"),
      S("vpp_degree", 1, B, BF, "virtual_pipeline_model_parallel_size = None"),
      S("cp_degree", 1, B, BF, "context_parallel_size = 1"),
      S("ep_degree", 16, P, fn, "expert_model_parallel_size = 16"),
      S("etp_degree", 1, B, BF, "expert_tensor_parallel_size = 1"),
      S("sequence_parallel", "false", P, fn, "sequence_parallel = False"),
      S("global_batch_size", 1280, P, fn, "global_batch_size = 1280"),
      S("micro_batch_size", 4, P, fn, "micro_batch_size = 4"),
      S("seq_length", 4096, B, BF, "cfg.model.seq_length = 4096"),
      S("layer_recompute", "none", B, BF, "recompute_granularity = None"),
      S("moe_token_dispatcher", "flex", OC, H, 'moe_token_dispatcher_type = "flex"'),
      S("moe_flex_dispatcher_backend", "hybridep", OC, H, 'moe_flex_dispatcher_backend = "hybridep"'),
      S("moe_router_force_load_balancing", "true", P, fn, "moe_router_force_load_balancing = True"),
      S("moe_router_fusion", "true", P, fn, "moe_router_fusion = True"),
      S("cuda_graphs", "true", OC, H, 'cuda_graph_impl = "full_iteration"'),
      S("cuda_graph_scope", "full_iteration", OC, H, 'cuda_graph_impl = "full_iteration"'),
      S("moe_paged_stash", "true", OC, H, "moe_paged_stash = True"),
      S("moe_expert_rank_capacity_factor", 1.5, OC, H, "moe_expert_rank_capacity_factor = 1.5"),
      S("moe_paged_stash_buffer_size_factor_cuda", 1.2, OC, H, "moe_paged_stash_buffer_size_factor_cuda = 1.2"),
      S("overlap_moe_expert_parallel_comm", "true", OC, H, "overlap_moe_expert_parallel_comm = True"),
      S("tp_comm_overlap", "false", OC, H, "CommOverlapConfig(tp_comm_overlap=False)"),
      S("cutedsl_fused_grouped_mlp", "true", P, fn, '"NVTE_CUTEDSL_FUSED_GROUPED_MLP": 1'),
      N("use_transformer_engine_op_fuser True", OC, H, "use_transformer_engine_op_fuser = True"),
      N("fp8_dot_product_attention True: NOT MODELLED (attention priced in bf16)", OC, H,
        "fp8_dot_product_attention = True"),
      N("fp8_output_proj True: NOT MODELLED", OC, H, "fp8_output_proj = True"),
      S("grad_reduce_in_fp32", "false", BC, "_benchmark_common", "cfg.ddp.grad_reduce_in_fp32 = False"),
    } }
  end)(),
}

--- Cards whose model apsearch reads: card directory -> model name and
-- example config (examples/models/<config>.json).
local MODELS = {
  ["qwen3-30b-a3b"] = { name = "Qwen3-30B-A3B", swiglu_experts = true, config = "qwen3-30b-a3b", family = "Qwen3" },
  ["qwen3-235b-a22b"] = { name = "Qwen3-235B-A22B", swiglu_experts = true, config = "qwen3-235b-a22b", family = "Qwen3" },
  ["deepseek-v3"] = { name = "DeepSeek-V3", swiglu_experts = true, config = "deepseek-v3", family = "DeepSeek-V3" },
  ["gpt-oss-120b"] = { name = "gpt-oss-120b", swiglu_experts = true, config = "gpt-oss-120b", family = "gpt-oss" },
  ["nemotron-3-nano-30b-a3b"] = { name = "Nemotron-3-Nano-30B-A3B", config = "nemotron-3-nano-30b-a3b",
    family = "Nemotron 3" },
  -- the held-out config of the FP8 checkpoint: the same architecture as the
  -- card's BF16 checkpoint (tests/fixtures/heldout/README.md)
  ["nemotron-3-super-120b-a12b"] = { name = "Nemotron-3-Super-120B-A12B",
    config = "tests/fixtures/heldout_configs/nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8.json",
    family = "Nemotron 3" },
}

--- Cards with performance items left out whole, and why.
local LEFT_OUT = {
  ["deepseek-v4-flash"] = {
    GB200 = "recipe not at the item's commit: deepseek_v4_flash_pretrain_128gpu_gb200_fp8mx_config is not in " ..
      "src/ or scripts/ at bridge_commit 3ecb452af (it is at c93251151a and HEAD), so the run's settings cannot " ..
      "be traced to the code it ran",
    GB300 = "a setting apsearch cannot express: the recipe trains the DSA indexer with its loss " ..
      "(dsa_indexer_loss_coeff 0.01, dsa_indexer_use_sparse_loss True: src/megatron/bridge/perf_recipes/" ..
      "deepseek/gb200/deepseek_v4.py:82-83 at c93251151a, which the GB300 function calls), while apsearch " ..
      "prices the indexer forward only (deepseek-v4-flash.json: 'no indexer loss') and has no column for it",
  },
  -- (its config is read since 2026-12-06: tests/fixtures/heldout_configs/
  -- nvidia--NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4.json)
  ["nemotron-3.5-lightning"] = {
    H100 = "recipe not at the item's commit: nemotron_3_5_lightning_pretrain_16gpu_h100_bf16_config is not in " ..
      "src/ at bridge_commit 573e088c9, whose nemotron_3_5_nano_pretrain_16gpu_h100_bf16_config recomputes the " ..
      "MoE layers in fp32 moments, while the card's expected_result describes HEAD's function (expert_fc1 " ..
      "offload, bf16 Adam moments): the settings of the run cannot be traced to one commit",
    GB200 = "bridge_commit 9b0c2dff4 is not in the mirror",
  },
  ["qwen3.6-35b-a3b"] = "vision-language recipes (qwen35_vl_35b_a3b_*: the H100 item a functional config on " ..
    "real energon data from a pretrained checkpoint, the GB200 item a MockVLM benchmark): image tokens and " ..
    "the vision tower are not priced, and no example config of Qwen3.6-35B-A3B",
  ["qwen3.8-27b"] = "vision-language MockVLM recipe (qwen35_vl_27b_pretrain_16gpu_gb200_bf16_mock_config, " ..
    "'language-and-projector'): the vision path is not priced, and no example config of Qwen3.8-27B",
}

-- ------------------------------------------------------------------ rows

local SYSTEMS = {
  H100 = { device = "h100-sxm-80gb" },
  GB200 = { device = "gb200", rack = 64 },
  GB300 = { device = "gb300", rack = 64 },
}
local PRECISIONS = { bf16 = "bf16", fp8_mx = "mxfp8", nvfp4 = "nvfp4", fp8_cs = "fp8" }

local COLS = { "case_id", "source", "reliability", "model", "model_config", "num_layers", "hidden_size",
  "ffn_hidden_size", "num_attention_heads", "num_query_groups", "vocab_size", "seq_length", "mlp", "norm",
  "position_embedding", "tie_word_embeddings", "flash_attention", "device", "num_devices", "devices_per_node",
  "nvlink_domain_size", "framework", "precision", "fp8_param_gather", "dp_degree", "fsdp_degree", "zero_stage",
  "tp_degree", "sequence_parallel", "pp_degree", "vpp_degree", "pipeline_layout", "cp_degree", "ep_degree",
  "etp_degree", "micro_batch_size", "global_batch_size", "layer_recompute", "recompute_modules",
  "flops_convention", "measured_tokens_per_s_per_gpu", "measured_step_time_s", "measured_tflops_per_gpu",
  "grad_reduce_in_fp32", "overlap_grad_reduce", "tp_comm_overlap", "cuda_graphs", "cuda_graph_scope",
  "moe_token_dispatcher", "moe_flex_dispatcher_backend", "moe_router_force_load_balancing",
  "moe_router_fusion", "overlap_moe_expert_parallel_comm", "cutedsl_fused_grouped_mlp", "moe_paged_stash",
  "moe_expert_rank_capacity_factor", "moe_paged_stash_buffer_size_factor_cuda", "moe_capacity_factor",
  "mtp_layers", "mtp_repeated_layer", "first_last_layers_bf16", "num_layers_at_start_in_bf16",
  "num_layers_at_end_in_bf16", "software",
  "notes" }

local function csv_cell(v)
  if v == nil then return "" end
  v = tostring(v)
  if v:find('[,"\n]') then return '"' .. v:gsub('"', '""') .. '"' end
  return v
end

local skipped, rows = {}, {}
local function skip(where, why) skipped[#skipped + 1] = where .. ": " .. why end

--- The last-10-step metrics of an item as numbers, or nil and why.
local function metrics(m)
  if type(m) ~= "table" then return nil, "no metrics" end
  local t = { step = tonumber(m.last_10_steps_step_time_ms_avg),
    tflops = tonumber(m.last_10_steps_model_tflops_per_gpu_avg),
    tok = tonumber(m.last_10_steps_tokens_per_second_per_gpu_avg), raw = m }
  if not (t.step and t.tok) then return nil, "no measured step time or tokens/s" end
  return t
end

local function fmt_num(s) return s end

--- One row from an item (and, for a weak-scaling point, the point).
local function convert(dir, card_path, env, section, dev, item, point)
  local where = ("%s %s.%s%s"):format(dir, section, dev, point and ("[%s GPUs]"):format(point.num_gpus) or "")
  local mdl = MODELS[dir]
  if not mdl then
    local why = LEFT_OUT[dir]
    if type(why) == "table" then why = why[dev] end
    return skip(where, why or "model not readable by apsearch")
  end
  local sys = SYSTEMS[dev]
  if not sys then return skip(where, "device has no apsearch preset") end
  local src = point or item
  local m, why = metrics(src.metrics)
  if not m then return skip(where, why) end
  local cmd = src.command or item.command or ""
  local recipe = cmd:match("%-%-recipe%s+(%S+)")
  if not recipe then return skip(where, "no --recipe in the command") end
  local r = RECIPES[recipe]
  if not r then return skip(where, "recipe " .. recipe .. " not transcribed") end
  local commit = item.bridge_commit or env.bridge_commit
  local ok = io.popen(("git --git-dir=%q cat-file -t %q 2>/dev/null"):format(GIT_DIR, commit)):read("l")
  if ok ~= "commit" then return skip(where, "bridge_commit " .. commit .. " not in the mirror") end
  local nodes = tonumber(cmd:match("%-%-nodes%s+(%d+)"))
  local gpn = tonumber(cmd:match("%-%-gpus%-per%-node%s+(%d+)"))
  if not (nodes and gpn) then return skip(where, "no --nodes / --gpus-per-node in the command") end
  local c = {}
  local notes = {}
  for _, s in ipairs(r.settings) do
    local at = cite(commit, s)
    if s.col then
      c[s.col] = s.val
      notes[#notes + 1] = ("%s %s (%s)"):format(s.col, tostring(s.val), at)
    else
      notes[#notes + 1] = ("%s (%s)"):format(s.note, at)
    end
  end
  -- the command's overrides
  local gbs_o = tonumber(cmd:match("%-%-global_batch_size%s+(%d+)"))
  if gbs_o and gbs_o ~= c.global_batch_size then
    notes[#notes + 1] = ("global_batch_size %d from the command's --global_batch_size (recipe %d)"):format(
      gbs_o, c.global_batch_size)
    c.global_batch_size = gbs_o
  end
  local seq_o = tonumber(cmd:match("%-%-seq_length%s+(%d+)"))
  if seq_o and seq_o ~= c.seq_length then
    notes[#notes + 1] = ("seq_length %d from the command (recipe %d)"):format(seq_o, c.seq_length)
    c.seq_length = seq_o
  end
  local n = nodes * gpn
  if point and tonumber(point.num_gpus) ~= n then
    return skip(where, ("num_gpus %s but the command runs %d x %d"):format(point.num_gpus, nodes, gpn))
  end
  if point and tonumber(point.global_batch_size) ~= c.global_batch_size then
    return skip(where, "the point's global_batch_size disagrees with its command")
  end
  if c.cutedsl_fused_grouped_mlp == "true" and not mdl.swiglu_experts then
    return skip(where, "NVTE_CUTEDSL_FUSED_GROUPED_MLP with the op fuser: a setting apsearch cannot express for " ..
      "this model (it prices TE's fused grouped MLP of SwiGLU experts only; Nemotron 3's experts are " ..
      "squared-ReLU and validate refuses the column)")
  end
  local mp = c.tp_degree * c.pp_degree * c.cp_degree
  if n % mp ~= 0 then return skip(where, "GPUs not divisible by TP*PP*CP") end
  if (n // c.pp_degree) % c.ep_degree ~= 0 then return skip(where, "EP does not divide a stage's ranks") end
  local dp = n // mp
  if c.global_batch_size % (dp * c.micro_batch_size) ~= 0 then
    return skip(where, "GBS not a multiple of DP x MBS")
  end
  local prec = PRECISIONS[src.precision or item.precision]
  if prec ~= c.precision then
    return skip(where, ("card precision %s but the recipe's %s"):format(tostring(item.precision), c.precision))
  end
  c.case_id = ""
  c.source = ("NVIDIA-NeMo/Megatron-Bridge %s %s/card.yaml items.%s.%s%s (bridge_commit %s, %s)"):format(
    COMMIT, CARDS .. "/" .. dir, section, dev, point and (".points[num_gpus=%s]"):format(point.num_gpus) or "",
    commit:sub(1, 9), env.base_container or "?")
  c.reliability = "B"
  c.model, c.model_config = mdl.name, mdl.config
  c.flash_attention = "true"
  c.device, c.num_devices, c.devices_per_node = sys.device, n, gpn
  if sys.rack then c.nvlink_domain_size = math.min(n, sys.rack) end
  c.framework = "megatron"
  c.dp_degree, c.fsdp_degree, c.zero_stage = dp, 1, 1
  c.flops_convention = "unknown"
  -- the card's tokens/s per GPU must be GBS x sequence / (GPUs x step
  -- time): where it is not (within 1 %), the step time (which the card's
  -- model TFLOP/s agree with) is kept and the tokens/s left out
  local implied = c.global_batch_size * c.seq_length / (n * m.step / 1000)
  if math.abs(m.tok / implied - 1) > 0.01 then
    notes[#notes + 1] = ("measured_tokens_per_s_per_gpu LEFT EMPTY: the card's %s is %.3f x the %.1f that GBS %d " ..
      "x seq %d / (%d GPUs x %s ms) gives; the step time is kept"):format(
      m.raw.last_10_steps_tokens_per_second_per_gpu_avg, m.tok / implied, implied, c.global_batch_size,
      c.seq_length, n, m.raw.last_10_steps_step_time_ms_avg)
    c.reliability = "C"
  else
    c.measured_tokens_per_s_per_gpu = m.raw.last_10_steps_tokens_per_second_per_gpu_avg
  end
  c.measured_step_time_s = ("%.5f"):format(m.step / 1000):gsub("0+$", ""):gsub("%.$", "")
  c.measured_tflops_per_gpu = m.raw.last_10_steps_model_tflops_per_gpu_avg
  c.software = ("Megatron-Bridge %s (%s)"):format(commit:sub(1, 9), env.base_container or "?")
  table.insert(notes, 1, ("recipe %s (%s:%s) at bridge_commit %s; %s, %d x %d GPUs, last_verified %s; " ..
    "metrics: last 10 of %s steps, step time %s ms"):format(recipe, r.file, cite(commit,
    { file = r.file, fn = r.fn, pat = "def " .. r.fn .. "(" }):match(":(%d+)$"), commit:sub(1, 9),
    card_path .. ":" .. tostring((point or item)._line.metrics or "?"), nodes, gpn,
    tostring(item.last_verified), cmd:match("%-%-max_steps%s+(%d+)") or "?",
    m.raw.last_10_steps_step_time_ms_avg))
  c.notes = table.concat(notes, "; ")
  rows[#rows + 1] = c
end

local function ls_cards()
  local p = assert(io.popen(("git --git-dir=%q ls-tree --name-only %q %q"):format(GIT_DIR, COMMIT, CARDS .. "/")))
  local dirs = {}
  for l in p:lines() do dirs[#dirs + 1] = l:match("([^/]+)$") end
  p:close()
  table.sort(dirs)
  return dirs
end

local dirs = ls_cards()
if #dirs == 0 then die(("%s: no %s at %s"):format(GIT_DIR, CARDS, COMMIT)) end
for _, dir in ipairs(dirs) do
  local path = CARDS .. "/" .. dir .. "/card.yaml"
  local text = git_show(COMMIT, path)
  if text then
    local card = parse_yaml(text, path)
    local env = card.verification_environment or {}
    local items = card.items or {}
    -- functional items with measured timing: the cards call them sanity
    -- checks (every card with such numbers says so in its summary)
    -- (fine-tuning items, sft / peft, are not pretraining runs: not read)
    local sanity = type(card.summary) == "string" and card.summary:find("sanity") ~= nil
    for _, sec in ipairs({ "pretrain", "pretrain_fsdp", "checkpoint_resume" }) do
      for dev, it in pairs(items[sec] or {}) do
        if dev ~= "_line" and type(it) == "table" and (it.metrics and metrics(it.metrics) or it.variants) then
          skip(("%s %s.%s"):format(dir, sec, dev), sanity and ("functional item: the card's summary calls " ..
            "functional timing a sanity check, not a performance result") or "functional item: not converted")
        end
      end
    end
    for _, sec in ipairs({ "pretrain_performance", "pretrain_weak_scaling" }) do
      local devs = {}
      for dev in pairs(items[sec] or {}) do if dev ~= "_line" then devs[#devs + 1] = dev end end
      table.sort(devs, function(a, b) return (items[sec]._line[a] or 0) < (items[sec]._line[b] or 0) end)
      for _, dev in ipairs(devs) do
        local it = items[sec][dev]
        if type(it) == "table" and it.points then
          for _, pt in ipairs(it.points) do convert(dir, path, env, sec, dev, it, pt) end
        elseif type(it) == "table" then
          convert(dir, path, env, sec, dev, it, nil)
        end
      end
    end
  end
end
table.sort(skipped)

for k, c in ipairs(rows) do c.case_id = ("mbc%03d"):format(k) end
local f = io.open(OUT, "w") or die("cannot write " .. OUT)
f:write(table.concat(COLS, ","), "\n")
for _, c in ipairs(rows) do
  local cells = {}
  for _, k in ipairs(COLS) do cells[#cells + 1] = csv_cell(c[k]) end
  f:write(table.concat(cells, ","), "\n")
end
f:close()
io.stderr:write(("%d rows; left out %d items:\n"):format(#rows, #skipped))
for _, s in ipairs(skipped) do io.stderr:write("  ", s, "\n") end
