//! The `agentd` command line: parses configuration, initialises tracing,
//! then serves until SIGINT or SIGTERM (binding the listener first), talks
//! to an agent from the terminal (`chat`), or measures (`bench`, with the
//! feature of that name).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};

use crate::config::{ConfigError, Overrides};
use crate::server::FileConfig;
use crate::server::{self, ServeOptions};
use crate::telemetry::{self, LogFormat, TelemetryOptions};

#[cfg(feature = "bench")]
use crate::bench;

/// agentd: a gRPC service hosting LLM agents that can stop to ask a person.
#[derive(Parser)]
#[command(version, about, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// With no subcommand, agentd serves.
    #[command(flatten)]
    serve: ServeArgs,
    /// Format of the log lines on stderr: text or json. [default: text] [env: AGENTD_LOG_FORMAT]
    // The variable is read by `log_format`, not by clap, so that a bad
    // value is reported as the variable's, not as the flag's.
    #[arg(long, global = true, value_enum)]
    log_format: Option<LogFormat>,
}

#[cfg(feature = "otel")]
const OTLP_ENDPOINT_HELP: &str = "Export spans over OTLP/gRPC to this collector, e.g. http://localhost:4317.";
#[cfg(not(feature = "otel"))]
const OTLP_ENDPOINT_HELP: &str =
    "Export spans over OTLP/gRPC to this collector, e.g. http://localhost:4317. \
     Needs a build with the `otel` feature (cargo build --features otel): this build exports nothing.";

#[derive(Subcommand)]
enum Command {
    /// Serve the gRPC API (the default).
    // Boxed: every server setting makes it the largest variant by far.
    Serve(Box<ServeArgs>),
    /// Talk to an agent from the terminal: streams its answers and asks
    /// you its questions.
    Chat(crate::chat::ChatArgs),
    /// Measure the ask_user cycle, streaming and capacity against a ceiling.
    ///
    /// Figures worth quoting come from a release build with the bench:
    /// `cargo run --release --features bench -- bench cycle`. Each scenario
    /// starts the server it measures as a separate process (this
    /// executable, `serve` on 127.0.0.1:0 with a fresh data folder) unless
    /// `--target` names a running one. A table goes to stdout (`--json` for
    /// machines), a progress bar to stderr.
    #[cfg(feature = "bench")]
    Bench(bench::BenchArgs),
    /// Measure the ask_user cycle, streaming and capacity against a ceiling:
    /// not in this build (build with `--features bench`).
    #[cfg(not(feature = "bench"))]
    Bench(NoBench),
}

/// Whatever `agentd bench` was given, in a build without the bench.
#[cfg(not(feature = "bench"))]
#[derive(Args)]
struct NoBench {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    args: Vec<String>,
}

#[derive(Args, Clone)]
struct ServeArgs {
    /// The TOML file with server settings and agents.
    #[arg(long, env = "AGENTD_CONFIG", hide_env_values = true)]
    config: Option<PathBuf>,
    // Declared in every build, so that `--help` shows it and a build
    // without the `otel` feature says it ignores it rather than refusing
    // a command line (or an environment) made for another build.
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT", hide_env_values = true, value_name = "URL", help = OTLP_ENDPOINT_HELP)]
    otlp_endpoint: Option<String>,
    /// Every other setting (`config/server.rs` declares them).
    #[command(flatten)]
    overrides: Overrides,
}

/// Runs the command line this process was started with, to its end: what
/// the `agentd` binary does.
pub fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("Error: starting the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(run(Cli::parse()))
}

async fn run(cli: Cli) -> ExitCode {
    // The terminal client keeps the terminal for the conversation.
    let default_filter = match cli.command {
        Some(Command::Chat(_)) => "warn",
        _ => "info",
    };
    let format = match log_format(cli.log_format, std::env::var("AGENTD_LOG_FORMAT").ok()) {
        Ok(format) => format,
        Err(error) => return fail(LogFormat::Text, &error.into()),
    };
    // Spans are exported by a server only.
    let otlp_endpoint = match &cli.command {
        Some(Command::Serve(args)) => args.otlp_endpoint.clone(),
        None => cli.serve.otlp_endpoint.clone(),
        _ => None,
    };
    let telemetry = match telemetry::init(TelemetryOptions {
        format,
        default_filter: default_filter.into(),
        #[cfg(feature = "otel")]
        otlp_endpoint: otlp_endpoint.clone(),
    }) {
        Ok(telemetry) => telemetry,
        Err(error) => return fail(LogFormat::Text, &error.into()),
    };
    #[cfg(not(feature = "otel"))]
    if let Some(endpoint) = &otlp_endpoint {
        tracing::warn!(
            endpoint,
            "--otlp-endpoint (or OTEL_EXPORTER_OTLP_ENDPOINT) is set, but this build has no `otel` feature: \
             no spans are exported (build with --features otel)"
        );
    }
    let result = match cli.command {
        Some(Command::Chat(args)) => match crate::chat::run(args).await {
            // Said already, in the chat's own words.
            Err(crate::chat::ChatError::Interrupted) => {
                drop(telemetry);
                return ExitCode::from(crate::chat::ChatError::Interrupted.exit_code());
            }
            other => other.map_err(anyhow::Error::from),
        },
        Some(Command::Serve(args)) => serve(*args).await,
        #[cfg(feature = "bench")]
        Some(Command::Bench(args)) => bench::run(args).await,
        #[cfg(not(feature = "bench"))]
        Some(Command::Bench(NoBench { .. })) => Err(anyhow::anyhow!(
            "this agentd was built without the bench: build it with `cargo build --release --features bench`"
        )),
        None => serve(cli.serve).await,
    };
    let code = match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => fail(format, &error),
    };
    // Flushes what is left to export before the process ends.
    drop(telemetry);
    code
}

/// Reports the error that stops the process, in the log format: a JSON
/// line like every other, or `Error: ...` for a person. Its text and its
/// causes' come once each, and never with a backtrace.
fn fail(format: LogFormat, error: &anyhow::Error) -> ExitCode {
    let text = telemetry::error_text(error.chain());
    match format {
        LogFormat::Json => tracing::error!("{text}"),
        LogFormat::Text => eprintln!("Error: {text}"),
    }
    ExitCode::FAILURE
}

/// The log format the flag gives, else the one `AGENTD_LOG_FORMAT` does,
/// else text.
fn log_format(flag: Option<LogFormat>, variable: Option<String>) -> Result<LogFormat, ConfigError> {
    match (flag, variable) {
        (Some(format), _) => Ok(format),
        (None, Some(text)) => {
            <LogFormat as clap::ValueEnum>::from_str(&text, false).map_err(|_| ConfigError::Invalid {
                setting: "environment variable AGENTD_LOG_FORMAT".into(),
                reason: format!("{text:?}: expected text or json"),
            })
        }
        (None, None) => Ok(LogFormat::Text),
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let file = match &args.config {
        Some(path) => FileConfig::load(path)?,
        None => FileConfig::default(),
    };
    let env = Overrides::from_env(|name| std::env::var(name).ok())?;
    let settings = file.settle(Overrides::from_flags(args.overrides)?.or(env));
    let options = ServeOptions::from_settings(&settings)?;
    let runtime = server::build_runtime(&settings).await?;
    // Every listener is bound before the server says it listens, so that
    // a port in use stops it before anything is announced.
    let listen = &settings.server.listen;
    let listener = listen.bind().await.with_context(|| format!("binding {listen}"))?;
    let metrics = match &settings.server.metrics_listen {
        Some(address) => Some(
            address
                .bind()
                .await
                .with_context(|| format!("binding the metrics endpoint {address}"))?,
        ),
        None => None,
    };
    let address = listener.local_addr()?;
    tracing::info!(store = %crate::config::Redacted(&settings.server.store_url()), tls = settings.tls.is_enabled(), "agentd listening on {address}");
    tracing::info!(
        "inbox at {}",
        crate::inbox::url(address, settings.tls.is_enabled())
    );
    if let Some(metrics) = metrics {
        tracing::info!("metrics at http://{}/metrics", metrics.local_addr()?);
        // Serves until the process ends, through the drain period too.
        tokio::spawn(server::metrics_endpoint::serve_http(
            metrics,
            runtime.clone(),
            std::future::pending(),
        ));
    }
    // On the signal the server drains (see `server/drain.rs`) and returns.
    let served = server::serve_with(listener, runtime.clone(), options, shutdown_signal()).await;
    // The MCP servers' sessions end too, while the runtime still holds
    // them: a stdio server's process with them, even one waiting on a
    // request of its own.
    crate::tools::mcp::stop_all().await;
    drop(runtime);
    served?;
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
