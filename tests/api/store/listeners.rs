//! Announcements on PostgreSQL: a server NOTIFYs the others of a write
//! only while another server listens (is registered in `listeners`); a
//! lone server sends none. The test hears the schema's channel on a
//! connection of its own, which is not registered, and knows that it has
//! heard everything a write sent once its own marker, sent after the write
//! returned, arrives: notifications come in commit order.

use std::future::Future;
use std::time::{Duration, Instant};

use agentd::domain::{Chunk, Timestamp};
use agentd::store::{PostgresStore, RunStore};
use tokio::sync::mpsc;
use tokio_postgres::{AsyncMessage, NoTls};

use super::events_from;
use super::leases::running_run;
use crate::pg::TestSchema;

const GIVE_UP: Duration = Duration::from_secs(10);
const MARKER: &str = "marker";

/// Waits until `check` holds.
async fn eventually<Fut: Future<Output = bool>>(what: &str, check: impl Fn() -> Fut) {
    let started = Instant::now();
    while !check().await {
        assert!(started.elapsed() < GIVE_UP, "{what}: not within {GIVE_UP:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A connection that LISTENs on `schema`'s channel, and what it hears.
struct Ear {
    client: tokio_postgres::Client,
    channel: String,
    heard: mpsc::UnboundedReceiver<String>,
}

impl Ear {
    async fn open(schema: &TestSchema) -> Self {
        let (client, mut connection) = tokio_postgres::connect(&schema.url(), NoTls)
            .await
            .expect("connect the test's listener");
        let (tell, heard) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(message) = std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                if let Ok(AsyncMessage::Notification(notification)) = message {
                    let _ = tell.send(notification.payload().to_owned());
                }
            }
        });
        let channel = format!("agentd_runs_{}", schema.name());
        client
            .batch_execute(&format!("LISTEN \"{channel}\""))
            .await
            .expect("LISTEN");
        Self {
            client,
            channel,
            heard,
        }
    }

    /// Everything heard up to a marker sent now.
    async fn heard_so_far(&mut self) -> Vec<String> {
        self.client
            .execute("SELECT pg_notify($1, $2)", &[&self.channel, &MARKER])
            .await
            .expect("send the marker");
        let mut heard = Vec::new();
        loop {
            let payload = tokio::time::timeout(GIVE_UP, self.heard.recv())
                .await
                .expect("the marker comes back")
                .expect("the listening connection lives");
            if payload == MARKER {
                return heard;
            }
            heard.push(payload);
        }
    }

    async fn listeners(&self) -> i64 {
        self.client
            .query_one("SELECT count(*) FROM listeners", &[])
            .await
            .expect("count the listeners")
            .get(0)
    }
}

fn open(schema: &TestSchema) -> PostgresStore {
    PostgresStore::open(&schema.url()).expect("open postgres")
}

fn text(first_seq: u64) -> Vec<agentd::domain::Event> {
    events_from(first_seq, vec![Chunk::TextDelta { text: "token".into() }])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set AGENTD_TEST_POSTGRES_URL; .ci/run runs it"]
async fn a_write_is_announced_only_while_another_server_listens() {
    let schema = TestSchema::create().await;
    let mut ear = Ear::open(&schema).await;
    let writer = open(&schema);
    eventually("the writer registers as a listener", || async {
        ear.listeners().await == 1
    })
    .await;

    let far = Timestamp(Timestamp::now().0 + 3_600_000_000);
    let run = running_run("replica-a", far);
    writer.create_run(&run, &[]).await.expect("create");
    let mut version = run.version();
    let mut seq = run.last_seq();

    // Alone: its writes stand, and nobody is told.
    writer
        .append_events(run.id, version, None, &text(seq + 1))
        .await
        .expect("append alone");
    (version, seq) = (version + 1, seq + 1);
    assert_eq!(writer.load_run(run.id).await.expect("load").last_seq(), seq);
    assert_eq!(
        ear.heard_so_far().await,
        Vec::<String>::new(),
        "a lone server notifies nobody"
    );

    // Another server listens: each write is announced, once.
    let other = open(&schema);
    eventually("the second server registers", || async {
        ear.listeners().await == 2
    })
    .await;
    writer
        .append_events(run.id, version, None, &text(seq + 1))
        .await
        .expect("append with another server listening");
    let heard = ear.heard_so_far().await;
    assert_eq!(heard.len(), 1, "one notification per write: {heard:?}");
    assert!(
        heard[0].contains(&run.id.to_string()),
        "it names the run: {heard:?}"
    );
    drop(other);
}
