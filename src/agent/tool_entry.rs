//! One entry of an agent's `tools` list in `agentd.toml`: a plain tool name
//! (`"ask_user"`) or a table that also says whether every call of the tool
//! waits for approval (`{ name = "human_review", require_approval = true }`).
//! Only the configuration's shape lives here; which names exist is the
//! registry's business.

use serde::Deserialize;

/// A tool an agent uses, as configured.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(
    untagged,
    expecting = "a tool name, or a table such as { name = \"human_review\", require_approval = true }"
)]
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
}

impl From<&str> for ToolEntry {
    fn from(name: &str) -> Self {
        ToolEntry::name(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Agent {
        tools: Vec<ToolEntry>,
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
                    require_approval: false
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
        assert!(error.to_string().contains("a tool name, or a table"), "{error}");
    }
}
