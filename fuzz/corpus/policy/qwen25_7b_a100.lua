-- Qwen2.5-7B on 16 x A100-SXM4 80GB (2 nodes of 8), Megatron-LM style
-- (data parallel with the distributed optimizer + tensor parallel),
-- sequence length 4096, 256 sequences per step (1 M tokens).
--
-- Qwen2.5-7B has 28 query heads and 4 KV heads, so tp_degree = 8 is
-- filtered early (TP_DIVISIBILITY) -- listed here on purpose.
return {
  name = "qwen25-7b-a100",
  description = "Qwen2.5-7B, 2 x 8 A100-SXM4 80GB, seq 4096, global batch 256",
  model = "qwen2.5-7b",
  cluster = { device = "a100-sxm4-80gb", nodes = 2, devices_per_node = 8 },
  training = {
    global_batch_size = 256, seq_length = 4096,
    precision = "bf16", optimizer = "adam", framework = "megatron",
  },
  search_space = {
    data_parallel = "auto",                   -- dp_degree = 16 / (tp x pp x cp)
    zero_stage = { 0, 1 },                    -- 1 = Megatron distributed optimizer
    tp_degree = { 1, 2, 4, 8 },
    sequence_parallel = { true, false },
    micro_batch_size = { 1, 2, 4 },
    layer_recompute = { "none", "selective", "full" },
    pp_degree = 1, cp_degree = 1,             -- widen to search PP / CP
  },
  constraints = { memory_limit_gib = 76 },   -- keep ~4 GiB of headroom
  objective = "step_time",
  top_k = 10,
}
