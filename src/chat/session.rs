//! One conversation turn of `agentd chat`: start a run with the person's
//! message, print its chunks, and while it suspends, get an answer to the
//! first pending call (from `--answer`, the keyboard, or a line of stdin),
//! Resume with it and follow the continuation. A rejected answer
//! (INVALID_ARGUMENT) is shown and another one is asked for; the run stays
//! suspended meanwhile, so stopping at a prompt loses nothing: leaving a
//! question open (Esc, Ctrl-C or Ctrl-D at it) ends the chat normally, and
//! a later chat in the same thread asks that question again first.

use std::collections::VecDeque;
use std::io;

use tonic::{Code, Status, Streaming};
use tonic_types::StatusExt;

use super::question::{Ask, Pending};
use super::render::Output;
use super::terminal::{self, Screen};
use super::{ChatError, Client};
use crate::pb;
use crate::pb::agent_chunk::Chunk;
use crate::pb::resume_request::Answer;

/// A chat with one agent.
pub(super) struct Session {
    pub client: Client,
    pub agent: String,
    /// The conversation thread of every run; empty: none.
    pub thread_id: String,
    pub out: Output,
    /// `--answer` values not used yet.
    pub answers: VecDeque<String>,
    /// Whether questions are asked at the terminal.
    pub interactive: bool,
}

/// How a conversation turn ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Ending {
    /// The run finished (or nothing was waiting).
    Settled,
    /// The person left the run's question open: it stays suspended.
    LeftOpen { run_id: String },
    /// Ctrl-C while the run streamed: the chat stopped following it.
    Interrupted { run_id: String },
}

/// What one stream of a run ended with.
#[derive(Default)]
struct Turn {
    run_id: String,
    pending: Vec<Pending>,
    suspended: bool,
    /// Ctrl-C came before the stream's end.
    interrupted: bool,
}

/// Reads one line of stdin; `None` at its end.
pub(super) async fn read_stdin_line() -> Result<Option<String>, ChatError> {
    let line = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        let read = io::stdin().read_line(&mut line)?;
        Ok::<_, io::Error>((read > 0).then(|| line.trim_end_matches(['\r', '\n']).to_owned()))
    })
    .await
    .map_err(|error| io::Error::other(error.to_string()))??;
    Ok(line)
}

/// What the server said when it refused an answer, with the fields its
/// BadRequest details name.
fn rejection(status: &Status) -> String {
    let mut text = format!("answer rejected: {}", status.message());
    if let Some(bad_request) = status.get_details_bad_request() {
        for violation in bad_request.field_violations {
            if !status.message().contains(&violation.description) {
                text.push_str(&format!("\n  {}: {}", violation.field, violation.description));
            }
        }
    }
    text
}

impl Session {
    /// Runs the agent on `prompt` until the run stops for good, or until
    /// the person leaves its question open.
    pub(super) async fn converse(&mut self, prompt: String) -> Result<Ending, ChatError> {
        let request = pb::StreamAgentRequest {
            agent_id: self.agent.clone(),
            prompt,
            // In a thread, a message sent while its latest run waits on a
            // question answers that question.
            auto_resume: !self.thread_id.is_empty(),
            thread_id: self.thread_id.clone(),
            ..Default::default()
        };
        let stream = self.client.stream_agent(request).await?.into_inner();
        let turn = self.follow(stream).await?;
        self.settle(turn).await
    }

    /// Comes back to run `run_id`: asks its open question (at a terminal,
    /// or from `--answer`), or says what became of it.
    pub(super) async fn come_back_to(&mut self, run_id: String) -> Result<Ending, ChatError> {
        let request = pb::GetRunRequest {
            run_id: run_id.clone(),
        };
        let run = self.client.get_run(request).await?.into_inner();
        if run.status != i32::from(pb::RunStatus::Suspended) {
            let status = pb::RunStatus::try_from(run.status).unwrap_or_default();
            let status = status
                .as_str_name()
                .trim_start_matches("RUN_STATUS_")
                .to_lowercase();
            self.out
                .note(&format!("run {run_id} is {status}: it asks nothing"))?;
            return Ok(Ending::Settled);
        }
        let turn = Turn {
            run_id,
            suspended: true,
            ..Turn::default()
        };
        self.settle(turn).await
    }

    /// Answers the questions of `turn`'s run, one after another, until it
    /// stops for good or a question is left open.
    async fn settle(&mut self, mut turn: Turn) -> Result<Ending, ChatError> {
        while turn.suspended || turn.interrupted {
            if turn.interrupted {
                return Ok(Ending::Interrupted { run_id: turn.run_id });
            }
            let pending = match turn.pending.into_iter().next() {
                Some(pending) => pending,
                None => self.first_pending(&turn.run_id).await?,
            };
            let Some(stream) = self.answer(&turn.run_id, &pending).await? else {
                return Ok(Ending::LeftOpen { run_id: turn.run_id });
            };
            turn = self.follow(stream).await?;
        }
        Ok(Ending::Settled)
    }

    /// A chat opened on a thread whose latest run waits on a question
    /// shows that question first: at a terminal it is asked (and the run
    /// followed once answered); otherwise it is described, and the next
    /// message answers it.
    pub(super) async fn revisit(&mut self) -> Result<Ending, ChatError> {
        if self.thread_id.is_empty() {
            return Ok(Ending::Settled);
        }
        let request = pb::GetThreadRequest {
            thread_id: self.thread_id.clone(),
        };
        let thread = match self.client.get_thread(request).await {
            Ok(thread) => thread.into_inner(),
            // A thread not started yet waits on nothing.
            Err(status) if status.code() == Code::NotFound => return Ok(Ending::Settled),
            Err(status) => return Err(status.into()),
        };
        if thread.latest_run_status != i32::from(pb::RunStatus::Suspended) {
            return Ok(Ending::Settled);
        }
        self.out.note(&format!(
            "thread {} waits on an answer (run {})",
            self.thread_id, thread.latest_run_id
        ))?;
        if !self.interactive {
            let pending = self.first_pending(&thread.latest_run_id).await?;
            self.describe(&pending)?;
            self.out.note("  (the next message answers it)")?;
            return Ok(Ending::Settled);
        }
        let turn = Turn {
            run_id: thread.latest_run_id,
            suspended: true,
            ..Turn::default()
        };
        self.settle(turn).await
    }

    /// How to come back to a question left open.
    pub(super) fn come_back(&self, run_id: &str) -> String {
        if self.thread_id.is_empty() {
            format!(
                "left the question open: run {run_id} waits until it is answered or expires; \
                 `agentd chat --run {run_id}` asks it again, and the inbox shows it"
            )
        } else {
            format!(
                "left the question open: run {run_id} stays suspended; come back to it with \
                 `agentd chat --thread {}`",
                self.thread_id
            )
        }
    }

    /// Prints a stream's chunks and notes what it ended with.
    async fn follow(&mut self, mut stream: Streaming<pb::AgentChunk>) -> Result<Turn, ChatError> {
        let mut turn = Turn::default();
        // One listener for the whole stream: a Ctrl-C that comes while a
        // chunk is being printed is still heard at the next turn of the loop.
        let ctrl_c = tokio::signal::ctrl_c();
        tokio::pin!(ctrl_c);
        loop {
            let chunk = tokio::select! {
                chunk = stream.message() => chunk?,
                // The run goes on on the server: only following it stops.
                _ = &mut ctrl_c => {
                    turn.interrupted = true;
                    break;
                }
            };
            let Some(chunk) = chunk else { break };
            self.out.chunk(&chunk)?;
            if turn.run_id.is_empty() {
                turn.run_id.clone_from(&chunk.run_id);
            }
            match &chunk.chunk {
                Some(Chunk::Finish(finish)) => {
                    turn.suspended = finish.reason == i32::from(pb::FinishReason::Suspended);
                }
                Some(kind) => turn.pending.extend(Pending::from_chunk(kind)),
                None => {}
            }
        }
        Ok(turn)
    }

    /// The first pending call as the run lists it (for a stream that ended
    /// suspended without naming one).
    async fn first_pending(&mut self, run_id: &str) -> Result<Pending, ChatError> {
        let request = pb::GetRunRequest {
            run_id: run_id.to_owned(),
        };
        let run = self.client.get_run(request).await?.into_inner();
        run.pending
            .first()
            .map(Pending::from_run)
            .ok_or_else(|| ChatError::NothingPending(run_id.to_owned()))
    }

    /// Answers `pending` until the server takes an answer; the stream of
    /// the continuation, or `None` if the person left the question open.
    async fn answer(
        &mut self,
        run_id: &str,
        pending: &Pending,
    ) -> Result<Option<Streaming<pb::AgentChunk>>, ChatError> {
        loop {
            let Some(answer) = self.next_answer(run_id, pending).await? else {
                return Ok(None);
            };
            let request = pb::ResumeRequest {
                run_id: run_id.to_owned(),
                tool_call_id: pending.tool_call_id.clone(),
                answer: Some(answer),
                ..Default::default()
            };
            match self.client.resume(request).await {
                Ok(response) => return Ok(Some(response.into_inner())),
                Err(status) if status.code() == Code::InvalidArgument => {
                    self.out.problem(&rejection(&status))?;
                }
                Err(status) => return Err(status.into()),
            }
        }
    }

    /// The next answer to try: a `--answer` value, else one from the
    /// keyboard (`None`: the person left the question open), else a line
    /// of stdin.
    async fn next_answer(&mut self, run_id: &str, pending: &Pending) -> Result<Option<Answer>, ChatError> {
        let pending = &pending.clone().on_thread(!self.thread_id.is_empty());
        loop {
            let typed = if let Some(given) = self.answers.pop_front() {
                self.describe(pending)?;
                self.out.note(&format!("> {given}"))?;
                given
            } else if self.interactive {
                return self.ask_at_terminal(pending).await;
            } else {
                self.describe(pending)?;
                match read_stdin_line().await? {
                    Some(line) => line,
                    None => {
                        return Err(ChatError::NoAnswer {
                            question: pending.ask.headline(&pending.tool_name),
                            run_id: run_id.to_owned(),
                        })
                    }
                }
            };
            match pending.parse_answer(&typed) {
                Ok(answer) => return Ok(Some(answer)),
                Err(error) => self.out.problem(&format!("cannot use {typed:?}: {error}"))?,
            }
        }
    }

    /// Prints what `pending` asks, for answers that do not come from a
    /// prompt.
    fn describe(&mut self, pending: &Pending) -> Result<(), ChatError> {
        self.out
            .note(&format!("? {}", pending.ask.headline(&pending.tool_name)))?;
        match &pending.ask {
            Ask::Choose { options, multi, .. } => {
                for (number, option) in options.iter().enumerate().map(|(i, o)| (i + 1, o)) {
                    if option.description.is_empty() {
                        self.out.note(&format!("  {number}. {}", option.label))?;
                    } else {
                        self.out
                            .note(&format!("  {number}. {} - {}", option.label, option.description))?;
                    }
                }
                if *multi {
                    self.out
                        .note("  (one or more labels or numbers, separated by commas)")?;
                } else {
                    self.out.note("  (a label or its number)")?;
                }
            }
            Ask::Approve { args, always } => self.out.note(&format!(
                "  {} {args} (yes, no, or always: its later calls {} too)",
                pending.tool_name,
                where_remembered(*always)
            ))?,
            Ask::Data { payload } => self.out.note(&format!("  {payload} (answer with JSON)"))?,
            Ask::Elicit { url: Some(url), .. } => {
                self.out.note(&format!("  open {url} (yes, decline or cancel)"))?
            }
            Ask::Elicit { schema, .. } => self
                .out
                .note(&format!("  {schema} (the values as JSON, decline or cancel)"))?,
            Ask::Text { .. } => {}
        }
        Ok(())
    }

    /// Asks at the terminal, on a blocking thread; `None` if the person
    /// leaves the question open (Esc, Ctrl-C, or Ctrl-D on an empty line).
    async fn ask_at_terminal(&mut self, pending: &Pending) -> Result<Option<Answer>, ChatError> {
        self.out.end_line()?;
        let screen = self.out.screen();
        let asked = pending.clone();
        let answered = tokio::task::spawn_blocking(move || prompt(screen, &asked))
            .await
            .map_err(|error| io::Error::other(error.to_string()))?;
        match answered {
            Ok(answer) => Ok(Some(answer)),
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::Interrupted | io::ErrorKind::UnexpectedEof
                ) =>
            {
                Ok(None)
            }
            Err(error) => Err(error.into()),
        }
    }
}

/// Where `always` remembers an approval, in words.
fn where_remembered(always: pb::GrantScope) -> &'static str {
    match always {
        pb::GrantScope::Thread => "in this conversation",
        _ => "in this run",
    }
}

/// A declined approval, with the reason asked for (optional).
fn declined(screen: &mut Screen) -> io::Result<Answer> {
    let reason = terminal::ask_optional(screen, "Why not? (optional, shown to the model)")?
        .ok_or_else(end_of_input)?;
    Ok(Answer::Approval(pb::Approval {
        approved: false,
        reason: reason.trim().to_owned(),
        ..Default::default()
    }))
}

fn end_of_input() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "input closed at a prompt")
}

/// Asks `pending` with the prompt that fits it.
fn prompt(mut screen: Screen, pending: &Pending) -> io::Result<Answer> {
    match &pending.ask {
        Ask::Text { question } => terminal::ask_text(&mut screen, question)?
            .map(Answer::Text)
            .ok_or_else(end_of_input),
        Ask::Choose {
            question,
            options,
            multi,
        } => {
            let picked = terminal::choose(&mut screen, question, options, *multi)?;
            let labels: Vec<String> = picked.iter().map(|i| options[*i].label.clone()).collect();
            Ok(if *multi {
                Answer::Selections(pb::Selections { labels })
            } else {
                // `choose` returns exactly one index for a single choice.
                Answer::Text(labels.into_iter().next().unwrap_or_default())
            })
        }
        Ask::Approve { args, always } => {
            let question = format!(
                "Allow {} {args}? (always: its later calls {} too)",
                pending.tool_name,
                where_remembered(*always)
            );
            let remember = match terminal::keyed(&mut screen, &question, &["yes", "always", "no"])? {
                0 => pb::GrantScope::Unspecified,
                1 => *always,
                _ => return declined(&mut screen),
            };
            Ok(Answer::Approval(pb::Approval {
                approved: true,
                remember: remember.into(),
                ..Default::default()
            }))
        }
        Ask::Elicit { .. } => super::form::prompt(&mut screen, pending),
        Ask::Data { payload } => loop {
            let question = format!("{} waits for JSON data: {payload}", pending.tool_name);
            let typed = terminal::ask_text(&mut screen, &question)?.ok_or_else(end_of_input)?;
            match pending.parse_answer(&typed) {
                Ok(answer) => return Ok(answer),
                Err(error) => {
                    use std::io::Write;
                    writeln!(screen, "{}", super::printable::printable(&error.to_string()))?;
                    screen.flush()?;
                }
            }
        },
    }
}
