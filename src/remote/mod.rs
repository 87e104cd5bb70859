//! VMs on other hosts: the remote feature, in one place.
//!
//! A VM on another host is reached one of three ways, and each ends in a local socket per
//! VM that the daemon's VM session uses as it uses a VM's own socket:
//! - **ssh, plain**: the user's own OpenSSH client keeps one master connection a host, whose
//!   own session runs the JVM scan in a plain shell, and whose forwards carry each VM's
//!   connection from a Unix socket in the daemon's private folder to the VM's agent
//!   ([`host`], over [`ssh`]). Nothing is installed on the host and no TCP port is opened.
//! - **ssh, through jdwpmux on the host** (`--far`): the far side started through that
//!   master, its socket forwarded, and the [`near`] link over it ([`through_far`], over
//!   [`ssh`]).
//! - **a runtime's exec** (`--exec`: kubectl, podman, docker): the exec's pipe is the near
//!   link's stream ([`exec`], the host's task [`exec_host`]); the binary copied in when the
//!   host has none ([`copy`]).
//!
//! The parts, each named once:
//! - [`protocol`]: the link between the near and the far side: frames, codec, compression,
//!   liveness, resume, the Hello's versions and verdicts (`protocol::hello`) and the line a
//!   far side prints when ready (`protocol::ready`). Pure. Both sides import it; neither
//!   imports the other.
//! - [`near`]: the near side of the link: one task per far side that keeps it up through
//!   cuts and gives a local socket per far-side VM.
//! - [`far`]: `jdwpmux far`, the far side on the VM's host: holds its VM connections through
//!   link cuts and serves them over the link.
//! - [`stop_answers`]: answers gathered at a stop by the far side and served near while still
//!   the VM's truth; the early answers. Pure tables.
//! - [`ssh`]: the ssh client's command lines, errors, config, paths, the master connection
//!   ([`ssh::master`]) and starting the far side through it ([`ssh::start_far`]).
//! - [`through_far`]: one `--ssh` host served through jdwpmux on it: the far side started
//!   through the master (or copied there), its socket forwarded, the near link over it.
//! - [`exec`] and [`copy`]: the runtime way in (the exec command: its spec, its output, the
//!   probe of a container, the jdwpmux it runs, its pipe as the near link's stream), and
//!   this binary copied to a host.
//! - [`exec_host`]: one `--exec` host served over the near link, reported as an `--ssh` host
//!   is.
//! - [`far_choice`]: how `serve` uses jdwpmux on a host (`--far` and its options), read by
//!   the settings and followed by both ways in over the near link. Pure.
//! - [`kube`]: Kubernetes pods (`--kube`): a pod read from the API server's JSON, its
//!   workload, the table that keeps each workload's container on a stable slot across
//!   rollouts, which pod containers have an exec host, and which rest. Pure; the daemon's
//!   `kube_vms` runs kubectl and the hosts.
//! - [`host`]: one remote host's config, its report (the JVMs found, their sockets) and the
//!   task serving it by plain ssh. [`naming`]: stable keys and sockets per JVM. [`status`]: a
//!   host's link state and its row in `list` and on the page.

pub mod copy;
pub mod exec;
pub mod exec_host;
pub mod far;
pub mod far_choice;
pub mod host;
pub mod kube;
pub mod naming;
pub mod near;
pub mod protocol;
pub mod runtime;
pub mod ssh;
pub mod status;
pub mod stop_answers;
pub mod through_far;

pub use host::{HostConfig, HostReport, RemoteVm};
pub use status::LinkState;
pub use ssh::cmd::SshOptions;
pub use ssh::destination::Destination;
