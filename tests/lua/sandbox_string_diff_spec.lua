-- tests/lua/sandbox_string_diff_spec.lua -- issue 27 item 4: the sandbox's
-- metered string functions (src/lua/lsandbox.c: find, match, gmatch, gsub
-- and rep) against the stock Lua 5.4 library on their edge cases: every
-- combination of subject, pattern and init (0, negative, past either end,
-- the integer extremes) must give the same results, or the same error.
local sandbox = require "apsearch.sandbox"

local S = sandbox.string

-- most gmatch results compared per call (an iteration that does not end
-- would otherwise hang the spec)
local MAX_ITERATIONS = 64

local SUBJECTS = { "", "a", "abc", "aaa", "hello world", "a.b.c", "\0x\0", "ab" .. string.rep("a", 20) }
local PATTERNS = { "", "a", ".", "a*", "a-", "a?", "()", "()a()", "(a)(b)", "^a", "^", "$", "a$",
  "%a+", "x*", "%f[%w]%w+", "[^a]", "(.-)b", "%z", "[%z]", "%.", "(a*(.)%w(%s*))", "%bab",
  "(%a)%1" }
local INITS = { false, 0, 1, 2, 3, -1, -2, -3, -100, 100, math.maxinteger, math.mininteger }

-- the init argument as given (false: left out), and the subject's own
-- ends: len, len + 1, len + 2
local function inits(s)
  local list = {}
  for _, i in ipairs(INITS) do list[#list + 1] = i end
  for d = 0, 2 do list[#list + 1] = #s + d end
  return list
end

-- {ok, results...} of f(...), the error message without its position
local function outcome(f, ...)
  local r = table.pack(pcall(f, ...))
  if not r[1] then r[2] = tostring(r[2]):gsub("^[^:]*:%d+: ", "") end
  return r
end

-- every match of gmatch(s, p[, init]), as an array of capture arrays
local function gmatch_all(gmatch, s, p, init)
  local out = {}
  local it = init == false and gmatch(s, p) or gmatch(s, p, init)
  for _ = 1, MAX_ITERATIONS do
    local r = table.pack(it())
    if r[1] == nil then return out end
    out[#out + 1] = r
  end
  out.unfinished = true
  return out
end

local function label(fn, s, p, init)
  return string.format("%s(%q, %q, %s)", fn, s, p, tostring(init))
end

describe("the sandbox's string functions against stock Lua 5.4 (issue 27)", function()
  it("find, match and gmatch agree on every subject, pattern and init", function()
    local n = 0
    for _, s in ipairs(SUBJECTS) do
      for _, p in ipairs(PATTERNS) do
        for _, init in ipairs(inits(s)) do
          for _, fn in ipairs({ "find", "match" }) do
            local args = init == false and { s, p } or { s, p, init }
            assert.are.same(outcome(string[fn], table.unpack(args)), outcome(S[fn], table.unpack(args)),
              label(fn, s, p, init))
            n = n + 1
          end
          assert.are.same(outcome(gmatch_all, string.gmatch, s, p, init),
            outcome(gmatch_all, S.gmatch, s, p, init), label("gmatch", s, p, init))
          n = n + 1
        end
      end
    end
    assert.truthy(n > 5000, n)
  end)

  it("find with plain = true agrees, init past the end included", function()
    for _, s in ipairs(SUBJECTS) do
      for _, p in ipairs({ "", "a", ".", "%a", "a.b", "\0" }) do
        for _, init in ipairs(inits(s)) do
          if init ~= false then
            assert.are.same(outcome(string.find, s, p, init, true), outcome(S.find, s, p, init, true),
              label("find plain", s, p, init))
          end
        end
      end
    end
  end)

  it("gmatch: an init past the end yields nothing, one at len + 1 the empty match at the end", function()
    local function all(gm, s, p, i) local t = {} for m in gm(s, p, i) do t[#t + 1] = m end return t end
    for _, gm in ipairs({ string.gmatch, S.gmatch }) do
      assert.are.same({}, all(gm, "abc", "", 5))
      assert.are.same({}, all(gm, "abc", "", math.maxinteger))
      assert.are.same({ "" }, all(gm, "abc", "", 4))
      assert.are.same({ "", "", "", "" }, all(gm, "abc", "", 0))
      assert.are.same({ "c" }, all(gm, "abc", ".", -1))
      assert.are.same({ "a", "b", "c" }, all(gm, "abc", ".", -100))
    end
  end)

  it("gsub agrees on replacement strings, tables, functions, counts and bad captures", function()
    local repls = { "", "-", "%0%0", "%1", "<%1>", "%%", "%2", "%", "%x",
      { a = "A", b = false }, function(c) if c == "a" then return "Z" end end }
    local counts = { false, 0, 1, 2, -1, math.maxinteger, math.mininteger }
    for _, s in ipairs(SUBJECTS) do
      for _, p in ipairs(PATTERNS) do
        for _, r in ipairs(repls) do
          for _, n in ipairs(counts) do
            local args = n == false and { s, p, r } or { s, p, r, n }
            assert.are.same(outcome(string.gsub, table.unpack(args)), outcome(S.gsub, table.unpack(args)),
              label("gsub", s, p, tostring(r) .. ", " .. tostring(n)))
          end
        end
      end
    end
  end)

  it("rep agrees on counts and separators", function()
    for _, s in ipairs({ "", "x", "ab" }) do
      for _, n in ipairs({ -1, 0, 1, 3, math.mininteger }) do
        for _, sep in ipairs({ false, "", "," }) do
          local args = sep == false and { s, n } or { s, n, sep }
          assert.are.same(outcome(string.rep, table.unpack(args)), outcome(S.rep, table.unpack(args)),
            string.format("rep(%q, %d, %s)", s, n, tostring(sep)))
        end
      end
    end
  end)
end)
