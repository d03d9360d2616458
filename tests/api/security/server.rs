//! A server for the security tests: the whole service on `127.0.0.1:0`,
//! started through `serve_with` with options built from its settings (API
//! keys, TLS), and clients that send an API key (or none).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agentd::pb::agent_service_client::AgentServiceClient;
use agentd::server::ServerSettings;
use agentd::server::{self, ServeOptions};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::service::Interceptor;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Status};

use crate::helpers::settings_in;

/// A client of the agent service that sends `authorization: Bearer <key>`.
pub(crate) type KeyedClient = AgentServiceClient<InterceptedService<Channel, Bearer>>;

pub(crate) struct SecureServer {
    pub addr: SocketAddr,
    /// The server's data folder; files the settings name live there too.
    pub dir: tempfile::TempDir,
    shutdown: Option<oneshot::Sender<()>>,
    stopped: Option<tokio::task::JoinHandle<()>>,
}

/// Writes `lines` to `name` in `dir` and returns the path.
pub(crate) fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write a test file");
    path
}

impl SecureServer {
    /// A server whose settings `configure` adjusts; it is given the data
    /// folder, to write key files into.
    pub(crate) async fn start(configure: impl FnOnce(&Path, &mut ServerSettings)) -> Self {
        Self::start_draining(Duration::from_secs(10), configure).await
    }

    /// As [`SecureServer::start`], with this drain period.
    pub(crate) async fn start_draining(
        drain: Duration,
        configure: impl FnOnce(&Path, &mut ServerSettings),
    ) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut settings = settings_in(dir.path());
        configure(dir.path(), &mut settings);
        let options = ServeOptions::from_settings(&settings)
            .expect("security options")
            .with_drain(drain);
        let runtime = server::build_runtime(&settings).await.expect("runtime");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().unwrap();
        let (shutdown, signal) = oneshot::channel::<()>();
        let stopped = tokio::spawn(async move {
            server::serve_with(listener, runtime, options, async {
                let _ = signal.await;
            })
            .await
            .expect("server failed");
        });
        Self {
            addr,
            dir,
            shutdown: Some(shutdown),
            stopped: Some(stopped),
        }
    }

    /// A server whose only keys are `tenant:key` lines of a keys file.
    pub(crate) async fn with_keys(lines: &str) -> Self {
        let lines = lines.to_owned();
        Self::start(move |dir, settings| {
            settings.auth.api_keys_file = Some(write_file(dir, "api.keys", &lines));
        })
        .await
    }

    pub(crate) fn endpoint(&self) -> Endpoint {
        Endpoint::from_shared(format!("http://{}", self.addr)).expect("endpoint")
    }

    /// A new plaintext connection.
    pub(crate) async fn channel(&self) -> Channel {
        self.endpoint().connect().await.expect("connect")
    }

    /// A client on a new connection, sending `key` (none: no header).
    pub(crate) async fn client(&self, key: Option<&str>) -> KeyedClient {
        keyed(self.channel().await, key)
    }

    /// Signals shutdown (the server drains) without waiting.
    pub(crate) fn signal_shutdown(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }

    /// Waits until `serve_with` returned (after
    /// [`SecureServer::signal_shutdown`]); the data folder stays.
    pub(crate) async fn stopped(&mut self) {
        if let Some(stopped) = self.stopped.take() {
            stopped.await.expect("server task");
        }
    }
}

impl Drop for SecureServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

/// Starts a run as `client` and collects its stream to the end.
pub(crate) async fn start(
    client: &mut KeyedClient,
    request: agentd::pb::StreamAgentRequest,
) -> Result<Vec<agentd::pb::AgentChunk>, Status> {
    let stream = client.stream_agent(request).await?.into_inner();
    crate::helpers::collect(stream).await
}

/// A StreamAgent request with just a prompt.
pub(crate) fn prompt(text: impl Into<String>) -> agentd::pb::StreamAgentRequest {
    agentd::pb::StreamAgentRequest {
        prompt: text.into(),
        ..Default::default()
    }
}

/// The agent service client on `channel`, sending `key`.
pub(crate) fn keyed(channel: Channel, key: Option<&str>) -> KeyedClient {
    AgentServiceClient::with_interceptor(channel, Bearer(key.map(str::to_owned)))
}

/// Adds `authorization: Bearer <key>` to every request (nothing for `None`).
#[derive(Clone)]
pub(crate) struct Bearer(pub Option<String>);

impl Interceptor for Bearer {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(key) = &self.0 {
            let value: MetadataValue<_> = format!("Bearer {key}")
                .parse()
                .map_err(|_| Status::internal("the test key is not a header value"))?;
            request.metadata_mut().insert("authorization", value);
        }
        Ok(request)
    }
}
