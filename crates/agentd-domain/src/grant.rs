//! Grants: a person's "always allow this here". Approving a call with
//! `remember` makes a grant for its tool in a scope (the run, or the run's
//! thread), for a while or as long as the scope lives; later calls of that
//! tool in the scope that would wait for approval are approved by the
//! grant instead (a decision with source `GRANT`). A grant covers calls
//! that start waiting after it is made: calls already pending still need
//! their own answers. Plain data.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::{RunId, Tenant, ThreadId, Timestamp};

/// Where a grant holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrantScope {
    /// The run whose approval made it.
    Run,
    /// Every run of that run's thread.
    Thread,
}

impl GrantScope {
    /// The lowercase name stores keep.
    pub fn as_str(self) -> &'static str {
        match self {
            GrantScope::Run => "run",
            GrantScope::Thread => "thread",
        }
    }

    /// Parses [`GrantScope::as_str`] back.
    pub fn parse(text: &str) -> Option<Self> {
        [GrantScope::Run, GrantScope::Thread]
            .into_iter()
            .find(|scope| scope.as_str() == text)
    }
}

/// What an approval asks to remember: a scope, and for how long (`None`:
/// as long as the scope lives).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Remember {
    pub scope: GrantScope,
    pub duration: Option<Duration>,
}

impl Remember {
    /// What an approval written in JSON asks to remember (the A2A, AG-UI
    /// and MCP surfaces): `"remember": "run" | "thread"` and, with it,
    /// `"rememberFor": "8h"` (a duration as agentd.toml writes one, or as
    /// protobuf's JSON does, `"28800s"`). `None` without `remember`; or the
    /// key at fault and why.
    pub fn from_json(approval: &Map<String, Value>) -> Result<Option<Self>, (&'static str, &'static str)> {
        let scope = match approval.get("remember") {
            None | Some(Value::Null) => None,
            Some(scope) => Some(
                scope
                    .as_str()
                    .and_then(GrantScope::parse)
                    .ok_or(("remember", "must be \"run\" or \"thread\""))?,
            ),
        };
        let duration = match approval.get("rememberFor") {
            None | Some(Value::Null) => None,
            Some(duration) => Some(
                duration
                    .as_str()
                    .and_then(|text| humantime::parse_duration(text.trim()).ok())
                    .filter(|duration| !duration.is_zero())
                    .ok_or((
                        "rememberFor",
                        "must be a duration more than zero, such as \"30m\" or \"8h\"",
                    ))?,
            ),
        };
        match (scope, duration) {
            (Some(scope), duration) => Ok(Some(Self { scope, duration })),
            (None, Some(_)) => Err(("rememberFor", "comes with remember: \"run\" or \"thread\"")),
            (None, None) => Ok(None),
        }
    }
}

/// One grant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// A UUIDv7.
    pub id: String,
    pub tenant: Tenant,
    pub tool_name: String,
    pub scope: GrantScope,
    /// The run whose approval made it (the scope of a `Run` grant).
    pub run_id: RunId,
    /// That run's thread (the scope of a `Thread` grant); `None` for a run
    /// outside any thread.
    pub thread_id: Option<ThreadId>,
    /// Who approved (the decider's name).
    pub granted_by: String,
    pub created_at: Timestamp,
    /// `None`: as long as its scope lives.
    pub expires_at: Option<Timestamp>,
}

impl Grant {
    /// The grant `remember` asks for, made by `granted_by` approving a call
    /// of `tool_name` in run `run_id` (of thread `thread_id`) at `now`.
    pub fn new(
        (tenant, run_id, thread_id): (&Tenant, RunId, Option<&ThreadId>),
        tool_name: &str,
        remember: Remember,
        granted_by: &str,
        now: Timestamp,
    ) -> Self {
        Self {
            id: Uuid::now_v7().hyphenated().to_string(),
            tenant: tenant.clone(),
            tool_name: tool_name.to_owned(),
            scope: remember.scope,
            run_id,
            thread_id: thread_id.cloned(),
            granted_by: granted_by.to_owned(),
            created_at: now,
            expires_at: remember.duration.map(|duration| now.after(duration)),
        }
    }

    /// Whether the grant still holds at `now`.
    pub fn in_force(&self, now: Timestamp) -> bool {
        self.expires_at.is_none_or(|expires_at| now < expires_at)
    }

    /// Whether the grant approves a call of `tool` in run `run_id` of
    /// thread `thread_id` at `now`.
    pub fn covers(&self, tool: &str, run_id: RunId, thread_id: Option<&ThreadId>, now: Timestamp) -> bool {
        let in_scope = match self.scope {
            GrantScope::Run => self.run_id == run_id,
            GrantScope::Thread => self.thread_id.is_some() && self.thread_id.as_ref() == thread_id,
        };
        in_scope && self.tool_name == tool && self.in_force(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_an_approval_in_json_asks_to_remember() {
        let read = |value: Value| Remember::from_json(value.as_object().expect("an object"));
        assert_eq!(read(serde_json::json!({"approved": true})), Ok(None));
        assert_eq!(
            read(serde_json::json!({"remember": "thread"})),
            Ok(Some(Remember {
                scope: GrantScope::Thread,
                duration: None
            }))
        );
        for written in ["8h", "28800s"] {
            assert_eq!(
                read(serde_json::json!({"remember": "run", "rememberFor": written})),
                Ok(Some(Remember {
                    scope: GrantScope::Run,
                    duration: Some(Duration::from_secs(8 * 3600))
                }))
            );
        }
        assert_eq!(
            read(serde_json::json!({"remember": "forever"})).unwrap_err().0,
            "remember"
        );
        assert_eq!(
            read(serde_json::json!({"remember": true})).unwrap_err().0,
            "remember"
        );
        for duration in [
            serde_json::json!("0s"),
            serde_json::json!("soon"),
            serde_json::json!(60),
        ] {
            let refused = read(serde_json::json!({"remember": "run", "rememberFor": duration}));
            assert_eq!(refused.unwrap_err().0, "rememberFor");
        }
        assert_eq!(
            read(serde_json::json!({"rememberFor": "1h"})),
            Err(("rememberFor", "comes with remember: \"run\" or \"thread\""))
        );
    }

    #[test]
    fn a_grant_covers_its_tool_in_its_scope_until_it_expires() {
        let tenant = Tenant::default();
        let thread = ThreadId::new("t-1").unwrap();
        let (run, other) = (RunId::new(), RunId::new());
        let now = Timestamp(1_000_000);
        let remember = Remember {
            scope: GrantScope::Thread,
            duration: Some(Duration::from_secs(60)),
        };
        let grant = Grant::new((&tenant, run, Some(&thread)), "send_email", remember, "ops", now);
        assert!(grant.covers("send_email", other, Some(&thread), now));
        assert!(!grant.covers("delete_file", other, Some(&thread), now));
        assert!(!grant.covers("send_email", other, None, now));
        assert!(!grant.covers(
            "send_email",
            run,
            Some(&thread),
            now.after(Duration::from_secs(60))
        ));

        let run_only = Grant::new(
            (&tenant, run, Some(&thread)),
            "send_email",
            Remember {
                scope: GrantScope::Run,
                duration: None,
            },
            "ops",
            now,
        );
        assert!(run_only.covers(
            "send_email",
            run,
            Some(&thread),
            now.after(Duration::from_secs(1 << 30))
        ));
        assert!(!run_only.covers("send_email", other, Some(&thread), now));
        assert_eq!(GrantScope::parse("thread"), Some(GrantScope::Thread));
    }
}
