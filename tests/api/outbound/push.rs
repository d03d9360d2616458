//! A2A push notification URLs are a caller's: on a server that does not
//! allow internal addresses (the default), every form of one — IPv4,
//! IPv6, and the IPv6 forms that carry an IPv4 address (mapped,
//! compatible, NAT64, 6to4), Teredo, a name that resolves inward — is
//! refused when the config is set, with a JSON-RPC invalid-params error
//! that names the address and the setting that would allow it; nothing is
//! stored and nothing is connected to.

use serde_json::json;

use super::{a2a_call, user_message, waiting_task, Silent};
use crate::helpers::TestServer;

/// Push URLs that lead inward, and what their refusal says of them.
fn inward_urls(port: u16) -> Vec<(String, &'static str)> {
    let at = |host: &str| format!("http://{host}:{port}/hook");
    vec![
        (
            at("127.0.0.1"),
            "127.0.0.1 is in the special-purpose block 127.0.0.0/8",
        ),
        (
            at("2130706433"),
            "127.0.0.1 is in the special-purpose block 127.0.0.0/8",
        ),
        (at("localhost"), "host \\\"localhost\\\": "),
        (at("10.0.0.1"), "is in the special-purpose block 10.0.0.0/8"),
        (
            at("169.254.169.254"),
            "is in the special-purpose block 169.254.0.0/16",
        ),
        (at("100.64.0.1"), "is in the special-purpose block 100.64.0.0/10"),
        (at("0.0.0.0"), "is in the special-purpose block 0.0.0.0/8"),
        (at("[::1]"), "::1 is in the special-purpose block ::1/128"),
        (at("[fd00::1]"), "is in the special-purpose block fc00::/7"),
        (at("[fe80::1]"), "is in the special-purpose block fe80::/10"),
        (at("[ff02::1]"), "is a multicast address"),
        // IPv4-mapped and IPv4-compatible.
        (
            at("[::ffff:127.0.0.1]"),
            "(IPv4 127.0.0.1 inside) is in the special-purpose block 127.0.0.0/8",
        ),
        (at("[::ffff:169.254.169.254]"), "(IPv4 169.254.169.254 inside)"),
        (
            at("[::127.0.0.1]"),
            "(IPv4 127.0.0.1 inside) is in the special-purpose block 127.0.0.0/8",
        ),
        (at("[::10.0.0.1]"), "(IPv4 10.0.0.1 inside)"),
        // NAT64: the well-known prefix by the address inside, the
        // local-use one whole.
        (
            at("[64:ff9b::127.0.0.1]"),
            "(IPv4 127.0.0.1 inside) is in the special-purpose block 127.0.0.0/8",
        ),
        (at("[64:ff9b::169.254.169.254]"), "(IPv4 169.254.169.254 inside)"),
        (
            at("[64:ff9b:1::a00:1]"),
            "is in the special-purpose block 64:ff9b:1::/48",
        ),
        // 6to4.
        (
            at("[2002:7f00:1::1]"),
            "(IPv4 127.0.0.1 inside) is in the special-purpose block 127.0.0.0/8",
        ),
        (
            at("[2002:c0a8:101::1]"),
            "(IPv4 192.168.1.1 inside) is in the special-purpose block 192.168.0.0/16",
        ),
        // Teredo.
        (
            at("[2001:0:4136:e378:8000:63bf:3fff:fdd2]"),
            "is in the special-purpose block 2001::/",
        ),
    ]
}

#[tokio::test]
async fn every_form_of_an_internal_address_is_refused_as_a_push_url() {
    let silent = Silent::bind();
    let server = TestServer::start().await;
    let task = waiting_task(server.addr).await;

    for (url, says) in inward_urls(silent.addr.port()) {
        let params = json!({"taskId": task, "url": url, "token": "t"});
        let (status, body) = a2a_call(server.addr, "CreateTaskPushNotificationConfig", params).await;
        assert_eq!(status, 200, "{url}: {body}");
        assert_eq!(body["error"]["code"], -32602, "{url}: {body}");
        let error = body["error"].to_string();
        assert!(error.contains(says), "{url}: the refusal says {says:?}: {error}");
        assert!(
            error.contains("push_allow_private"),
            "{url}: names the setting: {error}"
        );

        // Given with a message that starts a task: refused too, and no
        // task starts.
        let before = a2a_call(server.addr, "ListTasks", json!({})).await.1;
        let params = json!({
            "message": user_message("Help me pick a plan", ""),
            "configuration": {"taskPushNotificationConfig": {"url": url}},
        });
        let (status, body) = a2a_call(server.addr, "SendMessage", params).await;
        assert_eq!(
            (status, &body["error"]["code"]),
            (200, &json!(-32602)),
            "{url}: {body}"
        );
        let after = a2a_call(server.addr, "ListTasks", json!({})).await.1;
        assert_eq!(
            after["result"]["totalSize"], before["result"]["totalSize"],
            "{url}"
        );
    }

    let (_, listed) = a2a_call(
        server.addr,
        "ListTaskPushNotificationConfigs",
        json!({"taskId": task}),
    )
    .await;
    let configs = listed["result"]["configs"].as_array().map_or(0, Vec::len);
    assert_eq!(configs, 0, "nothing was stored: {listed}");
    silent.assert_untouched();
}
