//! A push goes straight to the address the policy checked, never through a
//! proxy from the environment (a proxy would connect wherever the name
//! leads it, unchecked): a server started with `HTTP_PROXY`,
//! `HTTPS_PROXY` and `ALL_PROXY` pointing at a listener delivers its
//! pushes directly, and the listener sees not even a connection.

use serde_json::json;

use super::{a2a_call, user_message, Origin, Silent};
use crate::process::ServerProcess;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_never_go_through_a_proxy() {
    let proxy = Silent::bind();
    let receiver = Origin::start(&proxy.url("/")).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let proxy_url = proxy.url("");
    let mut envs = vec![("NO_PROXY", ""), ("no_proxy", "")];
    for name in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        envs.push((name, proxy_url.as_str()));
    }
    // The receiver listens on 127.0.0.1: internal addresses allowed.
    let server = ServerProcess::start_with(
        &dir.path().join("data"),
        &["--a2a-push-allow-private", "true"],
        &envs,
    );

    let params = json!({
        "message": user_message("Help me pick a plan", ""),
        "configuration": {"taskPushNotificationConfig": {"url": receiver.url("/push"), "token": "t-1"}},
    });
    let (status, body) = a2a_call(server.addr, "SendMessage", params).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["result"]["task"]["id"].is_string(), "{body}");

    let pushed = receiver.wait_for(1).await;
    assert_eq!(pushed[0].path, "/push");
    assert_eq!(
        pushed[0]
            .headers
            .get("x-a2a-notification-token")
            .and_then(|v| v.to_str().ok()),
        Some("t-1")
    );
    proxy.assert_untouched();
}
