//! HTTP tools (`kind = "http"`) against a local HTTP server: the validated
//! arguments are sent as JSON (or as query parameters for GET) with the
//! configured headers (secrets from the environment); the model gets the
//! body, cut to size; a 5xx or a timeout is an error result; only
//! idempotent tools are retried.

use agentd::pb::FinishReason;
use serde_json::{json, Value};

use super::http_server::HttpServer;
use super::*;

/// The "secret" the weather tool's header takes from the environment:
/// cargo sets this variable for the tests it runs (changing the process's
/// environment while other tests run would not be safe).
const TOKEN_VAR: &str = "CARGO_PKG_NAME";
const TOKEN: &str = env!("CARGO_PKG_NAME");

/// A server hosting agent `web` with one HTTP tool per route of `http`.
async fn web_server(http: &HttpServer) -> ToolServer {
    let config = format!(
        r#"
        [[tools]]
        kind = "http"
        name = "weather"
        description = "The weather forecast for a city."
        url = "{weather}"
        headers = {{ Authorization = "Bearer ${{{TOKEN_VAR}}}", X-Client = "agentd-tests" }}
        input_schema = {{ type = "object", properties = {{ city = {{ type = "string", minLength = 1 }} }}, required = ["city"] }}

        [[tools]]
        kind = "http"
        name = "search"
        method = "GET"
        url = "{search}"

        [[tools]]
        kind = "http"
        name = "broken"
        url = "{broken}"
        idempotent = false

        [[tools]]
        kind = "http"
        name = "slow"
        url = "{slow}"
        timeout = "300ms"

        [[tools]]
        kind = "http"
        name = "big"
        url = "{big}"
        max_response_bytes = 1001

        [[tools]]
        kind = "http"
        name = "flaky"
        url = "{flaky}"
        idempotent = true
        "#,
        weather = http.url("/weather"),
        search = http.url("/search"),
        broken = http.url("/broken"),
        slow = http.url("/slow"),
        big = http.url("/big"),
        flaky = http.url("/flaky"),
    );
    start(
        vec![agent_with(
            "web",
            &["weather", "search", "broken", "slow", "big", "flaky"],
        )],
        &config,
    )
    .await
}

#[tokio::test]
async fn success_sends_json_with_the_secret_header_and_returns_the_body() {
    let http = HttpServer::start().await;
    let server = web_server(&http).await;

    let tools = server.tools_of("web").await;
    let weather = tools.iter().find(|t| t.name == "weather").expect("listed");
    assert_eq!(weather.source, "http");
    assert_eq!(weather.description, "The weather forecast for a city.");
    assert_eq!(schema_of(weather)["required"], json!(["city"]));

    let chunks = server.run("web", r#"call weather {"city": "Oslo"}"#).await;
    let result = tool_results(&chunks).remove(0);
    assert!(!result.is_error, "{result:?}");
    let body: Value = serde_json::from_str(&result.content).expect("the body, as sent");
    assert_eq!(body, json!({"forecast": "sunny", "request": {"city": "Oslo"}}));
    assert_eq!(finish_reason(&chunks), FinishReason::Stop);

    let received = http.received("weather");
    assert_eq!(received.len(), 1);
    let sent: Value = serde_json::from_str(&received[0].body).unwrap();
    assert_eq!(sent, json!({"city": "Oslo"}));
    assert_eq!(
        received[0].authorization.as_deref(),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    // The header never reaches the model or the stream.
    assert!(!format!("{chunks:?}").contains("Bearer"));
}

#[tokio::test]
async fn get_sends_the_arguments_as_query_parameters() {
    let http = HttpServer::start().await;
    let server = web_server(&http).await;
    let result = server
        .result_of("web", r#"call search {"q": "rust grpc", "limit": 3}"#)
        .await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.content, "results for limit=3&q=rust+grpc");
    assert_eq!(
        http.received("search")[0].query.as_deref(),
        Some("limit=3&q=rust+grpc")
    );
}

#[tokio::test]
async fn arguments_are_validated_before_any_request() {
    let http = HttpServer::start().await;
    let server = web_server(&http).await;
    let result = server.result_of("web", r#"call weather {"city": ""}"#).await;
    assert!(result.is_error);
    assert!(
        result.content.starts_with("Invalid arguments for weather"),
        "{}",
        result.content
    );
    assert!(http.received("weather").is_empty(), "no request was sent");
}

#[tokio::test]
async fn a_500_is_an_error_result_with_status_and_excerpt_and_is_not_retried() {
    let http = HttpServer::start().await;
    let server = web_server(&http).await;
    let chunks = server.run("web", r#"call broken {"x": 1}"#).await;
    let result = tool_results(&chunks).remove(0);
    assert!(result.is_error);
    assert_eq!(
        result.content,
        "broken failed: HTTP 500 Internal Server Error: upstream exploded"
    );
    // An error result, not a failed run.
    assert_eq!(finish_reason(&chunks), FinishReason::Stop);
    assert_eq!(http.received("broken").len(), 1, "not idempotent: sent once");
}

#[tokio::test]
async fn an_idempotent_tool_is_retried_after_a_5xx() {
    let http = HttpServer::start().await;
    let server = web_server(&http).await;
    let result = server.result_of("web", r#"call flaky {}"#).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.content, "recovered");
    assert_eq!(http.received("flaky").len(), 2);
}

#[tokio::test]
async fn a_timeout_is_an_error_result() {
    let http = HttpServer::start().await;
    let server = web_server(&http).await;
    let result = server.result_of("web", r#"call slow {}"#).await;
    assert!(result.is_error);
    assert_eq!(
        result.content,
        "slow failed: no response within 300 ms (timed out)"
    );
}

#[tokio::test]
async fn a_body_over_the_limit_is_cut_with_a_marker() {
    let http = HttpServer::start().await;
    let server = web_server(&http).await;
    let result = server.result_of("web", r#"call big {}"#).await;
    assert!(!result.is_error);
    // 1001 bytes would split a two-byte character: cut at 1000.
    let (body, marker) = result.content.split_once('\n').expect("a marker line");
    assert_eq!(body, "é".repeat(500));
    assert_eq!(marker, "[truncated: the response is longer than 1001 bytes]");
}

#[tokio::test]
async fn execute_tool_calls_an_http_tool_outside_a_run() {
    let http = HttpServer::start().await;
    let server = web_server(&http).await;
    let response = server.execute("web", "search", json!({"q": "x"})).await;
    assert!(!response.is_error);
    assert_eq!(response.content, "results for q=x");
}

#[tokio::test]
async fn a_header_without_its_environment_variable_stops_the_start() {
    let error = start_error(
        vec![agent_with("web", &["weather"])],
        r#"
        [[tools]]
        kind = "http"
        name = "weather"
        url = "http://127.0.0.1:9/weather"
        headers = { Authorization = "Bearer ${AGENTD_TEST_UNSET_VARIABLE}" }
        "#,
    )
    .await;
    assert_eq!(
        error,
        "invalid tool configuration: tools: \"weather\": headers.Authorization: \
         the environment variable AGENTD_TEST_UNSET_VARIABLE is not set"
    );
}
