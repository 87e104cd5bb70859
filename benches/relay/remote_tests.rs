//! The remote section's rows, its ssh row count and its sizes.

use super::*;

#[test]
fn rows_pair_jdwpmux_with_the_plain_forward() {
    let r = |lat: f64| Some(RemoteRun { latency_us: lat, pipelined_rps: 1e6 / lat, ..RemoteRun::default() });
    // jdwpmux is 1.04 and 1.10 x the forward in two repetitions, 1.06 x in a third.
    let reps: Vec<Rep<RemoteRun>> = vec![[r(100.0), r(90.0), r(104.0), r(104.0)], [r(200.0), r(150.0), r(200.0), r(220.0)], [r(50.0), None, None, r(53.0)]];
    let lat = row("lat", &reps, Judge::Lower(1.05), &|x| Some(x.latency_us));
    assert_eq!(lat.cells, ["100".to_string(), "120".into(), "152".into(), "104".into()]);
    let own = vs_socat_row("own", &reps, &|x| Some(x.latency_us));
    assert!(own.ratio.starts_with("1.05 (1.00-1.10) x socat"), "{}", own.ratio);
    assert!(lat.ratio.starts_with("1.06 (1.04-1.10)"), "{}", lat.ratio);
    assert_eq!(lat.verdict, crate::table::Verdict::Fail);
    let rate = row("rate", &reps, Judge::Higher(0.9), &|x| Some(x.pipelined_rps));
    assert_eq!(rate.verdict, crate::table::Verdict::Pass, "{}", rate.ratio);
    let none: Vec<Rep<RemoteRun>> = vec![[None, r(1.0), None, None]];
    assert_eq!(row("x", &none, Judge::Lower(1.0), &|x| Some(x.latency_us)).verdict, crate::table::Verdict::Info);
}

#[test]
fn ssh_rows_are_counted_apart_from_local_ones() {
    let rows: Vec<serde_json::Value> = serde_json::from_str(
        r#"[{"source":"ssh","state":"ready"},{"source":"ssh","state":"identifying"},
            {"source":"proc","state":"ready"},{"source":"ssh","state":"ready"}]"#,
    )
    .unwrap();
    assert_eq!(count_ssh_rows(&rows), (3, 2));
}

#[test]
fn sizes() {
    let full = RemoteParams::new(false);
    assert_eq!((full.hosts, full.jvms_per_host, full.idle_window), (4, 5, Duration::from_secs(30)));
    assert_eq!(full.listed_target, Some(Duration::from_secs(3)));
    assert_eq!((full.path.latency_n, full.path.pipelined_n, full.path.window, full.path.array_n), (20_000, 50_000, 16, 20));
    let smoke = RemoteParams::new(true);
    assert_eq!((smoke.hosts, smoke.jvms_per_host, smoke.idle_window, smoke.listed_target), (2, 2, Duration::from_secs(3), None));
}
