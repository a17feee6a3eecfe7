-- examples/formatters/markdown.lua -- the top-k as a Markdown table, for a
-- pull request or a wiki page.
--
--   apsearch run examples/llama3_70b_h100.lua --formatter examples/formatters/markdown.lua
--
-- render(result) gets the search result of docs/outputs.md (a copy) and
-- returns the text printed on stdout.  It runs in the sandbox: string,
-- table and math are there; io and os are not.

local function gib(bytes) return (bytes or 0) / 2 ^ 30 end

local function num(v, fmt)
  if type(v) ~= "number" or v ~= v then return "-" end
  return string.format(fmt, v)
end

-- GPU-hours per 10^12 tokens, whole cluster charged (as the example objective)
local function gpu_hours(rec, inputs)
  local t = inputs.training or {}
  local c = inputs.cluster or {}
  local step = rec.performance_cost and rec.performance_cost.step_time
  if not (step and t.global_batch_size and t.seq_length and c.num_devices) then return nil end
  return c.num_devices * step / (t.global_batch_size * t.seq_length) * 1e12 / 3600
end

return {
  name = "markdown",
  description = "top-k strategies as a Markdown table",
  extension = "md",
  render = function(result)
    local inputs = result.inputs or {}
    local model = inputs.model or {}
    local cluster = inputs.cluster or {}
    local device = type(cluster.device) == "table" and cluster.device.name or tostring(cluster.device)
    local s = result.all_candidate_summary or {}
    local out = {}
    local function add(fmt, ...) out[#out + 1] = string.format(fmt, ...) end

    add("## %s on %d x %s", tostring(model.name), cluster.num_devices or 0, device)
    add("")
    add("%d feasible of %d candidates; objective `%s`.", s.feasible or 0, s.generated or 0,
      tostring(inputs.objective))
    add("")
    add("| rank | dp | fsdp | tp | pp | cp | mbs | recompute | step (s) | tokens/s/GPU | MFU (%%) | peak (GiB) | GPU-h / 1e12 tok |")
    add("|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|")
    for _, r in ipairs(result.top_k_strategies or {}) do
      local perf, mem = r.performance_cost or {}, r.memory_cost or {}
      add("| %d | %d | %d | %d | %d | %d | %d | %s | %s | %s | %s | %s | %s |",
        r.rank, r.dp_degree or 1, r.fsdp_degree or 1, r.tp_degree or 1, r.pp_degree or 1,
        r.cp_degree or 1, r.micro_batch_size or 1, tostring(r.layer_recompute),
        num(perf.step_time, "%.3f"), num(perf.tokens_per_s_per_gpu, "%.0f"),
        num(perf.mfu and perf.mfu * 100, "%.1f"), num(gib(mem.total), "%.2f"),
        num(gpu_hours(r, inputs), "%.0f"))
    end
    local codes = {}
    for code, e in pairs(result.infeasible_summary or {}) do codes[#codes + 1] = { code, e } end
    table.sort(codes, function(a, b) return a[2].count > b[2].count end)
    if #codes > 0 then
      add("")
      add("Rejected:")
      add("")
      for _, ce in ipairs(codes) do
        add("- `%s` x %d: %s", ce[1], ce[2].count, tostring(ce[2].message))
      end
    end
    return table.concat(out, "\n") .. "\n"
  end,
}
