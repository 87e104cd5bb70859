//! The monitor page open on a proxy (`serve --web`): a reader that does what an open page
//! does for as long as it runs: the page and its files once, then the VM list's event stream
//! and the event stream of one VM (its thread table twice a second, its packets), each read
//! as fast as the proxy writes. A real browser makes the same requests; this one costs the
//! proxy exactly what a page does without a browser's own CPU on the machine.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{bail, Context, Result};

/// Longest wait for the head of an answer.
const ANSWER: Duration = Duration::from_secs(30);

/// The monitor's address and token, from the proxy's "monitor at http://ADDR/?token=T" line.
pub fn monitor_in_log(log: &Path) -> Option<(SocketAddr, String)> {
    let text = std::fs::read_to_string(log).ok()?;
    let url = text.lines().find_map(|l| l.split("monitor at http://").nth(1))?.split_whitespace().next()?;
    let (addr, query) = url.split_once('/')?;
    Some((addr.parse().ok()?, query.strip_prefix("?token=")?.to_string()))
}

fn send(addr: SocketAddr, token: &str, path: &str, close: bool) -> Result<BufReader<TcpStream>> {
    let mut s = TcpStream::connect(addr).context("connect to the monitor")?;
    s.set_read_timeout(Some(ANSWER))?;
    let conn = if close { "close" } else { "keep-alive" };
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nX-Jdwpmux-Token: {token}\r\nConnection: {conn}\r\n\r\n")?;
    let mut r = BufReader::new(s);
    let mut status = String::new();
    r.read_line(&mut status)?;
    if !status.contains(" 200 ") {
        bail!("GET {path}: {}", status.trim());
    }
    loop {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 || line == "\r\n" {
            return Ok(r);
        }
    }
}

/// Events received so far, by name.
#[derive(Debug, Default)]
pub struct Seen {
    pub vms: AtomicU64,
    pub threads: AtomicU64,
    pub packets: AtomicU64,
    pub bytes: AtomicU64,
}

pub struct OpenPage {
    stop: Arc<AtomicBool>,
    pub seen: Arc<Seen>,
    readers: Vec<JoinHandle<Result<()>>>,
}

/// Loads the page and opens its two streams (the list, and VM `vm`).
pub fn open(addr: SocketAddr, token: &str, vm: u32) -> Result<OpenPage> {
    for path in ["/", "/app.js", "/style.css"] {
        send(addr, token, path, true)?.read_to_end(&mut Vec::new())?;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Seen::default());
    let mut readers = Vec::new();
    for path in ["/api/events".to_string(), format!("/api/vms/{vm}/events")] {
        let mut r = send(addr, token, &path, false)?;
        r.get_ref().set_read_timeout(Some(Duration::from_millis(200)))?;
        let (stop, seen) = (stop.clone(), seen.clone());
        readers.push(std::thread::spawn(move || read_events(&mut r, &stop, &seen)));
    }
    Ok(OpenPage { stop, seen, readers })
}

/// Reads an event stream's lines (chunk sizes included: only `event:` lines are counted).
fn read_events(r: &mut BufReader<TcpStream>, stop: &AtomicBool, seen: &Seen) -> Result<()> {
    let mut line = String::new();
    while !stop.load(Ordering::Relaxed) {
        // A timeout may leave part of a line in `line`: the next read completes it.
        match r.read_line(&mut line) {
            Ok(0) => bail!("the monitor closed an event stream"),
            Ok(_) => {
                seen.bytes.fetch_add(line.len() as u64, Ordering::Relaxed);
                match line.trim_end().strip_prefix("event: ") {
                    Some("vms") => seen.vms.fetch_add(1, Ordering::Relaxed),
                    Some("threads") => seen.threads.fetch_add(1, Ordering::Relaxed),
                    Some("packets") => seen.packets.fetch_add(1, Ordering::Relaxed),
                    _ => 0,
                };
                line.clear();
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

impl OpenPage {
    /// Closes the page; an error if a stream broke meanwhile.
    pub fn close(self) -> Result<()> {
        self.stop.store(true, Ordering::Relaxed);
        for r in self.readers {
            r.join().map_err(|_| anyhow::anyhow!("a page reader panicked"))??;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_monitor_line_gives_address_and_token() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let line = "2026-11-25T10:20:19.458031Z  INFO jdwpmux::web: monitor at http://127.0.0.1:33181/?token=66c7\n";
        std::fs::write(&log, format!("x listening on 127.0.0.1:1 for the web monitor\n{line}")).unwrap();
        let (addr, token) = super::monitor_in_log(&log).unwrap();
        assert_eq!((addr.port(), token.as_str()), (33181, "66c7"));
        std::fs::write(&log, "nothing\n").unwrap();
        assert!(super::monitor_in_log(&log).is_none());
    }
}
