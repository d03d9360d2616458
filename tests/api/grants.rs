//! Grants that remember, end to end: an approval with `remember` makes a
//! grant of the thread that a later run of the thread uses instead of
//! asking (a decision with source GRANT, named by the approver), listed in
//! GetThread until RevokeGrant ends it; a grant of the run covers later
//! calls, not those already waiting; another tenant's grant is NOT_FOUND;
//! misfits are INVALID_ARGUMENT. On SQLite, and on PostgreSQL.

use agentd::agent::ToolEntry;
use agentd::pb::{self, DecisionOutcome, DecisionSource, GrantScope};
use serde_json::json;
use tonic::Code;
use tonic_types::StatusExt;

use crate::configured::{agent, approvals, data};
use crate::helpers::{collect, expect_code, finish_reason, run_id, suspensions};
use crate::security::server::{start, write_file, KeyedClient, SecureServer};

const ACME: &str = "acme-key-grants-7d2c9e4b1a";
const GLOBEX: &str = "globex-key-grants-3f8a6b0c5e";

/// Two tenants (acme's key named `Ada Lovelace`) and an agent `support`
/// whose human_review calls wait for approval.
async fn server_on(store: Option<String>) -> SecureServer {
    SecureServer::start(move |dir, settings| {
        if store.is_some() {
            settings.server.store = store;
        }
        let keys = format!("acme:{ACME} Ada Lovelace\nglobex:{GLOBEX}\n");
        settings.auth.api_keys_file = Some(write_file(dir, "api.keys", &keys));
        let review = ToolEntry::with_approval("human_review");
        settings.agents = vec![agent("support", vec!["ask_user".into(), review])];
    })
    .await
}

fn review(thread: &str, draft: &str) -> pb::StreamAgentRequest {
    pb::StreamAgentRequest {
        agent_id: "support".into(),
        prompt: format!(r#"call human_review {{"draft": "{draft}"}}"#),
        thread_id: thread.into(),
        ..Default::default()
    }
}

fn approve(remember: GrantScope, remember_for: Option<i64>) -> pb::resume_request::Answer {
    pb::resume_request::Answer::Approval(pb::Approval {
        approved: true,
        remember: remember as i32,
        remember_for: remember_for.map(|seconds| prost_types::Duration { seconds, nanos: 0 }),
        ..Default::default()
    })
}

async fn resume(
    client: &mut KeyedClient,
    run_id: &str,
    tool_call_id: &str,
    answer: pb::resume_request::Answer,
) -> Result<Vec<pb::AgentChunk>, tonic::Status> {
    let request = pb::ResumeRequest {
        run_id: run_id.into(),
        tool_call_id: tool_call_id.into(),
        answer: Some(answer),
        ..Default::default()
    };
    let stream = client.resume(request).await?.into_inner();
    collect(stream).await
}

async fn get_run(client: &mut KeyedClient, run_id: &str) -> pb::Run {
    let request = pb::GetRunRequest {
        run_id: run_id.into(),
    };
    client.get_run(request).await.expect("GetRun").into_inner()
}

async fn thread_grants(client: &mut KeyedClient, thread: &str) -> Vec<pb::Grant> {
    let request = pb::GetThreadRequest {
        thread_id: thread.into(),
    };
    client
        .get_thread(request)
        .await
        .expect("GetThread")
        .into_inner()
        .grants
}

async fn revoke(client: &mut KeyedClient, grant_id: &str) -> Result<(), tonic::Status> {
    let request = pb::RevokeGrantRequest {
        grant_id: grant_id.into(),
    };
    client.revoke_grant(request).await.map(|_| ())
}

/// Finishes a run suspended on its human_review: the reviewer approves.
async fn finish_review(client: &mut KeyedClient, run_id: &str) {
    let done = resume(client, run_id, "", data(json!({"decision": "approve"})))
        .await
        .expect("the review");
    assert_eq!(finish_reason(&done), pb::FinishReason::Stop);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_remembered_in_a_thread_approves_a_later_run_until_revoked() {
    remembered_in_a_thread(server_on(None).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set AGENTD_TEST_POSTGRES_URL; .ci/run runs it"]
async fn postgres_keeps_grants_for_every_replica() {
    let schema = crate::pg::TestSchema::create().await;
    remembered_in_a_thread(server_on(Some(schema.url())).await).await;
    // Another server on the same store (a replica) sees the grant.
    let first = server_on(Some(schema.url())).await;
    let mut client = first.client(Some(ACME)).await;
    let asked = start(&mut client, review("pg", "A")).await.unwrap();
    let id = run_id(&asked);
    resume(&mut client, &id, "", approve(GrantScope::Thread, None))
        .await
        .unwrap();
    finish_review(&mut client, &id).await;
    let second = server_on(Some(schema.url())).await;
    let mut other = second.client(Some(ACME)).await;
    let later = start(&mut other, review("pg", "B")).await.unwrap();
    assert!(approvals(&later).is_empty(), "approved by the grant: {later:?}");
    let run = get_run(&mut other, &run_id(&later)).await;
    assert_eq!(run.decisions[0].source(), DecisionSource::Grant);
}

async fn remembered_in_a_thread(server: SecureServer) {
    let mut acme = server.client(Some(ACME)).await;

    // Approved and remembered in the thread.
    let asked = start(&mut acme, review("letters", "A")).await.unwrap();
    assert_eq!(approvals(&asked).len(), 1, "{asked:?}");
    let first = run_id(&asked);
    let approved = resume(&mut acme, &first, "", approve(GrantScope::Thread, None))
        .await
        .expect("approved");
    assert_eq!(suspensions(&approved).len(), 1, "the review: {approved:?}");
    let grants = thread_grants(&mut acme, "letters").await;
    assert_eq!(grants.len(), 1, "{grants:?}");
    let grant = &grants[0];
    assert_eq!(grant.tool_name, "human_review");
    assert_eq!(grant.scope(), GrantScope::Thread);
    assert_eq!(grant.granted_by, "Ada Lovelace");
    assert_eq!(grant.expires_at, None, "as long as the thread lives");
    assert!(
        get_run(&mut acme, &first).await.grants.is_empty(),
        "no grant of the run"
    );
    finish_review(&mut acme, &first).await;

    // A later run of the thread is not asked: the grant approves.
    let later = start(&mut acme, review("letters", "B")).await.unwrap();
    assert!(approvals(&later).is_empty(), "no approval asked: {later:?}");
    assert_eq!(suspensions(&later).len(), 1, "the tool ran: {later:?}");
    let second = run_id(&later);
    let run = get_run(&mut acme, &second).await;
    assert_eq!(run.decisions.len(), 1, "{:?}", run.decisions);
    let decision = &run.decisions[0];
    assert_eq!(decision.outcome(), DecisionOutcome::Approved);
    assert_eq!(decision.source(), DecisionSource::Grant);
    assert_eq!(decision.decided_by, "Ada Lovelace");
    finish_review(&mut acme, &second).await;

    // Revoked: the next run asks again, and the grant is gone.
    revoke(&mut acme, &grant.grant_id).await.expect("RevokeGrant");
    assert!(thread_grants(&mut acme, "letters").await.is_empty());
    let again = start(&mut acme, review("letters", "C")).await.unwrap();
    assert_eq!(approvals(&again).len(), 1, "asked again: {again:?}");
    let gone = expect_code(revoke(&mut acme, &grant.grant_id).await, Code::NotFound);
    assert_eq!(
        gone.get_error_details().error_info().unwrap().reason,
        "GRANT_NOT_FOUND"
    );
}

#[tokio::test]
async fn another_tenants_grant_is_not_found() {
    let server = server_on(None).await;
    let mut acme = server.client(Some(ACME)).await;
    let mut globex = server.client(Some(GLOBEX)).await;
    let asked = start(&mut acme, review("acme-thread", "A")).await.unwrap();
    let id = run_id(&asked);
    resume(&mut acme, &id, "", approve(GrantScope::Thread, Some(3600)))
        .await
        .expect("approved");
    let grants = thread_grants(&mut acme, "acme-thread").await;
    assert_eq!(grants.len(), 1);
    assert!(grants[0].expires_at.is_some(), "remember_for gives an end");
    expect_code(revoke(&mut globex, &grants[0].grant_id).await, Code::NotFound);
    expect_code(revoke(&mut globex, "no-such-grant").await, Code::NotFound);
    assert_eq!(
        thread_grants(&mut acme, "acme-thread").await,
        grants,
        "still acme's"
    );
}

#[tokio::test]
async fn a_grant_of_the_run_leaves_the_calls_already_waiting_to_their_answers() {
    let server = server_on(None).await;
    let mut acme = server.client(Some(ACME)).await;
    let both = pb::StreamAgentRequest {
        prompt: r#"call human_review {"draft": "A"} then call human_review {"draft": "B"}"#.into(),
        thread_id: String::new(),
        ..review("", "")
    };
    let asked = start(&mut acme, both).await.unwrap();
    let calls: Vec<String> = approvals(&asked).iter().map(|a| a.tool_call_id.clone()).collect();
    assert_eq!(calls.len(), 2, "{asked:?}");
    let id = run_id(&asked);

    // Misfits change nothing.
    let declined = pb::resume_request::Answer::Approval(pb::Approval {
        approved: false,
        remember: GrantScope::Run as i32,
        ..Default::default()
    });
    let refused = expect_code(
        resume(&mut acme, &id, &calls[0], declined).await,
        Code::InvalidArgument,
    );
    let field = &refused.get_details_bad_request().unwrap().field_violations[0].field;
    assert_eq!(field, "approval.remember");
    let threadless = approve(GrantScope::Thread, None);
    expect_code(
        resume(&mut acme, &id, &calls[0], threadless).await,
        Code::InvalidArgument,
    );
    let endless = approve(GrantScope::Run, Some(0));
    expect_code(
        resume(&mut acme, &id, &calls[0], endless).await,
        Code::InvalidArgument,
    );
    assert!(get_run(&mut acme, &id).await.grants.is_empty());

    resume(&mut acme, &id, &calls[0], approve(GrantScope::Run, None))
        .await
        .expect("approved");
    let run = get_run(&mut acme, &id).await;
    assert_eq!(run.grants.len(), 1, "{:?}", run.grants);
    assert_eq!(run.grants[0].scope(), GrantScope::Run);
    let waiting: Vec<&pb::PendingToolCall> = run.pending.iter().filter(|p| p.awaiting_approval).collect();
    assert_eq!(waiting.len(), 1, "the other call still waits: {:?}", run.pending);
    assert_eq!(waiting[0].tool_call_id, calls[1]);
}
