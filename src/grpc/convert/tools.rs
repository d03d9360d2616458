//! `ToolDefinition` (client-executed tools a run declares) -> the domain's.
//! The definitions are checked by the runtime, so that library users get
//! the same checks; this only converts.

use crate::domain::{any_object, ToolDefinition};
use crate::pb;

use super::value::struct_to_json;

/// The run's tools; an unset input schema accepts any object.
pub(super) fn tool_definitions(tools: Vec<pb::ToolDefinition>) -> Vec<ToolDefinition> {
    tools
        .into_iter()
        .map(|tool| {
            let pb::ToolDefinition {
                name,
                description,
                input_schema,
                require_approval,
            } = tool;
            ToolDefinition {
                name,
                description,
                input_schema: input_schema.as_ref().map_or_else(any_object, struct_to_json),
                require_approval,
            }
        })
        .collect()
}
