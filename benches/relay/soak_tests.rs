//! The soak's flatness criteria, its once-a-minute series and its VMs' kill and restart.

use super::*;
use crate::soak_report::series;

fn sample(rss_kib: u64, fds: usize) -> Option<Sample> {
    Some(Sample { at: Duration::ZERO, rss_kib, fds, vms_connected: 0, debuggers: 0 })
}

#[test]
fn flatness_criteria() {
    let mut r = SoakResult { middle: sample(50_000, 1100), end: sample(50_000 + RSS_SLACK_KIB, 1100 + FD_SLACK), ..Default::default() };
    assert_eq!((r.rss_flat(), r.fds_flat()), (Some(true), Some(true)));
    r.end = sample(50_001 + RSS_SLACK_KIB, 1101 + FD_SLACK);
    assert_eq!((r.rss_flat(), r.fds_flat()), (Some(false), Some(false)));
    r.middle = None;
    assert_eq!(r.rss_flat(), None);
    judge(&mut r, true);
    assert!(r.failures.iter().any(|f| f.contains("no middle")), "{:?}", r.failures);
    assert!(r.failures.iter().any(|f| f.contains("no load")), "{:?}", r.failures);
}

#[test]
fn series_once_a_minute() {
    let at = |s: u64| Sample { at: secs(s), rss_kib: s, fds: 0, vms_connected: 0, debuggers: 0 };
    let samples: Vec<Sample> = (0..=40).map(|i| at(30 + i * 10)).collect();
    let picked: Vec<u64> = series(&samples, secs(430)).iter().map(|s| s.at.as_secs()).collect();
    assert_eq!(picked, [30, 90, 150, 210, 270, 330, 390, 430]);
    assert_eq!(series(&samples[..5], secs(70)).len(), 5, "a short run shows every sample");
}

#[test]
fn killed_vms_close_and_come_back_elsewhere() {
    let world = pick_ports(3).unwrap();
    let ports = world.ports();
    assert_eq!(world.live(), (3, 0));
    let mut c = testkit::blocking_client::BlockingClient::connect(std::net::SocketAddr::from(([127, 0, 0, 1], ports[0])), secs(5)).unwrap();
    let k = crate::soak_world::vm_number(ports[0], 0);
    let v = c.request(1, 1, &[]).unwrap();
    assert_eq!(crate::soak_debugger::vm_in_version(&v), Some(k));
    assert_eq!(world.live(), (3, 1));
    let mut rng = Rng::seeded(1);
    // Kill every VM: the connected one too.
    for _ in 0..3 {
        assert!(world.kill_one(&mut rng, false).is_some());
    }
    assert!(!world.alive(k));
    assert!(c.request(1, 1, &[]).is_err(), "a killed VM's connection closes");
    assert!(std::net::TcpStream::connect(("127.0.0.1", ports[0])).is_err(), "and its port");
    world.start_one(&mut rng, Some(0)).unwrap();
    assert_eq!(world.live().0, 1);
    assert_eq!(Counters::get(&world.counters.vms_started), 1);
}
