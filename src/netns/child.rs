//! The helper process's side of the rootless way: `jdwpmux __netns-connect PID NETINODE ADDR
//! TIMEOUT_MS`, started by [`super::helper`] with a Unix socket as its stdin. It must run
//! before anything in the process starts a thread (`setns` into a user namespace needs a
//! single-threaded process), hence [`intercept`] at the very top of `main`.
//!
//! It opens both namespaces first (the user one may close to us once we are inside another),
//! checks the network one is the one named, joins the user namespace (unless it is already
//! ours), then the network one, connects under the timeout, and sends the socket back over
//! fd 0. On failure: one line on stderr and an exit code that says which kind ([`Exit`]),
//! which the parent turns back into an [`NsError`].

use std::ffi::{OsStr, OsString};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use super::enter::{check_net, connect_here, inode_of, join, open};
use super::{fdpass, NsError, NsTarget, HIDDEN_ARG, REMEDY_NOT_OWNER};

/// The helper's exit codes: each kind of failure the parent tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    Other = 1,
    Usage = 2,
    Gone = 3,
    Denied = 4,
    Connect = 5,
    Timeout = 6,
}

impl Exit {
    pub fn from_code(code: i32) -> Exit {
        match code {
            2 => Exit::Usage,
            3 => Exit::Gone,
            4 => Exit::Denied,
            5 => Exit::Connect,
            6 => Exit::Timeout,
            _ => Exit::Other,
        }
    }
}

/// The helper's run when this process was started as one (its first argument is
/// [`HIDDEN_ARG`]), with its exit code; None for any other command line.
pub fn intercept() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(OsStr::new(HIDDEN_ARG)) {
        return None;
    }
    let rest: Vec<OsString> = args.collect();
    Some(match run(&rest) {
        Ok(()) => ExitCode::SUCCESS,
        Err((exit, line)) => {
            eprintln!("{line}");
            ExitCode::from(exit as u8)
        }
    })
}

/// The hidden arguments after [`HIDDEN_ARG`], in the order [`parse_args`] reads them.
pub fn args(t: &NsTarget, timeout: Duration) -> [String; 4] {
    [t.pid.to_string(), t.net.to_string(), t.addr.to_string(), timeout.as_millis().to_string()]
}

/// PID NETINODE ADDR TIMEOUT_MS.
pub fn parse_args(args: &[OsString]) -> Result<(NsTarget, Duration), String> {
    let words: Vec<&str> = args.iter().map(|a| a.to_str().ok_or("an argument is not UTF-8")).collect::<Result<_, _>>()?;
    let [pid, net, addr, ms] = words[..] else {
        return Err(format!("usage: jdwpmux {HIDDEN_ARG} PID NETINODE ADDR TIMEOUT_MS ({} arguments given)", words.len()));
    };
    let pid: u32 = pid.parse().map_err(|_| format!("PID {pid:?} is not a number"))?;
    let net: u64 = net.parse().map_err(|_| format!("NETINODE {net:?} is not a number"))?;
    let addr: SocketAddr = addr.parse().map_err(|_| format!("ADDR {addr:?} is not an address and port"))?;
    let ms: u64 = ms.parse().map_err(|_| format!("TIMEOUT_MS {ms:?} is not a number"))?;
    Ok((NsTarget { pid, net, addr }, Duration::from_millis(ms)))
}

fn run(args: &[OsString]) -> Result<(), (Exit, String)> {
    let (t, timeout) = parse_args(args).map_err(|e| (Exit::Usage, e))?;
    let stream = enter_and_connect(&t, timeout).map_err(|e| failure(&e))?;
    let stdin = std::io::stdin();
    fdpass::send_fd(&stdin, &stream).map_err(|e| (Exit::Other, format!("send the socket over stdin: {e}")))
}

fn enter_and_connect(t: &NsTarget, timeout: Duration) -> Result<std::net::TcpStream, NsError> {
    let user = open(t, "user", REMEDY_NOT_OWNER)?;
    let net = open(t, "net", REMEDY_NOT_OWNER)?;
    check_net(t, &net)?;
    let own_user = std::fs::File::open("/proc/self/ns/user")
        .and_then(|f| inode_of(&f))
        .map_err(|source| NsError::System { what: "read this process's user namespace", source })?;
    // setns into the user namespace one is already in fails (EINVAL): a namespace made by
    // root, or by this user from inside its own container, needs only the network step.
    if inode_of(&user).ok() != Some(own_user) {
        join(t, &user, libc::CLONE_NEWUSER, REMEDY_NOT_OWNER)?;
    }
    join(t, &net, libc::CLONE_NEWNET, REMEDY_NOT_OWNER)?;
    connect_here(t, timeout)
}

/// The exit code and the one line for a failure, in the form [`super::helper`] reads back.
pub fn failure(e: &NsError) -> (Exit, String) {
    match e {
        NsError::Gone { now: Some(now), .. } => (Exit::Gone, format!("net:[{now}]")),
        NsError::Gone { now: None, .. } => (Exit::Gone, "gone".into()),
        NsError::Denied { reason, .. } => (Exit::Denied, reason.clone()),
        // io::Error's text ends in "(os error N)": the parent rebuilds the error from it.
        NsError::Connect { source, .. } => (Exit::Connect, source.to_string()),
        NsError::Timeout { .. } => (Exit::Timeout, e.to_string()),
        NsError::Helper { .. } | NsError::System { .. } => (Exit::Other, e.to_string()),
    }
}
