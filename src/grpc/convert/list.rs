//! ListRuns request and response <-> the runtime's page of runs, and the
//! page token: `r1.` followed by the last run id of the page. Clients treat
//! the token as opaque; the prefix lets a later version change its format
//! and still recognise (and reject) old tokens by name.

use crate::domain::{RunId, RunStatus};
use crate::pb;
use crate::runtime::{ListRuns, RunPage, RuntimeError};

use super::invalid;
use super::run::run_to_proto;

/// The version prefix of every page token this server issues.
const TOKEN_PREFIX: &str = "r1.";

fn page_token(last: RunId) -> String {
    format!("{TOKEN_PREFIX}{last}")
}

fn parse_page_token(token: &str) -> Result<Option<RunId>, RuntimeError> {
    super::parse_page_token(token, TOKEN_PREFIX, "ListRuns", |id| id.parse().ok())
}

/// A `RunStatus` filter: UNSPECIFIED lists every status.
fn status_filter(status: i32) -> Result<Option<RunStatus>, RuntimeError> {
    Ok(match pb::RunStatus::try_from(status) {
        Ok(pb::RunStatus::Unspecified) => None,
        Ok(pb::RunStatus::Running) => Some(RunStatus::Running),
        Ok(pb::RunStatus::Suspended) => Some(RunStatus::Suspended),
        Ok(pb::RunStatus::Completed) => Some(RunStatus::Completed),
        Ok(pb::RunStatus::Failed) => Some(RunStatus::Failed),
        Ok(pb::RunStatus::Cancelled) => Some(RunStatus::Cancelled),
        Ok(pb::RunStatus::Expired) => Some(RunStatus::Expired),
        Err(_) => return Err(invalid("status", format!("unknown run status {status}"))),
    })
}

pub(crate) fn list_runs_request(request: pb::ListRunsRequest) -> Result<ListRuns, RuntimeError> {
    let pb::ListRunsRequest {
        status,
        agent_id,
        page_size,
        page_token,
    } = request;
    Ok(ListRuns {
        status: status_filter(status)?,
        agent_id: (!agent_id.is_empty()).then_some(agent_id),
        updated_after: None,
        page_size,
        before: parse_page_token(&page_token)?,
    })
}

pub(crate) fn run_page_to_proto(page: &RunPage) -> pb::ListRunsResponse {
    pb::ListRunsResponse {
        runs: page.runs.iter().map(run_to_proto).collect(),
        next_page_token: page.next.map(page_token).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_tokens_round_trip() {
        let id = RunId::new();
        assert_eq!(parse_page_token(&page_token(id)).ok(), Some(Some(id)));
        assert_eq!(parse_page_token("").ok(), Some(None));
    }

    #[test]
    fn malformed_page_tokens_are_refused() {
        let id = RunId::new();
        for token in [
            id.to_string(),
            format!("r2.{id}"),
            "r1.".to_owned(),
            "r1.not-a-uuid".to_owned(),
            format!("{}x", page_token(id)),
        ] {
            super::super::assert_refused_page_token(&token, parse_page_token(&token));
        }
    }

    #[test]
    fn every_status_filters_and_unknown_is_refused() {
        assert_eq!(status_filter(0).ok(), Some(None));
        for status in RunStatus::ALL {
            let proto = super::super::run::status_to_proto(status) as i32;
            assert_eq!(status_filter(proto).ok(), Some(Some(status)));
        }
        assert!(matches!(
            status_filter(99),
            Err(RuntimeError::InvalidRequest { field: "status", .. })
        ));
    }
}
