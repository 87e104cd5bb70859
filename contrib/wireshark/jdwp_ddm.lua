-- jdwp_ddm.lua: JDWP with Android DDM chunks decoded, for Wireshark and tshark.
--
-- Wireshark's own JDWP dissector shows a DDM packet (command set 0xC7) as "Unknown (199)"
-- with no chunk inside. This dissector ("jdwp_ddm") reads JDWP itself (handshake, header,
-- command names, replies paired with their commands and their latency) and decodes every
-- DDM chunk in command set 0xC7 packets and their replies ("ddm"): its type, length and
-- each field, with one summary line per chunk that is exactly what `jdwpmux decode` prints
-- for it.
--
-- It takes a TCP stream that starts with the JDWP handshake on any port, and streams on
-- the ports of the "ports" preference (jdwpmux's and the VM scan range by default) when
-- the capture begins mid-stream; Decode As "JDWP_DDM" works for any other.
--
--   tshark -X lua_script:jdwp_ddm.lua -r session.pcapng -Y ddm -O jdwp_ddm,ddm
--   Wireshark: copy this file to ~/.local/lib/wireshark/plugins/ (Help > About >
--   Folders > Personal Lua Plugins) and restart, or reload with Ctrl+Shift+L.
--
-- Written for the Lua API of Wireshark 3.x and 4.x (Lua 5.1 to 5.4): no bit library and no
-- integer division, so it runs on each.

local jdwp = Proto("jdwp_ddm", "JDWP with DDM (jdwpmux)")
local ddm = Proto("ddm", "Android DDM chunk")

local HANDSHAKE = "JDWP-Handshake"
local HEADER_LEN = 11
local REPLY_FLAG = 0x80
local DDM_SET = 0xC7
local EVENT_SET = 64
-- Most chunks decoded per packet, as in jdwpmux (MAX_CHUNKS_PER_PAYLOAD).
local MAX_CHUNKS = 4096
-- Most bytes of an opaque chunk kept for its summary (HEAD_LEN), and shown (MAX_SHOWN_BYTES).
local HEAD_LEN = 32
local SHOWN_BYTES = 16
-- Longest string shown, in characters, and most list items shown.
local SHOWN_CHARS = 120
local SHOWN_ITEMS = 6

-- BEGIN JDWP names: equal to src/jdwp/names.rs (a test checks)
local COMMAND_SETS = {
  [1] = { "VirtualMachine", { [1] = "Version", [2] = "ClassesBySignature", [3] = "AllClasses", [4] = "AllThreads", [5] = "TopLevelThreadGroups", [6] = "Dispose", [7] = "IDSizes", [8] = "Suspend", [9] = "Resume", [10] = "Exit", [11] = "CreateString", [12] = "Capabilities", [13] = "ClassPaths", [14] = "DisposeObjects", [15] = "HoldEvents", [16] = "ReleaseEvents", [17] = "CapabilitiesNew", [18] = "RedefineClasses", [19] = "SetDefaultStratum", [20] = "AllClassesWithGeneric", [21] = "InstanceCounts", [22] = "AllModules" } },
  [2] = { "ReferenceType", { [1] = "Signature", [2] = "ClassLoader", [3] = "Modifiers", [4] = "Fields", [5] = "Methods", [6] = "GetValues", [7] = "SourceFile", [8] = "NestedTypes", [9] = "Status", [10] = "Interfaces", [11] = "ClassObject", [12] = "SourceDebugExtension", [13] = "SignatureWithGeneric", [14] = "FieldsWithGeneric", [15] = "MethodsWithGeneric", [16] = "Instances", [17] = "ClassFileVersion", [18] = "ConstantPool", [19] = "Module" } },
  [3] = { "ClassType", { [1] = "Superclass", [2] = "SetValues", [3] = "InvokeMethod", [4] = "NewInstance" } },
  [4] = { "ArrayType", { [1] = "NewInstance" } },
  [5] = { "InterfaceType", { [1] = "InvokeMethod" } },
  [6] = { "Method", { [1] = "LineTable", [2] = "VariableTable", [3] = "Bytecodes", [4] = "IsObsolete", [5] = "VariableTableWithGeneric" } },
  [8] = { "Field", {  } },
  [9] = { "ObjectReference", { [1] = "ReferenceType", [2] = "GetValues", [3] = "SetValues", [5] = "MonitorInfo", [6] = "InvokeMethod", [7] = "DisableCollection", [8] = "EnableCollection", [9] = "IsCollected", [10] = "ReferringObjects" } },
  [10] = { "StringReference", { [1] = "Value" } },
  [11] = { "ThreadReference", { [1] = "Name", [2] = "Suspend", [3] = "Resume", [4] = "Status", [5] = "ThreadGroup", [6] = "Frames", [7] = "FrameCount", [8] = "OwnedMonitors", [9] = "CurrentContendedMonitor", [10] = "Stop", [11] = "Interrupt", [12] = "SuspendCount", [13] = "OwnedMonitorsStackDepthInfo", [14] = "ForceEarlyReturn", [15] = "IsVirtual" } },
  [12] = { "ThreadGroupReference", { [1] = "Name", [2] = "Parent", [3] = "Children" } },
  [13] = { "ArrayReference", { [1] = "Length", [2] = "GetValues", [3] = "SetValues" } },
  [14] = { "ClassLoaderReference", { [1] = "VisibleClasses" } },
  [15] = { "EventRequest", { [1] = "Set", [2] = "Clear", [3] = "ClearAllBreakpoints" } },
  [16] = { "StackFrame", { [1] = "GetValues", [2] = "SetValues", [3] = "ThisObject", [4] = "PopFrames" } },
  [17] = { "ClassObjectReference", { [1] = "ReflectedType" } },
  [18] = { "ModuleReference", { [1] = "Name", [2] = "ClassLoader" } },
  [64] = { "Event", { [100] = "Composite" } },
  [199] = { "DDM", { [1] = "Chunk" } },
}
local ERRORS = {
  [0] = "NONE",
  [10] = "INVALID_THREAD",
  [11] = "INVALID_THREAD_GROUP",
  [12] = "INVALID_PRIORITY",
  [13] = "THREAD_NOT_SUSPENDED",
  [14] = "THREAD_SUSPENDED",
  [15] = "THREAD_NOT_ALIVE",
  [20] = "INVALID_OBJECT",
  [21] = "INVALID_CLASS",
  [22] = "CLASS_NOT_PREPARED",
  [23] = "INVALID_METHODID",
  [24] = "INVALID_LOCATION",
  [25] = "INVALID_FIELDID",
  [30] = "INVALID_FRAMEID",
  [31] = "NO_MORE_FRAMES",
  [32] = "OPAQUE_FRAME",
  [33] = "NOT_CURRENT_FRAME",
  [34] = "TYPE_MISMATCH",
  [35] = "INVALID_SLOT",
  [40] = "DUPLICATE",
  [41] = "NOT_FOUND",
  [42] = "INVALID_MODULE",
  [50] = "INVALID_MONITOR",
  [51] = "NOT_MONITOR_OWNER",
  [52] = "INTERRUPT",
  [60] = "INVALID_CLASS_FORMAT",
  [61] = "CIRCULAR_CLASS_DEFINITION",
  [62] = "FAILS_VERIFICATION",
  [63] = "ADD_METHOD_NOT_IMPLEMENTED",
  [64] = "SCHEMA_CHANGE_NOT_IMPLEMENTED",
  [65] = "INVALID_TYPESTATE",
  [66] = "HIERARCHY_CHANGE_NOT_IMPLEMENTED",
  [67] = "DELETE_METHOD_NOT_IMPLEMENTED",
  [68] = "UNSUPPORTED_VERSION",
  [69] = "NAMES_DONT_MATCH",
  [70] = "CLASS_MODIFIERS_CHANGE_NOT_IMPLEMENTED",
  [71] = "METHOD_MODIFIERS_CHANGE_NOT_IMPLEMENTED",
  [72] = "CLASS_ATTRIBUTE_CHANGE_NOT_IMPLEMENTED",
  [99] = "NOT_IMPLEMENTED",
  [100] = "NULL_POINTER",
  [101] = "ABSENT_INFORMATION",
  [102] = "INVALID_EVENT_TYPE",
  [103] = "ILLEGAL_ARGUMENT",
  [110] = "OUT_OF_MEMORY",
  [111] = "ACCESS_DENIED",
  [112] = "VM_DEAD",
  [113] = "INTERNAL",
  [115] = "UNATTACHED_THREAD",
  [500] = "INVALID_TAG",
  [502] = "ALREADY_INVOKING",
  [503] = "INVALID_INDEX",
  [504] = "INVALID_LENGTH",
  [506] = "INVALID_STRING",
  [507] = "INVALID_CLASS_LOADER",
  [508] = "INVALID_ARRAY",
  [509] = "TRANSPORT_LOAD",
  [510] = "TRANSPORT_INIT",
  [511] = "NATIVE_METHOD",
  [512] = "INVALID_COUNT",
}
local EVENT_KINDS = {
  [1] = "SINGLE_STEP",
  [2] = "BREAKPOINT",
  [3] = "FRAME_POP",
  [4] = "EXCEPTION",
  [5] = "USER_DEFINED",
  [6] = "THREAD_START",
  [7] = "THREAD_DEATH",
  [8] = "CLASS_PREPARE",
  [9] = "CLASS_UNLOAD",
  [10] = "CLASS_LOAD",
  [20] = "FIELD_ACCESS",
  [21] = "FIELD_MODIFICATION",
  [30] = "EXCEPTION_CATCH",
  [40] = "METHOD_ENTRY",
  [41] = "METHOD_EXIT",
  [42] = "METHOD_EXIT_WITH_RETURN_VALUE",
  [43] = "MONITOR_CONTENDED_ENTER",
  [44] = "MONITOR_CONTENDED_ENTERED",
  [45] = "MONITOR_WAIT",
  [46] = "MONITOR_WAITED",
  [90] = "VM_START",
  [99] = "VM_DEATH",
  [100] = "VM_DISCONNECTED",
}
-- END JDWP names

local function command_name(set, cmd)
  local s = COMMAND_SETS[set]
  if s == nil then
    return string.format("Set(%d).Cmd(%d)", set, cmd)
  end
  local c = s[2][cmd]
  if c == nil then
    return string.format("%s.Cmd(%d)", s[1], cmd)
  end
  return s[1] .. "." .. c
end

local function error_name(code)
  return ERRORS[code] or string.format("ERROR(%d)", code)
end

------------------------------------------------------------------------------------------
-- Fields

local jf = {
  handshake = ProtoField.string("jdwp_ddm.handshake", "Handshake"),
  length = ProtoField.uint32("jdwp_ddm.length", "Length"),
  id = ProtoField.uint32("jdwp_ddm.id", "Id"),
  flags = ProtoField.uint8("jdwp_ddm.flags", "Flags", base.HEX),
  cmdset = ProtoField.uint8("jdwp_ddm.cmdset", "Command set"),
  cmd = ProtoField.uint8("jdwp_ddm.cmd", "Command"),
  command = ProtoField.string("jdwp_ddm.command", "Command name"),
  error = ProtoField.uint16("jdwp_ddm.error", "Error code"),
  error_name = ProtoField.string("jdwp_ddm.error_name", "Error"),
  reply_in = ProtoField.framenum("jdwp_ddm.reply_in", "Reply in", base.NONE, frametype.RESPONSE),
  request_in = ProtoField.framenum("jdwp_ddm.request_in", "Request in", base.NONE, frametype.REQUEST),
  latency = ProtoField.relative_time("jdwp_ddm.latency", "Reply latency"),
  event_kind = ProtoField.string("jdwp_ddm.event", "First event"),
  data = ProtoField.bytes("jdwp_ddm.data", "Data"),
}
jdwp.fields = jf

local F = {}
local function field(key, ctor, abbr, name, ...)
  F[key] = ctor(abbr, name, ...)
end
field("type", ProtoField.string, "ddm.type", "Type")
field("length", ProtoField.uint32, "ddm.length", "Length")
field("summary", ProtoField.string, "ddm.summary", "Summary")
field("data", ProtoField.bytes, "ddm.data", "Data")
field("empty_reply", ProtoField.bool, "ddm.empty_reply", "Empty reply")
field("helo_version", ProtoField.uint32, "ddm.helo.version", "Protocol version")
field("helo_pid", ProtoField.uint32, "ddm.helo.pid", "Process id")
field("helo_vm", ProtoField.string, "ddm.helo.vm", "VM")
field("helo_app", ProtoField.string, "ddm.helo.app", "App name")
field("helo_user", ProtoField.uint32, "ddm.helo.user", "User id")
field("helo_abi", ProtoField.string, "ddm.helo.abi", "ABI")
field("helo_flags", ProtoField.string, "ddm.helo.flags", "JVM flags")
field("helo_native", ProtoField.bool, "ddm.helo.native_debuggable", "Native debuggable")
field("helo_pkg", ProtoField.string, "ddm.helo.pkg", "Package")
field("helo_stage", ProtoField.string, "ddm.helo.stage", "Boot stage")
field("apnm_app", ProtoField.string, "ddm.apnm.app", "App name")
field("apnm_user", ProtoField.uint32, "ddm.apnm.user", "User id")
field("apnm_pkg", ProtoField.string, "ddm.apnm.pkg", "Package")
field("wait_reason", ProtoField.uint8, "ddm.wait.reason", "Reason", base.DEC, { [0] = "debugger" })
field("enable", ProtoField.bool, "ddm.enable", "Enabled")
field("tid", ProtoField.uint32, "ddm.thread.tid", "Thread id")
field("thread_name", ProtoField.string, "ddm.thread.name", "Thread name")
field("thst_layout", ProtoField.string, "ddm.thst.layout", "Layout")
field("thst_header_len", ProtoField.uint8, "ddm.thst.header_len", "Header length")
field("thst_entry_len", ProtoField.uint8, "ddm.thst.entry_len", "Bytes per entry")
field("thst_count", ProtoField.uint32, "ddm.thst.count", "Threads")
field("thst_interval", ProtoField.uint32, "ddm.thst.interval", "Interval (ms)")
local STATES = { [1] = "running", [2] = "sleeping", [3] = "monitor", [4] = "waiting", [5] = "initializing",
  [6] = "starting", [7] = "native", [8] = "vmwait" }
field("thst_state", ProtoField.uint8, "ddm.thst.state", "State", base.DEC, STATES)
field("thst_suspended", ProtoField.bool, "ddm.thst.suspended", "Suspended")
field("thst_systid", ProtoField.uint32, "ddm.thst.systid", "System thread id")
field("thst_utime", ProtoField.uint32, "ddm.thst.utime", "User time")
field("thst_stime", ProtoField.uint32, "ddm.thst.stime", "System time")
field("thst_daemon", ProtoField.bool, "ddm.thst.daemon", "Daemon")
field("stkl_depth", ProtoField.uint32, "ddm.stkl.depth", "Depth")
field("stkl_frame", ProtoField.string, "ddm.stkl.frame", "Frame")
local WHEN = { [0] = "never", [1] = "now", [2] = "next-gc", [3] = "every-gc" }
field("when", ProtoField.uint8, "ddm.when", "When", base.DEC, WHEN)
field("what", ProtoField.uint8, "ddm.what", "What", base.DEC, { [0] = "merged objects", [1] = "distinct objects" })
field("hpif_count", ProtoField.uint32, "ddm.hpif.count", "Heaps")
field("hpif_heap", ProtoField.uint32, "ddm.hpif.heap", "Heap id")
field("hpif_timestamp", ProtoField.uint64, "ddm.hpif.timestamp", "Timestamp (ms)")
field("hpif_reason", ProtoField.uint8, "ddm.hpif.reason", "Reason", base.DEC, WHEN)
field("hpif_max", ProtoField.uint32, "ddm.hpif.max", "Max size")
field("hpif_size", ProtoField.uint32, "ddm.hpif.size", "Heap size")
field("hpif_allocated", ProtoField.uint32, "ddm.hpif.allocated", "Bytes allocated")
field("hpif_objects", ProtoField.uint32, "ddm.hpif.objects", "Objects allocated")
field("heap_id", ProtoField.uint32, "ddm.heap.id", "Heap id")
field("seg_unit", ProtoField.uint8, "ddm.seg.unit", "Allocation unit")
field("seg_address", ProtoField.uint32, "ddm.seg.address", "Address", base.HEX)
field("seg_offset", ProtoField.uint32, "ddm.seg.offset", "Offset (units)", base.HEX)
field("seg_units", ProtoField.uint32, "ddm.seg.units", "Length (units)")
field("seg_runs", ProtoField.uint32, "ddm.seg.runs", "Runs")
field("seg_free", ProtoField.uint32, "ddm.seg.free", "Free units")
field("file", ProtoField.string, "ddm.file", "File")
field("result", ProtoField.uint8, "ddm.result", "Result")
field("blob_len", ProtoField.uint32, "ddm.blob.length", "Data length")
field("buffer", ProtoField.uint32, "ddm.trace.buffer", "Buffer size")
field("trace_flags", ProtoField.uint32, "ddm.trace.flags", "Flags", base.HEX)
field("trace_interval", ProtoField.uint32, "ddm.trace.interval", "Interval (us)")
field("trace_mode", ProtoField.uint8, "ddm.trace.mode", "Mode", base.DEC, { [0] = "off", [1] = "tracing", [2] = "sampling" })
field("op", ProtoField.uint32, "ddm.view.op", "Operation")
field("list_count", ProtoField.uint32, "ddm.list.count", "Count")
field("feature", ProtoField.string, "ddm.feat.name", "Feature")
field("window", ProtoField.string, "ddm.view.window", "Window")
field("stage", ProtoField.string, "ddm.stag.stage", "Boot stage")
field("artt_version", ProtoField.uint32, "ddm.artt.version", "Version")
field("artt_count", ProtoField.uint32, "ddm.artt.count", "Timings")
field("exit_status", ProtoField.int32, "ddm.exit.status", "Exit status")
field("fail_code", ProtoField.uint32, "ddm.fail.code", "Error code")
field("fail_message", ProtoField.string, "ddm.fail.message", "Message")
field("zlib_compressed", ProtoField.uint32, "ddm.zlib.compressed_len", "Compressed length")
field("zlib_type", ProtoField.string, "ddm.zlib.type", "Original type")
field("zlib_original", ProtoField.uint32, "ddm.zlib.original_len", "Original length")
local fields = {}
for _, v in pairs(F) do
  fields[#fields + 1] = v
end
ddm.fields = fields

local ex_malformed = ProtoExpert.new("ddm.malformed", "Malformed DDM chunk", expert.group.MALFORMED, expert.severity.ERROR)
local ex_zlib = ProtoExpert.new("ddm.zlib.not_inflated", "ZLIB chunk not inflated", expert.group.UNDECODED, expert.severity.WARN)
local ex_truncated = ProtoExpert.new("ddm.truncated", "Chunk continues beyond the captured bytes", expert.group.UNDECODED, expert.severity.NOTE)
ddm.experts = { ex_malformed, ex_zlib, ex_truncated }
local ex_jdwp = ProtoExpert.new("jdwp_ddm.malformed", "Malformed JDWP packet", expert.group.MALFORMED, expert.severity.ERROR)
jdwp.experts = { ex_jdwp }

local prefs = jdwp.prefs
prefs.ports = Pref.range("Ports", "8000-8040,8600-8699,8700",
  "TCP ports taken as JDWP even when a capture begins after the handshake", 65535)

------------------------------------------------------------------------------------------
-- Text as jdwpmux prints it

-- Four bytes as text: printable ASCII as is, anything else (and "\") as \xNN.
local function fourcc(range)
  local out = {}
  for i = 0, 3 do
    local b = range(i, 1):uint()
    if (b > 32 and b < 127 and b ~= 92) or b == 32 then
      out[#out + 1] = string.char(b)
    else
      out[#out + 1] = string.format("\\x%02x", b)
    end
  end
  return table.concat(out)
end

-- A string quoted and escaped as Rust's {:?} does, cut to SHOWN_CHARS characters.
local function quote(s)
  local out, chars, i, n = { '"' }, 0, 1, #s
  while i <= n do
    local b = s:byte(i)
    local len = 1
    if b >= 0xF0 then len = 4 elseif b >= 0xE0 then len = 3 elseif b >= 0xC0 then len = 2 end
    if chars == SHOWN_CHARS then
      out[#out + 1] = '"\226\128\166' -- closing quote and "…"
      return table.concat(out)
    end
    local c = s:sub(i, i + len - 1)
    if c == '"' then c = '\\"'
    elseif c == "\\" then c = "\\\\"
    elseif c == "\n" then c = "\\n"
    elseif c == "\r" then c = "\\r"
    elseif c == "\t" then c = "\\t"
    elseif c == "\0" then c = "\\0"
    elseif len == 1 and (b < 32 or b == 127) then c = string.format("\\u{%x}", b)
    end
    out[#out + 1] = c
    chars = chars + 1
    i = i + len
  end
  out[#out + 1] = '"'
  return table.concat(out)
end

local function hex(range, n)
  local out = {}
  for i = 0, n - 1 do
    out[#out + 1] = string.format("%02x", range(i, 1):uint())
  end
  return table.concat(out)
end

-- " len=N head=0011…": an opaque body summarised by its length and first bytes.
local function blob_text(range)
  local len = range:len()
  local s = string.format(" len=%d", len)
  if len > 0 then
    local head = math.min(len, HEAD_LEN)
    s = s .. " head=" .. hex(range, math.min(head, SHOWN_BYTES))
    if head > SHOWN_BYTES then
      s = s .. "\226\128\166"
    end
  end
  return s
end

local function on_off(v)
  if v ~= 0 then return " on" end
  return " off"
end

local function hexnum(v)
  return "0x" .. string.format("%x", v)
end

------------------------------------------------------------------------------------------
-- Reading chunk data: a cursor that raises a "malformed" error when data runs out

local Cursor = {}
Cursor.__index = Cursor

-- Over a sub-Tvb of `range`, so that empty fields at its very end are ranges too.
local function cursor(range)
  local tvb = range:tvb()
  return setmetatable({ tvb = tvb, range = tvb(), pos = 0, stop = tvb:len() }, Cursor)
end

local function malformed(msg)
  error({ ddm_malformed = msg }, 0)
end

function Cursor:left()
  return self.stop - self.pos
end

function Cursor:take(n, what)
  if n > self:left() then
    malformed(string.format("%s: needs %d bytes, %d left", what, n, self:left()))
  end
  local r = self.tvb(self.pos, n)
  self.pos = self.pos + n
  return r
end

-- Readers: the value and its range; given a tree and a field, the field is added too.
local function shown(r, t, f, value)
  if t then
    if value == nil then t:add(f, r) else t:add(f, r, value) end
  end
end

function Cursor:u1(what, t, f) local r = self:take(1, what) shown(r, t, f) return r:uint(), r end
function Cursor:u4(what, t, f) local r = self:take(4, what) shown(r, t, f) return r:uint(), r end
function Cursor:u8(what, t, f) local r = self:take(8, what) shown(r, t, f) return r:uint64(), r end
function Cursor:rest() return self:take(self:left(), "rest") end

-- `units` UTF-16BE code units.
function Cursor:utf16(units, what, t, f)
  local r = self:take(units * 2, what)
  local s = units == 0 and "" or r:ustring()
  shown(r, t, f, s)
  return s, r
end

-- u4 length, then that many UTF-16BE code units; the range covers both.
function Cursor:string(what, t, f)
  local start = self.pos
  local units = self:u4(what)
  if units * 2 > self:left() then
    malformed(string.format("%s: %d characters, %d bytes left", what, units, self:left()))
  end
  local s = self:utf16(units, what)
  local r = self.tvb(start, self.pos - start)
  shown(r, t, f, s)
  return s, r
end

-- Four letters (a boot stage, a chunk type).
function Cursor:fourcc(what, t, f)
  local r = self:take(4, what)
  local s = fourcc(r)
  shown(r, t, f, s)
  return s, r
end

function Cursor:done(what)
  if self:left() ~= 0 then
    malformed(string.format("%d bytes after %s", self:left(), what))
  end
end

------------------------------------------------------------------------------------------
-- Chunk bodies: each adds its fields to `t` and returns the text after the type

local function string_list(c, t, f, what)
  local count = c:u4("count", t, F.list_count)
  if count * 4 > c:left() then
    malformed("count too large")
  end
  local text = string.format(" %d", count)
  for i = 1, count do
    local s = c:string(what, t, f)
    if i <= SHOWN_ITEMS then
      text = text .. (i == 1 and ": " or ", ") .. quote(s)
    end
  end
  if count > SHOWN_ITEMS then
    text = text .. ", \226\128\166"
  end
  return text
end

local function blob(c, t)
  local r = c:rest()
  if r:len() > 0 then t:add(F.data, r) end
  t:add(F.blob_len, r, r:len())
  return blob_text(r)
end

-- The optional fields a newer VM appends to its HELO reply, in order: each is there only
-- if every one before it is.
local HELO_MORE = {
  { "user id", "u4", "helo_user", function(v) return string.format(" user=%d", v) end },
  { "abi", "string", "helo_abi", function(v) return " abi=" .. quote(v) end },
  { "jvm flags", "string", "helo_flags", function(v) return " flags=" .. quote(v) end },
  { "native debuggable", "u1", "helo_native", function(v) return " native_debuggable=" .. (v ~= 0 and "true" or "false") end },
  { "package name", "string", "helo_pkg", function(v) return " pkg=" .. quote(v) end },
  { "boot stage", "fourcc", "helo_stage", function(v) return " stage=" .. v end },
}

local function helo_reply(c, t)
  local version = c:u4("version", t, F.helo_version)
  local pid = c:u4("pid", t, F.helo_pid)
  local vm_len = c:u4("vm ident length")
  local app_len = c:u4("app name length")
  local vm = c:utf16(vm_len, "vm ident", t, F.helo_vm)
  local app = c:utf16(app_len, "app name", t, F.helo_app)
  local s = string.format(" version=%d pid=%d vm=%s app=%s", version, pid, quote(vm), quote(app))
  for _, m in ipairs(HELO_MORE) do
    if c:left() == 0 then return s end
    s = s .. m[4](c[m[2]](c, m[1], t, F[m[3]]))
  end
  c:rest() -- a newer VM's additions
  return s
end

local function state_name(state)
  return STATES[state] or ("state" .. state)
end

-- One THST entry: tid and state first, then what the layout carries.
local function thread_entry(c, t, size, extra)
  local e = cursor(c:take(size, "thread entry"))
  local et = t:add(ddm, e.range, "Thread")
  local tid = e:u4("thread id", et, F.tid)
  local state = e:u1("thread state", et, F.thst_state)
  extra(e, et)
  et:append_text(string.format(" %d: %s", tid, state_name(state)))
  return state
end

local function thst_reply(c, t)
  local len = c:left()
  if len < 4 then malformed("THST header") end
  local h = c.range
  local header_len, per_entry, real_count = h(0, 1):uint(), h(1, 1):uint(), h(2, 2):uint()
  local doc_count = h(0, 4):uint()
  local states = {}
  if header_len >= 4 and per_entry >= 17 and header_len + per_entry * real_count == len then
    t:add(F.thst_layout, h(0, 4), "real")
    c:u1("header length", t, F.thst_header_len)
    c:u1("bytes per entry", t, F.thst_entry_len)
    c:take(2, "thread count")
    t:add(F.thst_count, h(2, 2))
    c:take(header_len - 4, "THST header")
    for i = 1, real_count do
      states[i] = thread_entry(c, t, per_entry, function(e, et)
        e:u4("system tid", et, F.thst_systid)
        e:u4("utime", et, F.thst_utime)
        e:u4("stime", et, F.thst_stime)
        if per_entry >= 18 then e:u1("is daemon", et, F.thst_daemon) end
      end)
    end
  elseif 4 + 6 * doc_count == len then
    t:add(F.thst_layout, h(0, 4), "document")
    c:u4("thread count", t, F.thst_count)
    for i = 1, doc_count do
      states[i] = thread_entry(c, t, 6, function(e, et) e:u1("suspended", et, F.thst_suspended) end)
    end
  else
    malformed(string.format("%d bytes fit neither THST layout", len))
  end
  local counts = {}
  for _, st in ipairs(states) do counts[st] = (counts[st] or 0) + 1 end
  local s = string.format(" %d %s", #states, #states == 1 and "thread" or "threads")
  local sep = ": "
  for state = 0, 255 do
    if counts[state] then
      s = s .. sep .. string.format("%d %s", counts[state], state_name(state))
      sep = ", "
    end
  end
  return s
end

local function stkl_reply(c, t)
  c:u4("future")
  local tid = c:u4("thread id", t, F.tid)
  local depth = c:u4("depth", t, F.stkl_depth)
  if depth * 16 > c:left() then malformed("depth too large") end
  local top
  for i = 1, depth do
    local start = c.pos
    local class, method, file = c:string("class"), c:string("method"), c:string("file")
    local line = c:u4("line")
    if line >= 2147483648 then line = line - 4294967296 end
    if file == "" then file = "?" end
    local frame = string.format("%s.%s(%s:%d)", class, method, file, line)
    t:add(F.stkl_frame, c.tvb(start, c.pos - start), frame)
    if i == 1 then top = frame end
  end
  local s = string.format(" tid=%d depth=%d", tid, depth)
  if top then s = s .. " top=" .. quote(top) end
  return s
end

local function hpif_reply(c, t)
  local count = c:u4("heap count", t, F.hpif_count)
  if count * 29 > c:left() then malformed("heap count too large") end
  local s = string.format(" %d heap%s", count, count == 1 and "" or "s")
  for i = 1, count do
    local e = cursor(c:take(29, "heap"))
    local et = t:add(ddm, e.range, "Heap")
    local id = e:u4("heap id", et, F.hpif_heap)
    e:u8("timestamp", et, F.hpif_timestamp)
    e:u1("reason", et, F.hpif_reason)
    local max = e:u4("max size", et, F.hpif_max)
    local size = e:u4("heap size", et, F.hpif_size)
    local alloc = e:u4("bytes allocated", et, F.hpif_allocated)
    local objects = e:u4("objects allocated", et, F.hpif_objects)
    et:append_text(string.format(" %d", id))
    if i <= SHOWN_ITEMS then
      s = s .. (i == 1 and ": " or "; ") ..
        string.format("heap=%d size=%d alloc=%d objects=%d max=%d", id, size, alloc, objects, max)
    end
  end
  return s
end

local function segment(c, t)
  local heap = c:u4("heap id", t, F.heap_id)
  local unit = c:u1("allocation unit", t, F.seg_unit)
  if unit == 0 then malformed("allocation unit 0") end
  local addr = c:u4("address", t, F.seg_address)
  local off = c:u4("offset", t, F.seg_offset)
  local units = c:u4("length in units", t, F.seg_units)
  local runs = c:rest()
  if runs:len() % 2 ~= 0 then malformed("odd run data") end
  local covered, free, n = 0, 0, runs:len() / 2
  for i = 0, n - 1 do
    local state = runs(i * 2, 1):uint()
    local len = runs(i * 2 + 1, 1):uint() + 1
    covered = covered + len
    if state % 8 == 0 then free = free + len end
  end
  if covered ~= units then
    malformed(string.format("runs cover %d units of %d", covered, units))
  end
  t:add(F.seg_runs, runs, n)
  t:add(F.seg_free, runs, free)
  return string.format(" heap=%d unit=%d addr=%s off=%s units=%d runs=%d free=%d",
    heap, unit, hexnum(addr), hexnum(off), units, n, free)
end

local function artt(c, t)
  local version = c:u4("version", t, F.artt_version)
  local count = c:u4("timing count", t, F.artt_count)
  if count * 28 > c:left() then malformed("timing count too large") end
  local total, max = UInt64(0), UInt64(0)
  for _ = 1, count do
    c:take(12, "timing")
    c:u8("start")
    local d = c:u8("duration")
    total = total + d
    if d > max then max = d end
  end
  return string.format(" version=%d timings=%d total=%sns max=%sns", version, count, tostring(total), tostring(max))
end

-- One-field bodies: `u1`/`u4` read into a field, and the text for its value.
local function one(kind, what, f, text)
  return function(c, t)
    return text(c[kind](c, what, t, F[f]))
  end
end

local function signed(v)
  if v >= 2147483648 then return v - 4294967296 end
  return v
end

-- A body that differs by direction: `to_vm` for the form sent to the VM, `from_vm` for the other.
local function by_dir(to_vm_body, from_vm_body)
  return function(c, t, to_vm)
    if to_vm then return to_vm_body(c, t) end
    return from_vm_body(c, t)
  end
end

local function nothing() return "" end

local result = one("u1", "result", "result", function(v) return string.format(" result=%d", v) end)

-- Types whose VM-side form has no fixed fields: a zero-length one is not an "empty reply".
local VM_FORM_MAY_BE_EMPTY = { DBGD = true, HPGC = true, HPDS = true, REAL = true, NHGT = true,
  MPSE = true, SPSE = true, VURT = true, VUOP = true, DTRC = true, TEST = true }

local decode_body -- defined below; ZLIB calls it for the inflated chunk

-- Bodies by type: function(cursor, tree, to_vm) returning the text after the type.
local BODIES = {
  HELO = by_dir(one("u4", "server version", "helo_version", function(v) return string.format(" version=%d", v) end), helo_reply),
  DBGD = nothing,
  APNM = function(c, t)
    local s = " app=" .. quote(c:string("app name", t, F.apnm_app))
    if c:left() == 0 then return s end
    s = s .. string.format(" user=%d", c:u4("user id", t, F.apnm_user))
    if c:left() == 0 then return s end
    return s .. " pkg=" .. quote(c:string("package name", t, F.apnm_pkg))
  end,
  WAIT = one("u1", "reason", "wait_reason", function(v)
    if v == 0 then return " reason=0 (debugger)" end
    return string.format(" reason=%d", v)
  end),
  THEN = one("u1", "enable", "enable", on_off),
  THCR = function(c, t)
    local tid = c:u4("thread id", t, F.tid)
    return string.format(" tid=%d name=%s", tid, quote(c:string("thread name", t, F.thread_name)))
  end,
  THDE = one("u4", "thread id", "tid", function(v) return string.format(" tid=%d", v) end),
  THST = by_dir(function(c, t)
    if c:left() == 0 then return "" end
    return string.format(" interval=%dms", c:u4("interval", t, F.thst_interval))
  end, thst_reply),
  HPIF = by_dir(one("u1", "when", "when", function(v) return string.format(" when=%d (%s)", v, WHEN[v] or "?") end), hpif_reply),
  HPSG = by_dir(function(c, t)
    local when = c:u1("when", t, F.when)
    return string.format(" when=%d what=%d", when, c:u1("what", t, F.what))
  end, segment),
  HPSO = segment,
  HPST = one("u4", "heap id", "heap_id", function(v) return string.format(" heap=%d", v) end),
  HPGC = nothing,
  HPDU = by_dir(function(c, t) return " file=" .. quote(c:string("file", t, F.file)) end, result),
  REAE = one("u1", "enable", "enable", on_off),
  REAQ = by_dir(nothing, one("u1", "enabled", "enable", on_off)),
  MPRS = function(c, t)
    local buf, flags = c:u4("buffer size", t, F.buffer), c:u4("flags", t, F.trace_flags)
    return string.format(" buffer=%d flags=%s file=%s", buf, hexnum(flags), quote(c:string("file", t, F.file)))
  end,
  MPSS = function(c, t)
    local buf, flags = c:u4("buffer size", t, F.buffer), c:u4("flags", t, F.trace_flags)
    return string.format(" buffer=%d flags=%s", buf, hexnum(flags))
  end,
  SPSS = function(c, t)
    local buf, flags = c:u4("buffer size", t, F.buffer), c:u4("flags", t, F.trace_flags)
    return string.format(" buffer=%d flags=%s interval=%dus", buf, hexnum(flags), c:u4("interval", t, F.trace_interval))
  end,
  MPRQ = by_dir(nothing, one("u1", "mode", "trace_mode", function(v)
    local names = { [0] = "off", [1] = "tracing", [2] = "sampling" }
    return string.format(" mode=%d (%s)", v, names[v] or "?")
  end)),
  VULW = by_dir(nothing, function(c, t) return string_list(c, t, F.window, "window name") end),
  VURT = by_dir(function(c, t) return string.format(" op=%d", c:u4("op", t, F.op)) .. blob(c, t) end, blob),
  VUGL = one("u4", "enable", "enable", on_off),
  FEAT = by_dir(nothing, function(c, t) return string_list(c, t, F.feature, "feature") end),
  STAG = one("fourcc", "stage", "stage", function(v) return " stage=" .. v end),
  ARTT = artt,
  EXIT = one("u4", "status", "exit_status", function(v) return string.format(" status=%d", signed(v)) end),
  FAIL = function(c, t)
    local code = c:u4("code", t, F.fail_code)
    return string.format(" code=%d msg=%s", code, quote(c:string("message", t, F.fail_message)))
  end,
  STKL = by_dir(one("u4", "thread id", "tid", function(v) return string.format(" tid=%d", v) end), stkl_reply),
  DTRC = blob,
}
BODIES.MPRE = by_dir(nothing, result)
BODIES.THNM = BODIES.THCR
BODIES.NHSG = BODIES.HPSG
BODIES.HPEN = BODIES.HPST
BODIES.NHST = BODIES.HPST
BODIES.NHEN = BODIES.HPST
BODIES.VUOP = BODIES.VURT
BODIES.TEST = BODIES.DTRC
-- Requests with no fields to the VM, opaque data from it.
for _, ty in ipairs({ "HPDS", "REAL", "NHGT", "MPSE", "SPSE" }) do
  BODIES[ty] = by_dir(nothing, blob)
end

-- Every type jdwpmux knows by name (ChunkType::KNOWN), ZLIB included.
local KNOWN = { ZLIB = true }
for ty in pairs(BODIES) do KNOWN[ty] = true end

local function inflate(range, name)
  local ok, fn = pcall(function() return range.uncompress_zlib end)
  if not ok or fn == nil then
    ok, fn = pcall(function() return range.uncompress end)
  end
  if not ok or fn == nil then return nil end
  local ok2, tvb = pcall(fn, range, name)
  if ok2 then return tvb end
  return nil
end

-- ZLIB: `u4 original type, u4 original length, deflate`, or the same after a repeated
-- compressed length; zlib-wrapped or raw deflate.
local function zlib(c, t, to_vm, is_reply, allow)
  if not allow then malformed("ZLIB inside ZLIB") end
  local data = c.range
  local len = data:len()
  local compressed, orig_type_range, orig_len
  if len >= 12 and data(0, 4):uint() < 0x20000000 then
    compressed = c:u4("compressed length")
    t:add(F.zlib_compressed, data(0, 4))
    orig_type_range = c:take(4, "original type")
    orig_len = c:u4("original length")
  else
    orig_type_range = c:take(4, "original type")
    orig_len = c:u4("original length")
    compressed = c:left()
  end
  local orig_type = fourcc(orig_type_range)
  if orig_type == "ZLIB" then malformed("ZLIB inside ZLIB") end
  t:add(F.zlib_type, orig_type_range, orig_type)
  t:add(F.zlib_original, orig_type_range, orig_len)
  local stream = c:rest()
  if stream:len() ~= compressed then
    malformed(string.format("compressed length %d, %d bytes follow", compressed, stream:len()))
  end
  local inflated = stream:len() > 0 and inflate(stream, "Inflated " .. orig_type) or nil
  if inflated == nil or inflated:len() ~= orig_len then
    t:add_proto_expert_info(ex_zlib, inflated == nil and "cannot inflate" or "inflated to the wrong length")
    return string.format("%s [zlib %d->%d, not inflated]", orig_type, compressed, orig_len)
  end
  local it = t:add(ddm, inflated(), "Inflated " .. orig_type)
  local inner = decode_body(orig_type_range, inflated(), it, to_vm, is_reply, false)
  it:append_text(": " .. inner)
  return string.format("%s [zlib %d->%d]", inner, compressed, orig_len)
end

-- Decodes one chunk's data and returns its summary line (type included). Raises a
-- "malformed" error as jdwpmux would reject the chunk.
decode_body = function(type_range, data, t, to_vm, is_reply, allow_zlib)
  local ty = fourcc(type_range)
  local len = data:len()
  if is_reply and not to_vm and len == 0 and KNOWN[ty] and not VM_FORM_MAY_BE_EMPTY[ty] then
    t:add(F.empty_reply, data, true)
    return ty .. " (empty reply)"
  end
  local c = cursor(data)
  if ty == "ZLIB" then
    return zlib(c, t, to_vm, is_reply, allow_zlib)
  end
  local body = BODIES[ty]
  if body == nil then
    if len > 0 then t:add(F.data, data) end
    return string.format("Unknown %s", ty) .. blob_text(data)
  end
  local text = body(c, t, to_vm)
  c:done("the last field")
  return ty .. text
end

-- Every chunk of a DDM payload; returns the summary lines.
local function dissect_chunks(payload, tree, from_vm, is_reply, cut)
  local lines = {}
  local c = cursor(payload)
  local n = 0
  while c:left() > 0 do
    n = n + 1
    if n > MAX_CHUNKS then
      tree:add_proto_expert_info(ex_malformed, "too many chunks")
      break
    end
    if c:left() < 8 then
      if not cut then tree:add_proto_expert_info(ex_malformed, "a chunk header cut short") end
      break
    end
    local start = c.pos
    local type_range = c:take(4, "type")
    local declared, len_range = c:u4("length")
    local have = math.min(declared, c:left())
    local data = c:take(have, "data")
    local t = tree:add(ddm, payload(start, 8 + have))
    t:add(F.type, type_range, fourcc(type_range))
    t:add(F.length, len_range)
    local line
    if have < declared then
      local s = string.format("%s truncated len=%d have=%d", fourcc(type_range), declared, have)
      if have > 0 then s = s .. " head=" .. blob_text(data):match("head=(.*)") end
      t:add_proto_expert_info(cut and ex_truncated or ex_malformed, "chunk longer than its packet")
      line = s
    else
      local ok, res = pcall(decode_body, type_range, data, t, not from_vm, is_reply, true)
      if ok then
        line = res
      elseif type(res) == "table" and res.ddm_malformed then
        t:add_proto_expert_info(ex_malformed, res.ddm_malformed)
        line = "malformed DDM chunk: " .. fourcc(type_range) .. ": " .. res.ddm_malformed
      else
        error(res, 0)
      end
    end
    t:add(F.summary, payload(start, 8 + have), line)
    t:set_text("DDM " .. line)
    lines[#lines + 1] = line
    if have < declared then break end
  end
  return lines
end

------------------------------------------------------------------------------------------
-- JDWP: streams, commands and replies

-- Per capture: streams by their two endpoints (the side that sent the first handshake is
-- the debugger, the other the VM; pending commands by direction and id), and what each
-- reply was found to answer, by frame, direction and id (for the second pass and the GUI,
-- which dissect packets again with `visited` set).
local streams, answers, replied = {}, {}, {}

function jdwp.init()
  streams, answers, replied = {}, {}, {}
end

local function stream_of(pinfo)
  local a = tostring(pinfo.src) .. ":" .. pinfo.src_port
  local b = tostring(pinfo.dst) .. ":" .. pinfo.dst_port
  local key = a < b and (a .. " " .. b) or (b .. " " .. a)
  local s = streams[key]
  if s == nil then
    s = { server = nil, pending = { [true] = {}, [false] = {} } }
    streams[key] = s
  end
  return s
end

-- True when the packet comes from the VM (the server side of the stream).
local function from_vm(s, pinfo)
  local src = tostring(pinfo.src) .. ":" .. pinfo.src_port
  if s.server then return src == s.server end
  -- No handshake seen: the side on a port we were registered for is the VM.
  return pinfo.src_port == pinfo.match_uint
end

local function event_kind_of(tvb)
  if tvb:len() < HEADER_LEN + 6 then return nil end
  local kind = tvb(HEADER_LEN + 5, 1):uint()
  return EVENT_KINDS[kind] or string.format("KIND(%d)", kind)
end

local function dissect_pdu(tvb, pinfo, tree)
  local s = stream_of(pinfo)
  pinfo.cols.protocol = "JDWP"
  if tvb:len() >= #HANDSHAKE and tvb(0, #HANDSHAKE):string() == HANDSHAKE then
    if s.server == nil and not pinfo.visited then
      s.server = tostring(pinfo.dst) .. ":" .. pinfo.dst_port
    end
    local t = tree:add(jdwp, tvb(0, #HANDSHAKE))
    t:add(jf.handshake, tvb(0, #HANDSHAKE))
    pinfo.cols.info:append("Handshake ")
    return #HANDSHAKE
  end
  local t = tree:add(jdwp, tvb())
  local length = tvb(0, 4):uint()
  local id = tvb(4, 4):uint()
  local flags = tvb(8, 1):uint()
  t:add(jf.length, tvb(0, 4))
  t:add(jf.id, tvb(4, 4))
  t:add(jf.flags, tvb(8, 1))
  if length < HEADER_LEN then
    t:add_proto_expert_info(ex_jdwp, "length below the 11-byte header")
    return tvb:len()
  end
  local vm_side = from_vm(s, pinfo)
  local key = string.format("%d:%s:%d", pinfo.number, tostring(vm_side), id)
  local set, cmd, is_reply, info
  if flags == REPLY_FLAG then
    is_reply = true
    local err = tvb(9, 2):uint()
    t:add(jf.error, tvb(9, 2))
    t:add(jf.error_name, tvb(9, 2), error_name(err))
    if not pinfo.visited then
      local p = s.pending[not vm_side][id]
      if p then
        s.pending[not vm_side][id] = nil
        local d = math.max(0, pinfo.rel_ts - p.time)
        local secs = math.floor(d)
        answers[key] = { set = p.set, cmd = p.cmd, frame = p.frame, latency = NSTime.new(secs, math.floor((d - secs) * 1e9 + 0.5)) }
        replied[p.key] = pinfo.number
      end
    end
    local a = answers[key]
    info = string.format("Reply id=%d", id)
    if a then
      set, cmd = a.set, a.cmd
      t:add(jf.command, tvb(9, 2), command_name(set, cmd))
      t:add(jf.request_in, tvb(4, 4), a.frame)
      t:add(jf.latency, tvb(4, 4), a.latency)
      info = info .. " " .. command_name(set, cmd)
    end
    info = info .. " " .. error_name(err)
  else
    is_reply = false
    set, cmd = tvb(9, 1):uint(), tvb(10, 1):uint()
    t:add(jf.cmdset, tvb(9, 1))
    t:add(jf.cmd, tvb(10, 1))
    t:add(jf.command, tvb(9, 2), command_name(set, cmd))
    if not pinfo.visited and set ~= EVENT_SET then
      s.pending[vm_side][id] = { set = set, cmd = cmd, frame = pinfo.number, time = pinfo.rel_ts, key = key }
    end
    if replied[key] then
      t:add(jf.reply_in, tvb(4, 4), replied[key])
    end
    info = string.format("Command id=%d %s", id, command_name(set, cmd))
    if set == EVENT_SET then
      local ev = event_kind_of(tvb)
      if ev then
        t:add(jf.event_kind, tvb(HEADER_LEN + 5, 1), ev)
        info = info .. " " .. ev
      end
    end
  end
  local body_len = tvb:len() - HEADER_LEN
  if body_len > 0 then
    local payload = tvb(HEADER_LEN, body_len)
    if set == DDM_SET and cmd == 1 then
      local cut = tvb:reported_length_remaining() > tvb:len() or length > tvb:len()
      local lines = dissect_chunks(payload, t, vm_side, is_reply, cut)
      if #lines > 0 then
        info = info .. ": " .. table.concat(lines, "; ")
      end
    else
      t:add(jf.data, payload)
    end
  end
  t:append_text(", " .. info)
  pinfo.cols.info:append(info .. " ")
  return tvb:len()
end

-- Length of the PDU at `offset`: the 14-byte handshake or a JDWP packet.
local function pdu_length(tvb, pinfo, offset)
  local avail = tvb:len() - offset
  local n = math.min(avail, #HANDSHAKE)
  if tvb(offset, n):string() == HANDSHAKE:sub(1, n) then
    return #HANDSHAKE
  end
  local length = tvb(offset, 4):uint()
  if length < HEADER_LEN then
    return avail -- not JDWP: taken whole, and marked malformed
  end
  return length
end

function jdwp.dissector(tvb, pinfo, tree)
  pinfo.cols.info:clear()
  dissect_tcp_pdus(tvb, tree, HEADER_LEN, pdu_length, dissect_pdu, true)
  return tvb:len()
end

-- A stream that opens with the handshake is JDWP, whatever its ports.
local function heuristic(tvb, pinfo, tree)
  if tvb:len() < #HANDSHAKE or tvb(0, #HANDSHAKE):string() ~= HANDSHAKE then
    return false
  end
  pinfo.conversation = jdwp
  jdwp.dissector(tvb, pinfo, tree)
  return true
end

jdwp:register_heuristic("tcp", heuristic)

local tcp_port = DissectorTable.get("tcp.port")
local registered = nil

local function register_ports()
  if registered then tcp_port:remove(registered, jdwp) end
  registered = prefs.ports
  tcp_port:add(registered, jdwp)
end

jdwp.prefs_changed = register_ports
tcp_port:add_for_decode_as(jdwp)
register_ports()
