--- The policy apsearch builds when none is given: `apsearch run --model M
-- --cluster D:N` without a policy file, `apsearch init M D:N`, and the
-- search space of a policy that has no `search_space`.
--
-- Training settings (`M.training`):
--
-- * framework Megatron-LM (`M.FRAMEWORK`): the framework of the NVIDIA
--   Megatron-Bridge / NeMo recipes the batch rule below is read from;
-- * sequence length `M.SEQ_LENGTH`: 8192 for a dense model (Megatron-Bridge
--   Llama 3 8B / 70B / 405B pretraining recipes), 4096 for a mixture of
--   experts (its DeepSeek-V3 and Qwen3 MoE recipes), never longer than the
--   model's `max_position_embeddings`;
-- * global batch by the "recipe tokens-per-GPU rule" (`M.batch_tokens`):
--   `clamp(N x tokens_per_gpu, min_tokens, max_tokens)` with the constants
--   of `M.BATCH`, each read from a published recipe or paper; the
--   sequences are that many tokens / seq_length, rounded down to 2^k x the
--   odd part of N (`M.batch_sequences`) so that the data-parallel degrees
--   that divide the cluster divide the batch.
--
-- Search space (`M.search_space`): the framework's full space, pruned
-- only by the framework's own rules (each listed at its constant).
-- @module apsearch.defaults
local util = require "apsearch.util"

local M = {}

--- The framework of a built policy: Megatron-LM, whose recipes
-- (Megatron-Bridge, NeMo) the batch and sequence constants come from.
M.FRAMEWORK = "megatron"

--- The framework of a built policy for `model`: M.FRAMEWORK, or NeMo
-- AutoModel for the models it alone builds as read: Kimi Delta Attention
-- layers (its components/models/kimi_linear, kimi_k3; Megatron-LM,
-- TorchTitan and MindFormers have no KDA layer), the mixers of
-- M.TRANSFORMERS_MIXERS (transformers' classes, which AutoModel trains as
-- they are; the others have no such layer) and Muse Glimmer's weightless
-- per-head Q/K norms with its output gate and sandwich norms
-- (components/models/muse_glimmer; the others' files cannot express them).
-- @tparam table model normalized model
-- @treturn string framework
function M.framework(model)
  if M.automodel_mixer(model) or model.qk_norm_weightless then return "automodel" end
  return M.FRAMEWORK
end

--- Linear-attention mixers only transformers' classes have, which NeMo
-- AutoModel trains as transformers builds them (no model of its own:
-- src/core/gdn.c), by `linear_attention`: the model family (and with its
-- article), what the layers are called, its classes without and with
-- experts, the mixer (`what`), what the letters of its
-- linear_attention_pattern are and what a launch file without the mixer
-- runs instead (`letters`, `instead`),
-- and `no_selective` when selective recompute of its layers under
-- op-level checkpointing is not priced (src/core/gdn.c aps_gdn_refusal).
M.TRANSFORMERS_MIXERS = {
  short_conv = { family = "LFM2", a = "an LFM2", layers = "gated short convolutions",
    classes = { "Lfm2ForCausalLM", "Lfm2MoeForCausalLM" }, what = "gated short convolutions", letters = "L short convolution, A attention",
    instead = "attend" },
  lightning = { family = "MiniMax", a = "a MiniMax", layers = "lightning-attention layers",
    classes = { "MiniMaxForCausalLM", "MiniMaxForCausalLM" }, what = "lightning attention", letters = "L lightning attention, A softmax attention",
    instead = "use softmax attention", no_selective = true },
  mamba1 = { family = "Jamba", a = "a Jamba", layers = "Mamba-1 layers",
    classes = { "JambaForCausalLM", "JambaForCausalLM" }, what = "Mamba-1 mixers", letters = "L Mamba-1, A attention",
    instead = "attend", no_selective = true },
}

--- The model's entry of M.TRANSFORMERS_MIXERS, or nil.
-- @tparam table model normalized model
-- @treturn table|nil { family, a, layers, classes }
function M.transformers_mixer(model)
  return M.TRANSFORMERS_MIXERS[model.linear_attention or ""]
end

--- True when the model's linear layers are a mixer only NeMo AutoModel
-- trains, with neither tensor nor pipeline parallelism nor a priced
-- context parallelism: Kimi Delta Attention (its Kimi Linear's
-- ModelCapabilities), the mixers of M.TRANSFORMERS_MIXERS (src/core/gdn.c).
-- @tparam table model normalized model
-- @treturn boolean
function M.automodel_mixer(model)
  return model.linear_attention == "kda" or M.transformers_mixer(model) ~= nil
end

--- Training precision and optimizer of a built policy: bf16 mixed precision
-- with AdamW, the baseline of every Megatron-Bridge recipe (fp8 / mxfp8 are
-- opt-in there, `--set training.precision=fp8`).
M.PRECISION = "bf16"
M.OPTIMIZER = "adamw"

--- Sequence length by model class: dense 8192 (Megatron-Bridge
-- scripts/performance/configs/llama3/llama3_{8b,70b}_llm_pretrain.yaml and
-- Llama 3.1 405B, tests/fixtures/heldout/megatron_bridge_perf.csv rows
-- mbd001-mbd042); mixture of experts 4096 (deepseek_v3 / qwen3 MoE recipes,
-- megatron_bridge_perf_moe.csv rows mbm001-mbm070).
M.SEQ_LENGTH = { dense = 8192, moe = 4096 }

--- The recipe tokens-per-GPU rule, per model class, in tokens:
--
-- * dense: `tokens_per_gpu` 16,384 = Llama 3 70B's GBS 128 x 8192 on 64
--   H100s (Megatron-Bridge 25.09, fixture mbd012); `min_tokens` 1,048,576
--   = GBS 128 x 8192, the Llama 3 8B recipe on 8 GPUs (mbd011); `max_tokens`
--   16,777,216 = 16M tokens, Llama 3 405B at 8,192 and 16,384 GPUs (The
--   Llama 3 Herd of Models, arXiv:2407.21783, Table 4).
-- * moe: `tokens_per_gpu` 32,768 = DeepSeek-V3's GBS 8192 x 4096 on 1,024
--   H100s (mbm011); `min_tokens` 2,097,152 = GBS 512 x 4096, Qwen3-30B-A3B
--   on 8 to 16 GPUs (mbm002, mbm012); `max_tokens` 62,914,560 = 15,360
--   sequences of 4,096, DeepSeek-V3's final batch (DeepSeek-V3 Technical
--   Report, arXiv:2412.19437, section 4.2).
M.BATCH = {
  dense = { tokens_per_gpu = 16384, min_tokens = 1048576, max_tokens = 16777216 },
  moe = { tokens_per_gpu = 32768, min_tokens = 2097152, max_tokens = 62914560 },
}

--- Context parallelism is searched while every CP rank keeps at least
-- this many tokens of a sequence: NeMo's Llama 3.1 405B / 70B recipes run
-- CP 2 at 8192 (4096 a rank); Llama 3 405B at 131,072 ran CP 16 (8192 a
-- rank, arXiv:2407.21783 Table 4).
M.CP_MIN_TOKENS_PER_RANK = 4096

--- Largest tensor-parallel degree searched: the NVLink domain of an HGX
-- board (8 GPUs); Megatron-Bridge recipes never exceed TP 8.
M.TP_MAX = 8

--- Largest pipeline degree searched, and the fewest layers a pipeline rank
-- keeps: Llama 3 405B trained at PP 16 (arXiv:2407.21783 Table 4); 3
-- lets DeepSeek-V3's 61 layers reach PP 16 (about 4 a rank, as its
-- Megatron-Bridge H100 layout).
M.PP_MAX = 16
M.PP_MIN_LAYERS_PER_RANK = 3

--- Virtual pipeline stages searched (interleaved 1F1B): Megatron-Bridge
-- recipes use 2 to 8 chunks a rank; more than 4 is rarely faster and
-- multiplies the space.
M.VPP = { 1, 2, 4 }

--- Micro-batch sizes searched, per model class, the values of the
-- Megatron-Bridge recipes (NVIDIA-NeMo/Megatron-Bridge 067f987d
-- src/megatron/bridge/perf_recipes/): dense 1 and 2 (Llama 3 8B / 70B /
-- 405B on H100, B200, GB200: heldout fixtures mbd001-mbd071); mixture of
-- experts also 4 and 8 (Qwen3-30B-A3B, perf_recipes/qwen/{b200,gb200}/
-- qwen3_moe.py qwen3_30b_a3b_pretrain_8gpu_*_bf16_config micro_batch_size
-- = 4, {b300,gb300}/qwen3_moe.py 8; DeepSeek-V3 and Qwen3-235B-A22B 1-2):
-- a model with few active parameters a token fills the GPU only with
-- more tokens a micro-batch.
M.MICRO_BATCH = { dense = { 1, 2 }, moe = { 1, 2, 4, 8 } }

--- The micro-batch sizes a built space tries: M.MICRO_BATCH's for the
-- model's class, and the local batch (training.local_batch_size) when it
-- is not among them -- without pipeline parallelism TorchTitan and
-- AutoModel run the local batch as one micro-batch, the only size the
-- check accepts there (src/core/check.c check_local_batch).
-- @tparam table model
-- @tparam table training
-- @treturn table array of sizes, ascending
function M.micro_batch_sizes(model, training)
  local list, lbs = M.MICRO_BATCH[M.class(model)], training.local_batch_size or 0
  if lbs <= 0 then return list end
  local out = {}
  for _, b in ipairs(list) do
    if b == lbs then return list end
    out[#out + 1] = b
  end
  out[#out + 1] = math.tointeger(lbs) or lbs
  table.sort(out)
  return out
end

--- GPUs of one NVL72 rack a job uses when the cluster is a rack-scale
-- device (apsearch.policy RACK_NVLINK_DOMAIN): 64, as NVIDIA's GB200 /
-- GB300 recipes place them (megatron_bridge_perf.csv nvlink_domain_size).
M.RACK_JOB_GPUS = 64

--- ZeRO stages each framework runs over plain data parallelism
-- (rules/framework.lua): Megatron's distributed optimizer is ZeRO-1;
-- TorchTitan and llm-foundry shard with FSDP only; DeepSpeed has 1-3.
-- Megatron's list starts with the distributed optimizer, which
-- Megatron-Bridge's recipes train with (use_distributed_optimizer = True,
-- recipes/*/*.py @ 067f987d): a dimension `estimate --strategy` leaves out
-- takes the first value of its list.
M.ZERO = { megatron = { 1, 0 }, fsdp2 = { 0 }, fsdp = { 0 }, deepspeed = { 0, 1, 2, 3 },
  automodel = { 0 } }
--- ... and with Megatron-FSDP (training.fsdp_impl = "megatron_fsdp"),
-- whose optim_grads is ZeRO-2 (megatron/core/distributed/fsdp).
M.ZERO_MEGATRON_FSDP = { 0, 1, 2 }

local function is_moe(model)
  return (model.num_experts or 0) > 0
end

--- The model class the constants are read by.
-- @tparam table model normalized model
-- @treturn string "moe" or "dense"
function M.class(model)
  return is_moe(model) and "moe" or "dense"
end

--- Sequence length for a model: M.SEQ_LENGTH of its class, at most its
-- max_position_embeddings.
-- @tparam table model normalized model
-- @treturn integer
function M.seq_length(model)
  local seq = M.SEQ_LENGTH[M.class(model)]
  local mpe = model.max_position_embeddings
  if util.is_integer(mpe) and mpe > 0 and mpe < seq then seq = mpe end
  return math.tointeger(seq)
end

--- Tokens of one global batch on N devices (the recipe tokens-per-GPU rule).
-- @tparam table model normalized model
-- @tparam integer n devices
-- @treturn integer tokens
function M.batch_tokens(model, n)
  local b = M.BATCH[M.class(model)]
  return math.tointeger(math.max(b.min_tokens, math.min(b.max_tokens, n * b.tokens_per_gpu)))
end

-- n without its factors of two (24 -> 3)
local function odd_part(n)
  while n % 2 == 0 do n = n // 2 end
  return n
end

--- Sequences of one global batch: tokens / seq rounded down to 2^k x the
-- odd part of n (at least that odd part), so that every data-parallel
-- degree dividing n up to 2^k x odd divides it.
-- @tparam integer tokens
-- @tparam integer seq
-- @tparam integer n devices
-- @tparam[opt] boolean whole at least n sequences (M.whole_sequences)
-- @treturn integer
function M.batch_sequences(tokens, seq, n, whole)
  local odd = odd_part(n)
  local want = tokens // seq
  local s = odd
  while s * 2 <= want do s = s * 2 end
  -- a model whose sequence no strategy splits: a sequence a GPU at least
  if whole and s < n then s = n end
  return math.tointeger(s)
end

--- True when no strategy of a built policy splits one sequence over GPUs
-- (Kimi Delta Attention, LFM2: no TP or PP in AutoModel, CP not priced).
-- @tparam table model normalized model
-- @treturn boolean
function M.whole_sequences(model)
  return M.automodel_mixer(model)
end

--- Training settings of a built policy.
-- @tparam table model normalized model
-- @tparam integer n devices
-- @treturn table `training` fields
function M.training(model, n)
  local seq = M.seq_length(model)
  return {
    global_batch_size = M.batch_sequences(M.batch_tokens(model, n), seq, n, M.whole_sequences(model)),
    seq_length = seq, precision = M.PRECISION, optimizer = M.OPTIMIZER,
    framework = M.framework(model),
  }
end

local function pow2_upto(hi)
  local out = util.array()
  local v = 1
  while v <= hi do out[#out + 1] = v v = v * 2 end
  return out
end

-- GPUs one NVLink domain of the cluster holds
local function nvlink_gpus(cluster)
  return math.max(cluster.devices_per_node or 1, cluster.nvlink_domain_size or 0)
end

--- Tensor-parallel degrees: powers of two up to M.TP_MAX inside one NVLink
-- domain (TP's all-reduces in every layer stay on NVLink).
-- @tparam table cluster normalized cluster
-- @treturn table
function M.tp_degrees(cluster)
  local dom = nvlink_gpus(cluster)
  local out = util.array()
  for _, t in ipairs(pow2_upto(math.min(M.TP_MAX, dom, cluster.num_devices or dom))) do
    if dom % t == 0 then out[#out + 1] = t end
  end
  return out
end

--- Pipeline degrees up to M.PP_MAX keeping at least
-- M.PP_MIN_LAYERS_PER_RANK layers a rank, at most the devices: the powers
-- of two and the other divisors of the device count (PP 3, 6, 9, 12 on
-- a 72-GPU NVL72 rack, whose 72 = 8 x 9 no power of two above 8 divides;
-- Megatron-LM takes any degree that divides the world size once TP x CP
-- does, with uneven first / last stages for layers it does not divide:
-- --decoder-first/last-pipeline-num-layers).  Powers of two only left
-- DeepSeek-V3 without a feasible strategy on 72 and 144 GB300 and 96 B200,
-- where PP 9 and 6 fit (a new user's find).
-- @tparam table model normalized model
-- @tparam integer n devices
-- @treturn table ascending
function M.pp_degrees(model, n)
  local hi = math.max(1, math.min(M.PP_MAX, n, (model.num_layers or 1) // M.PP_MIN_LAYERS_PER_RANK))
  local out, pow2 = util.array(), {}
  for _, v in ipairs(pow2_upto(hi)) do pow2[v] = true end
  for d = 1, hi do
    if pow2[d] or n % d == 0 then out[#out + 1] = d end
  end
  return out
end

--- Context-parallel degrees: powers of two keeping at least
-- M.CP_MIN_TOKENS_PER_RANK tokens a rank ({1} for short sequences), at
-- most the devices.
-- @tparam integer seq sequence length
-- @tparam integer n devices
-- @treturn table
function M.cp_degrees(seq, n)
  return pow2_upto(math.max(1, math.min(n, seq // M.CP_MIN_TOKENS_PER_RANK)))
end

-- frameworks that parallelize data only (llm-foundry's FSDP1), and those
-- without ring / all-gather CP (DeepSpeed): rules/framework.lua
local DATA_ONLY = { fsdp = true }
local NO_CP = { fsdp = true, deepspeed = true }

--- How context parallelism exchanges K/V, per framework: Megatron-LM
-- runs TransformerEngine's p2p (ring), all_gather and a2a (all-to-all of
-- Q, K, V, O) (--cp-comm-type; context_parallel.py attn_forward_func_with_cp
-- @ d0067d0d); TorchTitan HEAD all-gathers K/V at the attention's
-- local_map boundary in its llama3, qwen3 and deepseek_v3 models
-- (set_gqa_inner_attention_local_map, torchtitan/models/common/
-- decoder_sharding.py @ b5bcd76c l.263-296), as its release v0.2.2 does by
-- default (context_parallel_rotate_method "allgather").
M.CP_COMM = { megatron = { "p2p", "all_gather", "a2a" }, fsdp2 = { "all_gather" },
  -- NeMo AutoModel passes cp_comm_type "p2p" (nemo_automodel/components/
  -- distributed/parallelizer.py:577, moe/parallelizer.py apply_cp)
  automodel = { "p2p" } }

-- Megatron-LM's split rule (apsearch.space default_split) is even, else
-- with the embedding and loss counted; a layer count odd with and without
-- them (DeepSeek-V3's 61) splits over no power-of-two pipeline, so NVIDIA's
-- fill_last layout (Megatron-Bridge deepseek_v3 recipe) is searched
-- instead.  An even count that some pipeline degree of the space divides
-- neither alone nor with the two (GLM-4.5's 92 over 8: 92 and 94) would
-- lose that degree: the space then searches fill_last beside
-- embedding_loss (fill_last is the even split wherever the degree divides
-- the layers, and embedding_loss Megatron's rule where it divides L + 2),
-- "both"; else nil (Megatron's own rule).  Not beside it for a hybrid
-- Mamba model, whose stacks build their own split (Falcon-H1's parallel
-- layers only num_layers / pp a rank: src/core/check.c).
local function fill_last_split(framework, model, pp)
  local L = model.num_layers or 0
  if framework ~= "megatron" or L < 1 then return nil end
  if L % 2 == 1 then return { "fill_last" } end
  if model.hybrid_layer_pattern then return nil end
  for _, p in ipairs(pp or {}) do
    if p > 1 and L % p ~= 0 and (L + 2) % p ~= 0 then return { "embedding_loss", "fill_last" } end
  end
  return nil
end

-- the FSDP sharding degrees a framework searches: Megatron's
-- --use-torch-fsdp2 is refused with expert parallelism (validate_args), so
-- an MoE model shards with the distributed optimizer there (Megatron-FSDP,
-- fsdp_impl "megatron_fsdp", shards experts over expert data parallelism).  Powers of two,
-- and on a device count that is not one (a 72-GPU NVL72 rack, 3 hosts of
-- 8) also its other divisors: the data-parallel group left beside
-- power-of-two TP / CP and the pipeline degrees (M.pp_degrees: 72 / 9,
-- 72 / (8 x 3)): Megatron's FSDP shards the whole group, so without them
-- the model states could only be replicated an odd number of times.
local function fsdp_degrees(framework, impl, model, n)
  if framework == "megatron" and impl ~= "megatron_fsdp" and is_moe(model) then return nil end
  local out = pow2_upto(n)
  local seen = {}
  for _, v in ipairs(out) do seen[v] = true end
  -- the divisors in pairs d, n / d up to sqrt(n): a cluster of up to 2^31
  -- devices takes 46,341 steps, not 2^31
  local d = 1
  while d * d <= n do
    if n % d == 0 then
      for _, v in ipairs({ d, n // d }) do
        if not seen[v] then seen[v] = true; out[#out + 1] = v end
      end
    end
    d = d + 1
  end
  table.sort(out)
  return out
end

--- The full search space of a framework for a model on a cluster:
-- data_parallel "auto" (dp x fsdp fill the devices), FSDP / HSDP degrees
-- (pairs the framework cannot run are filtered early by rules/framework.lua),
-- the framework's ZeRO stages (M.ZERO), TP with SP inside an NVLink domain,
-- PP with interleaving by the framework's split rule, CP for long
-- sequences with the framework's K/V exchanges (M.CP_COMM), recompute none / selective / full (full only on the layers
-- memory needs, `recompute_num_layers = "auto"`; every layer on NeMo
-- AutoModel and TorchTitan), micro-batch sizes; for
-- MoE models every expert-parallel degree that fits (the space's default)
-- and expert TP up to the TP degrees.
-- @tparam table model normalized model
-- @tparam table cluster normalized cluster
-- @tparam table training `framework`, `seq_length`, `fsdp_impl`
-- @treturn table a raw search_space table
function M.search_space(model, cluster, training)
  local fw = training.framework or M.FRAMEWORK
  local n = cluster.num_devices or 1
  local seq = training.seq_length or M.seq_length(model)
  local single = DATA_ONLY[fw]
  local cp = NO_CP[fw] and { 1 } or M.cp_degrees(seq, n)
  -- DeepSeek-V4 (mHC streams, model.hc_mult): TP and CP are not priced
  -- (src/core/dsv4.c refuses them), so the space leaves them out
  local v4 = (model.hc_mult or 0) > 0
  -- Kimi Delta Attention, LFM2: NeMo AutoModel's Kimi Linear has no TP or
  -- PP (ModelCapabilities), its LFM2 neither; CP not priced (src/core/gdn.c)
  local kda = M.automodel_mixer(model)
  -- Muse Glimmer: AutoModel's has no PP (MuseGlimmerForConditionalGeneration.ModelCapabilities)
  local no_pp = kda or (fw == "automodel" and model.qk_norm_weightless)
  if v4 or kda then cp = { 1 } end
  local space = {
    data_parallel = "auto",
    fsdp_degree = fsdp_degrees(fw, training.fsdp_impl, model, n),
    zero_stage = (fw == "megatron" and training.fsdp_impl == "megatron_fsdp") and M.ZERO_MEGATRON_FSDP
      or M.ZERO[fw] or { 0 },
    tp_degree = (single or v4 or kda) and { 1 } or M.tp_degrees(cluster),
    pp_degree = (single or no_pp) and { 1 } or M.pp_degrees(model, n),
    vpp_degree = (single or no_pp) and { 1 } or M.VPP,
    cp_degree = cp,
    cp_comm_type = #cp > 1 and M.CP_COMM[fw] or nil,
    layer_recompute = { "none", "selective", "full" },
    -- NeMo AutoModel's activation_checkpointing wraps every block
    -- (launch/automodel.lua), as TorchTitan's FullAC does at the commit
    -- its launch files target (launch/torchtitan.lua: every block or
    -- none): full recompute there is of every layer
    recompute_num_layers = { (fw == "automodel" or fw == "fsdp2") and -1 or "auto" },
    micro_batch_size = M.micro_batch_sizes(model, training),
  }
  space.pipeline_split = fill_last_split(fw, model, space.pp_degree)
  if is_moe(model) and not single then space.etp_degree = space.tp_degree end
  -- LFM2-MoE, MiniMax: transformers' class under AutoModel, no expert
  -- parallelism (training.transformers_model, src/core/moe.c)
  if is_moe(model) and M.transformers_mixer(model) then space.ep_degree = { 1 } end
  -- Mamba-2 layers only: Megatron's selective recompute modules (core_attn,
  -- mlp, moe, ...) name none of its layers, so "selective" is "none" again
  local pattern = model.hybrid_layer_pattern
  if type(pattern) == "string" and pattern ~= "" and not pattern:find("[^M]") then
    space.layer_recompute = { "none", "full" }
  end
  -- lightning attention, Mamba-1: their layers under AutoModel's op-level
  -- selective checkpointing are not priced (src/core/gdn.c)
  local mixer = M.transformers_mixer(model)
  if mixer and mixer.no_selective then space.layer_recompute = { "none", "full" } end
  return space
end

--- The NVLink domain of a built cluster on a rack-scale device (`rack`,
-- GPUs of its NVLink domain): a job of at most one rack is one domain, N
-- GPUs; a larger job M.RACK_JOB_GPUS a rack (capped at `rack`), as the
-- recipes place them, rounded down to whole hosts -- but whole racks when
-- the job is a multiple of the rack and not of M.RACK_JOB_GPUS (144 GB300
-- are two NVL72 racks, not domains of 64, 64 and 16: a new user's
-- `gb300:36` and `gb300:2x72` were estimated apart); other devices keep
-- one host (nil).
-- @tparam table cluster `devices_per_node`, `num_devices`
-- @tparam[opt] integer rack GPUs of the device's rack domain
-- @treturn integer|nil nvlink_domain_size
function M.nvlink_domain(cluster, rack)
  local per, n = cluster.devices_per_node, cluster.num_devices
  if not rack or n <= per then return nil end
  local dom = n <= rack and n or math.min(M.RACK_JOB_GPUS, rack)
  if n > rack and n % rack == 0 and n % dom ~= 0 then dom = rack end
  return math.tointeger(dom - dom % per)
end

--- Model and cluster of `run` / `init` when only one of them is given:
-- the default policy's (examples/llama3_8b_h100.lua: Llama-3.1-8B on one
-- 8 x H100 host).
M.MODEL = "llama-3.1-8b"
M.CLUSTER = "h100-sxm-80gb:1"

local function commas(n)
  return require("apsearch.format.common").commas(n)
end

--- The raw policy built for a model on a cluster: the cluster (a rack-scale
-- device gets its NVLink domain, M.nvlink_domain), training (M.training)
-- and no search_space (the framework's full space, M.search_space).
-- @tparam string model_ref what was given (preset name or path)
-- @tparam table model normalized model
-- @tparam table cluster normalized cluster
-- @tparam[opt] integer rack GPUs of the device's rack NVLink domain
-- @treturn table raw policy (apsearch.policy.from_table)
function M.build(model_ref, model, cluster, rack)
  local c = util.copy(cluster)
  if c.nvlink_domain_size == nil then c.nvlink_domain_size = M.nvlink_domain(c, rack) end
  local dev = type(c.device) == "table" and (c.device.name or c.device.base) or c.device
  return {
    name = string.format("%s-%s-%d", tostring(model.name), tostring(dev), c.num_devices),
    model = model_ref, cluster = c, training = M.training(model, c.num_devices),
  }
end

--- The header lines that say which defaults a built policy chose and why.
-- @tparam table model normalized model
-- @tparam table training the training table searched (M.training, with
--   the user's --set applied)
-- @tparam integer n devices
-- @tparam[opt] table built the built training table (M.training) when a
--   --set changed its batch or sequence: the lines say so, and what the
--   recipe rule gave
-- @treturn table lines
function M.header(model, training, n, built)
  local class = M.class(model)
  local b = M.BATCH[class]
  local tokens = training.global_batch_size * training.seq_length
  local rule = string.format("recipe tokens-per-GPU rule: clamp(%d GPUs x %s, %s, %s)", n,
    commas(b.tokens_per_gpu), commas(b.min_tokens), commas(b.max_tokens))
  local want = math.max(b.min_tokens, math.min(b.max_tokens, n * b.tokens_per_gpu))
  if built and built.global_batch_size ~= training.global_batch_size then
    rule = string.format("as --set (the %s gives global batch %d x %d)", rule, built.global_batch_size,
      built.seq_length)
  elseif tokens ~= want then
    -- M.batch_sequences: the rule's tokens rounded down to 2^k x the odd
    -- part of n, or raised to that odd part when the rule's tokens hold
    -- fewer sequences
    rule = string.format("%s = %s, %s to %d sequences (2^k x %d, the odd part of %d GPUs, so that "
      .. "the data-parallel degrees dividing the cluster divide the batch)", rule, commas(want),
      tokens > want and "raised" or "rounded down", training.global_batch_size, odd_part(n), n)
  end
  -- a sequence --set changed is the user's, not the recipes'
  local seq_from = (built and built.seq_length ~= training.seq_length)
    and string.format("--set; %s recipes: %d", class, built.seq_length) or (class .. " recipes")
  -- a framework, precision or optimizer --set changed is said so
  local function v(k)
    local x = tostring(training[k])
    return (built and built[k] ~= nil and built[k] ~= training[k]) and (x .. " (--set)") or x
  end
  local lines = {
    string.format("defaults: %s, %s, %s, seq %d (%s), the framework's full space",
      v("framework"), v("precision"), v("optimizer"), training.seq_length, seq_from),
    string.format("defaults: global batch %d x %d = %s tokens; %s", training.global_batch_size,
      training.seq_length, commas(tokens), rule),
  }
  local moe_line = M.moe_overlap_note(model, training)
  if moe_line then lines[#lines + 1] = moe_line end
  local mtp_line = M.mtp_note(training)
  if mtp_line then lines[#lines + 1] = mtp_line end
  if M.whole_sequences(model) and training.global_batch_size >= n then
    lines[#lines + 1] = ("defaults: at least a sequence a GPU (%d): no strategy splits a sequence of this model " ..
      "(no TP or PP; its CP not priced)"):format(n)
  else
    lines[#lines + 1] = M.split_note(training.global_batch_size, n)
  end
  return lines
end

--- The multi-token-prediction depth a built policy trains: the model's
-- own (a config's num_nextn_predict_layers, model.mtp_layers) under
-- Megatron-LM, as Megatron-Bridge's AutoBridge maps it to mtp_num_layers
-- (NVIDIA-NeMo/Megatron-Bridge 067f987d src/megatron/bridge/models/
-- deepseek/deepseek_v3_bridge.py:97, glm/glm45_bridge.py:86,
-- nemotronh/nemotron_h_bridge.py:276) and its pretraining recipes train
-- it (recipes/deepseek/h100/deepseek_v3.py:137, glm/gb200/glm5.py:61);
-- nil for a model without MTP or another framework (apsearch prices MTP
-- for Megatron-LM only).
-- @tparam table model normalized model
-- @tparam string framework training.framework
-- @treturn integer|nil training.mtp_num_layers
function M.mtp_num_layers(model, framework)
  local n = math.tointeger(model.mtp_layers or 0) or 0
  if n > 0 and framework == "megatron" then return n end
  return nil
end

--- The header line of a built policy that trains the model's MTP layers
-- (M.mtp_num_layers), or nil.
-- @tparam table training the training table searched
-- @treturn string|nil
function M.mtp_note(training)
  local n = training.mtp_num_layers
  if not n or n <= 0 then return nil end
  return ("defaults: the config's %d multi-token-prediction layer(s) trained (training.mtp_num_layers = %d), " ..
    "as Megatron-Bridge's recipes train them; --set training.mtp_num_layers=0 leaves them out"):format(n, n)
end

--- The header line of a built MoE policy under Megatron-LM without the
-- expert all-to-all overlap: the default is Megatron-LM's own (off), while
-- NVIDIA's MoE performance recipes turn it on (Megatron-Bridge
-- scripts/performance utils/overrides.py `_set_moe_a2a_overlap_overrides`,
-- `moe_a2a_overlap`), and without it the all-to-all is exposed -- which
-- favours expert parallelism inside a node.  A new user compared the
-- default estimate of NVIDIA's Qwen3-235B EP32 layout with its published
-- run and found it 38 % slow for want of this setting.  It names DeepEP's
-- flex dispatcher too, which the built space leaves out (Megatron-LM's
-- default is the all-to-all): another new user's DeepSeek-V3 on 2,048
-- H800 went from 768 to 968 tokens/s/GPU with it searched.
-- @tparam table model normalized model
-- @tparam table training the training table searched
-- @treturn string|nil the line; nil for a dense model, another framework
--   or the overlap on
function M.moe_overlap_note(model, training)
  if not is_moe(model) or training.framework ~= "megatron" or training.overlap_moe_expert_parallel_comm then
    return nil
  end
  return "defaults: MoE as Megatron-LM runs it unless told: the expert all-to-all not overlapped, and the " ..
    "busiest expert above the balanced share, as under a balancing loss (training.moe_load_imbalance; 1: " ..
    "balanced, as NVIDIA's benchmarks force it); NVIDIA's MoE recipes overlap the all-to-all: " ..
    "--set training.overlap_moe_expert_parallel_comm=true (vpp > 1 where pp > 1; no full recompute); the " ..
    "dispatcher is Megatron-LM's all-to-all, and DeepEP's (flex, which NVIDIA's H100 MoE recipes and DeepSeek " ..
    "use across nodes) is searched with --set search_space.moe_token_dispatcher=alltoall,flex"
end

--- The header line of a batch with fewer sequences than devices (a large
-- cluster at the rule's max_tokens): data parallelism (dp x fsdp) is at
-- most the sequences, so every strategy splits a sequence over at least
-- ceil(n / sequences) devices with tp, cp or pp.
-- @tparam integer sequences global batch size, sequences
-- @tparam integer n devices
-- @treturn string|nil the line, nil when every device can hold a sequence
function M.split_note(sequences, n)
  if sequences >= n then return nil end
  return string.format("defaults: %d sequences on %d GPUs: every strategy splits a sequence over at least %d GPUs " ..
    "(tp x cp x pp); %d GPUs or fewer keep a whole sequence a GPU", sequences, n, -(-n // sequences), sequences)
end

-- Lua source of a value: strings quoted, arrays inline, tables with
-- their keys in `order` first, then the rest sorted
local function lua_value(v, indent, order)
  if type(v) == "string" then return string.format("%q", v) end
  if type(v) ~= "table" then return tostring(v) end
  if #v > 0 then
    local items = {}
    for i, x in ipairs(v) do items[i] = lua_value(x, indent) end
    return "{ " .. table.concat(items, ", ") .. " }"
  end
  local keys, seen = {}, {}
  for _, k in ipairs(order or {}) do
    if v[k] ~= nil then keys[#keys + 1] = k seen[k] = true end
  end
  for _, k in ipairs(util.sorted_keys(v)) do if not seen[k] then keys[#keys + 1] = k end end
  local pad = string.rep("  ", indent + 1)
  local lines = {}
  for _, k in ipairs(keys) do
    lines[#lines + 1] = pad .. k .. " = " .. lua_value(v[k], indent + 1, order) .. ","
  end
  return "{\n" .. table.concat(lines, "\n") .. "\n" .. string.rep("  ", indent) .. "}"
end

-- top-level and section fields in the order a policy file reads best
local ORDER = { "name", "description", "model", "cluster", "training", "search_space",
  "device", "num_devices", "devices_per_node", "nvlink_domain_size",
  "global_batch_size", "seq_length", "precision", "optimizer", "framework",
  "data_parallel", "fsdp_degree", "zero_stage", "tp_degree", "pp_degree", "vpp_degree",
  "pipeline_split", "cp_degree", "layer_recompute", "recompute_num_layers",
  "micro_batch_size", "etp_degree" }

--- A built policy as the text of a policy file (`apsearch init`), with
-- its header lines as comments and its search space written out.
-- @tparam table raw the raw policy (M.build) with `search_space` set
-- @tparam table header lines (M.header)
-- @tparam string command the command that built it, for the first comment
-- @treturn string Lua source returning the policy
function M.render(raw, header, command)
  local out = { "-- Written by `" .. command .. "`: the policy `apsearch run --model ... --cluster ...`",
    "-- builds for this model and cluster (docs/policy.md \"Built policies\")." }
  for _, line in ipairs(header) do out[#out + 1] = "-- " .. line end
  out[#out + 1] = "return " .. lua_value(raw, 0, ORDER)
  return table.concat(out, "\n") .. "\n"
end

return M
