//! One-line human-readable rendering of a [`Chunk`] for logs, e.g. `THCR tid=12 name="main"`.
//! Lines start with the chunk type and carry no VM prefix (the caller adds its own). Strings
//! are quoted, escaped and shortened; lists and byte heads are elided to keep lines short.

use std::fmt::{self, Display, Formatter};

use super::heap::HeapSegment;
use super::info::{hex, Blob};
use super::model::Chunk;
use super::threads::ThreadStatus;

/// Longest string shown, in characters.
const MAX_SHOWN_CHARS: usize = 120;
/// Most head bytes shown in hex.
const MAX_SHOWN_BYTES: usize = 16;
/// Most list items shown.
const MAX_SHOWN_ITEMS: usize = 6;

/// A string quoted and escaped (Rust's escaping: `\"`, `\\`, `\n`, `\u{..}`), shortened.
struct Q<'a>(&'a str);

impl Display for Q<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let mut chars = self.0.chars();
        let shown: String = chars.by_ref().take(MAX_SHOWN_CHARS).collect();
        write!(f, "{shown:?}")?;
        if chars.next().is_some() {
            f.write_str("…")?;
        }
        Ok(())
    }
}

struct Head<'a>(&'a [u8]);

impl Display for Head<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(&hex(&self.0[..self.0.len().min(MAX_SHOWN_BYTES)]))?;
        if self.0.len() > MAX_SHOWN_BYTES {
            f.write_str("…")?;
        }
        Ok(())
    }
}

fn blob(f: &mut Formatter<'_>, b: &Blob) -> fmt::Result {
    write!(f, " len={}", b.len)?;
    if !b.head.is_empty() {
        write!(f, " head={}", Head(&b.head))?;
    }
    Ok(())
}

fn strings(f: &mut Formatter<'_>, items: &[String]) -> fmt::Result {
    write!(f, " {}", items.len())?;
    for (i, s) in items.iter().take(MAX_SHOWN_ITEMS).enumerate() {
        write!(f, "{}{}", if i == 0 { ": " } else { ", " }, Q(s))?;
    }
    if items.len() > MAX_SHOWN_ITEMS {
        write!(f, ", …")?;
    }
    Ok(())
}

fn segment(f: &mut Formatter<'_>, s: &HeapSegment) -> fmt::Result {
    write!(
        f,
        " heap={} unit={} addr={:#x} off={:#x} units={} runs={} free={}",
        s.heap_id,
        s.unit_size,
        s.address,
        s.offset,
        s.length_units,
        s.runs.len(),
        s.free_units()
    )
}

/// `3 threads: 1 running, 2 waiting` (states in numeric order).
///
/// A VM may send this every few milliseconds and each one is logged, so the line is counted
/// without allocating and handed over in one piece (a log formatter pays per piece).
fn thread_summary(f: &mut Formatter<'_>, st: &ThreadStatus) -> fmt::Result {
    let (mut lo, mut hi) = (u8::MAX, u8::MIN);
    for t in &st.threads {
        (lo, hi) = (lo.min(t.state.0), hi.max(t.state.0));
    }
    // Counts per state from `lo` on. Real VMs use a handful of neighbouring states: a few
    // words on the stack; only a spread of more than 16 states takes an allocation.
    let width = if hi >= lo { usize::from(hi - lo) + 1 } else { 0 };
    let mut small = [0usize; 16];
    let mut wide = Vec::new();
    let counts: &mut [usize] = match small.get_mut(..width) {
        Some(c) => c,
        None => {
            wide.resize(width, 0);
            &mut wide
        }
    };
    for t in &st.threads {
        if let Some(c) = counts.get_mut(usize::from(t.state.0 - lo)) {
            *c += 1;
        }
    }
    let n = st.threads.len();
    let mut line = Gather::default();
    let fits = (|| {
        line.write_str(" ")?;
        line.write_num(n)?;
        line.write_str(if n == 1 { " thread" } else { " threads" })?;
        let mut sep = ": ";
        for (s, &c) in (lo..=hi).zip(counts.iter()) {
            if c == 0 {
                continue;
            }
            line.write_str(sep)?;
            line.write_num(c)?;
            line.write_str(" ")?;
            match super::threads::ThreadState(s).name() {
                Some(name) => line.write_str(name)?,
                None => {
                    line.write_str("state")?;
                    line.write_num(usize::from(s))?;
                }
            }
            sep = ", ";
        }
        Ok::<_, fmt::Error>(())
    })();
    match fits {
        Ok(()) => f.write_str(line.as_str()),
        // Only a VM reporting dozens of different states gets here: write it piece by piece.
        Err(_) => {
            write!(f, " {n} {}", if n == 1 { "thread" } else { "threads" })?;
            let mut sep = ": ";
            for (s, &c) in (lo..=hi).zip(counts.iter()) {
                if c > 0 {
                    write!(f, "{sep}{c} {}", super::threads::ThreadState(s))?;
                    sep = ", ";
                }
            }
            Ok(())
        }
    }
}

/// Text gathered on the stack; writing past its end is an error, never a panic.
struct Gather {
    buf: [u8; 192],
    len: usize,
}

impl Default for Gather {
    fn default() -> Self {
        Gather { buf: [0; 192], len: 0 }
    }
}

impl Gather {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len.checked_add(s.len()).filter(|&e| e <= self.buf.len()).ok_or(fmt::Error)?;
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }

    fn write_num(&mut self, v: usize) -> fmt::Result {
        let (mut width, mut t) = (1, v / 10);
        while t > 0 {
            (width, t) = (width + 1, t / 10);
        }
        let end = self.len.checked_add(width).filter(|&e| e <= self.buf.len()).ok_or(fmt::Error)?;
        let mut rest = v;
        for d in self.buf[self.len..end].iter_mut().rev() {
            *d = b'0' + (rest % 10) as u8;
            rest /= 10;
        }
        self.len = end;
        Ok(())
    }

    fn as_str(&self) -> &str {
        // Only whole `&str`s were copied in, so this never fails.
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or_default()
    }
}

fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

fn opt<T: Display>(f: &mut Formatter<'_>, name: &str, v: &Option<T>) -> fmt::Result {
    match v {
        Some(v) => write!(f, " {name}={v}"),
        None => Ok(()),
    }
}

fn opt_str(f: &mut Formatter<'_>, name: &str, v: &Option<String>) -> fmt::Result {
    match v {
        Some(v) => write!(f, " {name}={}", Q(v)),
        None => Ok(()),
    }
}

impl Display for Chunk {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        use Chunk::*;
        if let Unknown { ty, len, head } = self {
            write!(f, "Unknown {ty} len={len}")?;
            if !head.is_empty() {
                write!(f, " head={}", Head(head))?;
            }
            return Ok(());
        }
        if let Compressed { compressed_len, original_len, inner } = self {
            return write!(f, "{inner} [zlib {compressed_len}->{original_len}]");
        }
        super::chunk_type::fmt_fourcc(self.chunk_type().0, f)?;
        match self {
            HeloRequest { version } => write!(f, " version={version}"),
            HeloReply(h) => {
                write!(f, " version={} pid={} vm={} app={}", h.version, h.pid, Q(&h.vm_ident), Q(&h.app_name))?;
                opt(f, "user", &h.user_id)?;
                opt_str(f, "abi", &h.abi)?;
                opt_str(f, "flags", &h.jvm_flags)?;
                opt(f, "native_debuggable", &h.native_debuggable)?;
                opt_str(f, "pkg", &h.package_name)?;
                opt(f, "stage", &h.boot_stage)
            }
            Apnm { app_name, user_id, package_name } => {
                write!(f, " app={}", Q(app_name))?;
                opt(f, "user", user_id)?;
                opt_str(f, "pkg", package_name)
            }
            Wait { reason: 0 } => write!(f, " reason=0 (debugger)"),
            Wait { reason } => write!(f, " reason={reason}"),
            Then { enable } | Reae { enable } | Vugl { enable } => write!(f, " {}", on_off(*enable)),
            Thcr { tid, name } | Thnm { tid, name } => write!(f, " tid={tid} name={}", Q(name)),
            Thde { tid } | StklRequest { tid } => write!(f, " tid={tid}"),
            ThstRequest { interval_ms: Some(ms) } => write!(f, " interval={ms}ms"),
            ThstReply(st) => thread_summary(f, st),
            StklReply(st) => {
                write!(f, " tid={} depth={}", st.tid, st.frames.len())?;
                if let Some(top) = st.frames.first() {
                    let file = top.file.as_deref().unwrap_or("?");
                    let frame = format!("{}.{}({file}:{})", top.class, top.method, top.line);
                    write!(f, " top={}", Q(&frame))?;
                }
                Ok(())
            }
            HpifRequest { when } => {
                let w = ["never", "now", "next-gc", "every-gc"].get(usize::from(*when)).unwrap_or(&"?");
                write!(f, " when={when} ({w})")
            }
            HpifReply { heaps } => {
                write!(f, " {} heap{}", heaps.len(), if heaps.len() == 1 { "" } else { "s" })?;
                for (i, h) in heaps.iter().take(MAX_SHOWN_ITEMS).enumerate() {
                    write!(
                        f,
                        "{}heap={} size={} alloc={} objects={} max={}",
                        if i == 0 { ": " } else { "; " },
                        h.heap_id,
                        h.size_bytes,
                        h.allocated_bytes,
                        h.objects,
                        h.max_bytes
                    )?;
                }
                Ok(())
            }
            HpsgRequest { when, what } | NhsgRequest { when, what } => write!(f, " when={when} what={what}"),
            Hpsg(s) | Hpso(s) | Nhsg(s) => segment(f, s),
            Hpst { heap_id } | Hpen { heap_id } | Nhst { heap_id } | Nhen { heap_id } => write!(f, " heap={heap_id}"),
            HpduRequest { file } => write!(f, " file={}", Q(file)),
            HpduReply { result } | MpreReply { result } => write!(f, " result={result}"),
            Hpds(b) | Real(b) | Nhgt(b) | Mpse(b) | Spse(b) | VurtReply(b) | VuopReply(b) | Dtrc(b) | Test(b) => {
                blob(f, b)
            }
            ReaqReply { enabled } => write!(f, " {}", on_off(*enabled)),
            Mprs { buffer_size, flags, file } => write!(f, " buffer={buffer_size} flags={flags:#x} file={}", Q(file)),
            Mpss { buffer_size, flags } => write!(f, " buffer={buffer_size} flags={flags:#x}"),
            Spss { buffer_size, flags, interval_us } => {
                write!(f, " buffer={buffer_size} flags={flags:#x} interval={interval_us}us")
            }
            MprqReply { mode } => {
                let m = ["off", "tracing", "sampling"].get(usize::from(*mode)).unwrap_or(&"?");
                write!(f, " mode={mode} ({m})")
            }
            VulwReply { windows } => strings(f, windows),
            Vurt { op, rest } | Vuop { op, rest } => {
                write!(f, " op={op}")?;
                blob(f, rest)
            }
            FeatReply { features } => strings(f, features),
            Stag { stage } => write!(f, " stage={stage}"),
            Artt { version, timings } => {
                let total: u64 = timings.iter().map(|t| t.duration_ns).fold(0, u64::saturating_add);
                let max = timings.iter().map(|t| t.duration_ns).max().unwrap_or(0);
                write!(f, " version={version} timings={} total={total}ns max={max}ns", timings.len())
            }
            Exit { status } => write!(f, " status={status}"),
            Fail { code, message } => write!(f, " code={code} msg={}", Q(message)),
            EmptyReply { .. } => write!(f, " (empty reply)"),
            Truncated { declared_len, have, head, .. } => {
                write!(f, " truncated len={declared_len} have={have}")?;
                if !head.is_empty() {
                    write!(f, " head={}", Head(head))?;
                }
                Ok(())
            }
            // Requests with no fields, and DBGD/HPGC: the type says it all.
            ThstRequest { interval_ms: None }
            | Dbgd
            | Hpgc
            | HpdsRequest
            | ReaqRequest
            | RealRequest
            | NhgtRequest
            | MpreRequest
            | MpseRequest
            | SpseRequest
            | MprqRequest
            | VulwRequest
            | FeatRequest => Ok(()),
            Unknown { .. } | Compressed { .. } => Ok(()),
        }
    }
}

#[cfg(test)]
#[path = "display_tests.rs"]
mod tests;
