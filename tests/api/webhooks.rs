//! Webhooks with real processes: an `agentd` binary configured with
//! `[[webhooks]]` pushing to a receiver in the test (`receiver.rs`), which
//! checks every signature with the Standard Webhooks library. Signed
//! deliveries of each kind with the suspended run's question; retries with
//! the same id after failed attempts; delivery after `kill -9` of the
//! delivering server; a bad configuration refused at start; the Python
//! receiver of `docs/events-and-webhooks.md` (`python.rs`). Two replicas
//! on PostgreSQL are in `replicas/webhooks.rs`.

mod crash;
mod delivery;
mod python;
pub(crate) mod receiver;

use std::path::{Path, PathBuf};

use crate::process::ServerProcess;

/// The variable the test configurations read the secret from.
pub(crate) const SECRET_VARIABLE: &str = "AGENTD_TEST_WEBHOOK_SECRET";

/// A `[[webhooks]]` table named `name` for `url`, its secret from the
/// environment, retrying within milliseconds, and `extra` keys.
pub(crate) fn webhook_table(name: &str, url: &str, extra: &str) -> String {
    format!(
        "[[webhooks]]\nname = \"{name}\"\nurl = \"{url}\"\nsecret = \"${{{SECRET_VARIABLE}}}\"\n\
         timeout = \"2s\"\nretry_backoff = \"20ms\"\nretry_max_backoff = \"100ms\"\n{extra}\n"
    )
}

/// Writes `tables` as the configuration file in `dir`.
pub(crate) fn write_config(dir: &Path, tables: &[String]) -> PathBuf {
    let path = dir.join("agentd.toml");
    std::fs::write(&path, tables.join("\n")).expect("write agentd.toml");
    path
}

/// A server with the configuration at `config`, its store in `data_dir`,
/// its metrics on an ephemeral port, and `args` besides.
pub(crate) fn start_server(config: &Path, data_dir: &Path, args: &[&str]) -> ServerProcess {
    let config = config.to_str().expect("a UTF-8 path");
    let mut all = vec!["--config", config, "--metrics-listen", "127.0.0.1:0"];
    all.extend_from_slice(args);
    ServerProcess::start_with(data_dir, &all, &[(SECRET_VARIABLE, receiver::SECRET)])
}

/// The server's metrics, scraped now.
pub(crate) async fn scrape(server: &ServerProcess) -> String {
    const MARKER: &str = "metrics at http://";
    let log = server.wait_for_log(|log| log.contains(MARKER)).await;
    let start = log.find(MARKER).expect("the marker") + MARKER.len();
    let addr: String = log[start..]
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != '/')
        .collect();
    crate::helpers::http()
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .expect("scrape")
        .text()
        .await
        .expect("metrics text")
}

/// The value of the series `series` (name and labels, as rendered).
pub(crate) fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
}
