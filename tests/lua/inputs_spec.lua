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
    assert.truthy(r.cases[2].error:find('device = "a100-\239\191\189"', 1, true), r.cases[2].error)
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
      "--set: cluster.memory_limit_gib: must be a finite number >= 0 (got -1)" },
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
