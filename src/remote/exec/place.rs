//! Where this binary goes in a container that has none (`--far-copy` through the exec): the
//! probe run there (the OS, machine and glibc as for an ssh host, then the first folder of
//! the candidates that can be made and written, with its free space) and what it printed,
//! judged with the ssh copy's own rules (`copy::plan::decide`) plus the two a container adds:
//! no writable folder, too little room. Pure.

use std::path::PathBuf;

use crate::remote::copy::plan::{self, Build, Mismatch, Plan, Probe};
use crate::remote::ssh::start_far::shell_quote;

/// Why this binary is not copied into a container.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("{0}")]
    Mismatch(#[from] Mismatch),
    #[error("it has no folder this jdwpmux can be written to ({0} were tried)")]
    NoPlace(String),
    #[error("{dir} has {free_kib} KiB free, this jdwpmux needs {need_kib} KiB")]
    NoRoom { dir: PathBuf, free_kib: u64, need_kib: u64 },
    #[error("its answer to the probe is not understood ({0})")]
    Bad(String),
}

/// The folders tried, in order: the user's cache folder as on an ssh host, then /tmp and
/// /var/tmp (a read-only root file system often leaves an emptyDir at /tmp).
const CANDIDATES: &str = r#""$c/jdwpmux/$v" "/tmp/jdwpmux-$(id -u 2>/dev/null || echo 0)/$v" "/var/tmp/jdwpmux-$(id -u 2>/dev/null || echo 0)/$v""#;

/// The probe, for `sh -c`: busybox, dash and bash; no `head`, `sed` or `getconf` needed
/// (minimal images lack them: glibc's own libc.so.6 says its version when run).
pub fn probe_script(version: &str) -> String {
    format!(
        r#"echo "uname $(uname -s) $(uname -m)"
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
case "${{XDG_CACHE_HOME:-}}" in /*) c="$XDG_CACHE_HOME" ;; *) c="${{HOME:-/nonexistent}}/.cache" ;; esac
v={v}
for d in {CANDIDATES}; do
  if mkdir -p "$d" 2>/dev/null && [ -w "$d" ]; then
    echo "dir $d"
    df -Pk "$d" 2>/dev/null | {{ read -r h; read -r f s u a r; echo "free $a"; }}
    if [ -f "$d/{name}" ] && [ -x "$d/{name}" ]; then echo "cached $("$d/{name}" --version 2>&1 | {{ read -r a; echo "$a"; }})"; fi
    exit 0
  fi
  t="$t $d"
done
echo "nodir$t"
"#,
        v = shell_quote(version),
        name = plan::NAME,
    )
}

/// What to do, from what the probe printed, this build and this binary's size.
pub fn decide(out: &str, build: &Build, size: u64) -> Result<Plan, Refusal> {
    if let Some(tried) = out.lines().find_map(|l| l.strip_prefix("nodir")) {
        return Err(Refusal::NoPlace(tried.trim().to_string()));
    }
    let probe: Probe = plan::parse_probe(out).map_err(|e| Refusal::Bad(e.0))?;
    let plan = plan::decide(&probe, build);
    if let Plan::Refuse(m) = plan {
        return Err(m.into());
    }
    if let Plan::Copy(dir) = &plan {
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

    fn build(glibc: Option<Glibc>) -> Build {
        Build { os: "linux".into(), arch: "x86_64".into(), glibc, version: "1.2.3".into() }
    }

    #[test]
    fn judged_as_for_a_host_and_for_room() {
        let ok = "uname Linux x86_64\nglibc glibc 2.36\ndir /root/.cache/jdwpmux/1.2.3\nfree 900000\n";
        assert_eq!(decide(ok, &build(Some(Glibc(2, 34, 0))), 10 << 20), Ok(Plan::Copy("/root/.cache/jdwpmux/1.2.3".into())));
        let cached = format!("{ok}cached jdwpmux 1.2.3\n");
        assert_eq!(decide(&cached, &build(Some(Glibc(2, 34, 0))), 10 << 20), Ok(Plan::Use("/root/.cache/jdwpmux/1.2.3/jdwpmux".into())));
        let alpine = "uname Linux x86_64\nglibc \ndir /tmp/jdwpmux-0/1.2.3\nfree 900000\n";
        assert!(matches!(decide(alpine, &build(Some(Glibc(2, 34, 0))), 10 << 20), Err(Refusal::Mismatch(Mismatch::NoGlibc { .. }))));
        assert_eq!(decide(alpine, &build(None), 10 << 20), Ok(Plan::Copy("/tmp/jdwpmux-0/1.2.3".into())), "a static build goes anywhere");
        let arm = "uname Linux aarch64\nglibc glibc 2.36\ndir /tmp/x\n";
        assert!(matches!(decide(arm, &build(None), 1), Err(Refusal::Mismatch(Mismatch::Platform { .. }))));
        let small = "uname Linux x86_64\nglibc \ndir /tmp/x\nfree 100\n";
        assert_eq!(decide(small, &build(None), 10 << 20), Err(Refusal::NoRoom { dir: "/tmp/x".into(), free_kib: 100, need_kib: 10240 + 1024 + 1024 }));
        let no_df = "uname Linux x86_64\nglibc \ndir /tmp/x\nfree \n";
        assert!(decide(no_df, &build(None), 10 << 20).is_ok());
        let ro = "uname Linux x86_64\nglibc \nnodir /.cache/jdwpmux/1.2.3 /tmp/jdwpmux-0/1.2.3 /var/tmp/jdwpmux-0/1.2.3\n";
        assert_eq!(decide(ro, &build(None), 1).unwrap_err().to_string(), "it has no folder this jdwpmux can be written to (/.cache/jdwpmux/1.2.3 /tmp/jdwpmux-0/1.2.3 /var/tmp/jdwpmux-0/1.2.3 were tried)");
        assert!(matches!(decide("nothing", &build(None), 1), Err(Refusal::Bad(_))));
    }

    #[test]
    fn the_probe_runs_in_a_plain_sh_and_finds_a_place() {
        let out = std::process::Command::new("sh").arg("-c").arg(probe_script("0.0.0-test")).env("XDG_CACHE_HOME", std::env::temp_dir().join(format!("probe-{}", std::process::id()))).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let b = Build { os: std::env::consts::OS.into(), arch: std::env::consts::ARCH.into(), glibc: None, version: "0.0.0-test".into() };
        assert!(matches!(decide(&text, &b, 1), Ok(Plan::Copy(_))), "{text}");
        assert!(text.lines().any(|l| l.starts_with("glibc glibc 2.")), "glibc found: {text}");
        let _ = std::fs::remove_dir_all(std::env::temp_dir().join(format!("probe-{}", std::process::id())));
    }
}
