//! `agentd chat`: a terminal client of the gRPC API for a person. It starts
//! a run with each message, streams the model's text as it arrives, and asks
//! the run's questions as real prompts (free text; a list to pick one option
//! from with the arrow keys, or several with space; yes/no for approvals),
//! then resumes the run and carries on. Without a terminal (or with
//! `--answer`) it works from arguments and stdin lines instead, and `--json`
//! prints every chunk as a JSON line for scripts. A client only: it holds
//! no run state of its own, so a run left at a prompt stays suspended on
//! the server.

mod json;
mod question;
mod render;
mod session;
mod terminal;

use std::collections::VecDeque;
use std::io::{self, IsTerminal};

use tonic::transport::{Channel, Endpoint};

pub use json::{JsonChunks, JsonError};
pub use question::{Ask, Choice, Pending};
use render::{Output, OutputError};
use session::{read_stdin_line, Session};

use crate::pb::agent_service_client::AgentServiceClient;

/// `agentd chat` arguments.
#[derive(clap::Args, Clone, Debug)]
pub struct ChatArgs {
    /// The server to talk to: HOST:PORT or a URL.
    #[arg(long, env = "AGENTD_TARGET", default_value = "127.0.0.1:50051")]
    pub target: String,
    /// The agent to talk to [default: the server's default agent].
    #[arg(long, default_value = "")]
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
    #[error("cannot connect to {target}: {source}")]
    Connect {
        target: String,
        source: tonic::transport::Error,
    },
    #[error("the server answered {}: {}", .0.code(), .0.message())]
    Rpc(#[from] tonic::Status),
    #[error(transparent)]
    Output(#[from] OutputError),
    #[error(transparent)]
    Json(#[from] JsonError),
    #[error("reading input: {0}")]
    Input(#[from] io::Error),
    #[error("no answer for {question:?}; give one with --answer (run {run_id} stays suspended)")]
    NoAnswer { question: String, run_id: String },
    #[error("stopped at a prompt; run {run_id} stays suspended and can be resumed later")]
    Cancelled { run_id: String },
    #[error("run {0} is suspended but lists no pending call")]
    NothingPending(String),
}

/// The URL of `target`: a bare HOST:PORT means plain HTTP/2.
fn endpoint(target: &str) -> Result<Endpoint, ChatError> {
    let url = if target.contains("://") {
        target.to_owned()
    } else {
        format!("http://{target}")
    };
    Endpoint::from_shared(url).map_err(|error| ChatError::Target {
        target: target.to_owned(),
        reason: error.to_string(),
    })
}

/// Runs `agentd chat`.
pub async fn run(args: ChatArgs) -> Result<(), ChatError> {
    let endpoint = endpoint(&args.target)?;
    let channel: Channel = endpoint.connect().await.map_err(|source| ChatError::Connect {
        target: args.target.clone(),
        source,
    })?;
    let out = Output::new(args.json)?;
    let interactive = io::stdin().is_terminal() && out.screen_is_terminal();
    let mut session = Session {
        client: AgentServiceClient::new(channel),
        agent: args.agent,
        out,
        answers: VecDeque::from(args.answers),
        interactive,
    };
    if !args.message.is_empty() {
        return session.converse(args.message.join(" ")).await;
    }
    while let Some(message) = next_message(&mut session).await? {
        if !message.trim().is_empty() {
            session.converse(message).await?;
        }
    }
    Ok(())
}

/// The person's next message; `None` at the end of input.
async fn next_message(session: &mut Session) -> Result<Option<String>, ChatError> {
    if !session.interactive {
        return read_stdin_line().await;
    }
    session.out.end_line()?;
    let mut screen = session.out.screen();
    let typed = tokio::task::spawn_blocking(move || terminal::read_line(&mut screen, None, "you> ", false))
        .await
        .map_err(|error| io::Error::other(error.to_string()))?;
    match typed {
        Ok(message) => Ok(message),
        // Ctrl-C at the message prompt ends the chat, like Ctrl-D.
        Err(error) if error.kind() == io::ErrorKind::Interrupted => Ok(None),
        Err(error) => Err(error.into()),
    }
}
