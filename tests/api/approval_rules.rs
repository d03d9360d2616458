//! `approval_rules` of a tool entry end to end: the first rule whose CEL
//! `when` holds approves (the tool runs), declines (the model gets the
//! decline with the rule's reason) or asks (the call waits for approval),
//! on the call's arguments and on the run's metadata; no rule that holds
//! leaves the call to `require_approval`; a rule that fails to evaluate
//! does not match; a rule that does not compile, or names anything but
//! `args` and `run.*`, stops the start naming the agent, tool and rule.

use std::collections::HashMap;

use agentd::agent::{ApprovalRuleSpec, RuleDecision, ToolEntry, ToolTable};
use agentd::pb::{self, FinishReason, RunStatus};

use crate::configured::*;
use crate::helpers::*;
use crate::startup::{says, start_failing_with_config};

fn rule(when: &str, then: RuleDecision, reason: &str) -> ApprovalRuleSpec {
    ApprovalRuleSpec {
        when: when.into(),
        then,
        reason: reason.into(),
    }
}

/// An agent `support` whose human_review calls need approval unless a rule
/// decides: short drafts run, drafts that mention a refund are declined,
/// anything from the `vip` channel is asked about, and the `region`
/// metadata key (which runs may not have) approves EU runs.
async fn ruled_server() -> Configured {
    let review = ToolEntry::Table(ToolTable {
        name: "human_review".into(),
        require_approval: true,
        approval_rules: vec![
            rule("run.metadata.channel == 'vip'", RuleDecision::Ask, ""),
            rule(
                "args.draft.contains('refund')",
                RuleDecision::Decline,
                "refunds go through billing",
            ),
            rule(
                "size(args.draft) < 10",
                RuleDecision::Approve,
                "short drafts are harmless",
            ),
            rule("run.metadata.region == 'eu'", RuleDecision::Approve, ""),
            rule("run.metadata.channel == 'test'", RuleDecision::Approve, ""),
        ],
        ..ToolTable::default()
    });
    server_with(vec![agent("support", vec!["ask_user".into(), review])]).await
}

fn review(draft: &str) -> String {
    format!(r#"call human_review {{"draft": "{draft}"}}"#)
}

async fn run(server: &Configured, prompt: &str, metadata: &[(&str, &str)]) -> Vec<pb::AgentChunk> {
    let metadata: HashMap<String, String> = metadata
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    server
        .start_run(pb::StreamAgentRequest {
            agent_id: "support".into(),
            prompt: prompt.into(),
            metadata,
            ..Default::default()
        })
        .await
        .expect("StreamAgent")
}

/// The tool ran: human_review suspends for its review, no approval asked.
fn ran(chunks: &[pb::AgentChunk]) {
    assert!(approvals(chunks).is_empty(), "{chunks:?}");
    assert_eq!(suspensions(chunks).len(), 1, "{chunks:?}");
    assert_eq!(finish_reason(chunks), FinishReason::Suspended);
}

/// The call waits for approval.
async fn asked(server: &Configured, chunks: &[pb::AgentChunk]) {
    assert_eq!(approvals(chunks).len(), 1, "{chunks:?}");
    assert!(suspensions(chunks).is_empty(), "{chunks:?}");
    let run = server.get_run(&run_id(chunks)).await;
    assert_eq!(status_of(&run), RunStatus::Suspended);
    assert!(run.pending[0].awaiting_approval);
}

#[tokio::test]
async fn a_rule_on_the_arguments_approves_without_asking() {
    let server = ruled_server().await;
    let chunks = run(&server, &review("Hi there"), &[]).await;
    ran(&chunks);
}

#[tokio::test]
async fn a_rule_on_the_arguments_declines_with_its_reason_and_the_run_goes_on() {
    let server = ruled_server().await;
    let chunks = run(&server, &review("Your refund is on its way"), &[]).await;
    assert!(approvals(&chunks).is_empty(), "a declined call never suspends");
    let results = tool_results(&chunks);
    assert_eq!(results.len(), 1, "{chunks:?}");
    assert!(results[0].is_error);
    assert_eq!(
        results[0].content,
        "The user declined this call of human_review: refunds go through billing"
    );
    assert_eq!(finish_reason(&chunks), FinishReason::Stop);
    assert_eq!(
        status_of(&server.get_run(&run_id(&chunks)).await),
        RunStatus::Completed
    );
}

#[tokio::test]
async fn the_first_rule_that_holds_decides_on_metadata() {
    let server = ruled_server().await;
    // `ask` comes first: even a short draft waits for approval on vip runs.
    let chunks = run(&server, &review("Hi"), &[("channel", "vip")]).await;
    asked(&server, &chunks).await;
    // Approving it runs the tool as usual.
    let approved = server
        .answer(&run_id(&chunks), "", approval(true, ""))
        .await
        .unwrap();
    assert_eq!(suspensions(&approved).len(), 1, "{approved:?}");

    // A metadata value approves a long draft no argument rule covers.
    let chunks = run(
        &server,
        &review("A long draft for the customer"),
        &[("region", "eu")],
    )
    .await;
    ran(&chunks);
}

#[tokio::test]
async fn no_rule_that_holds_leaves_the_call_to_require_approval() {
    let server = ruled_server().await;
    let chunks = run(
        &server,
        &review("A long draft for the customer"),
        &[("region", "us")],
    )
    .await;
    asked(&server, &chunks).await;
}

#[tokio::test]
async fn a_rule_that_fails_at_run_time_does_not_match() {
    let server = ruled_server().await;
    // No `region` key: `run.metadata.region == 'eu'` fails to evaluate and
    // does not match; the next rule still decides.
    let chunks = run(
        &server,
        &review("A long draft for the customer"),
        &[("channel", "test")],
    )
    .await;
    ran(&chunks);
    // Nothing else holds: require_approval asks.
    let chunks = run(&server, &review("A long draft for the customer"), &[]).await;
    asked(&server, &chunks).await;
}

/// Starts the binary with an `agentd.toml` whose agent `support` has
/// `human_review` with these rules, expecting it to fail; its stderr.
async fn start_with_rules(rules: &str) -> String {
    start_failing_with_config(&format!(
        "[[agents]]\nid = \"support\"\ntools = [\"ask_user\", {{ name = \"human_review\", approval_rules = {rules} }}]\n"
    ))
    .await
}

#[tokio::test]
async fn a_rule_that_does_not_compile_stops_the_start() {
    let stderr = start_with_rules(
        r#"[{ when = "args.draft != ''", then = "approve" }, { when = "args.draft ==", then = "decline" }]"#,
    )
    .await;
    says(
        &stderr,
        "agent support: tool human_review: approval_rules[1]: `when` does not compile",
    );
}

#[tokio::test]
async fn a_rule_naming_an_unknown_variable_stops_the_start() {
    let stderr = start_with_rules(r#"[{ when = "user == 'admin'", then = "approve" }]"#).await;
    says(
        &stderr,
        "agent support: tool human_review: approval_rules[0]: unknown variable `user`",
    );
    let stderr = start_with_rules(r#"[{ when = "run.tenant == 'a'", then = "approve" }]"#).await;
    says(
        &stderr,
        "agent support: tool human_review: approval_rules[0]: unknown field `run.tenant`",
    );
}

#[tokio::test]
async fn a_rule_with_an_unknown_decision_stops_the_start() {
    let stderr = start_with_rules(r#"[{ when = "true", then = "allow" }]"#).await;
    says(&stderr, "unknown variant `allow`");
}

/// An agent `ops` whose human_review calls have no require_approval: rules
/// on the run's agent and thread decide.
async fn run_rules_server() -> Configured {
    let review = ToolEntry::Table(ToolTable {
        name: "human_review".into(),
        require_approval: false,
        approval_rules: vec![
            rule("run.thread_id.startsWith('sandbox-')", RuleDecision::Approve, ""),
            rule(
                "run.agent_id == 'ops' && run.thread_id != ''",
                RuleDecision::Ask,
                "",
            ),
        ],
        ..ToolTable::default()
    });
    server_with(vec![agent("ops", vec!["ask_user".into(), review])]).await
}

async fn run_in(
    server: &Configured,
    thread_id: &str,
    options: Option<pb::RunOptions>,
) -> Vec<pb::AgentChunk> {
    server
        .start_run(pb::StreamAgentRequest {
            agent_id: "ops".into(),
            prompt: review("A long draft for the customer"),
            thread_id: thread_id.into(),
            options,
            ..Default::default()
        })
        .await
        .expect("StreamAgent")
}

#[tokio::test]
async fn rules_read_the_runs_agent_and_thread() {
    let server = run_rules_server().await;
    // `ask` on a tool that needs no approval otherwise.
    asked(&server, &run_in(&server, "customer-1", None).await).await;
    ran(&run_in(&server, "sandbox-1", None).await);
    // Outside a thread no rule holds, and the tool needs no approval.
    ran(&run_in(&server, "", None).await);
}

#[tokio::test]
async fn an_approving_rule_spares_the_runs_require_tool_approval_too() {
    let server = run_rules_server().await;
    let options = || {
        Some(pb::RunOptions {
            require_tool_approval: true,
            ..Default::default()
        })
    };
    ran(&run_in(&server, "sandbox-2", options()).await);
    // No rule holds: the run's require_tool_approval asks.
    asked(&server, &run_in(&server, "", options()).await).await;
}
