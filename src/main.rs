//! The `agentd` binary: parses configuration, initialises tracing, binds the
//! listener and serves until SIGINT or SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use tokio::net::TcpListener;

use agentd::config::{FileConfig, Overrides};
use agentd::server;

/// agentd: a gRPC service hosting LLM agents that can stop to ask a person.
#[derive(Parser)]
#[command(version, about, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// With no subcommand, agentd serves.
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the gRPC API (the default).
    Serve(ServeArgs),
}

#[derive(Args, Clone)]
struct ServeArgs {
    /// The TOML file with server settings and agents.
    #[arg(long, env = "AGENTD_CONFIG")]
    config: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:50051].
    #[arg(long, env = "AGENTD_LISTEN")]
    listen: Option<SocketAddr>,
    /// Folder for the embedded SQLite store [default: ./agentd-data].
    #[arg(long, env = "AGENTD_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Run store URL: sqlite://PATH or memory: [default: SQLite in the data dir].
    #[arg(long, env = "AGENTD_STORE")]
    store: Option<String>,
    /// Seconds open streams get to finish after SIGINT/SIGTERM before the
    /// server closes them.
    #[arg(long, env = "AGENTD_DRAIN_SECS", default_value_t = 10)]
    drain_secs: u64,
    /// Seconds a suspended run waits for an answer before it expires [default: 7 days].
    #[arg(long, env = "AGENTD_SUSPEND_TTL_SECS")]
    suspend_ttl_secs: Option<u64>,
    /// Seconds between two sweeps that mark suspended runs past their time
    /// to live expired; 0 disables the sweep [default: 30].
    #[arg(long, env = "AGENTD_SWEEP_INTERVAL_SECS")]
    sweep_interval_secs: Option<u64>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    match cli.command {
        Some(Command::Serve(args)) => serve(args).await,
        None => serve(cli.serve).await,
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let file = match &args.config {
        Some(path) => FileConfig::load(path)?,
        None => FileConfig::default(),
    };
    let settings = file.settle(Overrides {
        listen: args.listen,
        data_dir: args.data_dir,
        store: args.store,
        suspend_ttl_secs: args.suspend_ttl_secs,
        sweep_interval_secs: args.sweep_interval_secs,
    });
    let runtime = server::build_runtime(&settings)?;
    let listener = TcpListener::bind(settings.listen)
        .await
        .with_context(|| format!("binding {}", settings.listen))?;
    let address = listener.local_addr()?;
    tracing::info!(store = %settings.store, "agentd listening on {address}");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = server::serve(listener, runtime, async {
        let _ = stopped.await;
    });
    tokio::pin!(serving);
    tokio::select! {
        result = &mut serving => return Ok(result?),
        () = shutdown_signal() => {
            let _ = stop.send(());
        }
    }
    let drain = Duration::from_secs(args.drain_secs);
    match tokio::time::timeout(drain, serving).await {
        Ok(result) => result?,
        Err(_) => tracing::warn!(?drain, "drain period over: closing the remaining streams"),
    }
    tracing::info!("agentd stopped");
    Ok(())
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
async fn shutdown_signal() {
    let interrupt = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::error!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
}
