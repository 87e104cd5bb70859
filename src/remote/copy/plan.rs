//! Whether this binary may be copied to a host, and how. Pure: the shell scripts that run on
//! the host (a probe, and the copy itself), what the probe printed read into a `Probe`, and
//! the decision from it and this build (`Build`) to use the copy already there, copy, or
//! refuse with the reason in words.
//!
//! The copy lives in `${XDG_CACHE_HOME:-$HOME/.cache}/jdwpmux/VERSION/jdwpmux` on the host:
//! one per version, so hosts shared by near sides of several versions keep each, and a
//! later start of the same version finds it there. It is used only when it is this very
//! build: it says this version to `--version` and the host's size and CRC of it
//! (`identity`) are this binary's. Another build of the same version (a rebuild, a patched
//! package) is copied over; a copy whose bytes the host cannot sum is copied again, never
//! trusted on its version alone. One folder per version rather than per build: a folder per
//! build would need no tool on the host, but would leave every rebuild's binary there.

use std::path::{Path, PathBuf};

use super::glibc::Glibc;
use super::identity::{self, Identity, Sum};
use crate::remote::ssh::start_far::shell_quote;

/// What this binary is and needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Build {
    /// `std::env::consts::OS`, e.g. `linux`.
    pub os: String,
    /// `std::env::consts::ARCH`, e.g. `x86_64`.
    pub arch: String,
    /// The newest glibc it needs (None: linked against none).
    pub glibc: Option<Glibc>,
    /// Its version, as `--version` says it after `jdwpmux `.
    pub version: String,
    /// Its size and CRCs: which build it is.
    pub identity: Identity,
}

/// What the probe found on the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// `uname -s` and `uname -m`.
    pub os: String,
    pub machine: String,
    /// `getconf GNU_LIBC_VERSION`'s version (None: no glibc there).
    pub glibc: Option<Glibc>,
    /// The version's folder in the user's cache folder.
    pub dir: PathBuf,
    /// What the copy already there says to `--version` (None: there is none that runs).
    pub cached: Option<String>,
    /// The host's size and CRC of that copy (None: no copy, or the host could not tell).
    pub sum: Option<Sum>,
}

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// A copy of this build is there and runs: use it, copy nothing.
    Use(PathBuf),
    /// Copy this binary into the folder (its `jdwpmux`), over what is there.
    Copy(PathBuf, There),
    /// This binary cannot run there.
    Refuse(Mismatch),
}

/// Why this binary cannot run on a host: what the host has, what it needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Mismatch {
    #[error("it runs {os} on {machine}, this jdwpmux is built for {want_os} on {want_arch}")]
    Platform { os: String, machine: String, want_os: String, want_arch: String },
    #[error("it has glibc {have}, this jdwpmux needs glibc {need} or newer")]
    OldGlibc { have: Glibc, need: Glibc },
    #[error("it has no glibc (getconf GNU_LIBC_VERSION names none), this jdwpmux needs glibc {need} or newer")]
    NoGlibc { need: Glibc },
}

/// What a copy goes over in its folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum There {
    /// No file there that runs.
    Nothing,
    /// One that says something else to `--version`: another version, or why it cannot run.
    Other(String),
    /// This version but other bytes: another build.
    OtherBuild { theirs: Sum, ours: String },
    /// This version, but the host cannot say its size and CRC (no `cksum` or `crc32`).
    Untold,
}

impl There {
    /// Why the copy there is not used, in words (None: there is none).
    pub fn said(&self) -> Option<String> {
        match self {
            There::Nothing => None,
            There::Other(said) => Some(format!("the copy there says {said:?} to --version: replaced")),
            There::OtherBuild { theirs, ours } => Some(format!("the copy there is another build: replaced ({theirs}; this jdwpmux: {ours})")),
            There::Untold => Some("the copy there cannot be told from another build (the host printed no size and CRC of it: no cksum or crc32 there): copied again".into()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the host's answer to the probe is not understood ({0})")]
pub struct BadProbe(pub String);

/// The file name of the binary in its folder.
pub const NAME: &str = "jdwpmux";
/// A copy on its way: `.jdwpmux.part.PID` in the same folder, renamed when whole.
const PART: &str = ".jdwpmux.part.";
/// Minutes after which a part left by a cut copy is removed by the next copy.
const STALE_PART_MINUTES: u32 = 60;

/// The cache folder of `version` on the host, as the host's shell spells it.
fn cache_dir_script(version: &str) -> String {
    format!(
        r#"case "${{XDG_CACHE_HOME:-}}" in /*) c="$XDG_CACHE_HOME" ;; *) c="${{HOME%/}}/.cache" ;; esac
d="$c/jdwpmux/"{}"#,
        shell_quote(version)
    )
}

/// The probe: the host's OS and machine, its glibc, the cache folder, and what a copy there
/// says to `--version` with its size and CRC. Run by `sh`, whatever the login shell.
pub fn probe_script(version: &str) -> String {
    format!(
        r#"echo "uname $(uname -s) $(uname -m)"
echo "glibc $(getconf GNU_LIBC_VERSION 2>/dev/null)"
{}
echo "dir $d"
f="$d/{NAME}"
if [ -f "$f" ] && [ -x "$f" ]; then
echo "cached $("$f" --version 2>&1 | head -n 1)"
{}
fi
"#,
        cache_dir_script(version),
        identity::SUM_SCRIPT
    )
}

/// The copy: `size` bytes on stdin written to a part file in `dir` (folders 0700), checked
/// whole, made runnable, run with `--version` (printed, and it must say `version`), and only
/// then renamed to its name: a copy cut anywhere leaves no half binary under the final name.
/// Its commands are `exec::place::NEEDED` (`find` is done without), as a container lacking
/// one is told.
pub fn copy_script(dir: &Path, size: u64, version: &str) -> String {
    let d = shell_quote(&dir.display().to_string());
    let want = shell_quote(&format!("jdwpmux {version}"));
    format!(
        r#"set -e
umask 077
d={d}
mkdir -p "$d"
chmod 700 "${{d%/*}}" "$d"
find "$d" -maxdepth 1 -name '{PART}*' -mmin +{STALE_PART_MINUTES} -exec rm -f {{}} + 2>/dev/null || true
t="$d/{PART}$$"
trap 'rm -f "$t"' EXIT
trap 'rm -f "$t"; exit 1' HUP INT TERM PIPE
cat > "$t"
n=$(wc -c < "$t")
if [ "$n" -ne {size} ]; then echo "the copy has $n of {size} bytes" >&2; exit 3; fi
chmod 755 "$t"
v=$("$t" --version 2>&1 | {{ read -r a || true; echo "$a"; }})
echo "$v"
if [ "$v" != {want} ]; then echo "the copy does not run here: $v" >&2; exit 4; fi
mv -f "$t" "$d/{NAME}"
"#
    )
}

/// What the probe printed, read.
pub fn parse_probe(out: &str) -> Result<Probe, BadProbe> {
    let (mut uname, mut glibc, mut dir, mut cached, mut sum) = (None, None, None, None, None);
    for line in out.lines() {
        let (key, rest) = line.split_once(' ').unwrap_or((line, ""));
        match key {
            "uname" => uname = Some(rest.trim()),
            "glibc" => glibc = Some(rest.trim()),
            "dir" => dir = Some(rest),
            "cached" => cached = Some(rest.trim().to_string()),
            // A sum not understood is no identity: the copy is copied again.
            "sum" => sum = identity::parse_sum(rest),
            // The login's own chatter (a profile that prints) is not the probe's.
            _ => {}
        }
    }
    let uname = uname.ok_or_else(|| BadProbe("no uname line".into()))?;
    let (os, machine) = uname.split_once(' ').filter(|(o, m)| !o.is_empty() && !m.is_empty()).ok_or_else(|| BadProbe(format!("uname said {uname:?}")))?;
    let glibc = match glibc.ok_or_else(|| BadProbe("no glibc line".into()))? {
        "" => None,
        g => Some(g.strip_prefix("glibc ").and_then(Glibc::parse).ok_or_else(|| BadProbe(format!("getconf GNU_LIBC_VERSION said {g:?}")))?),
    };
    let dir = PathBuf::from(dir.ok_or_else(|| BadProbe("no cache folder".into()))?);
    if !dir.is_absolute() {
        return Err(BadProbe(format!("the cache folder {} is not absolute (no HOME?)", dir.display())));
    }
    Ok(Probe { os: os.to_string(), machine: machine.to_string(), glibc, dir, cached: cached.filter(|c| !c.is_empty()), sum })
}

/// `uname -s` as Rust names the OS.
fn os_of(uname_s: &str) -> String {
    match uname_s {
        "Darwin" => "macos".into(),
        other => other.to_ascii_lowercase(),
    }
}

/// `uname -m` as Rust names the architecture (None: a machine name not known here).
fn arch_of(machine: &str) -> Option<&'static str> {
    Some(match machine {
        "x86_64" | "amd64" => "x86_64",
        "aarch64" | "arm64" => "aarch64",
        "i386" | "i486" | "i586" | "i686" => "x86",
        m if m.starts_with("armv6") || m.starts_with("armv7") => "arm",
        "riscv64" => "riscv64",
        "ppc64le" => "powerpc64le",
        "ppc64" => "powerpc64",
        "s390x" => "s390x",
        "loongarch64" => "loongarch64",
        _ => return None,
    })
}

/// This build's architecture as `arch_of` names the host's (Rust says `powerpc64` for both
/// byte orders).
pub fn build_arch(arch: &str, little_endian: bool) -> String {
    match arch {
        "powerpc64" if little_endian => "powerpc64le".into(),
        a => a.into(),
    }
}

/// From what the host has and what this build is, what to do.
pub fn decide(probe: &Probe, build: &Build) -> Plan {
    if os_of(&probe.os) != build.os || arch_of(&probe.machine) != Some(build.arch.as_str()) {
        return Plan::Refuse(Mismatch::Platform { os: probe.os.clone(), machine: probe.machine.clone(), want_os: build.os.clone(), want_arch: build.arch.clone() });
    }
    if let Some(need) = build.glibc {
        match probe.glibc {
            None => return Plan::Refuse(Mismatch::NoGlibc { need }),
            Some(have) if have < need => return Plan::Refuse(Mismatch::OldGlibc { have, need }),
            Some(_) => {}
        }
    }
    let there = match &probe.cached {
        None => There::Nothing,
        Some(said) if *said != format!("jdwpmux {}", build.version) => There::Other(said.clone()),
        // This version: used only when its bytes are this binary's.
        Some(_) => match probe.sum {
            Some(sum) if build.identity.is(&sum) => return Plan::Use(probe.dir.join(NAME)),
            Some(theirs) => There::OtherBuild { theirs, ours: build.identity.said_as(&theirs) },
            None => There::Untold,
        },
    };
    Plan::Copy(probe.dir.clone(), there)
}

/// Whether what the copy's `--version` printed is this version.
pub fn runs_as(out: &str, version: &str) -> bool {
    out.lines().any(|l| l.trim() == format!("jdwpmux {version}"))
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
