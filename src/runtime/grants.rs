//! Grants (see [`crate::domain::Grant`]): made by a Resume whose approval
//! asks to `remember` (stored right after its claim, before the run goes
//! on), used by an execution whose step leaves calls waiting for approval
//! (the calls a grant in force covers are approved by it, each recorded as
//! a decision with source `GRANT`), listed with their run or thread, and
//! revoked. A grant that cannot be stored or read only means a person is
//! asked again: never that a call runs without an approval.

use crate::domain::{
    Answer, AnswerError, Answered, Decision, DecisionOutcome, DecisionSource, Grant, GrantScope, PendingCall,
    PendingCalls, Remember, RunRecord, Tenant, ThreadId, Timestamp, ToolCall, Waiting,
};
use crate::runtime::{Inner, Runtime, RuntimeError};

/// The calls of a step's suspension that grants approve, and the calls
/// that still wait.
pub(in crate::runtime) struct Granted {
    pub approved: Vec<ToolCall>,
    pub waiting: Vec<PendingCall>,
}

impl Inner {
    /// Stores the grants a Resume's approvals asked for, once its claim is
    /// committed. One that cannot be stored is logged and dropped: its
    /// approval stands, and the next call is asked about.
    pub(in crate::runtime) async fn store_grants(&self, grants: &[Grant]) {
        for grant in grants {
            match self.store.grants.put_grant(grant).await {
                Ok(()) => tracing::info!(
                    grant_id = %grant.id,
                    tool = %grant.tool_name,
                    scope = grant.scope.as_str(),
                    granted_by = %grant.granted_by,
                    "grant made"
                ),
                Err(error) => tracing::warn!(%error, tool = %grant.tool_name, "a grant could not be stored"),
            }
        }
    }

    /// Of `pending` (the calls a step of `run` left waiting), those waiting
    /// for approval that a grant in force covers are approved, each
    /// recorded in `run` as the grant's decision; the rest still wait. The
    /// grants are read only when a call waits for approval; `unstored` are
    /// grants made and not stored yet (by the Resume whose continuation
    /// this is).
    pub(in crate::runtime) async fn apply_grants(
        &self,
        run: &mut RunRecord,
        pending: PendingCalls,
        unstored: &[Grant],
    ) -> Granted {
        let waiting = pending.into_vec();
        let wants_approval = |call: &PendingCall| matches!(call.waiting, Waiting::Approval);
        if !waiting.iter().any(wants_approval) {
            return Granted {
                approved: Vec::new(),
                waiting,
            };
        }
        let thread = run.thread.as_ref().map(|link| link.id.clone());
        let grants = match self
            .store
            .grants
            .grants(&run.tenant, Some(run.id), thread.as_ref())
            .await
        {
            Ok(mut grants) => {
                grants.extend_from_slice(unstored);
                grants
            }
            Err(error) => {
                tracing::warn!(%error, "the grants could not be read: the calls wait for approval");
                Vec::new()
            }
        };
        let now = Timestamp::now();
        let mut granted = Granted {
            approved: Vec::new(),
            waiting: Vec::new(),
        };
        for call in waiting {
            let grant = wants_approval(&call)
                .then(|| {
                    grants
                        .iter()
                        .find(|grant| grant.covers(&call.call.name, run.id, thread.as_ref(), now))
                })
                .flatten();
            match grant {
                Some(grant) => {
                    let decision = Decision {
                        tool_call_id: call.call.id.clone(),
                        outcome: DecisionOutcome::Approved,
                        decided_by: grant.granted_by.clone(),
                        source: DecisionSource::Grant,
                        rule: String::new(),
                        time: now,
                    };
                    crate::runtime::lifecycle_log::decided(run, std::slice::from_ref(&decision));
                    run.state.decisions.push(decision);
                    granted.approved.push(call.call);
                }
                None => granted.waiting.push(call),
            }
        }
        granted
    }
}

/// The grant `remember` asks for with `answered`, an answer to a call of
/// `run` by `granted_by`: none without `remember`; refused unless the
/// answer approves, and, for a thread's grant, unless the run is on a
/// thread.
pub(in crate::runtime) fn grant_asked(
    run: &RunRecord,
    answered: &Answered,
    remember: Option<Remember>,
    granted_by: &str,
) -> Result<Option<Grant>, AnswerError> {
    let Some(remember) = remember else {
        return Ok(None);
    };
    if !matches!(answered.record.answer, Answer::Approval { approved: true, .. }) {
        return Err(AnswerError::new(
            "approval.remember",
            "remember comes with approved = true: a declined call is not remembered",
        ));
    }
    let thread = run.thread.as_ref().map(|link| &link.id);
    if remember.scope == GrantScope::Thread && thread.is_none() {
        return Err(AnswerError::new(
            "approval.remember",
            "the run is on no thread, so an approval is remembered in the run only (GRANT_SCOPE_RUN, \"run\")",
        ));
    }
    let call = &run.pending()[answered.index].call;
    Ok(Some(Grant::new(
        (&run.tenant, run.id, thread),
        &call.name,
        remember,
        granted_by,
        answered.record.answered_at,
    )))
}

impl Runtime {
    /// `tenant`'s grants in force in `run` (scope `Run`) or, with `thread`,
    /// in that thread (scope `Thread`).
    pub(in crate::runtime) async fn grants_in_force(
        &self,
        tenant: &Tenant,
        run: Option<&RunRecord>,
        thread: Option<&ThreadId>,
    ) -> Result<Vec<Grant>, RuntimeError> {
        let now = Timestamp::now();
        let grants = self
            .inner
            .store
            .grants
            .grants(tenant, run.map(|run| run.id), thread)
            .await?;
        Ok(grants.into_iter().filter(|grant| grant.in_force(now)).collect())
    }

    /// Ends `tenant`'s grant `id`; another tenant's is not found.
    pub(in crate::runtime) async fn revoke(&self, tenant: &Tenant, id: &str) -> Result<(), RuntimeError> {
        if self.inner.store.grants.delete_grant(tenant, id).await? {
            tracing::info!(%tenant, grant_id = id, "grant revoked");
            Ok(())
        } else {
            Err(RuntimeError::GrantNotFound)
        }
    }
}
