//! Who may use the monitor page. A page on loopback is still reachable from any web site
//! the user visits (a cross-site request, or DNS rebinding: a name of the attacker's that
//! resolves to 127.0.0.1), and this page can make VMs exit or GC. So every request must:
//!
//! 1. name the address served in its Host header (a rebound name does not);
//! 2. not come from another origin: an `Origin` header must be this page's, and
//!    `Sec-Fetch-Site` (sent by browsers) must say `same-origin` or `none`;
//! 3. carry the token made at start: in the URL the log prints (`?token=`, which the page
//!    swaps for a cookie), the cookie, or an `X-Jdwpmux-Token` header. A POST (everything
//!    that changes something) must carry it in that header: a cookie alone is what a forged
//!    cross-site form would have.
//!
//! The checks are a pure function of the request's headers, tested here; the middleware
//! that applies them is in `mod.rs`. No CORS header is ever sent, so a browser never lets
//! another origin read an answer either.

use std::net::{IpAddr, SocketAddr};

/// The header that carries the token (scripts, and the page's own POSTs).
pub const TOKEN_HEADER: &str = "x-jdwpmux-token";
/// The query parameter of the printed URL.
pub const TOKEN_PARAM: &str = "token";
/// Random bytes in a token (64 hex digits).
const TOKEN_BYTES: usize = 32;

/// Why a request was refused; each refusal is logged as one line with this text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("no Host header")]
    NoHost,
    #[error("Host {0:?} is not the address served")]
    WrongHost(String),
    #[error("cross-origin request (Origin {0:?})")]
    CrossOrigin(String),
    #[error("cross-site request (Sec-Fetch-Site {0:?})")]
    CrossSite(String),
    #[error("no token")]
    NoToken,
    #[error("wrong token")]
    WrongToken,
    #[error("a POST without the token in the X-Jdwpmux-Token header")]
    PostWithoutToken,
}

impl Refusal {
    /// A token problem (401: open the printed address) rather than a forbidden origin (403).
    pub fn is_token(&self) -> bool {
        matches!(self, Refusal::NoToken | Refusal::WrongToken | Refusal::PostWithoutToken)
    }
}

/// What the guard reads of a request.
#[derive(Debug, Default, Clone, Copy)]
pub struct Seen<'a> {
    pub post: bool,
    pub host: Option<&'a str>,
    pub origin: Option<&'a str>,
    pub fetch_site: Option<&'a str>,
    pub header_token: Option<&'a str>,
    pub query_token: Option<&'a str>,
    pub cookie_token: Option<&'a str>,
}

/// A request the guard let through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// It came with the token in its URL: a page load swaps it for the cookie.
    QueryToken,
    Other,
}

/// The token and the address it guards.
#[derive(Debug, Clone)]
pub struct Guard {
    token: String,
    served: SocketAddr,
}

/// A new token from the system's random source.
pub fn new_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Equal, in a time that does not depend on where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Guard {
    pub fn new(token: String, served: SocketAddr) -> Guard {
        Guard { token, served }
    }

    pub fn served(&self) -> SocketAddr {
        self.served
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    /// The cookie's name: one per port, so two daemons on one machine do not clash.
    pub fn cookie_name(&self) -> String {
        format!("jdwpmux_{}", self.served.port())
    }

    /// The address to open, as the log prints it.
    pub fn url(&self) -> String {
        format!("http://{}/?{TOKEN_PARAM}={}", self.served, self.token)
    }

    /// Whether `host` (a Host header) names the address served: the same port, and the
    /// served IP, or `localhost` when that is loopback, or any IP literal when every
    /// address is served. A DNS name never passes, so a rebound name cannot.
    pub fn host_ok(&self, host: &str) -> bool {
        let Some((name, port)) = split_host(host) else { return false };
        if port != Some(self.served.port()) {
            return false;
        }
        let ip = self.served.ip();
        if name.eq_ignore_ascii_case("localhost") {
            return ip.is_loopback() || ip.is_unspecified();
        }
        match name.parse::<IpAddr>() {
            Ok(named) => named == ip || ip.is_unspecified(),
            Err(_) => false,
        }
    }

    /// Lets a request through, or says why not.
    pub fn check(&self, r: &Seen<'_>) -> Result<Pass, Refusal> {
        let host = r.host.ok_or(Refusal::NoHost)?;
        if !self.host_ok(host) {
            return Err(Refusal::WrongHost(host.to_string()));
        }
        if let Some(origin) = r.origin {
            let ours = origin.strip_prefix("http://").is_some_and(|o| o.eq_ignore_ascii_case(host));
            if !ours {
                return Err(Refusal::CrossOrigin(origin.to_string()));
            }
        }
        if let Some(site) = r.fetch_site {
            if !matches!(site, "same-origin" | "none") {
                return Err(Refusal::CrossSite(site.to_string()));
            }
        }
        if r.post {
            return match r.header_token {
                Some(t) if same(t, &self.token) => Ok(Pass::Other),
                Some(_) => Err(Refusal::WrongToken),
                None => Err(Refusal::PostWithoutToken),
            };
        }
        // The most explicit token given is the one that counts: a stale cookie from an
        // earlier run must not hide a good token in the URL, nor the other way round.
        let (given, pass) = match (r.header_token, r.query_token, r.cookie_token) {
            (Some(t), _, _) => (t, Pass::Other),
            (None, Some(t), _) => (t, Pass::QueryToken),
            (None, None, Some(t)) => (t, Pass::Other),
            (None, None, None) => return Err(Refusal::NoToken),
        };
        if same(given, &self.token) {
            Ok(pass)
        } else {
            Err(Refusal::WrongToken)
        }
    }
}

/// `127.0.0.1:8699` -> ("127.0.0.1", Some(8699)); `[::1]:8699` -> ("::1", Some(8699));
/// `localhost` -> ("localhost", None). None when the port is not a number.
fn split_host(host: &str) -> Option<(&str, Option<u16>)> {
    if let Some(rest) = host.strip_prefix('[') {
        let (name, after) = rest.split_once(']')?;
        return match after {
            "" => Some((name, None)),
            p => Some((name, Some(p.strip_prefix(':')?.parse().ok()?))),
        };
    }
    // An IPv6 address must be in brackets.
    match host.rsplit_once(':') {
        Some((name, _)) if name.contains(':') => None,
        Some((name, port)) => Some((name, Some(port.parse().ok()?))),
        None => Some((host, None)),
    }
}

/// The value of cookie `name` in a Cookie header (`a=1; b=2`).
pub fn cookie<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').filter_map(|kv| kv.trim().split_once('=')).find(|(k, _)| *k == name).map(|(_, v)| v)
}

/// The value of parameter `name` in a query string (`a=1&token=abc`). Tokens are hex, so
/// no percent-decoding is needed; an encoded one simply does not match.
pub fn query_param<'a>(query: &'a str, name: &str) -> Option<&'a str> {
    query.split('&').filter_map(|kv| kv.split_once('=')).find(|(k, _)| *k == name).map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

    fn guard(addr: &str) -> Guard {
        Guard::new(T.to_string(), addr.parse().unwrap())
    }

    fn get<'a>(host: &'a str) -> Seen<'a> {
        Seen { host: Some(host), cookie_token: Some(T), ..Seen::default() }
    }

    #[test]
    fn tokens_are_random_hex() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_eq!(a.len(), 2 * TOKEN_BYTES);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn the_host_must_be_the_address_served() {
        let g = guard("127.0.0.1:8699");
        for ok in ["127.0.0.1:8699", "localhost:8699", "LOCALHOST:8699"] {
            assert!(g.host_ok(ok), "{ok}");
        }
        for bad in ["127.0.0.1:8700", "127.0.0.1", "evil.example:8699", "127.0.0.2:8699", "[::1]:8699", "localhost:x", ""] {
            assert!(!g.host_ok(bad), "{bad}");
        }
        let v6 = guard("[::1]:8699");
        assert!(v6.host_ok("[::1]:8699") && v6.host_ok("localhost:8699"));
        assert!(!v6.host_ok("[::1]") && !v6.host_ok("::1:8699"));
        // Serving every address: IP literals only, never a name.
        let any = guard("0.0.0.0:8699");
        assert!(any.host_ok("192.0.2.7:8699") && any.host_ok("localhost:8699"));
        assert!(!any.host_ok("rebound.example:8699"));
        let lan = guard("192.0.2.7:8699");
        assert!(lan.host_ok("192.0.2.7:8699") && !lan.host_ok("localhost:8699"));
    }

    #[test]
    fn a_get_needs_the_token_in_the_url_a_cookie_or_the_header() {
        let g = guard("127.0.0.1:8699");
        assert_eq!(g.check(&get("127.0.0.1:8699")), Ok(Pass::Other));
        let url = Seen { host: Some("127.0.0.1:8699"), query_token: Some(T), ..Seen::default() };
        assert_eq!(g.check(&url), Ok(Pass::QueryToken));
        let header = Seen { host: Some("127.0.0.1:8699"), header_token: Some(T), ..Seen::default() };
        assert_eq!(g.check(&header), Ok(Pass::Other));
        let none = Seen { host: Some("127.0.0.1:8699"), ..Seen::default() };
        assert_eq!(g.check(&none), Err(Refusal::NoToken));
        let wrong = Seen { cookie_token: Some("abc"), ..none };
        assert_eq!(g.check(&wrong), Err(Refusal::WrongToken));
        // A good URL token wins over a stale cookie; a wrong one is refused even so.
        let stale = Seen { query_token: Some(T), cookie_token: Some("old"), ..none };
        assert_eq!(g.check(&stale), Ok(Pass::QueryToken));
        let bad_url = Seen { query_token: Some("old"), cookie_token: Some(T), ..none };
        assert_eq!(g.check(&bad_url), Err(Refusal::WrongToken));
        let short = Seen { cookie_token: Some(&T[..10]), ..none };
        assert_eq!(g.check(&short), Err(Refusal::WrongToken));
    }

    #[test]
    fn the_host_is_checked_before_the_token() {
        let g = guard("127.0.0.1:8699");
        assert_eq!(g.check(&get("rebound.example:8699")), Err(Refusal::WrongHost("rebound.example:8699".into())));
        let no_host = Seen { host: None, ..get("") };
        assert_eq!(g.check(&no_host), Err(Refusal::NoHost));
    }

    #[test]
    fn a_post_needs_the_header_and_the_same_origin() {
        let g = guard("127.0.0.1:8699");
        let base = Seen { post: true, host: Some("127.0.0.1:8699"), ..Seen::default() };
        let page = Seen {
            header_token: Some(T),
            origin: Some("http://127.0.0.1:8699"),
            fetch_site: Some("same-origin"),
            cookie_token: Some(T),
            ..base
        };
        assert_eq!(g.check(&page), Ok(Pass::Other));
        // A script without browser headers, with the token.
        assert_eq!(g.check(&Seen { header_token: Some(T), ..base }), Ok(Pass::Other));
        // The cookie alone (a forged form), or the token in the URL, are not enough.
        let cookie_only = Seen { header_token: None, ..page };
        assert_eq!(g.check(&cookie_only), Err(Refusal::PostWithoutToken));
        let url = Seen { query_token: Some(T), ..base };
        assert_eq!(g.check(&url), Err(Refusal::PostWithoutToken));
        assert_eq!(g.check(&Seen { header_token: Some("x"), ..base }), Err(Refusal::WrongToken));
        for origin in ["http://evil.example", "null", "https://127.0.0.1:8699", "http://127.0.0.1:8700"] {
            let cross = Seen { origin: Some(origin), ..page };
            assert_eq!(g.check(&cross), Err(Refusal::CrossOrigin(origin.into())), "{origin}");
        }
        for site in ["cross-site", "same-site"] {
            let cross = Seen { fetch_site: Some(site), origin: None, ..page };
            assert_eq!(g.check(&cross), Err(Refusal::CrossSite(site.into())), "{site}");
        }
        // A cross-origin GET is refused as well, token or not.
        let read = Seen { origin: Some("http://evil.example"), ..get("127.0.0.1:8699") };
        assert!(g.check(&read).is_err());
    }

    #[test]
    fn cookies_and_query_strings() {
        assert_eq!(cookie("a=1; jdwpmux_8699=abc; b=2", "jdwpmux_8699"), Some("abc"));
        assert_eq!(cookie("jdwpmux_8700=abc", "jdwpmux_8699"), None);
        assert_eq!(cookie("", "x"), None);
        assert_eq!(query_param("since=3&token=abc", "token"), Some("abc"));
        assert_eq!(query_param("tokenx=abc", "token"), None);
        assert_eq!(Guard::new(T.into(), "127.0.0.1:8699".parse().unwrap()).url(), format!("http://127.0.0.1:8699/?token={T}"));
    }
}
