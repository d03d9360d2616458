//! One entry of an agent's `tools` list in `agentd.toml`: a plain tool name
//! (`"ask_user"`) or a table that also says whether every call of the tool
//! waits for approval (`{ name = "human_review", require_approval = true }`)
//! and which rules decide its calls (`approval_rules`).
//! Only the configuration's shape lives here; which names exist is the
//! registry's business.

use serde::Deserialize;

use super::approval_rules::ApprovalRuleSpec;

/// A tool an agent uses, as configured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolEntry {
    /// Just the name: calls run without approval (unless the run asks).
    Name(String),
    /// The name with options.
    Table(ToolTable),
}

/// The table form of a [`ToolEntry`].
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
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
