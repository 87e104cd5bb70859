//! Where this binary goes in a container that has none (`--far-copy` through the exec): the
//! probe run there (the OS, machine and glibc as for an ssh host, the commands the copy needs
//! that the container lacks, then the first folder of the candidates that can be made,
//! written and run from, with its free space) and what it printed, judged with the ssh
//! copy's own rules (`copy::plan::decide`) plus those a container adds: commands missing, no
//! usable folder, too little room. Pure.

use std::path::PathBuf;

use crate::remote::copy::identity;
use crate::remote::copy::plan::{self, Build, Mismatch, Plan, Probe};
use crate::remote::ssh::start_far::shell_quote;

/// Why this binary is not copied into a container.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("{0}")]
    Mismatch(#[from] Mismatch),
    /// Commands the probe or the copy run that the container's shell does not find.
    #[error("its shell finds no {} (the copy needs {}: an image with coreutils or busybox has them)", .0.join(", "), NEEDED.join(" "))]
    Missing(Vec<String>),
    /// No candidate folder can be used: each with why.
    #[error("it has no folder this jdwpmux can be written to and run from ({})", .0.iter().map(|(d, why)| format!("{d}: {}", why_said(why))).collect::<Vec<_>>().join("; "))]
    NoPlace(Vec<(String, String)>),
    #[error("{dir} has {free_kib} KiB free, this jdwpmux needs {need_kib} KiB")]
    NoRoom { dir: PathBuf, free_kib: u64, need_kib: u64 },
    #[error("its answer to the probe is not understood ({0})")]
    Bad(String),
}

impl Refusal {
    /// Whether a folder was passed over only because nothing there can run.
    pub fn noexec(&self) -> bool {
        matches!(self, Refusal::NoPlace(s) if s.iter().any(|(_, why)| why == "noexec"))
    }
}

/// The commands the probe and the copy (`plan::copy_script`) cannot do without; `id`, `df`,
/// `getconf` and `find` are used when there and done without when not.
pub const NEEDED: [&str; 7] = ["uname", "mkdir", "chmod", "cat", "wc", "mv", "rm"];

/// A probe's reason for passing over a folder, in words.
fn why_said(why: &str) -> &str {
    match why {
        "unwritable" => "cannot be made or written",
        "noexec" => "a file there cannot be run (a noexec mount, as Docker's --tmpfs makes by default)",
        other => other,
    }
}

/// The folders tried, in order: the user's cache folder as on an ssh host (not when HOME is
/// unset or `/`: no home, and `/` is no place to leave files in), then /tmp and /var/tmp (a
/// read-only root file system often leaves an emptyDir at /tmp).
const CANDIDATES: &str = r#"case "${XDG_CACHE_HOME:-}" in
  /*) c="${XDG_CACHE_HOME%/}" ;;
  *) case "${HOME:-/}" in /) c= ;; *) c="${HOME%/}/.cache" ;; esac ;;
esac
u=$(id -u 2>/dev/null) || u=0
set -- "/tmp/jdwpmux-$u/$v" "/var/tmp/jdwpmux-$u/$v"
if [ -n "$c" ]; then set -- "$c/jdwpmux/$v" "$@"; fi"#;

/// The probe, for `sh -c`: busybox, dash and bash; no `head`, `sed` or `getconf` needed
/// (minimal images lack them: glibc's own libc.so.6 says its version when run). A folder is
/// used when it can be made and written and a file written there runs (one without `#!`:
/// the shell runs it itself, so no /bin/sh is needed, and a noexec mount refuses it).
pub fn probe_script(version: &str) -> String {
    format!(
        r#"umask 077
m=
for x in {needed}; do command -v "$x" >/dev/null 2>&1 || m="$m $x"; done
echo "missing$m"
echo "uname $(uname -s 2>/dev/null) $(uname -m 2>/dev/null)"
g=$(getconf GNU_LIBC_VERSION 2>/dev/null)
if [ -z "$g" ]; then
  for l in /lib/x86_64-linux-gnu/libc.so.6 /usr/lib/x86_64-linux-gnu/libc.so.6 /lib/aarch64-linux-gnu/libc.so.6 /usr/lib/aarch64-linux-gnu/libc.so.6 /lib64/libc.so.6 /usr/lib64/libc.so.6 /lib/libc.so.6; do
    if [ -x "$l" ]; then
      b=$("$l" 2>/dev/null | {{ read -r a; echo "$a"; }})
      case "$b" in *"release version "*) g="glibc ${{b##*release version }}"; g="${{g%.}}"; break ;; esac
    fi
  done
fi
echo "glibc $g"
if [ -n "$m" ]; then exit 0; fi
v={v}
{CANDIDATES}
for d in "$@"; do
  made=
  if [ ! -d "$d" ]; then made=1; fi
  if ! {{ [ -d "$d" ] || mkdir -p "$d"; }} 2>/dev/null || [ ! -w "$d" ]; then echo "skip unwritable $d"; continue; fi
  t="$d/.jdwpmux.probe.$$"
  w=
  if ! {{ echo 'exit 0' > "$t" && chmod 700 "$t"; }} 2>/dev/null; then w=unwritable
  elif ! "$t" >/dev/null 2>&1; then w=noexec
  fi
  rm -f "$t"
  if [ -n "$w" ]; then
    # Folders made for nothing are not left behind (only empty ones go).
    if [ -n "$made" ]; then rmdir "$d" "${{d%/*}}" 2>/dev/null; fi
    echo "skip $w $d"
    continue
  fi
  echo "dir $d"
  df -Pk "$d" 2>/dev/null | {{ read -r h; read -r f s u a r; echo "free $a"; }}
  f="$d/{name}"
  if [ -f "$f" ] && [ -x "$f" ]; then
    echo "cached $("$f" --version 2>&1 | {{ read -r a; echo "$a"; }})"
    {sum}
  fi
  exit 0
done
echo "nodir"
"#,
        needed = NEEDED.join(" "),
        v = shell_quote(version),
        name = plan::NAME,
        sum = identity::SUM_SCRIPT,
    )
}

/// What to do, from what the probe printed, this build and this binary's size.
pub fn decide(out: &str, build: &Build, size: u64) -> Result<Plan, Refusal> {
    let missing: Vec<String> = match out.lines().find_map(|l| l.strip_prefix("missing").filter(|m| m.is_empty() || m.starts_with(' '))) {
        Some(m) => m.split_whitespace().map(str::to_string).collect(),
        None => return Err(Refusal::Bad("no missing line".into())),
    };
    let nodir = out.lines().any(|l| l == "nodir");
    if !missing.is_empty() || nodir {
        // A binary that could not run there anyway is refused for that first: its remedy
        // is another build or image, not a command or a folder.
        if let Ok(probe) = plan::parse_probe(&format!("{out}\ndir /\n")) {
            if let Plan::Refuse(m) = plan::decide(&probe, build) {
                return Err(m.into());
            }
        }
    }
    if !missing.is_empty() {
        return Err(Refusal::Missing(missing));
    }
    if nodir {
        let skipped = out.lines().filter_map(|l| l.strip_prefix("skip ")).filter_map(|l| l.split_once(' ')).map(|(why, d)| (d.to_string(), why.to_string())).collect();
        return Err(Refusal::NoPlace(skipped));
    }
    let probe: Probe = plan::parse_probe(out).map_err(|e| Refusal::Bad(e.0))?;
    let plan = plan::decide(&probe, build);
    if let Plan::Refuse(m) = plan {
        return Err(m.into());
    }
    if let Plan::Copy(dir, _) = &plan {
        // Room for the binary and its part file's rename, with a margin; a df that said
        // nothing is not taken for no room.
        let free = out.lines().find_map(|l| l.strip_prefix("free ")).and_then(|f| f.trim().parse::<u64>().ok());
        let need_kib = size.div_ceil(1024) + size.div_ceil(1024) / 10 + 1024;
        if let Some(free_kib) = free.filter(|f| *f < need_kib) {
            return Err(Refusal::NoRoom { dir: dir.clone(), free_kib, need_kib });
        }
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::copy::glibc::Glibc;
    use crate::remote::copy::identity::Identity;
    use crate::remote::copy::plan::There;

    fn build(glibc: Option<Glibc>) -> Build {
        Build { os: "linux".into(), arch: "x86_64".into(), glibc, version: "1.2.3".into(), identity: Identity::of(b"123456789") }
    }

    #[test]
    fn judged_as_for_a_host_and_for_room() {
        let ok = "missing\nuname Linux x86_64\nglibc glibc 2.36\ndir /root/.cache/jdwpmux/1.2.3\nfree 900000\n";
        assert_eq!(decide(ok, &build(Some(Glibc(2, 34, 0))), 10 << 20), Ok(Plan::Copy("/root/.cache/jdwpmux/1.2.3".into(), There::Nothing)));
        let cached = format!("{ok}cached jdwpmux 1.2.3\nsum crc32 cbf43926 9\n");
        assert_eq!(decide(&cached, &build(Some(Glibc(2, 34, 0))), 10 << 20), Ok(Plan::Use("/root/.cache/jdwpmux/1.2.3/jdwpmux".into())));
        let unsummed = format!("{ok}cached jdwpmux 1.2.3\nsum none\n");
        assert_eq!(decide(&unsummed, &build(Some(Glibc(2, 34, 0))), 10 << 20), Ok(Plan::Copy("/root/.cache/jdwpmux/1.2.3".into(), There::Untold)), "never used on its version alone");
        let alpine = "missing\nuname Linux x86_64\nglibc \ndir /tmp/jdwpmux-0/1.2.3\nfree 900000\n";
        assert!(matches!(decide(alpine, &build(Some(Glibc(2, 34, 0))), 10 << 20), Err(Refusal::Mismatch(Mismatch::NoGlibc { .. }))));
        assert_eq!(decide(alpine, &build(None), 10 << 20), Ok(Plan::Copy("/tmp/jdwpmux-0/1.2.3".into(), There::Nothing)), "a static build goes anywhere");
        let arm = "missing\nuname Linux aarch64\nglibc glibc 2.36\ndir /tmp/x\n";
        assert!(matches!(decide(arm, &build(None), 1), Err(Refusal::Mismatch(Mismatch::Platform { .. }))));
        let small = "missing\nuname Linux x86_64\nglibc \ndir /tmp/x\nfree 100\n";
        assert_eq!(decide(small, &build(None), 10 << 20), Err(Refusal::NoRoom { dir: "/tmp/x".into(), free_kib: 100, need_kib: 10240 + 1024 + 1024 }));
        let no_df = "missing\nuname Linux x86_64\nglibc \ndir /tmp/x\nfree \n";
        assert!(decide(no_df, &build(None), 10 << 20).is_ok());
        let skipped = "missing\nuname Linux x86_64\nglibc \nskip unwritable /tmp/jdwpmux-0/1.2.3\ndir /var/tmp/jdwpmux-0/1.2.3\nfree 900000\n";
        assert_eq!(decide(skipped, &build(None), 1), Ok(Plan::Copy("/var/tmp/jdwpmux-0/1.2.3".into(), There::Nothing)), "the first usable folder");
        let ro = "missing\nuname Linux x86_64\nglibc \nskip unwritable /tmp/jdwpmux-0/1.2.3\nskip unwritable /var/tmp/jdwpmux-0/1.2.3\nnodir\n";
        let r = decide(ro, &build(None), 1).unwrap_err();
        assert_eq!(r.to_string(), "it has no folder this jdwpmux can be written to and run from (/tmp/jdwpmux-0/1.2.3: cannot be made or written; /var/tmp/jdwpmux-0/1.2.3: cannot be made or written)");
        assert!(!r.noexec());
        assert!(matches!(decide("nothing", &build(None), 1), Err(Refusal::Bad(_))));
        assert!(matches!(decide("uname Linux x86_64\nglibc \ndir /tmp/x\n", &build(None), 1), Err(Refusal::Bad(_))), "a probe without its missing line is not this one's");
    }

    #[test]
    fn a_missing_command_is_named_never_a_folder() {
        // A shell without mkdir: the probe stops at the commands and says which are missing.
        let out = "missing mkdir chmod\nuname Linux x86_64\nglibc glibc 2.36\n";
        let r = decide(out, &build(Some(Glibc(2, 34, 0))), 1).unwrap_err();
        assert_eq!(r, Refusal::Missing(vec!["mkdir".into(), "chmod".into()]));
        let said = r.to_string();
        assert_eq!(said, "its shell finds no mkdir, chmod (the copy needs uname mkdir chmod cat wc mv rm: an image with coreutils or busybox has them)");
        assert!(!said.contains("folder"), "{said}");
        // Even an old probe's nodir beside it: the command is what is missing.
        assert!(matches!(decide(&format!("{out}nodir\n"), &build(None), 1), Err(Refusal::Missing(_))));
        // A binary that cannot run there is said first: another build, not a command, helps.
        let arm = "missing mkdir\nuname Linux aarch64\nglibc glibc 2.36\n";
        assert!(matches!(decide(arm, &build(None), 1), Err(Refusal::Mismatch(Mismatch::Platform { .. }))));
        // No uname: the platform cannot be told, the missing command is said.
        assert_eq!(decide("missing uname\nuname  \nglibc \n", &build(None), 1), Err(Refusal::Missing(vec!["uname".into()])));
    }

    #[test]
    fn a_folder_where_nothing_runs_is_passed_over_and_said() {
        let out = "missing\nuname Linux x86_64\nglibc \nskip noexec /tmp/jdwpmux-1000/1.2.3\ndir /var/tmp/jdwpmux-1000/1.2.3\nfree 900000\n";
        assert_eq!(decide(out, &build(None), 1), Ok(Plan::Copy("/var/tmp/jdwpmux-1000/1.2.3".into(), There::Nothing)));
        let none = "missing\nuname Linux x86_64\nglibc \nskip noexec /tmp/jdwpmux-1000/1.2.3\nskip unwritable /var/tmp/jdwpmux-1000/1.2.3\nnodir\n";
        let r = decide(none, &build(None), 1).unwrap_err();
        assert!(r.noexec());
        assert_eq!(
            r.to_string(),
            "it has no folder this jdwpmux can be written to and run from (/tmp/jdwpmux-1000/1.2.3: a file there cannot be run (a noexec mount, as Docker's --tmpfs makes by default); /var/tmp/jdwpmux-1000/1.2.3: cannot be made or written)"
        );
    }

    /// `sh -c PROBE` with the given HOME (None: unset) and XDG_CACHE_HOME (None: unset).
    fn probe_in_sh(home: Option<&str>, cache: Option<&std::path::Path>) -> String {
        sh_with(&probe_script("0.0.0-test"), home, cache.map(|p| p.as_os_str()))
    }

    /// What `sh -c SCRIPT` prints with the given HOME and XDG_CACHE_HOME (None: unset); it
    /// must succeed.
    fn sh_with(script: &str, home: Option<&str>, cache: Option<&std::ffi::OsStr>) -> String {
        let mut c = std::process::Command::new("sh");
        c.arg("-c").arg(script).env_remove("HOME").env_remove("XDG_CACHE_HOME");
        if let Some(h) = home {
            c.env("HOME", h);
        }
        if let Some(x) = cache {
            c.env("XDG_CACHE_HOME", x);
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    #[test]
    fn the_probe_runs_in_a_plain_sh_and_finds_a_place() {
        let cache = tempfile::tempdir().unwrap();
        let text = probe_in_sh(Some("/nonexistent"), Some(cache.path()));
        let fake = b"#!/bin/sh\necho 'jdwpmux 0.0.0-test'\n";
        let b = Build { os: std::env::consts::OS.into(), arch: std::env::consts::ARCH.into(), glibc: None, version: "0.0.0-test".into(), identity: Identity::of(fake) };
        let dir = cache.path().join("jdwpmux/0.0.0-test");
        assert_eq!(decide(&text, &b, 1), Ok(Plan::Copy(dir.clone(), There::Nothing)), "{text}");
        assert!(text.lines().any(|l| l == "missing"), "this machine has every command: {text}");
        assert!(text.lines().any(|l| l.starts_with("glibc glibc 2.")), "glibc found: {text}");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "the probe's test file is removed");
        // A copy there: used by the build it is, copied over by another of its version.
        std::fs::write(dir.join(plan::NAME), fake).unwrap();
        std::fs::set_permissions(dir.join(plan::NAME), std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        let text = probe_in_sh(Some("/nonexistent"), Some(cache.path()));
        assert_eq!(decide(&text, &b, 1), Ok(Plan::Use(dir.join(plan::NAME))), "{text}");
        let rebuilt = Build { identity: Identity::of(b"#!/bin/sh\necho 'jdwpmux 0.0.0-test'\n\n"), ..b };
        assert!(matches!(decide(&text, &rebuilt, 1), Ok(Plan::Copy(d, There::OtherBuild { .. })) if d == dir), "{text}");
    }

    #[test]
    fn a_shell_without_mkdir_is_told_as_such() {
        // A PATH with the shell and uname only, as in an image stripped to its shell.
        let bin = tempfile::tempdir().unwrap();
        for tool in ["sh", "uname"] {
            let at = std::process::Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().unwrap();
            std::os::unix::fs::symlink(String::from_utf8_lossy(&at.stdout).trim(), bin.path().join(tool)).unwrap();
        }
        let cache = tempfile::tempdir().unwrap();
        let out = std::process::Command::new(bin.path().join("sh")).arg("-c").arg(probe_script("0.0.0-test")).env("PATH", bin.path()).env("XDG_CACHE_HOME", cache.path()).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.lines().any(|l| l == "missing mkdir chmod cat wc mv rm"), "{text}");
        assert!(!text.lines().any(|l| l.starts_with("dir ") || l.starts_with("skip ") || l == "nodir"), "no folder tried: {text}");
        let b = Build { os: std::env::consts::OS.into(), arch: std::env::consts::ARCH.into(), glibc: None, version: "0.0.0-test".into(), identity: Identity::of(b"") };
        let r = decide(&text, &b, 1).unwrap_err();
        assert!(matches!(&r, Refusal::Missing(m) if m[0] == "mkdir"), "{r}");
        assert!(r.to_string().starts_with("its shell finds no mkdir, chmod, cat, wc, mv, rm ("), "{r}");
        assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 0, "nothing made");
    }

    /// The candidates as a plain sh makes them (printed, nothing made: /tmp/jdwpmux-UID is
    /// also a daemon's own folder on this machine).
    fn candidates_in_sh(home: Option<&str>, cache: Option<&str>) -> Vec<String> {
        let script = format!("v=1.2.3\n{CANDIDATES}\nprintf '%s\\n' \"$@\"");
        sh_with(&script, home, cache.map(std::ffi::OsStr::new)).lines().map(str::to_string).collect()
    }

    #[test]
    fn no_home_is_no_candidate_and_no_double_slash() {
        let uid = std::process::Command::new("id").arg("-u").output().unwrap();
        let uid = String::from_utf8_lossy(&uid.stdout).trim().to_string();
        let tmp = [format!("/tmp/jdwpmux-{uid}/1.2.3"), format!("/var/tmp/jdwpmux-{uid}/1.2.3")];
        assert_eq!(candidates_in_sh(Some("/"), None), tmp, "HOME=/ : no //.cache");
        assert_eq!(candidates_in_sh(None, None), tmp, "no HOME");
        assert_eq!(candidates_in_sh(Some("/home/a b/"), None)[0], "/home/a b/.cache/jdwpmux/1.2.3");
        assert_eq!(candidates_in_sh(Some("/"), Some("/c/")), [vec!["/c/jdwpmux/1.2.3".to_string()], tmp.to_vec()].concat());
        assert_eq!(candidates_in_sh(Some("/h"), Some("relative"))[0], "/h/.cache/jdwpmux/1.2.3");
    }
}
