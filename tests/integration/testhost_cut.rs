//! The tests' own link cuts never send a packet off this machine: while a test host's link is
//! cut its address still routes only to its veth (`linkdown`), or nowhere (`unreachable`),
//! never by a gateway; and the route the test host had is the one it has again after.

use crate::need_test_hosts;
use crate::support::testnet::Netns;

/// What `ip route get` said is a route to the test host's own veth or no route at all.
fn routes_nowhere_else(net: &Netns, said: &str) {
    let on_veth = said.contains(&format!("dev {}", net.host_dev)) && !said.contains(" via ");
    let unreachable = said.starts_with("unreachable");
    assert!(on_veth || unreachable, "{}: `ip route get {}` says {said:?}: a route off its veth", net.name, net.addr);
}

fn cut_and_check(net: &Netns) {
    let before = net.route_to_host().unwrap();
    routes_nowhere_else(net, &before);
    let routes = net.routes_to_subnet().unwrap();
    assert!(!routes.contains("linkdown"), "before the cut: {routes}");

    net.set_link(false).unwrap();
    let during = net.route_to_host().unwrap();
    routes_nowhere_else(net, &during);
    // The route to the veth is kept, marked down (`ip route get` does not print the mark).
    let routes = net.routes_to_subnet().unwrap();
    assert!(routes.lines().any(|l| l.contains(&format!("dev {}", net.host_dev)) && l.contains("linkdown")), "during the cut: {routes}");
    assert!(routes.lines().any(|l| l.starts_with("unreachable") && l.contains("metric 4000")), "no unreachable route: {routes}");
    // The namespace's end is the one down: this side's end keeps its address and route.
    let links = std::process::Command::new("ip").args(["-n", &net.name, "-o", "link", "show"]).output().unwrap();
    let links = String::from_utf8_lossy(&links.stdout);
    assert!(links.lines().any(|l| l.contains("state DOWN")), "the namespace's veth end is not down: {links}");

    net.set_link(true).unwrap();
    let after = net.route_to_host().unwrap();
    routes_nowhere_else(net, &after);
    let routes = net.routes_to_subnet().unwrap();
    assert!(!routes.contains("linkdown"), "after the cut: {routes}");
}

#[test]
fn a_cut_test_host_routes_nowhere_but_its_veth() {
    need_test_hosts!();
    let net = Netns::new().unwrap();
    cut_and_check(&net);
    let subnet = net.subnet();
    drop(net);
    let left = std::process::Command::new("ip").args(["route", "show", &subnet]).output().unwrap();
    assert!(String::from_utf8_lossy(&left.stdout).trim().is_empty(), "routes left for {subnet}: {}", String::from_utf8_lossy(&left.stdout));
}

#[test]
fn a_cut_host_behind_another_routes_nowhere_but_its_veth() {
    need_test_hosts!();
    let front = Netns::new().unwrap();
    let behind = Netns::behind(&front).unwrap();
    cut_and_check(&behind);
    cut_and_check(&front);
}
