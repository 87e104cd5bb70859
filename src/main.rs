//! Wiring only: parse the command line, set up logging, run, map errors to exit codes.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use jdwpmux::cli::{Cli, Command, LogFormat, ServeArgs};
use jdwpmux::settings::{parse_vm_addr, Settings, SettingsError};
use tracing_subscriber::EnvFilter;

/// Time given to sessions to detach debuggers cleanly at shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(&cli);
    // One thread: a packet costs one wake-up of one task. Waking another CPU costs more
    // than the whole relay, so a multi-threaded runtime would only add latency here.
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("jdwpmux: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let result = match cli.command {
        Command::Serve(args) => rt.block_on(serve(args)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("jdwpmux: {e:#}");
            let usage = e.downcast_ref::<SettingsError>().is_some()
                || matches!(e.downcast_ref::<jdwpmux::RunError>(), Some(jdwpmux::RunError::Settings(_)));
            ExitCode::from(if usage { 2 } else { 1 })
        }
    }
}

fn init_logging(cli: &Cli) {
    let default = match (cli.quiet, cli.verbose) {
        (true, _) => "warn",
        (false, 0) => "info",
        (false, 1) => "debug",
        (false, _) => "trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
    match cli.log_format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

fn settings_from(args: ServeArgs) -> Result<Settings, SettingsError> {
    let vms = args.vms.iter().map(|v| parse_vm_addr(v)).collect::<Result<Vec<_>, _>>()?;
    let s = Settings {
        vms,
        listen: args.listen,
        allow_remote: args.allow_remote,
        base_port: args.base_port,
        current_port: args.current_port,
        select: args.select,
        ddm: args.ddm,
        ..Settings::default()
    };
    s.validate()?;
    Ok(s)
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let settings = settings_from(args)?;
    let daemon = jdwpmux::start(settings).await?;
    wait_for_signal().await;
    tracing::info!("shutting down");
    daemon.shutdown(SHUTDOWN_GRACE).await;
    Ok(())
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
