//! `bench cycle --store postgres://...`: a fresh schema for agentd and one
//! for the ceiling in the database the URL names (both dropped afterwards),
//! the URLs that select them, and what the bench reads about PostgreSQL
//! from the outside: the CPU of the backends serving a server (by their
//! `application_name`, from /proc) and, through [`wire`], the statements
//! and round trips a server sends.

pub(super) mod wire;

use std::fmt::Write as _;
use std::str::FromStr;

use anyhow::{bail, Context};
use tokio_postgres::config::Host;
use tokio_postgres::{Client, Config, NoTls};

use super::process::cpu_seconds;

/// Where PostgreSQL listens, and who connects.
#[derive(Clone, Debug)]
pub(super) struct Database {
    host: String,
    port: u16,
    user: String,
    password: Option<String>,
    dbname: String,
}

impl Database {
    pub(super) fn parse(url: &str) -> anyhow::Result<Self> {
        let config = Config::from_str(url).with_context(|| format!("invalid PostgreSQL URL {url:?}"))?;
        let host = match config.get_hosts() {
            [Host::Tcp(host)] => host.clone(),
            [] => "localhost".to_owned(),
            _ => {
                bail!("the bench needs one TCP host in the PostgreSQL URL (a Unix socket cannot be relayed)")
            }
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let user = config
            .get_user()
            .context("the PostgreSQL URL names no user")?
            .to_owned();
        let password = config
            .get_password()
            .map(|p| String::from_utf8_lossy(p).into_owned());
        let dbname = config.get_dbname().unwrap_or(&user).to_owned();
        Ok(Self {
            host,
            port,
            user,
            password,
            dbname,
        })
    }

    pub(super) fn address(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// The URL of this database through `address` (host:port), with
    /// `schema` first on the search path and `application` as the
    /// connections' name.
    pub(super) fn url(&self, address: &str, schema: &str, application: &str) -> String {
        let mut url = format!("postgres://{}", encode(&self.user));
        if let Some(password) = &self.password {
            let _ = write!(url, ":{}", encode(password));
        }
        let _ = write!(
            url,
            "@{address}/{}?options={}&application_name={}",
            encode(&self.dbname),
            encode(&format!("-csearch_path={schema}")),
            encode(application),
        );
        url
    }

    pub(super) async fn connect(&self) -> anyhow::Result<Client> {
        let url = self.url(&self.address(), "public", "agentd-bench");
        let (client, connection) = tokio_postgres::connect(&url, NoTls)
            .await
            .with_context(|| format!("connecting to PostgreSQL at {}", self.address()))?;
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::warn!(%error, "the bench's PostgreSQL connection ended");
            }
        });
        // DROP SCHEMA ... CASCADE lists what it drops as notices.
        client.batch_execute("SET client_min_messages = warning").await?;
        Ok(client)
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// Schemas made for one bench run, dropped by [`Schemas::drop_all`].
pub(super) struct Schemas {
    client: Client,
    names: Vec<String>,
}

impl Schemas {
    pub(super) async fn new(database: &Database) -> anyhow::Result<Self> {
        Ok(Self {
            client: database.connect().await?,
            names: Vec::new(),
        })
    }

    /// Creates a fresh schema for `label`; its name.
    pub(super) async fn create(&mut self, label: &str) -> anyhow::Result<String> {
        let name = format!(
            "agentd_bench_{label}_{}",
            &uuid::Uuid::now_v7().simple().to_string()[20..]
        );
        self.client
            .batch_execute(&format!("CREATE SCHEMA {name}"))
            .await
            .with_context(|| format!("creating schema {name}"))?;
        self.names.push(name.clone());
        Ok(name)
    }

    /// The database's `synchronous_commit`, which agentd's store and the
    /// ceiling both commit with.
    pub(super) async fn synchronous_commit(&self) -> anyhow::Result<String> {
        let row = self.client.query_one("SHOW synchronous_commit", &[]).await?;
        Ok(row.get(0))
    }

    /// CPU seconds the backends named `application` have used so far.
    pub(super) async fn backend_cpu_seconds(&self, application: &str) -> anyhow::Result<f64> {
        let rows = self
            .client
            .query(
                "SELECT pid FROM pg_stat_activity WHERE application_name = $1",
                &[&application],
            )
            .await?;
        Ok(rows
            .iter()
            .filter_map(|row| u32::try_from(row.get::<_, i32>(0)).ok())
            .filter_map(cpu_seconds)
            .sum())
    }

    pub(super) async fn drop_all(self) -> anyhow::Result<()> {
        for name in &self.names {
            self.client
                .batch_execute(&format!("DROP SCHEMA {name} CASCADE"))
                .await
                .with_context(|| format!("dropping schema {name}"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_select_the_schema_and_name_the_connections() {
        let database = Database::parse("postgres://bench%20user:p%40ss@db.example:6543/agents").unwrap();
        let url = database.url("127.0.0.1:7000", "agentd_bench_x", "agentd-bench-agentd");
        assert_eq!(
            url,
            "postgres://bench%20user:p%40ss@127.0.0.1:7000/agents?options=-csearch_path%3Dagentd_bench_x\
             &application_name=agentd-bench-agentd"
        );
        let config = Config::from_str(&url).unwrap();
        assert_eq!(config.get_user(), Some("bench user"));
        assert_eq!(config.get_password(), Some(&b"p@ss"[..]));
        assert_eq!(config.get_options(), Some("-csearch_path=agentd_bench_x"));
        assert_eq!(config.get_application_name(), Some("agentd-bench-agentd"));
        assert_eq!(database.address(), "db.example:6543");
    }

    #[test]
    fn a_unix_socket_cannot_be_relayed() {
        assert!(Database::parse("postgres://u@%2Frun%2Fpostgresql/db").is_err());
    }
}
