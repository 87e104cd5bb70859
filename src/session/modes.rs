//! The modes a session runs in, as `settings` builds them from the command line and the
//! config file: when to speak DDM, when to answer near, and the timeouts (their defaults
//! are `settings`' constants).

use std::time::Duration;

/// When to probe a VM with the DDM HELO chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DdmMode {
    /// Only VMs that say they are Android (Dalvik/ART) or were reached through adb.
    Auto,
    /// Every VM. HotSpot may crash on a DDM packet: use with care.
    Always,
    /// No DDM at all: a plain debugger proxy.
    Never,
}

/// When the proxy answers class, method and VM data that never changes from what the VM
/// said before (see `session::nearcache`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NearCacheMode {
    /// For VMs reached through ssh (jdwpmux on the host or ssh forwards), where each round
    /// trip costs the link's delay.
    #[default]
    Auto,
    /// For every VM, local ones too.
    Always,
    /// Never: every command goes to the VM.
    Never,
}

impl std::fmt::Display for NearCacheMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NearCacheMode::Auto => "auto",
            NearCacheMode::Always => "always",
            NearCacheMode::Never => "never",
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    pub connect: Duration,
    pub handshake: Duration,
    pub attach_wait: Duration,
    pub debugger_handshake: Duration,
    pub debugger_stall: Duration,
}
