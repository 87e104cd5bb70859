//! The command line (clap derive). Doc comments here are the help text.

use std::net::IpAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::settings::{DdmMode, DEFAULT_BASE_PORT, DEFAULT_CURRENT_PORT, DEFAULT_WEB};

/// A transparent JDWP proxy and debugger multiplexer: the Dalvik Debug Monitor as a daemon.
///
/// jdwpmux keeps one connection to each Java/Android VM, gives every VM its own debugger
/// port and one "current VM" port, and relays debugger traffic next to its own DDM traffic.
#[derive(Debug, Parser)]
#[command(name = "jdwpmux", version, propagate_version = true, after_long_help = AFTER_HELP)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// More log output (-v debug, -vv trace); RUST_LOG overrides.
    #[arg(help_heading = LOGGING)]
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// Only warnings and errors.
    #[arg(help_heading = LOGGING)]
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Log line format.
    #[arg(help_heading = LOGGING)]
    #[arg(long, value_enum, default_value_t = LogFormat::Text, global = true)]
    pub log_format: LogFormat,
    /// The daemon's control socket [default: $XDG_RUNTIME_DIR/jdwpmux/control.sock,
    /// else /tmp/jdwpmux-UID/control.sock; the commands other than serve look for this
    /// user's daemon in both, and in /run/user/UID/jdwpmux].
    #[arg(help_heading = LOGGING)]
    #[arg(long, value_name = "PATH", env = "JDWPMUX_CONTROL", global = true)]
    pub control: Option<PathBuf>,
    /// A TOML config file with `serve` settings, keys named like the long flags [default:
    /// $XDG_CONFIG_HOME/jdwpmux/config.toml or ~/.config/jdwpmux/config.toml, if present].
    #[arg(help_heading = LOGGING)]
    #[arg(long, value_name = "FILE", env = "JDWPMUX_CONFIG", global = true)]
    pub config: Option<PathBuf>,
}

/// The groups of options in `--help` and in the man page, in the order they are shown.
pub const FINDING_VMS: &str = "Finding VMs";
pub const OTHER_MACHINES: &str = "VMs on other machines";
pub const PORTS: &str = "Ports";
pub const SHARING: &str = "Several debuggers on one VM";
pub const CAPTURES: &str = "Captures";
pub const PAGE: &str = "Monitor page";
pub const RELAYING: &str = "Relaying";
pub const LOGGING: &str = "Logging, control socket, config file";
pub const HEADINGS: &[&str] = &[FINDING_VMS, OTHER_MACHINES, PORTS, SHARING, CAPTURES, PAGE, RELAYING, LOGGING];

/// Shown after `--help`, and the source of the man page's extra sections.
pub const AFTER_HELP: &str = "\
Quick start:
  java -agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=127.0.0.1:8000 -cp . Main &
  jdwpmux serve &                   # finds the JVM by its process; or --vm 127.0.0.1:8000
  jdb -attach 127.0.0.1:8700

Ports: 8700 leads to the current VM (`*` in `jdwpmux list`); VM k has its own port 8600+k.
Exit codes: 0 success, 1 runtime error, 2 usage or config error.";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the proxy: connect to VMs and listen for debuggers.
    Serve(Box<ServeArgs>),
    /// List the VMs a running daemon knows: port, pid, app, VM, DDM, current, debugger, state.
    List(ListArgs),
    /// Choose the VM behind the current-VM port (by pid, app name, HOST:PORT, :PORT or PORT of a debugger port; HOST:PID or HOST:APP for an ssh host's VM). It stays the current VM, also while it is away, until another is chosen.
    Select(SelectArgs),
    /// Print a capture file as text (one line per packet, DDM chunks decoded), as traffic
    /// figures (--stats), or as a trace for Perfetto (--trace).
    Decode(DecodeArgs),
    /// Show a DDM-aware VM's threads, refreshed like `top` (DDM THEN/THST).
    Threads(ThreadsArgs),
    /// Show a DDM-aware VM's heap: a summary now (HPIF) and the heap map at the next GC.
    Heap(HeapArgs),
    /// Ask a DDM-aware VM to exit with STATUS (DDM EXIT).
    Exit(ExitArgs),
    /// List a DDM-aware VM's features (DDM FEAT).
    Features(VmArgs),
    /// Traffic figures since the daemon started, per VM, debugger and command: count,
    /// bytes, reply latency p50/p90/p99/max; DDM chunks by type; error replies.
    Stats(StatsArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(CompletionsArgs),
    /// Print the man page (roff) to standard output.
    #[command(hide = true)]
    Man,
    /// jdwpmux on a VM's host (the far side): finds the host's JVMs, holds their debugger
    /// connections and serves them to `serve --ssh` over a Unix socket in a private folder,
    /// so a dropped link loses no event, breakpoint or suspension up to the hold time.
    /// `serve --ssh HOST` starts it on HOST by itself; run it by hand only to look at it.
    Far(FarArgs),
}

#[derive(Debug, Args)]
pub struct FarArgs {
    /// The private folder for the socket, the pid file and the log [default:
    /// $XDG_RUNTIME_DIR/jdwpmux-far, else /tmp/jdwpmux-far-UID].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<std::path::PathBuf>,
    /// Seconds the VM connections are held with no near side, when the near side asks for
    /// no other hold (`serve --far-hold` asks for one); also how long a far side nobody
    /// connects to waits before it ends.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    pub hold: u64,
    /// Seconds between /proc scans.
    #[arg(long, value_name = "SECONDS", default_value_t = 2.0)]
    pub scan_interval: f64,
    /// Start in the background (a session of its own, the log in the folder), print the
    /// ready line and return.
    #[arg(long)]
    pub detach: bool,
    /// Use a folder of this protocol's inside the private folder: a far side of another
    /// protocol holds the folder itself (`serve --ssh` asks for this when it finds one).
    #[arg(long)]
    pub beside: bool,
    /// Start it in the background as --detach does (or find it running), print the ready
    /// line, then carry bytes between this process's stdin and stdout and its socket: what
    /// `serve --exec` runs in a container through its runtime's exec.
    #[arg(long, conflicts_with = "detach")]
    pub attach: bool,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print a JSON array instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Print the --ssh hosts (link state, JVM count, last scan) instead of the VMs; a plain list shows them under the VMs.
    #[arg(long)]
    pub hosts: bool,
}

#[derive(Debug, Args)]
pub struct SelectArgs {
    /// pid, app name (exact, its class name without the package such as Billing, or a unique prefix), VM HOST:PORT, or :PORT of a debugger port (a bare number that is no pid is one too); HOST:PID or HOST:APP picks among an ssh host's VMs (HOST `local`: this machine's).
    pub selector: String,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// A VM's JDWP address, HOST:PORT (repeatable), e.g. one started with
    /// -agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=127.0.0.1:8000.
    /// android:HOST:PORT says it is an Android VM (an `adb forward tcp:PORT jdwp:PID`):
    /// it gets DDM only, never a JDWP packet of the proxy's own, until a debugger attaches.
    #[arg(help_heading = FINDING_VMS)]
    #[arg(long = "vm", value_name = "[android:]HOST:PORT")]
    pub vms: Vec<String>,
    /// Scan a port range for VMs, HOST:FIRST-LAST (repeatable) [default when no --vm or
    /// --scan is given: 127.0.0.1:8000-8040].
    #[arg(help_heading = FINDING_VMS)]
    #[arg(long = "scan", value_name = "HOST:FIRST-LAST")]
    pub scans: Vec<crate::discovery::scan::ScanRange>,
    /// Seconds between scans.
    #[arg(help_heading = FINDING_VMS)]
    #[arg(long, value_name = "SECONDS", default_value_t = 2.0)]
    pub scan_interval: f64,
    /// Do not probe ports for VMs (the default range 127.0.0.1:8000-8040). The JVMs of this
    /// machine are still found by their process (--no-proc turns that off).
    #[arg(help_heading = FINDING_VMS)]
    #[arg(long, conflicts_with = "scans")]
    pub no_scan: bool,
    /// Do not look for JVMs in /proc [on by default when no --vm, --scan or --adb is given:
    /// every local JVM with a listening JDWP agent, on any port, found by its process].
    #[arg(help_heading = FINDING_VMS)]
    #[arg(long)]
    pub no_proc: bool,
    /// Find local JVMs in /proc even when --vm, --scan or --adb is given.
    #[arg(help_heading = FINDING_VMS)]
    #[arg(long, conflicts_with = "no_proc")]
    pub proc: bool,
    /// Only JVMs found in /proc whose command line contains TEXT (repeatable: any of them).
    #[arg(help_heading = FINDING_VMS)]
    #[arg(long, value_name = "TEXT")]
    pub proc_match: Vec<String>,
    /// Also take other users' JVMs: those /proc shows running as another user than jdwpmux
    /// (its effective uid), ports of this machine a scan finds listening as another user,
    /// and on --ssh hosts JVMs of other users than the ssh login. By default they are left
    /// alone, by a root daemon too, so that their owners' own debuggers can attach (a
    /// HotSpot agent takes one debugger at a time). A --vm address is always connected to.
    #[arg(help_heading = FINDING_VMS)]
    #[arg(long)]
    pub other_users: bool,
    /// Reach the JVMs of root's Podman containers, which this user cannot enter, through
    /// `sudo -n podman exec -i CONTAINER` (as through `docker exec` for a member of the docker
    /// group): only when sudo lets this user run podman without a password; what is copied in
    /// follows --far-copy. Without it such a JVM is listed with how to reach it.
    #[arg(help_heading = FINDING_VMS)]
    #[arg(long)]
    pub podman_sudo: bool,
    /// Find VMs on the devices of an adb server, and start that server (`adb start-server`)
    /// if none answers and adb is on PATH; it keeps running after jdwpmux ends, as adb's
    /// server does (`adb kill-server` stops it) [default: 127.0.0.1:5037]. Without --adb, and
    /// when no --vm or --scan is given, the server at 127.0.0.1:5037 (ANDROID_ADB_SERVER_PORT)
    /// is followed if one runs, and never started.
    #[arg(help_heading = FINDING_VMS)]
    #[arg(long, value_name = "HOST:PORT", num_args = 0..=1, default_missing_value = "127.0.0.1:5037")]
    pub adb: Option<std::net::SocketAddr>,
    /// Do not use an adb server.
    #[arg(help_heading = FINDING_VMS)]
    #[arg(long, conflicts_with = "adb")]
    pub no_adb: bool,
    /// When to probe VMs with DDM: auto (Android VMs only), always, never.
    #[arg(help_heading = FINDING_VMS)]
    #[arg(long, value_enum, default_value_t = DdmMode::Auto)]
    pub ddm: DdmMode,
    /// Find and serve the JVMs of another host through ssh, as `ssh DEST` would reach it (a
    /// name from ~/.ssh/config, or USER@HOST; repeatable). Keys, ssh-agent and known_hosts
    /// work as for any ssh; jdwpmux never prompts. Nothing is installed on the host and no
    /// JDWP port is opened on a network address.
    #[arg(help_heading = OTHER_MACHINES)]
    #[arg(long = "ssh", value_name = "DEST")]
    pub ssh: Vec<crate::remote::Destination>,
    /// The ssh config file for --ssh hosts (ssh -F) [default: ssh's own, ~/.ssh/config].
    #[arg(help_heading = OTHER_MACHINES)]
    #[arg(long, value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
    /// Seconds between scans of each ssh host.
    #[arg(help_heading = OTHER_MACHINES)]
    #[arg(long, value_name = "SECONDS", default_value_t = crate::settings::DEFAULT_SSH_INTERVAL.as_secs_f64())]
    pub ssh_interval: f64,
    /// Seconds of silence on an ssh link before ssh checks it (ServerAliveInterval; the link
    /// counts as lost after three unanswered checks).
    #[arg(help_heading = OTHER_MACHINES)]
    #[arg(long, value_name = "SECONDS", default_value_t = crate::settings::DEFAULT_SSH_KEEPALIVE.as_secs())]
    pub ssh_keepalive: u64,
    /// When to use jdwpmux on an --ssh host (`jdwpmux far`, started through the ssh link):
    /// it holds the VM connections there, so a dropped link loses no event, breakpoint or
    /// suspension. auto: when a compatible jdwpmux is there, else ssh forwards with one line
    /// saying why; always: only through it; never: ssh forwards.
    #[arg(help_heading = OTHER_MACHINES)]
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = crate::remote::far_choice::FarMode::Auto)]
    pub far: crate::remote::far_choice::FarMode,
    /// Which jdwpmux to start on each --ssh host and in each --exec container (`jdwpmux far`):
    /// a name found on that host's PATH, or a path there.
    #[arg(help_heading = OTHER_MACHINES)]
    #[arg(long, value_name = "PATH", default_value = "jdwpmux")]
    pub far_path: String,
    /// Seconds jdwpmux on a host holds its VM connections while the link is cut (1 to
    /// 86400): the VMs see nothing and the debuggers wait. Past it, each VM sees its debugger
    /// leave, as when it quits, and the far side ends.
    #[arg(help_heading = OTHER_MACHINES)]
    #[arg(long, value_name = "SECONDS", default_value_t = crate::remote::far_choice::DEFAULT_HOLD_SECS)]
    pub far_hold: u32,
    /// When a host has no jdwpmux --far can use, copy this one there (after checking the
    /// host's OS, architecture and glibc), into ~/.cache/jdwpmux/VERSION/ on the host, where
    /// later starts of this same build find it: a copy there is used only when its size and
    /// CRC (the host's cksum, else busybox crc32) are this binary's; another build of the
    /// version is copied over, and one the host cannot sum is copied again. Without it
    /// nothing is ever copied.
    #[arg(help_heading = OTHER_MACHINES)]
    #[arg(long)]
    pub far_copy: bool,
    /// When jdwpmux on a host serves another serve of the same login (another terminal or
    /// person), take it over: that serve's VM connections there are closed with their
    /// debuggers, it is told in one line and waits. Without it this serve waits instead.
    #[arg(help_heading = OTHER_MACHINES)]
    #[arg(long)]
    pub far_take_over: bool,
    /// Serve the JVMs of a container or pod through its runtime's exec, where no login on
    /// its host is given: COMMAND (split as a shell would), with `jdwpmux far --attach`
    /// appended, must give a byte pipe into it, e.g. orders='kubectl exec -i -n shop
    /// orders-5f7c -c app --' or billing='podman exec -i billing-api' (repeatable). jdwpmux
    /// runs in the container (its own, --far-path, or this one copied in with --far-copy);
    /// NAME is the host its rows carry.
    #[arg(help_heading = OTHER_MACHINES)]
    #[arg(long = "exec", value_name = "NAME=COMMAND")]
    pub exec: Vec<crate::remote::exec::ExecSpec>,
    /// Serve the JVMs of the pods of a Kubernetes namespace that match a label selector
    /// (kubectl's -l), e.g. shop:app=orders, or every pod of billing (repeatable): followed
    /// through this user's own kubectl (KUBECONFIG, contexts and auth plugins as set), each
    /// running container reached as --exec reaches one (`kubectl exec -i`). A rollout's new
    /// pod takes the debugger port of the pod it replaces.
    #[arg(help_heading = OTHER_MACHINES)]
    #[arg(long = "kube", value_name = "NAMESPACE[:SELECTOR]")]
    pub kube: Vec<crate::remote::kube::KubeSpec>,
    /// The kubeconfig context --kube uses (kubectl --context); its current context by default.
    #[arg(help_heading = OTHER_MACHINES)]
    #[arg(long, value_name = "NAME")]
    pub kube_context: Option<String>,
    /// Address the debugger ports listen on.
    #[arg(help_heading = PORTS)]
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1", env = "JDWPMUX_LISTEN")]
    pub listen: IpAddr,
    /// Allow a non-loopback --listen address (an open JDWP port is remote code execution).
    #[arg(help_heading = PORTS)]
    #[arg(long, env = "JDWPMUX_ALLOW_REMOTE")]
    pub allow_remote: bool,
    /// Only peers in CIDR may connect to debugger ports (repeatable), like the JDWP
    /// agent's allow= option. Refused peers get one log line each.
    #[arg(help_heading = PORTS)]
    #[arg(long, value_name = "CIDR")]
    pub allow: Vec<crate::listen::allow::Cidr>,
    /// Let debuggers of local user USER (a name or a uid) connect too (repeatable); `any`
    /// lets every local user in. Without it a debugger connecting from this machine must run
    /// as the daemon's own user (its socket's owner is asked of the kernel): JDWP lets
    /// whoever connects run code as the VM's user. Refused users get one log line each.
    #[arg(help_heading = PORTS)]
    #[arg(long = "allow-user", value_name = "USER")]
    pub allow_users: Vec<crate::listen::owner::AllowUser>,
    /// First per-VM debugger port: VM k listens on BASE + k (0: ephemeral ports).
    #[arg(help_heading = PORTS)]
    #[arg(long, value_name = "PORT", default_value_t = DEFAULT_BASE_PORT, env = "JDWPMUX_BASE_PORT")]
    pub base_port: u16,
    /// Port that leads to the current VM (0: an ephemeral port).
    #[arg(help_heading = PORTS)]
    #[arg(long, value_name = "PORT", default_value_t = DEFAULT_CURRENT_PORT, env = "JDWPMUX_CURRENT_PORT")]
    pub current_port: u16,
    /// The current VM at start: pid, app name, HOST:PORT, or :PORT of a debugger port (a bare number that is no pid is one too).
    #[arg(help_heading = PORTS)]
    #[arg(long, value_name = "SELECTOR", env = "JDWPMUX_SELECT")]
    pub select: Option<String>,
    /// Debuggers that may attach to one VM at once (an IDE, jdb and a script, say); each
    /// sees its own events and suspensions. 1 refuses a second debugger, as a JDWP agent
    /// does. Past the limit a debugger is refused with a log line.
    #[arg(help_heading = SHARING)]
    #[arg(long, value_name = "N", default_value_t = crate::settings::DEFAULT_MAX_DEBUGGERS)]
    pub max_debuggers: usize,
    /// When jdwpmux answers class, method and VM data that never changes (signatures,
    /// fields, methods, line and variable tables, IDSizes, Version, capabilities) from what
    /// the VM said before on the same connection, for any of its debuggers, without a round
    /// trip. Dropped on RedefineClasses, class unloading and a new VM connection. auto: VMs
    /// reached through ssh; always: every VM; never: every command goes to the VM.
    #[arg(help_heading = SHARING)]
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = crate::settings::NearCacheMode::Auto)]
    pub near_cache: crate::settings::NearCacheMode,
    /// Seconds a debugger may leave the VM's packets unread (or stop halfway through a large
    /// command) before it is cut off with a log line; meanwhile it holds up its VM's other
    /// debuggers. 1 to 600.
    #[arg(help_heading = SHARING)]
    #[arg(long, value_name = "SECONDS", default_value_t = crate::settings::DEFAULT_DEBUGGER_STALL_TIMEOUT.as_secs_f64())]
    pub stall_timeout: f64,
    /// Capture every packet on every leg to FILE (.pcapng for Wireshark, .jsonl for JSON
    /// lines). Read it with: tshark -r FILE -d tcp.port==8700,jdwp  (or jdwpmux decode FILE)
    #[arg(help_heading = CAPTURES)]
    #[arg(long, value_name = "FILE", env = "JDWPMUX_CAPTURE")]
    pub capture: Option<PathBuf>,
    /// Capture format, when the file name does not say: pcapng or jsonl.
    #[arg(help_heading = CAPTURES)]
    #[arg(long, value_name = "FORMAT")]
    pub capture_format: Option<crate::capture::Format>,
    /// Stop capturing (with one log line) before the file would exceed this many bytes.
    #[arg(help_heading = CAPTURES)]
    #[arg(long, value_name = "BYTES")]
    pub capture_max_bytes: Option<u64>,
    /// Bytes kept of each packet in the capture; the rest is counted, not stored.
    #[arg(help_heading = CAPTURES)]
    #[arg(long, value_name = "BYTES", default_value_t = crate::capture::DEFAULT_SNAPLEN)]
    pub capture_snaplen: usize,
    /// Serve the live monitor page (VMs, debuggers, threads, heap, traffic) and its JSON API
    /// on ADDR [default without ADDR: 127.0.0.1:8699]. The log prints the address to open,
    /// with a token; a non-loopback ADDR needs --allow-remote.
    #[arg(help_heading = PAGE)]
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = DEFAULT_WEB)]
    pub web: Option<std::net::SocketAddr>,
    /// Do not serve the monitor page (when the config file turns it on).
    #[arg(help_heading = PAGE)]
    #[arg(long, conflicts_with = "web")]
    pub no_web: bool,
    /// Microseconds the daemon keeps polling for an answer after it wrote to a VM or a
    /// debugger, before it sleeps (0 to 1000; 0: sleep at once). Measured on a 2-CPU virtual
    /// machine, 50 brings a HotSpot round trip near a direct connection's, at about 1.4
    /// times the daemon's CPU per round trip. Spins only while packets flow.
    #[arg(help_heading = RELAYING)]
    #[arg(long, value_name = "US", default_value_t = 0)]
    pub spin_us: u64,
    /// Keep the daemon's thread on the CPU it runs on while it relays requests one at a time,
    /// unless something else keeps that CPU busy (then it moves, and tries again after a
    /// back-off). On a 2-CPU virtual machine that cut the daemon's CPU per HotSpot round trip
    /// by about a fifth, and its latency too. Off by default: a background process that sets
    /// its own CPU affinity is a surprise on a machine shared with other work.
    #[arg(help_heading = RELAYING)]
    #[arg(long, overrides_with = "no_cpu_pin")]
    pub cpu_pin: bool,
    /// No CPU pinning: the default now, kept so that command lines that said it still run.
    #[arg(help_heading = RELAYING)]
    #[arg(long, hide = true, overrides_with = "cpu_pin")]
    pub no_cpu_pin: bool,
}

impl ServeArgs {
    /// Whether the daemon pins its thread: `--cpu-pin` (or the config's `cpu-pin`), unless
    /// `--no-cpu-pin`; of the two flags on one command line the last one counts.
    pub fn pins_cpu(&self) -> bool {
        self.cpu_pin && !self.no_cpu_pin
    }
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct VmArgs {
    /// pid, app name, VM HOST:PORT, or :PORT of a debugger port (a bare number that is no pid is one too).
    pub selector: String,
}

#[derive(Debug, Args)]
pub struct ThreadsArgs {
    /// pid, app name, VM HOST:PORT, or :PORT of a debugger port (a bare number that is no pid is one too).
    pub selector: String,
    /// Print one snapshot and exit.
    #[arg(long)]
    pub once: bool,
    /// Milliseconds between updates.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub interval: u64,
}

#[derive(Debug, Args)]
pub struct HeapArgs {
    /// pid, app name, VM HOST:PORT, or :PORT of a debugger port (a bare number that is no pid is one too).
    pub selector: String,
    /// The native heap (NHSG) instead of the VM heap (HPSG).
    #[arg(long)]
    pub native: bool,
    /// Ask the VM for a GC first, so the map comes at once.
    #[arg(long)]
    pub gc: bool,
    /// Only the summary; do not wait for a GC's heap map.
    #[arg(long, conflicts_with_all = ["gc", "png"])]
    pub summary: bool,
    /// Draw the heap map to FILE as a PNG picture with a legend.
    #[arg(long, value_name = "FILE")]
    pub png: Option<PathBuf>,
    /// Seconds to wait for the next GC.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub timeout: u64,
}

#[derive(Debug, Args)]
pub struct ExitArgs {
    /// pid, app name, VM HOST:PORT, or :PORT of a debugger port (a bare number that is no pid is one too).
    pub selector: String,
    /// The exit status the VM should end with.
    #[arg(allow_negative_numbers = true)]
    pub status: i32,
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Only this VM: pid, app name, VM HOST:PORT, or :PORT of a debugger port [default: every VM].
    pub selector: Option<String>,
    /// Print JSON instead of text tables.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DecodeArgs {
    /// A capture written by `serve --capture` (pcapng or JSON lines), or another tool's pcap.
    pub file: PathBuf,
    /// Print JSON instead of text (JSON lines; with --stats one JSON document).
    #[arg(long)]
    pub json: bool,
    /// Print traffic figures instead of the packets: per debugger and command the count,
    /// bytes and reply latency (p50/p90/p99/max), sorted by total time; DDM chunks by type;
    /// error replies by name.
    #[arg(long)]
    pub stats: bool,
    /// Write the capture as a Chrome trace event file (open it in ui.perfetto.dev): a track
    /// per debugger, each request a slice from command to reply.
    #[arg(long, value_name = "OUT.json")]
    pub trace: Option<PathBuf>,
}

#[cfg(test)]
#[path = "cli_tests.rs"]
mod tests;
