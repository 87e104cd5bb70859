// The jdwpmux monitor page: plain JavaScript, no framework, no build step.
// Data: /api/events (the VM list, server-sent events), /api/vms/ID/events (threads,
// packets and traffic figures of the VM shown), /api/vms/ID/heap, and POSTs for "make current" and "GC".
// Everything that came from a VM or a debugger goes into the page as text (textContent).
"use strict";

const TOKEN = document.querySelector('meta[name="jdwpmux-token"]').content;
const MAX_PACKETS = 100;
const STATES = ["running", "sleeping", "monitor", "waiting", "initializing", "starting", "native", "vmwait"];

const ui = {
  vms: [],            // the last list, as /api/vms gives it
  hosts: [],          // the --ssh hosts' rows, as /api/hosts gives them
  nowMs: 0,           // the daemon's clock at that list
  rates: new Map(),   // "vmId/conn" -> commands per second
  seen: new Map(),    // "vmId/conn" -> {commands, at}
  sort: { key: "port", dir: 1 },
  filter: "",
  shown: null,        // id of the VM shown beside (or below) the list
  stream: null,       // its EventSource
  packets: [],        // its last packets, oldest first
  rows: { vms: new Map(), threads: new Map(), debuggers: new Map(), traffic: new Map(), heaps: new Map() },
  heapFor: null,
};

const $ = (id) => document.getElementById(id);

/** An element with text (never HTML) and optional class, title and data attributes. */
function el(tag, text, cls, attrs) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

function row(cells) {
  const tr = document.createElement("tr");
  for (const c of cells) tr.appendChild(c instanceof Node ? c : el("td", c ?? "-"));
  return tr;
}

const num = (v) => el("td", v ?? "-", "num");

/**
 * Brings a table body in line with `items`, keeping each item's row (found by `keyOf`)
 * and touching only the cells whose text or class changed: a row never disappears under
 * a click, and a thousand unchanged rows cost nothing. `cellsOf` gives [text, class] per
 * cell (and a tooltip as a third element); a cell whose text changes while it has
 * `blink` in its class flashes once.
 */
function sync(tbody, rows, items, keyOf, cellsOf) {
  const keep = new Set();
  let prev = null;
  for (const item of items) {
    const key = String(keyOf(item));
    keep.add(key);
    let tr = rows.get(key);
    const cells = cellsOf(item);
    if (!tr) {
      tr = document.createElement("tr");
      tr.dataset.key = key;
      for (let i = 0; i < cells.length; i++) tr.appendChild(document.createElement("td"));
      rows.set(key, tr);
    }
    cells.forEach(([text, cls, tip], i) => {
      const td = tr.cells[i];
      const t = text === null || text === undefined ? "-" : String(text);
      if (tip !== undefined && td.title !== tip) td.title = tip;
      const c = (cls || "").replace("blink", "").trim();
      const changed = td.textContent !== t;
      if (changed) td.textContent = t;
      if (td.className.replace("changed", "").trim() !== c) td.className = c;
      if (changed && (cls || "").includes("blink") && td.dataset.seen) {
        td.classList.remove("changed");
        void td.offsetWidth; // restart the animation
        td.classList.add("changed");
      }
      td.dataset.seen = "1";
    });
    const want = prev ? prev.nextSibling : tbody.firstChild;
    if (want !== tr) tbody.insertBefore(tr, want);
    prev = tr;
  }
  for (const [key, tr] of rows) {
    if (!keep.has(key)) {
      tr.remove();
      rows.delete(key);
    }
  }
}

function bytes(n) {
  if (n === null || n === undefined) return "-";
  const units = ["B", "KiB", "MiB", "GiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n : n.toFixed(1)) + " " + units[i];
}

function ago(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return s + "s";
  if (s < 3600) return Math.floor(s / 60) + "m" + String(s % 60).padStart(2, "0") + "s";
  return Math.floor(s / 3600) + "h" + String(Math.floor((s % 3600) / 60)).padStart(2, "0") + "m";
}

function clock(ms) {
  const d = new Date(ms);
  const p = (n, w) => String(n).padStart(w || 2, "0");
  return p(d.getHours()) + ":" + p(d.getMinutes()) + ":" + p(d.getSeconds()) + "." + p(d.getMilliseconds(), 3);
}

function latency(us) {
  if (us === null || us === undefined) return "";
  return us < 1000 ? us + " µs" : (us / 1000).toFixed(us < 10000 ? 2 : 1) + " ms";
}

/** Three significant digits, as `jdwpmux stats` prints them: "950µs", "12.3ms", "1.23s". */
function duration(us) {
  if (us < 1000) return us + "µs";
  const [v, unit] = us < 1e6 ? [us / 1e3, "ms"] : [us / 1e6, "s"];
  return (v >= 99.95 ? v.toFixed(0) : v >= 9.995 ? v.toFixed(1) : v.toFixed(2)) + unit;
}

function rate(r) {
  return r === undefined ? "-" : r < 10 ? r.toFixed(1) : Math.round(r).toString();
}

function setLink(text, bad) {
  const l = $("link");
  l.textContent = text;
  l.classList.toggle("bad", !!bad);
}

async function post(path, body) {
  const r = await fetch(path, {
    method: "POST",
    headers: { "X-Jdwpmux-Token": TOKEN, "Content-Type": "application/json" },
    body: JSON.stringify(body || {}),
  });
  return answer(r);
}

async function getJson(path) {
  return answer(await fetch(path));
}

async function answer(r) {
  const text = await r.text();
  let data = null;
  try { data = JSON.parse(text); } catch (_) { /* a refusal is plain text */ }
  if (!r.ok) throw new Error((data && data.error) || text.trim() || r.status + " " + r.statusText);
  return data;
}

// ---- The VM list -------------------------------------------------------------------

function vmRate(vm) {
  let sum = 0, any = false;
  for (const d of vm.debuggers) {
    const r = ui.rates.get(vm.id + "/" + d.conn);
    if (r !== undefined) { sum += r; any = true; }
  }
  return any ? sum : undefined;
}

const SORT_VALUE = {
  current: (v) => (v.current ? 0 : 1),
  port: (v) => v.debugger_port,
  host: (v) => v.host,
  pid: (v) => v.pid,
  app: (v) => v.app,
  vm: (v) => v.vm_ident,
  ddm: (v) => (v.ddm === true ? 0 : v.ddm === false ? 1 : 2),
  debuggers: (v) => v.debuggers.length,
  rate: (v) => vmRate(v),
  state: (v) => vmState(v),
  addr: (v) => v.addr,
};

/**
 * A VM's state as `list` shows it: the daemon derives "stopped" (a debugger holds it
 * suspended) and "link down" (its host's link is not up) in one place (`VmState::shown`).
 */
function vmState(v) {
  return v.state;
}

function compare(a, b) {
  const f = SORT_VALUE[ui.sort.key];
  const x = f(a), y = f(b);
  const missing = (v) => v === null || v === undefined;
  if (missing(x) || missing(y)) return missing(x) - missing(y); // unknowns last
  // Natural order for text: app.9 before app.10.
  const c = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y), undefined, { numeric: true });
  return c * ui.sort.dir || a.id - b.id;
}

function matches(vm) {
  if (!ui.filter) return true;
  const peers = vm.debuggers.map((d) => d.peer);
  const hay = [vm.debugger_port, vm.host, placeOf(vm), vm.pid, vm.app, vm.vm_ident, vm.addr, vmState(vm), vm.ddm ? "ddm" : "", vm.note || "", ...peers].join(" ").toLowerCase();
  return ui.filter.split(/\s+/).every((w) => hay.includes(w));
}

function onVms(msg) {
  for (const vm of msg.vms) {
    for (const d of vm.debuggers) {
      const key = vm.id + "/" + d.conn;
      const prev = ui.seen.get(key);
      if (prev && msg.now_ms > prev.at) ui.rates.set(key, ((d.commands - prev.commands) * 1000) / (msg.now_ms - prev.at));
      ui.seen.set(key, { commands: d.commands, at: msg.now_ms });
    }
  }
  ui.vms = msg.vms;
  ui.hosts = msg.hosts || [];
  ui.nowMs = msg.now_ms;
  renderVms();
  renderHosts();
  renderShown();
}

/**
 * A debugger's invokes that wait for another debugger to resume their thread, and its resumes
 * whose threads another debugger keeps suspended, as `list` says them: "thread 0x1a5: an
 * invoke waits for #2 127.0.0.1:40312 to resume it, for 12s"; "" if none.
 */
function waitsText(d) {
  const names = (hs) => hs.map((h) => "#" + h.conn + " " + h.peer).join(" and ") || "another debugger";
  const invokes = (d.waits || []).map((w) => "thread 0x" + w.thread.toString(16) + ": an invoke waits for "
    + names(w.waits_for) + " to resume it, for " + ago(ui.nowMs - w.since_ms));
  const held = (d.still_held || []).map((h) => (h.thread === null
    ? "threads stay suspended after its resume of the VM: " + names(h.held_by) + " holds the VM suspended"
    : "thread 0x" + h.thread.toString(16) + " stays suspended after its resume: " + names(h.held_by) + " holds it")
    + ", for " + ago(ui.nowMs - h.since_ms));
  return invokes.concat(held).join("; ");
}

/** One line per debugger: "#3 127.0.0.1:40312, attached 2m05s ago, 1.5 cmd/s". */
function debuggersTip(vm) {
  return vm.debuggers.map((d) => "#" + d.conn + " " + d.peer + ", attached " + ago(ui.nowMs - d.since_ms) + " ago, "
    + rate(ui.rates.get(vm.id + "/" + d.conn)) + " cmd/s").join("\n");
}

/** Where a VM runs on its host (a container, a pod, a network namespace), or "". */
function placeOf(v) {
  return (v.process && v.process.place) || "";
}

/** What is said of a VM whose agent listens on every address of its host, or "". */
function exposedOf(v) {
  return (v.process && v.process.exposed) || "";
}

function renderVms() {
  const shown = ui.vms.filter(matches).sort(compare);
  sync($("vms").tBodies[0], ui.rows.vms, shown, (v) => v.id, (v) => [
    [v.current ? "★" : "", "current"],
    [v.debugger_port, "num"],
    [v.host + (placeOf(v) ? " · " + placeOf(v) : ""), "host", [v.host, placeOf(v)].filter(Boolean).join(": ")],
    [v.pid, "num"],
    [(v.app || "-") + (v.waiting_for_debugger ? " (waiting)" : ""), "app", (v.app ? v.app + " at " : "") + v.addr],
    [v.vm_ident || "-", "ident", v.vm_ident || ""],
    [v.ddm === true ? "yes" : v.ddm === false ? "no" : "?"],
    [v.debuggers.length || "-", "num", debuggersTip(v)],
    [rate(vmRate(v)), "num"],
    [vmState(v) + (exposedOf(v) ? " · all addresses" : ""), "state vm-" + vmState(v).replace(" ", "-") + (exposedOf(v) ? " exposed" : ""),
      [v.note || (vmState(v) === "stopped" ? "a debugger holds it suspended (a breakpoint, a step or Suspend)" : ""), exposedOf(v)].filter(Boolean).join("\n")],
  ]);
  for (const tr of ui.rows.vms.values()) {
    tr.dataset.id = tr.dataset.key;
    tr.classList.toggle("shown", Number(tr.dataset.key) === ui.shown);
  }
  $("count").textContent = shown.length === ui.vms.length ? String(ui.vms.length) : shown.length + " of " + ui.vms.length;
  $("no-vms").hidden = ui.vms.length > 0;
  const current = ui.vms.find((v) => v.current);
  const debuggers = ui.vms.reduce((n, v) => n + v.debuggers.length, 0);
  const plural = (n, one) => n + " " + one + (n === 1 ? "" : "s");
  $("summary").textContent = plural(ui.vms.length, "VM") + ", " + plural(debuggers, "debugger") + (current ? ", current: " + currentName(current) : "");
  for (const th of $("vms").tHead.rows[0].cells) {
    th.classList.toggle("asc", th.dataset.key === ui.sort.key && ui.sort.dir > 0);
    th.classList.toggle("desc", th.dataset.key === ui.sort.key && ui.sort.dir < 0);
  }
}

/**
 * The current VM as the header names it: its app, with its host when a VM of that name runs
 * on another host too (a local Worker and a remote one), or its pid when on the same host.
 */
function currentName(c) {
  const name = (v) => v.app || v.addr;
  const same = ui.vms.filter((v) => v.id !== c.id && name(v) === name(c));
  if (same.some((v) => v.host !== c.host)) return name(c) + " on " + c.host;
  if (same.length > 0 && c.pid) return name(c) + " pid " + c.pid;
  return name(c);
}

/** A row per --ssh host, and under it why it is down or refused (with what to do) or that it runs no JVM to debug. */
function renderHosts() {
  $("hosts-box").hidden = ui.hosts.length === 0;
  const tbody = $("hosts").tBodies[0];
  const rows = [];
  for (const h of ui.hosts) {
    const tr = row([
      el("td", h.host, "host", { title: h.dest }),
      el("td", h.state, "state host-" + h.state),
      num(h.last_scan_ms ? h.jvms : null),
      el("td", h.last_scan_ms ? ago(ui.nowMs - h.last_scan_ms) + " ago" : "never"),
    ]);
    tr.dataset.host = h.host;
    rows.push(tr);
    const why = h.state === "down" || h.state === "refused" || h.state === "busy" ? h.reason : h.note;
    if (why) {
      const note = el("tr", null, "why why-" + h.state);
      note.appendChild(el("td", why, null, { colspan: "4" }));
      rows.push(note);
    }
  }
  tbody.replaceChildren(...rows);
}

function openList() {
  const es = new EventSource("/api/events");
  es.addEventListener("vms", (e) => { setLink("live"); onVms(JSON.parse(e.data)); });
  es.onerror = () => {
    if (es.readyState === EventSource.CLOSED) {
      setLink("disconnected: open the address the daemon logged (monitor at …?token=…)", true);
    } else {
      setLink("reconnecting…", true);
    }
  };
}

// ---- The VM shown ------------------------------------------------------------------

function show(id) {
  if (ui.shown === id) return;
  if (ui.stream) ui.stream.close();
  ui.shown = id;
  ui.packets = [];
  ui.heapFor = null;
  renderTraffic(null);
  for (const t of ["threads", "heaps"]) {
    ui.rows[t].clear();
    $(t).tBodies[0].replaceChildren();
  }
  renderPackets();
  $("heap-figure").hidden = true;
  $("threads-info").textContent = "";
  $("heap-status").textContent = "";
  $("notice").hidden = true;
  if (id === null) { renderShown(); return; }
  const es = new EventSource("/api/vms/" + id + "/events");
  es.addEventListener("threads", (e) => renderThreads(JSON.parse(e.data)));
  es.addEventListener("packets", (e) => addPackets(JSON.parse(e.data).packets));
  es.addEventListener("stats", (e) => renderTraffic(JSON.parse(e.data)));
  es.addEventListener("notice", (e) => {
    const text = JSON.parse(e.data).text;
    $("notice").textContent = text;
    $("notice").hidden = !text;
  });
  ui.stream = es;
  renderVms();
  renderShown();
}

function shownVm() {
  return ui.vms.find((v) => v.id === ui.shown);
}

function renderShown() {
  const vm = shownVm();
  $("pick").hidden = !!vm;
  $("vm").hidden = !vm;
  if (!vm) return;
  $("vm-title").textContent = (vm.app || vm.addr) + (vm.pid ? " (pid " + vm.pid + ")" : "") + (vm.host !== "local" ? " on " + vm.host : "");
  $("vm-facts").textContent = [
    vm.vm_ident || "VM not identified yet",
    "state " + vmState(vm),
    vm.ddm === true ? "DDM-aware" : vm.ddm === false ? "no DDM" : "DDM unknown",
    "debugger port " + (vm.debugger_port ?? "-"),
    "address " + vm.addr + (vm.host !== "local" ? " on " + vm.host : "") + (placeOf(vm) ? " in " + placeOf(vm) : ""),
  ].concat(vm.process ? [
    "agent address=" + vm.process.agent + (vm.process.suspend ? ", suspend=y" : "") + " (" + vm.process.agent_from + ")",
    "user " + (vm.process.user || "?"),
  ] : []).join(" · ") + (vm.note ? " · " + vm.note : "") + (exposedOf(vm) ? " · " + exposedOf(vm) : "");
  $("make-current").hidden = vm.current;
  $("current-mark").hidden = !vm.current;
  $("threads-panel").hidden = vm.ddm !== true;
  $("heap-panel").hidden = vm.ddm !== true;
  if (vm.ddm === true && ui.heapFor !== vm.id && vm.state === "ready") {
    ui.heapFor = vm.id;
    loadHeap(getJson("/api/vms/" + vm.id + "/heap"), "summary");
  }
  const perSecond = (d) => rate(ui.rates.get(vm.id + "/" + d.conn));
  sync($("debuggers").tBodies[0], ui.rows.debuggers, vm.debuggers, (d) => vm.id + "/" + d.conn, (d) => [
    [d.conn, "num"], [d.peer], [ago(ui.nowMs - d.since_ms) + " ago"], [d.ddm ? "yes" : "no"],
    [d.event_requests, "num"], [d.suspensions, "num"], [d.commands, "num"], [perSecond(d), "num"],
    [waitsText(d) || "-"],
  ]);
  $("no-debuggers").hidden = vm.debuggers.length > 0;
}

/**
 * A command's error replies: red when any is trouble; routine answers ("there is none",
 * such as ABSENT_INFORMATION to SourceDebugExtension, which jdb asks of every class) are
 * said as such and not red.
 */
function errorsCell(c) {
  const routine = c.routine || 0;
  if (!c.errors) return [0, "num"];
  if (routine === c.errors) return [c.errors + " routine", "num"];
  return [c.errors + (routine ? " (" + routine + " routine)" : ""), "num error"];
}

/**
 * The traffic figures (`stats` events, the same as `jdwpmux stats`): a row per debugger
 * (and the proxy's own requests) with its totals, then a row per command it sent with the
 * reply latency percentiles.
 */
function renderTraffic(report) {
  const sources = report ? report.sources : [];
  const label = (s) => s.source + (s.conn !== null ? " #" + s.conn : "") + (s.peer ? " " + s.peer : "");
  const key = (s) => s.source + "/" + (s.conn ?? "");
  const rows = [];
  for (const s of sources) {
    rows.push({ key: key(s), cells: [[label(s), "source"], [s.count, "num"], [bytes(s.bytes_out), "num"], [bytes(s.bytes_in), "num"],
      [duration(s.total_us), "num"], ["", "num"], ["", "num"], ["", "num"], ["", "num"],
      [s.commands.reduce((n, c) => n + c.errors, 0), "num"]] });
    for (const c of s.commands) {
      const lat = (us) => [c.replies ? duration(us) : "-", "num"];
      rows.push({ key: key(s) + "/" + c.cmd_set + "." + c.cmd, cells: [[c.command, "command-name"], [c.count, "num"],
        [bytes(c.bytes_out), "num"], [bytes(c.bytes_in), "num"], lat(c.total_us), lat(c.p50_us), lat(c.p90_us), lat(c.p99_us),
        lat(c.max_us), errorsCell(c)] });
    }
  }
  sync($("traffic").tBodies[0], ui.rows.traffic, rows, (r) => r.key, (r) => r.cells);
  for (const tr of ui.rows.traffic.values()) tr.classList.toggle("source-row", tr.dataset.key.split("/").length === 2);
  $("traffic").hidden = rows.length === 0;
  $("no-traffic").hidden = rows.length > 0;
  $("traffic-info").textContent = report ? "since the VM's session started, " + ago(report.seconds * 1000) + " ago" : "";
}

function renderThreads(t) {
  const yesNo = (b) => (b === null ? "-" : b ? "yes" : "no");
  sync($("threads").tBodies[0], ui.rows.threads, t.threads, (th) => th.tid, (th) => {
    const state = th.state || (th.state_code === null ? "-" : "state " + th.state_code);
    const cls = "state blink " + (STATES.includes(th.state) ? "st-" + th.state : "st-other");
    return [[th.tid, "num"], [th.sys_tid, "num"], [th.name, "name"], [state, cls],
      [yesNo(th.suspended)], [th.utime, "num"], [th.stime, "num"], [yesNo(th.daemon)]];
  });
  $("threads-info").textContent = t.threads.length + " threads, updated " + clock(Date.now());
}

function party(p, side) {
  if (p === "debugger") return "debugger" + (side.conn !== null && side.conn !== undefined ? " #" + side.conn : "");
  return p === "vm" ? "VM" : "proxy";
}

function addPackets(list) {
  ui.packets.push(...list);
  if (ui.packets.length > MAX_PACKETS) ui.packets.splice(0, ui.packets.length - MAX_PACKETS);
  renderPackets();
}

function renderPackets() {
  const onlyDebuggers = $("only-debuggers").checked;
  const shown = ui.packets.filter((p) => !onlyDebuggers || p.from === "debugger" || p.to === "debugger");
  const rows = shown.reverse().map((p) => {
    const what = (p.command || (p.reply ? "reply" : "?")) + (p.chunk ? " " + p.chunk : "");
    const err = p.reply ? p.error : "";
    return row([
      el("td", clock(p.at_ms), "time"),
      el("td", party(p.from, p) + " → " + party(p.to, p)),
      num(p.id),
      el("td", what, p.reply ? "reply" : "command"),
      el("td", err, err && err !== "NONE" ? "error" : ""),
      num(p.len),
      num(latency(p.latency_us)),
    ]);
  });
  $("packets").tBodies[0].replaceChildren(...rows);
  // An empty table says why it is empty.
  $("no-packets").hidden = rows.length > 0;
  $("no-packets").textContent = ui.packets.length === 0
    ? "No packets since this page opened: they show here as the VM and its debuggers talk."
    : "None of the last packets is a debugger's (untick the box to see the proxy's own).";
}

async function loadHeap(pending, what) {
  const id = ui.shown;
  $("heap-status").textContent = what === "gc" ? "asking for a GC…" : "";
  try {
    const h = await pending;
    if (ui.shown !== id) return;
    sync($("heaps").tBodies[0], ui.rows.heaps, h.heaps, (x) => x.heap_id, (x) => [
      [x.heap_id, "num"], [bytes(x.max_bytes), "num"], [bytes(x.size_bytes), "num"], [bytes(x.allocated_bytes), "num"],
      [x.size_bytes ? ((100 * x.allocated_bytes) / x.size_bytes).toFixed(1) + " %" : "-", "num"],
      [x.objects, "num"], [x.timestamp_ms ? new Date(x.timestamp_ms).toLocaleTimeString() : "-"],
    ]);
    const pic = h.picture;
    $("heap-figure").hidden = !pic;
    $("heap-hint").hidden = !!pic;
    if (pic) {
      $("heap-map").src = pic.url;
      $("heap-map").width = pic.width;
      $("heap-map").height = pic.height;
      $("heap-caption").textContent = "heap map after the GC at " + clock(pic.taken_ms) + " (" + pic.width + "×" + pic.height + ")";
    }
    $("heap-status").textContent = what === "gc" ? "refreshed at " + clock(Date.now()) : "";
  } catch (e) {
    if (ui.shown === id) $("heap-status").textContent = "heap: " + e.message;
  }
}

// ---- Wiring --------------------------------------------------------------------------

function fromHash() {
  const m = /vm=(\d+)/.exec(location.hash);
  show(m ? Number(m[1]) : null);
}

document.addEventListener("DOMContentLoaded", () => {
  $("vms").tBodies[0].addEventListener("click", (e) => {
    const tr = e.target.closest("tr[data-id]");
    if (tr) location.hash = "vm=" + tr.dataset.id;
  });
  $("vms").tHead.addEventListener("click", (e) => {
    const key = e.target.closest("th") && e.target.closest("th").dataset.key;
    if (!key) return;
    ui.sort = { key, dir: ui.sort.key === key ? -ui.sort.dir : 1 };
    renderVms();
  });
  $("filter").addEventListener("input", (e) => { ui.filter = e.target.value.trim().toLowerCase(); renderVms(); });
  $("make-current").addEventListener("click", async () => {
    const id = ui.shown;
    try {
      const vm = await post("/api/vms/" + id + "/select");
      for (const v of ui.vms) v.current = v.id === vm.id;
      renderVms();
      renderShown();
    } catch (e) {
      $("notice").textContent = "make current: " + e.message;
      $("notice").hidden = false;
    }
  });
  $("gc").addEventListener("click", async () => {
    $("gc").disabled = true;
    try {
      await loadHeap(post("/api/vms/" + ui.shown + "/gc"), "gc");
    } finally {
      $("gc").disabled = false;
    }
  });
  $("only-debuggers").addEventListener("change", renderPackets);
  window.addEventListener("hashchange", fromHash);
  openList();
  fromHash();
});
