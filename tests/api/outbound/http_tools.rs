//! An HTTP tool's URL is the operator's, and so is where its headers go:
//! a redirect to another origin (here another port of the same host) is
//! not followed — the other server sees not even a connection, and the
//! tool's result says the redirect was refused — while one within the
//! tool's origin is followed, headers and all.

use super::{Origin, Silent};
use crate::user_tools::{agent_with, start};

/// A server whose agent `web` has the tools `away` (answered 302 to
/// another origin), `away_307` (307 to it) and `here` (302 within the
/// origin), each sending an API key header.
async fn tool_server(origin: &Origin) -> crate::user_tools::ToolServer {
    let tool = |name: &str, path: &str| {
        format!(
            "[[tools]]\nkind = \"http\"\nname = \"{name}\"\nurl = \"{}\"\n\
             headers = {{ X-Api-Key = \"key-of-{name}\" }}\n",
            origin.url(path)
        )
    };
    let config = [
        tool("away", "/away/302"),
        tool("away_307", "/away/307"),
        tool("here", "/here/302"),
    ]
    .join("\n");
    start(vec![agent_with("web", &["away", "away_307", "here"])], &config).await
}

#[tokio::test]
async fn a_redirect_to_another_origin_is_refused_and_reaches_nothing() {
    let elsewhere = Silent::bind();
    let origin = Origin::start(&elsewhere.url("/steal")).await;
    let server = tool_server(&origin).await;

    for tool in ["away", "away_307"] {
        let result = server
            .result_of("web", &format!(r#"call {tool} {{"q": "x"}}"#))
            .await;
        assert!(result.is_error, "{tool}: {result:?}");
        assert!(
            result.content.contains("the redirect was refused")
                && result
                    .content
                    .contains(&format!("another origin (http://{})", elsewhere.addr)),
            "{tool}: the result says why: {}",
            result.content
        );
        assert!(!result.content.contains("key-of"), "{}", result.content);
    }
    elsewhere.assert_untouched();
    assert!(origin.arrived().is_empty(), "{:?}", origin.arrived());
}

#[tokio::test]
async fn a_redirect_within_the_origin_is_followed() {
    let elsewhere = Silent::bind();
    let origin = Origin::start(&elsewhere.url("/")).await;
    let server = tool_server(&origin).await;

    let result = server.result_of("web", r#"call here {"q": "x"}"#).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.content, "arrived");
    let arrived = origin.arrived();
    assert_eq!(arrived.len(), 1, "{arrived:?}");
    assert_eq!(arrived[0].path, "/landed");
    assert_eq!(
        arrived[0].headers.get("x-api-key").and_then(|v| v.to_str().ok()),
        Some("key-of-here"),
        "the headers went along within the origin"
    );
    elsewhere.assert_untouched();
}
