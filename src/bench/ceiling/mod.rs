//! The ceiling: a trivial `agentd.v1.AgentService` that answers StreamAgent
//! and Resume with the chunks of a recorded agentd cycle after one durable
//! write each (SQLite, or PostgreSQL with `--store`), and nothing else. It runs as its own process
//! (`agentd bench ceiling-server`, started by the scenarios) and is measured
//! exactly like agentd; agentd's cycle figures are divided by its figures.

mod script;
mod service;
mod store;

use crate::pb::agent_service_server::AgentServiceServer;
use anyhow::Context;
use tokio::net::TcpListener;
use tonic::transport::server::TcpIncoming;
use tonic::transport::Server;

use super::args::CeilingServerArgs;
use service::CeilingService;

/// `agentd bench ceiling-server`: serves until interrupted.
pub(super) async fn serve(args: CeilingServerArgs) -> anyhow::Result<()> {
    let script = script::record().await?;
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("creating {}", args.data_dir.display()))?;
    let store = store::open(
        &args.data_dir,
        args.store.as_deref(),
        args.options.ceiling_sync,
        args.options.ceiling_naive,
    )
    .await?;
    let listener = TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("binding {}", args.listen))?;
    let address = listener.local_addr()?;
    tracing::info!(
        store = if args.store.is_some() {
            "postgres"
        } else {
            "sqlite"
        },
        synchronous = args.options.ceiling_sync.as_str(),
        group_commit = !args.options.ceiling_naive,
        "ceiling listening on {address}"
    );
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
    Server::builder()
        .add_service(AgentServiceServer::new(CeilingService::new(script, store)))
        .serve_with_incoming_shutdown(incoming, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
