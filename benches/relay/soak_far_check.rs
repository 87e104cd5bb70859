//! The far-side soak's pure parts: the schedule of what is done to the sessions (link cuts, a
//! second debugger, the far side killed, the exec into the container killed, samples), the
//! app's log as read so far, one stop as the IDE printed it and its check against that log,
//! whether memory and open files stayed flat, and the near side's replay buffer as `stats
//! --json` shows it and whether it stayed flat and within its bound.

use std::time::Duration;

/// What the schedule does at a moment of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    /// The host's end of the link down for this long, then up.
    Cut(Duration),
    /// A second debugger attaches, sets a breakpoint that never hits, and leaves.
    Second,
    /// The far side on the host killed (-9): the near side starts another.
    KillFar,
    /// The exec that carries the link to the far side in the container killed (-9): the far
    /// side holds the session, serve runs the exec again and the session resumes.
    KillExec,
    /// Memory, open files and the near answers' counters read.
    Sample,
}

/// The schedule's shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    pub duration: Duration,
    /// A cut starts every `cut_every`, the first at `cut_every`.
    pub cut_every: Duration,
    /// Each cut's length, from the first to the second, turn by turn in between.
    pub cut_len: (Duration, Duration),
    /// A second debugger comes between two cuts every this often.
    pub second_every: Duration,
    /// The far side is killed once, in the gap between two cuts nearest this share of the run.
    pub kill_at: f64,
    /// The exec into the container is killed about this often (zero: never).
    pub exec_kill_every: Duration,
    pub sample_every: Duration,
}

/// Each cut's length: from the shortest to the longest in `steps` turns, again and again (a
/// known spread, the same in every run).
fn cut_len(p: &Plan, i: usize) -> Duration {
    const TURNS: u32 = 6;
    let (lo, hi) = p.cut_len;
    let k = (i % TURNS as usize) as u32;
    lo + (hi.saturating_sub(lo)) * k / (TURNS - 1)
}

/// The acts in time order. Cuts start at k * cut_every and end before the next one; the far
/// side's kill and the second debugger come halfway between a cut's end and the next cut,
/// never during one; the exec kills a quarter of the way into such a gap (so never at the
/// moment of another act), the gap nearest each k * exec_kill_every, each gap once and 20 s
/// before the end at the latest (the resume is seen within the run); samples every
/// `sample_every` from `sample_every` on, and one at the end.
pub fn schedule(p: &Plan) -> Vec<(Duration, Act)> {
    let mut acts = Vec::new();
    let mut cuts = Vec::new();
    let mut at = p.cut_every;
    while at < p.duration && !p.cut_every.is_zero() {
        let len = cut_len(p, cuts.len()).min(p.cut_every / 2);
        if at + len + Duration::from_secs(5) > p.duration {
            break;
        }
        cuts.push((at, len));
        acts.push((at, Act::Cut(len)));
        at += p.cut_every;
    }
    // The gaps between a cut's end and the next cut (or the run's end): their middles.
    let gaps: Vec<Duration> = cuts.iter().enumerate().map(|(i, (s, l))| {
        let next = cuts.get(i + 1).map_or(p.duration, |n| n.0);
        *s + *l + (next - (*s + *l)) / 2
    }).collect();
    let target = p.duration.mul_f64(p.kill_at);
    let kill = gaps.iter().copied().filter(|g| *g + Duration::from_secs(20) < p.duration).min_by_key(|g| g.abs_diff(target));
    if let Some(k) = kill {
        acts.push((k, Act::KillFar));
    }
    let mut last_second = Duration::ZERO;
    for g in &gaps {
        if Some(*g) != kill && *g >= last_second + p.second_every {
            acts.push((*g, Act::Second));
            last_second = *g;
        }
    }
    let quarters: Vec<Duration> = cuts.iter().enumerate().map(|(i, (s, l))| {
        let next = cuts.get(i + 1).map_or(p.duration, |n| n.0);
        *s + *l + (next - (*s + *l)) / 4
    }).filter(|q| *q + Duration::from_secs(20) < p.duration).collect();
    let mut execs: Vec<Duration> = Vec::new();
    let mut want = p.exec_kill_every;
    while !p.exec_kill_every.is_zero() && want < p.duration {
        if let Some(q) = quarters.iter().copied().filter(|q| !execs.contains(q)).min_by_key(|q| q.abs_diff(want)) {
            execs.push(q);
        }
        want += p.exec_kill_every;
    }
    acts.extend(execs.into_iter().map(|at| (at, Act::KillExec)));
    let mut s = p.sample_every;
    while s < p.duration && !p.sample_every.is_zero() {
        acts.push((s, Act::Sample));
        s += p.sample_every;
    }
    acts.push((p.duration, Act::Sample));
    acts.sort_by_key(|(at, _)| *at);
    acts
}

/// The app's log as read so far: complete lines only.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogTail {
    /// Bytes taken (whole lines).
    pub len: u64,
    /// The last "value N S" line's N and S.
    pub value: Option<(u64, String)>,
    pub ticks: u64,
    /// Bytes of a line not finished yet.
    partial: Vec<u8>,
}

impl LogTail {
    /// Takes bytes appended to the log since the last call.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.partial.extend_from_slice(bytes);
        while let Some(i) = self.partial.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=i).collect();
            self.len += line.len() as u64;
            let text = String::from_utf8_lossy(&line[..line.len() - 1]).into_owned();
            if let Some(rest) = text.strip_prefix("value ") {
                if let Some((n, s)) = rest.split_once(' ').and_then(|(n, s)| Some((n.parse().ok()?, s.to_string()))) {
                    self.value = Some((n, s));
                }
            } else if let Some(t) = text.strip_prefix("tick ").and_then(|t| t.parse().ok()) {
                self.ticks = t;
            }
        }
    }
}

/// One stop as `StepDriver` printed it (`stop N ...` lines, then `stopped N`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stop {
    pub number: u64,
    /// The top frame, `Tally.step:31`.
    pub top: Option<String>,
    pub frames: usize,
    pub n: Option<u64>,
    pub s: Option<String>,
    pub threads: Option<usize>,
    pub to_string: Option<String>,
}

impl Stop {
    /// Takes one `stop N REST` line.
    pub fn line(&mut self, rest: &str) {
        let unquote = |v: &str| v.strip_prefix('"').and_then(|v| v.strip_suffix('"')).map(str::to_string);
        if let Some(f) = rest.strip_prefix("frame ") {
            if self.top.is_none() {
                self.top = Some(f.to_string());
            }
            self.frames += 1;
        } else if let Some(v) = rest.strip_prefix("this.n=") {
            self.n = v.parse().ok();
        } else if let Some(v) = rest.strip_prefix("this.s=") {
            self.s = unquote(v);
        } else if let Some(v) = rest.strip_prefix("threads ") {
            self.threads = v.parse().ok();
        } else if let Some(v) = rest.strip_prefix("toString ") {
            self.to_string = unquote(v);
        }
    }
}

/// What is wrong with a stop, given the log as it was when the stop had been read, the
/// session's previous stop (None after an attach) and whether the threads view and toString
/// were asked.
pub fn check_stop(stop: &Stop, log: &LogTail, previous: Option<&Stop>, view: bool) -> Vec<String> {
    let mut wrong = Vec::new();
    let k = stop.number;
    let (Some(n), Some(s)) = (stop.n, stop.s.as_deref()) else {
        wrong.push(format!("stop {k}: no this.n or this.s shown ({:?})", stop));
        return wrong;
    };
    if !stop.top.as_deref().is_some_and(|t| t.starts_with("Tally.")) || stop.frames < 2 {
        wrong.push(format!("stop {k}: the top frame is {:?} of {} frames, not in Tally", stop.top, stop.frames));
    }
    match &log.value {
        Some((ln, ls)) if *ln == n && ls == s => {}
        other => wrong.push(format!("stop {k}: the IDE shows n={n} s={s:?}, the app's log last says {other:?}")),
    }
    if let Some(p) = previous.and_then(|p| p.n) {
        if n < p || n > p + 1 {
            wrong.push(format!("stop {k}: n went from {p} to {n} in one step (a step lost or done twice)"));
        }
    }
    if view {
        if stop.threads.is_none_or(|t| t < 3) {
            wrong.push(format!("stop {k}: the threads view showed {:?} threads", stop.threads));
        }
        let want = format!("Tally n={n} s={s}");
        if stop.to_string.as_deref() != Some(want.as_str()) {
            wrong.push(format!("stop {k}: toString() gave {:?}, not {want:?}", stop.to_string));
        }
    }
    wrong
}

/// A process's memory and open files at one moment of the run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mem {
    pub at: Duration,
    pub pid: u32,
    pub rss_kib: u64,
    pub fds: usize,
}

/// Flat: the end no more than this many times the level after the warm-up, ...
pub const RSS_FACTOR: f64 = 1.5;
/// ... plus this.
pub const RSS_SLACK_KIB: u64 = 4 * 1024;
/// Open files: the end no more than this above the level after the warm-up (a second
/// debugger's or an ssh connection's at the moment of a sample).
pub const FD_SLACK: usize = 16;

/// The level a process is judged against: its first sample at least `warmup` into the run
/// and taken of the process sampled last (a far side started anew is judged on its own
/// samples, its first one then the level); and the end, its last sample.
pub fn level_and_end(samples: &[Mem], warmup: Duration) -> Option<(Mem, Mem)> {
    let end = *samples.last()?;
    let own: Vec<&Mem> = samples.iter().filter(|m| m.pid == end.pid).collect();
    let level = own.iter().find(|m| m.at >= warmup).or(own.first()).copied()?;
    Some((*level, end))
}

/// Whether the end is within the rule of the level: RSS <= level x 1.5 + 4 MiB, open files
/// <= level + 16.
pub fn flat(level: &Mem, end: &Mem) -> (bool, bool) {
    let rss = end.rss_kib as f64 <= level.rss_kib as f64 * RSS_FACTOR + RSS_SLACK_KIB as f64;
    (rss, end.fds <= level.fds + FD_SLACK)
}

/// The near side's replay buffer for one far link at one moment of the run (`stats --json`:
/// `links[].replay`, bytes as on the link).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replay {
    pub at: Duration,
    /// Held unacknowledged at the sample.
    pub held: u64,
    /// The most held at once since the link started.
    pub most: u64,
    /// The bytes held past which the VM connections' writes wait.
    pub limit: u64,
}

/// Flat: the bytes held at the end no more than this many times the level after the
/// warm-up, ...
pub const REPLAY_FACTOR: u64 = 2;
/// ... plus this (a few frames in flight to the far side at the moment of a sample: the
/// link's delay is 25 ms each way and acks come within 20 ms of a frame).
pub const REPLAY_SLACK: u64 = 256 * 1024;
/// Past the limit only Open and Close frames go (`Outbound::push_beyond`, a few dozen bytes
/// each, one per VM session's channel): the most held is within the limit plus this.
pub const REPLAY_BEYOND: u64 = 64 * 1024;

/// The replay figures of the far link to `host` in a `stats --json` report.
pub fn replay_of(report: &serde_json::Value, host: &str, at: Duration) -> Option<Replay> {
    let link = report.get("links")?.as_array()?.iter().find(|l| l.get("host").and_then(|h| h.as_str()) == Some(host))?;
    let r = link.get("replay")?;
    let n = |k: &str| r.get(k).and_then(serde_json::Value::as_u64);
    Some(Replay { at, held: n("held_bytes")?, most: n("most_bytes")?, limit: n("limit_bytes")? })
}

/// The level (the first sample at least `warmup` into the run, else the first) and the end
/// (the last sample).
pub fn replay_level_and_end(samples: &[Replay], warmup: Duration) -> Option<(Replay, Replay)> {
    let end = *samples.last()?;
    let level = samples.iter().find(|r| r.at >= warmup).or(samples.first()).copied()?;
    Some((level, end))
}

/// Whether the buffer stayed flat and bounded: held at the end <= level x 2 + 256 KiB (no
/// growth over the run), and the most it ever held (the last sample's mark, kept since the
/// link started) within the limit plus what may go past it.
pub fn replay_flat(level: &Replay, end: &Replay) -> (bool, bool) {
    let flat = end.held <= level.held.saturating_mul(REPLAY_FACTOR).saturating_add(REPLAY_SLACK);
    (flat, end.most <= end.limit.saturating_add(REPLAY_BEYOND))
}

#[cfg(test)]
#[path = "soak_far_tests.rs"]
mod tests;
