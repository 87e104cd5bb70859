//! jdwpmux near the IDE, on its side of the [`crate::remote::protocol`] stream to jdwpmux on a VM's
//! host (`jdwpmux far`): one task per far side that owns the stream, keeps the session's
//! resume state, reconnects after a cut and resumes, and gives the VMs the far side lists and
//! a local socket per VM whose connections are channels, which a VM session uses as it
//! would use a VM's socket.
//!
//! - [`link`]: the task and its handle ([`NearLink`]): Hello and version, resume, Ping and
//!   Pong, acks, channels opened and closed, the VM list.
//! - [`api`]: the link's handle, settings and states.
//! - [`channels`]: the channel table the task keeps. Pure.
//! - `ends`: an open channel as its user holds it ([`link::ChannelEnds`]), and the pump that
//!   moves its bytes between the user and the link's queues.
//! - [`inbound`]: what each frame from the far side means (its Hello, then every frame). Pure.
//! - [`timing`]: when to try again after a cut (promptly while the far side holds), and when
//!   a cut session is taken for let go (the near side keeps the hold's clock too). Pure.
//! - [`netwatch`]: this machine's network changes, to try a cut host again at once.
//! - [`found`]: a listed VM as the JVM a host's scan finds (same keys and ports). Pure.
//! - [`sockets`]: a local socket per far-side VM, each connection a channel whose task
//!   moves its bytes to and from the link's queues itself (`ends`' pump).
//!
//! The ways to a far side that use this link are beside it: `--ssh` hosts in
//! [`crate::remote::through_far`], `--exec` containers in [`crate::remote::exec_host`] (its
//! stream a run of [`crate::remote::exec::pipe`]).

pub mod api;
pub mod channels;
mod ends;
pub mod found;
pub mod inbound;
pub mod link;
pub mod netwatch;
pub mod sockets;
pub mod timing;

pub use link::{start, Config, Dial, LinkState, NearLink, OpenError};
