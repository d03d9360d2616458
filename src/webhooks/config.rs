//! `[[webhooks]]` in `agentd.toml`: where run events are pushed, signed
//! with which secret, which of them, and how patiently. Configured by the
//! operator only (no request names a URL). Resolved once at start-up into
//! a [`Webhook`]: `${NAME}` references in `url` and `secret` read the
//! environment, and anything unusable (a bad secret, an unknown event
//! type, agent or tenant, a URL that is not http(s)) stops the start with
//! an error naming the webhook and the key, never the secret.

use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use serde::Deserialize;

use super::payload::{event_type, parse_event_type};
use super::signature::Secret;
use crate::domain::{RunEvent, RunEventKind, Tenant};
use crate::runtime::RetrySchedule;
use crate::tools::expand_env;

/// How long one attempt may take when not configured (the specification
/// recommends 15 to 30 s).
pub(super) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15);
/// Attempts in flight at once per webhook when not configured.
pub(super) const DEFAULT_CONCURRENCY: usize = 8;
/// The most attempts in flight at once per webhook.
pub(super) const MAX_CONCURRENCY: usize = 1024;

/// A `[[webhooks]]` entry as written.
#[derive(Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WebhookConfig {
    /// Names the webhook in the store (its place in the run events) and
    /// in metrics; default: the URL's host, port and path.
    #[serde(default)]
    pub name: Option<String>,
    /// `http://` or `https://`; may reference the environment as `${NAME}`.
    pub url: String,
    /// `whsec_<base64>`, usually `${VARIABLE}`.
    pub secret: String,
    /// Event types to send (`run.started` ... `run.expired`); default all.
    #[serde(default)]
    pub events: Option<Vec<String>>,
    /// Only events of these agents' runs; default every agent.
    #[serde(default)]
    pub agents: Option<Vec<String>>,
    /// Only this tenant's events; default every tenant's.
    #[serde(default)]
    pub tenant: Option<String>,
    /// How long one attempt may take, response included.
    #[serde(default, deserialize_with = "crate::config::duration::deserialize_option")]
    pub timeout: Option<Duration>,
    /// Attempts in flight at once.
    #[serde(default)]
    pub concurrency: Option<usize>,
    /// The delay before the first retry; each next one doubles it.
    #[serde(default, deserialize_with = "crate::config::duration::deserialize_option")]
    pub retry_backoff: Option<Duration>,
    /// The longest delay between two attempts.
    #[serde(default, deserialize_with = "crate::config::duration::deserialize_option")]
    pub retry_max_backoff: Option<Duration>,
    /// How long after an event its delivery is tried; then it has failed.
    #[serde(default, deserialize_with = "crate::config::duration::deserialize_option")]
    pub retry_for: Option<Duration>,
}

impl fmt::Debug for WebhookConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookConfig")
            .field("name", &self.name)
            .field("events", &self.events)
            .field("agents", &self.agents)
            .field("tenant", &self.tenant)
            .finish_non_exhaustive()
    }
}

/// A webhook that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("webhooks[{index}]: {reason}")]
pub struct WebhookConfigError {
    pub index: usize,
    pub reason: String,
}

/// A webhook ready to deliver.
#[derive(Clone, Debug, PartialEq)]
pub struct Webhook {
    pub name: String,
    pub url: reqwest::Url,
    pub secret: Secret,
    /// Never empty.
    pub events: BTreeSet<RunEventKind>,
    pub agents: Option<BTreeSet<String>>,
    pub tenant: Option<Tenant>,
    pub timeout: Duration,
    pub concurrency: usize,
    pub retry: RetrySchedule,
}

/// What the configured webhooks may name.
pub struct Known<'a> {
    /// The agents served.
    pub agents: &'a BTreeSet<String>,
    /// The tenants with API keys; `None` when the server is open (every
    /// caller is the default tenant).
    pub tenants: Option<&'a BTreeSet<Tenant>>,
}

impl Webhook {
    /// Resolves every entry; names must be unique.
    pub fn resolve_all(
        configs: &[WebhookConfig],
        known: &Known<'_>,
    ) -> Result<Vec<Self>, WebhookConfigError> {
        let mut webhooks: Vec<Webhook> = Vec::with_capacity(configs.len());
        for (index, config) in configs.iter().enumerate() {
            let error = |reason: String| WebhookConfigError { index, reason };
            let webhook = Self::resolve(config, known).map_err(error)?;
            if let Some(taken) = webhooks.iter().position(|other| other.name == webhook.name) {
                return Err(error(format!(
                    "the name {:?} is webhooks[{taken}]'s too: give each webhook its own name",
                    webhook.name
                )));
            }
            webhooks.push(webhook);
        }
        Ok(webhooks)
    }

    fn resolve(config: &WebhookConfig, known: &Known<'_>) -> Result<Self, String> {
        let url = expand_env(&config.url).map_err(|reason| format!("url: {reason}"))?;
        let url = reqwest::Url::parse(&url).map_err(|error| format!("url: not a URL ({error})"))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(format!(
                "url: a {}: URL; webhooks are sent to http:// or https:// URLs",
                url.scheme()
            ));
        }
        let secret = expand_env(&config.secret).map_err(|reason| format!("secret: {reason}"))?;
        let secret = Secret::parse(&secret).map_err(|reason| format!("secret: {reason}"))?;
        let name = match &config.name {
            Some(name) if name.trim().is_empty() => return Err("name: must not be empty".into()),
            Some(name) => name.clone(),
            None => default_name(&url),
        };
        Ok(Self {
            name,
            url,
            secret,
            events: events(config.events.as_deref())?,
            agents: agents(config.agents.as_deref(), known.agents)?,
            tenant: tenant(config.tenant.as_deref(), known.tenants)?,
            timeout: match config.timeout {
                Some(Duration::ZERO) => return Err("timeout: must be more than zero".into()),
                Some(timeout) => timeout,
                None => DEFAULT_TIMEOUT,
            },
            concurrency: match config.concurrency {
                None => DEFAULT_CONCURRENCY,
                Some(n) if (1..=MAX_CONCURRENCY).contains(&n) => n,
                Some(n) => return Err(format!("concurrency: {n} is not 1 to {MAX_CONCURRENCY}")),
            },
            retry: retry(config)?,
        })
    }

    /// Whether the webhook sends `event`.
    pub fn wants(&self, event: &RunEvent) -> bool {
        self.events.contains(&event.kind)
            && self
                .agents
                .as_ref()
                .is_none_or(|agents| agents.contains(&event.agent_id))
            && self.tenant.as_ref().is_none_or(|tenant| *tenant == event.tenant)
    }
}

/// The URL's host, port and path: no query or credentials, which may hold
/// secrets.
fn default_name(url: &reqwest::Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}{}", url.path()),
        None => format!("{host}{}", url.path()),
    }
}

fn events(names: Option<&[String]>) -> Result<BTreeSet<RunEventKind>, String> {
    let Some(names) = names else {
        return Ok(RunEventKind::ALL.into_iter().collect());
    };
    if names.is_empty() {
        return Err("events: empty, so nothing would be sent; leave it out to send every event".into());
    }
    names
        .iter()
        .map(|name| {
            parse_event_type(name).ok_or_else(|| {
                let known: Vec<&str> = RunEventKind::ALL.into_iter().map(event_type).collect();
                format!("events: {name:?} is not an event type ({})", known.join(", "))
            })
        })
        .collect()
}

fn agents(names: Option<&[String]>, served: &BTreeSet<String>) -> Result<Option<BTreeSet<String>>, String> {
    let Some(names) = names else {
        return Ok(None);
    };
    if names.is_empty() {
        return Err("agents: empty, so nothing would be sent; leave it out for every agent".into());
    }
    if let Some(unknown) = names.iter().find(|name| !served.contains(*name)) {
        let served: Vec<&str> = served.iter().map(String::as_str).collect();
        return Err(format!(
            "agents: no agent {unknown:?} is served (agents: {})",
            served.join(", ")
        ));
    }
    Ok(Some(names.iter().cloned().collect()))
}

fn tenant(name: Option<&str>, tenants: Option<&BTreeSet<Tenant>>) -> Result<Option<Tenant>, String> {
    let Some(name) = name else {
        return Ok(None);
    };
    let tenant = Tenant::new(name).map_err(|error| format!("tenant: {error}"))?;
    match tenants {
        Some(tenants) if !tenants.contains(&tenant) => {
            let known: Vec<&str> = tenants.iter().map(Tenant::as_str).collect();
            Err(format!(
                "tenant: {name:?} has no API keys (tenants: {})",
                known.join(", ")
            ))
        }
        None if tenant != Tenant::default() => Err(format!(
            "tenant: {name:?}, but no API keys are configured, so every run is tenant {:?}'s",
            Tenant::default().as_str()
        )),
        _ => Ok(Some(tenant)),
    }
}

fn retry(config: &WebhookConfig) -> Result<RetrySchedule, String> {
    let defaults = RetrySchedule::default();
    let schedule = RetrySchedule {
        backoff: config.retry_backoff.unwrap_or(defaults.backoff),
        max_backoff: config.retry_max_backoff.unwrap_or(defaults.max_backoff),
        retry_for: config.retry_for.unwrap_or(defaults.retry_for),
    };
    if schedule.backoff.is_zero() {
        return Err("retry_backoff: must be more than zero".into());
    }
    if schedule.max_backoff < schedule.backoff {
        return Err(format!(
            "retry_max_backoff ({}) is shorter than retry_backoff ({})",
            crate::config::duration::short(schedule.max_backoff),
            crate::config::duration::short(schedule.backoff)
        ));
    }
    Ok(schedule)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

    fn config(toml_text: &str) -> WebhookConfig {
        toml::from_str(toml_text).expect("a webhook table")
    }

    fn resolve(configs: &[WebhookConfig]) -> Result<Vec<Webhook>, String> {
        let agents = BTreeSet::from(["assistant".to_owned(), "planner".to_owned()]);
        let tenants = BTreeSet::from([Tenant::new("acme").unwrap()]);
        let known = Known {
            agents: &agents,
            tenants: Some(&tenants),
        };
        Webhook::resolve_all(configs, &known).map_err(|error| error.to_string())
    }

    fn error_of(toml_text: &str) -> String {
        resolve(&[config(toml_text)]).expect_err("refused")
    }

    #[test]
    fn the_issue_s_example_resolves_with_its_defaults() {
        let webhooks = resolve(&[config(&format!(
            r#"
            url = "https://ops.example.com/agentd-events?token=abc"
            secret = "{SECRET}"
            events = ["run.suspended", "run.expired"]
            agents = ["assistant"]
            tenant = "acme"
            "#
        ))])
        .expect("resolved");
        let webhook = &webhooks[0];
        assert_eq!(
            webhook.name, "ops.example.com/agentd-events",
            "no query in the name"
        );
        assert_eq!(
            webhook.events,
            BTreeSet::from([RunEventKind::Suspended, RunEventKind::Expired])
        );
        assert_eq!(webhook.timeout, DEFAULT_TIMEOUT);
        assert_eq!(webhook.concurrency, DEFAULT_CONCURRENCY);
        assert_eq!(webhook.retry, RetrySchedule::default());
        assert_eq!(webhook.tenant, Some(Tenant::new("acme").unwrap()));

        let every = resolve(&[config(&format!(
            "url = \"http://127.0.0.1:9000/hook\"\nsecret = \"{SECRET}\"\nretry_for = \"0s\""
        ))])
        .expect("resolved");
        assert_eq!(every[0].events.len(), RunEventKind::ALL.len());
        assert_eq!(every[0].name, "127.0.0.1:9000/hook");
        assert_eq!(every[0].retry.retry_for, Duration::ZERO);
        assert!(!format!("{:?}", every[0]).contains("MfKQ9r8"));
    }

    #[test]
    fn the_secret_and_url_read_the_environment() {
        // CARGO_PKG_NAME is set for every test: "agentd", not a secret.
        let error = error_of("url = \"https://x.example/${CARGO_PKG_NAME}\"\nsecret = \"${CARGO_PKG_NAME}\"");
        assert!(
            error.contains("webhooks[0]: secret: a Standard Webhooks secret starts with whsec_"),
            "{error}"
        );
        let error = error_of(&format!(
            "url = \"${{AGENTD_NO_SUCH_VARIABLE}}\"\nsecret = \"{SECRET}\""
        ));
        assert!(
            error.contains("url: the environment variable AGENTD_NO_SUCH_VARIABLE is not set"),
            "{error}"
        );
    }

    #[test]
    fn bad_entries_are_refused_with_the_key_that_is_wrong() {
        let with = |rest: &str| format!("url = \"https://x.example/h\"\nsecret = \"{SECRET}\"\n{rest}");
        let cases = [
            (
                format!("url = \"ftp://x.example/h\"\nsecret = \"{SECRET}\""),
                "webhooks[0]: url: a ftp: URL; webhooks are sent to http:// or https:// URLs",
            ),
            (
                format!("url = \"not a url\"\nsecret = \"{SECRET}\""),
                "url: not a URL",
            ),
            (
                "url = \"https://x.example/h\"\nsecret = \"whsec_c2hvcnQ=\"".to_owned(),
                "secret: the secret is 5 bytes once decoded",
            ),
            (
                with("events = [\"run.paused\"]"),
                "events: \"run.paused\" is not an event type (run.started, run.suspended",
            ),
            (with("events = []"), "events: empty"),
            (
                with("agents = [\"nobody\"]"),
                "agents: no agent \"nobody\" is served (agents: assistant, planner)",
            ),
            (
                with("tenant = \"other\""),
                "tenant: \"other\" has no API keys (tenants: acme)",
            ),
            (with("timeout = \"0s\""), "timeout: must be more than zero"),
            (with("timeout = \"soon\""), "invalid duration"),
            (with("concurrency = 0"), "concurrency: 0 is not 1 to 1024"),
            (
                with("retry_backoff = \"0s\""),
                "retry_backoff: must be more than zero",
            ),
            (
                with("retry_backoff = \"1m\"\nretry_max_backoff = \"10s\""),
                "retry_max_backoff (10s) is shorter than retry_backoff (1m)",
            ),
            (with("name = \" \""), "name: must not be empty"),
        ];
        for (toml_text, expected) in cases {
            let error = match toml::from_str::<WebhookConfig>(&toml_text) {
                Ok(config) => resolve(&[config]).expect_err(&toml_text),
                Err(error) => error.to_string(),
            };
            assert!(
                error.contains(expected),
                "{toml_text}:\n{error}\nexpected {expected}"
            );
            assert!(!error.contains("MfKQ9r8"), "{error}");
        }
        let unknown = toml::from_str::<WebhookConfig>(&with("retries = 3")).unwrap_err();
        assert!(
            unknown.to_string().contains("unknown field `retries`"),
            "{unknown}"
        );
    }

    #[test]
    fn names_are_unique_and_a_tenant_needs_keys() {
        let entry = config(&format!("url = \"https://x.example/h\"\nsecret = \"{SECRET}\""));
        let error = resolve(&[entry.clone(), entry.clone()]).unwrap_err();
        assert!(
            error.contains("webhooks[1]: the name \"x.example/h\" is webhooks[0]'s too"),
            "{error}"
        );
        let named = WebhookConfig {
            name: Some("second".into()),
            ..entry.clone()
        };
        assert_eq!(resolve(&[entry.clone(), named]).expect("two names").len(), 2);

        let agents = BTreeSet::from(["assistant".to_owned()]);
        let open = Known {
            agents: &agents,
            tenants: None,
        };
        let acme = WebhookConfig {
            tenant: Some("acme".into()),
            ..entry.clone()
        };
        let error = Webhook::resolve_all(&[acme], &open).unwrap_err().to_string();
        assert!(
            error.contains("no API keys are configured, so every run is tenant \"default\"'s"),
            "{error}"
        );
        let default = WebhookConfig {
            tenant: Some("default".into()),
            ..entry
        };
        assert!(Webhook::resolve_all(&[default], &open).is_ok());
    }
}
