//! Wires the whole service: the runtime behind `agentd.v1.AgentService`,
//! next to `grpc.health.v1` and server reflection (v1 and v1alpha). `serve`
//! takes a bound listener and a shutdown future, so tests can run it on an
//! ephemeral port and `main` only deals with config and signals.

use std::future::Future;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tonic::transport::server::TcpIncoming;
use tonic::transport::Server;

use crate::agent::{AgentRegistry, RegistryError};
use crate::config::ServerSettings;
use crate::grpc::AgentServiceImpl;
use crate::pb;
use crate::pb::agent_service_server::AgentServiceServer;
use crate::runtime::{Runtime, RuntimeConfig};
use crate::store::{self, RunStore, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("invalid agent configuration: {0}")]
    Agents(#[from] RegistryError),
    #[error("opening the run store: {0}")]
    Store(#[from] StoreError),
    #[error("building reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    #[error("serving: {0}")]
    Transport(#[from] tonic::transport::Error),
}

/// Builds the runtime the settings describe: agents, store, timeouts.
pub fn build_runtime(settings: &ServerSettings) -> Result<Runtime, ServeError> {
    let agents = AgentRegistry::from_specs(&settings.agents)?;
    let store: Arc<dyn RunStore> = store::open(&settings.store)?;
    let config = RuntimeConfig {
        suspend_ttl: settings.suspend_ttl,
        sweep_interval: settings.sweep_interval,
        ..RuntimeConfig::default()
    };
    Ok(Runtime::new(agents, store, config))
}

/// Aborts a background task when dropped, however its owner ends.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Serves `runtime` on `listener` until `shutdown` resolves, then stops
/// accepting, reports NOT_SERVING, and lets open streams finish. The expiry
/// sweep runs beside it, every `RuntimeConfig::sweep_interval`, and stops
/// with it.
pub async fn serve(
    listener: TcpListener,
    runtime: Runtime,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<AgentServiceServer<AgentServiceImpl>>().await;

    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
            // google.rpc error details, so that generic clients (grpcurl)
            // can decode BadRequest / ErrorInfo in error statuses.
            .register_encoded_file_descriptor_set(tonic_types::pb::FILE_DESCRIPTOR_SET)
    };
    let reflection_v1 = reflection().build_v1()?;
    let reflection_v1alpha = reflection().build_v1alpha()?;

    let shutdown = async move {
        shutdown.await;
        tracing::info!("shutting down: no new requests; open streams may finish");
        health
            .set_not_serving::<AgentServiceServer<AgentServiceImpl>>()
            .await;
    };
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
    let _sweeper = AbortOnDrop(runtime.spawn_expiry_sweeper(runtime.sweep_interval()));
    Server::builder()
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(AgentServiceServer::new(AgentServiceImpl::new(runtime)))
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await?;
    Ok(())
}
