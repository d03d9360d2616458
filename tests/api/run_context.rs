//! What an inbox needs to give a question its context: GetRun returns the
//! run's conversation (the messages it was started with, the calls, the
//! answers), ListRuns does not; ListAgents says which metadata keys an
//! agent's inbox shows first and which it hides, and who the caller is.

use agentd::agent::{AgentSpec, InboxMetadata};
use agentd::pb::{self, Role};

use crate::helpers::*;
use crate::security::auth::{two_tenants, ACME_KEY};

fn message(role: Role, content: &str) -> pb::Message {
    pb::Message {
        role: role as i32,
        content: content.into(),
    }
}

#[tokio::test]
async fn get_run_returns_the_conversation_and_list_runs_does_not() {
    let server = TestServer::start().await;
    let chunks = server
        .start_run(pb::StreamAgentRequest {
            messages: vec![
                message(Role::System, "Be brief."),
                message(Role::User, "My order 1043 arrived damaged"),
                message(Role::Assistant, "I can send a replacement or refund it."),
                message(Role::User, "free text: what now?"),
            ],
            ..Default::default()
        })
        .await
        .expect("StreamAgent");
    let run_id = run_id(&chunks);
    let run = server.get_run(&run_id).await;
    let said: Vec<(i32, &str)> = run
        .messages
        .iter()
        .map(|m| (m.role, m.content.as_str()))
        .collect();
    assert_eq!(
        said[..3],
        [
            (Role::User as i32, "My order 1043 arrived damaged"),
            (Role::Assistant as i32, "I can send a replacement or refund it."),
            (Role::User as i32, "free text: what now?"),
        ],
        "system instructions left out"
    );
    let asked = &run.messages[3];
    assert_eq!(asked.tool_calls[0].tool_name, "ask_user");

    server.resume_text(&run_id, "Ada").await.expect("Resume");
    let answered = server.get_run(&run_id).await;
    let result = answered
        .messages
        .iter()
        .find(|m| m.role == Role::Tool as i32)
        .expect("the tool's result");
    assert_eq!(result.answer.as_ref().map(|a| a.text.as_str()), Some("Ada"));

    let listed = server
        .client()
        .list_runs(pb::ListRunsRequest::default())
        .await
        .expect("ListRuns")
        .into_inner();
    assert!(listed.runs.iter().all(|run| run.messages.is_empty()));
}

#[tokio::test]
async fn list_agents_says_how_the_inbox_shows_metadata_and_who_calls() {
    let temp = tempfile::tempdir().expect("temp dir");
    let mut settings = settings_in(temp.path());
    settings.agents = vec![AgentSpec {
        inbox_metadata: InboxMetadata {
            first: vec!["customer".into(), "ticket".into()],
            hidden: vec!["trace_id".into()],
        },
        ..AgentSpec::assistant()
    }];
    let server = TestServer::start_with(settings).await;
    let listed = server
        .client()
        .list_agents(pb::ListAgentsRequest {})
        .await
        .expect("ListAgents")
        .into_inner();
    assert_eq!(listed.tenant, "default", "a server without keys");
    let inbox = listed.agents[0].inbox.clone().expect("inbox settings");
    assert_eq!(inbox.metadata_first, ["customer", "ticket"]);
    assert_eq!(inbox.metadata_hidden, ["trace_id"]);

    let keyed = two_tenants().await;
    let mut acme = keyed.client(Some(ACME_KEY)).await;
    let listed = acme
        .list_agents(pb::ListAgentsRequest {})
        .await
        .expect("ListAgents")
        .into_inner();
    assert_eq!(listed.tenant, "acme");
}

#[test]
fn inbox_metadata_is_read_from_the_agent_table() {
    let spec: AgentSpec = toml::from_str(
        r#"
        id = "support"
        inbox_metadata = { first = ["customer"], hidden = ["trace_id"] }
        "#,
    )
    .expect("an agent table");
    assert_eq!(spec.inbox_metadata.first, ["customer"]);
    assert_eq!(spec.inbox_metadata.hidden, ["trace_id"]);
    let plain: AgentSpec = toml::from_str(r#"id = "plain""#).expect("an agent table");
    assert_eq!(plain.inbox_metadata, InboxMetadata::default());
}
