-- tests/lua/megatron_layers.lua -- Megatron-LM's decoder layers per model
-- chunk from a launch script's flags: the test oracle the launch specs
-- and scripts/firstrun-grid.lua check apsearch's estimate against (a Lua
-- reading of Megatron-LM @ d98e8a64, independent of
-- lua/apsearch/launch/megatron.lua, which writes the flags).
--
-- * --pipeline-model-parallel-layout: each '|'-separated stage counts its
--   't' (one decoder layer) and 't*N' (N of them); 'E', 'L', 'm' are no
--   decoder layers (pipeline_parallel_layer_layout.py
--   get_num_layers_to_build: layout[pp_rank][vp_stage].count(decoder));
-- * else transformer_block.py get_num_layers_to_build (l.76-200): with
--   --decoder-first/last-pipeline-num-layers those ranks take them and the
--   other ranks share the rest equally; else (L + embedding + loss
--   accounted) / p per rank; a rank's count over its v virtual stages
--   (l.161-180); the first chunk one fewer with
--   --account-for-embedding-in-pipeline-split, the last with -loss-
--   (l.186-200);
-- * v from arguments.py validate_args (l.941-979): the layout's stages /
--   p, --num-virtual-stages-per-pipeline-rank, or (L + accounted) / p /
--   --num-layers-per-virtual-pipeline-stage;
-- * a hybrid model's --hybrid-layer-pattern with '|' separators: chunk j
--   is segment j (HybridModel builds segment vp p + rank on rank `rank`'s
--   virtual stage vp, hybrid_layer_allocation.py select_pipeline_segment),
--   v = segments / p (arguments.py:841-862); the MTP part after '/' is no
--   decoder layer.  Without '|' the pattern is split as any model's.
-- * a Gated DeltaNet model's (--linear-attention-freq k) layer kinds come
--   from the whole model's pattern, global layer l (0-based) softmax
--   attention when (l + 1) % k == 0 (experimental_attention_variant_
--   module_specs.py get_linear_attention_pattern l.458-492), sliced to
--   each chunk's global layer ids (the same file l.322-332): M.kinds.

local M = {}

--- Layers of every model chunk, in schedule order (chunk j on pipeline
-- rank (j - 1) % p), and v.
-- @tparam table f the script's flags (`--flag` -> value, or true)
-- @tparam integer L the model's decoder layers
-- @treturn table layers per chunk
-- @treturn integer virtual stages per rank
function M.chunks(f, L)
  local p = tonumber(f["--pipeline-model-parallel-size"]) or 1
  local hybrid = f["--hybrid-layer-pattern"]
  if hybrid and hybrid:find("|", 1, true) then
    local out = {}
    for seg in (hybrid:match("^[^/]*") .. "|"):gmatch("([^|]*)|") do out[#out + 1] = #seg end
    return out, #out // p
  end
  local layout = f["--pipeline-model-parallel-layout"]
  if layout then
    local out = {}
    for stage in (layout .. "|"):gmatch("([^|]*)|") do
      local n = 0
      for star in stage:gmatch("t%*(%d+)") do n = n + tonumber(star) end
      for _ in stage:gsub("t%*%d+", ""):gmatch("t") do n = n + 1 end
      out[#out + 1] = n
    end
    return out, #out // p
  end
  local emb = f["--account-for-embedding-in-pipeline-split"] and 1 or 0
  local loss = f["--account-for-loss-in-pipeline-split"] and 1 or 0
  local first, last = tonumber(f["--decoder-first-pipeline-num-layers"]), tonumber(f["--decoder-last-pipeline-num-layers"])
  local per = {}
  if first or last then
    local rest, left = L - (first or 0) - (last or 0), p - (first and 1 or 0) - (last and 1 or 0)
    for i = 1, p do per[i] = left > 0 and rest // left or 0 end
    if first then per[1] = first end
    if last then per[p] = last end
  else
    for i = 1, p do per[i] = (L + emb + loss) // p end
  end
  local v = tonumber(f["--num-virtual-stages-per-pipeline-rank"]) or 1
  local size = tonumber(f["--num-layers-per-virtual-pipeline-stage"])
  if size then v = (L + emb + loss) // p // size end
  local out = {}
  for k = 0, v - 1 do
    for i = 1, p do out[k * p + i] = per[i] // v end
  end
  out[1] = out[1] - emb
  out[p * v] = out[p * v] - loss
  return out, v
end

--- Softmax-attention and Gated DeltaNet layers of each pipeline rank of a
-- Gated DeltaNet model: chunk j (schedule order) on rank (j - 1) % p holds
-- the next chunks[j] global layers.
-- @tparam table f the script's flags
-- @tparam integer L the model's decoder layers
-- @treturn table per rank { attn = n, gdn = n }
function M.kinds(f, L)
  local p = tonumber(f["--pipeline-model-parallel-size"]) or 1
  local k = assert(tonumber(f["--linear-attention-freq"]), "no --linear-attention-freq")
  local out = {}
  for r = 1, p do out[r] = { attn = 0, gdn = 0 } end
  local l = 0
  for j, n in ipairs((M.chunks(f, L))) do
    local r = out[(j - 1) % p + 1]
    for _ = 1, n do
      if (l + 1) % k == 0 then r.attn = r.attn + 1 else r.gdn = r.gdn + 1 end
      l = l + 1
    end
  end
  return out
end

return M
