//! Wiring only: parse the command line, set up logging, run, map errors to exit codes.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use std::process::ExitCode;
use std::time::Duration;

use jdwpmux::safe_text::{shown_lines, Shown};
use jdwpmux::cli::{Cli, Command, DecodeArgs, HeapArgs, ListArgs, LogFormat, SelectArgs, ServeArgs, StatsArgs, ThreadsArgs};
use jdwpmux::control::{self, client, protocol::{ErrorKind, Request, Response}};
use jdwpmux::settings::{self, parse_vm_spec, Settings, SettingsError};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::EnvFilter;

/// Time given to sessions to detach debuggers cleanly at shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

fn main() -> ExitCode {
    // The namespace helper (`netns::helper` starts this binary as one) must stay
    // single-threaded to join a user namespace: it runs before the CLI, logging or the
    // runtime can start any thread.
    if let Some(code) = jdwpmux::netns::child::intercept() {
        return code;
    }
    let cli = match parse_command_line() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let log_guard = init_logging(&cli);
    ignore_file_size_signal();
    // One thread: a packet costs one wake-up of one task. Waking another CPU costs more
    // than the whole relay, so a multi-threaded runtime would only add latency here.
    // Before it sleeps, the thread lets a peer it just wrote to run (see `park`).
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_park(jdwpmux::park::before_park)
        .on_thread_unpark(jdwpmux::park::after_unpark)
        .on_thread_start(jdwpmux::park::pin::thread_started)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("jdwpmux: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    // `serve` answers at the default path; the other commands find the daemon where it
    // answers (a shell without XDG_RUNTIME_DIR and one with it use two paths).
    let control = match (&cli.control, &cli.command) {
        (Some(named), _) => named.clone(),
        (None, Command::Serve(_) | Command::Far(_) | Command::Decode(_) | Command::Completions(_) | Command::Man) => control::default_path(),
        (None, _) => control::locate(),
    };
    let result = match cli.command {
        Command::Serve(args) => rt.block_on(serve(*args, control)),
        Command::List(args) => rt.block_on(list(args, &control)),
        Command::Select(args) => rt.block_on(select(args, &control)),
        Command::Decode(args) => decode(args),
        Command::Threads(args) => rt.block_on(threads(args, &control)),
        Command::Heap(args) => rt.block_on(heap(args, &control)),
        Command::Exit(a) => rt.block_on(print_text(Request::Exit { selector: a.selector, status: a.status }, &control)),
        Command::Features(a) => rt.block_on(print_text(Request::Features { selector: a.selector }, &control)),
        Command::Stats(args) => rt.block_on(stats(args, &control)),
        Command::Completions(a) => {
            print!("{}", jdwpmux::manpage::completions(a.shell));
            Ok(())
        }
        Command::Man => {
            print!("{}", jdwpmux::manpage::render());
            Ok(())
        }
        Command::Far(a) => far(a, &rt),
    };
    // Every queued log line is out before the last word, or the exit.
    log_guard.flush();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // Every error type here puts its cause in its own message: print it once. It may
            // quote a VM's or a host's words (a selector's candidates, ssh's refusal).
            eprintln!("jdwpmux: {}", Shown(&e.to_string()));
            ExitCode::from(exit_code(&e))
        }
    }
}

/// Parses the command line over the config file's values (command line > environment >
/// file > defaults). A bad config file is one line on stderr and exit 2, like a bad flag.
fn parse_command_line() -> Result<Cli, ExitCode> {
    use clap::{CommandFactory, FromArgMatches};
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let mut cmd = Cli::command();
    if let Some((path, _named)) = jdwpmux::config::locate(&args) {
        match jdwpmux::config::ConfigFile::load(&path) {
            Ok(file) => cmd = file.apply(cmd),
            Err(e) => {
                eprintln!("jdwpmux: {e}");
                return Err(ExitCode::from(2));
            }
        }
    }
    let matches = cmd.get_matches_from(&args);
    Cli::from_arg_matches(&matches).map_err(|e| e.exit())
}

fn far(a: jdwpmux::cli::FarArgs, rt: &tokio::runtime::Runtime) -> anyhow::Result<()> {
    if !(a.scan_interval.is_finite() && a.scan_interval > 0.0) {
        return Err(UsageError(format!("--scan-interval {}: must be a positive number of seconds", a.scan_interval)).into());
    }
    let opts = jdwpmux::remote::far::Options {
        dir: a.dir,
        hold: Duration::from_secs(a.hold),
        scan_interval: Duration::from_secs_f64(a.scan_interval),
        limit: jdwpmux::remote::far::DEFAULT_LIMIT,
        beside: a.beside,
    };
    if a.detach {
        return Ok(jdwpmux::remote::far::detach(&opts)?);
    }
    if a.attach {
        // The exec ends when this returns: the bridge's threads go with the process.
        jdwpmux::remote::far::attach(&opts)?;
        std::process::exit(0);
    }
    Ok(rt.block_on(jdwpmux::remote::far::serve(opts))?)
}

/// A usage error (bad flags, config, selector) that the user must fix.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct UsageError(String);

/// 2 for what the user must fix in the command, 1 for what went wrong at run time.
fn exit_code(e: &anyhow::Error) -> u8 {
    let usage = e.downcast_ref::<SettingsError>().is_some()
        || e.downcast_ref::<UsageError>().is_some()
        || matches!(e.downcast_ref::<jdwpmux::RunError>(), Some(jdwpmux::RunError::Settings(_)));
    if usage {
        2
    } else {
        1
    }
}

fn decode(args: DecodeArgs) -> anyhow::Result<()> {
    use jdwpmux::capture::decode_cmd::{run, DecodeOptions};
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let opts = DecodeOptions { json: args.json, stats: args.stats, trace: args.trace };
    run(&args.file, &opts, &mut out, &mut std::io::stderr())?;
    Ok(())
}

/// Turns an error response into the error the exit code is chosen from.
fn response_error(r: Response) -> anyhow::Error {
    match r {
        Response::Error { kind: ErrorKind::Selector, message } => UsageError(message).into(),
        Response::Error { message, .. } => anyhow::anyhow!(message),
        other => anyhow::anyhow!("unexpected answer from the daemon: {other:?}"),
    }
}

async fn print_text(req: Request, control: &std::path::Path) -> anyhow::Result<()> {
    match client::request(control, &req).await? {
        Response::Text { text } => {
            print!("{}", shown_lines(&text));
            Ok(())
        }
        other => Err(response_error(other)),
    }
}

async fn threads(args: ThreadsArgs, control: &std::path::Path) -> anyhow::Result<()> {
    use std::io::{IsTerminal, Write};
    let req = Request::Threads { selector: args.selector, interval_ms: args.interval, once: args.once };
    let mut stream = client::stream(control, &req).await?;
    let tty = std::io::stdout().is_terminal();
    loop {
        tokio::select! {
            r = stream.next() => match r? {
                Some(Response::Text { text }) => {
                    let mut out = std::io::stdout().lock();
                    // Like `top`: redraw in place on a terminal, one block after another in a pipe.
                    // The table's fields were made printable by the daemon; this keeps any
                    // daemon's text from steering the terminal as well.
                    let text = shown_lines(&text);
                    let _ = if tty { write!(out, "\x1b[H\x1b[2J{text}") } else { writeln!(out, "{text}") };
                    let _ = out.flush();
                    if args.once {
                        return Ok(());
                    }
                }
                Some(other) => return Err(response_error(other)),
                None => return Ok(()),
            },
            _ = tokio::signal::ctrl_c() => return Ok(()),
        }
    }
}

async fn heap(args: HeapArgs, control: &std::path::Path) -> anyhow::Result<()> {
    let req = Request::Heap {
        selector: args.selector,
        native: args.native,
        gc: args.gc,
        map: !args.summary,
        png: args.png.is_some(),
        timeout_ms: args.timeout.saturating_mul(1000),
    };
    let timeout = std::time::Duration::from_secs(args.timeout + 20);
    match client::request_within(control, &req, timeout).await? {
        Response::Heap { text, png_hex, png_size } => {
            print!("{}", shown_lines(&text));
            if let (Some(path), Some(hex)) = (&args.png, png_hex) {
                let bytes = control::protocol::from_hex(&hex).ok_or_else(|| anyhow::anyhow!("the daemon sent a damaged picture"))?;
                std::fs::write(path, &bytes).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
                let (w, h) = png_size.unwrap_or((0, 0));
                println!("heap map written to {} ({w}x{h} pixels, {} bytes)", path.display(), bytes.len());
            } else if args.png.is_some() {
                anyhow::bail!("the VM sent no heap map to draw");
            }
            Ok(())
        }
        other => Err(response_error(other)),
    }
}

async fn stats(args: StatsArgs, control: &std::path::Path) -> anyhow::Result<()> {
    match client::request(control, &Request::Stats { selector: args.selector }).await? {
        Response::Stats { report } if args.json => println!("{}", serde_json::to_string_pretty(&report)?),
        Response::Stats { report } => print!("{}", shown_lines(&report.to_text())),
        other => return Err(response_error(other)),
    }
    Ok(())
}

async fn list(args: ListArgs, control: &std::path::Path) -> anyhow::Result<()> {
    match client::request(control, &Request::List).await? {
        Response::Vms { hosts, .. } if args.json && args.hosts => println!("{}", serde_json::to_string_pretty(&hosts)?),
        Response::Vms { vms, .. } if args.json => println!("{}", serde_json::to_string_pretty(&vms)?),
        Response::Vms { hosts, .. } if args.hosts => print!("{}", control::hosts_view::table(&hosts)),
        Response::Vms { vms, hosts, current_port, no_current } => {
            print!("{}", control::view::table(&vms));
            print!("{}", control::view::current_line(&vms, current_port, no_current.as_deref()));
            if !hosts.is_empty() {
                print!("\n{}", control::hosts_view::table(&hosts));
            }
        }
        other => anyhow::bail!("unexpected answer from the daemon: {other:?}"),
    }
    Ok(())
}

async fn select(args: SelectArgs, control: &std::path::Path) -> anyhow::Result<()> {
    match client::request(control, &Request::Select { selector: args.selector }).await? {
        Response::Selected { vm } => {
            let port = vm.debugger_port.map_or("-".into(), |p| p.to_string());
            let app = vm.status.app.as_deref().unwrap_or("-");
            println!("current VM: {} (port {port}, app {})", Shown(&vm.place()), Shown(app));
            Ok(())
        }
        other => Err(response_error(other)),
    }
}

fn init_logging(cli: &Cli) -> jdwpmux::logwriter::FlushGuard {
    let default = match (cli.quiet, cli.verbose) {
        (true, _) => LevelFilter::WARN,
        (false, 0) => LevelFilter::INFO,
        (false, 1) => LevelFilter::DEBUG,
        (false, _) => LevelFilter::TRACE,
    };
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let (writer, guard) = jdwpmux::logwriter::start();
    let writer = if cli.log_format == LogFormat::Json { writer.for_json() } else { writer };
    use jdwpmux::logwriter::text::{PlainFields, PlainText};
    // The same lines either way; the format's builder types differ, hence the macro.
    macro_rules! install {
        ($builder:expr) => {{
            let builder = $builder.with_writer(writer).with_ansi(ansi);
            match cli.log_format {
                // Colours for a person at a terminal; for a file or a pipe the same line
                // without them, written far faster (a THST flood logs every chunk).
                // Either way every field is escaped (PlainFields): text from VMs and hosts
                // must not steer the terminal or forge a line.
                LogFormat::Text if ansi => builder.fmt_fields(PlainFields).init(),
                LogFormat::Text => builder.fmt_fields(PlainFields).event_format(PlainText::default()).init(),
                LogFormat::Json => builder.json().init(),
            }
        }};
    }
    // RUST_LOG's directives need EnvFilter, which also takes a lock whenever a span is
    // entered or left (a VM's session enters its span at every poll). A plain level, the
    // usual case, is filtered where each log call site is registered and costs nothing then.
    match EnvFilter::try_from_default_env() {
        Ok(filter) => install!(tracing_subscriber::fmt().with_env_filter(filter)),
        Err(_) => install!(tracing_subscriber::fmt().with_max_level(default)),
    }
    guard
}

fn settings_from(args: ServeArgs) -> Result<Settings, SettingsError> {
    let specs = args.vms.iter().map(|v| parse_vm_spec(v)).collect::<Result<Vec<_>, _>>()?;
    let vms: Vec<_> = specs.iter().map(|(addr, _)| *addr).collect();
    let android_vms = specs.iter().filter(|(_, android)| *android).map(|(addr, _)| *addr).collect();
    let cpu_pin = args.pins_cpu();
    let mut scans = args.scans;
    // No source named: scan the workstation and the device side, like the DDM design.
    let nothing_named = vms.is_empty() && scans.is_empty() && args.adb.is_none();
    if nothing_named && !args.no_scan {
        scans.push(settings::DEFAULT_SCAN.parse().map_err(SettingsError::BadScan)?);
    }
    let adb_by_default = nothing_named && !args.no_adb;
    let adb = if adb_by_default { Some(settings::default_adb_server()) } else { args.adb };
    // Whether a VM reached over TCP is an adb forward: asked of the adb server in use, or
    // of the usual one, unless adb is off.
    let adb_forwards = if args.no_adb { None } else { Some(adb.unwrap_or_else(settings::default_adb_server)) };
    if !(0.05..=3600.0).contains(&args.scan_interval) {
        return Err(SettingsError::BadScan(format!("--scan-interval {}: expected 0.05 to 3600 seconds", args.scan_interval)));
    }
    let ssh_interval = Duration::try_from_secs_f64(args.ssh_interval)
        .ok()
        .filter(|d| settings::SSH_INTERVAL_RANGE.contains(d))
        .ok_or_else(|| SettingsError::BadSshInterval(args.ssh_interval.to_string()))?;
    if let Some(path) = &args.ssh_config {
        settings::check_ssh_config(path)?;
    }
    let ssh_options = jdwpmux::remote::SshOptions {
        config: args.ssh_config,
        keepalive: Duration::from_secs(args.ssh_keepalive),
        ..Default::default()
    };
    // Local JVMs by their process: by default when no source is named, like the port scan;
    // --no-scan turns off the port scan only, --no-proc this.
    let proc_scan = args.proc || (nothing_named && !args.no_proc);
    let capture = args.capture.map(|path| settings::CaptureSettings {
        path,
        format: args.capture_format,
        max_bytes: args.capture_max_bytes,
        snaplen: args.capture_snaplen,
    });
    // Not a bare `from_secs_f64`: a negative, NaN or huge value would panic there.
    let debugger_stall = Duration::try_from_secs_f64(args.stall_timeout)
        .ok()
        .filter(|d| settings::STALL_TIMEOUT_RANGE.contains(d))
        .ok_or_else(|| SettingsError::BadStallTimeout(args.stall_timeout.to_string()))?;
    let allow_users = jdwpmux::listen::owner::AllowedUsers::resolve(&args.allow_users, jdwpmux::listen::users::uid_of)
        .map_err(SettingsError::UnknownUser)?;
    let s = Settings {
        allow: args.allow,
        allow_users,
        adb,
        adb_by_default,
        adb_forwards,
        capture,
        vms,
        android_vms,
        scans,
        proc_scan,
        proc_match: args.proc_match,
        other_users: args.other_users,
        podman_sudo: args.podman_sudo,
        ssh: args.ssh,
        exec: args.exec,
        kube: args.kube,
        kube_context: args.kube_context,
        ssh_options,
        ssh_interval,
        far: jdwpmux::remote::far_choice::FarChoice {
            mode: args.far,
            path: args.far_path.clone(),
            hold_secs: args.far_hold,
            copy: args.far_copy,
            take_over: args.far_take_over,
            // Gathered answers are served by the near cache's side of a session: with it off
            // the far side is not asked to read them.
            gather: args.near_cache != settings::NearCacheMode::Never,
        },
        scan_interval: Duration::from_secs_f64(args.scan_interval),
        listen: args.listen,
        allow_remote: args.allow_remote,
        base_port: args.base_port,
        current_port: args.current_port,
        select: args.select,
        ddm: args.ddm,
        max_debuggers: args.max_debuggers,
        near_cache: args.near_cache,
        spin: Duration::from_micros(args.spin_us),
        cpu_pin,
        timeouts: settings::Timeouts { debugger_stall, ..Default::default() },
        web: if args.no_web { None } else { args.web },
        ..Settings::default()
    };
    s.validate()?;
    Ok(s)
}

async fn serve(args: ServeArgs, control: std::path::PathBuf) -> anyhow::Result<()> {
    let mut settings = settings_from(args)?;
    settings.control = Some(control);
    match jdwpmux::fd_limit::raise() {
        // Done at every start wherever the soft limit is below the hard one: no news.
        Ok(Some((before, after))) => tracing::debug!("raised the open-file limit (RLIMIT_NOFILE) from {before} to {after}"),
        Ok(None) => {}
        Err(e) => tracing::warn!(error = %e, "cannot raise the open-file limit (RLIMIT_NOFILE)"),
    }
    let daemon = jdwpmux::start(settings).await?;
    wait_for_signal().await;
    tracing::info!("shutting down");
    daemon.shutdown(SHUTDOWN_GRACE).await;
    Ok(())
}

/// A write past the file size limit (`ulimit -f`) raises SIGXFSZ, whose default action
/// kills the process: a capture file reaching the limit would take every debug session down
/// with it. Ignored, the write fails with EFBIG instead, and the capture writer stops with a
/// log line while the daemon carries on.
fn ignore_file_size_signal() {
    // SAFETY: sets one signal's disposition to SIG_IGN; no handler of ours ever runs.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => return std::future::pending().await,
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
