//! Wires the whole service: the runtime behind `agentd.v1.AgentService`,
//! next to `grpc.health.v1` and server reflection (v1 and v1alpha). `serve`
//! takes a bound listener and a shutdown future, so tests can run it on an
//! ephemeral port and `main` only deals with config and signals. The agent
//! service is behind authentication (API keys), the request limits and the
//! stream gate that drains it on shutdown (`drain.rs`); TLS is optional.
//! Browsers reach the same services over gRPC-Web on the same port
//! (`web.rs`); every HTTP request passes the front door (`door/`). Every
//! gRPC call is measured (`grpc_metrics/`), and every request to the HTTP
//! surfaces (`http_metrics.rs`); the
//! Prometheus endpoint is served beside it, on a listener of its own
//! (`metrics_endpoint/`).

mod drain;
mod grpc_metrics;
mod health;
mod http_metrics;
pub mod metrics_endpoint;
mod options;
mod settings;
mod tls;
mod web;

use std::future::Future;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tonic::codegen::InterceptedService;
use tonic::service::Routes;
use tonic::transport::server::TcpIncoming;
use tonic::transport::Server;

pub use options::{McpOptions, OptionsError, ServeOptions};
pub use settings::{FileConfig, ServerSettings, ThreadsFile};
pub use tls::TlsError;

use crate::agent::{AgentRegistry, RegistryError};
use crate::door::StreamGate;
use crate::door::{Door, DoorSettings};
use crate::grpc::{AgentServiceImpl, Authenticator, WireErrors};
use crate::pb;
use crate::pb::agent_service_server::AgentServiceServer;
use crate::runtime::{Runtime, RuntimeConfig};
use crate::store::{self, Store, StoreError};
use crate::tools::{mcp_reference, CatalogError, ToolCatalog};

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("invalid agent configuration: {0}")]
    Agents(#[from] RegistryError),
    #[error("invalid tool configuration: {0}")]
    Tools(#[from] CatalogError),
    #[error("opening the run store: {0}")]
    Store(#[from] StoreError),
    #[error("building reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    #[error("serving: {0}")]
    Transport(#[from] tonic::transport::Error),
    #[error("invalid limits: {0}")]
    Limits(#[from] crate::limits::InvalidLimits),
    #[error("the MCP endpoint: {0}")]
    Mcp(#[from] crate::mcp::StateError),
    #[error("starting deliveries: {0}")]
    Deliveries(#[from] crate::runtime::DeliveryStartError),
}

/// Builds the runtime the settings describe: tools (connecting the MCP
/// servers that agents use), agents, store, timeouts; registered with its
/// store as a live replica.
pub async fn build_runtime(settings: &ServerSettings) -> Result<Runtime, ServeError> {
    let used = |server: &str| {
        settings.agents.iter().any(|agent| {
            agent
                .tools
                .iter()
                .any(|entry| mcp_reference(entry.tool_name()).is_some_and(|(name, _)| name == server))
        })
    };
    settings.limits.validate()?;
    let catalog = ToolCatalog::build(&settings.tools, &settings.mcp_servers, used)
        .await?
        .with_ask_user_limits(settings.limits.ask_user());
    let agents = AgentRegistry::from_specs_with_tools(&settings.agents, &catalog, &settings.providers)?;
    let store: Arc<dyn Store> = store::open(&settings.server.store_url())?;
    let config = RuntimeConfig {
        limits: settings.limits.clone(),
        thread_retention: settings.thread_retention,
        ..RuntimeConfig::of(&settings.server)
    };
    let runtime = Runtime::new(agents, store, config);
    // Before the server announces itself: a second live process with this
    // replica id stops here.
    runtime.register_replica().await?;
    Ok(runtime)
}

/// Aborts a background task when dropped, however its owner ends.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Serves `runtime` on `listener`, open and in plaintext, until `shutdown`
/// resolves; see [`serve_with`].
pub async fn serve(
    listener: TcpListener,
    runtime: Runtime,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    serve_with(listener, runtime, ServeOptions::default(), shutdown).await
}

/// Serves `runtime` on `listener` as `options` say until `shutdown`
/// resolves, then drains (`drain.rs`): NOT_SERVING, new streams refused,
/// open streams given `options.drain` to finish. The expiry sweep runs
/// beside it, every `RuntimeConfig::sweep_interval`, and so does the store
/// health watch (`health.rs`); both stop with it.
pub async fn serve_with(
    listener: TcpListener,
    runtime: Runtime,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    log_access(&options);
    // A runtime that `build_runtime` made is registered already; this
    // changes nothing then.
    runtime.register_replica().await?;
    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<AgentServiceServer<AgentServiceImpl>>().await;

    let reflection = || {
        let builder = tonic_reflection::server::Builder::configure();
        let builder = match pb::A2A_FILE_DESCRIPTOR_SET {
            [] => builder,
            a2a => builder.register_encoded_file_descriptor_set(a2a),
        };
        builder
            .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
            // google.rpc error details, so that generic clients (grpcurl)
            // can decode BadRequest / ErrorInfo in error statuses.
            .register_encoded_file_descriptor_set(tonic_types::pb::FILE_DESCRIPTOR_SET)
    };
    // Health and reflection are open unless the options say otherwise.
    let guard = |required: bool| {
        if required {
            options.authenticator.clone()
        } else {
            Authenticator::open()
        }
    };
    let reflection_v1 =
        InterceptedService::new(reflection().build_v1()?, guard(options.authenticate_reflection));
    let reflection_v1alpha = InterceptedService::new(
        reflection().build_v1alpha()?,
        guard(options.authenticate_reflection),
    );
    let health_service = InterceptedService::new(health_service, guard(options.authenticate_health));

    let limits = runtime.limits().clone();
    let gate = StreamGate::new(limits.max_streams_per_tenant);
    let agent_service = InterceptedService::new(
        WireErrors::new(
            AgentServiceServer::new(AgentServiceImpl::with_gate(runtime.clone(), gate.clone()))
                .max_decoding_message_size(limits.max_request_bytes),
            limits.max_request_bytes,
        ),
        options.authenticator.clone(),
    );

    // One A2A service for its three bindings: gRPC here, JSON-RPC and
    // HTTP+JSON among the pages below.
    let a2a = std::sync::Arc::new(
        crate::a2a::A2aServiceImpl::new(runtime.clone(), gate.clone())
            .with_push_allow_private(options.a2a_push_allow_private),
    );
    let a2a_jsonrpc = crate::a2a::http::jsonrpc_routes(a2a.clone(), limits.max_request_bytes);
    let a2a_rest = crate::a2a::http::rest_routes(a2a.clone(), limits.max_request_bytes);
    let a2a_service = InterceptedService::new(
        WireErrors::new(
            crate::a2a::A2aServiceServer::from_arc(a2a).max_decoding_message_size(limits.max_request_bytes),
            limits.max_request_bytes,
        ),
        options.authenticator.clone(),
    );
    // Measured (`grpc_metrics/`), each method's series there from now,
    // before the chores below and the first call.
    let meter = grpc_metrics::Meter::new(runtime.metrics());
    let health_service = meter.wrap(health_service);
    let reflection_v1 = meter.wrap(reflection_v1);
    let reflection_v1alpha = meter.wrap(reflection_v1alpha);
    let agent_service = meter.wrap(agent_service);
    let a2a_service = meter.wrap(a2a_service);
    let cards = crate::a2a::card::routes(runtime.clone(), !options.authenticator.is_open());

    // MCP sessions end when shutdown begins, so that their open streams
    // do not hold the drain.
    let mcp_stop = tokio_util::sync::CancellationToken::new();
    let mcp = crate::mcp::routes(runtime.clone(), &options.mcp, gate.clone(), mcp_stop.clone())?;
    let shutdown = async move {
        shutdown.await;
        mcp_stop.cancel();
    };

    let store_watch = AbortOnDrop(health::spawn_store_watch(runtime.clone(), health.clone()));
    let (closed, streams_closed) = tokio::sync::oneshot::channel();
    let draining = drain::Draining {
        gate: gate.clone(),
        runtime: runtime.clone(),
        health,
        store_watch,
        period: options.drain,
    };
    let shutdown = draining.run(shutdown, closed);
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
    let _sweeper = AbortOnDrop(runtime.spawn_expiry_sweeper(runtime.sweep_interval()));
    // Runs other replicas store reach this one's followers; runs whose
    // holder died are taken over (at once, for a store only this process
    // uses). See `runtime/lifecycle/recovery.rs`.
    let _feed = runtime.spawn_feed_bridge().map(AbortOnDrop);
    match runtime.recover_at_startup().await {
        Ok(0) => {}
        Ok(taken) => tracing::info!(taken, "took over runs left running by the previous process"),
        Err(error) => tracing::warn!(%error, "could not take over the runs left running"),
    }
    let _recovery = AbortOnDrop(runtime.spawn_recovery());
    // Before serving: a new webhook sends every event from then on. Stopped
    // when serving ends, like the chores above.
    let mut _deliveries = crate::runtime::DeliveryTasks::default();
    crate::webhooks::spawn(&runtime, &options.webhooks, &mut _deliveries).await?;
    crate::a2a::push::spawn(&runtime, options.a2a_push_allow_private, &mut _deliveries).await?;
    let door = Door::new(DoorSettings {
        authenticator: options.authenticator.clone(),
        allowed_hosts: options.allowed_hosts.clone(),
        public_url: options.public_url.clone(),
        cors: options.cors.clone(),
        tls: options.tls.is_some(),
        max_body: limits.max_request_bytes,
        body_timeout: limits.request_body_timeout,
    });
    // HTTP/1.1 too: browsers call over gRPC-Web, which HTTP/1.1 carries,
    // and ordinary HTTP clients read the agent cards.
    let mut builder = Server::builder()
        .accept_http1(true)
        .max_concurrent_streams(limits.max_concurrent_streams_per_connection);
    if let Some(tls) = options.tls {
        builder = builder.tls_config(tls)?;
    }
    let mut grpc = Routes::builder();
    grpc.add_service(web::grpc_web(health_service))
        .add_service(web::grpc_web(reflection_v1))
        .add_service(web::grpc_web(reflection_v1alpha))
        .add_service(web::grpc_web(agent_service))
        .add_service(web::grpc_web(a2a_service));
    let ag_ui = crate::ag_ui::routes(runtime.clone(), gate);
    let pages = cards
        .merge(a2a_jsonrpc)
        .merge(a2a_rest)
        .merge(crate::inbox::routes())
        .merge(mcp)
        .merge(ag_ui);
    // Each HTTP surface measured as itself, the door's refusals included
    // (`http_metrics.rs`).
    let measure = http_metrics::Measure::new(runtime.metrics());
    let routes = web::with_pages(grpc.routes(), pages, &door, measure);
    let serving = builder
        .add_routes(routes)
        .serve_with_incoming_shutdown(incoming, shutdown);
    if let Some(result) = drain::bounded(serving, streams_closed).await {
        result?;
    }
    Ok(())
}

/// Says at startup who may call: everyone (a warning), or the tenants with
/// keys (never the keys).
fn log_access(options: &ServeOptions) {
    let Some(keys) = options.authenticator.keys() else {
        tracing::warn!(
            "no API keys configured: the server is open to every caller, as tenant \"default\" \
             (configure [[tenants]] or --api-keys-file to require keys)"
        );
        return;
    };
    let tenants: Vec<String> = keys.tenants().keys().map(ToString::to_string).collect();
    tracing::info!(
        ?tenants,
        health_open = !options.authenticate_health,
        reflection_open = !options.authenticate_reflection,
        "API keys required"
    );
    let short = keys.tenants_with_short_keys();
    if !short.is_empty() {
        tracing::warn!(
            tenants = ?short,
            "some API keys are shorter than {} characters: use long random keys",
            crate::auth::MIN_RECOMMENDED_KEY_LEN
        );
    }
}
