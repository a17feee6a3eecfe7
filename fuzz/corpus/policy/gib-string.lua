-- every policy helper: hf, cluster, range, pow2, gib; a rule function, a
-- rule table, a rule file by name, an objective table
return {
  model = hf("models/llama-3.1-8b.json"),
  cluster = cluster("h100-sxm-80gb", 1, 8),
  training = { global_batch_size = 32, seq_length = 4096, precision = "bf16",
               framework = "megatron", memory_limit_bytes = gib"num_devices"(70) },
  search_space = {
    data_parallel = "auto",
    tp_degree = pow2(1, 8),
    pp_degree = range(1, 2),
    micro_batch_size = { min = 1, max = 2 },
    layer_recompute = { "none", "_ull" },
    recompute_num_layers = { "auto" },
  },
  constraints = {
    allow_idle_devices = false,
    rules = {
      "tp_in_node",
      function(s) return s.tp_degree <= 4 end,
      { name = "mbs_small", code = "MBS", cheap = true,
        check = function(c, ctx) return c.micro_batch_size <= 2, "MBS", "too big" end },
    },
  },
  objective = { name = "mem", description = "peak memory", unit = "B",
                score = function(e, ctx) return e.mem_peak end },
  top_k = 3,
  outputs = { format = "json" },
}
