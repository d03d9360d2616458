//! The sources of a setting and their precedence, durations in every
//! source, and the deprecated spellings.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Parser;

use std::path::PathBuf;

use super::*;
use crate::config::{AllowedOrigins, TlsConfig};
use crate::runtime::LeaseSettings;

/// The flags as `agentd serve` declares them.
#[derive(Parser)]
struct Flags {
    #[command(flatten)]
    overrides: Overrides,
}

fn flags(args: &[&str]) -> Result<Overrides, ConfigError> {
    let parsed = Flags::try_parse_from(std::iter::once("agentd").chain(args.iter().copied()))
        .unwrap_or_else(|error| panic!("{error}"));
    Overrides::from_flags(parsed.overrides)
}

fn env(vars: &[(&str, &str)]) -> Result<Overrides, ConfigError> {
    let vars: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    Overrides::from_env(|name| vars.get(name).cloned())
}

fn file(text: &str) -> Result<FileConfig, String> {
    toml::from_str(text).map_err(|error| error.to_string())
}

/// Warnings logged while `f` runs.
fn warnings<T>(f: impl FnOnce() -> T) -> (T, String) {
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let value = tracing::subscriber::with_default(subscriber, f);
    let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    (value, text)
}

#[test]
fn defaults_are_those_documented() {
    let settings = FileConfig::default().settle(Overrides::default());
    let server = &settings.server;
    assert_eq!(server.listen, "127.0.0.1:50051".parse().unwrap());
    assert_eq!(server.data_dir, PathBuf::from("./agentd-data"));
    assert_eq!(server.store_url(), "sqlite://./agentd-data/agentd.sqlite3");
    assert_eq!(server.suspend_ttl, Duration::from_secs(7 * 86_400));
    assert_eq!(server.sweep_interval, Duration::from_secs(30));
    assert_eq!(server.drain_timeout, Duration::from_secs(10));
    assert_eq!(crate::server::ServeOptions::default().drain, server.drain_timeout);
    assert_eq!(server.metrics_listen, None);
    assert_eq!(server.cors_allow_origin, None);
    assert_eq!(server.replica_id, None);
    let lease = LeaseSettings::of(server);
    assert_eq!(
        (lease.ttl, lease.renew_every, lease.recovery_interval),
        (
            Duration::from_secs(10),
            Duration::from_secs(2),
            Duration::from_secs(1)
        )
    );
    assert_eq!(lease, LeaseSettings::default());
    assert_eq!(settings.tls, TlsConfig::default());
    assert!(!settings.tls.is_enabled());
    assert_eq!(settings.auth.api_keys_file, None);
    assert!(!settings.auth.authenticate_health && !settings.auth.authenticate_reflection);
    assert_eq!(settings.agents, vec![AgentSpec::assistant()]);
}

#[test]
fn a_flag_beats_a_variable_beats_the_file_beats_the_default() {
    let file_text = "[server]\nlease_ttl = \"30s\"\nlease_renew = \"3s\"\nrecovery_interval = \"4s\"\n";
    let vars = [("AGENTD_LEASE_TTL", "20s"), ("AGENTD_LEASE_RENEW", "5s")];
    let overrides = flags(&["--lease-ttl", "15s"]).unwrap().or(env(&vars).unwrap());
    let settings = file(file_text).unwrap().settle(overrides);
    assert_eq!(settings.server.lease_ttl, Duration::from_secs(15), "the flag");
    assert_eq!(
        settings.server.lease_renew,
        Duration::from_secs(5),
        "the variable"
    );
    assert_eq!(
        settings.server.recovery_interval,
        Duration::from_secs(4),
        "the file"
    );
    assert_eq!(
        settings.server.sweep_interval,
        Duration::from_secs(30),
        "the default"
    );
}

#[test]
fn cors_origins_come_from_a_flag_a_variable_or_the_file() {
    let list = |origins: &[&str]| {
        Some(AllowedOrigins::List(
            origins.iter().map(|o| o.to_string()).collect(),
        ))
    };
    let from_file =
        file("[server]\ncors_allow_origin = [\"https://a.example\", \"http://localhost:5173\"]\n")
            .unwrap()
            .settle(Overrides::default());
    assert_eq!(
        from_file.server.cors_allow_origin,
        list(&["https://a.example", "http://localhost:5173"])
    );
    let from_env = env(&[("AGENTD_CORS_ALLOW_ORIGIN", "https://b.example,https://c.example")]).unwrap();
    let settings = FileConfig::default().settle(from_env.clone());
    assert_eq!(
        settings.server.cors_allow_origin,
        list(&["https://b.example", "https://c.example"])
    );
    let from_flag = flags(&["--cors-allow-origin", "*"]).unwrap().or(from_env);
    let settings = FileConfig::default().settle(from_flag);
    assert_eq!(settings.server.cors_allow_origin, Some(AllowedOrigins::Any));
    let wrong = env(&[("AGENTD_CORS_ALLOW_ORIGIN", "https://a.example/inbox")]).unwrap_err();
    assert!(
        wrong.to_string().contains("AGENTD_CORS_ALLOW_ORIGIN") && wrong.to_string().contains("no path"),
        "{wrong}"
    );
}

#[test]
fn tls_and_auth_settings_merge_field_by_field() {
    let file_text = "[tls]\ncert = \"file-cert\"\nkey = \"file-key\"\n\
                     [auth]\napi_keys_file = \"file.keys\"\nauthenticate_health = true\n";
    let overrides = flags(&["--tls-key", "flag-key", "--authenticate-reflection", "true"])
        .unwrap()
        .or(env(&[("AGENTD_API_KEYS_FILE", "env.keys")]).unwrap());
    let settings = file(file_text).unwrap().settle(overrides);
    assert_eq!(settings.tls.cert, Some("file-cert".into()));
    assert_eq!(settings.tls.key, Some("flag-key".into()));
    assert_eq!(settings.tls.client_ca, None);
    assert_eq!(settings.auth.api_keys_file, Some("env.keys".into()));
    assert!(settings.auth.authenticate_health && settings.auth.authenticate_reflection);
}

#[test]
fn every_source_reads_durations_in_every_unit() {
    for (text, expected) in crate::config::duration::EXAMPLES {
        let from_flag = flags(&["--suspend-ttl", text]).unwrap().server.suspend_ttl;
        let from_env = env(&[("AGENTD_SUSPEND_TTL", text)]).unwrap().server.suspend_ttl;
        let from_file = file(&format!("[server]\nsuspend_ttl = \"{text}\"\n"))
            .unwrap()
            .server
            .suspend_ttl;
        assert_eq!([from_flag, from_env, from_file], [Some(expected); 3], "{text}");
    }
}

#[test]
fn a_bad_duration_names_the_setting_and_the_syntax() {
    let error = file("[server]\nsweep_interval = \"30\"\n").unwrap_err();
    assert!(
        error.contains("sweep_interval") && error.contains(duration::SYNTAX),
        "{error}"
    );

    let error = env(&[("AGENTD_SWEEP_INTERVAL", "soon")]).unwrap_err().to_string();
    assert!(
        error.contains("environment variable AGENTD_SWEEP_INTERVAL") && error.contains(duration::SYNTAX),
        "{error}"
    );

    let error = Flags::try_parse_from(["agentd", "--sweep-interval", "5x"])
        .err()
        .expect("refused")
        .to_string();
    assert!(
        error.contains("--sweep-interval") && error.contains(duration::SYNTAX),
        "{error}"
    );
}

#[test]
fn deprecated_spellings_still_work_and_warn() {
    let (file, warned) =
        warnings(|| file("[server]\nsuspend_ttl_secs = 86400\nlease_ttl_ms = 1500\n").unwrap());
    assert_eq!(file.server.suspend_ttl, Some(Duration::from_secs(86_400)));
    assert_eq!(file.server.lease_ttl, Some(Duration::from_millis(1500)));
    assert!(
        warned.contains("suspend_ttl_secs in [server] is deprecated: write suspend_ttl = \"1d\" instead"),
        "{warned}"
    );
    assert!(warned.contains("write lease_ttl = \"1500ms\""), "{warned}");

    let (flags, warned) = warnings(|| flags(&["--drain-secs", "3", "--recovery-interval-ms", "0"]).unwrap());
    assert_eq!(flags.server.drain_timeout, Some(Duration::from_secs(3)));
    assert_eq!(flags.server.recovery_interval, Some(Duration::ZERO));
    assert!(
        warned.contains("--drain-secs is deprecated: write --drain-timeout 3s instead"),
        "{warned}"
    );

    let (env, warned) = warnings(|| env(&[("AGENTD_LEASE_RENEW_MS", "200")]).unwrap());
    assert_eq!(env.server.lease_renew, Some(Duration::from_millis(200)));
    assert!(
        warned.contains("AGENTD_LEASE_RENEW_MS is deprecated: write AGENTD_LEASE_RENEW=200ms instead"),
        "{warned}"
    );
    assert_eq!(warned.matches("deprecated").count(), 1, "one warning: {warned}");
}

#[test]
fn a_deprecated_spelling_counts_where_its_source_ranks() {
    // The old variable is still a variable: below a flag, above the file.
    let overrides = flags(&["--lease-ttl", "5s"]).unwrap().or(env(&[
        ("AGENTD_LEASE_TTL_MS", "700"),
        ("AGENTD_SUSPEND_TTL_SECS", "60"),
    ])
    .unwrap());
    let settings = file("[server]\nsuspend_ttl = \"1h\"\n")
        .unwrap()
        .settle(overrides);
    assert_eq!(settings.server.lease_ttl, Duration::from_secs(5));
    assert_eq!(settings.server.suspend_ttl, Duration::from_secs(60));
}

#[test]
fn both_spellings_in_one_source_are_refused() {
    let error = file("[server]\nsuspend_ttl = \"1d\"\nsuspend_ttl_secs = 60\n").unwrap_err();
    assert!(
        error.contains("suspend_ttl in [server] and suspend_ttl_secs in [server] are one setting"),
        "{error}"
    );
    let error = flags(&["--drain-timeout", "5s", "--drain-secs", "5"])
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "--drain-timeout and --drain-secs are one setting (--drain-secs is its deprecated spelling): \
         give only --drain-timeout"
    );
    let error = env(&[
        ("AGENTD_SWEEP_INTERVAL", "1m"),
        ("AGENTD_SWEEP_INTERVAL_SECS", "60"),
    ])
    .unwrap_err()
    .to_string();
    assert!(
        error.starts_with("AGENTD_SWEEP_INTERVAL and AGENTD_SWEEP_INTERVAL_SECS"),
        "{error}"
    );
}

#[test]
fn unknown_keys_are_refused() {
    assert!(file("[server]\nlisten_on = \"127.0.0.1:1\"\n").is_err());
    assert!(file("[tls]\ncertificate = \"x\"\n").is_err());
    assert!(file("[auth]\nauthenticate = true\n").is_err());
}

#[test]
fn thread_retention_is_read_from_the_file() {
    let file: FileConfig = toml::from_str("[threads]\nretention = \"7d\"\n").expect("parses");
    let settings = file.settle(Overrides::default());
    assert_eq!(settings.thread_retention, Some(Duration::from_secs(7 * 86_400)));
    for bad in ["soon", "", "30", "0d", "-1d", "99999999999999999999d"] {
        let text = format!("[threads]\nretention = \"{bad}\"\n");
        assert!(toml::from_str::<FileConfig>(&text).is_err(), "{bad:?}");
    }
    let none = FileConfig::default().settle(Overrides::default());
    assert_eq!(none.thread_retention, None);
}

#[test]
fn deprecated_keys_of_agents_tools_and_mcp_servers_still_count() {
    let text = r#"
        [[agents]]
        id = "waiting"
        suspend_ttl_secs = 60

        [[tools]]
        kind = "http"
        name = "lookup"
        url = "http://127.0.0.1:9/"
        timeout_ms = 250

        [[mcp_servers]]
        name = "echo"
        command = "mcp-echo"
        startup_timeout_ms = 1500
    "#;
    let config = file(text).unwrap();
    let agents = crate::agent::AgentRegistry::from_specs(&config.agents).unwrap();
    let waiting = agents.get("waiting").expect("the agent");
    assert_eq!(waiting.suspend_ttl, Some(Duration::from_secs(60)));
    let ToolConfig::Http(http) = &config.tools[0] else {
        panic!("an HTTP tool");
    };
    assert_eq!(http.timeout(), Ok(Duration::from_millis(250)));
    let timeouts = config.mcp_servers[0].timeouts().unwrap();
    assert_eq!(timeouts.startup, Duration::from_millis(1500));
    assert_eq!(timeouts.call, crate::tools::mcp::DEFAULT_CALL_TIMEOUT);

    let both = file(&format!("{text}startup_timeout = \"1s\"\n")).unwrap();
    let error = both.mcp_servers[0].timeouts().unwrap_err();
    assert!(error.contains("one setting"), "{error}");
    let both = file("[[agents]]\nid = \"twice\"\nsuspend_ttl = \"1m\"\nsuspend_ttl_secs = 60\n").unwrap();
    let error = crate::agent::AgentRegistry::from_specs(&both.agents)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        error.contains("suspend_ttl in [[agents]] \"twice\" and suspend_ttl_secs"),
        "{error}"
    );
}
