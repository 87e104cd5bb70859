//! The tables behind `stats`: per source (a debugger connection, or the proxy itself) and
//! per command, counts, bytes and a reply latency histogram; DDM chunks by type; error
//! replies by code. Every table has a fixed limit, so a long-running daemon or a hostile
//! debugger cannot make them grow without end.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, SystemTime};

use rustc_hash::FxHashMap;

use super::histogram::LatencyHistogram;
use super::report::{ChunkRow, CommandRow, ErrorRow, SourceReport, VmReport};
use crate::jdwp::names::{display_command, display_error};

/// Sources kept apart; beyond, the oldest debugger's figures are folded into one
/// "earlier debuggers" source.
pub const MAX_SOURCES: usize = 64;
/// Departed debuggers whose figures stay apart; an older one joins "earlier debuggers" when
/// another leaves, so the figures of a VM that debuggers keep coming to and leaving do not
/// grow with each of them (about 1 KiB per command a debugger used).
pub const KEPT_DEPARTED: usize = 4;
/// Commands kept apart per source; beyond, they are counted together as "other commands".
pub const MAX_COMMANDS: usize = 256;
/// DDM chunk types kept apart; beyond, counted together under [`OTHER_CHUNK`].
pub const MAX_CHUNK_TYPES: usize = 256;
/// Error codes kept apart; beyond, counted together under [`OTHER_ERROR`].
pub const MAX_ERROR_CODES: usize = 256;

/// The row of commands beyond [`MAX_COMMANDS`]: command 0, which JDWP never uses.
const OTHER_COMMAND: (u8, u8) = (0, 0);
/// Chunk type of the row beyond [`MAX_CHUNK_TYPES`] ("????").
pub const OTHER_CHUNK: u32 = u32::from_be_bytes(*b"????");
/// Error code of the row beyond [`MAX_ERROR_CODES`].
pub const OTHER_ERROR: u16 = u16::MAX;

/// Who sent a request and waits for its reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Who {
    /// A debugger, by its connection number.
    Debugger(u64),
    /// The proxy's own requests (identification, DDM, clean-up).
    Proxy,
    /// Debuggers folded together once there were too many to keep apart.
    Earlier,
}

/// Figures for one command from one source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandStats {
    pub count: u64,
    /// Bytes of the commands (JDWP length, header included).
    pub bytes_out: u64,
    pub replies: u64,
    /// Bytes of the replies.
    pub bytes_in: u64,
    /// Replies with a non-zero error code.
    pub errors: u64,
    /// Of those, the routine answers (`routine`: "there is none").
    pub routine: u64,
    pub latency: LatencyHistogram,
}

impl CommandStats {
    fn merge(&mut self, o: &CommandStats) {
        self.count += o.count;
        self.bytes_out += o.bytes_out;
        self.replies += o.replies;
        self.bytes_in += o.bytes_in;
        self.errors += o.errors;
        self.routine += o.routine;
        self.latency.merge(&o.latency);
    }
}

#[derive(Debug, Clone)]
struct Source {
    who: Who,
    peer: Option<SocketAddr>,
    /// At most `MAX_COMMANDS` keys, so a fast hash is safe with keys a peer picks.
    commands: FxHashMap<(u8, u8), CommandStats>,
}

impl Source {
    fn row(&mut self, set: u8, cmd: u8) -> &mut CommandStats {
        let key = if self.commands.len() >= MAX_COMMANDS && !self.commands.contains_key(&(set, cmd)) {
            OTHER_COMMAND
        } else {
            (set, cmd)
        };
        self.commands.entry(key).or_default()
    }
}

/// Counts of one DDM chunk type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct ChunkCount {
    count: u64,
    bytes: u64,
}

/// Traffic figures of one VM (live) or of one VM's part of a capture.
#[derive(Debug, Clone)]
pub struct TrafficStats {
    /// Off only to measure what counting costs (see [`super::STATS_ENV`]).
    enabled: bool,
    /// When a live table started counting.
    since: Option<SystemTime>,
    /// At most MAX_SOURCES, in order of appearance.
    sources: Vec<Source>,
    /// Debuggers that have left and are still kept apart, the oldest first.
    departed: VecDeque<u64>,
    ddm: HashMap<u32, ChunkCount>,
    errors: BTreeMap<u16, u64>,
    near: super::near::NearStats,
}

impl Default for TrafficStats {
    fn default() -> Self {
        TrafficStats {
            enabled: true,
            since: None,
            sources: Vec::new(),
            departed: VecDeque::new(),
            ddm: HashMap::new(),
            errors: BTreeMap::new(),
            near: Default::default(),
        }
    }
}

impl TrafficStats {
    pub fn new() -> Self {
        Self::default()
    }

    /// A table for a daemon's session: counting from now, unless turned off by the
    /// environment (see [`super::enabled`]).
    pub fn live() -> Self {
        TrafficStats { enabled: super::enabled(), since: Some(SystemTime::now()), ..Self::default() }
    }

    /// The figures since [`TrafficStats::live`] made the table, until now.
    pub fn live_report(&self, vm: &str) -> VmReport {
        self.report(vm, self.since, Some(SystemTime::now()))
    }

    fn source(&mut self, who: Who) -> &mut Source {
        if let Some(i) = self.sources.iter().position(|s| s.who == who) {
            return &mut self.sources[i];
        }
        // The first fold also makes the "earlier debuggers" source, hence a loop.
        while self.sources.len() >= MAX_SOURCES && self.fold_oldest_debugger() {}
        self.sources.push(Source { who, peer: None, commands: FxHashMap::default() });
        let last = self.sources.len() - 1;
        &mut self.sources[last]
    }

    /// Makes room: the debugger with the lowest connection number joins "earlier debuggers".
    /// False when there is no debugger to fold.
    fn fold_oldest_debugger(&mut self) -> bool {
        let oldest = self
            .sources
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s.who {
                Who::Debugger(c) => Some((c, i)),
                _ => None,
            })
            .min();
        let Some((_, i)) = oldest else { return false };
        self.fold_at(i);
        true
    }

    /// A debugger left: its figures stay apart among the last [`KEPT_DEPARTED`] to leave;
    /// the one that left before them joins "earlier debuggers".
    pub fn debugger_left(&mut self, conn: u64) {
        if self.departed.contains(&conn) || !self.sources.iter().any(|s| s.who == Who::Debugger(conn)) {
            return;
        }
        self.departed.push_back(conn);
        while self.departed.len() > KEPT_DEPARTED {
            let Some(old) = self.departed.pop_front() else { break };
            if let Some(i) = self.sources.iter().position(|s| s.who == Who::Debugger(old)) {
                self.fold_at(i);
            }
        }
    }

    /// Moves the figures of source `i` into "earlier debuggers".
    fn fold_at(&mut self, i: usize) {
        let gone = self.sources.remove(i);
        if let Who::Debugger(c) = gone.who {
            self.departed.retain(|d| *d != c);
        }
        let earlier = match self.sources.iter().position(|s| s.who == Who::Earlier) {
            Some(e) => &mut self.sources[e],
            None => {
                self.sources.push(Source { who: Who::Earlier, peer: None, commands: FxHashMap::default() });
                let last = self.sources.len() - 1;
                &mut self.sources[last]
            }
        };
        for ((set, cmd), c) in &gone.commands {
            earlier.row(*set, *cmd).merge(c);
        }
    }

    /// A command of `len` bytes sent on behalf of `who` (`peer`: a debugger's address).
    pub fn command(&mut self, who: Who, peer: Option<SocketAddr>, set: u8, cmd: u8, len: u32) {
        if !self.enabled {
            return;
        }
        let s = self.source(who);
        if s.peer.is_none() {
            s.peer = peer;
        }
        let row = s.row(set, cmd);
        row.count += 1;
        row.bytes_out += u64::from(len);
    }

    /// The reply to a `set`/`cmd` command of `who`, `latency` after the command left.
    pub fn reply(&mut self, who: Who, set: u8, cmd: u8, error: u16, len: u32, latency: Duration) {
        if !self.enabled {
            return;
        }
        let row = self.source(who).row(set, cmd);
        row.replies += 1;
        row.bytes_in += u64::from(len);
        row.latency.record(u64::try_from(latency.as_micros()).unwrap_or(u64::MAX));
        if error != 0 {
            row.errors += 1;
            row.routine += u64::from(super::routine::is_routine(set, cmd, error));
            let key = if self.errors.len() >= MAX_ERROR_CODES && !self.errors.contains_key(&error) {
                OTHER_ERROR
            } else {
                error
            };
            *self.errors.entry(key).or_default() += 1;
        }
    }

    /// One DDM chunk of type `ty` whose header declares `len` data bytes.
    pub fn ddm_chunk(&mut self, ty: u32, len: u32) {
        if !self.enabled {
            return;
        }
        let key = if self.ddm.len() >= MAX_CHUNK_TYPES && !self.ddm.contains_key(&ty) { OTHER_CHUNK } else { ty };
        let c = self.ddm.entry(key).or_default();
        c.count += 1;
        c.bytes += u64::from(len);
    }

    /// Every chunk header of a DDM payload, which may be the first bytes of a `prefix_of`
    /// byte payload (a large packet the proxy only saw the start of).
    pub fn ddm_payload(&mut self, payload: &[u8], prefix_of: Option<usize>) {
        if !self.enabled {
            return;
        }
        for c in crate::ddm::split_chunks(payload, prefix_of).flatten() {
            self.ddm_chunk(c.ty.0, c.declared_len);
        }
    }

    /// A command answered from the near cache with a reply of `len` bytes.
    pub fn near_answer(&mut self, set: u8, cmd: u8, len: u32) {
        if self.enabled {
            self.near.answer(set, cmd, len);
        }
    }

    /// A command answered near from a stop's gathered answers or early, with a reply of `len` bytes.
    pub fn near_answer_from(&mut self, source: super::near::Source, set: u8, cmd: u8, len: u32) {
        if self.enabled {
            self.near.answer_from(source, set, cmd, len);
        }
    }

    /// An early answer whose VM reply differed.
    pub fn near_early_differed(&mut self) {
        if self.enabled {
            self.near.early_differed();
        }
    }

    /// A command the near cache could have answered, sent to the VM.
    pub fn near_miss(&mut self) {
        if self.enabled {
            self.near.miss();
        }
    }

    /// Whether anything was counted.
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty() && self.ddm.is_empty()
    }

    /// The figures as a report: sources and their commands sorted by total reply time
    /// (then by count), DDM chunk types by count, errors by count.
    pub fn report(&self, vm: &str, since: Option<SystemTime>, until: Option<SystemTime>) -> VmReport {
        let mut sources: Vec<SourceReport> = self.sources.iter().map(source_report).collect();
        sources.sort_by(|a, b| (b.total_us, b.count).cmp(&(a.total_us, a.count)).then(a.conn.cmp(&b.conn)));
        let mut ddm_chunks: Vec<ChunkRow> = self
            .ddm
            .iter()
            .map(|(ty, c)| ChunkRow { chunk_type: fourcc(*ty), count: c.count, bytes: c.bytes })
            .collect();
        ddm_chunks.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.chunk_type.cmp(&b.chunk_type)));
        let mut errors: Vec<ErrorRow> = self
            .errors
            .iter()
            .map(|(&code, &count)| ErrorRow {
                code,
                name: if code == OTHER_ERROR { "other errors".into() } else { display_error(code) },
                count,
            })
            .collect();
        errors.sort_by(|a, b| b.count.cmp(&a.count).then(a.code.cmp(&b.code)));
        let seconds = match (since, until) {
            (Some(a), Some(b)) => b.duration_since(a).map_or(0.0, |d| d.as_secs_f64()),
            _ => 0.0,
        };
        VmReport {
            vm: vm.to_string(),
            since: since.map(crate::capture::time::format_rfc3339_micros),
            seconds,
            sources,
            ddm_chunks,
            errors,
            near: self.near.report(),
        }
    }
}

fn fourcc(ty: u32) -> String {
    crate::ddm::ChunkType(ty).to_string()
}

fn source_report(s: &Source) -> SourceReport {
    let mut commands: Vec<CommandRow> = s.commands.iter().map(|(&(set, cmd), c)| command_row(set, cmd, c)).collect();
    commands.sort_by(|a, b| {
        (b.total_us, b.count).cmp(&(a.total_us, a.count)).then_with(|| (a.cmd_set, a.cmd).cmp(&(b.cmd_set, b.cmd)))
    });
    let (source, conn) = match s.who {
        Who::Debugger(c) => ("debugger", Some(c)),
        Who::Proxy => ("proxy", None),
        Who::Earlier => ("earlier debuggers", None),
    };
    SourceReport {
        source: source.to_string(),
        conn,
        peer: s.peer.map(|p| p.to_string()),
        count: commands.iter().map(|c| c.count).sum(),
        bytes_out: commands.iter().map(|c| c.bytes_out).sum(),
        bytes_in: commands.iter().map(|c| c.bytes_in).sum(),
        total_us: commands.iter().map(|c| c.total_us).fold(0, u64::saturating_add),
        commands,
    }
}

fn command_row(set: u8, cmd: u8, c: &CommandStats) -> CommandRow {
    let h = &c.latency;
    CommandRow {
        command: if (set, cmd) == OTHER_COMMAND { "other commands".into() } else { display_command(set, cmd) },
        cmd_set: set,
        cmd,
        count: c.count,
        bytes_out: c.bytes_out,
        replies: c.replies,
        bytes_in: c.bytes_in,
        errors: c.errors,
        routine: c.routine,
        total_us: h.sum_us(),
        p50_us: h.percentile(0.50),
        p90_us: h.percentile(0.90),
        p99_us: h.percentile(0.99),
        max_us: h.max_us(),
    }
}

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;
