//! What `agentd chat` prints. As text: the model's words as they stream,
//! tool activity and problems as short dim lines, on stdout. With `--json`:
//! every chunk as one JSON line on stdout, and everything meant for the
//! person (notes, questions, rejections) on stderr, so stdout stays
//! machine-readable. Colour only on a terminal.

use std::io::{self, IsTerminal, Write};

use crossterm::style::Stylize;

use super::json::{JsonChunks, JsonError};
use super::printable::printable;
use super::terminal::Screen;
use crate::grpc::convert::struct_to_json;
use crate::pb;
use crate::pb::agent_chunk::Chunk;

const ASK_USER: &str = "ask_user";

enum Mode {
    Text,
    Json(JsonChunks),
}

/// Where the conversation is printed.
pub(super) struct Output {
    mode: Mode,
    /// Whether the person's side (see [`Output::screen`]) is a terminal.
    color: bool,
    /// Whether the cursor is at the start of a line on the screen.
    at_line_start: bool,
}

/// Why printing failed.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error(transparent)]
    Json(#[from] JsonError),
    #[error("writing output: {0}")]
    Io(#[from] io::Error),
}

impl Output {
    pub(super) fn new(json: bool) -> Result<Self, JsonError> {
        let (mode, color) = if json {
            (Mode::Json(JsonChunks::new()?), io::stderr().is_terminal())
        } else {
            (Mode::Text, io::stdout().is_terminal())
        };
        Ok(Self {
            mode,
            color,
            at_line_start: true,
        })
    }

    /// Where the person reads notes and questions.
    pub(super) fn screen(&self) -> Screen {
        match self.mode {
            Mode::Text => Screen::Stdout,
            Mode::Json(_) => Screen::Stderr,
        }
    }

    /// Whether the person's side is a terminal.
    pub(super) fn screen_is_terminal(&self) -> bool {
        self.color
    }

    /// Prints one chunk.
    pub(super) fn chunk(&mut self, chunk: &pb::AgentChunk) -> Result<(), OutputError> {
        match &self.mode {
            Mode::Json(json) => {
                let line = json.line(chunk)?;
                let mut out = io::stdout().lock();
                writeln!(out, "{line}")?;
                out.flush()?;
                Ok(())
            }
            Mode::Text => {
                if let Some(kind) = &chunk.chunk {
                    self.text_chunk(kind)?;
                }
                Ok(())
            }
        }
    }

    fn text_chunk(&mut self, chunk: &Chunk) -> io::Result<()> {
        match chunk {
            Chunk::TextDelta(delta) => {
                let mut out = io::stdout().lock();
                write!(out, "{}", printable(&delta.text))?;
                out.flush()?;
                if !delta.text.is_empty() {
                    self.at_line_start = delta.text.ends_with('\n');
                }
            }
            Chunk::ToolCall(call) if call.tool_name != ASK_USER => {
                let args = call.args.as_ref().map(struct_to_json).unwrap_or_default();
                self.note(&format!("calls {} {args}", call.tool_name))?;
            }
            Chunk::ToolResult(result) if result.is_error => {
                self.problem(&format!("{}: {}", result.tool_name, result.content))?;
            }
            Chunk::ToolResult(result) if result.tool_name != ASK_USER => {
                self.note(&format!("{}: {}", result.tool_name, result.content))?;
            }
            Chunk::Error(error) => self.problem(&format!("error ({}): {}", error.code, error.message))?,
            Chunk::Finish(finish) => {
                self.end_line()?;
                match pb::FinishReason::try_from(finish.reason) {
                    Ok(pb::FinishReason::MaxSteps) => self.note("(stopped: the step limit was reached)")?,
                    Ok(pb::FinishReason::Cancelled) => self.note("(the run was cancelled)")?,
                    Ok(pb::FinishReason::Error) => self.note("(the run failed)")?,
                    _ => {}
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Starts a new line on the screen unless at the start of one.
    pub(super) fn end_line(&mut self) -> io::Result<()> {
        if !self.at_line_start {
            let mut screen = self.screen();
            writeln!(screen)?;
            screen.flush()?;
            self.at_line_start = true;
        }
        Ok(())
    }

    fn line(&mut self, text: &str, problem: bool) -> io::Result<()> {
        self.end_line()?;
        let text = printable(text);
        let mut screen = self.screen();
        match (self.color, problem) {
            (false, _) => writeln!(screen, "{text}")?,
            (true, false) => writeln!(screen, "{}", text.dim())?,
            (true, true) => writeln!(screen, "{}", text.red())?,
        }
        screen.flush()
    }

    /// A note for the person, on a line of its own.
    pub(super) fn note(&mut self, text: &str) -> io::Result<()> {
        self.line(text, false)
    }

    /// Something that went wrong, on a line of its own.
    pub(super) fn problem(&mut self, text: &str) -> io::Result<()> {
        self.line(text, true)
    }
}
