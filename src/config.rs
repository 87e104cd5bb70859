//! The TOML config file: every `serve` setting, keys named like the long flags.
//!
//! Precedence is command line > environment (`JDWPMUX_*`) > file > built-in defaults. The
//! file's values become the command's defaults before clap parses, so clap itself applies
//! that order, and `--help` shows the values in effect.

use std::ffi::OsString;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Deserializer};

use crate::discovery::scan::ScanRange;
use crate::settings::DdmMode;

/// Environment variable naming the config file.
pub const CONFIG_ENV: &str = "JDWPMUX_CONFIG";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("config {path}: cannot read it: {message}")]
    Read { path: PathBuf, message: String },
    #[error("config {path}: line {line}: {message}")]
    Invalid { path: PathBuf, line: usize, message: String },
}

/// A value parsed with its `FromStr`, so a bad one is reported with its line.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed<T>(pub T);

impl<'de, T: FromStr> Deserialize<'de> for Parsed<T>
where
    T::Err: std::fmt::Display,
{
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map(Parsed).map_err(serde::de::Error::custom)
    }
}

/// A string or path value that must not be empty: `capture = ""` would reach clap as a
/// flag given no value and fail there, blaming a flag the user never typed.
fn non_empty<'de, D: Deserializer<'de>, T: From<String>>(d: D) -> Result<Option<T>, D::Error> {
    let s = String::deserialize(d)?;
    if s.is_empty() {
        return Err(serde::de::Error::custom("an empty value: leave the key out instead"));
    }
    Ok(Some(T::from(s)))
}

/// A list of non-empty strings.
fn non_empty_list<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    if v.iter().any(String::is_empty) {
        return Err(serde::de::Error::custom("an empty value in the list"));
    }
    Ok(Some(v))
}

/// Every key the file may hold; anything else is an error.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ConfigFile {
    #[serde(default, deserialize_with = "non_empty_list")]
    pub vm: Option<Vec<String>>,
    pub scan: Option<Vec<Parsed<ScanRange>>>,
    pub no_scan: Option<bool>,
    pub no_proc: Option<bool>,
    pub proc: Option<bool>,
    #[serde(default, deserialize_with = "non_empty_list")]
    pub proc_match: Option<Vec<String>>,
    pub other_users: Option<bool>,
    pub ssh: Option<Vec<Parsed<crate::remote::Destination>>>,
    #[serde(default, deserialize_with = "non_empty")]
    pub ssh_config: Option<PathBuf>,
    pub ssh_interval: Option<f64>,
    pub ssh_keepalive: Option<u64>,
    pub far: Option<crate::remote::far_choice::FarMode>,
    #[serde(default, deserialize_with = "non_empty")]
    pub far_path: Option<String>,
    pub far_hold: Option<u32>,
    pub far_copy: Option<bool>,
    pub podman_sudo: Option<bool>,
    pub far_take_over: Option<bool>,
    pub exec: Option<Vec<Parsed<crate::remote::exec::ExecSpec>>>,
    pub kube: Option<Vec<Parsed<crate::remote::kube::KubeSpec>>>,
    #[serde(default, deserialize_with = "non_empty")]
    pub kube_context: Option<String>,
    pub scan_interval: Option<f64>,
    pub adb: Option<Parsed<SocketAddr>>,
    pub no_adb: Option<bool>,
    pub listen: Option<Parsed<IpAddr>>,
    pub allow_remote: Option<bool>,
    pub allow: Option<Vec<Parsed<crate::listen::allow::Cidr>>>,
    pub allow_user: Option<Vec<Parsed<crate::listen::owner::AllowUser>>>,
    pub base_port: Option<u16>,
    pub current_port: Option<u16>,
    #[serde(default, deserialize_with = "non_empty")]
    pub select: Option<String>,
    pub ddm: Option<DdmMode>,
    pub max_debuggers: Option<usize>,
    pub near_cache: Option<crate::settings::NearCacheMode>,
    pub stall_timeout: Option<f64>,
    pub spin_us: Option<u64>,
    pub cpu_pin: Option<bool>,
    /// From when pinning was on by default: `true` still turns `cpu-pin` off, `false` says
    /// nothing. Accepted so that files that have it still load; not in the example.
    pub no_cpu_pin: Option<bool>,
    #[serde(default, deserialize_with = "non_empty")]
    pub capture: Option<PathBuf>,
    pub capture_format: Option<Parsed<crate::capture::Format>>,
    pub capture_max_bytes: Option<u64>,
    pub capture_snaplen: Option<usize>,
    #[serde(default, deserialize_with = "non_empty")]
    pub control: Option<PathBuf>,
    pub web: Option<Parsed<SocketAddr>>,
    pub no_web: Option<bool>,
}

impl ConfigFile {
    pub fn load(path: &Path) -> Result<ConfigFile, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::Read { path: path.into(), message: e.to_string() })?;
        Self::parse(&text, path)
    }

    pub fn parse(text: &str, path: &Path) -> Result<ConfigFile, ConfigError> {
        toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(1, |s| text[..s.start.min(text.len())].matches('\n').count() + 1);
            ConfigError::Invalid { path: path.into(), line, message: e.message().trim().replace('\n', " ") }
        })
    }

    /// What the file says of `--cpu-pin`: `cpu-pin`, unless `no-cpu-pin = true` vetoes it.
    pub fn cpu_pin_value(&self) -> Option<bool> {
        self.cpu_pin.map(|on| on && self.no_cpu_pin != Some(true))
    }

    /// Makes the file's values the defaults of the `serve` flags (and of `--control`).
    pub fn apply(&self, cmd: clap::Command) -> clap::Command {
        fn one(name: &'static str, v: Option<String>, cmd: clap::Command) -> clap::Command {
            match v {
                Some(v) => cmd.mut_arg(name, |a| a.default_value(v)),
                None => cmd,
            }
        }
        fn many(name: &'static str, v: Option<Vec<String>>, cmd: clap::Command) -> clap::Command {
            match v {
                Some(v) => cmd.mut_arg(name, |a| a.default_values(v)),
                None => cmd,
            }
        }
        let s = |v: &Option<String>| v.clone();
        let cmd = one("control", self.control.as_ref().map(|p| p.display().to_string()), cmd);
        cmd.mut_subcommand("serve", |c| {
            let c = many("vms", self.vm.clone(), c);
            let c = many("scans", self.scan.as_ref().map(|v| v.iter().map(|r| r.0.to_string()).collect()), c);
            let c = one("no_scan", self.no_scan.map(|b| b.to_string()), c);
            let c = one("no_proc", self.no_proc.map(|b| b.to_string()), c);
            let c = one("proc", self.proc.map(|b| b.to_string()), c);
            let c = many("proc_match", self.proc_match.clone(), c);
            let c = one("other_users", self.other_users.map(|b| b.to_string()), c);
            let c = one("podman_sudo", self.podman_sudo.map(|b| b.to_string()), c);
            let c = many("ssh", self.ssh.as_ref().map(|v| v.iter().map(|d| d.0.to_string()).collect()), c);
            let c = one("ssh_config", self.ssh_config.as_ref().map(|p| p.display().to_string()), c);
            let c = one("ssh_interval", self.ssh_interval.map(|f| f.to_string()), c);
            let c = one("ssh_keepalive", self.ssh_keepalive.map(|n| n.to_string()), c);
            let c = one("far", self.far.map(|m| m.to_string()), c);
            let c = one("far_path", s(&self.far_path), c);
            let c = one("far_hold", self.far_hold.map(|n| n.to_string()), c);
            let c = one("far_copy", self.far_copy.map(|b| b.to_string()), c);
            let c = one("far_take_over", self.far_take_over.map(|b| b.to_string()), c);
            let c = many("exec", self.exec.as_ref().map(|v| v.iter().map(|e| e.0.to_string()).collect()), c);
            let c = many("kube", self.kube.as_ref().map(|v| v.iter().map(|k| k.0.to_string()).collect()), c);
            let c = one("kube_context", s(&self.kube_context), c);
            let c = one("scan_interval", self.scan_interval.map(|f| f.to_string()), c);
            let c = one("adb", self.adb.as_ref().map(|a| a.0.to_string()), c);
            let c = one("no_adb", self.no_adb.map(|b| b.to_string()), c);
            let c = one("listen", self.listen.as_ref().map(|a| a.0.to_string()), c);
            let c = one("allow_remote", self.allow_remote.map(|b| b.to_string()), c);
            let c = many("allow", self.allow.as_ref().map(|v| v.iter().map(|r| r.0.to_string()).collect()), c);
            let c = many("allow_users", self.allow_user.as_ref().map(|v| v.iter().map(|u| u.0.to_string()).collect()), c);
            let c = one("base_port", self.base_port.map(|p| p.to_string()), c);
            let c = one("current_port", self.current_port.map(|p| p.to_string()), c);
            let c = one("select", s(&self.select), c);
            let c = one("ddm", self.ddm.map(|d| d.to_possible_value_name()), c);
            let c = one("max_debuggers", self.max_debuggers.map(|n| n.to_string()), c);
            let c = one("near_cache", self.near_cache.map(|m| m.to_string()), c);
            let c = one("stall_timeout", self.stall_timeout.map(|f| f.to_string()), c);
            let c = one("spin_us", self.spin_us.map(|n| n.to_string()), c);
            let c = one("cpu_pin", self.cpu_pin_value().map(|b| b.to_string()), c);
            let c = one("capture", self.capture.as_ref().map(|p| p.display().to_string()), c);
            let c = one("capture_format", self.capture_format.as_ref().map(|f| f.0.to_string()), c);
            let c = one("capture_max_bytes", self.capture_max_bytes.map(|b| b.to_string()), c);
            let c = one("capture_snaplen", self.capture_snaplen.map(|b| b.to_string()), c);
            let c = one("web", self.web.as_ref().map(|a| a.0.to_string()), c);
            one("no_web", self.no_web.map(|b| b.to_string()), c)
        })
    }
}

impl DdmMode {
    fn to_possible_value_name(self) -> String {
        match self {
            DdmMode::Auto => "auto",
            DdmMode::Always => "always",
            DdmMode::Never => "never",
        }
        .to_string()
    }
}

/// The per-user config file: `$XDG_CONFIG_HOME/jdwpmux/config.toml`, else
/// `~/.config/jdwpmux/config.toml`.
pub fn default_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("jdwpmux").join("config.toml"))
}

/// Which config file applies: `--config FILE` on the command line, else `$JDWPMUX_CONFIG`,
/// else the per-user file if it exists. `true` when it was named (so it must exist).
pub fn locate(args: &[OsString]) -> Option<(PathBuf, bool)> {
    let mut it = args.iter().skip(1);
    while let Some(a) = it.next() {
        let a = a.to_string_lossy();
        if a == "--" {
            break;
        }
        if a == "--config" {
            return it.next().map(|p| (PathBuf::from(p), true));
        }
        if let Some(p) = a.strip_prefix("--config=") {
            return Some((PathBuf::from(p), true));
        }
    }
    if let Some(p) = std::env::var_os(CONFIG_ENV).filter(|p| !p.is_empty()) {
        return Some((PathBuf::from(p), true));
    }
    default_path().filter(|p| p.exists()).map(|p| (p, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ConfigFile, ConfigError> {
        ConfigFile::parse(text, Path::new("test.toml"))
    }

    #[test]
    fn the_example_config_parses_and_sets_every_key() {
        let text = include_str!("../config/jdwpmux.toml");
        let c = parse(text).unwrap();
        // Every key is present in the example, commented out or not: check they all parse
        // when uncommented.
        let uncommented: String = text
            .lines()
            .map(|l| {
                let r = l.strip_prefix("# ").unwrap_or(l);
                let is_key = r.split_once(" = ").is_some_and(|(k, _)| k.chars().all(|c| c.is_ascii_lowercase() || c == '-'));
                if is_key { r } else { l }
            })
            .collect::<Vec<_>>()
            .join("\n");
        let all = parse(&uncommented).unwrap();
        assert!(all.vm.is_some() && all.scan.is_some() && all.capture.is_some() && all.allow.is_some() && all.allow_user.is_some());
        assert!(all.no_scan.is_some() && all.adb.is_some() && all.control.is_some());
        assert!(all.web.is_some() && all.no_web.is_some());
        assert!(all.spin_us.is_some() && all.cpu_pin.is_some());
        assert_eq!(all.near_cache, Some(crate::settings::NearCacheMode::Auto));
        assert!(all.proc.is_some() && all.no_proc.is_some() && all.proc_match.is_some() && all.other_users.is_some());
        assert!(all.podman_sudo.is_some());
        assert!(all.ssh.is_some() && all.ssh_config.is_some() && all.ssh_interval.is_some() && all.ssh_keepalive.is_some());
        assert!(all.far.is_some() && all.far_path.is_some() && all.far_hold.is_some() && all.far_copy.is_some() && all.far_take_over.is_some());
        assert!(all.exec.is_some() && all.kube.is_some() && all.kube_context.is_some());
        drop(c);
    }

    #[test]
    fn ssh_hosts_are_destinations_and_nothing_ssh_would_read_as_an_option() {
        let c = parse("ssh = [\"build-box\", \"deploy@staging-2\"]\nssh-interval = 0.5").unwrap();
        let hosts: Vec<String> = c.ssh.unwrap().into_iter().map(|d| d.0.host).collect();
        assert_eq!(hosts, ["build-box", "staging-2"]);
        let err = parse("listen = \"127.0.0.1\"\nssh = [\"-oProxyCommand=sh\"]").unwrap_err();
        assert!(matches!(&err, ConfigError::Invalid { line: 2, message, .. } if message.contains("expected HOST or USER@HOST")), "{err}");
        use clap::CommandFactory;
        assert!(crate::cli::Cli::command().try_get_matches_from(["jdwpmux", "serve", "--ssh", "-oProxyCommand=sh"]).is_err());
    }

    #[test]
    fn kube_namespaces_and_their_context() {
        let c = parse("kube = [\"shop:app=orders\", \"billing\"]\nkube-context = \"prod\"").unwrap();
        let kube: Vec<String> = c.kube.unwrap().into_iter().map(|k| k.0.to_string()).collect();
        assert_eq!(kube, ["shop:app=orders", "billing"]);
        assert_eq!(c.kube_context.as_deref(), Some("prod"));
        let err = parse("kube = [\"Shop\"]").unwrap_err();
        assert!(err.to_string().contains("DNS label"), "{err}");
        assert!(parse("kube-context = \"\"").is_err());
    }

    #[test]
    fn cpu_pinning_is_off_unless_asked_and_the_command_line_wins() {
        use clap::{CommandFactory, FromArgMatches};
        let pins = |file: &str, args: &[&str]| {
            let cmd = parse(file).unwrap().apply(crate::cli::Cli::command());
            let matches = cmd.try_get_matches_from(["jdwpmux", "serve"].iter().chain(args)).unwrap();
            match crate::cli::Cli::from_arg_matches(&matches).unwrap().command {
                crate::cli::Command::Serve(a) => a.pins_cpu(),
                other => panic!("{other:?}"),
            }
        };
        let cases: [(&str, &[&str], bool); 10] = [
            ("", &[], false),
            ("", &["--cpu-pin"], true),
            ("cpu-pin = true", &[], true),
            ("cpu-pin = true", &["--no-cpu-pin"], false),
            ("cpu-pin = false", &["--cpu-pin"], true),
            // The key from when pinning was the default: true still vetoes, false says nothing.
            ("no-cpu-pin = true", &["--cpu-pin"], true),
            ("cpu-pin = true\nno-cpu-pin = true", &[], false),
            ("no-cpu-pin = false", &[], false),
            ("", &["--no-cpu-pin", "--cpu-pin"], true),
            ("", &["--cpu-pin", "--no-cpu-pin"], false),
        ];
        for (file, args, want) in cases {
            assert_eq!(pins(file, args), want, "{file:?} {args:?}");
        }
    }

    #[test]
    fn allow_user_takes_names_uids_and_any_and_reaches_the_flag() {
        use clap::{CommandFactory, FromArgMatches};
        use crate::listen::owner::AllowUser;
        let c = parse("allow-user = [\"alice\", \"1001\", \"any\"]").unwrap();
        let cmd = c.apply(crate::cli::Cli::command());
        let matches = cmd.try_get_matches_from(["jdwpmux", "serve"]).unwrap();
        match crate::cli::Cli::from_arg_matches(&matches).unwrap().command {
            crate::cli::Command::Serve(a) => {
                assert_eq!(a.allow_users, [AllowUser::Name("alice".into()), AllowUser::Uid(1001), AllowUser::Any]);
            }
            other => panic!("{other:?}"),
        }
        let err = parse("\nallow-user = [\"-oops\"]").unwrap_err();
        assert!(matches!(&err, ConfigError::Invalid { line: 2, message, .. } if message.contains("expected a user name")), "{err}");
    }

    #[test]
    fn a_stray_key_is_an_error_with_its_line() {
        let err = parse("listen = \"127.0.0.1\"\n\nbase_prot = 9000\n").unwrap_err();
        match err {
            ConfigError::Invalid { line, message, .. } => {
                assert_eq!(line, 3);
                assert!(message.contains("base_prot"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_values_name_their_line() {
        for (text, line, needle) in [
            ("base-port = 70000\n", 1, "u16"),
            ("\nscan = [\"127.0.0.1:9-1\"]\n", 2, "HOST:FIRST-LAST"),
            ("ddm = \"sometimes\"\n", 1, "sometimes"),
            ("listen = \"localhost\"\n", 1, "invalid"),
        ] {
            match parse(text).unwrap_err() {
                ConfigError::Invalid { line: l, message, .. } => {
                    assert_eq!(l, line, "{text}");
                    assert!(message.contains(needle), "{text}: {message}");
                }
                other => panic!("{other:?}"),
            }
        }
    }

    /// Found by fuzzing: `capture = ""` was accepted, then failed clap's parsing as
    /// "a value is required for '--capture <FILE>'", a flag the user never gave.
    #[test]
    fn empty_strings_are_errors_with_their_line() {
        for (text, line) in [("\ncapture = \"\"\n", 2), ("control = \"\"", 1), ("select = \"\"", 1), ("vm = [\"a:1\", \"\"]", 1)] {
            match parse(text).unwrap_err() {
                ConfigError::Invalid { line: l, message, .. } => {
                    assert_eq!(l, line, "{text}");
                    assert!(message.contains("empty value"), "{text}: {message}");
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(parse("capture = \"x.pcapng\"").unwrap().capture, Some(PathBuf::from("x.pcapng")));
    }

    #[test]
    fn locate_prefers_the_command_line() {
        let args: Vec<OsString> = ["jdwpmux", "serve", "--config", "/x.toml"].iter().map(OsString::from).collect();
        assert_eq!(locate(&args), Some((PathBuf::from("/x.toml"), true)));
        let args: Vec<OsString> = ["jdwpmux", "--config=/y.toml", "serve"].iter().map(OsString::from).collect();
        assert_eq!(locate(&args), Some((PathBuf::from("/y.toml"), true)));
    }
}
