//! The `agentd` binary: parses configuration, initialises tracing, binds the
//! listener and serves until SIGINT or SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use tokio::net::TcpListener;

use agentd::config::{FileConfig, Overrides};
use agentd::server::{self, ServeOptions, TlsConfig};
use agentd::telemetry::{self, LogFormat, TelemetryOptions};

mod bench;

/// agentd: a gRPC service hosting LLM agents that can stop to ask a person.
#[derive(Parser)]
#[command(version, about, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// With no subcommand, agentd serves.
    #[command(flatten)]
    serve: ServeArgs,
    /// Format of the log lines on stderr.
    #[arg(long, global = true, env = "AGENTD_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// Export spans over OTLP/gRPC to this collector, e.g. http://localhost:4317.
    #[cfg(feature = "otel")]
    #[arg(long, global = true, env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    otlp_endpoint: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the gRPC API (the default).
    Serve(ServeArgs),
    /// Talk to an agent from the terminal: streams its answers and asks
    /// you its questions.
    Chat(agentd::chat::ChatArgs),
    /// Measure the ask_user cycle, streaming and capacity against a ceiling.
    ///
    /// Figures worth quoting come from a release build:
    /// `cargo run --release -- bench cycle`. Each scenario starts the server
    /// it measures as a separate process (this executable, `serve` on
    /// 127.0.0.1:0 with a fresh data folder) unless `--target` names a
    /// running one. A table goes to stdout (`--json` for machines), a
    /// progress bar to stderr.
    Bench(bench::BenchArgs),
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
    /// Run store URL: sqlite://PATH (add ?synchronous=normal to trade power-loss durability for fewer fsyncs), postgres://... or memory: [default: SQLite in the data dir].
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
    /// Serve Prometheus metrics (GET /metrics) on this address, e.g.
    /// 127.0.0.1:9090 [default: no metrics endpoint].
    #[arg(long, env = "AGENTD_METRICS_LISTEN")]
    metrics_listen: Option<SocketAddr>,
    /// This replica's id, the owner of the leases on the runs it executes;
    /// unique among replicas sharing a store [default: a fresh UUID].
    #[arg(long, env = "AGENTD_REPLICA_ID")]
    replica_id: Option<String>,
    /// Milliseconds a run lease holds without renewal: a replica that dies
    /// loses its running runs to another this long after its last write
    /// [default: 10000].
    #[arg(long, env = "AGENTD_LEASE_TTL_MS")]
    lease_ttl_ms: Option<u64>,
    /// Milliseconds between renewals of the leases of executing runs
    /// [default: 2000].
    #[arg(long, env = "AGENTD_LEASE_RENEW_MS")]
    lease_renew_ms: Option<u64>,
    /// Milliseconds between searches for running runs whose lease expired;
    /// 0 disables the search [default: 2000].
    #[arg(long, env = "AGENTD_RECOVERY_INTERVAL_MS")]
    recovery_interval_ms: Option<u64>,
    /// A file of `tenant:key` lines: API keys the server accepts, besides
    /// those of [[tenants]] [default: [auth] api_keys_file].
    #[arg(long, env = "AGENTD_API_KEYS_FILE")]
    api_keys_file: Option<PathBuf>,
    /// The TLS certificate chain (PEM); with --tls-key the server speaks
    /// TLS only [default: [tls] cert].
    #[arg(long, env = "AGENTD_TLS_CERT")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM) [default: [tls] key].
    #[arg(long, env = "AGENTD_TLS_KEY")]
    tls_key: Option<PathBuf>,
    /// CA certificates (PEM): clients must present a certificate they
    /// signed (mutual TLS) [default: [tls] client_ca].
    #[arg(long, env = "AGENTD_TLS_CLIENT_CA")]
    tls_client_ca: Option<PathBuf>,
}

/// mimalloc instead of the system allocator: the server allocates and frees
/// many small buffers per chunk and per request on several threads, where
/// glibc's malloc spent a fifth of the server's instructions (see
/// BENCHMARKS.md) and kept per-thread arenas' memory.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc's `mi_option_e` (mimalloc.h; the
/// sys crate names no constant for it): how long freed memory stays
/// committed before it goes back to the operating system.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Freed memory goes back to the operating system at once instead of after
/// mimalloc's purge delay (10 ms by default, ten times that for its
/// arenas), so that the server's resident memory follows what it
/// holds (BENCHMARKS.md: `capacity`); it costs no measurable throughput.
fn purge_freed_memory_at_once() {
    // SAFETY: setting an option is allowed at any time; mimalloc reads it
    // on its next purge.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    purge_freed_memory_at_once();
    let cli = Cli::parse();
    // The terminal client keeps the terminal for the conversation.
    let default_filter = match cli.command {
        Some(Command::Chat(_)) => "warn",
        _ => "info",
    };
    let _telemetry = telemetry::init(TelemetryOptions {
        format: cli.log_format,
        default_filter: default_filter.into(),
        #[cfg(feature = "otel")]
        otlp_endpoint: cli.otlp_endpoint.clone(),
    })?;
    match cli.command {
        Some(Command::Chat(args)) => Ok(agentd::chat::run(args).await?),
        Some(Command::Serve(args)) => serve(args).await,
        Some(Command::Bench(args)) => bench::run(args).await,
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
        metrics_listen: args.metrics_listen,
        replica_id: args.replica_id,
        lease_ttl_ms: args.lease_ttl_ms,
        lease_renew_ms: args.lease_renew_ms,
        recovery_interval_ms: args.recovery_interval_ms,
        api_keys_file: args.api_keys_file,
        tls: TlsConfig {
            cert: args.tls_cert,
            key: args.tls_key,
            client_ca: args.tls_client_ca,
        },
    });
    let options = ServeOptions::from_settings(&settings)?.with_drain(Duration::from_secs(args.drain_secs));
    let runtime = server::build_runtime(&settings).await?;
    let listener = TcpListener::bind(settings.listen)
        .await
        .with_context(|| format!("binding {}", settings.listen))?;
    let address = listener.local_addr()?;
    tracing::info!(store = %settings.store, tls = settings.tls.is_enabled(), "agentd listening on {address}");
    if let Some(metrics_listen) = settings.metrics_listen {
        let metrics = TcpListener::bind(metrics_listen)
            .await
            .with_context(|| format!("binding the metrics endpoint {metrics_listen}"))?;
        tracing::info!("metrics at http://{}/metrics", metrics.local_addr()?);
        // Serves until the process ends, through the drain period too.
        tokio::spawn(server::metrics_endpoint::serve_http(
            metrics,
            runtime.clone(),
            std::future::pending(),
        ));
    }
    // On the signal the server drains (see `server/drain.rs`) and returns.
    server::serve_with(listener, runtime, options, shutdown_signal()).await?;
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
