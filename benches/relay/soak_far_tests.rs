//! The far-side soak's schedule, its reading of the app's log and of a stop, each stop's
//! check, the flatness rule, and the replay buffer's reading and rule.

use super::*;

fn s(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn smoke() -> Plan {
    Plan { duration: s(180), cut_every: s(40), cut_len: (s(5), s(5)), second_every: s(40), kill_at: 0.4, exec_kill_every: s(60), sample_every: s(30) }
}

#[test]
fn the_smoke_schedule() {
    let acts = schedule(&smoke());
    let of = |want: fn(&Act) -> bool| acts.iter().filter(|(_, a)| want(a)).map(|(at, _)| at.as_secs_f64()).collect::<Vec<_>>();
    assert_eq!(of(|a| matches!(a, Act::Cut(_))), [40.0, 80.0, 120.0, 160.0]);
    assert!(acts.iter().all(|(_, a)| !matches!(a, Act::Cut(l) if *l != s(5))));
    assert_eq!(of(|a| *a == Act::KillFar), [62.5], "once, between two cuts, nearest 40 % of the run");
    assert_eq!(of(|a| *a == Act::Second), [102.5, 142.5], "in the other gaps, 40 s apart at least");
    assert_eq!(of(|a| *a == Act::KillExec), [53.75, 133.75], "a quarter into the gaps nearest 60 s and 120 s; 180 s is the end");
    assert_eq!(of(|a| *a == Act::Sample), [30.0, 60.0, 90.0, 120.0, 150.0, 180.0]);
    assert!(acts.windows(2).all(|w| w[0].0 <= w[1].0), "in time order");
}

#[test]
fn the_exec_is_killed_every_few_minutes_between_cuts() {
    let full = Plan { duration: s(1800), cut_every: s(60), cut_len: (s(5), s(30)), second_every: s(180), kill_at: 0.5, exec_kill_every: s(300), sample_every: s(60) };
    let acts = schedule(&full);
    let execs: Vec<f64> = acts.iter().filter(|(_, a)| *a == Act::KillExec).map(|(at, _)| at.as_secs_f64()).collect();
    assert_eq!(execs, [270.0, 630.0, 926.25, 1222.5, 1518.75], "the gap quarter nearest each 5 minutes");
    let cuts: Vec<(Duration, Duration)> = acts.iter().filter_map(|(at, a)| if let Act::Cut(l) = a { Some((*at, *l)) } else { None }).collect();
    for (at, a) in &acts {
        if *a == Act::KillExec {
            assert!(cuts.iter().all(|(c, l)| *at < *c || *at > *c + *l), "an exec kill at {at:?} during a cut");
            assert!(acts.iter().filter(|(t, _)| t == at).count() == 1, "an exec kill at {at:?} at the moment of another act");
        }
    }
    // Every minute: each gap's quarter once, the last one 20 s before the end at the latest.
    let often = Plan { exec_kill_every: s(60), ..full };
    let execs: Vec<Duration> = schedule(&often).into_iter().filter(|(_, a)| *a == Act::KillExec).map(|(at, _)| at).collect();
    assert_eq!(execs.len(), 29, "{execs:?}");
    assert!(execs.windows(2).all(|w| w[0] < w[1]) && execs.iter().all(|at| *at + s(20) < s(1800)));
    let never = Plan { exec_kill_every: Duration::ZERO, ..full };
    assert!(schedule(&never).iter().all(|(_, a)| *a != Act::KillExec));
}

#[test]
fn nothing_happens_during_a_cut() {
    let full = Plan { duration: s(1800), cut_every: s(60), cut_len: (s(5), s(30)), second_every: s(180), kill_at: 0.5, exec_kill_every: s(300), sample_every: s(60) };
    let acts = schedule(&full);
    let cuts: Vec<(Duration, Duration)> = acts.iter().filter_map(|(at, a)| if let Act::Cut(l) = a { Some((*at, *l)) } else { None }).collect();
    assert_eq!(cuts.len(), 29);
    let lens: Vec<u64> = cuts.iter().take(6).map(|c| c.1.as_secs()).collect();
    assert_eq!(lens, [5, 10, 15, 20, 25, 30], "from 5 to 30 s, turn by turn");
    for (at, a) in &acts {
        if matches!(a, Act::KillFar | Act::Second) {
            assert!(cuts.iter().all(|(c, l)| *at < *c || *at > *c + *l), "{a:?} at {at:?} during a cut");
        }
    }
    assert_eq!(acts.iter().filter(|(_, a)| *a == Act::KillFar).count(), 1);
    let seconds: Vec<f64> = acts.iter().filter(|(_, a)| *a == Act::Second).map(|(at, _)| at.as_secs_f64()).collect();
    assert!(seconds.len() >= 8 && seconds.windows(2).all(|w| w[1] - w[0] >= 180.0), "{seconds:?}");
    assert!(cuts.iter().all(|(c, l)| *c + *l + s(5) <= s(1800)));
}

#[test]
fn the_log_is_read_by_whole_lines() {
    let mut t = LogTail::default();
    t.feed(b"value 0 v0\ntick 1\ntick 2\nvalue 1 v1-birch\nval");
    assert_eq!((t.value.clone(), t.ticks, t.len), (Some((1, "v1-birch".into())), 2, 42));
    t.feed(b"ue 2 v2-cedar\ntick 3");
    assert_eq!((t.value.clone(), t.ticks, t.len), (Some((2, "v2-cedar".into())), 2, 59), "a line not ended is not taken");
    t.feed(b"\n");
    assert_eq!(t.ticks, 3);
}

fn stop(number: u64, n: u64, s: &str) -> Stop {
    let mut st = Stop { number, ..Stop::default() };
    for l in ["thread=stepper", "frame Tally.step:31", "frame Tally.loop:24", "frame Tally.lambda$main$1:62", "frame java.lang.Thread.run:840"] {
        st.line(l.strip_prefix("thread=").map_or(l, |_| "breakpoint thread=stepper"));
    }
    st.line(&format!("this.n={n}"));
    st.line(&format!("this.s=\"{s}\""));
    st.line("static go=true");
    st.line("threads 16");
    st.line(&format!("toString \"Tally n={n} s={s}\""));
    st
}

fn log_at(n: u64, s: &str) -> LogTail {
    let mut t = LogTail::default();
    t.feed(format!("tick 9\nvalue {n} {s}\ntick 10\n").as_bytes());
    t
}

#[test]
fn a_stop_read_as_printed() {
    let st = stop(4, 7, "v7-ash");
    assert_eq!((st.top.as_deref(), st.frames, st.n, st.s.as_deref(), st.threads), (Some("Tally.step:31"), 4, Some(7), Some("v7-ash"), Some(16)));
    assert_eq!(st.to_string.as_deref(), Some("Tally n=7 s=v7-ash"));
}

#[test]
fn each_stop_is_checked_against_the_log() {
    let st = stop(4, 7, "v7-ash");
    assert!(check_stop(&st, &log_at(7, "v7-ash"), Some(&stop(3, 6, "v6-gum")), true).is_empty());
    assert!(check_stop(&st, &log_at(7, "v7-ash"), Some(&stop(3, 7, "v7-ash")), true).is_empty(), "a line that changes nothing");
    assert!(check_stop(&st, &log_at(7, "v7-ash"), None, true).is_empty(), "the first stop of a session");
    let one = |why: Vec<String>, has: &str| assert!(why.len() == 1 && why[0].contains(has), "{why:?}");
    one(check_stop(&st, &log_at(6, "v6-gum"), None, true), "the app's log last says");
    one(check_stop(&st, &log_at(7, "v7-elm"), None, true), "the app's log last says");
    one(check_stop(&st, &log_at(7, "v7-ash"), Some(&stop(3, 5, "v5-gum")), true), "lost or done twice");
    one(check_stop(&st, &log_at(7, "v7-ash"), Some(&stop(3, 8, "v8-birch")), true), "lost or done twice");
    let mut odd = st.clone();
    odd.to_string = Some("Tally n=6 s=v6-gum".into());
    one(check_stop(&odd, &log_at(7, "v7-ash"), None, true), "toString()");
    assert!(check_stop(&odd, &log_at(7, "v7-ash"), None, false).is_empty(), "not asked");
    odd.s = None;
    one(check_stop(&odd, &log_at(7, "v7-ash"), None, true), "no this.n or this.s");
    let mut elsewhere = stop(4, 7, "v7-ash");
    elsewhere.top = Some("java.lang.Thread.sleep:-1".into());
    one(check_stop(&elsewhere, &log_at(7, "v7-ash"), None, true), "not in Tally");
}

#[test]
fn flat_after_the_warm_up_by_the_rule() {
    let m = |at: u64, pid: u32, mib: u64, fds: usize| Mem { at: s(at), pid, rss_kib: mib * 1024, fds };
    let near = [m(30, 1, 8, 20), m(60, 1, 12, 22), m(90, 1, 20, 24), m(180, 1, 22, 36)];
    let (level, end) = level_and_end(&near, s(60)).unwrap();
    assert_eq!((level.at, end.at), (s(60), s(180)));
    assert_eq!(flat(&level, &end), (true, true), "22 <= 12 x 1.5 + 4; 36 <= 22 + 16");
    assert_eq!(flat(&level, &m(180, 1, 23, 39)), (false, false));
    // A far side started anew: judged on its own samples.
    let far = [m(30, 7, 30, 9), m(60, 7, 40, 9), m(90, 8, 6, 9), m(120, 8, 7, 9), m(180, 8, 12, 10)];
    let (level, end) = level_and_end(&far, s(60)).unwrap();
    assert_eq!((level.pid, level.at, end.rss_kib), (8, s(90), 12 * 1024));
    assert_eq!(flat(&level, &end), (true, true));
    assert_eq!(level_and_end(&[], s(60)), None);
}

#[test]
fn the_replay_buffer_is_read_from_stats() {
    let report = serde_json::json!({"vms": [], "links": [
        {"host": "other", "replay": {"held_bytes": 9, "held_frames": 1, "most_bytes": 9, "most_frames": 1, "limit_bytes": 100}},
        {"host": "soakfar-link", "sent": {"frames": 3}, "replay": {"held_bytes": 4114, "held_frames": 2, "most_bytes": 70000, "most_frames": 9, "limit_bytes": 8388608}}
    ]});
    assert_eq!(replay_of(&report, "soakfar-link", s(30)), Some(Replay { at: s(30), held: 4114, most: 70_000, limit: 8 << 20 }));
    assert_eq!(replay_of(&report, "nowhere", s(30)), None);
    let old = serde_json::json!({"vms": [], "links": [{"host": "soakfar-link", "sent": {"frames": 3}}]});
    assert_eq!(replay_of(&old, "soakfar-link", s(30)), None, "a daemon without the figure gives none, not 0");
    assert_eq!(replay_of(&serde_json::json!({"vms": []}), "soakfar-link", s(30)), None);
}

#[test]
fn the_replay_buffer_flat_and_bounded_by_the_rule() {
    let r = |at: u64, held: u64, most: u64| Replay { at: s(at), held, most, limit: 8 << 20 };
    let run = [r(30, 0, 70_000), r(60, 2_000, 900_000), r(90, 0, 900_000), r(180, 260_000, 2_000_000)];
    let (level, end) = replay_level_and_end(&run, s(60)).unwrap();
    assert_eq!((level.at, end.at), (s(60), s(180)));
    assert_eq!(replay_flat(&level, &end), (true, true), "260,000 <= 2,000 x 2 + 262,144; 2,000,000 <= 8 MiB + 64 KiB");
    assert!(!replay_flat(&level, &r(180, 270_000, 0)).0, "held grew past the rule");
    assert_eq!(replay_flat(&r(30, 0, 0), &r(180, REPLAY_SLACK, 0)), (true, true), "an idle level: the slack alone");
    assert!(replay_flat(&r(30, 0, 0), &r(180, 0, (8 << 20) + REPLAY_BEYOND)).1, "at the bound");
    assert!(!replay_flat(&r(30, 0, 0), &r(180, 0, (8 << 20) + REPLAY_BEYOND + 1)).1, "past the protocol's bound");
    let early = [r(10, 5, 5), r(20, 6, 6)];
    assert_eq!(replay_level_and_end(&early, s(60)).map(|(l, _)| l.at), Some(s(10)), "no sample after the warm-up: the first");
    assert_eq!(replay_level_and_end(&[], s(60)), None);
}
