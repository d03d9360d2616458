//! Grants -> their proto messages.

use crate::domain::{Grant, GrantScope};
use crate::pb;

use super::value::timestamp;

pub(super) fn grant_to_proto(grant: &Grant) -> pb::Grant {
    pb::Grant {
        grant_id: grant.id.clone(),
        tool_name: grant.tool_name.clone(),
        scope: scope_to_proto(grant.scope) as i32,
        granted_by: grant.granted_by.clone(),
        expires_at: grant.expires_at.map(timestamp),
    }
}

pub(crate) fn grants_to_proto(grants: &[Grant]) -> Vec<pb::Grant> {
    grants.iter().map(grant_to_proto).collect()
}

fn scope_to_proto(scope: GrantScope) -> pb::GrantScope {
    match scope {
        GrantScope::Run => pb::GrantScope::Run,
        GrantScope::Thread => pb::GrantScope::Thread,
    }
}
