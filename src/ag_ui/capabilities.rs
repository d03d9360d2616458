//! An agent's `AgentCapabilities`, as `@ag-ui/core` 1.0 defines them: its
//! identity, streaming transport, its tools (and frontend tools accepted),
//! human in the loop by interrupts, approvals with edits included.

use axum::extract::{Path, State};
use axum::Json;
use serde_json::{json, Value};

use super::error::ApiError;
use crate::agent::Agent;
use crate::runtime::{Runtime, RuntimeError};

fn capabilities(agent: &Agent) -> Value {
    let tools: Vec<Value> = agent
        .tool_specs()
        .map(|spec| json!({"name": spec.name, "description": spec.description, "parameters": spec.input_schema}))
        .collect();
    json!({
        "identity": {"name": agent.id, "type": "agentd", "description": agent.description},
        "transport": {"streaming": true},
        "tools": {"supported": true, "items": tools, "parallelCalls": true, "clientProvided": true},
        "state": {"memory": true},
        "execution": {"maxIterations": agent.max_steps},
        "humanInTheLoop": {
            "supported": true,
            "approvals": true,
            "interrupts": true,
            "approveWithEdits": true,
        },
    })
}

fn of(runtime: &Runtime, agent_id: &str) -> Result<Json<Value>, ApiError> {
    let agent = runtime
        .agents()
        .get(agent_id)
        .ok_or_else(|| RuntimeError::AgentNotFound(agent_id.to_owned()))?;
    Ok(Json(capabilities(agent)))
}

pub(super) async fn of_default(State(runtime): State<Runtime>) -> Result<Json<Value>, ApiError> {
    of(&runtime, "")
}

pub(super) async fn of_agent(
    State(runtime): State<Runtime>,
    Path(agent_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    of(&runtime, &agent_id)
}
