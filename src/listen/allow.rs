//! `--allow CIDR`: which peers may connect to debugger ports, like the JDWP agent's `allow=`.

use std::net::IpAddr;
use std::str::FromStr;

/// An address block: `10.0.0.0/8`, `::1/128`, or a plain address (one host).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    pub addr: IpAddr,
    pub prefix: u8,
}

impl FromStr for Cidr {
    type Err = String;
    fn from_str(s: &str) -> Result<Cidr, String> {
        let bad = || format!("{s:?}: expected an address or ADDRESS/PREFIX, for example 127.0.0.1/32");
        let (a, p) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = a.parse().map_err(|_| bad())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match p {
            Some(p) => p.parse::<u8>().ok().filter(|p| *p <= max).ok_or_else(bad)?,
            None => max,
        };
        Ok(Cidr { addr, prefix })
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

impl Cidr {
    pub fn contains(&self, ip: IpAddr) -> bool {
        // An IPv4 peer on an IPv6 socket shows up mapped (::ffff:a.b.c.d).
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.prefix)).unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.prefix)).unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

/// Whether a peer may connect: an empty list allows everyone who can reach the port.
pub fn allowed(list: &[Cidr], ip: IpAddr) -> bool {
    list.is_empty() || list.iter().any(|c| c.contains(ip))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_and_hosts() {
        let c: Cidr = "127.0.0.0/8".parse().unwrap();
        assert!(c.contains("127.0.0.2".parse().unwrap()));
        assert!(!c.contains("10.0.0.1".parse().unwrap()));
        let one: Cidr = "127.0.0.1".parse().unwrap();
        assert_eq!(one.prefix, 32);
        assert!(one.contains("127.0.0.1".parse().unwrap()));
        assert!(!one.contains("127.0.0.2".parse().unwrap()));
        assert!(one.contains("::ffff:127.0.0.1".parse().unwrap()));
        let any: Cidr = "0.0.0.0/0".parse().unwrap();
        assert!(any.contains("192.0.2.1".parse().unwrap()));
        let v6: Cidr = "fd00::/8".parse().unwrap();
        assert!(v6.contains("fd12::1".parse().unwrap()) && !v6.contains("fe80::1".parse().unwrap()));
        for bad in ["127.0.0.1/33", "::1/129", "host/8", "1.2.3.4/x", ""] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad}");
        }
        assert!(allowed(&[], "8.8.8.8".parse().unwrap()));
        assert!(!allowed(&[one], "127.0.0.2".parse().unwrap()));
    }
}
