//! What a card in the inbox says and does, in a real browser
//! (`web/test/cards.ts`, playwright-core driving Debian's chromium, with
//! axe-core checking every state): cards titled by their question and the
//! agent's first metadata values, the run id small and copyable; an
//! approval's arguments as a labelled table named by the tool's schema,
//! JSON behind "Edit arguments"; a review in words, its revised text
//! starting from the draft, the status saying the verdict, the question
//! kept on the card; search over arguments and drafts; one of two
//! questions answered without resetting the other's asked time; an MCP
//! form's email checked in the page; "Cancel run" taken back with
//! "Keep run" or Escape.

use agentd::agent::{AgentSpec, InboxMetadata, ToolEntry};

use super::node::run_script;
use crate::security::server::SecureServer;

/// A client-executed tool that pauses for approval, described and titled
/// as a person should read it.
const REFUND: &str = r#"
[[tools]]
kind = "client"
name = "issue_refund"
description = "Refund a customer's payment to the card they paid with."
input_schema = { type = "object", title = "Issue a refund", required = ["amount", "currency", "order_id"], properties = { amount = { type = "number", title = "Amount", description = "In the currency's units." }, currency = { type = "string", title = "Currency" }, order_id = { type = "string", title = "Order" }, reason = { type = "string", title = "Reason given" } } }
"#;

/// A server whose default agent `desk` asks, has drafts reviewed and
/// refunds with approval (its inbox_metadata shows `customer` and `order`
/// first), beside `travel`, which uses the MCP server
/// `tests/mcp/elicit_server.py` that asks for input.
async fn cards_server() -> SecureServer {
    let config = format!("{REFUND}{}", crate::user_tools::elicitation::stdio("auto"));
    SecureServer::start(move |dir, settings| {
        let desk = AgentSpec {
            id: "desk".into(),
            tools: vec![
                ToolEntry::name("ask_user"),
                ToolEntry::name("human_review"),
                ToolEntry::with_approval("issue_refund"),
            ],
            inbox_metadata: InboxMetadata {
                first: vec!["customer".into(), "order".into()],
                hidden: vec![],
            },
            ..AgentSpec::assistant()
        };
        let travel = crate::user_tools::agent_with("travel", &["mcp:travel"]);
        let configured = crate::user_tools::settings_with(dir, vec![desk, travel], &config);
        settings.agents = configured.agents;
        settings.tools = configured.tools;
        settings.mcp_servers = configured.mcp_servers;
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs chromium, Node (npm ci in web/) and AGENTD_TEST_MCP_PYTHON; .ci/run runs it"]
async fn what_a_card_says_and_does_in_a_real_browser() {
    let server = cards_server().await;
    let url = format!("http://{}", server.addr);
    // AGENTD_INBOX_CARDS_SCREENS=DIR saves a screenshot of each state the
    // test visits there (a relative path is from the repository).
    let screens = std::env::var("AGENTD_INBOX_CARDS_SCREENS")
        .map(|path| super::node::web_dir().join("..").join(path).display().to_string())
        .unwrap_or_default();
    tokio::task::spawn_blocking(move || run_script("cards.ts", &[&url, &screens]))
        .await
        .expect("the script's task");
}
