-- tests/lua/jobs_spec.lua -- `apsearch run --jobs N`: the walk split into
-- chunks of consecutive candidates on worker processes (search.run's
-- `jobs`, lua/apsearch/parallel.lua, lua/apsearch/search_merge.lua) gives
-- the result of the one walk: the same JSON (timing fields aside), the
-- same chart 7 sample, the same error.  Raw JSON text is compared in a
-- canonical form (keys sorted): the key order of two runs of the same
-- command already differs (Lua's table order is seeded per process).

local h = require "spec_helpers"
local json = require "apsearch.format.json"
local policy = require "apsearch.policy"
local search = require "apsearch.search"
local parallel = require "apsearch.parallel"
local merge = require "apsearch.search_merge"
local space_mod = require "apsearch.space"

local ROOT = h.ROOT

-- `LD_PRELOAD=...` for a shim library: after what the environment already
-- preloads (the ASan/UBSan runtimes of a sanitized build, tests/CMakeLists.txt,
-- which must come first in the library list)
local function preload(shim)
  local have = os.getenv("LD_PRELOAD")
  return "LD_PRELOAD=" .. h.q((have and have ~= "" and have .. ":" or "") .. shim)
end

-- JSON text of a decoded value with every object's keys sorted
local function canonical(v)
  if type(v) ~= "table" then
    if math.type(v) == "float" then return string.format("%.17g", v) end
    return json.encode(v)
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  local out = {}
  for _, k in ipairs(keys) do out[#out + 1] = json.encode(tostring(k)) .. ":" .. canonical(v[k]) end
  return "{" .. table.concat(out, ",") .. "}"
end

-- the result's JSON without its timing fields (the search's seconds and
-- rate, and the log line that states them), canonical
local function result_text(decoded)
  local s = decoded.all_candidate_summary
  s.seconds, s.search_seconds, s.candidates_per_s = nil, nil, nil
  local log = decoded.search_log
  log[#log] = log[#log]:gsub(" in [%d.]+ s %b()$", "")
  return canonical(decoded)
end

-- search.run's result as text: its JSON and chart 7's sample
local function run_text(file, jobs, opts, popts)
  local p = policy.load(file, popts)
  local ropts = { jobs = jobs, min_chunk = 1 }
  for k, v in pairs(opts or {}) do ropts[k] = v end
  local r = search.run(p, ropts)
  local sc = r.scatter
  return result_text(json.decode(json.encode(r))) .. canonical({ sc.stride, sc.total, sc.ord, sc.index,
    sc.step_time, sc.mem_peak, sc.strategy })
end

local function example(name) return ROOT .. "/examples/" .. name end

describe("run --jobs", function()
  describe("search.run with jobs = 2 and 3 (7 once) gives the result of jobs = 1", function()
    -- every chunk of one candidate or more (min_chunk = 1), so that even
    -- these small spaces are split, unevenly (117 / 48 chunks ...)
    local cases = {
      { "dense", "llama3_8b_h100.lua", nil, nil, { 2, 3, 7 } },
      { "dense, context parallel", "llama3_8b_128k_cp.lua" },
      { "balanced layers, auto recompute", "llama3_405b_h100_16k.lua" },
      { "MoE", "mixtral_8x7b_h100.lua" },
      { "MoE, fine-grained", "qwen3_30b_a3b_h100.lua" },
      { "MoE, fill_last split", "deepseek_v3_h100_1024.lua" },
      { "a cheap rule that rejects some, a custom objective", "llama3_70b_h100.lua", nil,
        { rules = { example("rules/max_pp4.lua") }, objective = example("objectives/gpu_hours_per_trillion_tokens.lua"),
          set = { "search_space.pp_degree=1,2,4,8" } } },
      { "pareto objective", "llama3_70b_h100.lua", nil, { objective = "pareto" } },
      { "memory objective, every candidate walked", "mixtral_8x7b_h100.lua", { enumerate = "full" },
        { objective = "memory" } },
      { "the checks one rule at a time", "llama3_8b_h100.lua", { fast_checks = false } },
      { "the checks as one ctx:check call", "qwen25_7b_a100.lua", { fast_checks = "check" } },
    }
    for _, c in ipairs(cases) do
      it(c[1] .. " (" .. c[2] .. ")", function()
        local one = run_text(example(c[2]), 1, c[3], c[4])
        for _, jobs in ipairs(c[5] or { 2, 3 }) do
          assert.are.equal(one, run_text(example(c[2]), jobs, c[3], c[4]), "jobs = " .. jobs)
        end
      end)
    end

    it("a comparator objective that ties (ranked by the candidate index)", function()
      local obj = { name = "tp_only", better = function(a, b) return a.strategy.tp_degree > b.strategy.tp_degree end }
      local function text(jobs)
        local p = policy.load(example("llama3_70b_h100.lua"), { objective = obj })
        local r = search.run(p, { jobs = jobs, min_chunk = 1, sensitivity = false })
        local idx = {}
        for i, rec in ipairs(r.top_k_strategies) do idx[i] = rec.index end
        return table.concat(idx, " ")
      end
      local one = text(1)
      assert.are.equal(one, text(2))
      assert.are.equal(one, text(3))
    end)
  end)

  describe("chart 7's sample only where a report or a formatter draws it", function()
    -- scatter_points = 0: no sample (it was most of what the workers sent
    -- back, a strategy a point), the rest of the result unchanged
    local file = example("mixtral_8x7b_h100.lua")
    local function no_sample(jobs)
      local r = search.run(policy.load(file), { jobs = jobs, min_chunk = 1, scatter_points = 0 })
      assert.are.equal(0, #r.scatter.index)
      assert.is_true(r.scatter.total > 0)
      return result_text(json.decode(json.encode(r)))
    end
    it("search.run with scatter_points = 0, jobs 1 and 2: no point kept, the same JSON", function()
      local full = result_text(json.decode(json.encode(search.run(policy.load(file), {}))))
      assert.are.equal(full, no_sample(1))
      assert.are.equal(full, no_sample(2))
    end)
    it("a --formatter still gets the sample", function()
      local dir = os.tmpname()
      os.remove(dir)
      local f = dir .. ".lua"
      local fh = assert(io.open(f, "w"))
      fh:write('return { name = "n", render = function(r) return tostring(#r.scatter.index) .. "\\n" end }\n')
      fh:close()
      local code, out, err = h.apsearch("run", file, "--formatter", f, "--quiet")
      os.remove(f)
      assert.are.equal(0, code, err)
      assert.is_true(tonumber(out) > 0, out)
    end)
  end)

  describe("the CLI", function()
    local function cli_text(...)
      local code, out, err = h.apsearch("run", ...)
      assert.are.equal(0, code, err)
      return result_text(json.decode(out))
    end
    -- spaces of thousands of candidates or more: the CLI splits a space in
    -- chunks of search.min_chunk_candidates at least
    it("dense: the 122,580-candidate sweep, --jobs 1, 2 and 3 #bulk", function()
      local one = cli_text("examples/llama3_70b_h100_1024_sweep.lua", "--format", "json", "--jobs", "1")
      assert.truthy(one:find('"generated":122580', 1, true))
      assert.are.equal(one, cli_text("examples/llama3_70b_h100_1024_sweep.lua", "--format", "json", "--jobs", "2"))
      assert.are.equal(one, cli_text("examples/llama3_70b_h100_1024_sweep.lua", "--format", "json", "--jobs", "3"))
    end)

    it("dense, with a rule that rejects some and a custom objective", function()
      local args = { "examples/llama3_70b_h100_1024_sweep.lua", "--format", "json",
        "--rules", "examples/rules/max_pp4.lua",
        "--objective", "examples/objectives/gpu_hours_per_trillion_tokens.lua" }
      local function with(jobs)
        local a = { table.unpack(args) }
        a[#a + 1], a[#a + 2] = "--jobs", tostring(jobs)
        return cli_text(table.unpack(a))
      end
      local one = with(1)
      assert.truthy(one:find('"PP_OVER_4":', 1, true))
      assert.are.equal(one, with(2))
      assert.are.equal(one, with(3))
    end)

    it("MoE: Mixtral over 8,880 candidates", function()
      local args = { "examples/mixtral_8x7b_h100.lua", "--format", "json",
        "--set", "search_space.tp_degree=1,2,4,8", "--set", "search_space.pp_degree=1,2,4,8",
        "--set", "search_space.micro_batch_size=1,2,4,8", "--set", "search_space.layer_recompute=none,selective,full",
        "--set", "search_space.cp_degree=1,2", "--set", "search_space.vpp_degree=1,2",
        "--set", "search_space.zero_stage=0,1", "--set", "search_space.sequence_parallel=true,false" }
      local function with(jobs)
        local a = { table.unpack(args) }
        a[#a + 1], a[#a + 2] = "--jobs", tostring(jobs)
        return cli_text(table.unpack(a))
      end
      local one = with(1)
      assert.truthy(one:find('"generated":8880', 1, true))
      assert.are.equal(one, with(2))
      assert.are.equal(one, with(3))
    end)

    it("a rule's error is the one the single walk meets first", function()
      local dir = h.tmpdir()
      local rule = h.write(dir .. "/bad_rule.lua", [[
return { name = "bad_rule", code = "BAD", cheap = true, description = "raises",
  check = function(c)
    if c.pp_degree == 8 and c.tp_degree == 4 then
      error("boom at cp " .. c.cp_degree .. " mbs " .. c.micro_batch_size)
    end
    return true
  end }]])
      local errs = {}
      for _, jobs in ipairs({ "1", "2", "3" }) do
        local code, _, err = h.apsearch("run", "examples/llama3_70b_h100_1024_sweep.lua", "--quiet",
          "--rules", rule, "--jobs", jobs)
        assert.are.equal(2, code)
        errs[#errs + 1] = err
      end
      assert.truthy(errs[1]:find("boom at cp 1 mbs 1", 1, true), errs[1])
      assert.are.equal(errs[1], errs[2])
      assert.are.equal(errs[1], errs[3])
    end)

    it("refuses a bad --jobs; --out with candidates.csv searches on worker processes too", function()
      local dir = h.tmpdir()
      for _, bad in ipairs({ "0", "-1", "1.5", "many" }) do
        local code, _, err = h.apsearch("run", "examples/llama3_8b_h100.lua", "--quiet", "--jobs", bad)
        assert.are.equal(2, code)
        assert.truthy(err:find("--jobs: jobs: must be an integer >= 1", 1, true), err)
      end
      for _, mode in ipairs({ "none", "feasible" }) do
        local code = h.apsearch("run", "examples/llama3_8b_h100.lua", "--quiet", "--jobs", "2", "--candidates", mode,
          "--out", dir .. "/" .. mode)
        assert.are.equal(0, code)
      end
    end)
  end)

  -- candidates.csv written by worker processes: each chunk's rows sent to
  -- the parent, which writes them in enumeration order (parallel.lua "D"
  -- frames, held while a chunk before them runs)
  describe("candidates.csv with jobs = 2 and 3 is the one walk's, byte for byte", function()
    local csv = require "apsearch.format.csv"
    local function rows(file, mode, jobs)
      local text = csv.candidates_of(policy.load(example(file)), mode, { jobs = jobs, min_chunk = 1 })
      return text
    end
    for _, c in ipairs({ { "llama3_8b_h100.lua", "all" }, { "llama3_8b_h100.lua", "feasible" },
                         { "mixtral_8x7b_h100.lua", "all" } }) do
      it(c[1] .. ", " .. c[2], function()
        local one = rows(c[1], c[2], 1)
        local n = select(2, one:gsub("\n", ""))
        assert.is_true(n > 2, "rows")
        assert.are.equal(one, rows(c[1], c[2], 2))
        assert.are.equal(one, rows(c[1], c[2], 3))
      end)
    end

    it("when the parent holds no output (max_held_bytes = 0): every worker waits its turn", function()
      local saved = parallel.max_held_bytes
      parallel.max_held_bytes = 0
      local ok, err = pcall(function()
        local one = rows("llama3_8b_h100.lua", "all", 1)
        assert.are.equal(one, rows("llama3_8b_h100.lua", "all", 3))
      end)
      parallel.max_held_bytes = saved
      assert(ok, err)
    end)

    it("counts the rows the workers wrote (result.candidates_csv.rows)", function()
      local dir = h.tmpdir()
      for _, j in ipairs({ "1", "2" }) do
        local code = h.apsearch("run", "examples/llama3_70b_h100_1024_sweep.lua", "--quiet", "--jobs", j,
          "--candidates", "all", "--echarts", "none", "--out", dir .. "/j" .. j)
        assert.are.equal(0, code)
        local r = require("cjson").decode(h.read(dir .. "/j" .. j .. "/result.json"))
        -- every candidate of the sweep's space, one row each
        assert.are.equal(r.all_candidate_summary.generated, r.candidates_csv.rows)
        assert.are.equal(122580, r.candidates_csv.rows)
      end
      assert.are.equal(h.read(dir .. "/j1/candidates.csv"), h.read(dir .. "/j2/candidates.csv"))
    end)
  end)

  -- a set's files rendered and written by worker processes (cli.write_set,
  -- from cli.parallel_output_ranks strategies up): the same files
  describe("--out with a top-k of 64 or more on 1 and 2 processes", function()
    it("writes the same launch files, result.csv, result.json and report.html", function()
      local cli = require "apsearch.cli"
      local k = cli.parallel_output_ranks + 6
      local dir = h.tmpdir()
      for _, j in ipairs({ "1", "2" }) do
        local code = h.apsearch("run", "examples/llama3_70b_h100_1024_sweep.lua", "--quiet", "--jobs", j,
          "--top-k", tostring(k), "--candidates", "none", "--echarts", "none", "--out", dir .. "/j" .. j)
        assert.are.equal(0, code)
      end
      -- the lines with the run id or the search's own time (they differ
      -- from run to run) left out
      local volatile = { "run-id", "run_id", "searched", "seconds", "candidates_per_s", ".apsearch-set" }
      local function lines(path)
        local out = {}
        for line in h.read(path):gmatch("[^\n]*") do
          local keep = true
          for _, v in ipairs(volatile) do if line:find(v, 1, true) then keep = false end end
          if keep then out[#out + 1] = line end
        end
        return table.concat(out, "\n")
      end
      local names = {}
      for n in require("lfs").dir(dir .. "/j1/launch") do
        if n ~= "." and n ~= ".." then names[#names + 1] = n end
      end
      -- four engines per strategy (Megatron-LM, TorchTitan, MindFormers, AutoModel)
      assert.are.equal(4 * k, #names)
      for _, n in ipairs(names) do
        assert.are.equal(h.read(dir .. "/j1/launch/" .. n), h.read(dir .. "/j2/launch/" .. n), n)
      end
      assert.are.equal(h.read(dir .. "/j1/result.csv"), h.read(dir .. "/j2/result.csv"))
      for _, f in ipairs({ "report.html" }) do
        assert.are.equal(lines(dir .. "/j1/" .. f), lines(dir .. "/j2/" .. f), f)
      end
      local function result_of(d)
        local r = h.read_json(d .. "/result.json")
        local sm = r.all_candidate_summary
        sm.seconds, sm.search_seconds, sm.candidates_per_s = nil, nil, nil
        -- (and the paths, which name the two directories)
        r.run_id, r.search_log, r.output_files, r.visualization_report = nil, nil, nil, nil
        return r
      end
      assert.are.same(result_of(dir .. "/j1"), result_of(dir .. "/j2"))
    end)
  end)

  -- the calls candidates.csv's split rows use (src/lua/lproc.c)
  describe("core.fd_tmpfile, fd_pread and fd_copy", function()
    local core = require "apsearch.core"
    it("an unnamed file: written, read back by range, copied after a file's own text", function()
      local dir = h.tmpdir()
      local fd = assert(core.fd_tmpfile(dir))
      -- nothing named in the directory
      local names = {}
      for n in require("lfs").dir(dir) do if n ~= "." and n ~= ".." then names[#names + 1] = n end end
      assert.are.same({}, names)
      assert(core.fd_write(fd, "0123456789abcdef"))
      assert.are.equal("3456", core.fd_pread(fd, 3, 4))
      -- at the end: fewer bytes; past it: none
      assert.are.equal("ef", core.fd_pread(fd, 14, 4))
      assert.are.equal("", core.fd_pread(fd, 40, 4))
      local path = dir .. "/out.csv"
      local f = assert(io.open(path, "wb"))
      f:write("head,")           -- buffered: fd_copy flushes it first
      assert(core.fd_copy(fd, 10, 6, f))
      f:write(",tail")
      assert(core.fd_copy(fd, 0, 3, f))
      f:close()
      assert.are.equal("head,abcdef,tail012", h.read(path))
      core.fd_close(fd)
    end)

    it("a range past the file's end, a closed file or a bad argument is an error", function()
      local dir = h.tmpdir()
      local fd = assert(core.fd_tmpfile(dir))
      assert(core.fd_write(fd, "abc"))
      local f = assert(io.open(dir .. "/o", "wb"))
      local ok, msg = core.fd_copy(fd, 2, 5, f)
      assert.is_nil(ok)
      assert.truthy(tostring(msg):find("copy", 1, true), msg)
      f:close()
      assert.has_error(function() core.fd_copy(fd, 0, 1, f) end)
      assert.has_error(function() core.fd_copy(fd, -1, 1, io.stdout) end)
      assert.has_error(function() core.fd_pread(fd, 0, (1 << 20) + 1) end)
      local nfd, err = core.fd_tmpfile(dir .. "/missing")
      assert.is_nil(nfd)
      assert.truthy(tostring(err):find("tmpfile", 1, true), err)
      core.fd_close(fd)
    end)
  end)

  -- candidates.csv that cannot be written (a full disk, a file size
  -- limit): one line naming --out and DIR, exit 2, the set dropped
  describe("candidates.csv that cannot be written", function()
    local lfs = require "lfs"
    local function names(dir)
      local t = {}
      for n in lfs.dir(dir) do if n ~= "." and n ~= ".." then t[#t + 1] = n end end
      table.sort(t)
      return t
    end

    it("past the file size limit (ulimit -f): exit 2 and one line, not SIGXFSZ; nothing left but the lock", function()
      for _, jobs in ipairs({ "1", "2", "3" }) do
        local dir = h.tmpdir()
        -- 2,000 blocks of 512 bytes: the sweep's candidates.csv is 14 MB
        local cmd = string.format("cd %s && (ulimit -f 2000; APSEARCH_ROOT=%s exec %s run " ..
          "examples/llama3_70b_h100_1024_sweep.lua --quiet --candidates all --jobs %s --out %s/o) " ..
          "> %s/stdout 2> %s/stderr", h.q(ROOT), h.q(ROOT), h.q(h.BIN), jobs, dir, dir, dir)
        local _, _, code = os.execute(cmd)
        local err = h.read(dir .. "/stderr")
        os.remove(dir .. "/stdout")
        os.remove(dir .. "/stderr")
        assert.are.equal(2, code, "--jobs " .. jobs .. ": " .. tostring(err))
        assert.truthy(err:find('^apsearch: %-%-out: dir: cannot write candidates%.csv: [^\n]*File too large ' ..
          '%(got "[^\n]*/o"%)\n$'), err)
        assert.are.same({ ".o.apsearch-lock" }, names(dir))
      end
    end)

    it("workers that cannot be started (ulimit -n 10, --jobs 8): one line saying so, exit 2", function()
      local dir = h.tmpdir()
      for _, out in ipairs({ "", " --out " .. dir .. "/o" }) do
        local cmd = string.format("cd %s && (exec 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-; ulimit -n 10; APSEARCH_ROOT=%s exec %s run " ..
          "examples/llama3_70b_h100_1024_sweep.lua --quiet --jobs 8%s) > %s/stdout 2> %s/stderr",
          h.q(ROOT), h.q(ROOT), h.q(h.BIN), out, dir, dir)
        local _, _, code = os.execute(cmd)
        local err = h.read(dir .. "/stderr")
        assert.are.equal(2, code, err)
        assert.truthy(err:find("^apsearch: [^\n]*Too many open files[^\n]*\n$"), err)
        assert.falsy(err:find(".lua:", 1, true), err)
      end
      os.remove(dir .. "/stdout")
      os.remove(dir .. "/stderr")
      assert.are.same({ ".o.apsearch-lock" }, names(dir))
    end)

    -- the fallbacks of src/lua/lproc.c, which ext4 and tmpfs never take:
    -- no O_TMPFILE (NFS, vfat: a mkostemp file unlinked at once) and no
    -- copy_file_range between the two files (EXDEV, EOPNOTSUPP: pread and
    -- write), simulated by an LD_PRELOAD shim
    it("without O_TMPFILE or copy_file_range (a shim): the same candidates.csv, nothing left #bulk", function()
      local dir = h.tmpdir()
      local shim = [[
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/types.h>
int open(const char *p, int fl, ...) {
    static int (*real)(const char *, int, ...);
    if (!real) real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
    mode_t m = 0;
    if ((fl & O_CREAT) || (fl & O_TMPFILE) == O_TMPFILE) { va_list a; va_start(a, fl); m = va_arg(a, int); va_end(a); }
    if ((fl & O_TMPFILE) == O_TMPFILE && getenv("SHIM_NO_TMPFILE")) { errno = EOPNOTSUPP; return -1; }
    return real(p, fl, m);
}
int open64(const char *p, int fl, ...) __attribute__((alias("open")));
ssize_t copy_file_range(int in, off_t *io, int out, off_t *oo, size_t len, unsigned fl) {
    static ssize_t (*real)(int, off_t *, int, off_t *, size_t, unsigned);
    if (!real) real = (ssize_t (*)(int, off_t *, int, off_t *, size_t, unsigned))dlsym(RTLD_NEXT, "copy_file_range");
    if (getenv("SHIM_CFR_ERRNO")) { errno = atoi(getenv("SHIM_CFR_ERRNO")); return -1; }
    return real(in, io, out, oo, len, fl);
}
]]
      h.write(dir .. "/shim.c", shim)
      if not os.execute(string.format("cc -shared -fPIC -o %s/shim.so %s/shim.c -ldl 2>/dev/null", dir, dir)) then
        pending("no C compiler for the shim")
        return
      end
      local function run(env, jobs, out)
        local cmd = string.format("cd %s && %s %s APSEARCH_ROOT=%s %s run " ..
          "examples/llama3_70b_h100_1024_sweep.lua --quiet --candidates all --echarts none --jobs %s --out %s " ..
          "> %s/stdout 2> %s/stderr", h.q(ROOT), env, preload(dir .. "/shim.so"), h.q(ROOT), h.q(h.BIN), jobs, out, dir, dir)
        local _, _, code = os.execute(cmd)
        return code, h.read(dir .. "/stderr")
      end
      assert.are.equal(0, (run("", "1", dir .. "/ref/o")))
      local want = h.read(dir .. "/ref/o/candidates.csv")
      -- EXDEV 18, EOPNOTSUPP 95, ENOSYS 38
      for i, env in ipairs({ "SHIM_NO_TMPFILE=1", "SHIM_CFR_ERRNO=18", "SHIM_CFR_ERRNO=95",
                             "SHIM_NO_TMPFILE=1 SHIM_CFR_ERRNO=38" }) do
        local sub = dir .. "/s" .. i
        local code, err = run(env, "2", sub .. "/o")
        assert.are.equal(0, code, env .. ": " .. tostring(err))
        assert.truthy(want == h.read(sub .. "/o/candidates.csv"), env .. ": candidates.csv differs")
        -- the set directory holds only what its manifest lists
        local set = sub .. "/" .. lfs.symlinkattributes(sub .. "/o", "target")
        for _, n in ipairs(names(set)) do assert.is_nil(n:find("apsearch%-tmp"), env .. ": " .. n) end
        assert.are.equal(3, #names(sub))
      end
      -- a copy that fails otherwise (EIO 5): the run's one line, nothing left
      local code, err = run("SHIM_CFR_ERRNO=5", "2", dir .. "/eio/o")
      assert.are.equal(2, code, err)
      assert.truthy(err:find('^apsearch: %-%-out: dir: cannot write candidates%.csv: copy_file_range: ' ..
        'Input/output error %(got "[^\n]*/o"%)\n$'), err)
      assert.are.same({ ".o.apsearch-lock" }, names(dir .. "/eio"))
    end)

    it("a copy that fails raises the --out error naming DIR", function()
      local dir = h.tmpdir()
      local set = require("apsearch.outdir").open(dir .. "/o")
      local stream = assert(set:stream("candidates.csv"))
      local w = require("apsearch.format.csv").candidate_writer(stream.write, "all", nil, stream)
      w.split(1)
      -- a range the worker's file does not hold
      local ok, err = pcall(w.take, { file = 1, offset = 0, bytes = 5, rows = 1 })
      w.close_split()
      stream.close()
      set:abort()
      assert.is_false(ok)
      assert.truthy(tostring(err):find('^%-%-out: dir: cannot write candidates%.csv: .* %(got "' ..
        (dir .. "/o"):gsub("%p", "%%%0") .. '"%)$'), err)
      assert.are.same({ ".o.apsearch-lock" }, names(dir))
    end)
  end)

  describe("the jobs of a space", function()
    it("one per min_chunk candidates at most, at least 1", function()
      assert.are.equal(1, search.jobs_for(nil, 10 ^ 6))
      assert.are.equal(4, search.jobs_for(4, 10 ^ 6))
      assert.are.equal(1, search.jobs_for(4, 117))
      assert.are.equal(2, search.jobs_for(4, 2 * search.min_chunk_candidates + 1))
      assert.are.equal(3, search.jobs_for(8, 3, 1))
      assert.are.equal(search.max_jobs, search.jobs_for(10 ^ 6, 10 ^ 9, 1))
    end)

    it("chunks: consecutive, the whole space, large first, small last, at most max_tasks", function()
      for _, c in ipairs({ { 2, 18411200, 2048 }, { 3, 8880, 2048 }, { 128, 18411200, 2048 }, { 7, 117, 1 },
                           { 1024, 1000000000, 2048 } }) do
        local jobs, n, min = c[1], c[2], c[3]
        local s = search.chunk_starts(jobs, n, min)
        assert.are.equal(1, s[1])
        assert.are.equal(n + 1, s[#s])
        assert.is_true(#s - 1 <= parallel.max_tasks)
        for i = 1, #s - 2 do
          local size, next_size = s[i + 1] - s[i], s[i + 2] - s[i + 1]
          assert.is_true(size >= min, "chunk " .. i)
          assert.is_true(next_size <= size + 1, "chunk " .. i)
        end
      end
      local s = search.chunk_starts(2, 18411200, 2048)
      -- the first holds 1/(chunk_share x jobs) of the space
      assert.are.equal(-(-18411200 // (2 * search.chunk_share)), s[2] - 1)
      assert.is_true(s[#s] - s[#s - 1] <= 2048)
    end)
  end)

  describe("apsearch.parallel", function()
    it("serializes exactly: floats, integers, infinities, NaN, strings, marked arrays", function()
      local util = require "apsearch.util"
      local v = { 0.1, 1 / 3, 2 ^ 60, math.maxinteger, math.mininteger, -0.0, math.huge, -math.huge, 3, 1.0, 0.0, 1,
        s = "a\n\"b\"\0c", t = true, f = false, arr = util.array(), nested = { [7] = { x = 1e-300 } },
        ["end"] = "a reserved word", [2.5] = "a float key", [true] = "a boolean key", holes = { 1, nil, 3 } }
      local back = parallel.deserialize(parallel.serialize(v))
      for i = 1, 12 do
        assert.are.equal(math.type(v[i]), math.type(back[i]))
        assert.are.equal(v[i], back[i])
      end
      assert.are.equal(1 / v[6], 1 / back[6])  -- -0.0 kept
      local nan = parallel.deserialize(parallel.serialize(0 / 0))
      assert.is_true(nan ~= nan)
      assert.are.equal(v.s, back.s)
      assert.is_true(back.t)
      assert.is_false(back.f)
      assert.is_true(util.is_marked_array(back.arr))
      assert.are.equal(1e-300, back.nested[7].x)
      assert.are.equal("a reserved word", back["end"])
      assert.are.equal("a float key", back[2.5])
      assert.are.equal("a boolean key", back[true])
      assert.are.equal(3, back.holes[3])
      assert.is_nil(back.holes[2])
      assert.has_error(function() parallel.serialize({ print }) end, "parallel: cannot send a function")
    end)

    it("runs tasks on workers: values in task order, every worker's final value, progress summed", function()
      local got, finals, done = {}, {}, 0
      parallel.run({
        jobs = 3, tasks = 20,
        work = function(t, report) report(t) return { t = t, sq = t * t } end,
        finish = function() return require("apsearch.core").getpid() end,
        on_result = function(t, v) got[#got + 1] = t assert.are.equal(t * t, v.sq) end,
        on_finish = function(pid) finals[#finals + 1] = pid end,
        progress = function(d) done = d end,
      })
      local want = {}
      for t = 1, 20 do want[t] = t end
      assert.are.same(want, got)
      assert.are.equal(3, #finals)
      assert.are.equal(210, done)
      assert.are_not.equal(finals[1], finals[2])
    end)

    it("raises the error of the earliest task that failed", function()
      local ran = {}
      local ok, err = pcall(parallel.run, {
        jobs = 2, tasks = 12,
        work = function(t)
          if t == 9 or t == 5 then error("task " .. t .. " failed", 0) end
          return t
        end,
        on_result = function(t) ran[#ran + 1] = t end,
      })
      assert.is_false(ok)
      assert.are.equal("task 5 failed", err)
      assert.are.same({ 1, 2, 3, 4 }, ran)
    end)

    it("max_tasks tasks through pipes of two pages (a user past pipe-user-pages-soft): no hang", function()
      -- every pipe made 8 KiB by an LD_PRELOAD shim, what Linux gives a
      -- user past /proc/sys/fs/pipe-user-pages-soft (a second run beside
      -- one of 64 workers or more): less than 4 bytes for each of 4,096
      -- tasks; the run once blocked for ever writing them
      local dir = h.tmpdir()
      h.write(dir .. "/shim.c", [[
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
static int set(int fd, int cmd, long arg) {
    static int (*real)(int, int, ...);
    if (!real) real = (int (*)(int, int, ...))dlsym(RTLD_NEXT, "fcntl");
    if (cmd == F_SETPIPE_SZ) arg = 8192;
    return real(fd, cmd, arg);
}
int fcntl(int fd, int cmd, ...) { va_list a; va_start(a, cmd); long arg = va_arg(a, long); va_end(a); return set(fd, cmd, arg); }
int fcntl64(int fd, int cmd, ...) { va_list a; va_start(a, cmd); long arg = va_arg(a, long); va_end(a); return set(fd, cmd, arg); }
]])
      if not os.execute(string.format("cc -shared -fPIC -o %s/shim.so %s/shim.c -ldl 2>/dev/null", dir, dir)) then
        pending("no C compiler for the shim")
        return
      end
      h.write(dir .. "/run.lua", [[
local parallel = require "apsearch.parallel"
local n, sum = 0, 0
parallel.run({ jobs = 3, tasks = parallel.max_tasks, work = function(t) return t end,
  on_result = function(t, v) n = n + 1 assert(t == n and v == t) sum = sum + v end })
assert(n == parallel.max_tasks and sum == n * (n + 1) // 2)
print("ok " .. n)
]])
      -- this process's module paths (the core module is in the build tree)
      h.write(dir .. "/paths.lua", string.format("package.path = %q\npackage.cpath = %q\n", package.path, package.cpath))
      local cmd = string.format("cd %s && %s timeout -s KILL 30 lua5.4 -e 'dofile(\"paths.lua\")' " ..
        "run.lua > stdout 2> stderr", dir, preload(dir .. "/shim.so"))
      local _, _, code = os.execute(cmd)
      assert.are.equal(0, code, h.read(dir .. "/stderr"))
      assert.are.equal("ok 4096\n", h.read(dir .. "/stdout"))
    end)

    it("reports a worker that was killed", function()
      local ok, err = pcall(parallel.run, {
        jobs = 2, tasks = 4,
        work = function(t)
          if t == 3 then require("apsearch.core").kill(require("apsearch.core").getpid(), 9) end
          return t
        end,
        on_result = function() end,
      })
      assert.is_false(ok)
      assert.truthy(err:find("^search: worker process %d+ was killed by signal 9 before it finished"), err)
    end)
  end)

  describe("Space:iter over a range", function()
    it("gives the candidates of the range, with their indices, as the whole walk", function()
      local p = policy.load(example("llama3_70b_h100_1024_sweep.lua"))
      local ctx = search.context(p)
      local inputs = ctx:inputs()
      local sp = space_mod.new(p.search_space, { num_devices = inputs.cluster.num_devices,
        allow_idle_devices = p.constraints.allow_idle_devices, num_layers = inputs.model.num_layers,
        framework = inputs.training.framework })
      local n = sp:size()
      -- every field the space sets, per index
      local fields = { "tp_degree", "sequence_parallel", "cp_degree", "cp_comm_type", "pp_degree", "vpp_degree",
        "dp_degree", "fsdp_degree", "zero_stage", "reshard_after_forward", "layer_recompute",
        "recompute_num_layers", "micro_batch_size" }
      local whole = {}
      for c, i in sp:iter() do
        local v = {}
        for k, f in ipairs(fields) do v[k] = c[f] end
        whole[i] = v
      end
      assert.are.equal(n, #whole)
      for _, parts in ipairs({ 3, 1000 }) do
        local seen = 0
        for w = 1, parts do
          local first, last = (w - 1) * n // parts + 1, w * n // parts
          local want = first
          for c, i in sp:iter(nil, nil, first, last) do
            assert(i == want, "index")
            local v = whole[i]
            for k, f in ipairs(fields) do assert(c[f] == v[k], f) end
            want = want + 1
          end
          assert.are.equal(last + 1, want)
          seen = seen + (last - first + 1)
        end
        assert.are.equal(n, seen)
      end
    end)
  end)

  describe("apsearch.search_merge", function()
    local function w(t) return t end
    it("the front: by step time, memory strictly decreasing, the first of points alike", function()
      local f = merge.front({
        w({ front = { step_time = { 1, 2, 3 }, mem_peak = { 9, 5, 1 }, index = { 10, 20, 30 },
          strategy = { "a", "b", "c" } } }),
        w({ front = { step_time = { 1, 2, 2.5 }, mem_peak = { 9, 4, 5 }, index = { 5, 25, 26 },
          strategy = { "d", "e", "f" } } }),
      })
      assert.are.same({ 5, 25, 30 }, f.index)
      assert.are.same({ 1, 2, 3 }, f.step_time)
      assert.are.same({ 9, 4, 1 }, f.mem_peak)
    end)

    it("the summary: counts add up; the first example, the least-memory one for MEMORY_LIMIT", function()
      local s = {}
      merge.summary(s, { X = { count = 2, at = 50, example = "x50" },
        MEMORY_LIMIT = { count = 1, at = 3, mem_limited = 7, example = "m3" } })
      merge.summary(s, { X = { count = 3, at = 10, example = "x10" },
        MEMORY_LIMIT = { count = 4, at = 9, mem_limited = 7, example = "m9" } })
      merge.summary(s, { MEMORY_LIMIT = { count = 1, at = 99, mem_limited = 6, example = "m99" } })
      assert.are.equal(5, s.X.count)
      assert.are.equal("x10", s.X.example)
      assert.are.equal(6, s.MEMORY_LIMIT.count)
      assert.are.equal("m99", s.MEMORY_LIMIT.example)
      assert.are.same({ "X", "MEMORY_LIMIT" }, merge.reasons(s))
      assert.are.equal(1, s.X.id)
    end)

    it("the trends: least step time, then memory, then index", function()
      local acc = { { [2] = 5 }, { [2] = 3 }, { [2] = "late" }, { [2] = 40 } }
      merge.trend(acc, { { [2] = 5, [4] = 1 }, { [2] = 3, [4] = 1 }, { [2] = "early", [4] = "four" },
        { [2] = 12, [4] = 7 } })
      assert.are.equal("early", acc[3][2])
      assert.are.equal(12, acc[4][2])
      assert.are.equal("four", acc[3][4])
    end)

    it("chart 7's sample: the least stride (at least each worker's) that keeps at most cap", function()
      local function pts(idx)
        local sc = { stride = 1, ord = {}, index = {}, step_time = {}, mem_peak = {}, strategy = {} }
        for i, x in ipairs(idx) do
          sc.ord[i], sc.index[i], sc.step_time[i], sc.mem_peak[i], sc.strategy[i] = search.sample_key(x), x, x, x, x
        end
        return { scatter = sc }
      end
      local a, b = {}, {}
      for i = 1, 100 do a[#a + 1] = i end
      for i = 101, 300 do b[#b + 1] = i end
      local all = {}
      for i = 1, 300 do all[#all + 1] = i end
      local m = merge.scatter({ pts(b), pts(a) }, 64)
      assert.is_true(#m.index <= 64)
      -- the sample of every point: the least power-of-two stride that
      -- keeps at most 64 of them
      local stride, want = 1, nil
      repeat
        want = {}
        for _, i in ipairs(all) do
          if (search.sample_key(i) - 1) % stride == 0 then want[#want + 1] = i end
        end
        stride = 2 * stride
      until #want <= 64
      assert.are.same(want, m.index)
      assert.are.equal(stride // 2, m.stride)
      assert.is_true(m.stride > 1)
      for i = 2, #m.index do assert.is_true(m.index[i - 1] < m.index[i]) end
    end)
  end)
end)
