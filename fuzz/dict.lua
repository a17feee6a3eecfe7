--- fuzz/dict.lua TARGET ROOT -- writes a libFuzzer dictionary for a fuzz
-- target to stdout (scripts/fuzz.sh passes it with -dict=): the words the
-- target's input is read against, taken from the sources that read them,
-- so the dictionary follows the code.  Every string literal that looks
-- like a name (letters, digits, `_ . - :`, 2 to MAX_WORD characters) in
-- the target's files, written in the input's own syntax (a JSON key
-- `"name":`, a CSV cell, a command-line word, a Lua field `name = ` or
-- string `"name"`), plus the punctuation of that syntax.  Runs under a stock lua5.4 (no apsearch
-- modules): text only.
local MAX_WORD = 48

-- the sources each target's input meets (relative to ROOT)
local FILES = {
  config_json = { "lua/apsearch/hf.lua", "lua/apsearch/schema.lua" },
  csv = { "lua/apsearch/validate.lua", "lua/apsearch/stacks.lua", "lua/apsearch/schema.lua",
    "src/core/presets.c", "src/core/names.c" },
  baseline = { "lua/apsearch/report/baseline.lua", "lua/apsearch/search.lua",
    "lua/apsearch/space.lua", "lua/apsearch/schema.lua" },
  args = { "lua/apsearch/cli.lua", "lua/apsearch/policy.lua", "lua/apsearch/schema.lua",
    "lua/apsearch/objectives.lua", "lua/apsearch/stacks.lua", "src/core/presets.c" },
  policy = { "lua/apsearch/policy.lua", "lua/apsearch/schema.lua", "lua/apsearch/rules.lua",
    "lua/apsearch/objectives.lua", "lua/apsearch/stacks.lua", "lua/apsearch/presets.lua",
    "src/core/presets.c", "src/core/names.c" },
  -- a rule's body: the fields of a candidate and of ctx
  sandbox = { "lua/apsearch/rules.lua", "lua/apsearch/schema.lua" },
  -- a profiler trace: its event keys, categories, op and kernel names
  trace = { "lua/apsearch/trace.lua", "lua/apsearch/calibration.lua" },
}

-- how a word appears in each target's input, and the syntax around it
local FORMS = {
  config_json = { function(w) return '"' .. w .. '":' end,
    extra = { "{", "}", "[", "]", ":", ",", "null", "true", "false", "1e308", "-0", "0.5" } },
  csv = { function(w) return w end,
    extra = { ",", '"', "\n", "\r\n", "true", "false", "1e308", "-1", "0", "\239\187\191" } },
  baseline = { function(w) return '"' .. w .. '":' end,
    extra = { "{", "}", "[", "]", ":", ",", "null", "true", "false", "1e308", "-1" } },
  -- a key (`"ts":`) or a value (`"kernel"`): categories and names are
  -- values in a trace
  trace = { function(w) return '"' .. w .. '":', '"' .. w .. '"' end,
    extra = { "{", "}", "[", "]", ":", ",", "null", "true", "false", "1e308", "-1", "-0", "0.5",
      '"ph":"X"', '"cat":"kernel"', '"cat":"cuda_runtime"', '"cat":"gpu_memset"', '"cat":"cpu_op"',
      '"name":"cudaLaunchKernel"', '"args":{"correlation":', '"traceEvents":[', '"deviceProperties":[',
      "ProfilerStep#1", "nccl" } },
  args = { function(w) return w end,
    extra = { "--set=", "--fix=", "--strategy=", "--cluster=", "--model=", "--format=",
      "--top-k=", "--rules=", "--objective=", "--calibration=", "--baseline=", "..", ",",
      ":", "=", "\n", "x8", "-1", "1e308", "estimate", "run", "inspect", "validate" } },
  policy = { function(w)
      -- a field (`name = `) when it can be one; a string literal always
      if w:match("^[%a_][%w_]*$") then return w .. " = ", '"' .. w .. '"' end
      return '"' .. w .. '"'
    end,
    extra = { "return {", "}", "{", "=", ",", "..", "function(s, ctx) return ", " end",
      "hf(", "range(", "pow2(", "cluster(", "preset(", "model(", "gib(", "min =",
      "max =", "step =", "pow2 = true", "true", "false", "nil", "1e308", "-1", "0/0" } },
  -- words as fields of the candidate and the context; the library calls
  -- whose work grows with their arguments, and what a script may plant
  sandbox = { function(w)
      if w:match("^[%a_][%w_]*$") then return "c." .. w, "ctx.cluster." .. w end
      return '"' .. w .. '"'
    end,
    extra = { "while true do ", " end", "for i = 1, 1e6 do ", "local t = {} ", "return true",
      "return false, 'X', 'y'", "string.rep('x', 1 << 24)", ":upper()", ":sub(2)", "table.sort(t)",
      "table.concat(t)", "table.insert(t, 1, 0)", "table.unpack(t)", "utf8.len(", "s .. s", " < ",
      "setmetatable(", "{ __index = function() while true do end end }", "__pairs", "__gc",
      "coroutine.wrap(function() ", ")()", "pcall(", "t = { t, t }", "ctx:estimate(c)",
      "ctx:evaluate(c)", "rawset(c, ", "getmetatable(" } },
}

local target, root = arg[1], arg[2] or "."
if not FILES[target] then
  io.stderr:write("usage: lua5.4 fuzz/dict.lua TARGET [ROOT] (targets: config_json, csv, ",
    "baseline, args, trace, policy, sandbox)\n")
  os.exit(2)
end

local seen, out = {}, {}
local function add(s)
  if not seen[s] then
    seen[s] = true
    out[#out + 1] = '"' .. s:gsub("[\\\"]", "\\%0"):gsub("[%c\128-\255]", function(c)
      return string.format("\\x%02X", c:byte())
    end) .. '"'
  end
end

local form = FORMS[target]
for _, rel in ipairs(FILES[target]) do
  local f = assert(io.open(root .. "/" .. rel, "rb"))
  local text = f:read("a")
  f:close()
  for word in text:gmatch('"([%w_%.%-:]+)"') do
    if #word >= 2 and #word <= MAX_WORD and word:match("%a") then
      for _, entry in ipairs({ form[1](word) }) do add(entry) end
    end
  end
end
for _, e in ipairs(form.extra) do add(e) end
table.sort(out)
io.write(table.concat(out, "\n"), "\n")
