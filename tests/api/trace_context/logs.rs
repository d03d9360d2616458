//! Without an OpenTelemetry exporter the trace still shows in the logs:
//! the run's span names the trace it continues (`trace_id`), and after a
//! Resume the trace that started the run (`linked_trace_id`).

use serde_json::Value;

use super::*;
use crate::helpers::{finish_reason, run_id};
use crate::process::ServerProcess;

/// The value of `field` in the `run` span of a JSON log line.
fn run_span_field<'a>(line: &'a Value, field: &str) -> Option<&'a str> {
    line["spans"]
        .as_array()?
        .iter()
        .find(|span| span["name"] == "run")?
        .get(field)?
        .as_str()
}

/// The JSON line whose message is `message`, for run `run`.
fn line_of<'a>(lines: &'a [Value], message: &str, run: &str) -> &'a Value {
    lines
        .iter()
        .find(|line| line["fields"]["message"] == message && line["fields"]["run_id"] == run)
        .unwrap_or_else(|| panic!("no {message:?} line for run {run}"))
}

#[tokio::test]
async fn the_runs_log_lines_name_its_trace_and_after_a_resume_the_trace_it_links_to() {
    let data = tempfile::tempdir().expect("temp dir");
    let process = ServerProcess::start_with(data.path(), &["--log-format", "json"], &[]);
    let mut client = process.client().await;
    let start = pb::StreamAgentRequest {
        prompt: "Help me pick a plan".into(),
        ..Default::default()
    };
    let stream = client
        .stream_agent(traced(start, STARTED, Some(STATE)))
        .await
        .expect("StreamAgent")
        .into_inner();
    let chunks = collect(stream).await.expect("the stream");
    let run = run_id(&chunks);
    let resume = crate::helpers::resume_request(&run, "", pb::resume_request::Answer::Text("Pro".into()));
    let stream = client
        .resume(traced(resume, RESUMED, None))
        .await
        .expect("Resume")
        .into_inner();
    let resumed = collect(stream).await.expect("the stream");
    assert_eq!(finish_reason(&resumed), pb::FinishReason::Stop);

    let done = |log: &str| log.contains("run finished");
    let log = process.wait_for_log(done).await;
    let lines: Vec<Value> = log
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let suspended = line_of(&lines, "run suspended", &run);
    assert_eq!(
        run_span_field(suspended, "trace_id"),
        Some(STARTED_TRACE),
        "{suspended}"
    );
    assert_eq!(run_span_field(suspended, "linked_trace_id"), None, "{suspended}");
    let finished = line_of(&lines, "run finished", &run);
    assert_eq!(
        run_span_field(finished, "trace_id"),
        Some(RESUMED_TRACE),
        "{finished}"
    );
    assert_eq!(
        run_span_field(finished, "linked_trace_id"),
        Some(STARTED_TRACE),
        "{finished}"
    );
}
