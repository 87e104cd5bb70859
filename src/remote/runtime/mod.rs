//! Containers reached through their runtime, as this user: a JVM in a container whose network
//! namespace this user may not enter (a root Docker container, one running as a uid with no
//! user here) but whose runtime this user may use (a member of the `docker` group; Docker
//! Desktop or a remote context through the same CLI) is reached as `--exec` reaches a
//! container: jdwpmux's far side run inside it through `docker exec -i NAME`, with the rule
//! `--far-copy` states for copying this binary in. Nothing is done through the runtime that
//! the user could not do by hand with the same CLI.
//!
//! - [`names`]: what `docker inspect` says of a container (its name, its compose service),
//!   asked once per container. Pure parse, one bounded run.
//! - [`cli`]: whether this user may use the runtime's CLI now (asked once, again a minute
//!   after a refusal), and the `--exec` spec that reaches a container by name.
//! - [`plan`]: which containers have an exec host, started when their JVM is first seen
//!   unreachable and ended once the container has been gone a while. Pure table.

pub mod cli;
pub mod names;
pub mod plan;
