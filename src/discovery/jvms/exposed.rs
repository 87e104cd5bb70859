//! An agent that listens on every address of its host (`address=*:8000`, `0.0.0.0:8000`,
//! `[::]:8000`): JDWP has no authentication, so whoever reaches that port controls the JVM.
//! Which agents are such, and the one sentence `list`, the page and the log say of one:
//! who can reach it and how to keep it to its host. Pure.

use std::net::IpAddr;

use super::agent::{Agent, Bind};

/// The address the agent listens on: its socket's now (`listen`), else the address it was
/// given; None when it was given none (loopback on JDK 9 and later, every address on JDK 8)
/// or a name.
pub fn bound(listen: Option<IpAddr>, agent: &Agent) -> Option<IpAddr> {
    match (listen, &agent.bind) {
        (Some(ip), _) => Some(ip),
        (None, Bind::Any) => Some(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)),
        (None, Bind::Host(h)) => h.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>().ok(),
        (None, Bind::Default) => None,
    }
}

/// Whether the agent listens on every address: by the socket it listens on now (`listen`),
/// else by the address it was given.
pub fn on_all_addresses(listen: Option<IpAddr>, agent: &Agent) -> bool {
    bound(listen, agent).is_some_and(|ip| ip.is_unspecified())
}

/// What is said of such an agent on port `port` of `host` (None: this machine); one in a
/// container (`in_container`) listens on the container's addresses, which its loopback
/// would make unreachable from outside: it is kept to this side with a port published on
/// loopback only.
pub fn warning(host: Option<&str>, port: u16, in_container: bool) -> String {
    if in_container {
        return format!(
            "its JDWP agent listens on all of its container's addresses: anyone who can reach the container's port {port} controls this JVM (JDWP has no password); \
             keep the container's network private, or publish the port on loopback only (docker run -p 127.0.0.1:{port}:{port})"
        );
    }
    let (whose, here) = match host {
        None => ("this machine's".to_string(), "this machine".to_string()),
        Some(h) => (format!("{h}'s"), h.to_string()),
    };
    format!(
        "its JDWP agent listens on all addresses: anyone who can reach {whose} port {port} controls this JVM (JDWP has no password); \
         start it with address=127.0.0.1:{port} to keep it to {here}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(bind: Bind) -> Agent {
        Agent { transport: "dt_socket".into(), server: true, suspend: false, bind, port: 8000 }
    }

    #[test]
    fn every_address_by_its_socket_else_by_its_option() {
        let any4: IpAddr = "0.0.0.0".parse().unwrap();
        let any6: IpAddr = "::".parse().unwrap();
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        assert!(on_all_addresses(Some(any4), &agent(Bind::Default)));
        assert!(on_all_addresses(Some(any6), &agent(Bind::Default)));
        assert!(!on_all_addresses(Some(lo), &agent(Bind::Any)), "the socket says where it listens now");
        assert!(on_all_addresses(None, &agent(Bind::Any)));
        assert!(on_all_addresses(None, &agent(Bind::Host("0.0.0.0".into()))));
        assert!(on_all_addresses(None, &agent(Bind::Host("[::]".into()))));
        assert!(!on_all_addresses(None, &agent(Bind::Host("10.0.0.2".into()))));
        assert!(!on_all_addresses(None, &agent(Bind::Host("localhost".into()))));
        assert!(!on_all_addresses(None, &agent(Bind::Default)));
        assert_eq!(bound(None, &agent(Bind::Host("[::1]".into()))), Some("::1".parse().unwrap()));
        assert_eq!(bound(Some(lo), &agent(Bind::Host("10.0.0.2".into()))), Some(lo));
        assert_eq!(bound(None, &agent(Bind::Host("localhost".into()))), None, "a name is not resolved");
    }

    #[test]
    fn the_warning_says_who_and_how() {
        let local = warning(None, 8000, false);
        assert!(local.contains("anyone who can reach this machine's port 8000") && local.contains("address=127.0.0.1:8000"), "{local}");
        let far = warning(Some("build"), 5005, false);
        assert!(far.contains("build's port 5005") && far.ends_with("to keep it to build"), "{far}");
        let boxed = warning(None, 8100, true);
        assert!(boxed.contains("the container's port 8100") && boxed.contains("-p 127.0.0.1:8100:8100") && !boxed.contains("this machine's"), "{boxed}");
    }
}
