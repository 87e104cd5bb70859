//! Root's Podman containers, to a user whom sudo lets run podman without a password
//! (`serve --podman-sudo`): a JVM in such a container, its agent on the container's own
//! loopback, is reached through `sudo -n podman exec -i NAME` (the far side copied in with
//! `--far-copy`), as a docker group member's Docker containers are through `docker exec`.
//! Without the flag its row says how to reach it and names the flag; when sudo refuses, the
//! row says sudo's words. Real rootful Podman, real sudo (a drop-in of the test's own, removed
//! at its end), real JVMs, real jdb.

use crate::cli::Served;
use crate::containers::{classes, debug_through, runs_on, spec};
use crate::docker_user::{list_until, member_serves, row};
use crate::remote::SLOW;
use crate::support::containers::{refused_here, Container, Engine};
use crate::support::users::TestUser;

/// A sudoers drop-in letting `user` run /usr/bin/podman as root without a password, keeping
/// the test engine's configuration variables; checked with `visudo -c` before it is put in
/// place, removed on drop.
struct SudoPodman {
    path: std::path::PathBuf,
}

impl SudoPodman {
    fn allow(user: &str) -> SudoPodman {
        let text = format!("Defaults:{user} env_keep += \"CONTAINERS_CONF CONTAINERS_STORAGE_CONF\"\n{user} ALL=(root) NOPASSWD: /usr/bin/podman\n");
        let path = std::path::PathBuf::from(format!("/etc/sudoers.d/jdwpmux-test-{user}"));
        let draft = std::env::temp_dir().join(format!("jdwpmux-test-sudoers-{user}"));
        std::fs::write(&draft, text).unwrap();
        let ok = std::process::Command::new("visudo").args(["-c", "-q", "-f"]).arg(&draft).status().expect("visudo");
        assert!(ok.success(), "visudo refused the drop-in");
        std::fs::set_permissions(&draft, std::os::unix::fs::PermissionsExt::from_mode(0o440)).unwrap();
        std::fs::copy(&draft, &path).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o440)).unwrap();
        let _ = std::fs::remove_file(&draft);
        SudoPodman { path }
    }
}

impl Drop for SudoPodman {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_file(&self.path) {
            eprintln!("could not remove {}: {e}", self.path.display());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn root_podman_containers_are_reached_through_sudo_when_asked() {
    crate::need_podman!();
    if std::process::Command::new("sudo").arg("--version").output().is_err() {
        crate::not_run!("sudo is not installed (./test.sh installs it)");
    }
    let engine = Engine::rootful().unwrap();
    let marker = format!("jdwpmux.test=pdsudo-{}", std::process::id());
    let cls = classes("Vault").await;
    let vault = Container::run(spec(&engine, "vault", &cls, "Vault", &marker)).await.unwrap();
    refused_here(vault.port()).unwrap();

    let user = TestUser::with_home("pdsudo").expect("a test user");
    let (mut wrapper, bin, dir) = member_serves(&user);
    // sudo keeps these (the drop-in says so): root's podman then sees the test engine's
    // containers, not the machine's default storage.
    wrapper.extend(engine.env().iter().map(|(k, v)| format!("{k}={}", v.display())));
    let serve = |extra: &[&str]| {
        let mut args = vec!["--proc", "--proc-match", marker.as_str(), "--no-scan", "--no-adb", "--scan-interval", "0.5"];
        args.extend_from_slice(extra);
        Served::start_bin_as(&wrapper, &bin.join("jdwpmux"), &dir.join("control.sock"), &args)
    };
    let place = format!("container {} (podman)", vault.name());
    let note_of = |rows: &[serde_json::Value]| row(rows, "Vault").and_then(|v| v["note"].as_str()).unwrap_or("").to_string();

    // Without the flag: the advice names it.
    {
        let served = serve(&["--far-copy"]);
        let rows = list_until(&served, "the Vault with advice", |r| note_of(r).contains("serve --podman-sudo")).await;
        assert_eq!(row(&rows, "Vault").unwrap()["process"]["place"], place.as_str(), "{rows:?}");
        assert!(note_of(&rows).contains(&format!("'sudo -n podman exec -i {}'", vault.name())), "{rows:?}");
        assert_ne!(row(&rows, "Vault").unwrap()["state"], "ready", "{rows:?}");
    }
    // With it, but sudo asks this user for a password: the row says sudo's words.
    {
        let served = serve(&["--far-copy", "--podman-sudo"]);
        let rows = list_until(&served, "the Vault with sudo's refusal", |r| note_of(r).contains("was refused")).await;
        assert!(note_of(&rows).contains("sudo: a password is required") && note_of(&rows).contains("NOPASSWD"), "{rows:?}");
        assert_ne!(row(&rows, "Vault").unwrap()["state"], "ready", "{rows:?}");
    }
    // Allowed, but nothing may be copied in: the row says how to allow it.
    let _sudo = SudoPodman::allow(&user.name);
    {
        let served = serve(&["--podman-sudo"]);
        let rows = list_until(&served, "the Vault, told to allow copying", |r| note_of(r).contains("serve --far-copy")).await;
        assert!(note_of(&rows).contains("sudo -n podman exec") && !note_of(&rows).contains("serve --exec"), "{rows:?}");
        served.wait_log("root's Podman").await;
    }
    // Allowed: reached through sudo's podman, jdwpmux copied in; jdb stops in it.
    let served = serve(&["--far-copy", "--podman-sudo"]);
    let rows = list_until(&served, "the Vault ready through sudo's podman", |r| row(r, "Vault").is_some_and(|v| v["state"] == "ready" && v["host"] == vault.name() && v["debugger_port"].is_u64())).await;
    assert_eq!(rows.len(), 1, "one row per JVM: {rows:?}");
    assert_eq!(row(&rows, "Vault").unwrap()["process"]["place"], place.as_str(), "{rows:?}");
    served.wait_log(&format!("through `sudo -n podman exec -i {}`", vault.name())).await;
    let port = row(&rows, "Vault").and_then(|v| v["debugger_port"].as_u64()).unwrap() as u16;
    debug_through(&user.prefix(), port, "Vault").await;
    runs_on(&vault).await;
    let mut served = served;
    assert_eq!(served.terminate(SLOW), Some(0), "{}", served.log_text());
}
