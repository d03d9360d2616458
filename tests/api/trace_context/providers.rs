//! The model provider's requests carry the trace context of the request
//! that the step runs for: the StreamAgent's, then after a Resume the
//! Resume's.

use agentd::model::ProviderKind;
use agentd::pb::FinishReason;

use super::*;
use crate::helpers::{expect_one_suspension, finish_reason, run_id};
use crate::providers::{harness, Harness, Reply};

const ASK: &str = include_str!("../providers/transcripts/openai_ask_user.sse");
const ANSWER: &str = include_str!("../providers/transcripts/openai_answer.sse");

/// The value of `name` in the provider's request number `index`.
fn header(server: &Harness, index: usize, name: &str) -> Option<String> {
    let requests = server.provider.requests();
    requests[index]
        .headers
        .get(name)
        .map(|value| value.to_str().expect("ASCII").to_owned())
}

#[tokio::test]
async fn a_provider_request_continues_the_stream_agents_trace() {
    let server = harness(ProviderKind::Openai, vec![Reply::sse(ANSWER)]).await;
    let chunks = start_traced(&server, "", "Hello", STARTED, Some(STATE))
        .await
        .expect("StreamAgent");
    assert_eq!(finish_reason(&chunks), FinishReason::Stop);
    assert_continues(
        header(&server, 0, "traceparent").as_deref(),
        STARTED_TRACE,
        STARTED_PARENT,
    );
    assert_eq!(header(&server, 0, "tracestate").as_deref(), Some(STATE));
}

#[tokio::test]
async fn after_a_resume_the_provider_request_continues_the_resumes_trace() {
    let server = harness(ProviderKind::Openai, vec![Reply::sse(ASK), Reply::sse(ANSWER)]).await;
    let chunks = start_traced(&server, "", "Set me up with a plan", STARTED, Some(STATE))
        .await
        .expect("StreamAgent");
    expect_one_suspension(&server, &chunks).await;
    let resumed = resume_traced(&server, &run_id(&chunks), "Pro", RESUMED)
        .await
        .expect("Resume");
    assert_eq!(finish_reason(&resumed), FinishReason::Stop);

    assert_eq!(server.provider.requests().len(), 2);
    assert_continues(
        header(&server, 0, "traceparent").as_deref(),
        STARTED_TRACE,
        STARTED_PARENT,
    );
    assert_continues(
        header(&server, 1, "traceparent").as_deref(),
        RESUMED_TRACE,
        RESUMED_PARENT,
    );
    // The Resume came without state: none is made up, none is kept from
    // the start.
    assert_eq!(header(&server, 1, "tracestate"), None);
}

#[tokio::test]
async fn a_malformed_traceparent_is_ignored_and_nothing_is_sent_on() {
    let malformed = [
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "not a traceparent",
    ];
    let replies = malformed.iter().map(|_| Reply::sse(ANSWER)).collect();
    let server = harness(ProviderKind::Openai, replies).await;
    for (index, traceparent) in malformed.iter().enumerate() {
        let chunks = start_traced(&server, "", "Hello", traceparent, Some(STATE))
            .await
            .expect("the request is served");
        assert_eq!(finish_reason(&chunks), FinishReason::Stop, "{traceparent}");
        assert_eq!(header(&server, index, "traceparent"), None, "{traceparent}");
        assert_eq!(header(&server, index, "tracestate"), None, "{traceparent}");
    }
}

#[tokio::test]
async fn without_a_trace_context_no_trace_headers_are_sent() {
    let server = harness(ProviderKind::Openai, vec![Reply::sse(ANSWER)]).await;
    let chunks = server.stream("Hello").await;
    assert_eq!(finish_reason(&chunks), FinishReason::Stop);
    assert_eq!(header(&server, 0, "traceparent"), None);
    assert_eq!(header(&server, 0, "tracestate"), None);
}
