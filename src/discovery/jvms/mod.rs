//! Finding JVMs by their process, without connecting to anything: every process with a
//! listening socket-transport JDWP agent (`-agentlib:jdwp=...`, `-Xrunjdwp:...`, or the
//! same in `JAVA_TOOL_OPTIONS` / `JDK_JAVA_OPTIONS`), what it runs, the port its agent really
//! listens on (found from the process's own sockets when the agent picked one), whether it
//! waits for a debugger, and how to reach it.
//!
//! The same scan runs on this machine (`local`, reading /proc directly) and on other hosts
//! (`scan.sh`, plain POSIX sh run through ssh). Both print records (`wire`) that one host
//! view takes in (`view`); `agents` reads each process's JDWP agent off the view, `rounds`
//! what the next step of a round reads; `found` says what they mean, `place` where each JVM
//! runs (the host, a container, a pod or a network namespace, named), and `same` whether two
//! finders found one JVM. Everything but `local` is pure:
//! a remote host's output is untrusted input, table-tested and fuzzed.

pub mod agent;
pub mod agents;
pub mod cmdline;
pub mod decide;
pub mod exposed;
pub mod found;
pub mod holder;
pub mod keys;
pub mod local;
pub mod net;
pub mod place;
mod rounds;
pub mod same;
pub mod shell;
pub mod view;
pub mod wire;

pub use found::{FoundJvm, Reach};
pub use place::Place;
pub use view::{HostView, Request};

/// The remote half of the scan: shell functions a host's `sh` reads once.
pub const SCRIPT: &str = include_str!("scan.sh");

/// Takes every whole record in `buf` into `view` and drops them from `buf`; true once the
/// round's `done` record came (and then the view remembers the round's agent sockets). On
/// bad output the records before it are still taken, so a round read in any pieces leaves the
/// same view.
pub fn take_records(view: &mut HostView, buf: &mut Vec<u8>, nonce: &str) -> Result<bool, wire::WireError> {
    let mut used = 0;
    let mut done = false;
    let mut failed = None;
    {
        let mut records = Vec::new();
        loop {
            match wire::next_record(&buf[used..], nonce) {
                Ok(Some((r, n))) => {
                    used += n;
                    if r.tag == "done" {
                        done = true;
                        break;
                    }
                    records.push(r);
                }
                Ok(None) => break,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        view.apply(&records);
    }
    buf.drain(..used);
    if let Some(e) = failed {
        return Err(e);
    }
    if done {
        view.remember_agent_sockets();
    }
    Ok(done)
}

/// One whole local round: the scan, then whatever it asks for. The records go through the
/// same framing as a remote host's, so their end marker is fresh every round: a command line
/// holding the marker of the round before cannot end a record or make one up.
pub fn scan_local(view: &mut HostView) -> Result<Vec<FoundJvm>, getrandom::Error> {
    let nonce = &wire::fresh_nonce()?;
    let mut buf = local::scan(nonce);
    // Local records are well-formed by construction; a failure leaves the view as it was.
    let _ = take_records(view, &mut buf, nonce);
    let mut rounds = 0;
    loop {
        let requests = view.requests();
        // A request answered and still asked again (a process that went away halfway) is
        // asked once more at the most.
        if requests.is_empty() || rounds == 2 {
            break;
        }
        let mut buf: Vec<u8> = requests.iter().flat_map(|r| local::request(r, nonce)).collect();
        let _ = take_records(view, &mut buf, nonce);
        rounds += 1;
    }
    view.remember_agent_sockets();
    Ok(found::found(view))
}
