//! `--far-copy` through a container's exec: jdwpmux copied into a container that has none (and
//! found there by the next serve), and the line a container it cannot be copied into is
//! refused with, in the container's terms (no mkdir, noexec folders, no shell at all, no such
//! container). Real rootful Podman containers, as in `exec.rs`.

use std::path::Path;

use crate::support::containers::{ContainerSpec, Container, Engine};

use super::exec::{classes, hosts_until, jdb, list_until, port_of, ready, runs_on, serve};

/// `--far-copy` into a container without jdwpmux: probed, copied in through the exec (into a
/// writable folder there), and the JVM served through the copy; without `--far-copy` the host
/// row says what to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_far_copy_puts_jdwpmux_into_a_container_without_one() {
    crate::need_podman!();
    let engine = Engine::rootful().unwrap();
    let cls = classes("Report").await;
    let mut s = ContainerSpec::new(&engine, "copy", &cls);
    s.class = "Report".into();
    // The copy goes to $HOME/.cache: a folder of this container's own (the image's folder is
    // shared by the test's containers), which may hold programs.
    s.podman_args = vec!["--tmpfs".into(), "/root:rw,exec,mode=0700".into()];
    let c = Container::run(s).await.unwrap();
    let exec = format!("report=podman exec -i {}", c.name());

    let served = serve(&engine, &["--exec", &exec]);
    let h = hosts_until(&served, "the row says what to do", |h| h.iter().any(|r| r["reason"].as_str().is_some_and(|s| s.contains("--far-copy")))).await;
    let reason = h[0]["reason"].as_str().unwrap();
    assert!(reason.starts_with("report has no jdwpmux (jdwpmux was not found there): use an image with jdwpmux"), "{reason}");
    drop(served);

    let served = serve(&engine, &["--exec", &exec, "--far-copy"]);
    let rows = list_until(&served, "Report through the copy", |r| ready(r, "report", "Report")).await;
    let log = served.log_text();
    assert!(log.contains("copied this jdwpmux into report"), "{log}");
    let mut j = jdb(port_of(&rows, "report", "Report")).await;
    crate::remote::break_step_clear_quit(&mut j, "Report").await;
    runs_on(&c).await;
    drop(served);
    // A second serve finds the copy there and copies nothing.
    let served = serve(&engine, &["--exec", &exec, "--far-copy"]);
    list_until(&served, "Report through the copy found", |r| ready(r, "report", "Report")).await;
    let log = served.log_text();
    assert!(log.contains("copied there before") && !log.contains("copying this jdwpmux"), "{log}");
    drop(served);
}

/// `--far-copy` into containers it cannot copy into says why in the container's terms: a
/// shell without mkdir (and the rest) is told which commands are missing, never that no
/// folder can be written; /tmp and /var/tmp on noexec mounts (Docker's --tmpfs default) are
/// passed over and said so, with HOME=/ giving no `//.cache` candidate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_far_copy_says_what_the_container_lacks() {
    crate::need_podman!();
    let engine = Engine::rootful().unwrap();
    let cls = classes("Lacks").await;
    let mut s = ContainerSpec::new(&engine, "lacks", &cls);
    s.class = "Lacks".into();
    // A folder holding only a shell and uname (busybox's applets by name), for an exec whose
    // PATH is that folder alone: an image stripped to its shell.
    let shell_only = tempfile::tempdir().unwrap();
    for tool in ["sh", "uname"] {
        std::os::unix::fs::symlink("/usr/bin/busybox", shell_only.path().join(tool)).unwrap();
    }
    // noexec said: Docker's --tmpfs default, not podman's.
    s.podman_args = ["--tmpfs", "/tmp:rw,noexec", "--tmpfs", "/var/tmp:rw,noexec", "-e", "HOME=/", "-v"].map(String::from).to_vec();
    s.podman_args.push(format!("{}:/shonly:ro", shell_only.path().display()));
    let c = Container::run(s).await.unwrap();
    let noexec = format!("noexec=podman exec -i {}", c.name());
    let nomkdir = format!("nomkdir=podman exec -i -e PATH=/shonly {}", c.name());

    let served = serve(&engine, &["--exec", &noexec, "--exec", &nomkdir, "--far-copy"]);
    let h = hosts_until(&served, "both rows say why", |h| h.len() == 2 && h.iter().all(|r| r["state"] == "down" && r["reason"].as_str().is_some_and(|s| s.contains("not copied in")))).await;
    let reason = |host: &str| h.iter().find(|r| r["host"] == host).and_then(|r| r["reason"].as_str()).unwrap().to_string();
    let missing = reason("nomkdir");
    assert!(missing.contains("its shell finds no mkdir, chmod, cat, wc, mv, rm (the copy needs"), "{missing}");
    assert!(!missing.contains("folder"), "a missing command is not a folder: {missing}");
    let v = env!("CARGO_PKG_VERSION");
    let noexec = reason("noexec");
    assert!(
        noexec.contains(&format!("no folder this jdwpmux can be written to and run from (/tmp/jdwpmux-0/{v}: a file there cannot be run (a noexec mount")) && noexec.contains(&format!("/var/tmp/jdwpmux-0/{v}: a file there cannot be run")),
        "{noexec}"
    );
    assert!(noexec.contains("--tmpfs /tmp:exec") && !noexec.contains(".cache"), "no //.cache for HOME=/: {noexec}");
    // Nothing left in the container by the probe: the folders it made for nothing are gone.
    let out = engine.podman(&["exec", c.name(), "/usr/bin/busybox", "ls", "-A", "/tmp", "/var/tmp"]).await.unwrap();
    assert!(!out.contains("jdwpmux"), "{out}");
    drop(served);
}

/// A container with no jdwpmux and no shell (its only program a static init) is refused with
/// one line saying so and what to do, `--far-copy` or not; a missing container is shown in
/// podman's own words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_a_container_without_a_shell_is_refused_with_its_line() {
    crate::need_podman!();
    let Some(init) = ["/usr/bin/catatonit", "/usr/libexec/podman/catatonit"].into_iter().find(|p| Path::new(p).exists()) else {
        panic!("catatonit (podman's static init) is not installed: ./test.sh installs podman with it");
    };
    let engine = Engine::rootful().unwrap();
    let root = tempfile::tempdir().unwrap();
    for d in ["proc", "sys", "dev", "etc", "run", "tmp"] {
        std::fs::create_dir_all(root.path().join(d)).unwrap();
    }
    for f in ["etc/hostname", "etc/hosts", "etc/resolv.conf", "run/.containerenv"] {
        std::fs::write(root.path().join(f), "").unwrap();
    }
    std::fs::copy(init, root.path().join("init")).unwrap();
    let name = crate::support::containers::unique_name("bare");
    let out = engine.podman(&["run", "-d", "--name", &name, "--network=none", "--rootfs", root.path().to_str().unwrap(), "/init", "-P"]).await;
    struct Remove<'a>(&'a Engine, String);
    impl Drop for Remove<'_> {
        fn drop(&mut self) {
            let _ = self.0.podman_blocking(&["rm", "-f", "-t", "0", &self.1]);
        }
    }
    let _remove = Remove(&engine, name.clone());
    out.unwrap();
    let bare = format!("bare=podman exec -i {name}");
    let missing = format!("gone=podman exec -i {name}-missing");
    let served = serve(&engine, &["--exec", &bare, "--exec", &missing, "--far-copy"]);
    let h = hosts_until(&served, "both rows say why", |h| h.len() == 2 && h.iter().all(|r| r["state"] == "down" && r["reason"].is_string())).await;
    let reason = |host: &str| h.iter().find(|r| r["host"] == host).and_then(|r| r["reason"].as_str()).unwrap().to_string();
    let bare_reason = reason("bare");
    assert!(bare_reason.contains("bare has no jdwpmux") && bare_reason.contains("bare has no shell (sh) to copy it in with") && bare_reason.contains("use an image with jdwpmux"), "{bare_reason}");
    let gone = reason("gone");
    assert!(gone.contains("no such container") && gone.contains(&format!("{name}-missing")), "podman's words: {gone}");
    let (_, text, _) = served.run(&["list", "--hosts"]);
    assert!(text.contains("bare has no shell"), "{text}");
    drop(served);
}
