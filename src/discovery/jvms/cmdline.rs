//! A JVM's command line (`/proc/PID/cmdline`): its JDWP agent options and what it runs
//! (a main class, a jar or a module). Pure.

use super::agent::{self, Agent, AgentError};

/// What a JVM runs, as people name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MainName {
    /// `java ... com.example.Main`, or a source file (`java Main.java`).
    Class(String),
    /// `java -jar /opt/app/server.jar`: the jar's file name.
    Jar(String),
    /// `java -m app/com.example.Main`: the module's main class (or the module).
    Module(String),
}

impl MainName {
    /// The short name shown in `list` and used to select the VM.
    pub fn as_str(&self) -> &str {
        match self {
            MainName::Class(s) | MainName::Jar(s) | MainName::Module(s) => s,
        }
    }
}

impl std::fmt::Display for MainName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the command line says about the JVM.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JavaCommand {
    /// JDWP agent options among the JVM's own options (not the program's arguments).
    pub agents: Vec<Result<Agent, AgentError>>,
    pub main: Option<MainName>,
}

/// Options of the `java` launcher that take the next argument as their value.
const WITH_VALUE: &[&str] = &[
    "-cp", "-classpath", "--class-path", "-p", "--module-path", "--upgrade-module-path", "--add-modules",
    "--add-opens", "--add-exports", "--add-reads", "--limit-modules", "--patch-module", "--enable-native-access",
    "--source", "--describe-module", "-d",
];

/// Splits a raw `/proc/PID/cmdline` (NUL-separated) into arguments.
pub fn split_cmdline(raw: &[u8]) -> Vec<String> {
    let raw = raw.strip_suffix(&[0]).unwrap_or(raw);
    if raw.is_empty() {
        return Vec::new();
    }
    raw.split(|b| *b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect()
}

/// Reads a JVM's arguments (`argv[0]` included). Options up to the main class, jar or module
/// are the JVM's; what follows is the program's and is not looked at.
pub fn parse(argv: &[String]) -> JavaCommand {
    let mut cmd = JavaCommand::default();
    let mut it = argv.iter().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "-jar" => {
                cmd.main = it.next().map(|j| MainName::Jar(file_name(j)));
                break;
            }
            "-m" | "--module" => {
                cmd.main = it.next().map(|m| MainName::Module(module_main(m)));
                break;
            }
            o if o.starts_with("--module=") => {
                cmd.main = Some(MainName::Module(module_main(&o["--module=".len()..])));
                break;
            }
            o if WITH_VALUE.contains(&o) => {
                it.next();
            }
            o if o.starts_with('-') || o.starts_with('@') => {
                if let Some(agent) = agent::parse_arg(o) {
                    cmd.agents.push(agent);
                }
            }
            main => {
                cmd.main = Some(MainName::Class(file_name(main)));
                break;
            }
        }
    }
    cmd
}

/// Longest name kept for what a JVM runs.
pub const MAX_MAIN_NAME: usize = 200;

fn file_name(path: &str) -> String {
    printable(path.rsplit('/').next().unwrap_or(path))
}

/// `app/com.example.Main` -> `com.example.Main`; `app` alone -> `app`.
fn module_main(m: &str) -> String {
    printable(m.rsplit_once('/').map_or(m, |(_, c)| c))
}

/// A name shown to people as it is, so it may carry no control characters (a terminal
/// would obey them, [`crate::safe_text`]) and is cut at `MAX_MAIN_NAME` characters.
pub fn printable(s: &str) -> String {
    let cut: String = s.chars().take(MAX_MAIN_NAME).collect();
    crate::safe_text::shown(&cut).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(s: &str) -> JavaCommand {
        parse(&s.split(' ').map(String::from).collect::<Vec<_>>())
    }

    #[test]
    fn main_names() {
        let main = |s: &str| parsed(s).main;
        assert_eq!(main("java -agentlib:jdwp=transport=dt_socket -cp . Main"), Some(MainName::Class("Main".into())));
        assert_eq!(main("java -Xmx1g -jar /opt/app/server.jar --port 1"), Some(MainName::Jar("server.jar".into())));
        assert_eq!(main("java --module-path m -m app/com.example.Main"), Some(MainName::Module("com.example.Main".into())));
        assert_eq!(main("java --module=app"), Some(MainName::Module("app".into())));
        assert_eq!(main("/usr/bin/java -classpath a:b --add-opens java.base/java.lang=ALL-UNNAMED com.example.Billing x"),
            Some(MainName::Class("com.example.Billing".into())));
        assert_eq!(main("java --source 21 /tmp/Hello.java"), Some(MainName::Class("Hello.java".into())));
        assert_eq!(main("java -version"), None);
        assert_eq!(main("java"), None);
        assert_eq!(main("java -cp"), None, "a value option at the end");
    }

    #[test]
    fn agents_only_among_the_jvm_options() {
        let c = parsed("java -Xdebug -Xrunjdwp:transport=dt_socket,server=y,address=8000 Main -agentlib:jdwp=transport=dt_socket,server=y,address=9");
        assert_eq!(c.agents.len(), 1);
        assert_eq!(c.agents[0].as_ref().map(|a| a.port), Ok(8000));
        let c = parsed("java -cp -agentlib:jdwp=transport=dt_socket,server=y Main");
        assert!(c.agents.is_empty(), "the class path's value is not an option");
    }

    #[test]
    fn names_are_printable_and_short() {
        assert_eq!(parsed("java \u{1b}[31mEvil\u{7}").main, Some(MainName::Class("?[31mEvil?".into())));
        let long = format!("java {}", "x".repeat(10_000));
        assert_eq!(parsed(&long).main.unwrap().as_str().len(), MAX_MAIN_NAME);
    }

    #[test]
    fn raw_cmdlines() {
        assert_eq!(split_cmdline(b"java\0-cp\0.\0Main\0"), vec!["java", "-cp", ".", "Main"]);
        assert_eq!(split_cmdline(b"java\0\0x\0"), vec!["java", "", "x"]);
        assert_eq!(split_cmdline(b""), Vec::<String>::new());
        assert_eq!(split_cmdline(b"\xff\0"), vec!["\u{fffd}"]);
    }
}
