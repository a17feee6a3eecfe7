-- a helper given a string (a fuzz finding): gib"num_devices" once fell
-- into Lua's string arithmetic inside apsearch's policy.lua
return {
  model = preset("llama-3.1-8b"),
  cluster = cluster("h100-sxm-80gb", 1, 8),
  training = { global_batch_size = 32, seq_length = 4096, memory_limit_bytes = gib"num_devices"(70) },
}
