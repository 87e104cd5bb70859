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
}
