--- An RFC 4180 CSV reader (https://www.rfc-editor.org/rfc/rfc4180,
-- section 2), for the cases files of `apsearch validate` and `apsearch
-- calibrate` (apsearch.validate.load):
--
-- 1. records end with a line break: CRLF as the RFC writes it, and LF or
--    a lone CR as other tools do;
-- 2. the last record may end with a line break or not;
-- 3. the first record is the header (the caller reads it so);
-- 4. fields are separated by commas; spaces are part of a field;
-- 5. a field may be enclosed in double quotes; an unquoted field holds no
--    double quote (refused: "a quote in an unquoted field");
-- 6. a quoted field may hold commas, double quotes and line breaks;
-- 7. a double quote inside a quoted field is written twice (`""`).
--
-- Beyond the RFC: a UTF-8 byte-order mark at the start (Excel's "CSV
-- UTF-8") is skipped, and an empty line outside quotes is no record
-- (spreadsheets leave them at the end).  A quoted field that is never
-- closed, a quote in an unquoted field and text after a closing quote are
-- refused with `<file>:<line>:<column>: <problem>` (line and column of
-- the quote, columns counted in UTF-8 characters, from 1).
-- @module apsearch.csvread
local M = {}

--- The UTF-8 byte-order mark, skipped at the start of a file.
M.BOM = "\239\187\191"

local QUOTE, COMMA = '"', ","

local Reader = {}
Reader.__index = Reader

-- the 1-based column of byte `pos`, in UTF-8 characters of its line
-- (bytes where the line is not valid UTF-8)
function Reader:column(pos)
  local prefix = self.text:sub(self.line_start, pos - 1)
  return (utf8.len(prefix) or #prefix) + 1
end

-- raises `<name>:<line>:<column>: <problem>` for byte `pos`
function Reader:fail(pos, problem, line, line_start)
  self.line, self.line_start = line or self.line, line_start or self.line_start
  error(("%s:%d:%d: %s"):format(self.name, self.line, self:column(pos), problem), 0)
end

-- length of the line break at `pos` (2 for CRLF, 1 for LF or CR), or nil
function Reader:break_len(pos)
  local c = self.text:sub(pos, pos)
  if c == "\r" then return self.text:sub(pos + 1, pos + 1) == "\n" and 2 or 1 end
  if c == "\n" then return 1 end
  return nil
end

-- counts the line break of length `len` at `pos`
function Reader:next_line(pos, len)
  self.line, self.line_start = self.line + 1, pos + len
end

-- a quoted field opening at `pos`: its value (quotes undoubled, line
-- breaks kept as written) and the position after the closing quote
function Reader:quoted(pos)
  local text, parts = self.text, {}
  local open_line, open_start = self.line, self.line_start
  local i = pos + 1
  while true do
    local q = text:find('["\r\n]', i)
    if not q then
      self:fail(pos, "a quoted field is never closed (a quote inside a field is written twice: \"\")",
        open_line, open_start)
    end
    parts[#parts + 1] = text:sub(i, q - 1)
    local len = self:break_len(q)
    if len then
      parts[#parts + 1] = text:sub(q, q + len - 1)
      self:next_line(q, len)
      i = q + len
    elseif text:sub(q + 1, q + 1) == QUOTE then
      parts[#parts + 1] = QUOTE
      i = q + 2
    else
      return table.concat(parts), q + 1
    end
  end
end

-- an unquoted field at `pos`: its value and the position of what ends it
function Reader:unquoted(pos)
  local stop = self.text:find('[,"\r\n]', pos) or (#self.text + 1)
  if self.text:sub(stop, stop) == QUOTE then
    self:fail(stop, "a quote in an unquoted field (quote the whole field and write the quote twice: "
      .. '"a ""b"" c")')
  end
  return self.text:sub(pos, stop - 1), stop
end

-- one field at `pos`: its value, the position after it, and whether it
-- was quoted
function Reader:field(pos)
  if self.text:sub(pos, pos) ~= QUOTE then
    local v, stop = self:unquoted(pos)
    return v, stop, false
  end
  local v, after = self:quoted(pos)
  local c = self.text:sub(after, after)
  if after <= #self.text and c ~= COMMA and not self:break_len(after) then
    self:fail(after, "text after the closing quote of a quoted field (a quote inside a field is "
      .. 'written twice: "")')
  end
  return v, after, true
end

-- one record at `pos`: its fields and the position after its line break
-- (nil for an empty line outside quotes)
function Reader:record(pos)
  local fields, quoted_any = {}, false
  while true do
    local v, after, quoted = self:field(pos)
    fields[#fields + 1], quoted_any = v, quoted_any or quoted
    if self.text:sub(after, after) == COMMA then
      pos = after + 1
    else
      local len = self:break_len(after) or 0
      if len > 0 then self:next_line(after, len) end
      local empty = #fields == 1 and fields[1] == "" and not quoted_any
      return (not empty) and fields or nil, after + len
    end
  end
end

--- Parses CSV text into records.
-- @tparam string text the file's contents
-- @tparam string name the file's name, for error messages
-- @treturn table array of records, each an array of field strings
-- @treturn table the line each record starts on (1-based)
-- @raise `<name>:<line>:<column>: <problem>` on malformed text
function M.parse(text, name)
  if text:sub(1, #M.BOM) == M.BOM then text = text:sub(#M.BOM + 1) end
  local r = setmetatable({ text = text, name = name, line = 1, line_start = 1 }, Reader)
  local records, lines, pos = {}, {}, 1
  while pos <= #text do
    local first = r.line
    local fields
    fields, pos = r:record(pos)
    if fields then
      records[#records + 1], lines[#lines + 1] = fields, first
    end
  end
  return records, lines
end

return M
