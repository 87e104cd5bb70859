use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};

use super::*;

/// The bytes of the build the tests are: `cksum` says 930766865 9, busybox `crc32` cbf43926.
const BYTES: &[u8] = b"123456789";

fn build() -> Build {
    Build { os: "linux".into(), arch: "x86_64".into(), glibc: Some(Glibc(2, 34, 0)), version: "0.1.0".into(), identity: Identity::of(BYTES) }
}

fn probe() -> Probe {
    Probe { os: "Linux".into(), machine: "x86_64".into(), glibc: Some(Glibc(2, 36, 0)), dir: "/home/u/.cache/jdwpmux/0.1.0".into(), cached: None, sum: None }
}

/// A probe that found a copy saying `said` with the host's `sum`.
fn found(said: &str, sum: Option<Sum>) -> Probe {
    Probe { cached: Some(said.into()), sum, ..probe() }
}

#[test]
fn reads_the_probe() {
    let out = "Welcome to box\nuname Linux x86_64\nglibc glibc 2.36\ndir /home/u/.cache/jdwpmux/0.1.0\n";
    assert_eq!(parse_probe(out), Ok(probe()));
    let musl = "uname Linux aarch64\nglibc \ndir /root/.cache/jdwpmux/0.1.0\ncached jdwpmux 0.1.0\n";
    let p = parse_probe(musl).unwrap();
    assert_eq!((p.glibc, p.machine.as_str(), p.cached.as_deref()), (None, "aarch64", Some("jdwpmux 0.1.0")));
    let spaced = "uname Linux x86_64\nglibc glibc 2.36\ndir /home/a b/.cache/jdwpmux/0.1.0\ncached \n";
    let p = parse_probe(spaced).unwrap();
    assert_eq!((p.dir.to_str(), p.cached), (Some("/home/a b/.cache/jdwpmux/0.1.0"), None), "a copy that prints nothing is none");
}

#[test]
fn reads_the_copys_size_and_crc() {
    let head = "uname Linux x86_64\nglibc glibc 2.36\ndir /home/u/.cache/jdwpmux/0.1.0\ncached jdwpmux 0.1.0\n";
    let sum_of = |line: &str| parse_probe(&format!("{head}{line}\n")).unwrap().sum;
    assert_eq!(sum_of("sum cksum 930766865 9"), Some(Sum::Cksum { crc: 930_766_865, size: 9 }));
    assert_eq!(sum_of("sum crc32 cbf43926 9"), Some(Sum::Crc32 { crc: 0xcbf4_3926, size: 9 }));
    // Neither tool there, a tool that failed, or words not understood: no identity, and the
    // probe is still read (the copy is then copied again, not the host refused).
    for line in ["sum none", "sum cksum ", "sum crc32  9", "sum cksum: /x: Permission denied", ""] {
        assert_eq!(sum_of(line), None, "{line:?}");
    }
}

#[test]
fn refuses_a_probe_it_cannot_read() {
    for (out, why) in [
        ("", "no uname line"),
        ("uname Linux\nglibc \ndir /x\n", "uname said \"Linux\""),
        ("uname Linux x86_64\ndir /x\n", "no glibc line"),
        ("uname Linux x86_64\nglibc musl 1.2\ndir /x\n", "getconf GNU_LIBC_VERSION said \"musl 1.2\""),
        ("uname Linux x86_64\nglibc \n", "no cache folder"),
        ("uname Linux x86_64\nglibc \ndir .cache/jdwpmux/0.1.0\n", "not absolute"),
    ] {
        let e = parse_probe(out).unwrap_err();
        assert!(e.0.contains(why), "{out:?}: {e}");
    }
}

#[test]
fn decides_use_copy_or_refuse() {
    let b = build();
    assert_eq!(decide(&probe(), &b), Plan::Copy("/home/u/.cache/jdwpmux/0.1.0".into(), There::Nothing));
    for other in ["jdwpmux 0.0.9", "Segmentation fault", "/lib64/ld-linux-x86-64.so.2: version `GLIBC_2.99' not found"] {
        let p = found(other, Some(Sum::Cksum { crc: 930_766_865, size: 9 }));
        assert_eq!(decide(&p, &b), Plan::Copy(p.dir.clone(), There::Other(other.into())), "a copy there that says {other:?} is copied over");
    }
    let same = Probe { glibc: Some(Glibc(2, 34, 0)), ..probe() };
    assert!(matches!(decide(&same, &b), Plan::Copy(..)), "the same glibc is enough");
    let amd64 = Probe { machine: "amd64".into(), ..probe() };
    assert!(matches!(decide(&amd64, &b), Plan::Copy(..)), "amd64 is x86_64");
    let static_build = Build { glibc: None, ..build() };
    assert!(matches!(decide(&Probe { glibc: None, ..probe() }, &static_build), Plan::Copy(..)), "a build needing no glibc goes anywhere");
}

/// A copy saying this version is used only when its bytes are this build's, by either tool.
#[test]
fn the_copy_is_used_only_when_it_is_this_build() {
    let b = build();
    let dir = PathBuf::from("/home/u/.cache/jdwpmux/0.1.0");
    let this = [Sum::Cksum { crc: 930_766_865, size: 9 }, Sum::Crc32 { crc: 0xcbf4_3926, size: 9 }];
    for sum in this {
        assert_eq!(decide(&found("jdwpmux 0.1.0", Some(sum)), &b), Plan::Use(dir.join(NAME)), "{sum}");
    }
    // The same version, other bytes: this binary with a byte appended, another CRC, another
    // tool's CRC in the other's place.
    let longer = Identity::of(b"1234567890");
    for theirs in [Sum::Cksum { crc: longer.cksum, size: 10 }, Sum::Crc32 { crc: longer.crc32, size: 10 }, Sum::Cksum { crc: 1, size: 9 }, Sum::Crc32 { crc: 930_766_865, size: 9 }] {
        match decide(&found("jdwpmux 0.1.0", Some(theirs)), &b) {
            Plan::Copy(d, There::OtherBuild { theirs: t, .. }) => assert_eq!((d, t), (dir.clone(), theirs)),
            other => panic!("{theirs}: {other:?}"),
        }
    }
    // No identity from the host: never used on its version alone.
    assert_eq!(decide(&found("jdwpmux 0.1.0", None), &b), Plan::Copy(dir.clone(), There::Untold));
    // This build's bytes saying another version cannot be, but is not used either.
    assert!(matches!(decide(&found("jdwpmux 0.0.9", Some(this[0])), &b), Plan::Copy(_, There::Other(_))));
}

#[test]
fn why_the_copy_there_is_not_used_in_words() {
    let other = decide(&found("jdwpmux 0.1.0", Some(Sum::Cksum { crc: 1, size: 12 })), &build());
    let Plan::Copy(_, there) = other else { panic!("{other:?}") };
    assert_eq!(there.said().unwrap(), "the copy there is another build: replaced (12 bytes, cksum 1; this jdwpmux: 9 bytes, cksum 930766865)");
    let crc = There::OtherBuild { theirs: Sum::Crc32 { crc: 0xab, size: 12 }, ours: build().identity.said_as(&Sum::Crc32 { crc: 0, size: 0 }) };
    assert_eq!(crc.said().unwrap(), "the copy there is another build: replaced (12 bytes, crc32 000000ab; this jdwpmux: 9 bytes, crc32 cbf43926)");
    assert_eq!(There::Untold.said().unwrap(), "the copy there cannot be told from another build (the host printed no size and CRC of it: no cksum or crc32 there): copied again");
    assert_eq!(There::Other("jdwpmux 0.0.9".into()).said().unwrap(), "the copy there says \"jdwpmux 0.0.9\" to --version: replaced");
    assert_eq!(There::Nothing.said(), None);
}

#[test]
fn a_refusal_says_what_the_host_has_and_what_this_needs() {
    let b = build();
    let cases = [
        (Probe { machine: "aarch64".into(), ..probe() }, "it runs Linux on aarch64, this jdwpmux is built for linux on x86_64"),
        (Probe { os: "Darwin".into(), machine: "arm64".into(), ..probe() }, "it runs Darwin on arm64, this jdwpmux is built for linux on x86_64"),
        (Probe { os: "FreeBSD".into(), ..probe() }, "it runs FreeBSD on x86_64, this jdwpmux is built for linux on x86_64"),
        (Probe { machine: "mips".into(), ..probe() }, "it runs Linux on mips, this jdwpmux is built for linux on x86_64"),
        (Probe { glibc: Some(Glibc(2, 31, 0)), ..probe() }, "it has glibc 2.31, this jdwpmux needs glibc 2.34 or newer"),
        (Probe { glibc: None, ..probe() }, "it has no glibc (getconf GNU_LIBC_VERSION names none), this jdwpmux needs glibc 2.34 or newer"),
    ];
    for (p, line) in cases {
        match decide(&p, &b) {
            Plan::Refuse(m) => assert_eq!(m.to_string(), line),
            other => panic!("{p:?}: {other:?}"),
        }
    }
    // A copy of this version already there does not make an unfit host fit.
    let cached = Probe { machine: "aarch64".into(), ..found("jdwpmux 0.1.0", Some(Sum::Cksum { crc: 930_766_865, size: 9 })) };
    assert!(matches!(decide(&cached, &b), Plan::Refuse(_)));
}

#[test]
fn machine_names() {
    for (m, a) in [("x86_64", "x86_64"), ("arm64", "aarch64"), ("aarch64", "aarch64"), ("i686", "x86"), ("armv7l", "arm"), ("ppc64le", "powerpc64le")] {
        assert_eq!(arch_of(m), Some(a), "{m}");
    }
    assert_eq!(arch_of("aarch64_be"), None);
    assert_eq!(build_arch("powerpc64", true), "powerpc64le");
    assert_eq!(build_arch("powerpc64", false), "powerpc64");
    assert_eq!(build_arch(std::env::consts::ARCH, cfg!(target_endian = "little")), arch_of(std::env::consts::ARCH).unwrap_or(std::env::consts::ARCH));
}

#[test]
fn the_version_check() {
    assert!(runs_as("jdwpmux 0.1.0\n", "0.1.0"));
    assert!(!runs_as("jdwpmux 0.1.01\n", "0.1.0"));
    assert!(!runs_as("", "0.1.0"));
}

/// `sh -c SCRIPT` with `home` as HOME and no XDG_CACHE_HOME (or `cache`), `stdin` fed.
fn sh(script: &str, home: &Path, cache: Option<&str>, stdin: &[u8]) -> (i32, String, String) {
    let mut c = Command::new("sh");
    c.arg("-c").arg(script).env("HOME", home).env_remove("XDG_CACHE_HOME");
    if let Some(x) = cache {
        c.env("XDG_CACHE_HOME", x);
    }
    let mut child = c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    // A script that stops reading early closes the pipe: a write error then is expected.
    let _ = input.write_all(stdin);
    drop(input);
    let out = child.wait_with_output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

/// The scripts as a POSIX shell runs them: the probe finds nothing, the copy lands whole
/// with its modes, the probe then finds it, and a cut copy leaves nothing under the name.
#[test]
fn the_scripts_in_a_real_shell() {
    let home = tempfile::tempdir().unwrap();
    let (code, out, err) = sh(&probe_script("9.9.9"), home.path(), None, b"");
    assert_eq!(code, 0, "{err}");
    let p = parse_probe(&out).unwrap();
    assert_eq!(p.dir, home.path().join(".cache/jdwpmux/9.9.9"));
    assert_eq!(p.cached, None);
    assert_eq!(os_of(&p.os), std::env::consts::OS);

    let fake = b"#!/bin/sh\necho 'jdwpmux 9.9.9'\n";
    let (code, out, err) = sh(&copy_script(&p.dir, fake.len() as u64, "9.9.9"), home.path(), None, fake);
    assert_eq!(code, 0, "{err}");
    assert!(runs_as(&out, "9.9.9"), "{out}");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(&p.dir.join(NAME)), 0o755);
    assert_eq!((mode(&p.dir), mode(p.dir.parent().unwrap())), (0o700, 0o700));
    assert_eq!(std::fs::read_dir(&p.dir).unwrap().count(), 1, "no part file left");
    let (_, out, _) = sh(&probe_script("9.9.9"), home.path(), None, b"");
    let found = parse_probe(&out).unwrap();
    assert_eq!(found.cached.as_deref(), Some("jdwpmux 9.9.9"));
    // Found again by the build it is, and by no other build of its version.
    let this = Build { os: std::env::consts::OS.into(), arch: build_arch(std::env::consts::ARCH, cfg!(target_endian = "little")), glibc: None, version: "9.9.9".into(), identity: Identity::of(fake) };
    assert_eq!(decide(&found, &this), Plan::Use(p.dir.join(NAME)), "{out}");
    let rebuilt: &[u8] = b"#!/bin/sh\necho 'jdwpmux 9.9.9'\n# rebuilt\n";
    let next = Build { identity: Identity::of(rebuilt), ..this.clone() };
    assert!(matches!(decide(&found, &next), Plan::Copy(_, There::OtherBuild { .. })), "{out}");
    // That build's copy goes over it, and is then the one found.
    let (code, _, err) = sh(&copy_script(&p.dir, rebuilt.len() as u64, "9.9.9"), home.path(), None, rebuilt);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read(p.dir.join(NAME)).unwrap(), rebuilt);
    let (_, out, _) = sh(&probe_script("9.9.9"), home.path(), None, b"");
    let found = parse_probe(&out).unwrap();
    assert_eq!((decide(&found, &next), matches!(decide(&found, &this), Plan::Use(_))), (Plan::Use(p.dir.join(NAME)), false), "{out}");
    assert_eq!(std::fs::read_dir(&p.dir).unwrap().count(), 1, "no part file left");

    // Cut: fewer bytes than announced. Refused, the part removed, nothing under the name.
    let other = tempfile::tempdir().unwrap();
    let dir = other.path().join("c/jdwpmux/9.9.9");
    let (code, _, err) = sh(&copy_script(&dir, fake.len() as u64 + 100, "9.9.9"), other.path(), None, fake);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains(&format!("the copy has {} of {} bytes", fake.len(), fake.len() + 100)), "{err}");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    // A binary that does not run: never renamed.
    let bad = b"\x7fELF not really";
    let (code, _, err) = sh(&copy_script(&dir, bad.len() as u64, "9.9.9"), other.path(), None, bad);
    assert_eq!(code, 4, "{err}");
    assert!(!dir.join(NAME).exists());
    // One of another version: never renamed either.
    let old = b"#!/bin/sh\necho 'jdwpmux 9.9.8'\n";
    let (code, _, err) = sh(&copy_script(&dir, old.len() as u64, "9.9.9"), other.path(), None, old);
    assert_eq!(code, 4, "{err}");
    assert!(err.contains("the copy does not run here: jdwpmux 9.9.8"), "{err}");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);

    // XDG_CACHE_HOME when absolute, HOME's .cache when not.
    let (_, out, _) = sh(&probe_script("1.0.0"), home.path(), Some("/var/cache/x"), b"");
    assert_eq!(parse_probe(&out).unwrap().dir, Path::new("/var/cache/x/jdwpmux/1.0.0"));
    let (_, out, _) = sh(&probe_script("1.0.0"), home.path(), Some("relative"), b"");
    assert_eq!(parse_probe(&out).unwrap().dir, home.path().join(".cache/jdwpmux/1.0.0"));
}
