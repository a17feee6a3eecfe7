-- string forms: a model path, a cluster spec, a range "lo..hi", a stack
return {
  model = "models/qwen2.5-7b.json",
  cluster = "a100-sxm4-80gb:2x8",
  training = { global_batch_size = 128, seq_length = 2048, precision = "bf16",
               stack = "megatron-lm", dropout = false },
  search_space = { tp_degree = "1..4", pp_degree = { 1, 2 }, vpp_degree = 1,
                   micro_batch_num = { 8 }, stage_partition = { "even" },
                   sequence_parallel = { true, false }, zero_stage = { 1 } },
  objective = "throughput",
}
