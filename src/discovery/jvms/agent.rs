//! The JDWP agent's options as people write them: `-agentlib:jdwp=...`, `-Xrunjdwp:...` and
//! `-agentpath:/path/libjdwp.so=...`, on the command line or in `JAVA_TOOL_OPTIONS` /
//! `JDK_JAVA_OPTIONS`. Pure: text in, options out.

/// Where an agent listens, as its `address=` option says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bind {
    /// `address=8000`, or no address: loopback on JDK 9 and later (every address on JDK 8).
    Default,
    /// `address=*:8000`: every address.
    Any,
    /// `address=HOST:8000`: that name or address.
    Host(String),
}

/// The agent options that say whether and where a VM waits for a debugger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent {
    /// `transport=`: `dt_socket` is the only one jdwpmux can reach.
    pub transport: String,
    /// `server=y`: the VM listens; `n` (the default) means it connects out to a debugger.
    pub server: bool,
    /// `suspend=y` (the default): the VM waits for its first debugger before `main`.
    pub suspend: bool,
    pub bind: Bind,
    /// The port asked for; 0 (or no address) lets the agent pick one.
    pub port: u16,
}

impl Agent {
    /// Whether a debugger can find this agent listening on a TCP port.
    pub fn listens(&self) -> bool {
        self.server && self.transport == "dt_socket"
    }

    /// The port is picked by the agent (`address=0`, `:0`, or none given).
    pub fn ephemeral(&self) -> bool {
        self.port == 0
    }

    /// `address=` as the user wrote it, for people.
    pub fn address_text(&self) -> String {
        match &self.bind {
            Bind::Default => self.port.to_string(),
            Bind::Any => format!("*:{}", self.port),
            Bind::Host(h) => format!("{h}:{}", self.port),
        }
    }
}

/// Why an agent option could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    #[error("a JDWP agent option without transport=")]
    NoTransport,
    #[error("JDWP agent address {0:?} is not PORT, *:PORT or HOST:PORT")]
    BadAddress(String),
}

/// The agent's options if `arg` loads the JDWP agent, else None.
pub fn parse_arg(arg: &str) -> Option<Result<Agent, AgentError>> {
    let opts = if let Some(rest) = arg.strip_prefix("-agentlib:jdwp") {
        match rest {
            "" => "",
            r => r.strip_prefix('=')?,
        }
    } else if let Some(rest) = arg.strip_prefix("-Xrunjdwp") {
        match rest {
            "" => "",
            r => r.strip_prefix(':')?,
        }
    } else if let Some(rest) = arg.strip_prefix("-agentpath:") {
        let (path, opts) = rest.split_once('=').unwrap_or((rest, ""));
        let file = path.rsplit('/').next().unwrap_or(path);
        if !(file == "libjdwp.so" || file.starts_with("libjdwp.so.") || file == "libjdwp.dylib") {
            return None;
        }
        opts
    } else {
        return None;
    };
    Some(parse_options(opts))
}

/// `transport=dt_socket,server=y,suspend=n,address=8000` (order free, unknown keys ignored).
pub fn parse_options(opts: &str) -> Result<Agent, AgentError> {
    let mut transport = None;
    let (mut server, mut suspend) = (false, true);
    let mut address: Option<&str> = None;
    for kv in opts.split(',').filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        match k {
            "transport" => transport = Some(v.to_string()),
            "server" => server = v == "y",
            "suspend" => suspend = v != "n",
            "address" => address = Some(v),
            _ => {}
        }
    }
    let transport = transport.ok_or(AgentError::NoTransport)?;
    let (bind, port) = match address {
        None => (Bind::Default, 0),
        Some(a) => parse_address(a)?,
    };
    Ok(Agent { transport, server, suspend, bind, port })
}

fn parse_address(a: &str) -> Result<(Bind, u16), AgentError> {
    let bad = || AgentError::BadAddress(a.to_string());
    let (host, port) = match a.rsplit_once(':') {
        None => (None, a),
        Some((h, p)) => (Some(h), p),
    };
    let port: u16 = port.parse().map_err(|_| bad())?;
    let bind = match host {
        None | Some("") => Bind::Default,
        Some("*") => Bind::Any,
        Some(h) => {
            let h = h.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(h);
            if h.is_empty() || h.contains(char::is_whitespace) {
                return Err(bad());
            }
            Bind::Host(h.to_string())
        }
    };
    Ok((bind, port))
}

/// Splits `JAVA_TOOL_OPTIONS` the way the JVM does: on white space, with double or single
/// quotes keeping spaces inside one option.
pub fn split_env_options(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in value.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                any = true;
            }
            None if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            None => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(arg: &str) -> Agent {
        parse_arg(arg).expect("an agent option").expect("valid")
    }

    #[test]
    fn the_forms_people_write() {
        let a = agent("-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=8000");
        assert_eq!(a, Agent { transport: "dt_socket".into(), server: true, suspend: false, bind: Bind::Default, port: 8000 });
        assert!(a.listens());
        let a = agent("-agentlib:jdwp=transport=dt_socket,server=y,address=*:5005");
        assert_eq!((a.bind.clone(), a.port, a.suspend), (Bind::Any, 5005, true), "suspend defaults to y");
        let a = agent("-Xrunjdwp:transport=dt_socket,address=10.0.0.5:8000,server=y");
        assert_eq!((a.bind, a.port), (Bind::Host("10.0.0.5".into()), 8000));
        let a = agent("-agentlib:jdwp=transport=dt_socket,server=y,address=127.0.0.1:0");
        assert!(a.ephemeral());
        assert_eq!(a.address_text(), "127.0.0.1:0");
        let a = agent("-agentlib:jdwp=transport=dt_socket,server=y,address=:0");
        assert_eq!((a.bind, a.port), (Bind::Default, 0));
        let a = agent("-agentlib:jdwp=transport=dt_socket,server=y");
        assert!(a.ephemeral());
        let a = agent("-agentpath:/usr/lib/jvm/java-17/lib/libjdwp.so=transport=dt_socket,server=y,address=9");
        assert_eq!(a.port, 9);
        let a = agent("-agentlib:jdwp=transport=dt_socket,server=y,address=[::1]:8000");
        assert_eq!(a.bind, Bind::Host("::1".into()));
        let a = agent("-agentlib:jdwp=transport=dt_socket,server=y,address=::1:8000");
        assert_eq!((a.bind, a.port), (Bind::Host("::1".into()), 8000));
    }

    #[test]
    fn what_is_not_a_listening_socket_agent() {
        assert!(!agent("-agentlib:jdwp=transport=dt_socket,address=8000").listens(), "server defaults to n");
        assert!(!agent("-agentlib:jdwp=transport=dt_shmem,server=y,address=x:1").listens());
        assert_eq!(parse_arg("-agentlib:jdwp=server=y"), Some(Err(AgentError::NoTransport)));
        assert!(matches!(parse_arg("-agentlib:jdwp=transport=dt_socket,address=80000"), Some(Err(AgentError::BadAddress(_)))));
        assert!(matches!(parse_arg("-agentlib:jdwp=transport=dt_socket,address=a b:1"), Some(Err(AgentError::BadAddress(_)))));
        assert_eq!(parse_arg("-agentlib:jdwpx=transport=dt_socket"), None);
        assert_eq!(parse_arg("-agentlib:hprof=x"), None);
        assert_eq!(parse_arg("-agentpath:/opt/libyjpagent.so=port=1"), None);
        assert_eq!(parse_arg("-Xrunhprof:x"), None);
        assert_eq!(parse_arg("Main"), None);
    }

    #[test]
    fn env_options_split_like_the_jvm() {
        assert_eq!(split_env_options("  -Xmx1g   -agentlib:jdwp=transport=dt_socket "), vec!["-Xmx1g", "-agentlib:jdwp=transport=dt_socket"]);
        assert_eq!(split_env_options("-Dname=\"a b\" -Dx='c d'"), vec!["-Dname=a b", "-Dx=c d"]);
        assert_eq!(split_env_options(""), Vec::<String>::new());
        assert_eq!(split_env_options("\"\""), vec![""]);
    }
}
