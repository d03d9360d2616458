//! Real `agentd` processes for the replica tests: replicas on one store with
//! short leases (so that a takeover after a crash happens within about a
//! second), and the calls the tests make to them.

use std::path::Path;
use std::time::Duration;

use agentd::pb::agent_chunk::Chunk;
use agentd::pb::AgentChunk;

use crate::pg::TestSchema;
use crate::process::ServerProcess;
pub(super) use crate::process::{get_run, seqs, start_run, stream_prompt, subscribe};

/// Lease settings of every replica in these tests.
pub(super) const LEASE_TTL: Duration = Duration::from_secs(1);
const LEASE_RENEW: &str = "200ms";
const RECOVERY_INTERVAL: &str = "200ms";

/// A replica is an agentd process; its log lines are prefixed with its name.
pub(super) type Replica = ServerProcess;

impl ServerProcess {
    /// Starts a replica named `name` on `store` (a URL), with its data dir
    /// in `data_dir`, and waits until it listens.
    pub(crate) fn on_store(store: &str, data_dir: &Path, name: &str) -> Self {
        let ttl = agentd::config::duration::short(LEASE_TTL);
        Self::start_labelled(
            Some(name),
            data_dir,
            &["--store", store, "--replica-id", name],
            &[
                ("AGENTD_LEASE_TTL", &ttl),
                ("AGENTD_LEASE_RENEW", LEASE_RENEW),
                ("AGENTD_RECOVERY_INTERVAL", RECOVERY_INTERVAL),
            ],
        )
    }

    /// [`ServerProcess::on_store`] with the default lease settings (10 s
    /// TTL), and the metrics endpoint on an ephemeral port.
    pub(crate) fn on_store_with_default_leases(store: &str, data_dir: &Path, name: &str) -> Self {
        Self::start_labelled(
            Some(name),
            data_dir,
            &[
                "--store",
                store,
                "--replica-id",
                name,
                "--metrics-listen",
                "127.0.0.1:0",
            ],
            &[],
        )
    }
}

/// Two replicas on one fresh PostgreSQL schema. The schema outlives the
/// replicas (dropped last).
pub(super) struct Pair {
    pub a: Replica,
    pub b: Replica,
    _dirs: tempfile::TempDir,
    _schema: TestSchema,
}

impl Pair {
    /// Replicas with short leases (see [`LEASE_TTL`]).
    pub(super) async fn start() -> Self {
        Self::start_with(Replica::on_store).await
    }

    /// Replicas with the default lease settings.
    pub(super) async fn start_with_default_leases() -> Self {
        Self::start_with(Replica::on_store_with_default_leases).await
    }

    async fn start_with(replica: fn(&str, &Path, &str) -> Replica) -> Self {
        let schema = TestSchema::create().await;
        let dirs = tempfile::tempdir().expect("temp dir");
        let url = schema.url();
        let a = replica(&url, &dirs.path().join("a"), "replica-a");
        let b = replica(&url, &dirs.path().join("b"), "replica-b");
        Self {
            a,
            b,
            _dirs: dirs,
            _schema: schema,
        }
    }
}

/// Asserts that `chunks` are seqs `first..` without gap or repeat.
pub(super) fn assert_contiguous(chunks: &[AgentChunk], first: u64) {
    let expected: Vec<u64> = (first..first + chunks.len() as u64).collect();
    assert_eq!(seqs(chunks), expected, "seqs must rise by exactly one");
}

/// Whether the chunk is a `start` of a resumption.
pub(super) fn is_resumed_start(chunk: &AgentChunk) -> bool {
    matches!(&chunk.chunk, Some(Chunk::Start(start)) if start.resumed)
}
