//! A webhook's URL is where its deliveries go: a 307 to another origin is
//! not followed (the delivery fails, saying why, and the other server sees
//! not even a connection), while a 307 within the webhook's origin is, its
//! signed body and headers kept.

use super::{Origin, Silent};
use crate::process::stream_prompt;
use crate::webhooks::{start_server, webhook_table, write_config};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_follows_no_redirect_to_another_origin() {
    let elsewhere = Silent::bind();
    let origin = Origin::start(&elsewhere.url("/steal")).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let config = write_config(
        dir.path(),
        &[
            webhook_table("away", &origin.url("/away/307"), "retry_for = \"0s\""),
            webhook_table("here", &origin.url("/here/307"), ""),
        ],
    );
    let server = start_server(&config, &dir.path().join("data"), &[]);
    let mut client = server.client().await;
    stream_prompt(&mut client, "plain").await;

    // Within the origin: both events arrive where the redirect led,
    // POSTed with their signature.
    let arrived = origin.wait_for(2).await;
    for request in &arrived {
        assert_eq!(
            (request.method.as_str(), request.path.as_str()),
            ("POST", "/landed")
        );
        assert!(request.headers.contains_key("webhook-signature"), "{request:?}");
        let body: serde_json::Value = serde_json::from_slice(&request.body).expect("the event");
        assert!(
            body["type"].as_str().is_some_and(|t| t.starts_with("run.")),
            "{body}"
        );
    }

    // To another origin: refused, and said so.
    let refusal = format!(
        "a redirect to another origin (http://{}) is not followed",
        elsewhere.addr
    );
    let log = server.wait_for_log(|log| log.contains(&refusal)).await;
    assert!(log.contains("webhook=away"), "{log}");
    elsewhere.assert_untouched();
}
