-- tests/lua/inputs_spec.lua -- issue 14 item 2 (data inputs): JSON output
-- stays valid UTF-8 whatever bytes the inputs carry; `--set` values are
-- validated even when an option overrides the same field; the files a
-- policy's hf() may open.
local H = require "spec_helpers"
local json = require "apsearch.format.json"

local ROOT = H.ROOT

describe("JSON output of strings that are not UTF-8", function()
  it("replaces each invalid byte with U+FFFD, in values and keys; valid text unchanged", function()
    local text = json.encode({ name = "MPT\255-7b\233", ["k\195"] = "caf\195\169", ok = "\226\130\172" })
    assert.truthy(utf8.len(text), text)
    local back = json.decode(text)
    assert.are.equal("MPT\239\191\189-7b\239\191\189", back.name)
    assert.are.equal("caf\195\169", back["k\239\191\189"])
    assert.are.equal("\226\130\172", back.ok) -- the euro sign, as it was
    -- a truncated sequence, a surrogate, an overlong form
    for _, bad in ipairs({ "\226\130", "\237\160\128", "\192\175" }) do
      local t = json.encode({ s = "a" .. bad .. "b" })
      assert.truthy(utf8.len(t), t)
      local s, n = json.decode(t).s:gsub("\239\191\189", "")
      assert.are.equal("ab", s)
      assert.are.equal(#bad, n) -- one replacement per byte

    end
  end)

  it("validate --format json writes valid UTF-8 for Latin-1 cells (a source, a device in an error)", function()
    -- (policy strings and model names are refused when not UTF-8, before
    -- any output: policy.lua and the core check them)
    local text = assert(io.open(ROOT .. "/tests/fixtures/cases_small.csv")):read("a")
    local header, row = text:match("^([^\r\n]*)\r?\n([^\r\n]*)")
    local row2 = row:gsub("^c016", "c017"):gsub("a100%-sxm4%-80gb", "a100-\233")
    row = row:gsub("Narayanan", "Narayanan \233t al")
    local path = H.write(os.tmpname(), header .. "\n" .. row .. "\n" .. row2 .. "\n")
    local code, out, err = H.apsearch("validate", path, "--format", "json")
    os.remove(path)
    assert.are.equal(2, code, err) -- c017 cannot be estimated
    assert.truthy(utf8.len(out), "output is not UTF-8")
    local r = json.decode(out)
    assert.truthy(r.cases[1].source:find("Narayanan \239\191\189t al", 1, true), r.cases[1].source)
    -- (the error quotes the cell as util.describe does: a byte that is
    -- not UTF-8 as a decimal escape)
    assert.truthy(r.cases[2].error:find('device = "a100-\\233"', 1, true), r.cases[2].error)
  end)

end)

describe("JSON files with a NUL byte", function()
  -- (a breaker's find: lua-cjson stops at a NUL, so a config.json with
  -- garbage after one was read as the object before it, exit 0)
  it("are refused before decoding: config.json, calibration and trace, one line, exit 2", function()
    local dir = H.tmpdir()
    H.write(dir .. "/c.json", '{"model_type": "llama"}\0 junk')
    H.write(dir .. "/k.json", '{}\0junk')
    H.write(dir .. "/t.json", '{"traceEvents": []}\0junk')
    for _, case in ipairs({
      { { "inspect", dir .. "/c.json" }, dir .. "/c.json: a NUL byte at offset 23: not JSON text" },
      { { "run", "-q", "--calibration", dir .. "/k.json" }, dir .. "/k.json: a NUL byte at offset 2: not JSON text" },
      { { "calibrate", "--trace", dir .. "/t.json" }, dir .. "/t.json: trace: a NUL byte at offset 19: not JSON text" },
    }) do
      local code, _, err = H.apsearch(table.unpack(case[1]))
      assert.are.equal(2, code, err)
      assert.are.equal("apsearch: " .. case[2] .. "\n", err)
    end
  end)
end)

describe("long names and values in error messages", function()
  -- (a breaker's find: a model_type of 200 "é" was cut inside a character,
  -- and describe then escaped every one of them as \195\169)
  it("are cut between UTF-8 characters, in util.FIELD_TEXT_MAX and 60 bytes", function()
    local util = require "apsearch.util"
    local long = string.rep("\195\169", 200) -- 400 bytes
    -- 117 bytes fit before "...": 58 characters of 2 bytes and half one
    local clipped = util.clip(long)
    assert.are.equal(string.rep("\195\169", 58) .. "...", clipped)
    assert.truthy(utf8.len(clipped))
    -- describe keeps 57 bytes: 28 characters, quoted, not escaped
    assert.are.equal('"' .. string.rep("\195\169", 28) .. '..."', util.describe(long))
    assert.are.equal("abc", util.clip("abc"))
  end)

  -- (a breaker's find: a range or a misplaced section said "(got table)")
  it("say a record by its first fields in name order, a large one as {...}", function()
    local util = require "apsearch.util"
    assert.are.equal("{max = 99999999999, min = 1}", util.describe({ min = 1, max = 99999999999 }))
    assert.are.equal('{["0"] = 1}', util.describe({ ["0"] = 1 }))
    local t = {}
    for i = 1, 8 do t["k" .. i] = i end
    assert.are.equal("{k1 = 1, k2 = 2, k3 = 3, k4 = 4, k5 = 5, k6 = 6, ...}", util.describe(t))
    for i = 9, 65 do t["k" .. i] = i end
    assert.are.equal("{...}", util.describe(t))
    -- a field name of 100 KB is cut as a string value is (60 bytes), not echoed whole
    assert.are.equal("{" .. string.rep("a", 57) .. "... = 1}", util.describe({ [string.rep("a", 100000)] = 1 }))
  end)
end)

describe("--set values replaced by a later option are still validated", function()
  local policy = "examples/llama3_8b_h100.lua"
  for _, case in ipairs({
    { { "--set", "top_k=-1", "--top-k", "3" }, "--set: top_k: must be a positive integer (got -1)" },
    { { "--set", "search_space.tp_degree=-3", "--fix", "tp_degree=2" },
      "--set: search_space.tp_degree: must be a positive integer (got -3)" },
    { { "--set", "training.global_batch_size=-1", "--set", "training.global_batch_size=64" },
      "--set: training.global_batch_size: must be a positive integer (got -1)" },
    { { "--set", "cluster.memory_limit_gib=-1", "--set", "training.memory_limit_bytes=1e10" },
      "--set: cluster.memory_limit_gib: must be a finite number > 0 (got -1)" },
    { { "--set", "cluster.num_devices=-4", "--set", "cluster=h100-sxm-80gb:1x8" },
      "--set: cluster.num_devices: must be a positive integer (got -4)" },
    { { "--set", "cluster.num_devices=-1", "--cluster", "h100-sxm-80gb:1x8" },
      "--set: cluster.num_devices: must be a positive integer (got -1)" },
  }) do
    it(table.concat(case[1], " "), function()
      local code, out, err = H.apsearch("run", "-q", policy, table.unpack(case[1]))
      assert.are.equal(2, code, err)
      assert.are.equal("", out)
      assert.are.equal("apsearch: " .. case[2] .. "\n", err)
    end)
  end

  it("keeps the last value when all are valid, and other fields' overrides combine", function()
    local code, out, err = H.apsearch("run", "-q", policy, "--format", "json", "--top-k", "1",
      "--set", "training.global_batch_size=32", "--set", "training.global_batch_size=64",
      "--set", "cluster.num_devices=16", "--set", "cluster.devices_per_node=4", "--set", "top_k=5")
    assert.are.equal(0, code, err)
    local r = json.decode(out)
    assert.are.equal(64, r.inputs.training.global_batch_size)
    assert.are.equal(16, r.inputs.cluster.num_devices)
    assert.are.equal(1, #r.top_k_strategies)
  end)
end)

describe("the files a policy's hf() may open", function()
  local DIR, OTHER
  local TAIL = 'cluster = cluster("h100-sxm-80gb", 1, 8), training = { global_batch_size = 64, seq_length = 4096 } }\n'
  local CONFIG = H.read(ROOT .. "/examples/models/llama-3.1-8b.json")
  setup(function()
    DIR, OTHER = H.tmpdir(), H.tmpdir()
    os.execute("mkdir -p " .. H.q(DIR .. "/sub"))
    H.write(DIR .. "/sub/m.json", CONFIG)
    H.write(OTHER .. "/m.json", CONFIG)
    os.execute("ln -s " .. H.q(OTHER .. "/m.json") .. " " .. H.q(DIR .. "/link.json"))
  end)
  teardown(function() os.execute("rm -rf " .. H.q(DIR) .. " " .. H.q(OTHER)) end)

  local function policy(expr)
    return H.write(DIR .. "/p.lua", "local x = 1\nreturn { model = " .. expr .. ", " .. TAIL)
  end

  it("reads files under the policy's directory and apsearch's examples/models", function()
    for _, expr in ipairs({ 'hf("sub/m.json")', 'model("./sub/../sub/m.json")',
        ('hf(%q)'):format(ROOT .. "/examples/models/llama-3.1-8b.json") }) do
      local code, _, err = H.apsearch("run", "-q", policy(expr))
      assert.is_true(code == 0 or code == 1, expr .. ": " .. err)
    end
  end)

  it("refuses a file elsewhere (absolute, .., symbolic link), naming the policy's file and line and the path", function()
    local p = DIR .. "/p.lua"
    for expr, shown in pairs({
      [('hf(%q)'):format(OTHER .. "/m.json")] = OTHER .. "/m.json",
      ['hf("link.json")'] = "link.json (" .. OTHER .. "/m.json)",
      ['model("/etc/passwd")'] = "/etc/passwd",
    }) do
      local code, out, err = H.apsearch("run", "-q", policy(expr))
      assert.are.equal(2, code, err)
      assert.are.equal("", out)
      local first = err:match("^[^\n]*")
      assert.are.equal("apsearch: " .. p .. ":2: hf: " .. shown .. ": outside the directories a policy may read",
        first:sub(1, #("apsearch: " .. p .. ":2: hf: " .. shown .. ": outside the directories a policy may read")), err)
    end
  end)

  it("reads below the directory of a model path given on the command line", function()
    local p = policy(('hf(%q)'):format(OTHER .. "/m.json"))
    local code, _, err = H.apsearch("run", "-q", p, "--model", OTHER .. "/m.json")
    assert.is_true(code == 0 or code == 1, err)
  end)

  it("keeps --model PATH working for any regular file", function()
    local code, _, err = H.apsearch("run", "-q", "examples/llama3_8b_h100.lua", "--model", OTHER .. "/m.json")
    assert.is_true(code == 0 or code == 1, err)
  end)
end)

-- issue 16 item 4: inputs a new user tries
describe("a Hugging Face snapshot directory for --model", function()
  local DIR
  local CONFIG = H.read(ROOT .. "/examples/models/llama-3.1-8b.json")
  setup(function()
    DIR = H.tmpdir()
    os.execute("mkdir -p " .. H.q(DIR .. "/Meta-Llama-3.1-8B") .. " " .. H.q(DIR .. "/empty"))
    H.write(DIR .. "/Meta-Llama-3.1-8B/config.json", CONFIG)
    H.write(DIR .. "/Meta-Llama-3.1-8B/generation_config.json", "{}")
  end)
  teardown(function() os.execute("rm -rf " .. H.q(DIR)) end)

  it("reads its config.json and names the model after the directory", function()
    local code, out, err = H.apsearch("run", "-q", "examples/llama3_8b_h100.lua", "--model",
      DIR .. "/Meta-Llama-3.1-8B", "--format", "json", "--top-k", "1")
    assert.are.equal(0, code, err)
    local r = json.decode(out)
    assert.are.equal("Meta-Llama-3.1-8B", r.inputs.model.name)
    assert.are.equal(DIR .. "/Meta-Llama-3.1-8B/config.json", r.inputs.model_source)
    -- the same estimate as the preset it copies
    local code2, out2 = H.apsearch("run", "-q", "examples/llama3_8b_h100.lua", "--format", "json", "--top-k", "1")
    assert.are.equal(0, code2)
    assert.are.equal(json.decode(out2).top_k_strategies[1].performance_cost.step_time,
      r.top_k_strategies[1].performance_cost.step_time)
  end)

  it("inspect takes it too; a directory without config.json is refused", function()
    local code, out, err = H.apsearch("inspect", DIR .. "/Meta-Llama-3.1-8B")
    assert.are.equal(0, code, err)
    assert.truthy(out:find("config.json", 1, true), out)
    code, out, err = H.apsearch("run", "-q", "examples/llama3_8b_h100.lua", "--model", DIR .. "/empty")
    assert.are.equal(2, code)
    assert.truthy(err:find("a directory without a config.json", 1, true), err)
  end)

  it("makes the directory one a policy's hf() may read", function()
    local p = H.write(DIR .. "/elsewhere.lua", ('return { model = hf(%q), cluster = "h100-sxm-80gb:1x8", '
      .. 'training = { global_batch_size = 64, seq_length = 4096 }, search_space = { data_parallel = "auto" } }\n')
      :format(DIR .. "/Meta-Llama-3.1-8B"))
    os.execute("mkdir -p " .. H.q(DIR .. "/pol"))
    os.rename(p, DIR .. "/pol/elsewhere.lua")
    p = DIR .. "/pol/elsewhere.lua"
    local code, _, err = H.apsearch("run", "-q", p)
    assert.are.equal(2, code)
    assert.truthy(err:find("outside the directories a policy may read", 1, true), err)
    code, _, err = H.apsearch("run", "-q", p, "--model", DIR .. "/Meta-Llama-3.1-8B")
    assert.is_true(code == 0 or code == 1, err)
  end)
end)

describe("a sequence longer than max_position_embeddings", function()
  it("warns on stderr naming both (RoPE)", function()
    local code, _, err = H.apsearch("run", "-q", "examples/llama3_8b_h100.lua",
      "--set", "training.seq_length=262144", "--set", "training.global_batch_size=8", "--top-k", "1")
    assert.is_true(code == 0 or code == 1, err)
    assert.truthy(err:find("warning: training.seq_length = 262144 is longer than the model's " ..
      "max_position_embeddings = 131072", 1, true), err)
    code, _, err = H.apsearch("run", "-q", "examples/llama3_8b_h100.lua", "--top-k", "1")
    assert.are.equal(0, code, err)
    assert.falsy(err:find("max_position_embeddings", 1, true), err)
  end)
end)

describe("recompute_num_layers as a range", function()
  local policy = require "apsearch.policy"
  local function space(v)
    return policy.from_table({ model = "llama-3.1-8b", cluster = "h100-sxm-80gb:1x8",
      training = { global_batch_size = 64, seq_length = 8192 },
      search_space = { layer_recompute = "full", recompute_num_layers = v } }, "p.lua").search_space.dims
      .recompute_num_layers
  end
  it("{min=, max=} and \"lo..hi\" expand like other dimensions", function()
    assert.are.same({ 1, 2, 3, 4 }, space({ min = 1, max = 4 }))
    assert.are.same({ 2, 4, 6 }, space({ min = 2, max = 6, step = 2 }))
    assert.are.same({ 1, 2, 3, 4 }, space("1..4"))
    assert.are.same({ 1, 2, 4, 8 }, policy.from_table({ model = "llama-3.1-8b", cluster = "h100-sxm-80gb:1x8",
      training = { global_batch_size = 64, seq_length = 8192 },
      search_space = { tp_degree = { min = 1, max = 8, pow2 = true } } }, "p.lua").search_space.dims.tp_degree)
  end)
  it("--fix recompute_num_layers=LO..HI searches each", function()
    local code, out, err = H.apsearch("run", "-q", "examples/llama3_8b_h100.lua", "--fix", "layer_recompute=full",
      "--fix", "recompute_num_layers=1..3", "--fix", "tp_degree=1", "--fix", "fsdp_degree=8",
      "--fix", "micro_batch_size=1", "--format", "json", "--top-k", "5")
    assert.are.equal(0, code, err)
    local seen = {}
    for _, rec in ipairs(json.decode(out).top_k_strategies) do
      local v = rec.recompute_num_layers
      seen[type(v) == "table" and v[1] or v] = true
    end
    assert.are.same({ [1] = true, [2] = true, [3] = true }, seen)
  end)
end)

describe("--baseline DIR", function()
  it("reads DIR/result.json (an --out result set's link)", function()
    local dir = H.tmpdir()
    local code, _, err = H.apsearch("run", "-q", "examples/llama3_8b_h100.lua", "--top-k", "2", "--out", dir .. "/res")
    assert.are.equal(0, code, err)
    local out
    code, out, err = H.apsearch("run", "-q", "examples/llama3_8b_h100.lua", "--top-k", "2",
      "--fix", "tp_degree=1..2", "--baseline", dir .. "/res")
    assert.are.equal(0, code, err)
    assert.truthy(out:find("changes vs baseline " .. dir .. "/res/result.json", 1, true), out)
    os.execute("rm -rf " .. H.q(dir))
  end)
end)

describe("a policy without a search space", function()
  local POLICY = 'return { model = "llama-3.1-8b", cluster = "h100-sxm-80gb:1x4", ' ..
    'training = { global_batch_size = 64, seq_length = 4096 } }\n'
  it("searches the framework's full space and says so on stderr", function()
    local dir = H.tmpdir()
    local p = H.write(dir .. "/min.lua", POLICY)
    local code, out, err = H.apsearch("run", p, "--format", "json")
    assert.are.equal(0, code, err)
    assert.truthy(err:find("apsearch: note: " .. p .. " has no search_space; searching the framework's full space: " ..
      "data_parallel = auto, tp_degree = {1, 2, 4}, cp_degree = {1}, pp_degree = {1, 2, 4}, vpp_degree = {1, 2, 4}, " ..
      "fsdp_degree = {1, 2, 4}, zero_stage = {1, 0}, layer_recompute = {none, selective, full}, " ..
      "recompute_num_layers = {auto}, micro_batch_size = {1, 2}", 1, true), err)
    local r = json.decode(out)
    local full = r.all_candidate_summary.space_size
    -- --fix replaces a default dimension; --quiet drops the note
    code, out, err = H.apsearch("run", "-q", p, "--fix", "tp_degree=2", "--format", "json")
    assert.are.equal(0, code, err)
    assert.is_true(json.decode(out).all_candidate_summary.space_size < full)
    assert.falsy(err:find("full space", 1, true), err)
    os.execute("rm -rf " .. H.q(dir))
  end)
  it("tp stays inside an NVLink domain: powers of two up to 8 dividing it", function()
    local policy = require "apsearch.policy"
    local m = { num_layers = 32 }
    local function tp(c) return policy.default_search_space(c, m, {}).tp_degree end
    assert.are.same({ 1, 2, 4, 8 }, tp({ devices_per_node = 8, num_devices = 64 }))
    assert.are.same({ 1, 2 }, tp({ devices_per_node = 2, num_devices = 64 }))
    assert.are.same({ 1, 2, 4, 8 }, tp({ devices_per_node = 16, num_devices = 64 }))
    assert.are.same({ 1, 2, 4, 8 }, tp({ devices_per_node = 4, num_devices = 64, nvlink_domain_size = 64 }))
  end)
end)

-- issue 16 item 5: the embedding API and the CLI estimate the same thing
describe("aps.context and the CLI use the same defaults", function()
  it("the 70B example of docs/embedding.md gives the CLI's step time", function()
    local aps = require "apsearch"
    local ctx = aps.context{ model = "llama-3.1-70b", cluster = "h100-sxm-80gb:8x8",
                             training = { global_batch_size = 512, seq_length = 8192 } }
    local est = ctx:estimate{ dp_degree = 1, fsdp_degree = 16, tp_degree = 4, layer_recompute = "selective" }
    local code, out, err = H.apsearch("estimate", H.ROOT .. "/examples/llama3_8b_h100.lua", "--model",
      "llama-3.1-70b", "--cluster", "h100-sxm-80gb:8x8",
      "--set", "training.global_batch_size=512", "--strategy", "dp_degree=1,fsdp_degree=16,tp_degree=4,layer_recompute=selective",
      "--format", "json")
    assert.are.equal(0, code, err)
    local cli = json.decode(out)
    local step = cli.step_time or (cli.performance_cost and cli.performance_cost.step_time)
      or (cli.estimate and cli.estimate.step_time)
    assert.is_number(step, out:sub(1, 400))
    assert.is_true(math.abs(step - est.step_time) < 1e-9 * step, ("%s vs %s"):format(step, est.step_time))
  end)
  it("testing.defaults are the CLI default policy's inputs", function()
    local testing = require "apsearch.testing"
    local policy = require "apsearch.policy"
    local p = policy.load(ROOT .. "/examples/llama3_8b_h100.lua")
    local d = policy.from_table({ model = testing.defaults.model, cluster = testing.defaults.cluster,
      training = testing.defaults.training }, "d.lua")
    assert.are.same(p.training, d.training)
    assert.are.same(p.cluster, d.cluster)
    assert.are.same(p.model, d.model)
  end)
end)

describe("a file's own value that an override replaces", function()
  -- `top_k = 0/0` in the file with --top-k 3 ran (a breaker pass, 2026-12-05)
  it("is checked, and named as the file's", function()
    local H = require "spec_helpers"
    local dir = H.tmpdir()
    local p = H.write(dir .. "/bad.lua", 'return { model = "llama-3.1-8b", cluster = cluster("h100-sxm-80gb", 1, 8), ' ..
      'training = { global_batch_size = 8, seq_length = 1024, precision = "bf17" }, top_k = 0/0 }\n')
    local code, out, err = H.apsearch("run", p, "--top-k", "3", "-q")
    assert.are.equal(2, code)
    assert.are.equal("", out)
    assert.are.equal("apsearch: " .. p .. ": top_k: must be a positive integer (replaced by --top-k, but the " ..
      "file's own value is invalid) (got nan)\n", err)
    local good = H.write(dir .. "/good.lua", 'return { model = "llama-3.1-8b", cluster = cluster("h100-sxm-80gb", 1, 8), ' ..
      'training = { global_batch_size = 8, seq_length = 1024, precision = "bf17" }, top_k = 2 }\n')
    code, out, err = H.apsearch("run", good, "--set", "training.precision=bf16", "-q")
    assert.are.equal(2, code)
    assert.truthy(err:find(": training.precision: expected one of", 1, true), err)
    assert.truthy(err:find("replaced by --set, but the file's own value is invalid", 1, true), err)
  end)
end)
