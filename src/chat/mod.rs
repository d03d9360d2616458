//! `agentd chat`: a terminal client of the gRPC API for a person. It starts
//! a run with each message, streams the model's text as it arrives, and asks
//! the run's questions as real prompts (free text; a list to pick one option
//! from with the arrow keys, or several with space; yes/no for approvals),
//! then resumes the run and carries on. Without a terminal (or with
//! `--answer`) it works from arguments and stdin lines instead, and `--json`
//! prints every chunk as a JSON line for scripts. A client only: it holds
//! no run state of its own, so a run left at a prompt stays suspended on
//! the server.

mod form;
mod json;
mod printable;
mod question;
mod render;
mod session;
mod terminal;

use std::collections::VecDeque;
use std::io::{self, IsTerminal};
use std::path::PathBuf;

use tonic::metadata::AsciiMetadataValue;
use tonic::service::Interceptor;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

pub(crate) use json::JsonError;
pub use question::{Ask, Pending};
use render::{Output, OutputError};
use session::{read_stdin_line, Ending, Session};

use crate::pb::agent_service_client::AgentServiceClient;

/// `agentd chat` arguments.
#[derive(clap::Args, Clone, Debug)]
pub struct ChatArgs {
    /// The server to talk to: HOST:PORT or a URL (https:// needs --ca-cert).
    #[arg(
        long,
        env = "AGENTD_TARGET",
        hide_env_values = true,
        default_value = "127.0.0.1:50051"
    )]
    pub target: String,
    /// The API key to send (`authorization: Bearer KEY`), for a server that
    /// requires one.
    #[arg(long, env = "AGENTD_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// PEM file of the CA that signed the server's certificate: talk TLS.
    #[arg(long, env = "AGENTD_CA_CERT", hide_env_values = true)]
    pub ca_cert: Option<PathBuf>,
    /// The agent to talk to [default: the server's default agent].
    #[arg(long, default_value = "", hide_default_value = true)]
    pub agent: String,
    /// Print every chunk as one JSON line (the proto3 JSON mapping, as
    /// grpcurl prints it) on stdout; notes and questions go to stderr.
    #[arg(long)]
    pub json: bool,
    /// The answer to the next question, instead of asking: a label (or any
    /// text); labels separated by commas for a multi-select question;
    /// `yes` or `no[: reason]` for an approval; JSON for tool data.
    /// Repeatable; used in order (a rejected answer moves on to the next).
    #[arg(long = "answer", value_name = "ANSWER")]
    pub answers: Vec<String>,
    /// The conversation thread to talk in (created on first use): the
    /// agent sees the thread's earlier runs, and a message sent while the
    /// thread's latest run waits on a question answers it. Without it, a
    /// chat that reads several messages keeps them in a new thread of its
    /// own (named when the chat starts, to continue later), and a single message is a
    /// run of its own.
    #[arg(long, value_name = "THREAD_ID")]
    pub thread: Option<String>,
    /// A run to come back to: its open question is asked (and the run
    /// followed once answered), or, when it asks nothing, its state said.
    #[arg(long, value_name = "RUN_ID", conflicts_with_all = ["thread", "message"])]
    pub run: Option<String>,
    /// The message to send. Without it, chat reads messages, one a line,
    /// until the end of input (Ctrl-D).
    #[arg(trailing_var_arg = true)]
    pub message: Vec<String>,
}

/// Why a chat ended early.
#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    #[error("invalid --target {target:?}: {reason}")]
    Target { target: String, reason: String },
    #[error("reading the CA certificate {path}: {source}")]
    CaCert { path: PathBuf, source: io::Error },
    #[error("the API key cannot be sent in a header (visible ASCII only)")]
    ApiKey,
    #[error("cannot connect to {target}: {source}")]
    Connect {
        target: String,
        source: tonic::transport::Error,
    },
    #[error("the server answered {:?}: {}", .0.code(), .0.message())]
    Rpc(tonic::Status),
    #[error(transparent)]
    Output(#[from] OutputError),
    #[error(transparent)]
    Json(#[from] JsonError),
    #[error("reading input: {0}")]
    Input(#[from] io::Error),
    #[error("no answer for {question:?}; give one with --answer (run {run_id} waits: `agentd chat --run {run_id}` comes back to it)")]
    NoAnswer { question: String, run_id: String },
    #[error("run {0} is suspended but lists no pending call")]
    NothingPending(String),
    /// Ctrl-C while a run streamed: the note says how to come back.
    #[error("interrupted")]
    Interrupted,
}

impl ChatError {
    /// The exit status of a chat that ends with this error: 130 for
    /// Ctrl-C, as a shell reports an interrupted program, else 1.
    pub fn exit_code(&self) -> u8 {
        match self {
            ChatError::Interrupted => 130,
            _ => 1,
        }
    }
}

impl From<tonic::Status> for ChatError {
    fn from(status: tonic::Status) -> Self {
        ChatError::Rpc(status)
    }
}

/// Adds `authorization: Bearer KEY` to every call when a key is given.
#[derive(Clone)]
pub struct BearerKey(Option<AsciiMetadataValue>);

impl Interceptor for BearerKey {
    fn call(&mut self, mut request: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(value) = &self.0 {
            request.metadata_mut().insert("authorization", value.clone());
        }
        Ok(request)
    }
}

/// The client chat uses.
pub type Client = AgentServiceClient<tonic::codegen::InterceptedService<Channel, BearerKey>>;

/// The endpoint of `target`: a bare HOST:PORT means HTTP/2, over TLS when
/// a CA certificate is given.
fn endpoint(args: &ChatArgs) -> Result<Endpoint, ChatError> {
    let target = &args.target;
    let url = match (target.contains("://"), &args.ca_cert) {
        (true, _) => target.clone(),
        (false, None) => format!("http://{target}"),
        (false, Some(_)) => format!("https://{target}"),
    };
    let invalid = |reason: String| ChatError::Target {
        target: target.clone(),
        reason,
    };
    let endpoint = Endpoint::from_shared(url.clone()).map_err(|error| invalid(error.to_string()))?;
    match &args.ca_cert {
        Some(path) => {
            let pem = std::fs::read(path).map_err(|source| ChatError::CaCert {
                path: path.clone(),
                source,
            })?;
            let tls = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pem));
            endpoint
                .tls_config(tls)
                .map_err(|error| invalid(error.to_string()))
        }
        None if url.starts_with("https://") => Err(invalid("an https:// target needs --ca-cert".into())),
        None => Ok(endpoint),
    }
}

fn bearer(api_key: Option<&str>) -> Result<BearerKey, ChatError> {
    let value = api_key
        .map(|key| format!("Bearer {key}").parse::<AsciiMetadataValue>())
        .transpose()
        .map_err(|_| ChatError::ApiKey)?;
    Ok(BearerKey(value))
}

/// Runs `agentd chat`.
pub async fn run(args: ChatArgs) -> Result<(), ChatError> {
    let key = bearer(args.api_key.as_deref())?;
    let channel: Channel = endpoint(&args)?
        .connect()
        .await
        .map_err(|source| ChatError::Connect {
            target: args.target.clone(),
            source,
        })?;
    let out = Output::new(args.json)?;
    let interactive = io::stdin().is_terminal() && out.screen_is_terminal();
    let single_message = !args.message.is_empty();
    let thread_id = match args.thread {
        Some(thread_id) => thread_id,
        None if single_message => String::new(),
        None => format!("chat-{}", uuid::Uuid::now_v7()),
    };
    let mut session = Session {
        client: AgentServiceClient::with_interceptor(channel, key),
        agent: args.agent,
        thread_id,
        out,
        answers: VecDeque::from(args.answers),
        interactive,
    };
    if let Some(run_id) = args.run {
        let ending = session.come_back_to(run_id).await?;
        return left(&mut session, ending);
    }
    if single_message {
        let ending = session.converse(args.message.join(" ")).await?;
        return left(&mut session, ending);
    }
    session.out.note(&format!(
        "thread {} (continue it with --thread)",
        session.thread_id
    ))?;
    let ending = session.revisit().await?;
    if ending != Ending::Settled {
        return left(&mut session, ending);
    }
    while let Some(message) = next_message(&mut session).await? {
        if !message.trim().is_empty() {
            let ending = session.converse(message).await?;
            if ending != Ending::Settled {
                return left(&mut session, ending);
            }
        }
    }
    Ok(())
}

/// Ends the chat: a question left open is a normal way to stop, and the
/// note says how to come back to it.
fn left(session: &mut Session, ending: Ending) -> Result<(), ChatError> {
    match ending {
        Ending::Settled => Ok(()),
        Ending::LeftOpen { run_id } => {
            let note = session.come_back(&run_id);
            session.out.note(&note)?;
            Ok(())
        }
        Ending::Interrupted { run_id } if run_id.is_empty() => Err(ChatError::Interrupted),
        Ending::Interrupted { run_id } => {
            session.out.end_line()?;
            session.out.note(&format!(
                "stopped following run {run_id}; it goes on on the server. \
                 `agentd chat --run {run_id}` comes back to it, and the inbox shows it when it asks"
            ))?;
            Err(ChatError::Interrupted)
        }
    }
}

/// The person's next message; `None` at the end of input.
async fn next_message(session: &mut Session) -> Result<Option<String>, ChatError> {
    if !session.interactive {
        return read_stdin_line().await;
    }
    session.out.end_line()?;
    let mut screen = session.out.screen();
    let typed = tokio::task::spawn_blocking(move || {
        terminal::read_line(
            &mut screen,
            None,
            "you> ",
            Some("(type a message and press Enter; Ctrl-D ends the chat)"),
        )
    })
    .await
    .map_err(|error| io::Error::other(error.to_string()))?;
    match typed {
        Ok(message) => Ok(message),
        // Ctrl-C at the message prompt ends the chat, like Ctrl-D.
        Err(error) if error.kind() == io::ErrorKind::Interrupted => Ok(None),
        Err(error) => Err(error.into()),
    }
}
