//! The plain-text log line (no colours), written the way tracing-subscriber's default `Full`
//! format writes it, at a fraction of the cost:
//! `2026-01-02T03:04:05.678901Z  INFO vm{vm=127.0.0.1:5}: jdwpmux::session::ddm_glue: THST ...`
//!
//! Under a THST flood every chunk is one line, and the stock formatter spent most of the
//! proxy's time per chunk on the line around the message: the date computed from scratch
//! for every line, colour styles that write nothing, and the message escaped one character
//! at a time. Here the date is reused within the second, nothing is styled, and text is
//! copied in runs, escaped only where it holds a character a terminal would obey.
//!
//! The fields format is also used with colours (a terminal), since the stock one writes
//! `%display` fields as they are: a VM's name with a newline in it forged a log line.
//!
//! Events bridged from the `log` crate (their metadata needs normalising) are handed to the
//! stock formatter; colour output (a terminal) keeps the stock event format.

use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::format::{Format, Full, Writer};
use tracing_subscriber::fmt::time::SystemTime as StockTime;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// Event format: timestamp, level, spans, target, fields.
#[derive(Default)]
pub struct PlainText {
    stock: Format<Full, StockTime>,
}

/// Field format for events and spans: `message` first as is, then `name=value` (Debug).
#[derive(Debug, Default, Clone, Copy)]
pub struct PlainFields;

impl<S, N> FormatEvent<S, N> for PlainText
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut w: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let meta = event.metadata();
        if w.has_ansi_escapes() || meta.fields().field("log.target").is_some() {
            return self.stock.format_event(ctx, w, event);
        }
        write_now(&mut w)?;
        w.write_str(level_str(meta.level()))?;
        w.write_char(' ')?;
        if let Some(scope) = ctx.event_scope() {
            let mut any = false;
            for span in scope.from_root() {
                any = true;
                w.write_str(span.metadata().name())?;
                let ext = span.extensions();
                if let Some(fields) = ext.get::<FormattedFields<N>>().filter(|f| !f.fields.is_empty()) {
                    w.write_char('{')?;
                    w.write_str(&fields.fields)?;
                    w.write_char('}')?;
                }
                w.write_char(':')?;
            }
            if any {
                w.write_char(' ')?;
            }
        }
        w.write_str(meta.target())?;
        w.write_str(": ")?;
        ctx.format_fields(w.by_ref(), event)?;
        w.write_char('\n')
    }
}

/// Padded to five characters like the stock format, so columns line up.
fn level_str(l: &Level) -> &'static str {
    match *l {
        Level::TRACE => "TRACE",
        Level::DEBUG => "DEBUG",
        Level::INFO => " INFO",
        Level::WARN => " WARN",
        Level::ERROR => "ERROR",
    }
}

impl<'w> FormatFields<'w> for PlainFields {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'w>, fields: R) -> fmt::Result {
        let mut v = FieldWriter { w: writer, first: true, result: Ok(()) };
        fields.record(&mut v);
        v.result
    }
}

struct FieldWriter<'w> {
    w: Writer<'w>,
    first: bool,
    result: fmt::Result,
}

impl FieldWriter<'_> {
    /// A space between fields; `false` for fields not shown.
    fn start(&mut self, field: &Field) -> bool {
        // Metadata of bridged `log` records, shown in the line's own places instead.
        if self.result.is_err() || field.name().starts_with("log.") {
            return false;
        }
        if !self.first {
            self.result = self.w.write_char(' ');
        }
        self.first = false;
        self.result.is_ok()
    }

    fn name(&mut self, field: &Field) -> fmt::Result {
        let name = field.name();
        self.w.write_str(name.strip_prefix("r#").unwrap_or(name))?;
        self.w.write_char('=')
    }
}

impl Visit for FieldWriter<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if !self.start(field) {
            return;
        }
        self.result = if field.name() == "message" {
            Escaping { w: &mut self.w }.write_str(value)
        } else if value.bytes().all(|b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\') {
            // Debug quoting of plain printable ASCII is just the quotes.
            self.name(field)
                .and_then(|_| self.w.write_char('"'))
                .and_then(|_| self.w.write_str(value))
                .and_then(|_| self.w.write_char('"'))
        } else {
            self.name(field).and_then(|_| write!(self.w, "{value:?}"))
        };
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        if !self.start(field) {
            return;
        }
        let w = &mut self.w;
        self.result = (|| {
            if field.name() != "message" {
                let name = field.name();
                w.write_str(name.strip_prefix("r#").unwrap_or(name))?;
                w.write_char('=')?;
            }
            write!(Escaping { w: &mut *w }, "{value}")?;
            let Some(mut source) = value.source() else { return Ok(()) };
            write!(w, " {}.sources=[", field.name())?;
            loop {
                write!(Escaping { w: &mut *w }, "{source}")?;
                match source.source() {
                    Some(next) => {
                        w.write_str(", ")?;
                        source = next;
                    }
                    None => return w.write_char(']'),
                }
            }
        })();
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if !self.start(field) {
            return;
        }
        // A `%display` field reaches here as a Debug that writes its Display: the text as
        // it is, so it is escaped like the message. Debug output of strings is already
        // escaped and passes unchanged.
        self.result = if field.name() == "message" {
            write!(Escaping { w: &mut self.w }, "{value:?}")
        } else {
            self.name(field).and_then(|_| write!(Escaping { w: &mut self.w }, "{value:?}"))
        };
    }
}

/// Writes text with every character a terminal would obey, or that would end the line
/// (`safe_text::is_hostile`: C0 with CR and LF, DEL, C1, bidi controls), escaped as
/// `\x1b`, `\n`, `\u{9b}`. The stock formatter escapes only ESC, BEL, BS, FF, DEL and C1,
/// and only in the message, so a `vm_name=` with a newline could forge a line; here every
/// field is escaped. Runs without any of them are copied whole.
struct Escaping<'a, W: fmt::Write> {
    w: &'a mut W,
}

impl<W: fmt::Write> fmt::Write for Escaping<'_, W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        // Every character to escape lies outside printable ASCII (0x20..=0x7E). One compare
        // per byte with no early exit lets the compiler check many bytes at a time; text with
        // anything else (a tab, an accent) takes the exact path.
        let unusual = s.bytes().fold(false, |any, b| any | (b.wrapping_sub(0x20) > 0x5e));
        if !unusual {
            return self.w.write_str(s);
        }
        crate::safe_text::write_escaped(self.w, s)
    }
}

/// `2026-01-02T03:04:05.678901Z ` (UTC, microseconds, then a space), like the stock
/// timer; the part up to the second is kept per thread and redone once a second.
fn write_now(w: &mut Writer<'_>) -> fmt::Result {
    let Ok(d) = SystemTime::now().duration_since(UNIX_EPOCH) else {
        return w.write_str("<unknown time> ");
    };
    thread_local! {
        static SECOND: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
    }
    SECOND.with(|cell| {
        let mut c = cell.borrow_mut();
        if c.0 != d.as_secs() {
            c.1.clear();
            write_second(&mut c.1, d.as_secs())?;
            c.0 = d.as_secs();
        }
        w.write_str(&c.1)
    })?;
    write_micros(w, d.subsec_micros())?;
    w.write_str("Z ")
}

/// `2026-01-02T03:04:05.` for seconds since the Unix epoch.
fn write_second(out: &mut String, secs: u64) -> fmt::Result {
    let (y, m, d) = civil_from_days(secs / 86_400);
    let s = secs % 86_400;
    write!(out, "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.", s / 3600, s % 3600 / 60, s % 60)
}

fn write_micros(w: &mut Writer<'_>, us: u32) -> fmt::Result {
    let mut digits = [b'0'; 6];
    let mut v = us.min(999_999);
    for d in digits.iter_mut().rev() {
        *d = b'0' + (v % 10) as u8;
        v /= 10;
    }
    // Six ASCII digits.
    w.write_str(std::str::from_utf8(&digits).map_err(|_| fmt::Error)?)
}

/// Year, month, day of the proleptic Gregorian calendar for days since 1970-01-01.
/// Counts from 0000-03-01 so that the leap day ends each 4-, 100- and 400-year cycle.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    const DAYS_0000_03_01_TO_1970_01_01: u64 = 719_468;
    let z = days + DAYS_0000_03_01_TO_1970_01_01;
    let era = z / 146_097; // 400-year cycles
    let doe = z % 146_097; // day of the cycle
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // year of the cycle
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of the year, from March 1st
    let mp = (5 * doy + 2) / 153; // month from March = 0
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = era * 400 + yoe + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
