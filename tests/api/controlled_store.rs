//! A SQLite store that a test controls: its writes of existing runs wait
//! while it is held (and are counted), and every write (a new run's too)
//! fails while it refuses, as a store on a full or broken disk does; the
//! health probe fails then too. The store itself is real; only the timing
//! and the failures are the test's.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentd::agent::{AgentRegistry, AgentSpec};
use agentd::runtime::{Runtime, RuntimeConfig};
use agentd::store::{Layered, Operation, SqliteStore, Store, StoreError, StoreHook};
use tokio::sync::watch;

use crate::helpers::TestServer;

/// A SQLite store behind the [`Control`] a test holds; it derefs to the
/// control.
pub(crate) struct ControlledStore(Arc<Layered<Control>>);

impl std::ops::Deref for ControlledStore {
    type Target = Control;

    fn deref(&self) -> &Control {
        self.0.hook()
    }
}

/// What a test controls of its store.
pub(crate) struct Control {
    held: watch::Sender<bool>,
    writes: AtomicUsize,
    refusal: Mutex<Option<StoreError>>,
}

impl ControlledStore {
    /// A server with the default agents on a fresh controlled store, and
    /// the folder the store is in.
    pub(crate) async fn serve(config: RuntimeConfig) -> (TestServer, Arc<Self>, tempfile::TempDir) {
        let temp = tempfile::tempdir().expect("temp dir");
        let sqlite = SqliteStore::open(temp.path().join("agentd.sqlite3")).expect("store");
        let control = Control {
            held: watch::channel(false).0,
            writes: AtomicUsize::new(0),
            refusal: Mutex::new(None),
        };
        let store = Arc::new(Layered::new(Arc::new(sqlite), control));
        let agents = AgentRegistry::from_specs(&[AgentSpec::assistant()]).expect("agents");
        let runtime = Runtime::new(agents, Arc::clone(&store) as Arc<dyn Store>, config);
        let server = TestServer::serve(runtime).await;
        (server, Arc::new(Self(store)), temp)
    }
}

impl Control {
    /// Holds writes of existing runs (`true`) or lets them through.
    pub(crate) fn hold(&self, held: bool) {
        self.held.send_replace(held);
    }

    /// From now on every write fails with `refusal` (`None`: none does).
    pub(crate) fn refuse(&self, refusal: Option<StoreError>) {
        *self.refusal.lock().unwrap() = refusal;
    }

    fn refused(&self) -> Result<(), StoreError> {
        match self.refusal.lock().unwrap().clone() {
            Some(refusal) => Err(refusal),
            None => Ok(()),
        }
    }

    /// Waits while held, counts the write, then fails it if refusing.
    async fn pass(&self) -> Result<(), StoreError> {
        let mut held = self.held.subscribe();
        // The sender lives in `self`, so the wait cannot fail.
        let _ = held.wait_for(|held| !held).await;
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.refused()
    }

    /// Waits until `writes` writes of existing runs are waiting or done.
    pub(crate) async fn wait_for_writes(&self, writes: usize) {
        let waiting = async {
            while self.writes.load(Ordering::SeqCst) + self.held.receiver_count() < writes {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), waiting)
            .await
            .expect("the writes reached the store");
    }
}

impl StoreHook for Control {
    /// Writes of existing runs wait while held and are counted; every
    /// write, and the health probe, fails while refusing.
    async fn around<T: Send>(
        &self,
        operation: Operation,
        work: impl Future<Output = Result<T, StoreError>> + Send,
    ) -> Result<T, StoreError> {
        {
            match operation.name {
                "commit" | "append_events" => self.pass().await?,
                "ping" => self.refused()?,
                _ if operation.is_write() => self.refused()?,
                _ => {}
            }
            work.await
        }
    }
}
