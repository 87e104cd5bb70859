//! `serve --exec NAME=COMMAND`: a container or pod reached through its runtime's exec
//! (`kubectl exec -i`, `podman exec -i`, `docker exec -i`), where no login on its host is
//! given. The exec's stdin and stdout are the far link's stream, as ssh's forwarded socket is
//! for `--ssh` hosts: jdwpmux runs inside the container (`jdwpmux far --attach`, bridging the
//! pipe to the far side it starts or finds there), nothing listens in the container, and
//! everything above the stream (protocol, gathered and early answers, hold and resume) is the
//! near link's as for any far side.
//!
//! - [`spec`]: `NAME=COMMAND` read, split into words, and the place it names. Pure.
//! - [`tail`]: the exec's last stderr lines, bounded. Pure.
//! - [`answer`]: what a command through the exec ended with: a missing program (each
//!   runtime's exit code and words, on either stream), and what to quote of a failure. Pure.
//! - [`place`]: the probe of a container a binary may be copied into, and its judgement. Pure.
//! - [`start`]: the jdwpmux the exec runs: the container's, or this one copied in.
//! - [`pipe`]: one run of the exec as one connection of the link (`Dial::Exec`).
//!
//! The task serving one `--exec` host over the near link, reported as an `--ssh` host is,
//! is `remote::exec_host`: it stands on this folder and on the near link, and the near link
//! stands on [`pipe`].
//!
//! The one rule: the exec command is only ever the stream. A dropped exec is a cut: the far
//! side in the container holds the session for the hold, the next run attaches to it.

pub mod answer;
pub mod pipe;
pub mod place;
pub mod spec;
pub mod start;
pub mod tail;

pub use spec::ExecSpec;
