//! A container's name as its runtime reports it, for containers whose state files this user
//! cannot read (`/var/lib/docker` is root's): `docker inspect` asked once per container id,
//! its answer parsed here.

use std::time::Duration;

/// What the runtime says of one container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeName {
    /// Its name, without Docker's leading `/`.
    pub name: String,
    /// The compose service it runs, when compose made it (`com.docker.compose.service`).
    pub service: Option<String>,
    /// How its Compose service is shown (`shop/orders`: `com.docker.compose.project` and the
    /// service; see `place::compose`).
    pub compose: Option<String>,
}

/// The `--format` given to `docker inspect`: name, the compose service, the compose project,
/// tab-separated (a label not there prints as `<no value>`).
pub const INSPECT_FORMAT: &str = "{{.Name}}\t{{index .Config.Labels \"com.docker.compose.service\"}}\t{{index .Config.Labels \"com.docker.compose.project\"}}";

/// How long one `docker inspect` may take.
pub const INSPECT_TIMEOUT: Duration = Duration::from_secs(20);

/// The longest name taken: a container name is a host label and a column.
const MAX_NAME: usize = 64;

/// Reads `docker inspect --format INSPECT_FORMAT ID`'s first line. None: nothing usable (a
/// name that is empty, too long, or holds what a name may not: Docker's own names are
/// `[a-zA-Z0-9][a-zA-Z0-9_.-]*`).
pub fn parse_inspect(stdout: &str) -> Option<RuntimeName> {
    let line = stdout.lines().next()?.trim_end_matches('\r');
    let mut fields = line.split('\t');
    let (name, service, project) = (fields.next().unwrap_or(""), fields.next().unwrap_or(""), fields.next().unwrap_or(""));
    let name = name.trim().trim_start_matches('/');
    let ok = |s: &str| !s.is_empty() && s.len() <= MAX_NAME && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b)) && !s.starts_with(['.', '-']);
    if !ok(name) || name == "local" {
        return None;
    }
    // `index` of a missing label prints `<no value>`, which is no name.
    fn label(s: &str, ok: impl Fn(&str) -> bool) -> Option<&str> {
        Some(s.trim()).filter(|s| ok(s) && *s != "<no value>")
    }
    let service = label(service, ok).map(str::to_string);
    let compose = service.as_deref().and_then(|s| crate::discovery::jvms::place::compose(label(project, ok).unwrap_or(""), s));
    Some(RuntimeName { name: name.to_string(), service, compose })
}

/// Whether `id` is a full container id (64 lowercase hex digits): only such words are
/// given to the runtime's CLI. One rule with the one discovery reads cgroups by.
pub use crate::discovery::jvms::place::is_id;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_docker_prints_them() {
        let plain = |n: &str| Some(RuntimeName { name: n.into(), service: None, compose: None });
        assert_eq!(parse_inspect("/orders-api\t\n"), plain("orders-api"));
        assert_eq!(parse_inspect("/shop-orders-1\torders\tshop\n"), Some(RuntimeName { name: "shop-orders-1".into(), service: Some("orders".into()), compose: Some("shop/orders".into()) }));
        assert_eq!(parse_inspect("/shop-orders-1\torders\n"), Some(RuntimeName { name: "shop-orders-1".into(), service: Some("orders".into()), compose: Some("orders".into()) }));
        assert_eq!(parse_inspect("/o\torders\t<no value>\n").unwrap().compose.as_deref(), Some("orders"));
        assert_eq!(parse_inspect("/billing\t<no value>\t<no value>\n"), plain("billing"));
        // A project without a service is no Compose service.
        assert_eq!(parse_inspect("/billing\t<no value>\tshop\n"), plain("billing"));
        assert_eq!(parse_inspect("/x"), plain("x"));
        // Nothing, a name no runtime gives, one that would be taken for this machine, a
        // terminal escape.
        for bad in ["", "\n", "/\t", "/a b\t", "/local\t", "/-x\t", "/a\x1b[2J\t", &format!("/{}\t", "a".repeat(65))] {
            assert_eq!(parse_inspect(bad), None, "{bad:?}");
        }
        // A service that is no name is left out, the name kept.
        assert_eq!(parse_inspect("/a\tb c\n"), Some(RuntimeName { name: "a".into(), service: None, compose: None }));
        assert_eq!(parse_inspect("/a\tweb\tx\x1b[2J\n").unwrap().compose.as_deref(), Some("web"));
    }

    #[test]
    fn only_full_ids_go_to_the_cli() {
        assert!(is_id(&"0123456789abcdef".repeat(4)));
        assert!(!is_id(&"0123456789ABCDEF".repeat(4)));
        assert!(!is_id("0123456789ab"));
        assert!(!is_id(&format!("-{}", "a".repeat(63))));
    }
}
