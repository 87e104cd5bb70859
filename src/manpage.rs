//! The man page and shell completions, generated from the clap definition so they can never
//! drift from the code (a test compares the committed files with what this renders).

use std::fmt::Write as _;

use clap::CommandFactory;

use crate::cli::Cli;

/// Escapes text for roff: backslashes and leading dots/quotes, and '-' as a real hyphen.
fn esc(s: &str) -> String {
    let s = breakable(&s.replace('\\', "\\e").replace('-', "\\-"));
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}")
    } else {
        s
    }
}

/// Words longer than this get places where troff may break them.
const LONG_WORD: usize = 30;

/// Lets troff break a long word (an -agentlib option, a path) after its commas and slashes:
/// a word wider than a line cannot be broken, and man warns ("can't break line") on narrow
/// terminals. `\:` is an invisible place to break.
fn breakable(s: &str) -> String {
    s.split(' ').map(|w| if w.len() > LONG_WORD { w.replace(',', ",\\:").replace('/', "/\\:") } else { w.to_string() }).collect::<Vec<_>>().join(" ")
}

/// One `.TP` entry per option of `cmd`, in the groups `--help` shows them in (their
/// headings in the order of `cli::HEADINGS`; options of no group first).
fn options(out: &mut String, cmd: &clap::Command) {
    let args: Vec<&clap::Arg> = cmd.get_arguments().filter(|a| !a.is_hide_set()).collect();
    let mut headings: Vec<Option<&str>> = vec![None];
    headings.extend(crate::cli::HEADINGS.iter().map(|h| Some(*h)));
    for a in &args {
        if !headings.contains(&a.get_help_heading()) {
            headings.push(a.get_help_heading());
        }
    }
    for heading in headings {
        let group: Vec<&&clap::Arg> = args.iter().filter(|a| a.get_help_heading() == heading).collect();
        if group.is_empty() {
            continue;
        }
        if let Some(h) = heading {
            let _ = writeln!(out, ".PP\n\\fB{}:\\fR", esc(h));
        }
        for a in group {
            entry(out, a);
        }
    }
}

/// One option: its flags and value, its help, its default, environment variable and values.
fn entry(out: &mut String, a: &clap::Arg) {
    let name = match (a.get_short(), a.get_long()) {
        (Some(s), Some(l)) => format!("\\fB\\-{s}\\fR, \\fB\\-\\-{}\\fR", esc(l)),
        (None, Some(l)) => format!("\\fB\\-\\-{}\\fR", esc(l)),
        (Some(s), None) => format!("\\fB\\-{s}\\fR"),
        (None, None) => format!("\\fI{}\\fR", esc(a.get_id().as_str()).to_uppercase()),
    };
    let value = match a.get_value_names() {
        Some(v) if a.get_long().is_some() && a.get_action().takes_values() => {
            format!(" \\fI{}\\fR", v.iter().map(|n| esc(n)).collect::<Vec<_>>().join(" "))
        }
        _ => String::new(),
    };
    let help = a.get_long_help().or(a.get_help()).map(|h| h.to_string()).unwrap_or_default();
    let mut extra = Vec::new();
    let defaults: Vec<String> = a.get_default_values().iter().map(|d| d.to_string_lossy().into_owned()).collect();
    if !defaults.is_empty() && a.get_action().takes_values() {
        extra.push(format!("default: {}", defaults.join(", ")));
    }
    if let Some(env) = a.get_env() {
        extra.push(format!("env: {}", env.to_string_lossy()));
    }
    let values: Vec<String> = a.get_possible_values().iter().filter(|v| !v.is_hide_set()).map(|v| v.get_name().to_string()).collect();
    if !values.is_empty() && values.len() < 8 && a.get_action().takes_values() {
        extra.push(format!("one of: {}", values.join(", ")));
    }
    let extra = if extra.is_empty() { String::new() } else { format!(" [{}]", extra.join("; ")) };
    let _ = writeln!(out, ".TP\n{name}{value}\n{}{}", esc(&help.replace('\n', " ")), esc(&extra));
}

const EXTRA: &[(&str, &str)] = &[
    ("PORTS", "Port 8700 (\\-\\-current\\-port) leads to the current VM: the one chosen with \\-\\-select at start or jdwpmux select later, else the most recently started JVM on this machine (by its process's start; VMs whose start is not known, behind adb or on other hosts, come after, the first found first), so that a debugger attached right after starting an app reaches that app; the log says in one line which VM it is whenever that changes. A VM that cannot be reached is never the current one. The VM a selection chose stays current until another is chosen, also while it is away (a JVM restarting; it keeps its entry and returns under its key), whatever appears later under the same name; a \\-\\-select that matches several VMs is said once, in the log and by jdwpmux list, which marks the current VM with * and says under its rows why port 8700 leads nowhere when it does. VM k, in order of appearance, has its own port 8600+k (\\-\\-base\\-port), stable for the daemon's lifetime; a discovered VM keeps its port while it is away. Port 0 asks for ephemeral ports; each bound port is logged as one line: listening on ADDR for ..."),
    ("SEVERAL DEBUGGERS", "Up to \\-\\-max\\-debuggers (8) debuggers may attach to one VM at once, through its own port or the current port. Each keeps its own request ids and gets only the events of its own requests (VM_START and VM_DEATH go to all); its Resume releases only the suspensions it holds, so one debugger never releases another's breakpoint stop. A debugger that leaves (quits, crashes, or sends VirtualMachine.Dispose) leaves alone: its requests, suspensions and pins are undone and the others carry on. ThreadReference.Status and SuspendCount report the VM's truth, other debuggers' suspensions included. jdwpmux list shows every debugger of a VM."),
    ("FINDING VMS", "With no \\-\\-vm, \\-\\-scan or \\-\\-adb, serve finds this machine's VMs by itself: every JVM whose command line (or JAVA_TOOL_OPTIONS / JDK_JAVA_OPTIONS) has a listening JDWP agent, on any port, read from /proc without connecting to anything (\\-\\-proc turns this on beside other sources, \\-\\-no\\-proc off, \\-\\-proc\\-match TEXT keeps only JVMs whose command line holds TEXT); the ports 127.0.0.1:8000\\-8040, probed politely, for what /proc cannot show (another user's JVM when not root); and the devices of the adb server at 127.0.0.1:5037 if one runs (none is started; \\-\\-adb starts one with adb start\\-server, which outlives jdwpmux as adb's server does). \\-\\-no\\-scan turns off the port scan only. A JVM found both by its process and through an \\-\\-exec into its container is one row: whichever was listed first. A JVM whose agent picked its own port (address=0) is followed to its new port after each debugger. A JVM in a container (Podman rootful or rootless, Docker, a Kubernetes pod on this node) or a bare network namespace is found as well: one whose agent listens on the container's own loopback, with nothing published, is reached from inside its network namespace (root enters any; a user, their own rootless containers', through a short\\-lived child of jdwpmux that joins the container's user and network namespaces and hands the connected socket back); one it cannot enter is listed with who can, and is never the current VM. A Docker container's JVM this user cannot enter (a root container, or one running as a uid with no user here) is reached through Docker's CLI when this user may use it (a member of the docker group; DOCKER_HOST and docker context as set): the container is named once by docker inspect and served as \\-\\-exec NAME='docker exec \\-i NAME' would be, its host row and its JVMs' HOST the container's name; jdwpmux is copied into it only with \\-\\-far\\-copy (else its row says so), and a container stopped and started or made again under its name keeps its port. With \\-\\-podman\\-sudo (podman\\-sudo = true), a JVM in root's Podman container that this user cannot enter is reached the same way through sudo \\-n podman exec \\-i NAME, when sudo lets this user run podman without a password (else its row says sudo's words); without it, its row names the flag. jdwpmux list's WHERE column names where each JVM runs (container NAME (RUNTIME), container NAME (docker, compose PROJECT/SERVICE) for one Docker Compose made, pod NAMESPACE/NAME, netns NAME; JSON process.place), and a restarted container keeps its debugger port. A JVM whose agent listens on all addresses (address=*:PORT, 0.0.0.0:PORT, [::]:PORT; here or on an ssh host) can be controlled by anyone who reaches that port: jdwpmux list marks its address (all addresses) with a line saying who can reach it and to start it with address=127.0.0.1:PORT (JSON process.exposed), and the log says so in one WARN line when it is found."),
    ("VMS ON OTHER MACHINES", "serve \\-\\-ssh DEST (repeatable; DEST as for ssh: a name from ~/.ssh/config or USER@HOST) serves the JVMs of other hosts exactly like local ones: jdwpmux list shows them under their HOST, each with a local debugger port of its own that it keeps across reconnects and restarts (keyed by host and main class), and jdwpmux select HOST:PID or HOST:APP makes one current. The system's OpenSSH client is used, so keys, ssh\\-agent, hardware keys, ~/.ssh/config (Host, User, Port, IdentityFile, ProxyJump) and known_hosts work as for git; \\-\\-ssh\\-config FILE names another config. One master connection per host (ssh \\-M, its control socket in a private folder beside the control socket) runs a plain POSIX sh that reads /proc every \\-\\-ssh\\-interval seconds; each VM is reached through a forward of that master from a Unix socket in the same folder to where its agent listens on the host: nothing is installed on the host, no process runs per VM, and no TCP port is opened. ssh runs with BatchMode=yes (it never prompts: a key with a passphrase needs ssh\\-agent) and checks host keys as the user's config says (a changed key is refused, in ssh's words). A lost link (\\-\\-ssh\\-keepalive) shows the host's VMs as unreachable with a note, closes their debuggers, and is made again after 1 s, doubling to 30 s; a refused login (a key or user the host does not accept) is tried again within a minute, at once when the ssh config changes; a host key that is unknown or changed is refused (jdwpmux never answers ssh's prompt: accepting an unseen key would trust it on first use for the user), and the host is tried again as soon as a known_hosts file ssh reads for it changes (connect once with ssh HOST to check and accept the key), else after 5 minutes. jdwpmux list shows a row per host under the VMs: its link (connecting, up, down with why, refused with what to do), the JVMs its last scan found (a host that runs none says: no JVM with a JDWP agent) and when that scan was; jdwpmux list \\-\\-hosts shows only them, with \\-\\-json as a JSON array. An adb server on a host's loopback brings its devices' VMs."),
    ("JDWPMUX ON THE HOST", "When a jdwpmux of the same version is on an \\-\\-ssh host (on the PATH its ssh login gets, or at \\-\\-far\\-path), serve runs jdwpmux far \\-\\-detach there through the host's ssh master (\\-\\-far auto, the default; always: only through it; never: ssh forwards only). This far side lives in a private folder, $XDG_RUNTIME_DIR/jdwpmux\\-far, else /tmp/jdwpmux\\-far\\-UID (mode 0700, refused if it is anyone else's or open to others), with its socket far.sock, its pid file and lock far.pid (one far side per user) and its log far.log. It finds the host's JVMs from /proc as serve does locally, holds their JDWP connections, and talks to serve over that socket, forwarded by the master. When the link drops it keeps every VM connection for \\-\\-far\\-hold seconds (300; it grants at most a day): the VMs see no debugger leave, the debuggers' commands wait, and when the link is back both sides send what the other has not received, nothing lost or repeated. Past the hold it closes them (each VM sees its debugger leave, as when it quits) and ends; when serve stops, it ends at once. With auto, a host where no far side can be used is served through ssh forwards and one INFO line says why and what to do; a far side of another version is refused with a line naming both versions and protocols (install the same jdwpmux there, or \\-\\-far never); one of another protocol left running gets this version's started beside it. A second serve of the same login waits for the first (one line names it), or takes the far side over with \\-\\-far\\-take\\-over (the first is told in one line and waits). Stop one by hand with kill $(head \\-n1 FOLDER/far.pid)."),
    ("CONTAINERS THROUGH EXEC", "serve \\-\\-exec NAME=COMMAND (repeatable; exec = [...] in the config file) serves the JVMs of a container or pod reached through its runtime's exec, where no login on its host is given: COMMAND (split into words as a shell would, no shell run), with jdwpmux far \\-\\-attach appended, must give a byte pipe into the container, e.g. orders='kubectl exec \\-i \\-n shop orders\\-5f7c \\-c app \\-\\-' or billing='podman exec \\-i billing\\-api'. jdwpmux far \\-\\-attach starts the far side in the container as \\-\\-detach does (or finds it running) and carries the exec's stdin and stdout to its socket, so the far link runs over the exec as over ssh: the far side holds the VM connections through a dropped exec for \\-\\-far\\-hold seconds and the next exec resumes the session. The jdwpmux run there is \\-\\-far\\-path (jdwpmux on its PATH by default), or with \\-\\-far\\-copy this binary copied in through the exec after a probe of its OS, machine, glibc, a writable folder and its room (a static musl build runs in images without glibc); a container with no jdwpmux and no shell, or no writable folder, gets one line saying so and what to do. NAME is a host row in list, list \\-\\-hosts and the page, with the exec's own error when it fails (kubectl's Forbidden, a missing container), escaped; its JVMs are listed where they run (pod shop/orders\\-5f7c, container billing\\-api (podman)), each on its own debugger port. On Kubernetes the user needs create on pods/exec; nothing listens in the container."),
    ("PODS", "serve \\-\\-kube NAMESPACE[:SELECTOR] (repeatable; kube = [...] in the config file) follows the pods of a Kubernetes namespace that match a label selector (kubectl's \\-l) through this user's own kubectl on PATH (KUBECONFIG, contexts and auth plugins as set; \\-\\-kube\\-context NAME picks a context): kubectl get \\-\\-raw /api/v1/namespaces/NS/pods lists them, then kubectl get \\-\\-raw with a watch from that list's resourceVersion follows them (nothing changed between the two is missed), and each running container of each running pod is served as \\-\\-exec NAME='kubectl exec \\-i \\-n NS POD \\-c C \\-\\-' would be (\\-\\-far\\-copy, \\-\\-far\\-path and the hold as there), its host row named NS/POD (NS/POD/C when the pod has several containers) and its JVMs listed as pod NS/POD (pod NS/POD (C) when it has several). A pod's JVM keeps its debugger port by namespace, workload (a Deployment from its ReplicaSet's name and pod\\-template\\-hash, a StatefulSet), replica slot, container and main class, not by the pod's name: a rollout's new pod takes the port of the pod it replaces, replicas take ports in order. A host row kube:NAMESPACE[:SELECTOR] says whether kubectl reaches the API server, with kubectl's words when it does not; the list and watch are run again after 1 s doubling to 30 s. A pod's row shows kubectl's own refusal (Forbidden) when this user may not exec into it. A pod that goes (deleted, evicted, no longer running) or whose container stops or is restarted has its rows removed and its debuggers closed, with a log line naming the pod and why. A container whose jdwpmux lists no JVM with a JDWP agent for 30 s (a sidecar, a proxy) has its exec ended, its row saying so, and is looked at again every 5 minutes. Each served container keeps one kubectl exec \\-i: measured with 5 pods, 48\\-50 MiB resident each but 12\\-13 MiB private (USS; 18\\-20 MiB PSS), kubectl's text being shared. The user needs list and watch on pods and create on pods/exec in the namespace."),
    ("CAPTURE", "serve \\-\\-capture FILE writes every packet of every leg: FILE.pcapng for Wireshark, FILE.jsonl for JSON lines. Wireshark's JDWP dissector only claims TCP port 9009, so name the ports: .br\ntshark \\-r session.pcapng \\-d tcp.port==8700,jdwp \\-d tcp.port==8000,jdwp .br\njdwpmux decode session.pcapng prints the same lines as the debug log, DDM chunks decoded; \\-\\-stats sums it up per debugger and command (count, bytes, reply latency), \\-\\-trace OUT.json draws it for ui.perfetto.dev; jdwpmux stats shows the daemon's figures since it started. The Wireshark dissector contrib/wireshark/jdwp_ddm.lua (in the source) decodes DDM chunks inside JDWP: .br\ntshark \\-X lua_script:jdwp_ddm.lua \\-r session.pcapng \\-Y ddm"),
    ("WEB MONITOR", "serve \\-\\-web [ADDR] serves a live page of every VM, its debuggers, threads, heap and traffic, and a JSON API under /api/, on 127.0.0.1:8699 when no ADDR is given. The log prints the address to open: monitor at http://127.0.0.1:8699/?token=TOKEN. The token is made at start and required on every request (the page keeps it in a cookie); the Host header must name the address served; requests that change something (make current, GC, exit) are POST with the token in an X\\-Jdwpmux\\-Token header and are refused from other origins; each refusal is logged. A non\\-loopback ADDR needs \\-\\-allow\\-remote. Thread updates and packet summaries run only while a page shows the VM."),
    ("FILES", "$XDG_CONFIG_HOME/jdwpmux/config.toml (else ~/.config/jdwpmux/config.toml): serve settings, keys named like the long flags; command line > environment > file > defaults. /usr/share/doc/jdwpmux/examples/jdwpmux.toml (from the package; config/jdwpmux.toml in the source): every key with its default, to copy there. The control socket: $XDG_RUNTIME_DIR/jdwpmux/control.sock, else /tmp/jdwpmux\\-UID/control.sock, mode 0600 (commands other than serve look for the user's daemon in both, and in /run/user/UID/jdwpmux); beside it, ssh\\-PID/ (mode 0700) holds the ssh links' control sockets and forwards while serve runs."),
    ("EXIT STATUS", "0 success; 1 runtime error (no daemon answers, a port is in use, a VM cannot do what was asked); 2 usage error (bad flags, a bad config file, an unknown or ambiguous selector)."),
    ("SECURITY", "JDWP has no authentication: whoever reaches a debugger port controls the VM. jdwpmux listens on 127.0.0.1 by default, and a debugger connecting from this machine is let in only when its socket belongs to the daemon's user (the kernel tells the owner of the connecting socket), or to a user named by \\-\\-allow\\-user; others are closed before the handshake with a log line naming their uid. A non\\-loopback \\-\\-listen needs \\-\\-allow\\-remote and logs a warning naming the exposed ports; \\-\\-allow CIDR restricts which peers may connect. The control socket is owner\\-only. The web monitor (\\-\\-web) needs its token on every request and refuses other origins and other Host names. VMs on ssh hosts are reached through ssh forwards from Unix sockets in a folder only the daemon's user can enter; no JDWP port is opened on a network address, on either side. What a host prints is untrusted: every size is bounded and nothing it says is run. Other users' JVMs are left alone (by a root daemon too): the /proc discovery and the port scan take only JVMs and listening ports of the daemon's effective uid, and on ssh hosts only JVMs of the ssh login's user; \\-\\-other\\-users takes them, and a \\-\\-vm address is always connected to. The local scan's records end with a random marker, so no command line can pose as them."),
    ("EXAMPLES", ".nf\njava \\-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=127.0.0.1:8000 \\-cp . Main\njdwpmux serve \\-\\-vm 127.0.0.1:8000\njdb \\-attach 127.0.0.1:8700\njdwpmux list\njdwpmux select com.example.app\njdwpmux threads com.example.app \\-\\-once\njdwpmux heap com.example.app \\-\\-gc \\-\\-png heap.png\njdwpmux serve \\-\\-ssh build\\-box \\-\\-ssh deploy@staging\\-2\njdwpmux select staging\\-2:com.example.Billing\n.fi"),
];

/// The whole man page, roff.
pub fn render() -> String {
    let cmd = Cli::command();
    let mut out = String::new();
    let version = cmd.get_version().unwrap_or("");
    let _ = writeln!(out, ".TH JDWPMUX 1 \"\" \"jdwpmux {version}\" \"User Commands\"");
    // Ragged right, no hyphenation: a line holding only part of a long word (an -agentlib
    // option, a path) has no space to stretch, and justifying it made man warn ("cannot
    // adjust line") at some widths; words break at the places `breakable` marks instead.
    let _ = writeln!(out, ".ad l\n.nh");
    let _ = writeln!(out, ".SH NAME\njdwpmux \\- {}", esc(&cmd.get_about().map(|a| a.to_string()).unwrap_or_default()));
    let _ = writeln!(out, ".SH SYNOPSIS\n\\fBjdwpmux\\fR [\\fIOPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]");
    let long = cmd.get_long_about().map(|a| a.to_string()).unwrap_or_default();
    let _ = writeln!(out, ".SH DESCRIPTION\n{}", esc(&long).replace("\n\n", "\n.PP\n"));
    let _ = writeln!(out, ".SH OPTIONS");
    options(&mut out, &cmd);
    let _ = writeln!(out, ".SH COMMANDS");
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        let _ = writeln!(out, ".SS \"jdwpmux {}\"\n{}", sub.get_name(), esc(&about));
        options(&mut out, sub);
    }
    for (title, body) in EXTRA {
        let body = breakable(&body.replace(" .br\n", "\n.br\n"));
        let _ = writeln!(out, ".SH \"{title}\"\n{body}");
    }
    out
}

/// A completion script for `shell`.
pub fn completions(shell: clap_complete::Shell) -> String {
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "jdwpmux", &mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn committed(rel: &str) -> String {
        let path = format!("{}/{rel}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn the_committed_man_page_is_what_the_code_generates() {
        assert!(
            committed("man/jdwpmux.1") == render(),
            "man/jdwpmux.1 is stale: regenerate it with `cargo run -- man > man/jdwpmux.1`"
        );
    }

    #[test]
    fn the_committed_completions_are_what_the_code_generates() {
        for (shell, file) in [
            (clap_complete::Shell::Bash, "completions/jdwpmux.bash"),
            (clap_complete::Shell::Zsh, "completions/_jdwpmux"),
            (clap_complete::Shell::Fish, "completions/jdwpmux.fish"),
        ] {
            assert!(
                committed(file) == completions(shell),
                "{file} is stale: regenerate it with `cargo run -- completions {shell} > {file}`"
            );
        }
    }

    #[test]
    fn every_command_and_long_option_is_in_the_man_page() {
        let page = render();
        let cmd = Cli::command();
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            assert!(page.contains(&format!("jdwpmux {}", sub.get_name())), "{}", sub.get_name());
            for a in sub.get_arguments().filter(|a| !a.is_hide_set()).filter_map(|a| a.get_long()) {
                assert!(page.contains(&format!("\\-\\-{}", esc(a))), "--{a} of {}", sub.get_name());
            }
        }
        for section in ["PORTS", "JDWPMUX ON THE HOST", "CAPTURE", "WEB MONITOR", "EXIT STATUS", "SECURITY", "EXAMPLES", "tshark"] {
            assert!(page.contains(section), "{section}");
        }
    }

    /// The README's shell lines that run jdwpmux parse as its command line, its TOML blocks
    /// as a config file, and the files it links to exist: what it shows works.
    #[test]
    fn serve_options_are_in_the_groups_of_serve_help() {
        let page = render();
        let serve = &page[page.find(".SS \"jdwpmux serve\"").expect("serve's section")..];
        let serve = &serve[..serve[4..].find(".SS ").map_or(serve.len(), |i| i + 4)];
        // The groups in the order --help shows them, each label once.
        let labels: Vec<usize> = crate::cli::HEADINGS[..crate::cli::HEADINGS.len() - 1]
            .iter()
            .map(|h| {
                let label = format!("\\fB{}:\\fR", esc(h));
                assert_eq!(serve.matches(&label).count(), 1, "{label} in {serve}");
                serve.find(&label).unwrap_or_default()
            })
            .collect();
        assert!(labels.windows(2).all(|w| w[0] < w[1]), "{labels:?}");
        let cmd = Cli::command();
        let sub = cmd.find_subcommand("serve").expect("serve");
        for a in sub.get_arguments().filter(|a| !a.is_hide_set()) {
            let (Some(long), Some(heading)) = (a.get_long(), a.get_help_heading()) else { panic!("{:?} has no group", a.get_id()) };
            let at = serve.find(&format!(".TP\n\\fB\\-\\-{}\\fR", esc(long))).unwrap_or_else(|| panic!("--{long}"));
            let group = crate::cli::HEADINGS.iter().position(|h| *h == heading).expect("a known group");
            assert!(at > labels[group] && labels.get(group + 1).is_none_or(|next| at < *next), "--{long} under {heading}");
        }
    }

    /// What `MANWIDTH=90 man jdwpmux` warned of: a justified line holding only part of a
    /// long word ("cannot adjust line"), or a word wider than a narrow terminal ("can't break
    /// line"). The page is ragged right, and no word runs longer than `MAX_RUN` columns
    /// without a place to break (.ci/package also runs man at several widths).
    #[test]
    fn the_page_is_ragged_right_and_long_words_can_break() {
        const MAX_RUN: usize = 40;
        let page = render();
        assert!(page.lines().nth(1) == Some(".ad l") && page.lines().nth(2) == Some(".nh"), "{}", &page[..200]);
        let mut fill = true;
        for line in page.lines() {
            match line {
                ".nf" => fill = false,
                ".fi" => fill = true,
                l if l.starts_with('.') || !fill => {}
                l => {
                    let text = l.replace("\\fB", "").replace("\\fR", "").replace("\\fI", "").replace("\\-", "-").replace("\\&", "");
                    for run in text.split_whitespace().flat_map(|w| w.split("\\:")) {
                        assert!(run.chars().count() <= MAX_RUN, "{run:?} cannot break, in: {l}");
                    }
                }
            }
        }
    }

    #[test]
    fn the_readme_shows_only_what_works() {
        use clap::CommandFactory;
        let readme = include_str!("../README.md");
        let mut checked = 0;
        let mut block: Option<&str> = None;
        for line in readme.lines() {
            if let Some(lang) = line.strip_prefix("```") {
                block = if block.is_some() { None } else { Some(lang) };
                continue;
            }
            match block {
                Some("sh") => {
                    // Commands joined by && or ending in &, comments cut.
                    let code = line.split(" #").next().unwrap_or_default();
                    for cmd in code.split("&&").map(|c| c.trim().trim_end_matches('&').trim()) {
                        let words: Vec<&str> = cmd.split_whitespace().collect();
                        let args: Vec<&str> = match words.as_slice() {
                            ["jdwpmux", rest @ ..] => rest.to_vec(),
                            ["cargo", "run", "--release", "--", rest @ ..] => rest.to_vec(),
                            _ => continue,
                        };
                        let argv = std::iter::once("jdwpmux").chain(args.iter().copied());
                        if let Err(e) = Cli::command().try_get_matches_from(argv) {
                            panic!("README: `{cmd}` does not parse: {e}");
                        }
                        checked += 1;
                    }
                }
                Some("toml") => {}
                _ => {}
            }
        }
        assert!(checked >= 20, "only {checked} jdwpmux lines checked");
        let mut toml = String::new();
        let mut in_toml = false;
        for line in readme.lines() {
            match (line.starts_with("```toml"), line.starts_with("```"), in_toml) {
                (true, _, _) => in_toml = true,
                (_, true, true) => in_toml = false,
                (_, _, true) => toml.push_str(&format!("{line}\n")),
                _ => {}
            }
        }
        crate::config::ConfigFile::parse(&toml, std::path::Path::new("README.md")).expect("the README's config parses");
        // Links to files of the repository.
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        for part in readme.split("](").skip(1) {
            let target = part.split(')').next().unwrap_or_default().split('#').next().unwrap_or_default();
            if target.is_empty() || target.starts_with("http") {
                continue;
            }
            assert!(root.join(target).exists(), "README links to {target}, which is not there");
        }
        assert!(readme.lines().count() <= 350, "the README is for users: 350 lines at most");
    }

    /// The README's test command (its first block's second line) is the script that installs
    /// what the tests need, and the one `.ci/run` runs, on a line of its own.
    #[test]
    fn the_readme_test_command_is_the_one_ci_runs() {
        let readme = include_str!("../README.md");
        let block = readme.split("```sh\n").nth(1).and_then(|b| b.split("```").next()).expect("a first sh block");
        let test = block.lines().nth(1).and_then(|l| l.split(" #").next()).map(str::trim).expect("a second line");
        assert_eq!(test, "./test.sh", "README's test command");
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let script = std::fs::read_to_string(root.join("test.sh")).expect("test.sh");
        assert!(script.contains("bash .ci/install") && script.contains("cargo test"), "test.sh installs, then tests");
        let ci = std::fs::read_to_string(root.join(".ci/run")).expect(".ci/run");
        assert!(ci.lines().any(|l| l == test), ".ci/run runs {test} as README says");
    }

    /// The README's first steps work in the order written (`jdwpmux` is run only after the
    /// first block put it on PATH), and `--help`'s quick start is the README's.
    #[test]
    fn the_quick_start_is_one_and_works_in_order() {
        let readme = include_str!("../README.md");
        // Commands only: the lines of the README's code blocks, with their line numbers.
        let mut in_code = false;
        let commands: Vec<(usize, &str)> = readme
            .lines()
            .enumerate()
            .filter(|(_, l)| {
                if l.starts_with("```") {
                    in_code = !in_code;
                    return false;
                }
                in_code
            })
            .collect();
        let first_run = commands.iter().find(|(_, l)| l.starts_with("jdwpmux ")).map(|(n, _)| *n).expect("a jdwpmux line");
        let install = commands.iter().find(|(_, l)| l.starts_with("cargo install --locked --path .")).map(|(n, _)| *n).expect("an install line");
        assert!(install < first_run, "README line {}: jdwpmux run before it is installed", first_run + 1);
        let quick = readme.split("## Quick start").nth(1).expect("a quick start");
        for line in crate::cli::AFTER_HELP.lines().skip(1).take_while(|l| !l.is_empty()) {
            let command = |l: &str| l.split(" #").next().unwrap_or_default().trim().to_string();
            assert!(quick.lines().any(|r| command(r) == command(line)), "--help's {line:?} is not the README's");
        }
    }
}
