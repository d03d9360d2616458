//! The `cycle` and `ceiling` scenarios: the ask_user cycle at each asked
//! concurrency, against agentd and then, with the same parameters, against
//! the ceiling service; the report divides the one by the other.

use std::net::SocketAddr;

use anyhow::Context;

use std::time::Duration;

use super::args::{CeilingArgs, CeilingOptions, CycleArgs, LoadArgs};
use super::load::{self, Measured, Meter, Reading};
use super::postgres::wire::Relay;
use super::postgres::{Database, Schemas};
use super::process::{ScratchDir, ServerProcess};
use super::report::{self, CeilingConfig, CycleReport, Level};

/// A server under test: started here (and its data folder), or remote.
struct Server {
    addr: SocketAddr,
    process: Option<(ServerProcess, ScratchDir)>,
    /// The `application_name` of its PostgreSQL connections.
    application: Option<String>,
}

impl Server {
    async fn agentd(target: Option<SocketAddr>, store: Option<StoreUrl>) -> anyhow::Result<Self> {
        if let Some(addr) = target {
            return Ok(Self {
                addr,
                process: None,
                application: None,
            });
        }
        let dir = ScratchDir::new("agentd")?;
        let process = ServerProcess::agentd(dir.path(), store.as_ref().map(|s| s.url.as_str())).await?;
        Ok(Self {
            addr: process.addr,
            process: Some((process, dir)),
            application: store.map(|s| s.application),
        })
    }

    async fn ceiling(options: &CeilingOptions, store: Option<StoreUrl>) -> anyhow::Result<Self> {
        let dir = ScratchDir::new("ceiling")?;
        let process = ServerProcess::ceiling(
            dir.path(),
            options.ceiling_sync.as_str(),
            options.ceiling_naive,
            store.as_ref().map(|s| s.url.as_str()),
        )
        .await?;
        Ok(Self {
            addr: process.addr,
            process: Some((process, dir)),
            application: store.map(|s| s.application),
        })
    }

    async fn stop(self) {
        if let Some((process, _dir)) = self.process {
            process.stop().await;
        }
    }
}

/// Reads a spawned server's CPU, and on PostgreSQL its backends' CPU and
/// what it sent through the relay.
struct ServerMeter<'a> {
    server: &'a Server,
    database: Option<&'a Schemas>,
    relay: Option<&'a Relay>,
}

impl Meter for ServerMeter<'_> {
    async fn read(&self) -> anyhow::Result<Reading> {
        let server_cpu = self.server.process.as_ref().and_then(|(p, _)| p.cpu_seconds());
        let postgres_cpu = match (self.database, &self.server.application) {
            (Some(database), Some(application)) => Some(database.backend_cpu_seconds(application).await?),
            _ => None,
        };
        let counts = self.relay.map(Relay::counts);
        Ok(Reading {
            server_cpu,
            postgres_cpu,
            statements: counts.map(|c| c.statements),
            round_trips: counts.map(|c| c.round_trips),
        })
    }
}

fn report_of(agentd: String, store: String, ceiling: Option<CeilingConfig>, load: &LoadArgs) -> CycleReport {
    CycleReport {
        scenario: "cycle",
        agentd,
        store,
        ceiling,
        warmup_secs: load.warmup.as_secs_f64(),
        duration_secs: load.duration.as_secs_f64(),
        rounds: 1,
        per_connection: load.per_connection,
        levels: Vec::new(),
    }
}

/// `agentd bench cycle`.
pub(super) async fn run(args: CycleArgs) -> anyhow::Result<()> {
    let report = match &args.store {
        None => measure(&args, None).await?,
        Some(url) => {
            let database = Database::parse(url)?;
            let mut schemas = Schemas::new(&database).await?;
            let measured = on_postgres(&args, &database, &mut schemas).await;
            let dropped = schemas.drop_all().await;
            let report = measured?;
            dropped?;
            report
        }
    };
    report::print(&report, args.target.json, report::cycle_table)
}

/// A server's PostgreSQL store, and the name its connections carry.
struct StoreUrl {
    url: String,
    application: String,
}

/// The PostgreSQL database a cycle bench runs on: its schemas, the
/// schema of each of the two servers, and how it commits.
struct OnPostgres<'a> {
    database: &'a Database,
    schemas: &'a Schemas,
    agentd_schema: String,
    ceiling_schema: String,
    synchronous_commit: String,
}

impl OnPostgres<'_> {
    /// The store URL and connection name of `label`'s server, through
    /// `address` (the database's or a relay's).
    fn store(&self, label: &str, address: &str, counted: bool) -> StoreUrl {
        let schema = match label {
            "agentd" => &self.agentd_schema,
            _ => &self.ceiling_schema,
        };
        let application = match counted {
            false => format!("agentd-bench-{label}"),
            true => format!("agentd-bench-{label}-counted"),
        };
        StoreUrl {
            url: self.database.url(address, schema, &application),
            application,
        }
    }
}

async fn on_postgres(
    args: &CycleArgs,
    database: &Database,
    schemas: &mut Schemas,
) -> anyhow::Result<CycleReport> {
    let agentd_schema = schemas.create("agentd").await?;
    let ceiling_schema = schemas.create("ceiling").await?;
    let synchronous_commit = schemas.synchronous_commit().await?;
    let postgres = OnPostgres {
        database,
        schemas,
        agentd_schema,
        ceiling_schema,
        synchronous_commit,
    };
    let mut report = measure(args, Some(&postgres)).await?;
    count(args, &postgres, &mut report).await?;
    Ok(report)
}

/// Each level against agentd and then the ceiling, with what a cycle cost
/// each of them.
async fn measure(args: &CycleArgs, postgres: Option<&OnPostgres<'_>>) -> anyhow::Result<CycleReport> {
    let store = |label| postgres.map(|p| p.store(label, &p.database.address(), false));
    let agentd = Server::agentd(args.target.target, store("agentd")).await?;
    let ceiling = match args.no_ceiling {
        true => None,
        false => Some(Server::ceiling(&args.ceiling, store("ceiling")).await?),
    };
    let name = match args.target.target {
        Some(addr) => addr.to_string(),
        None => "spawned".to_owned(),
    };
    let (store, ceiling_config) = match (postgres, args.target.target) {
        (Some(postgres), _) => (
            format!(
                "postgres (synchronous_commit={}, pools of {} connections)",
                postgres.synchronous_commit,
                crate::store::POSTGRES_POOL_SIZE
            ),
            CeilingConfig::postgres(&postgres.synchronous_commit),
        ),
        // A running server's store is whatever it was started with.
        (None, Some(_)) => ("the target's own".to_owned(), (&args.ceiling).into()),
        (None, None) => ("sqlite".to_owned(), (&args.ceiling).into()),
    };
    let mut report = report_of(
        name,
        store,
        ceiling.is_some().then_some(ceiling_config),
        &args.load,
    );
    report.rounds = args.rounds;
    let database = postgres.map(|p| p.schemas);
    let meter = |server| ServerMeter {
        server,
        database,
        relay: None,
    };
    let round = LoadArgs {
        duration: args.load.duration / args.rounds,
        ..args.load.clone()
    };
    for &concurrency in &args.load.concurrency {
        let mut ours: Option<Measured> = None;
        let mut theirs: Option<Measured> = None;
        let mut round_ratios = Vec::new();
        for _ in 0..args.rounds {
            let our_round =
                load::measure("agentd", agentd.addr, concurrency, &round, &meter(&agentd)).await?;
            if let Some(server) = &ceiling {
                let their_round =
                    load::measure("ceiling", server.addr, concurrency, &round, &meter(server)).await?;
                round_ratios.extend(ratio(&our_round, &their_round));
                together(&mut theirs, their_round);
            }
            together(&mut ours, our_round);
        }
        let ours = ours.context("no round was measured")?;
        let ratio = theirs.as_ref().and_then(|theirs| ratio(&ours, theirs));
        if args.rounds == 1 {
            round_ratios.clear();
        }
        let median_round_ratio = median(&round_ratios);
        let spawned = agentd.process.is_some();
        let result = ours.result();
        report.levels.push(Level {
            concurrency: result.concurrency,
            agentd: Some(result),
            agentd_per_cycle: spawned.then(|| ours.per_cycle()),
            ceiling_per_cycle: theirs.as_ref().map(Measured::per_cycle),
            ceiling: theirs.as_ref().map(Measured::result),
            ratio,
            round_ratios,
            median_round_ratio,
        });
    }
    agentd.stop().await;
    if let Some(ceiling) = ceiling {
        ceiling.stop().await;
    }
    Ok(report)
}

/// agentd's cycles/s ÷ the ceiling's, when the ceiling did any.
fn ratio(ours: &Measured, theirs: &Measured) -> Option<f64> {
    let theirs = theirs.cycles_per_sec();
    (theirs > 0.0).then(|| ours.cycles_per_sec() / theirs)
}

/// The middle value (the mean of the two middle ones for an even count).
fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    match sorted.len() {
        0 => None,
        n if n % 2 == 1 => Some(sorted[middle]),
        _ => Some((sorted[middle - 1] + sorted[middle]) / 2.0),
    }
}

/// Adds a round to what the level measured so far.
fn together(total: &mut Option<Measured>, round: Measured) {
    match total {
        Some(total) => total.add(round),
        None => *total = Some(round),
    }
}

/// How long each level of the counting pass runs.
const COUNTING: LoadArgs = LoadArgs {
    concurrency: Vec::new(),
    duration: Duration::from_secs(2),
    warmup: Duration::from_millis(500),
    per_connection: 16,
};

/// The counting pass: a second agentd and ceiling on the same schemas,
/// connected through a relay that counts their statements and round
/// trips, for a short while at each level.
async fn count(args: &CycleArgs, postgres: &OnPostgres<'_>, report: &mut CycleReport) -> anyhow::Result<()> {
    let relay = Relay::start(postgres.database.address()).await?;
    let through = relay.addr.to_string();
    let load = LoadArgs {
        per_connection: args.load.per_connection,
        ..COUNTING
    };
    for (label, server) in [("agentd", true), ("ceiling", !args.no_ceiling)] {
        if !server {
            continue;
        }
        let store = Some(postgres.store(label, &through, true));
        let server = match label {
            "agentd" => Server::agentd(None, store).await?,
            _ => Server::ceiling(&args.ceiling, store).await?,
        };
        let meter = ServerMeter {
            server: &server,
            database: None,
            relay: Some(&relay),
        };
        for level in &mut report.levels {
            let (_, counted) = load::drive_metered(
                &format!("{label} (counting)"),
                server.addr,
                level.concurrency,
                &load,
                &meter,
            )
            .await?;
            let cost = match label {
                "agentd" => &mut level.agentd_per_cycle,
                _ => &mut level.ceiling_per_cycle,
            };
            *cost = Some(cost.unwrap_or_default().or(counted));
        }
        server.stop().await;
    }
    Ok(())
}

/// `agentd bench ceiling`: the ceiling service alone.
pub(super) async fn run_ceiling_only(args: CeilingArgs) -> anyhow::Result<()> {
    let ceiling = Server::ceiling(&args.ceiling, None).await?;
    let mut report = report_of(
        "none".to_owned(),
        "sqlite".to_owned(),
        Some((&args.ceiling).into()),
        &args.load,
    );
    report.scenario = "ceiling";
    for &concurrency in &args.load.concurrency {
        let theirs = load::drive("ceiling", ceiling.addr, concurrency, &args.load).await?;
        report.levels.push(Level {
            concurrency: theirs.concurrency,
            agentd: None,
            ceiling: Some(theirs),
            ratio: None,
            round_ratios: Vec::new(),
            median_round_ratio: None,
            agentd_per_cycle: None,
            ceiling_per_cycle: None,
        });
    }
    report::print(&report, args.json, report::cycle_table)
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn the_median_of_the_rounds_is_their_middle_value() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[0.3]), Some(0.3));
        assert_eq!(median(&[0.27, 0.28, 0.25, 0.60, 0.24]), Some(0.27));
        assert_eq!(median(&[0.2, 0.4, 0.3, 0.1]), Some(0.25));
    }
}
