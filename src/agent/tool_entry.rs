//! One entry of an agent's `tools` list in `agentd.toml`: a plain tool name
//! (`"ask_user"`) or a table that also says whether every call of the tool
//! waits for approval (`{ name = "human_review", require_approval = true }`)
//! and which rules decide its calls (`approval_rules`), when its waiting
//! calls remind (`remind_after`) and what their deadline does
//! (`on_expiry`).
//! Only the configuration's shape lives here; which names exist is the
//! registry's business.

use std::time::Duration;

use serde::Deserialize;

use super::approval_rules::{ApprovalRuleSpec, RuleDecision};
use crate::domain::{OnExpiry, WaitPolicy};

/// A tool an agent uses, as configured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolEntry {
    /// Just the name: calls run without approval (unless the run asks).
    Name(String),
    /// The name with options.
    Table(ToolTable),
}

/// The table form of a [`ToolEntry`].
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ToolTable {
    pub name: String,
    /// Every call of this tool waits for approval before it runs.
    #[serde(default)]
    pub require_approval: bool,
    /// Rules that approve, decline or ask for a call before
    /// `require_approval` is consulted: the first that holds decides.
    #[serde(default)]
    pub approval_rules: Vec<ApprovalRuleSpec>,
    /// When a run waiting on a call of this tool reminds (a `reminded` run
    /// event), counted from when the call started waiting:
    /// `["10m", "1h"]`. Default: never.
    #[serde(default, deserialize_with = "crate::config::duration::deserialize_list")]
    pub remind_after: Vec<Duration>,
    /// What the run's deadline does to a call of this tool still waiting:
    /// `expire` (the default), `decline` or `approve` (approvals only).
    #[serde(default)]
    pub on_expiry: OnExpiry,
}

impl ToolEntry {
    /// A tool by name, without approval.
    pub fn name(name: impl Into<String>) -> Self {
        ToolEntry::Name(name.into())
    }

    /// A tool whose every call waits for approval.
    pub fn with_approval(name: impl Into<String>) -> Self {
        ToolEntry::Table(ToolTable {
            name: name.into(),
            require_approval: true,
            approval_rules: Vec::new(),
            remind_after: Vec::new(),
            on_expiry: OnExpiry::Expire,
        })
    }

    pub fn tool_name(&self) -> &str {
        match self {
            ToolEntry::Name(name) | ToolEntry::Table(ToolTable { name, .. }) => name,
        }
    }

    pub fn require_approval(&self) -> bool {
        match self {
            ToolEntry::Name(_) => false,
            ToolEntry::Table(table) => table.require_approval,
        }
    }

    /// The entry's `remind_after` and `on_expiry`, unless both are the
    /// defaults.
    pub fn wait_policy(&self) -> Option<WaitPolicy> {
        match self {
            ToolEntry::Table(table)
                if !table.remind_after.is_empty() || table.on_expiry != OnExpiry::Expire =>
            {
                Some(WaitPolicy {
                    remind_after: table.remind_after.clone(),
                    on_expiry: table.on_expiry,
                })
            }
            _ => None,
        }
    }

    /// Whether calls of this tool may wait for approval as configured:
    /// every call does, or a rule may ask.
    pub fn may_wait_for_approval(&self) -> bool {
        self.require_approval()
            || self
                .approval_rules()
                .iter()
                .any(|rule| rule.then == RuleDecision::Ask)
    }

    /// The entry's `approval_rules`, as written.
    pub fn approval_rules(&self) -> &[ApprovalRuleSpec] {
        match self {
            ToolEntry::Name(_) => &[],
            ToolEntry::Table(table) => &table.approval_rules,
        }
    }
}

/// A string is a name; a table is read as a [`ToolTable`], its own errors
/// (an unknown key, a rule's unknown `then`) told as they are.
impl<'de> Deserialize<'de> for ToolEntry {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entry;

        impl<'de> serde::de::Visitor<'de> for Entry {
            type Value = ToolEntry;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a tool name, or a table such as { name = \"human_review\", require_approval = true }",
                )
            }

            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<ToolEntry, E> {
                Ok(ToolEntry::name(name))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<ToolEntry, A::Error> {
                ToolTable::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(ToolEntry::Table)
            }
        }

        deserializer.deserialize_any(Entry)
    }
}

impl From<&str> for ToolEntry {
    fn from(name: &str) -> Self {
        ToolEntry::name(name)
    }
}

#[cfg(test)]
mod tests {
    use super::super::RuleDecision;
    use super::*;

    #[derive(Deserialize)]
    struct Agent {
        tools: Vec<ToolEntry>,
    }

    #[test]
    fn tables_take_approval_rules() {
        let agent: Agent = toml::from_str(
            r#"tools = [{ name = "send_email", approval_rules = [
                { when = "args.to.endsWith('@example.com')", then = "approve" },
                { when = "true", then = "decline", reason = "only internal mail" },
            ] }]"#,
        )
        .unwrap();
        let rules = agent.tools[0].approval_rules();
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[0].then, RuleDecision::Approve);
        assert_eq!(rules[0].reason, "");
        assert_eq!(rules[1].then, RuleDecision::Decline);
        assert_eq!(rules[1].reason, "only internal mail");
    }

    #[test]
    fn tables_take_reminders_and_what_the_deadline_does() {
        let agent: Agent = toml::from_str(
            r#"tools = [
                { name = "deploy", require_approval = true, remind_after = ["10m", "1h30m"], on_expiry = "approve" },
                { name = "ask_user", on_expiry = "decline" },
                "human_review",
            ]"#,
        )
        .unwrap();
        let deploy = agent.tools[0].wait_policy().expect("a policy");
        assert_eq!(
            deploy.remind_after,
            [Duration::from_secs(600), Duration::from_secs(5400)]
        );
        assert_eq!(deploy.on_expiry, OnExpiry::Approve);
        assert_eq!(
            agent.tools[1].wait_policy().expect("a policy").on_expiry,
            OnExpiry::Decline
        );
        assert_eq!(agent.tools[2].wait_policy(), None);
        for (bad, says) in [
            (
                r#"on_expiry = "later""#,
                "unknown variant `later`, expected one of `expire`, `decline`, `approve`",
            ),
            (r#"remind_after = ["soon"]"#, "invalid duration \"soon\""),
            (r#"remind_after = ["0s"]"#, "it must be more than zero"),
        ] {
            let error = toml::from_str::<Agent>(&format!(r#"tools = [{{ name = "a", {bad} }}]"#))
                .err()
                .expect("an error");
            assert!(error.to_string().contains(says), "{error}");
        }
    }

    #[test]
    fn names_and_tables_mix() {
        let agent: Agent = toml::from_str(
            r#"tools = ["ask_user", { name = "human_review", require_approval = true }, { name = "x" }]"#,
        )
        .unwrap();
        assert_eq!(
            agent.tools,
            [
                ToolEntry::name("ask_user"),
                ToolEntry::with_approval("human_review"),
                ToolEntry::Table(ToolTable {
                    name: "x".into(),
                    require_approval: false,
                    approval_rules: Vec::new(),
                    remind_after: Vec::new(),
                    on_expiry: OnExpiry::Expire,
                }),
            ]
        );
        assert!(agent.tools[1].require_approval());
        assert_eq!(agent.tools[1].tool_name(), "human_review");
    }

    #[test]
    fn unknown_keys_are_rejected_with_a_readable_message() {
        let error = toml::from_str::<Agent>(r#"tools = [{ name = "a", approve = true }]"#)
            .err()
            .expect("an error");
        assert!(error.to_string().contains("unknown field `approve`"), "{error}");
        let error = toml::from_str::<Agent>("tools = [5]").err().expect("an error");
        assert!(error.to_string().contains("a tool name, or a table"), "{error}");
        let error = toml::from_str::<Agent>(
            r#"tools = [{ name = "a", approval_rules = [{ when = "true", then = "allow" }] }]"#,
        )
        .err()
        .expect("an error");
        assert!(error.to_string().contains("unknown variant `allow`"), "{error}");
    }
}
