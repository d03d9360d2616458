//! The scripted model: deterministic, offline, built in and the default. The
//! latest user message picks a behaviour by keyword (first match wins,
//! case-insensitive), so a client can reach every path of the runtime:
//!
//! | prompt contains | the model                                                        |
//! |-----------------|------------------------------------------------------------------|
//! | `call TOOL {json}` | calls TOOL with the JSON object as arguments; several `call`s joined by ` then ` or `;` are several calls in one step; JSON that does not parse gets a plain-text answer saying why, and no call |
//! | `stream N`      | streams N text deltas and stops (for benchmarks); `stream N every M ms` waits M ms before each delta |
//! | `recap`         | answers with what it was sent: the message count, the first message's role, the earlier user messages and the answers |
//! | `plain`         | answers in text, with no tool call                               |
//! | `invalid`       | calls ask_user with `selectionMode` but no options (an error)    |
//! | `two questions` | calls ask_user twice in one step (free text, then single-select) |
//! | `multi`         | asks a multi-select question (toppings)                          |
//! | `free`          | asks a free-text question (your name)                            |
//! | anything else   | asks a single-select question (a plan)                           |
//!
//! Once every call of its last step has a result, it writes a final text that
//! quotes the answers, other tools' results and the tool errors, and stops.

mod call_directive;

use std::sync::LazyLock;

use async_trait::async_trait;
use serde_json::json;
use tokio_stream::StreamExt;

use super::{LanguageModel, ModelError, ModelEvent, ModelRequest, ModelStream};
use crate::domain::{Args, Message, ToolCall, Usage};

const ASK_USER: &str = "ask_user";
const ANSWER_PREFIX: &str = "User answered: ";

/// The scripted model.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Scripted;

/// What the model does on a step, decided from the conversation.
enum Script {
    /// Deltas, with a pause before each.
    Stream(usize, Option<std::time::Duration>),
    Say(String),
    /// Tool calls: tool name and arguments.
    Call(Vec<(String, Args)>),
}

/// Calls of ask_user with these arguments.
fn ask(questions: Vec<Args>) -> Script {
    Script::Call(
        questions
            .into_iter()
            .map(|args| (ASK_USER.to_owned(), args))
            .collect(),
    )
}

/// What a prompt with `call` directives asks for.
fn call_directives(prompt: &str) -> Option<Script> {
    Some(match call_directive::parse(prompt)? {
        Ok(directives) => Script::Call(
            directives
                .into_iter()
                .map(|d| (d.name, Args::new(d.args)))
                .collect(),
        ),
        Err(reason) => Script::Say(format!(
            "I did not call any tool: the call directive is invalid: {reason}. \
             Write it as call TOOL_NAME {{\"key\": \"value\"}}."
        )),
    })
}

/// The questions the model asks, built once: every call shares its
/// arguments.
struct Questions {
    free_text: Args,
    single_select: Args,
    multi_select: Args,
    /// `selectionMode` but no options: an error.
    invalid: Args,
}

static QUESTIONS: LazyLock<Questions> = LazyLock::new(|| Questions {
    free_text: Args::new(json!({"question": "What should I call you?"})),
    single_select: Args::new(json!({
        "question": "Which plan should I set up for you?",
        "options": [
            {"label": "Basic", "description": "One project, community support"},
            {"label": "Pro", "description": "Unlimited projects, email support"},
            {"label": "Enterprise", "description": "SSO, audit logs and a dedicated engineer"}
        ]
    })),
    multi_select: Args::new(json!({
        "question": "Which toppings do you want on your pizza?",
        "options": [
            {"label": "Mushrooms", "description": "Roasted chestnut mushrooms"},
            {"label": "Olives", "description": "Black Kalamata olives"},
            {"label": "Peppers", "description": "Sweet red peppers"},
            {"label": "Basil", "description": "Fresh basil leaves, added after baking"}
        ],
        "selectionMode": "multi_select"
    })),
    invalid: Args::new(json!({"question": "Which toppings do you want?", "selectionMode": "multi_select"})),
});

/// The number after the word `stream`, if the prompt asks for a stream.
/// The pause of `every M ms` in a stream prompt, if any.
fn stream_pace(prompt: &str) -> Option<std::time::Duration> {
    let mut words = prompt.split_whitespace();
    words.find(|word| *word == "every")?;
    let millis: u64 = words.next()?.trim_end_matches("ms").parse().ok()?;
    Some(std::time::Duration::from_millis(millis))
}

fn stream_count(prompt: &str) -> Option<usize> {
    let mut words = prompt.split_whitespace();
    while let Some(word) = words.next() {
        if word == "stream" {
            return words
                .next()?
                .trim_end_matches(|c: char| !c.is_ascii_digit())
                .parse()
                .ok();
        }
    }
    None
}

fn first_step(prompt: &str, messages: &[Message], can_ask: bool) -> Script {
    if let Some(script) = call_directives(prompt) {
        return script;
    }
    let prompt = prompt.to_lowercase();
    if let Some(n) = stream_count(&prompt) {
        return Script::Stream(n, stream_pace(&prompt));
    }
    if prompt.contains("recap") {
        return Script::Say(recap(messages));
    }
    if prompt.contains("plain") || !can_ask {
        return Script::Say(format!(
            "Hello! You said: {}. This is a plain answer, with no tool call.",
            prompt.trim()
        ));
    }
    let q = &*QUESTIONS;
    ask(if prompt.contains("invalid") {
        vec![Args::clone(&q.invalid)]
    } else if prompt.contains("two questions") {
        vec![Args::clone(&q.free_text), Args::clone(&q.single_select)]
    } else if prompt.contains("multi") {
        vec![Args::clone(&q.multi_select)]
    } else if prompt.contains("free") {
        vec![Args::clone(&q.free_text)]
    } else {
        vec![Args::clone(&q.single_select)]
    })
}

/// The final text after the tool results that close the conversation:
/// the user's answers, then other tools' results, then the tool errors.
fn closing_text(results: &[&Message]) -> String {
    let mut answers = Vec::new();
    let mut outputs = Vec::new();
    let mut errors = Vec::new();
    for message in results {
        if let Message::Tool {
            tool_name,
            content,
            is_error,
            ..
        } = message
        {
            match content.strip_prefix(ANSWER_PREFIX) {
                _ if *is_error => errors.push(content.clone()),
                Some(answer) => answers.push(answer.to_owned()),
                None => outputs.push(format!("The {tool_name} tool returned: {}", sentence(content))),
            }
        }
    }
    let mut parts = Vec::new();
    if !answers.is_empty() {
        parts.push(format!("Thanks! You answered: {}.", answers.join("; ")));
    }
    parts.extend(outputs);
    if !errors.is_empty() {
        parts.push(format!("The tool reported an error: {}", errors.join(" ")));
    }
    parts.join(" ")
}

/// `text` ending with a full stop (unless it ends with other punctuation).
fn sentence(text: &str) -> String {
    let text = text.trim_end();
    if text.ends_with(['.', '!', '?']) {
        text.to_owned()
    } else {
        format!("{text}.")
    }
}

fn script(messages: &[Message], can_ask: bool) -> Script {
    let trailing_results: Vec<&Message> = messages
        .iter()
        .rev()
        .take_while(|m| matches!(m, Message::Tool { .. }))
        .collect();
    if !trailing_results.is_empty() {
        let mut in_order = trailing_results;
        in_order.reverse();
        return Script::Say(closing_text(&in_order));
    }
    let prompt = messages
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::User { content } => Some(content.as_str()),
            _ => None,
        })
        .unwrap_or_default();
    first_step(prompt, messages, can_ask)
}

/// What the model was sent, in words: how many messages, the role of the
/// first one after the system instructions, every user message before the
/// latest, and every answer (`User answered: ...` results), in order.
fn recap(messages: &[Message]) -> String {
    let conversation: Vec<&Message> = messages
        .iter()
        .filter(|m| !matches!(m, Message::System { .. }))
        .collect();
    let first = match conversation.first() {
        Some(Message::User { .. }) => "user",
        Some(Message::Assistant { .. }) => "assistant",
        Some(Message::Tool { .. }) => "tool",
        Some(Message::System { .. }) | None => "none",
    };
    let mut users: Vec<String> = conversation
        .iter()
        .filter_map(|m| match m {
            Message::User { content } => Some(format!("{content:?}")),
            _ => None,
        })
        .collect();
    users.pop();
    let answers: Vec<&str> = conversation
        .iter()
        .filter_map(|m| match m {
            Message::Tool { content, .. } => content.strip_prefix(ANSWER_PREFIX),
            _ => None,
        })
        .collect();
    let list = |items: Vec<String>| {
        if items.is_empty() {
            "none".to_owned()
        } else {
            items.join("; ")
        }
    };
    let count = conversation.len();
    format!(
        "Recap: {count} message{}, the first from the {first}. Earlier messages: {}. Answers: {}.",
        if count == 1 { "" } else { "s" },
        list(users),
        list(answers.into_iter().map(str::to_owned).collect()),
    )
}

/// Splits text into word deltas, each keeping its following space.
fn word_deltas(text: &str) -> Vec<ModelEvent> {
    text.split_inclusive(' ')
        .map(|word| ModelEvent::TextDelta(word.to_owned()))
        .collect()
}

fn approx_tokens(chars: usize) -> u64 {
    chars.div_ceil(4) as u64
}

fn input_tokens(messages: &[Message]) -> u64 {
    approx_tokens(messages.iter().map(Message::text_len).sum())
}

#[async_trait]
impl LanguageModel for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }

    async fn stream(&self, request: ModelRequest<'_>) -> Result<ModelStream, ModelError> {
        let can_ask = request.tools.iter().any(|t| t.name == ASK_USER);
        let input_tokens = input_tokens(request.messages);
        let step = 1 + request
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Assistant { .. }))
            .count();
        let events = match script(request.messages, can_ask) {
            Script::Stream(n, pace) => {
                let usage = Usage {
                    input_tokens,
                    output_tokens: n as u64,
                };
                if let Some(pace) = pace {
                    return Ok(paced_stream(n, pace, usage));
                }
                let deltas = (0..n).map(|i| Ok(ModelEvent::TextDelta(format!("token{i} "))));
                let stream =
                    tokio_stream::iter(deltas).chain(tokio_stream::once(Ok(ModelEvent::Usage(usage))));
                return Ok(Box::pin(stream));
            }
            Script::Say(text) => {
                let mut events = word_deltas(&text);
                events.push(ModelEvent::Usage(Usage {
                    input_tokens,
                    output_tokens: approx_tokens(text.len()),
                }));
                events
            }
            Script::Call(calls) => {
                let mut output_chars = 0;
                let mut events: Vec<ModelEvent> = calls
                    .into_iter()
                    .enumerate()
                    .map(|(i, (name, args))| {
                        output_chars += args.json_len();
                        ModelEvent::ToolCall(ToolCall {
                            id: format!("call_{step}_{}", i + 1),
                            name,
                            args,
                        })
                    })
                    .collect();
                events.push(ModelEvent::Usage(Usage {
                    input_tokens,
                    output_tokens: approx_tokens(output_chars),
                }));
                events
            }
        };
        Ok(Box::pin(tokio_stream::iter(events.into_iter().map(Ok))))
    }
}

/// `n` deltas with `pace` before each, then the usage, from a task of its
/// own (it stops when the stream is dropped).
fn paced_stream(n: usize, pace: std::time::Duration, usage: Usage) -> ModelStream {
    let (events, stream) = tokio::sync::mpsc::channel(16);
    tokio::spawn(async move {
        for i in 0..n {
            tokio::time::sleep(pace).await;
            if events
                .send(Ok(ModelEvent::TextDelta(format!("token{i} "))))
                .await
                .is_err()
            {
                return;
            }
        }
        let _ = events.send(Ok(ModelEvent::Usage(usage))).await;
    });
    Box::pin(tokio_stream::wrappers::ReceiverStream::new(stream))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_pace_reads_every_m_ms() {
        assert_eq!(
            stream_pace("stream 10 every 5 ms"),
            Some(std::time::Duration::from_millis(5))
        );
        assert_eq!(
            stream_pace("stream 10 every 7ms"),
            Some(std::time::Duration::from_millis(7))
        );
        assert_eq!(stream_pace("stream 10"), None);
    }

    #[test]
    fn stream_count_reads_the_number_after_stream() {
        assert_eq!(stream_count("please stream 1000 deltas"), Some(1000));
        assert_eq!(stream_count("stream"), None);
        assert_eq!(stream_count("upstream 5"), None);
    }

    #[test]
    fn closing_text_quotes_answers_in_order() {
        let results = [
            Message::tool("call_1_1", "ask_user", "User answered: Ada", false),
            Message::tool("call_1_2", "ask_user", "User answered: Pro", false),
        ];
        let refs: Vec<&Message> = results.iter().collect();
        assert_eq!(closing_text(&refs), "Thanks! You answered: Ada; Pro.");
    }

    #[test]
    fn closing_text_quotes_other_results_and_errors() {
        let results = [
            Message::tool("call_1_1", "ask_user", "User answered: Ada", false),
            Message::tool("call_1_2", "human_review", "Reviewer approved the draft.", false),
            Message::tool("call_1_3", "lookup", "42", false),
            Message::tool("call_1_4", "x", "Unknown tool: x", true),
        ];
        let refs: Vec<&Message> = results.iter().collect();
        assert_eq!(
            closing_text(&refs),
            "Thanks! You answered: Ada. The human_review tool returned: Reviewer approved the draft. \
             The lookup tool returned: 42. The tool reported an error: Unknown tool: x"
        );
    }

    #[test]
    fn recap_tells_what_the_model_was_sent() {
        let messages = [
            Message::System {
                content: "be brief".into(),
            },
            Message::user("plan please"),
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: "call_1_1".into(),
                    name: ASK_USER.into(),
                    args: json!({}).into(),
                }],
            },
            Message::tool("call_1_1", ASK_USER, "User answered: Pro", false),
            Message::user("recap"),
        ];
        assert_eq!(
            recap(&messages),
            "Recap: 4 messages, the first from the user. Earlier messages: \"plan please\". Answers: Pro."
        );
        assert_eq!(
            recap(&messages[4..]),
            "Recap: 1 message, the first from the user. Earlier messages: none. Answers: none."
        );
    }

    #[test]
    fn call_directive_takes_precedence_over_keywords() {
        let Script::Call(calls) = first_step(r#"plain: call human_review {"draft": "multi"}"#, &[], true)
        else {
            panic!("expected calls");
        };
        assert_eq!(
            calls,
            [("human_review".to_owned(), Args::new(json!({"draft": "multi"})))]
        );
        let Script::Say(text) = first_step("call human_review {draft}", &[], true) else {
            panic!("expected a plain answer");
        };
        assert!(text.contains("the call directive is invalid"), "{text}");
    }
}
