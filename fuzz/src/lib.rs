//! The properties the fuzz targets check, one function per target, each
//! taking the fuzzer's bytes and panicking when agentd breaks a rule:
//! ask_user input validation, resume-answer validation, and the
//! conversion of StreamAgent and Resume requests from the wire into the
//! domain. The same functions replay the kept corpus (`tests/fuzz_corpus/`)
//! and run a stable-Rust random search in `cargo test`
//! (`tests/api/security/fuzz.rs`), so a finding stays fixed.
//!
//! Each check compares agentd with an oracle written independently here
//! from the contract (CONTRACT.md), besides "never panics".

use std::collections::HashSet;
use std::future::Future;
use std::sync::OnceLock;
use std::task::{Context, Poll, Waker};

use agentd::agent::{Agent, AgentRegistry, AgentSpec};
use agentd::domain::Resolution;
use agentd::domain::{Answer, AskUserPayload, SelectionMode, SuspendPayload, ToolCall};
use agentd::domain::{PendingCall, Waiting};
use agentd::grpc::convert;
use agentd::limits::AskUserLimits;
use agentd::limits::Limits;
use agentd::model::ProviderConfigs;
use agentd::pb;
use agentd::tools::{AskUser, ToolCatalog, ToolContext, ToolOutcome};
use arbitrary::Unstructured;
use prost::Message as _;
use serde_json::{json, Map, Value};

/// The limits the targets run with: small, so the fuzzer reaches them.
pub(super) const ASK_USER_LIMITS: AskUserLimits = AskUserLimits {
    max_question_chars: 40,
    max_options: 5,
    max_label_chars: 12,
    max_description_chars: 20,
};

/// The longest text an error may quote back, with room for its wording.
pub(super) const MAX_ERROR_TEXT: usize = 2048;

/// Runs a future that never waits (tools that do no I/O) to its end.
fn now<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut context = Context::from_waker(Waker::noop());
    match future.as_mut().poll(&mut context) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("a tool without I/O waited"),
    }
}

/// An agent with ask_user (at [`ASK_USER_LIMITS`]) and human_review.
fn agent() -> &'static Agent {
    static REGISTRY: OnceLock<AgentRegistry> = OnceLock::new();
    let registry = REGISTRY.get_or_init(|| {
        let spec = AgentSpec {
            tools: vec!["ask_user".into(), "human_review".into()],
            ..AgentSpec::assistant()
        };
        let catalog = ToolCatalog::default().with_ask_user_limits(ASK_USER_LIMITS);
        AgentRegistry::from_specs_with_tools(&[spec], &catalog, &ProviderConfigs::new())
            .expect("the fuzzing agent builds")
    });
    registry.get("").expect("the default agent")
}

// ---------------------------------------------------------------------
// Input generation.

/// A short string from a small alphabet (so labels collide), or any text.
fn text(u: &mut Unstructured) -> String {
    match u.int_in_range(0..=9u8).unwrap_or(0) {
        0 => String::new(),
        1 => " ".repeat(u.int_in_range(1..=3usize).unwrap_or(1)),
        2..=5 => {
            const ALPHABET: &[&str] = &["a", "b", "A", " ", "é", "\n", ",", "x", "\u{3000}", "\u{0}"];
            let len = u.int_in_range(1..=14usize).unwrap_or(1);
            (0..len).map(|_| *u.choose(ALPHABET).unwrap_or(&"a")).collect()
        }
        6 => "q".repeat(u.int_in_range(35..=45usize).unwrap_or(40)),
        _ => u.arbitrary::<String>().unwrap_or_default(),
    }
}

/// Any JSON value, nested at most `depth` deep.
fn value(u: &mut Unstructured, depth: usize) -> Value {
    match u.int_in_range(0..=if depth == 0 { 4u8 } else { 6 }).unwrap_or(0) {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary().unwrap_or(false)),
        2 => json!(u.arbitrary::<i64>().unwrap_or(0)),
        3 => serde_json::Number::from_f64(u.arbitrary().unwrap_or(0.5)).map_or(Value::Null, Value::Number),
        4 => Value::String(text(u)),
        5 => Value::Array(
            (0..u.int_in_range(0..=3usize).unwrap_or(0))
                .map(|_| value(u, depth - 1))
                .collect(),
        ),
        _ => {
            let mut map = Map::new();
            for _ in 0..u.int_in_range(0..=3usize).unwrap_or(0) {
                let key = if u.arbitrary().unwrap_or(true) {
                    (*u.choose(&[
                        "question",
                        "options",
                        "selectionMode",
                        "label",
                        "description",
                        "decision",
                        "comment",
                        "revised_text",
                        "draft",
                    ])
                    .unwrap_or(&"x"))
                    .to_owned()
                } else {
                    text(u)
                };
                map.insert(key, value(u, depth - 1));
            }
            Value::Object(map)
        }
    }
}

/// ask_user arguments: mostly the right shape, often subtly wrong.
fn ask_user_args(u: &mut Unstructured) -> Value {
    if u.ratio(1u8, 8).unwrap_or(false) {
        return value(u, 4);
    }
    let mut args = Map::new();
    if !u.ratio(1u8, 10).unwrap_or(false) {
        let question = if u.ratio(1u8, 10).unwrap_or(false) {
            value(u, 1)
        } else {
            Value::String(text(u))
        };
        args.insert("question".into(), question);
    }
    if u.arbitrary().unwrap_or(false) {
        let options = if u.ratio(1u8, 10).unwrap_or(false) {
            value(u, 2)
        } else {
            let count = u.int_in_range(0..=7usize).unwrap_or(0);
            Value::Array(
                (0..count)
                    .map(|_| {
                        let mut option = Map::new();
                        if !u.ratio(1u8, 12).unwrap_or(false) {
                            option.insert("label".into(), Value::String(text(u)));
                        }
                        if u.arbitrary().unwrap_or(false) {
                            let description = if u.ratio(1u8, 10).unwrap_or(false) {
                                Value::Null
                            } else {
                                Value::String(text(u))
                            };
                            option.insert("description".into(), description);
                        }
                        Value::Object(option)
                    })
                    .collect(),
            )
        };
        args.insert("options".into(), options);
    }
    if u.arbitrary().unwrap_or(false) {
        let mode = *u
            .choose(&["single_select", "multi_select", "free_text", "", "SINGLE_SELECT"])
            .unwrap_or(&"");
        let mode = if u.ratio(1u8, 10).unwrap_or(false) {
            Value::Null
        } else {
            Value::String(mode.into())
        };
        args.insert("selectionMode".into(), mode);
    }
    Value::Object(args)
}

// ---------------------------------------------------------------------
// ask_user input validation.

/// What the contract says of ask_user input: the payload it asks, or
/// that it is refused.
fn expected_question(args: &Value) -> Option<AskUserPayload> {
    let limits = ASK_USER_LIMITS;
    let object = args.as_object()?;
    let question = object.get("question")?.as_str()?;
    let chars = |s: &str| s.chars().count();
    if question.trim().is_empty() || chars(question) > limits.max_question_chars {
        return None;
    }
    let mut options = Vec::new();
    match object.get("options") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for item in items {
                let item = item.as_object()?;
                let label = item.get("label")?.as_str()?;
                let description = match item.get("description") {
                    None => "",
                    Some(Value::String(d)) => d,
                    Some(_) => return None,
                };
                options.push(agentd::domain::AskUserOption {
                    label: label.to_owned(),
                    description: description.to_owned(),
                });
            }
        }
        Some(_) => return None,
    }
    let mode = match object.get("selectionMode") {
        None | Some(Value::Null) => None,
        Some(Value::String(mode)) if mode == "single_select" => Some(SelectionMode::SingleSelect),
        Some(Value::String(mode)) if mode == "multi_select" => Some(SelectionMode::MultiSelect),
        Some(_) => return None,
    };
    if options.len() > limits.max_options {
        return None;
    }
    let mut seen = HashSet::new();
    for option in &options {
        if option.label.trim().is_empty()
            || !seen.insert(option.label.as_str())
            || chars(&option.label) > limits.max_label_chars
            || chars(&option.description) > limits.max_description_chars
        {
            return None;
        }
    }
    let selection_mode = match (mode, options.is_empty()) {
        (Some(_), true) => return None,
        (None, true) => SelectionMode::FreeText,
        (None, false) => SelectionMode::SingleSelect,
        (Some(mode), false) => mode,
    };
    Some(AskUserPayload {
        question: question.to_owned(),
        options,
        selection_mode,
    })
}

/// Whether ask_user's input schema (what ListAgents shows the model)
/// accepts `args`: the agent checks it before the tool runs, and it is
/// stricter than the tool (no `null` for an optional field).
fn schema_accepts(args: &Value) -> bool {
    let Some(object) = args.as_object() else {
        return false;
    };
    let option_ok = |item: &Value| {
        item.as_object().is_some_and(|item| {
            item.get("label").is_some_and(Value::is_string)
                && item.get("description").is_none_or(Value::is_string)
        })
    };
    object.get("question").is_some_and(Value::is_string)
        && object.get("options").is_none_or(|options| {
            options
                .as_array()
                .is_some_and(|items| items.iter().all(option_ok))
        })
        && object
            .get("selectionMode")
            .is_none_or(|mode| matches!(mode.as_str(), Some("single_select" | "multi_select")))
}

/// Target `ask_user_args`: ask_user's input checks, on their own and as
/// the agent runs them (schema, then the tool), inside and outside a run.
pub(super) fn check_ask_user_args(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let args = if data.first().is_some_and(|b| b % 4 == 0) {
        match serde_json::from_slice::<Value>(&data[1..]) {
            Ok(args) => args,
            Err(_) => return,
        }
    } else {
        ask_user_args(&mut u)
    };
    let expected = expected_question(&args);
    let parsed = AskUser::with_limits(ASK_USER_LIMITS).parse(&args);
    match (&parsed, &expected) {
        (Ok(payload), Some(want)) => assert_eq!(payload, want, "args {args}"),
        (Err(message), None) => {
            assert!(
                message.starts_with("Failed to ask user: ") && message.ends_with('.'),
                "{message:?}"
            );
            assert!(
                message.len() <= MAX_ERROR_TEXT,
                "an error of {} bytes for args {args}",
                message.len()
            );
        }
        (parsed, expected) => panic!("args {args}: ask_user says {parsed:?}, the contract {expected:?}"),
    }

    let agent = agent();
    let expected = expected.filter(|_| schema_accepts(&args));
    match now(agent.call_tool("ask_user", &args, ToolContext::IN_RUN)) {
        ToolOutcome::Suspend(SuspendPayload::AskUser(payload)) => {
            assert_eq!(Some(payload), expected, "suspended on args {args}")
        }
        ToolOutcome::Done(output) => {
            assert!(
                output.is_error,
                "ask_user in a run either suspends or fails: {output:?}"
            );
            assert!(expected.is_none(), "refused valid args {args}: {output:?}");
            assert!(
                output.content.len() <= MAX_ERROR_TEXT,
                "an error of {} bytes for args {args}",
                output.content.len()
            );
        }
        other => panic!("ask_user suspended with another payload: {other:?}"),
    }
    match now(agent.call_tool("ask_user", &args, ToolContext::STANDALONE)) {
        ToolOutcome::Done(output) if !output.is_error => {
            let payload = expected.unwrap_or_else(|| panic!("accepted invalid args {args}: {output:?}"));
            let mut fallback = format!("[Question for user]: {}", payload.question);
            if !payload.options.is_empty() {
                let labels: Vec<&str> = payload.options.iter().map(|o| o.label.as_str()).collect();
                fallback += &format!(
                    "\nOptions: {}\nSelection mode: {}",
                    labels.join(", "),
                    payload.selection_mode.as_str()
                );
            }
            assert_eq!(output.content, fallback);
        }
        ToolOutcome::Done(_) => assert!(expected.is_none(), "refused valid args {args}"),
        ToolOutcome::Suspend(_) => panic!("suspended outside a run"),
    }
}

// ---------------------------------------------------------------------
// Resume-answer validation.

fn answer(u: &mut Unstructured, labels: &[String]) -> Answer {
    let label = |u: &mut Unstructured| match u.choose(labels) {
        Ok(label) if u.ratio(3u8, 4).unwrap_or(true) => label.clone(),
        _ => text(u),
    };
    match u.int_in_range(0..=5u8).unwrap_or(0) {
        0 | 1 => Answer::Text(label(u)),
        2 | 3 => Answer::Selections(
            (0..u.int_in_range(0..=4usize).unwrap_or(0))
                .map(|_| label(u))
                .collect(),
        ),
        4 => Answer::Data(value(u, 3)),
        _ => Answer::Approval {
            approved: u.arbitrary().unwrap_or(false),
            reason: text(u),
            // Edited arguments: an object (as the wire carries them) or,
            // from the library, any value.
            edited_args: match u.int_in_range(0..=3u8).unwrap_or(0) {
                0 | 1 => None,
                2 => Some(value(u, 2).into()),
                _ => Some(json!({"question": text(u)}).into()),
            },
        },
    }
}

/// What the contract says an answer to `question` turns into.
fn expected_answer(question: &AskUserPayload, answer: &Answer) -> Option<String> {
    let is_label = |text: &str| question.options.iter().any(|o| o.label == text);
    match (question.selection_mode, answer) {
        (SelectionMode::FreeText, Answer::Text(text)) if !text.trim().is_empty() => Some(text.clone()),
        (SelectionMode::SingleSelect, Answer::Text(text)) if is_label(text) => Some(text.clone()),
        (SelectionMode::MultiSelect, Answer::Selections(labels)) => {
            let distinct: HashSet<&String> = labels.iter().collect();
            let fits =
                !labels.is_empty() && distinct.len() == labels.len() && labels.iter().all(|l| is_label(l));
            fits.then(|| labels.join(", "))
        }
        _ => None,
    }
}

/// Target `resume_answer`: answers of every shape to questions the
/// ask_user tool asked, to human_review, and to calls awaiting approval.
pub(super) fn check_resume_answer(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let agent = agent();
    let which = u.int_in_range(0..=3u8).unwrap_or(0);
    let (call, waiting) = match which {
        0 | 1 => {
            let args = ask_user_args(&mut u);
            let Ok(payload) = AskUser::with_limits(ASK_USER_LIMITS).parse(&args) else {
                return;
            };
            let call = ToolCall {
                id: "call_1".into(),
                name: "ask_user".into(),
                args: args.into(),
            };
            (
                call,
                Waiting::Suspended {
                    payload: SuspendPayload::AskUser(payload),
                },
            )
        }
        2 => {
            let args = json!({"draft": text(&mut u)});
            let ToolOutcome::Suspend(payload) =
                now(agent.call_tool("human_review", &args, ToolContext::IN_RUN))
            else {
                return;
            };
            let call = ToolCall {
                id: "call_1".into(),
                name: "human_review".into(),
                args: args.into(),
            };
            (call, Waiting::Suspended { payload })
        }
        _ => {
            let call = ToolCall {
                id: "call_1".into(),
                name: "ask_user".into(),
                args: json!({"question": "Q?"}).into(),
            };
            (call, Waiting::Approval)
        }
    };
    let labels = match &waiting {
        Waiting::Suspended {
            payload: SuspendPayload::AskUser(question),
        } => question.labels(),
        _ => vec!["approve".to_owned(), "reject".to_owned(), "edit".to_owned()],
    };
    let answer = answer(&mut u, &labels);
    let pending = PendingCall {
        call,
        waiting: waiting.clone(),
        since: None,
    };
    let resolved = agent.resolve(&pending, &answer);
    if let Err(error) = &resolved {
        assert!(
            [
                "text",
                "selections",
                "selections.labels",
                "data",
                "approval",
                "approval.edited_args",
                "answer"
            ]
            .contains(&error.field),
            "an error names a request field: {error:?}"
        );
        assert!(
            error.reason.len() <= MAX_ERROR_TEXT,
            "an error of {} bytes: {}…",
            error.reason.len(),
            error.reason.chars().take(200).collect::<String>()
        );
    }
    match (&waiting, &answer, &resolved) {
        (
            Waiting::Approval,
            Answer::Approval {
                approved: true,
                edited_args,
                ..
            },
            Ok(Resolution::Execute { edited_args: ran }),
        ) => {
            assert_eq!(edited_args, ran, "the tool runs the arguments approved");
            if let Some(args) = edited_args {
                assert!(args.is_object(), "only an object is run: {args:?}");
                assert!(
                    args.get("question").is_some_and(Value::is_string),
                    "ask_user's schema requires a question: {args:?}"
                );
            }
        }
        (
            Waiting::Approval,
            Answer::Approval {
                edited_args: Some(_), ..
            },
            Err(error),
        ) => assert_eq!(error.field, "approval.edited_args", "{error:?}"),
        (Waiting::Approval, Answer::Approval { approved: false, .. }, Ok(Resolution::Output(output))) => {
            assert!(
                output.is_error
                    && output
                        .content
                        .starts_with("The user declined this call of ask_user")
            )
        }
        (Waiting::Approval, Answer::Approval { .. }, other) => {
            panic!("approval answered {answer:?}: {other:?}")
        }
        (Waiting::Approval, _, result) => {
            assert!(result.is_err(), "{answer:?} answered an approval: {result:?}")
        }
        (
            Waiting::Suspended {
                payload: SuspendPayload::AskUser(question),
            },
            _,
            result,
        ) => match (expected_answer(question, &answer), result) {
            (Some(text), Ok(Resolution::Output(output))) => {
                assert!(!output.is_error);
                assert_eq!(output.content, format!("User answered: {text}"));
            }
            (None, Err(error)) => {
                if question.selection_mode != SelectionMode::FreeText && error.field != "approval" {
                    assert_eq!(error.valid_labels, question.labels(), "{error:?}");
                }
            }
            (want, got) => panic!("question {question:?}, answer {answer:?}: contract {want:?}, got {got:?}"),
        },
        (Waiting::Suspended { .. }, Answer::Data(data), Ok(Resolution::Output(output))) => {
            let decision = data.get("decision").and_then(Value::as_str);
            assert!(
                matches!(decision, Some("approve" | "reject" | "edit")),
                "accepted review {data}: {output:?}"
            );
        }
        (Waiting::Suspended { .. }, Answer::Data(_), Err(_)) => {}
        (Waiting::Suspended { .. }, _, result) => {
            assert!(result.is_err(), "{answer:?} answered a review: {result:?}")
        }
    }
}

// ---------------------------------------------------------------------
// Proto -> domain conversion.

/// Limits small enough for the fuzzer to cross.
fn small_limits() -> Limits {
    Limits {
        max_prompt_bytes: 64,
        max_messages: 4,
        max_steps_per_run: 8,
        ..Limits::default()
    }
}

/// Converting a domain error into a status never panics and never quotes
/// more than a bounded amount of the input.
fn assert_status_is_bounded(error: agentd::runtime::RuntimeError) {
    let status = tonic::Status::from(error);
    assert!(
        status.message().len() <= MAX_ERROR_TEXT,
        "a status of {} bytes",
        status.message().len()
    );
    assert!(
        status.details().len() <= 4 * MAX_ERROR_TEXT,
        "details of {} bytes",
        status.details().len()
    );
}

/// Target `stream_agent_request`: decoding, limit checks and conversion
/// of a StreamAgentRequest.
pub(super) fn check_stream_agent_request(data: &[u8]) {
    let Ok(request) = pb::StreamAgentRequest::decode(data) else {
        return;
    };
    let limits = small_limits();
    let within = match convert::check_start_request(&limits, &request) {
        Ok(()) => true,
        Err(error) => {
            assert_status_is_bounded(error);
            false
        }
    };
    let contents: Vec<&str> = if request.messages.is_empty() {
        vec![request.prompt.as_str()]
    } else {
        request.messages.iter().map(|m| m.content.as_str()).collect()
    };
    let max_steps = request.options.as_ref().map_or(0, |o| o.max_steps);
    let fits = contents.len() <= limits.max_messages
        && contents.iter().map(|c| c.len()).sum::<usize>() <= limits.max_prompt_bytes
        && max_steps <= limits.max_steps_per_run;
    assert_eq!(within, fits, "limits of {request:?}");

    let valid_roles = request
        .messages
        .iter()
        .all(|m| (1..=3).contains(&m.role) && !m.content.is_empty());
    let on_disconnect = request.options.as_ref().map_or(0, |o| o.on_disconnect);
    // A thread id, when given: 1 to 128 characters of [A-Za-z0-9._:-].
    let valid_thread = request.thread_id.is_empty()
        || (request.thread_id.len() <= 128
            && request
                .thread_id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-')));
    let valid = (request.prompt.is_empty() != request.messages.is_empty())
        && (request.messages.is_empty() || valid_roles)
        && (0..=2).contains(&on_disconnect)
        && valid_thread;
    match convert::start_request(request.clone()) {
        Ok(start) => {
            assert!(valid, "accepted {request:?}");
            assert_eq!(start.agent_id, request.agent_id);
            let texts: Vec<&str> = start.messages.iter().map(|m| m.content()).collect();
            assert_eq!(texts, contents);
            assert_eq!(start.max_steps, max_steps);
            assert_eq!(start.cancel_on_disconnect, on_disconnect == 2);
            assert_eq!(start.request_id.is_none(), request.request_id.is_empty());
            assert_eq!(start.metadata.len(), request.metadata.len());
            assert_eq!(start.tools.len(), request.tools.len());
            assert_eq!(
                start.thread_id.as_ref().map(|id| id.to_string()),
                (!request.thread_id.is_empty()).then(|| request.thread_id.clone())
            );
            assert_eq!(start.auto_resume, request.auto_resume);
            let ttl = request.options.as_ref().map_or(0, |o| o.suspend_ttl_seconds);
            assert_eq!(start.suspend_ttl.map(|t| t.as_secs()), (ttl > 0).then_some(ttl));
        }
        Err(error) => {
            assert!(!valid, "refused {request:?}: {error}");
            assert_status_is_bounded(error);
        }
    }
    for tool in &request.tools {
        if let Some(schema) = &tool.input_schema {
            // Struct -> JSON -> Struct -> JSON settles after one round.
            let once = convert::struct_to_json(schema);
            let twice = convert::struct_to_json(&convert::json_to_struct(&once));
            assert_eq!(once, twice);
        }
    }
}

/// Target `resume_request`: decoding and conversion of a ResumeRequest,
/// then the answer checked against a fixed question.
pub(super) fn check_resume_request(data: &[u8]) {
    let Ok(request) = pb::ResumeRequest::decode(data) else {
        return;
    };
    let id_parses = uuid::Uuid::try_parse(&request.run_id).is_ok();
    let several = !request.answers.is_empty();
    let decider = agentd::domain::Decider::new("fuzz", agentd::domain::DecisionSource::Grpc);
    match convert::resume_request(request.clone(), decider) {
        Ok(resume) if several => {
            // Several answers: each names its call and carries an answer,
            // and none comes with the single-answer fields.
            assert!(id_parses && request.answer.is_none() && request.tool_call_id.is_empty());
            assert_eq!(resume.answers.len(), request.answers.len());
            for (wire, answer) in request.answers.iter().zip(&resume.answers) {
                assert!(wire.answer.is_some(), "accepted {request:?}");
                assert_eq!(answer.tool_call_id.as_deref(), Some(wire.tool_call_id.as_str()));
            }
        }
        Ok(resume) => {
            assert!(id_parses && request.answer.is_some(), "accepted {request:?}");
            assert_eq!(
                resume.run_id.to_string(),
                uuid::Uuid::try_parse(&request.run_id)
                    .unwrap()
                    .hyphenated()
                    .to_string()
            );
            assert_eq!(resume.answers.len(), 1);
            let answer = &resume.answers[0];
            assert_eq!(answer.tool_call_id.is_none(), request.tool_call_id.is_empty());
            assert_eq!(resume.request_id.is_none(), request.request_id.is_empty());
            use pb::resume_request::Answer as Wire;
            match (request.answer.as_ref(), &answer.answer) {
                (Some(Wire::Text(a)), Answer::Text(b)) => assert_eq!(a, b),
                (Some(Wire::Selections(a)), Answer::Selections(b)) => assert_eq!(&a.labels, b),
                (Some(Wire::Data(_)), Answer::Data(_)) => {}
                (
                    Some(Wire::Approval(a)),
                    Answer::Approval {
                        approved,
                        reason,
                        edited_args,
                    },
                ) => {
                    assert_eq!((a.approved, &a.reason), (*approved, reason));
                    assert_eq!(a.edited_args.is_some(), edited_args.is_some());
                }
                (Some(Wire::Elicitation(a)), Answer::Elicitation(b)) => {
                    assert_eq!(a.content.is_some(), b.content.is_some());
                }
                (wire, domain) => panic!("{wire:?} became {domain:?}"),
            }
            let question = AskUser::with_limits(ASK_USER_LIMITS)
                .parse(&json!({"question": "Pick", "options": [{"label": "a"}, {"label": "b"}], "selectionMode": "multi_select"}))
                .expect("a valid question");
            let pending = PendingCall {
                call: ToolCall {
                    id: "call_1".into(),
                    name: "ask_user".into(),
                    args: json!({}).into(),
                },
                waiting: Waiting::Suspended {
                    payload: SuspendPayload::AskUser(question.clone()),
                },
                since: None,
            };
            let resolved = agent().resolve(&pending, &answer.answer);
            assert_eq!(
                resolved.is_ok(),
                expected_answer(&question, &answer.answer).is_some()
            );
        }
        Err(error) => {
            let malformed_answer = matches!(
                &request.answer,
                Some(pb::resume_request::Answer::Elicitation(response))
                    if pb::ElicitationAction::try_from(response.action).is_err()
                        || response.action == pb::ElicitationAction::Unspecified as i32
            );
            assert!(
                !id_parses || several || request.answer.is_none() || malformed_answer,
                "refused {request:?}: {error}"
            );
            assert_status_is_bounded(error);
        }
    }
}

/// A named check: the target's name and the function that checks one input.
pub(super) type Target = (&'static str, fn(&[u8]));

/// Every check, by target name, for replaying a corpus.
pub(super) const TARGETS: [Target; 4] = [
    ("ask_user_args", check_ask_user_args),
    ("resume_answer", check_resume_answer),
    ("stream_agent_request", check_stream_agent_request),
    ("resume_request", check_resume_request),
];
