//! The inbox in a real browser: `web/test/inbox.ts` drives Debian's
//! chromium with playwright-core through the page's accessibility contract
//! (each card's context and metadata, answering each kind of question,
//! the page's own refusals, Enter to send, the status after an answer,
//! approving with edited arguments, human_review through its form,
//! declining, a suspension appearing live, history (an answer the deadline
//! gave said as such), cancel, search over 50
//! waiting runs, kind, agent and sort, the compact view, the shortcuts,
//! signing in with a key and the tenant in the header, axe-core in every
//! state), 300 waiting runs filling in without layout shift
//! (`web/test/many.ts`), and an MCP server's
//! requests for input (`web/test/elicitation.ts`: a form from its schema,
//! refused then answered; a page to open, declined). Also the pages'
//! routes themselves, which need no browser.

use agentd::agent::{AgentSpec, InboxMetadata, ToolEntry, ToolTable};
use agentd::domain::OnExpiry;

use super::node::run_script;
use crate::security::auth::{two_tenants, ACME_KEY, GLOBEX_KEY};
use crate::security::server::SecureServer;

/// A server whose default agent can ask and have drafts reviewed, beside a
/// second agent for the filter, whose deadlines decide for nobody.
async fn inbox_server() -> SecureServer {
    SecureServer::start(|_, settings| {
        settings.agents = vec![
            AgentSpec {
                tools: vec!["ask_user".into(), "human_review".into()],
                inbox_metadata: InboxMetadata {
                    first: vec!["ticket".into(), "customer".into()],
                    hidden: vec!["trace_id".into()],
                },
                ..AgentSpec::assistant()
            },
            AgentSpec {
                id: "reviewer".into(),
                default: false,
                // At the deadline, a question nobody answered is declined
                // and a review nobody approved is approved.
                tools: vec![
                    ToolEntry::Table(ToolTable {
                        name: "ask_user".into(),
                        on_expiry: OnExpiry::Decline,
                        ..ToolTable::default()
                    }),
                    ToolEntry::Table(ToolTable {
                        name: "human_review".into(),
                        require_approval: true,
                        on_expiry: OnExpiry::Approve,
                        ..ToolTable::default()
                    }),
                ],
                ..AgentSpec::assistant()
            },
        ];
        settings.server.sweep_interval = std::time::Duration::from_millis(50);
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs chromium and Node (apt-get install chromium; npm ci in web/); .ci/run runs it"]
async fn the_inbox_in_a_real_browser() {
    let open = inbox_server().await;
    let keyed = two_tenants().await;
    let open_url = format!("http://{}", open.addr);
    let keyed_url = format!("http://{}", keyed.addr);
    // AGENTD_INBOX_SCREENSHOT=docs/inbox.png saves the inbox with its
    // first questions waiting (a relative path is from the repository).
    let screenshot = std::env::var("AGENTD_INBOX_SCREENSHOT")
        .map(|path| super::node::web_dir().join("..").join(path).display().to_string())
        .unwrap_or_default();
    // AGENTD_INBOX_SCREENS=DIR saves the context, the review form, the
    // compact view and the triage controls there.
    let screens = std::env::var("AGENTD_INBOX_SCREENS")
        .map(|path| super::node::web_dir().join("..").join(path).display().to_string())
        .unwrap_or_default();
    tokio::task::spawn_blocking(move || {
        run_script(
            "inbox.ts",
            &[&open_url, &keyed_url, ACME_KEY, GLOBEX_KEY, &screenshot, &screens],
        )
    })
    .await
    .expect("the script's task");
}

/// 300 waiting runs: `web/test/many.ts` measures the cumulative layout
/// shift while the page lists them and fills in their contexts (under 0.1,
/// on a phone and on a desktop),
/// unfolds a long context, and measures the phone layout (the header and
/// the search within a fifth of a 390×844 screen), with axe-core in each
/// state.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs chromium and Node (apt-get install chromium; npm ci in web/); .ci/run runs it"]
async fn three_hundred_waiting_runs_fill_in_without_moving() {
    // The cards' titles show `ticket` and `customer` once their contexts
    // are read.
    let server = SecureServer::start(|_, settings| {
        settings.agents = vec![AgentSpec {
            inbox_metadata: InboxMetadata {
                first: vec!["ticket".into(), "customer".into()],
                hidden: vec![],
            },
            ..AgentSpec::assistant()
        }];
    })
    .await;
    let url = format!("http://{}", server.addr);
    // AGENTD_INBOX_SCREENS=DIR saves the desktop and phone views there.
    let screens = std::env::var("AGENTD_INBOX_SCREENS")
        .map(|path| super::node::web_dir().join("..").join(path).display().to_string())
        .unwrap_or_default();
    tokio::task::spawn_blocking(move || run_script("many.ts", &[&url, &screens]))
        .await
        .expect("the script's task");
}

/// A server whose agent `travel` (the scripted model) uses the MCP server
/// `tests/mcp/elicit_server.py` over stdio, which asks for input.
pub(crate) async fn elicitation_server() -> SecureServer {
    let config = crate::user_tools::elicitation::stdio("auto");
    SecureServer::start(move |dir, settings| {
        let configured = crate::user_tools::settings_with(
            dir,
            vec![crate::user_tools::agent_with("travel", &["mcp:travel"])],
            &config,
        );
        settings.agents = configured.agents;
        settings.mcp_servers = configured.mcp_servers;
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs chromium, Node (npm ci in web/) and AGENTD_TEST_MCP_PYTHON; .ci/run runs it"]
async fn an_mcp_servers_request_for_input_in_a_real_browser() {
    let server = elicitation_server().await;
    let url = format!("http://{}", server.addr);
    // AGENTD_INBOX_ELICITATION_SCREENSHOT=PATH saves the form as first shown
    // (a relative path is from the repository).
    let screenshot = std::env::var("AGENTD_INBOX_ELICITATION_SCREENSHOT")
        .map(|path| super::node::web_dir().join("..").join(path).display().to_string())
        .unwrap_or_default();
    tokio::task::spawn_blocking(move || run_script("elicitation.ts", &[&url, &screenshot]))
        .await
        .expect("the script's task");
}

#[tokio::test]
async fn the_pages_are_served_from_the_binary() {
    let server = SecureServer::start(|_, _| {}).await;
    let http = crate::helpers::http();
    for (path, content_type, needle) in [
        ("/", "text/html; charset=utf-8", "<title>agentd inbox</title>"),
        ("/inbox.js", "text/javascript; charset=utf-8", "Send answer"),
        ("/inbox.css", "text/css; charset=utf-8", "--accent"),
    ] {
        let page = http
            .get(format!("http://{}{path}", server.addr))
            .send()
            .await
            .expect("an answer");
        assert_eq!(page.status(), 200, "{path}");
        let headers = page.headers().clone();
        assert_eq!(headers["content-type"], content_type, "{path}");
        assert_eq!(headers["x-content-type-options"], "nosniff");
        let policy = headers["content-security-policy"].to_str().unwrap();
        assert!(policy.contains("connect-src 'self'"), "{policy}");
        let body = page.text().await.unwrap();
        assert!(body.contains(needle), "{path} has {needle}");
    }
}

#[tokio::test]
async fn the_pages_need_no_key_but_the_service_does() {
    let server = two_tenants().await;
    let page = crate::helpers::http()
        .get(format!("http://{}/", server.addr))
        .send()
        .await
        .expect("an answer");
    assert_eq!(page.status(), 200);
    let mut anonymous = super::client::web_client(server.addr, super::client::Http::One, None);
    let refused = anonymous
        .list_runs(agentd::pb::ListRunsRequest::default())
        .await
        .expect_err("the service needs a key");
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);
}
