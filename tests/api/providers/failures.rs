//! How provider failures reach the client: refused requests (the provider's
//! message in the run error), retries of 429/5xx honouring Retry-After,
//! bounded retries, a stalled stream tripping the idle timeout, an error
//! event mid-stream, an unreachable provider, and a cancelled run hanging
//! up on its in-flight request.

use std::time::Duration;

use agentd::model::ProviderKind;
use agentd::pb::{self, agent_chunk::Chunk};

use super::*;

const OPENAI_ANSWER: &str = include_str!("transcripts/openai_answer.sse");
const ANTHROPIC_ANSWER: &str = include_str!("transcripts/anthropic_answer.sse");
const ANTHROPIC_OVERLOADED: &str = include_str!("transcripts/anthropic_overloaded.sse");

const OPENAI_TEXT_CHUNK: &str = "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Thinking\"},\"finish_reason\":null}]}\n\n";
const ANTHROPIC_TEXT_START: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Thinking\"}}\n\n";

#[tokio::test]
async fn refused_requests_fail_the_run_with_the_providers_message() {
    let openai_body = r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
    let server = harness(ProviderKind::Openai, vec![Reply::status(400, openai_body)]).await;
    let chunks = server.stream("hello").await;
    assert_failed(
        &server,
        &chunks,
        "provider_error",
        "mock answered HTTP 400 Bad Request: This model's maximum context length is 128000 tokens. (context_length_exceeded)",
    )
    .await;
    assert_eq!(server.provider.requests().len(), 1, "a 400 is not retried");

    let anthropic_body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"messages: text content blocks must be non-empty"}}"#;
    let server = harness(ProviderKind::Anthropic, vec![Reply::status(400, anthropic_body)]).await;
    let chunks = server.stream("hello").await;
    assert_failed(
        &server,
        &chunks,
        "provider_error",
        "messages: text content blocks must be non-empty (invalid_request_error)",
    )
    .await;

    let unauthorized =
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
    let server = harness(ProviderKind::Anthropic, vec![Reply::status(401, unauthorized)]).await;
    let chunks = server.stream("hello").await;
    assert_failed(&server, &chunks, "authentication_failed", "invalid x-api-key").await;

    // A compatible server that answers JSON where a stream was asked for.
    let not_a_stream = r#"{"error":{"message":"streaming is not supported for this model"}}"#;
    let server = harness(ProviderKind::Openai, vec![Reply::status(200, not_a_stream)]).await;
    let chunks = server.stream("hello").await;
    assert_failed(
        &server,
        &chunks,
        "invalid_response",
        "mock answered with JSON instead of an event stream: streaming is not supported for this model",
    )
    .await;
}

#[tokio::test]
async fn a_429_is_retried_after_the_retry_after_wait() {
    let limited = Reply::Status {
        status: 429,
        headers: vec![("retry-after", "1".to_owned())],
        body: r#"{"error":{"message":"Rate limit reached for gpt-4o-mini","type":"requests","code":"rate_limit_exceeded"}}"#.to_owned(),
    };
    let server = harness(ProviderKind::Openai, vec![limited, Reply::sse(OPENAI_ANSWER)]).await;
    let chunks = server.stream("hello").await;
    assert_eq!(finish_reason(&chunks), pb::FinishReason::Stop);
    assert_eq!(text(&chunks), "Great choice: Pro ✓");
    let requests = server.provider.requests();
    assert_eq!(requests.len(), 2);
    let waited = requests[1].at - requests[0].at;
    assert!(waited >= Duration::from_millis(950), "retried after {waited:?}");
    assert_eq!(
        requests[0].body, requests[1].body,
        "the same request is sent again"
    );
}

#[tokio::test]
async fn server_errors_are_retried_with_backoff_a_bounded_number_of_times() {
    let overloaded = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let server = harness(
        ProviderKind::Anthropic,
        vec![Reply::status(529, overloaded), Reply::sse(ANTHROPIC_ANSWER)],
    )
    .await;
    let chunks = server.stream("hello").await;
    assert_eq!(finish_reason(&chunks), pb::FinishReason::Stop);
    assert_eq!(server.provider.requests().len(), 2);

    let server = harness(
        ProviderKind::Openai,
        vec![
            Reply::status(503, "upstream connect error"),
            Reply::status(502, "bad gateway"),
            Reply::status(
                500,
                r#"{"error":{"message":"The server had an error while processing your request."}}"#,
            ),
        ],
    )
    .await;
    let chunks = server.stream("hello").await;
    assert_failed(
        &server,
        &chunks,
        "provider_error",
        "HTTP 500 Internal Server Error: The server had an error while processing your request.",
    )
    .await;
    assert_eq!(
        server.provider.requests().len(),
        3,
        "one try and max_retries = 2 retries"
    );

    let limited = || Reply::status(429, r#"{"error":{"message":"Too many requests"}}"#);
    let server = harness_with(ProviderKind::Openai, vec![limited(), limited()], |config| {
        config.max_retries = Some(1);
    })
    .await;
    let chunks = server.stream("hello").await;
    assert_failed(&server, &chunks, "rate_limited", "Too many requests").await;
    assert_eq!(server.provider.requests().len(), 2);
}

#[tokio::test]
async fn a_stalled_stream_trips_the_idle_timeout() {
    for (kind, head) in [
        (ProviderKind::Openai, OPENAI_TEXT_CHUNK),
        (ProviderKind::Anthropic, ANTHROPIC_TEXT_START),
    ] {
        let stall = Reply::Stall {
            head: head.to_owned(),
        };
        let server = harness_with(kind, vec![stall], |config| {
            config.idle_timeout = Some(Duration::from_millis(300))
        })
        .await;
        let chunks = server.stream("hello").await;
        assert_eq!(
            text(&chunks),
            "Thinking",
            "{kind:?}: what came before the stall is streamed"
        );
        assert_failed(&server, &chunks, "timeout", "mock sent nothing for 0.3s").await;
        assert_eq!(
            server.provider.requests().len(),
            1,
            "a started stream is never retried"
        );
    }
}

#[tokio::test]
async fn an_error_event_mid_stream_fails_the_run() {
    let server = harness(ProviderKind::Anthropic, vec![Reply::sse(ANTHROPIC_OVERLOADED)]).await;
    let chunks = server.stream("hello").await;
    assert_eq!(text(&chunks), "Let me");
    assert_failed(
        &server,
        &chunks,
        "provider_error",
        "mock reported an error during the stream: Overloaded (overloaded_error)",
    )
    .await;
}

#[tokio::test]
async fn an_unreachable_provider_fails_with_connection_failed() {
    // A port that was just free: nothing listens there.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let server = harness_with(ProviderKind::Openai, Vec::new(), |config| {
        config.base_url = Some(url.clone());
        config.max_retries = Some(1);
    })
    .await;
    let chunks = server.stream("hello").await;
    assert_failed(&server, &chunks, "connection_failed", "mock could not connect to").await;
}

#[tokio::test]
async fn cancelling_a_run_aborts_its_http_request() {
    let reply = Reply::KeepAlive {
        head: OPENAI_TEXT_CHUNK.to_owned(),
    };
    let server = harness(ProviderKind::Openai, vec![reply]).await;
    let mut stream = server
        .client()
        .stream_agent(pb::StreamAgentRequest {
            prompt: "hello".into(),
            ..Default::default()
        })
        .await
        .expect("StreamAgent")
        .into_inner();
    let mut seen = Vec::new();
    while !matches!(
        seen.last().and_then(|c: &pb::AgentChunk| c.chunk.as_ref()),
        Some(Chunk::TextDelta(_))
    ) {
        seen.push(stream.message().await.unwrap().expect("a chunk before the text"));
    }
    server
        .client()
        .cancel_run(pb::CancelRunRequest {
            run_id: run_id(&seen),
            reason: "changed my mind".into(),
        })
        .await
        .expect("CancelRun");
    server.provider.wait_for_hangup().await;
    seen.extend(collect(stream).await.expect("the stream closes OK"));
    assert_eq!(finish_reason(&seen), pb::FinishReason::Cancelled);
    assert_eq!(server.provider.requests().len(), 1);
}
