//! The store as a whole, as a process stands with it: whether other
//! servers share it, this process's registration among them, and a probe
//! that it still accepts writes.

use async_trait::async_trait;

use super::{Sharing, StoreError};

/// How this process is present in the store.
#[async_trait]
pub trait Presence: Send + Sync + 'static {
    /// Whether several servers share this store, fixed for its life.
    /// [`Sharing::Owned`]: every change happens in this process, so the
    /// runs left running at startup are its own to take over, and its live
    /// runs carry every chunk to its subscribers. [`Sharing::Shared`]: the
    /// store's feed carries, as they happen, the changes the other servers
    /// make, and leases decide who executes a run.
    fn sharing(&self) -> Sharing;

    /// Tells the store that this process executes runs as the lease owner
    /// `replica_id` for as long as it lives, so that the other replicas
    /// sharing the store see at once when it is gone (PostgreSQL: a
    /// session lock that ends with the process's connection). `InUse` if a
    /// live process registered the same id; calling it again with the same
    /// id changes nothing. The running runs leased to `replica_id` when it
    /// registers were left by an earlier process under that id, which is
    /// gone: the store then counts them as orphans at once, whatever their
    /// leases say. A store that one process owns has nothing to do.
    async fn register_replica(&self, replica_id: &str) -> Result<(), StoreError>;

    /// A cheap round trip that fails while the store cannot be reached or
    /// refuses writes (a full disk, a read-only database); the server's
    /// health check calls it periodically. A durable backend writes a row
    /// of its own for it, since a read alone still answers on a full disk.
    async fn ping(&self) -> Result<(), StoreError>;
}
