//! What `--kube NAMESPACE[:SELECTOR]` says: the namespace whose pods are followed and the
//! label selector they must match (kubectl's `-l`, passed as given: kubectl and the API
//! server judge it). Pure.

/// One `--kube`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeSpec {
    pub namespace: String,
    /// `app=orders`, `tier in (web,api)`...; None: every pod of the namespace.
    pub selector: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KubeSpecError {
    #[error("--kube {0:?}: the namespace must be a DNS label (lowercase letters, digits and '-', at most 63, starting and ending with a letter or digit), e.g. --kube shop:app=orders")]
    BadNamespace(String),
    #[error("--kube {0:?}: the selector after ':' is empty (leave the ':' out for every pod of the namespace)")]
    EmptySelector(String),
    #[error("--kube {0:?}: the selector is longer than {MAX_SELECTOR} bytes or holds a control character")]
    BadSelector(String),
}

/// Longest namespace (a DNS label).
const MAX_NAMESPACE: usize = 63;
/// Longest selector kept.
pub const MAX_SELECTOR: usize = 1024;

impl std::str::FromStr for KubeSpec {
    type Err = KubeSpecError;

    fn from_str(s: &str) -> Result<KubeSpec, KubeSpecError> {
        let (ns, selector) = match s.split_once(':') {
            Some((ns, sel)) => (ns, Some(sel.trim())),
            None => (s, None),
        };
        let ns = ns.trim();
        let edge = |b: Option<u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        let ok = !ns.is_empty() && ns.len() <= MAX_NAMESPACE && ns.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') && edge(ns.bytes().next()) && edge(ns.bytes().last());
        if !ok {
            return Err(KubeSpecError::BadNamespace(s.chars().take(80).collect()));
        }
        let selector = match selector {
            None => None,
            Some("") => return Err(KubeSpecError::EmptySelector(s.to_string())),
            Some(sel) if sel.len() > MAX_SELECTOR || sel.chars().any(char::is_control) => return Err(KubeSpecError::BadSelector(s.chars().take(80).collect())),
            Some(sel) => Some(sel.to_string()),
        };
        Ok(KubeSpec { namespace: ns.to_string(), selector })
    }
}

impl std::fmt::Display for KubeSpec {
    /// As given: `NAMESPACE[:SELECTOR]`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.selector {
            Some(sel) => write!(f, "{}:{sel}", self.namespace),
            None => f.write_str(&self.namespace),
        }
    }
}

impl KubeSpec {
    /// kubectl's words selecting these pods: `-n NS [-l SEL]`, after `--context C` when given.
    pub fn kubectl_args(&self, context: Option<&str>) -> Vec<String> {
        let mut a = Vec::new();
        if let Some(c) = context {
            a.extend(["--context".to_string(), c.to_string()]);
        }
        a.extend(["-n".to_string(), self.namespace.clone()]);
        if let Some(sel) = &self.selector {
            a.extend(["-l".to_string(), sel.clone()]);
        }
        a
    }

    /// kubectl's words for a list of these pods as the API server gives it, its resource
    /// version with it: `[--context C] get --raw /api/v1/namespaces/NS/pods[?labelSelector=SEL]`.
    /// (`kubectl get pods -o json` prints a `List` it made itself, with no version.)
    pub fn list_args(&self, context: Option<&str>) -> Vec<String> {
        self.raw(context, None)
    }

    /// kubectl's words for a watch of these pods from resource version `rv` (the version of
    /// the list just read; empty: from now, every pod first as ADDED): `[--context C] get
    /// --raw /api/v1/namespaces/NS/pods?watch=1&resourceVersion=RV[&labelSelector=SEL]`.
    /// `kubectl get --watch` has no flag for the version it starts from, and lists anew
    /// itself: a pod deleted between that list and the one read before would never be said
    /// gone. The raw watch's events are the API server's own, one JSON object a line.
    pub fn watch_args(&self, context: Option<&str>, rv: &str) -> Vec<String> {
        self.raw(context, Some(rv))
    }

    fn raw(&self, context: Option<&str>, watch_from: Option<&str>) -> Vec<String> {
        let mut a = Vec::new();
        if let Some(c) = context {
            a.extend(["--context".to_string(), c.to_string()]);
        }
        let mut query = Vec::new();
        if let Some(rv) = watch_from {
            query.push("watch=1".to_string());
            if !rv.is_empty() {
                query.push(format!("resourceVersion={}", query_escaped(rv)));
            }
        }
        if let Some(sel) = &self.selector {
            query.push(format!("labelSelector={}", query_escaped(sel)));
        }
        let mut path = format!("/api/v1/namespaces/{}/pods", self.namespace);
        if !query.is_empty() {
            path.push('?');
            path.push_str(&query.join("&"));
        }
        a.extend(["get".to_string(), "--raw".to_string(), path]);
        a
    }
}

/// A query value percent-encoded: every byte but the unreserved ones (RFC 3986).
fn query_escaped(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_and_selectors() {
        let s: KubeSpec = "shop:app=orders".parse().unwrap();
        assert_eq!(s, KubeSpec { namespace: "shop".into(), selector: Some("app=orders".into()) });
        assert_eq!(s.to_string(), "shop:app=orders");
        assert_eq!(s.kubectl_args(Some("prod")), ["--context", "prod", "-n", "shop", "-l", "app=orders"]);
        let all: KubeSpec = "billing".parse().unwrap();
        assert_eq!(all.selector, None);
        assert_eq!(all.kubectl_args(None), ["-n", "billing"]);
        let set: KubeSpec = "shop:tier in (web,api),!canary".parse().unwrap();
        assert_eq!(set.selector.as_deref(), Some("tier in (web,api),!canary"));
        for bad in ["", ":app=x", "Shop", "-shop", "shop-", "sh op", "shop:", "shop:a\nb", &"a".repeat(64)] {
            assert!(bad.parse::<KubeSpec>().is_err(), "{bad:?}");
        }
        assert!("shop:".parse::<KubeSpec>().unwrap_err().to_string().contains("leave the ':' out"));
    }

    #[test]
    fn the_watch_starts_from_the_lists_version() {
        let s: KubeSpec = "shop:tier in (web,api),!canary".parse().unwrap();
        assert_eq!(
            s.watch_args(Some("prod"), "4711"),
            ["--context", "prod", "get", "--raw", "/api/v1/namespaces/shop/pods?watch=1&resourceVersion=4711&labelSelector=tier%20in%20%28web%2Capi%29%2C%21canary"]
        );
        let all: KubeSpec = "billing".parse().unwrap();
        assert_eq!(all.watch_args(None, ""), ["get", "--raw", "/api/v1/namespaces/billing/pods?watch=1"]);
        assert_eq!(all.list_args(None), ["get", "--raw", "/api/v1/namespaces/billing/pods"]);
        assert_eq!(s.list_args(None), ["get", "--raw", "/api/v1/namespaces/shop/pods?labelSelector=tier%20in%20%28web%2Capi%29%2C%21canary"]);
        assert_eq!(query_escaped("a=b&c"), "a%3Db%26c");
    }
}
