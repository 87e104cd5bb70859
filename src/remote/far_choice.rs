//! How `serve` uses jdwpmux on a host (`--far`, `--far-path`, `--far-hold`, `--far-copy`,
//! `--far-take-over`, `--near-cache`): the one choice every `--ssh` host served through its
//! far side and every `--exec` host is run with. Pure: the settings read it, the ways in
//! follow it.

/// When `serve --ssh` uses jdwpmux on a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FarMode {
    /// Never: VMs are reached through ssh forwards.
    Never,
    /// When a compatible jdwpmux runs on the host; else through ssh forwards.
    #[default]
    Auto,
    /// Always: a host without a usable jdwpmux is retried, never reached another way.
    Always,
}

impl std::fmt::Display for FarMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FarMode::Never => "never",
            FarMode::Auto => "auto",
            FarMode::Always => "always",
        })
    }
}

/// How the far side is used for every host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FarChoice {
    pub mode: FarMode,
    /// The jdwpmux to run on the host: a name its PATH finds, or a path.
    pub path: String,
    /// How long the far side is asked to hold the VM connections through a cut, in seconds.
    pub hold_secs: u32,
    /// When the host has none that can be used, copy this binary there (`--far-copy`).
    pub copy: bool,
    /// Ask the far side for a stop's gathered answers (unless `--near-cache never`).
    pub gather: bool,
    /// Take the far side over from another `serve` of the login connected to it
    /// (`--far-take-over`).
    pub take_over: bool,
}

/// The hold asked of the far side by default (`--far-hold`): a dropped Wi-Fi, a VPN that
/// reconnects, a laptop carried to another room.
pub const DEFAULT_HOLD_SECS: u32 = 300;

impl Default for FarChoice {
    fn default() -> Self {
        FarChoice { mode: FarMode::Auto, path: "jdwpmux".into(), hold_secs: DEFAULT_HOLD_SECS, copy: false, gather: true, take_over: false }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_is_the_default() {
        let far = FarChoice::default();
        assert_eq!((far.mode, far.path.as_str(), far.hold_secs), (FarMode::Auto, "jdwpmux", DEFAULT_HOLD_SECS));
    }
}
