//! The plain-text format against the stock one: the same events must give the same lines
//! (timestamps aside, which are checked on their own).

use std::io::Write;
use std::sync::{Arc, Mutex};

use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;
use tracing_subscriber::fmt::MakeWriter;

use super::*;

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Capture {
    type Writer = Capture;
    fn make_writer(&'a self) -> Capture {
        self.clone()
    }
}

impl Capture {
    fn lines(&self) -> Vec<String> {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap().lines().map(str::to_string).collect()
    }
}

#[derive(Debug)]
struct Failed(Option<Box<Failed>>, &'static str);

impl fmt::Display for Failed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.1)
    }
}

impl std::error::Error for Failed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.as_deref().map(|e| e as _)
    }
}

/// Every kind of field and span the crate logs, and text a terminal would obey.
fn events() {
    tracing::info!("plain message, no span");
    let vm = tracing::info_span!("vm", vm = %"127.0.0.1:5");
    let _vm = vm.enter();
    tracing::info!(dir = "<-", chunk = %"THST", "THST 8 threads: 1 running, 7 initializing");
    tracing::info!(dir = "->", "{}", "HELO version=1");
    let dbg = tracing::debug_span!("debugger", conn = 3u64, peer = ?"10.0.0.1:9", late = tracing::field::Empty);
    dbg.record("late", 7);
    let _dbg = dbg.enter();
    tracing::warn!(n = 5, neg = -3, ok = true, f = 1.5, r#type = "t", "esc \x1b[31m c1 \u{9b} bel \x07 bs \x08 ff \x0c del \x7f é ü 日本");
    tracing::error!(quote = "a \"q\" \\ \n tab\t é", unicode = "日本", "after");
    tracing::trace!(only = 1);
    tracing::debug!(v = ?vec![1, 2], s = %"shown \x1b as is", "{:?}", Some("dbg \x1b"));
    let chain = Failed(Some(Box::new(Failed(None, "root \x1b cause"))), "outer");
    tracing::warn!(error = &chain as &(dyn std::error::Error + 'static), "failed");
    tracing::warn!(error = &Failed(None, "alone") as &(dyn std::error::Error + 'static));
    tracing::warn!(error = %chain, "displayed");
    let empty = tracing::info_span!("control");
    let _empty = empty.enter();
    tracing::info!("in a span without fields");
}

fn run(stock: bool) -> Vec<String> {
    let cap = Capture::default();
    let b = tracing_subscriber::fmt().with_ansi(false).with_writer(cap.clone()).with_max_level(Level::TRACE);
    if stock {
        tracing::subscriber::with_default(b.finish(), events);
    } else {
        tracing::subscriber::with_default(b.fmt_fields(PlainFields).event_format(PlainText::default()).finish(), events);
    }
    cap.lines()
}

/// `2026-01-02T03:04:05.678901Z `: 28 characters.
const STAMP: usize = 28;

fn check_stamp(line: &str) {
    let b = line.as_bytes();
    let digits = [0..4, 5..7, 8..10, 11..13, 14..16, 17..19, 20..26];
    assert!(digits.into_iter().flatten().all(|i| b[i].is_ascii_digit()), "{line}");
    assert_eq!([b[4], b[7], b[10], b[13], b[16], b[19], b[26], b[27]], *b"--T::.Z ", "{line}");
}

#[test]
fn lines_equal_the_stock_format() {
    let (stock, ours) = (run(true), run(false));
    assert_eq!(stock.len(), 11, "{stock:#?}");
    assert_eq!(ours.len(), stock.len(), "{ours:#?}");
    for (s, o) in stock.iter().zip(&ours) {
        check_stamp(o);
        // The stock format writes a `%display` field as it is; ours escapes it.
        let s = s.replace("s=shown \x1b as is", "s=shown \\x1b as is");
        assert_eq!(&o[STAMP..], &s[STAMP..]);
    }
    // A few lines spelled out, so that a change in the stock format shows here too.
    assert_eq!(&ours[1][STAMP..], r#" INFO vm{vm=127.0.0.1:5}: jdwpmux::logwriter::text::tests: THST 8 threads: 1 running, 7 initializing dir="<-" chunk=THST"#);
    assert_eq!(
        &ours[3][STAMP..],
        r#" WARN vm{vm=127.0.0.1:5}:debugger{conn=3 peer="10.0.0.1:9" late=7}: jdwpmux::logwriter::text::tests: esc \x1b[31m c1 \u{9b} bel \x07 bs \x08 ff \x0c del \x7f é ü 日本 n=5 neg=-3 ok=true f=1.5 type="t""#
    );
    assert!(ours[7].ends_with(r#"failed error=outer error.sources=[root \x1b cause]"#), "{}", ours[7]);
}

#[test]
fn the_clock_matches_the_stock_timer() {
    // Retried in case the two readings fall on either side of a second.
    let same = (0..5).any(|_| {
        let (mut stock, mut ours) = (String::new(), String::new());
        StockTime.format_time(&mut Writer::new(&mut stock)).unwrap();
        write_now(&mut Writer::new(&mut ours)).unwrap();
        check_stamp(&ours);
        stock.len() == STAMP - 1 && stock[..20] == ours[..20]
    });
    assert!(same);
}

#[test]
fn calendar_dates() {
    let cases = [
        (0, (1970, 1, 1)),
        (1095, (1972, 12, 31)),
        (11_016, (2000, 2, 29)),
        (11_017, (2000, 3, 1)),
        (19_782, (2024, 2, 29)),
        (20_779, (2026, 11, 22)),
        (47_540, (2100, 2, 28)),
        (47_541, (2100, 3, 1)),
        (157_113, (2400, 2, 29)),
        (2_932_896, (9999, 12, 31)),
    ];
    for (days, want) in cases {
        assert_eq!(civil_from_days(days), want, "day {days}");
    }
    let mut s = String::new();
    write_second(&mut s, 19_782 * 86_400 + 23 * 3600 + 59 * 60 + 58).unwrap();
    assert_eq!(s, "2024-02-29T23:59:58.");
}

#[test]
fn micros_are_six_digits() {
    for (us, want) in [(0, "000000"), (7, "000007"), (123_456, "123456"), (999_999, "999999")] {
        let mut s = String::new();
        write_micros(&mut Writer::new(&mut s), us).unwrap();
        assert_eq!(s, want);
    }
}

#[test]
fn escaping_touches_only_what_a_terminal_obeys() {
    let cases = [
        ("plain text, 40 bytes or so: THST 8 threads", "plain text, 40 bytes or so: THST 8 threads"),
        ("tab\tnewline\n cr\r nul\0", "tab\\tnewline\\n cr\\r nul\\x00"),
        ("é ü 日本 \u{a0} \u{7e}", "é ü 日本 \u{a0} ~"),
        ("\x1b[2J\x07\x08\x0c\x7f", "\\x1b[2J\\x07\\x08\\x0c\\x7f"),
        ("c1: \u{80} \u{85} \u{9f} end", "c1: \\u{80} \\u{85} \\u{9f} end"),
        ("bidi \u{202e}olleh\u{2066}", "bidi \\u{202e}olleh\\u{2066}"),
        ("", ""),
    ];
    for (text, want) in cases {
        let mut out = String::new();
        Escaping { w: &mut out }.write_str(text).unwrap();
        assert_eq!(out, want, "{text:?}");
    }
}

/// Text from a VM or a host in any kind of field, in events and spans: each line stays one
/// line and holds no character a terminal obeys.
#[test]
fn hostile_text_in_any_field_stays_on_its_line() {
    let name = "Evil\n2026-01-01T00:00:00.000000Z  INFO forged: \x1b]0;title\x07\r\u{9b}2J\u{202e}\0";
    let cap = Capture::default();
    let b = tracing_subscriber::fmt().with_ansi(false).with_writer(cap.clone()).with_max_level(Level::TRACE);
    let sub = b.fmt_fields(PlainFields).event_format(PlainText::default()).finish();
    tracing::subscriber::with_default(sub, || {
        let span = tracing::info_span!("vm", vm_name = %name, raw = name);
        let _s = span.enter();
        tracing::info!(vm_name = %name, dbg = ?name, s = name, "connected to {name}");
        tracing::warn!(error = &Failed(None, "refused: \n\x1b[31m") as &(dyn std::error::Error + 'static), "{}", name);
    });
    let lines = cap.lines();
    assert_eq!(lines.len(), 2, "{lines:#?}");
    for l in &lines {
        assert!(!l.chars().any(crate::safe_text::is_hostile), "{l:?}");
    }
    let escaped = r"Evil\n2026-01-01T00:00:00.000000Z  INFO forged: \x1b]0;title\x07\r\u{9b}2J\u{202e}\x00";
    assert!(lines[0][STAMP..].starts_with(&format!(" INFO vm{{vm_name={escaped} raw=")), "{}", lines[0]);
    assert!(lines[0].contains(&format!("connected to {escaped} vm_name={escaped} dbg=")), "{}", lines[0]);
    assert!(lines[1].ends_with(r"error=refused: \n\x1b[31m"), "{}", lines[1]);
}
