//! Who decided each call, end to end: a person's answer, approval, decline
//! and cancel name the API key that made them (its configured name, or
//! `sha256:` and 8 hex digits of the key's hash, never the key) and come
//! through gRPC; a rule names its place and expression; the deadline is
//! `deadline`. GetRun lists them all; the RESUMED, CANCELLED and EXPIRED
//! events of WatchRuns carry the ones they were made of.

use std::time::Duration;

use agentd::agent::{ApprovalRuleSpec, RuleDecision, ToolEntry, ToolTable};
use agentd::pb::{self, DecisionOutcome, DecisionSource, RunEventKind};

use crate::configured::{agent, approval};
use crate::helpers::{collect, finish_reason, run_id};
use crate::security::server::{start, write_file, KeyedClient, SecureServer};
use crate::watch_runs::{next_events, watch_request};

const NAMED_KEY: &str = "acme-key-named-5b1e0c9d7a2f";
const UNNAMED_KEY: &str = "acme-key-plain-8c3d2e1f0a9b";

const REVIEW_LONG: &str = r#"call human_review {"draft": "A long letter to the customer"}"#;

/// A server with one tenant and two keys (one named), and an agent
/// `support` whose human_review calls wait for approval unless a rule
/// decides: the draft `ok` is approved, `no` declined.
async fn server() -> SecureServer {
    server_on(None).await
}

/// [`server`] on the store at `store` (`None`: SQLite in its folder).
async fn server_on(store: Option<String>) -> SecureServer {
    SecureServer::start(move |dir, settings| {
        if store.is_some() {
            settings.server.store = store;
        }
        let keys = format!("acme:{NAMED_KEY} Ada Lovelace\nacme:{UNNAMED_KEY}\n");
        settings.auth.api_keys_file = Some(write_file(dir, "api.keys", &keys));
        settings.server.sweep_interval = Duration::from_millis(50);
        let review = ToolEntry::Table(ToolTable {
            name: "human_review".into(),
            require_approval: true,
            approval_rules: vec![
                ApprovalRuleSpec {
                    when: "args.draft == 'ok'".into(),
                    then: RuleDecision::Approve,
                    reason: String::new(),
                },
                ApprovalRuleSpec {
                    when: "args.draft == 'no'".into(),
                    then: RuleDecision::Decline,
                    reason: "not this one".into(),
                },
            ],
            ..ToolTable::default()
        });
        settings.agents = vec![agent("support", vec!["ask_user".into(), review])];
    })
    .await
}

fn request(prompt: &str) -> pb::StreamAgentRequest {
    pb::StreamAgentRequest {
        agent_id: "support".into(),
        prompt: prompt.into(),
        ..Default::default()
    }
}

async fn resume(
    client: &mut KeyedClient,
    run_id: &str,
    answer: pb::resume_request::Answer,
) -> Vec<pb::AgentChunk> {
    let request = pb::ResumeRequest {
        run_id: run_id.into(),
        answer: Some(answer),
        ..Default::default()
    };
    let stream = client.resume(request).await.expect("Resume").into_inner();
    collect(stream).await.expect("the continuation")
}

async fn get_run(client: &mut KeyedClient, run_id: &str) -> pb::Run {
    client
        .get_run(pb::GetRunRequest {
            run_id: run_id.into(),
        })
        .await
        .expect("GetRun")
        .into_inner()
}

/// `decision` says `outcome`, by `who`, through `source`.
fn assert_decision(
    decision: &pb::Decision,
    (outcome, who, source): (DecisionOutcome, &str, DecisionSource),
    tool_call_id: &str,
) {
    assert_eq!(decision.outcome(), outcome, "{decision:?}");
    assert_eq!(decision.decided_by, who, "{decision:?}");
    assert_eq!(decision.source(), source, "{decision:?}");
    assert_eq!(decision.tool_call_id, tool_call_id, "{decision:?}");
    assert!(decision.time.is_some(), "{decision:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_approvals_declines_and_cancels_name_the_key_and_grpc() {
    people_decide(server().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set AGENTD_TEST_POSTGRES_URL; .ci/run runs it"]
async fn postgres_keeps_who_decided_in_runs_and_events() {
    let schema = crate::pg::TestSchema::create().await;
    people_decide(server_on(Some(schema.url())).await).await;
    the_deadline_decides(server_on(Some(schema.url())).await).await;
}

async fn people_decide(server: SecureServer) {
    let mut named = server.client(Some(NAMED_KEY)).await;
    let mut unnamed = server.client(Some(UNNAMED_KEY)).await;
    let hashed = agentd::auth::unnamed_key_name(UNNAMED_KEY);
    assert!(
        hashed.starts_with("sha256:") && hashed.len() == "sha256:".len() + 8,
        "{hashed}"
    );
    let kinds = [RunEventKind::Resumed, RunEventKind::Cancelled];
    let mut events = named
        .watch_runs(watch_request("", &kinds, ""))
        .await
        .expect("WatchRuns")
        .into_inner();

    // An answer, by the named key.
    let asked = start(&mut named, request("Help me pick a plan")).await.unwrap();
    let id = run_id(&asked);
    let call = get_run(&mut named, &id).await.pending[0].tool_call_id.clone();
    let answered = resume(&mut named, &id, pb::resume_request::Answer::Text("Pro".into())).await;
    assert_eq!(finish_reason(&answered), pb::FinishReason::Stop);
    let answer = (DecisionOutcome::Answered, "Ada Lovelace", DecisionSource::Grpc);
    let run = get_run(&mut named, &id).await;
    assert_eq!(run.decisions.len(), 1, "{:?}", run.decisions);
    assert_decision(&run.decisions[0], answer, &call);
    let resumed = next_events(&mut events, 1).await;
    assert_eq!(resumed[0].kind(), RunEventKind::Resumed);
    assert_eq!(
        resumed[0].decisions, run.decisions,
        "the event carries the answer"
    );

    // An approval by the unnamed key, then a cancel of the review it led to.
    let waiting = start(&mut unnamed, request(REVIEW_LONG)).await.unwrap();
    let id = run_id(&waiting);
    let call = get_run(&mut unnamed, &id).await.pending[0].tool_call_id.clone();
    let approved = resume(&mut unnamed, &id, approval(true, "")).await;
    assert_eq!(finish_reason(&approved), pb::FinishReason::Suspended);
    let cancelled = unnamed
        .cancel_run(pb::CancelRunRequest {
            run_id: id.clone(),
            reason: "not needed".into(),
        })
        .await
        .expect("CancelRun")
        .into_inner();
    assert_eq!(cancelled.status(), pb::RunStatus::Cancelled);
    let run = get_run(&mut unnamed, &id).await;
    assert_eq!(run.decisions.len(), 2, "{:?}", run.decisions);
    assert_decision(
        &run.decisions[0],
        (DecisionOutcome::Approved, &hashed, DecisionSource::Grpc),
        &call,
    );
    assert_decision(
        &run.decisions[1],
        (DecisionOutcome::Cancelled, &hashed, DecisionSource::Grpc),
        &call,
    );
    for decision in &run.decisions {
        assert!(!decision.decided_by.contains(UNNAMED_KEY), "never the key");
    }
    let two = next_events(&mut events, 2).await;
    assert_eq!(
        (two[0].kind(), two[1].kind()),
        (RunEventKind::Resumed, RunEventKind::Cancelled)
    );
    assert_eq!(two[0].decisions, run.decisions[..1]);
    assert_eq!(two[1].decisions, run.decisions[1..]);

    // A decline, by the named key.
    let waiting = start(&mut named, request(REVIEW_LONG)).await.unwrap();
    let id = run_id(&waiting);
    let declined = resume(&mut named, &id, approval(false, "too long")).await;
    assert_eq!(finish_reason(&declined), pb::FinishReason::Stop);
    let run = get_run(&mut named, &id).await;
    assert_eq!(run.decisions.len(), 1);
    assert_eq!(run.decisions[0].outcome(), DecisionOutcome::Declined);
    assert_eq!(run.decisions[0].decided_by, "Ada Lovelace");
    let event = next_events(&mut events, 1).await;
    assert_eq!(event[0].decisions, run.decisions);
}

#[tokio::test]
async fn rules_are_named_by_their_place_with_their_expression() {
    let server = server().await;
    let mut client = server.client(Some(NAMED_KEY)).await;
    let both = r#"call human_review {"draft": "ok"} then call human_review {"draft": "no"}"#;
    let chunks = start(&mut client, request(both)).await.unwrap();
    let run = get_run(&mut client, &run_id(&chunks)).await;
    assert_eq!(run.decisions.len(), 2, "{:?}", run.decisions);
    let (approved, declined) = (&run.decisions[0], &run.decisions[1]);
    assert_eq!(approved.outcome(), DecisionOutcome::Approved);
    assert_eq!(approved.source(), DecisionSource::Rule);
    assert_eq!(approved.decided_by, "support/human_review/rules[0]");
    assert_eq!(approved.rule, "args.draft == 'ok'");
    assert_eq!(declined.outcome(), DecisionOutcome::Declined);
    assert_eq!(declined.decided_by, "support/human_review/rules[1]");
    assert_eq!(declined.rule, "args.draft == 'no'");
    assert_ne!(approved.tool_call_id, declined.tool_call_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deadline_expires_what_waits_as_deadline() {
    the_deadline_decides(server().await).await;
}

async fn the_deadline_decides(server: SecureServer) {
    let mut client = server.client(Some(NAMED_KEY)).await;
    let mut events = client
        .watch_runs(watch_request("", &[RunEventKind::Expired], ""))
        .await
        .expect("WatchRuns")
        .into_inner();
    let chunks = start(
        &mut client,
        pb::StreamAgentRequest {
            options: Some(pb::RunOptions {
                suspend_ttl_seconds: 1,
                ..Default::default()
            }),
            ..request("Help me pick a plan")
        },
    )
    .await
    .unwrap();
    let id = run_id(&chunks);
    let expired = next_events(&mut events, 1).await;
    assert_eq!(expired[0].run_id, id);
    let run = get_run(&mut client, &id).await;
    assert_eq!(run.status(), pb::RunStatus::Expired);
    assert_eq!(run.decisions.len(), 1);
    let call = &run.decisions[0].tool_call_id;
    assert_decision(
        &run.decisions[0],
        (DecisionOutcome::Expired, "deadline", DecisionSource::Deadline),
        call,
    );
    assert_eq!(expired[0].decisions, run.decisions);
}
