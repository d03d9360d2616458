//! Drives the ask_user cycle at a fixed number in flight for a warm-up and
//! a measured period, against any server that speaks `agentd.v1`, and sums
//! up what the workers saw.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::args::LoadArgs;
use super::client::{self, Client};
use super::progress;
use super::stats::{rate, Errors, Latency, LatencySummary};

/// What one load level measured.
#[derive(Clone, Debug, Serialize)]
pub(super) struct LoadResult {
    pub concurrency: usize,
    pub connections: usize,
    /// Cycles begun after the warm-up and completed.
    pub cycles: u64,
    /// From the end of the warm-up to the last of those cycles' end.
    pub seconds: f64,
    pub cycles_per_sec: f64,
    /// StreamAgent sent -> finish{STOP} of the Resume received.
    pub cycle: LatencySummary,
    /// StreamAgent sent -> finish{SUSPENDED} received.
    pub start_leg: LatencySummary,
    /// Resume sent -> finish{STOP} received.
    pub resume_leg: LatencySummary,
    /// Every failure, warm-up included.
    pub errors: Errors,
}

#[derive(Default)]
struct Tally {
    cycle: Latency,
    start: Latency,
    resume: Latency,
    errors: Errors,
    last_end: Option<Instant>,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.cycle.add(&other.cycle);
        self.start.add(&other.start);
        self.resume.add(&other.resume);
        self.errors.add(other.errors);
        self.last_end = self.last_end.max(other.last_end);
    }
}

/// HTTP/2 connections for `concurrency` clients, `per_connection` each.
pub(super) fn connections(concurrency: usize, per_connection: u64) -> usize {
    let per = usize::try_from(per_connection).unwrap_or(usize::MAX).max(1);
    concurrency.div_ceil(per).max(1)
}

/// What a [`Meter`] reads about the server under load: totals so far.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Reading {
    /// CPU seconds of the server process.
    pub server_cpu: Option<f64>,
    /// CPU seconds of the PostgreSQL backends serving it.
    pub postgres_cpu: Option<f64>,
    /// SQL statements and round trips it sent to PostgreSQL.
    pub statements: Option<u64>,
    pub round_trips: Option<u64>,
}

impl Reading {
    /// What was added to the totals between `first` and `self`.
    fn since(self, first: Reading) -> Reading {
        Reading {
            server_cpu: self.server_cpu.zip(first.server_cpu).map(|(b, a)| b - a),
            postgres_cpu: self.postgres_cpu.zip(first.postgres_cpu).map(|(b, a)| b - a),
            statements: self
                .statements
                .zip(first.statements)
                .map(|(b, a)| b.saturating_sub(a)),
            round_trips: self
                .round_trips
                .zip(first.round_trips)
                .map(|(b, a)| b.saturating_sub(a)),
        }
    }

    /// Two periods' readings together (a figure one lacks is lacking).
    fn plus(self, other: Reading) -> Reading {
        Reading {
            server_cpu: self.server_cpu.zip(other.server_cpu).map(|(a, b)| a + b),
            postgres_cpu: self.postgres_cpu.zip(other.postgres_cpu).map(|(a, b)| a + b),
            statements: self.statements.zip(other.statements).map(|(a, b)| a + b),
            round_trips: self.round_trips.zip(other.round_trips).map(|(a, b)| a + b),
        }
    }
}

/// Reads totals about the server under load, at the start and the end of
/// the measured period.
pub(super) trait Meter: Sync {
    fn read(&self) -> impl std::future::Future<Output = anyhow::Result<Reading>> + Send;
}

/// No reading at all.
pub(super) struct Unmetered;

impl Meter for Unmetered {
    async fn read(&self) -> anyhow::Result<Reading> {
        Ok(Reading::default())
    }
}

/// What a [`Meter`] read over the measured period, per cycle.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub(super) struct PerCycle {
    pub server_cpu_ms: Option<f64>,
    pub postgres_cpu_ms: Option<f64>,
    pub statements: Option<f64>,
    pub round_trips: Option<f64>,
}

impl PerCycle {
    /// `used` over the measured periods, divided among `cycles`.
    fn of(used: Reading, cycles: f64) -> Self {
        let per = |total: Option<f64>, scale: f64| total.filter(|_| cycles > 0.0).map(|t| t * scale / cycles);
        let count = |n: Option<u64>| n.map(|n| n as f64);
        Self {
            server_cpu_ms: per(used.server_cpu, 1000.0),
            postgres_cpu_ms: per(used.postgres_cpu, 1000.0),
            statements: per(count(used.statements), 1.0),
            round_trips: per(count(used.round_trips), 1.0),
        }
    }

    /// These figures, with those `other` has where these have none.
    pub(super) fn or(self, other: Self) -> Self {
        Self {
            server_cpu_ms: self.server_cpu_ms.or(other.server_cpu_ms),
            postgres_cpu_ms: self.postgres_cpu_ms.or(other.postgres_cpu_ms),
            statements: self.statements.or(other.statements),
            round_trips: self.round_trips.or(other.round_trips),
        }
    }
}

/// Runs cycles against `addr` with `concurrency` in flight.
pub(super) async fn drive(
    label: &str,
    addr: SocketAddr,
    concurrency: usize,
    load: &LoadArgs,
) -> anyhow::Result<LoadResult> {
    Ok(drive_metered(label, addr, concurrency, load, &Unmetered).await?.0)
}

/// [`drive`], with what `meter` read over the measured period, per cycle.
pub(super) async fn drive_metered(
    label: &str,
    addr: SocketAddr,
    concurrency: usize,
    load: &LoadArgs,
    meter: &impl Meter,
) -> anyhow::Result<(LoadResult, PerCycle)> {
    let measured = measure(label, addr, concurrency, load, meter).await?;
    Ok((measured.result(), measured.per_cycle()))
}

/// What one measured period, or several added together, saw at one level.
pub(super) struct Measured {
    concurrency: usize,
    connections: usize,
    tally: Tally,
    /// From the end of the warm-up to the last measured cycle's end.
    elapsed: Duration,
    /// Measured time, as asked for.
    duration: Duration,
    /// What the meter read over the measured period.
    used: Reading,
}

impl Measured {
    /// The periods of `self` and `other` (at the same level) as one.
    pub(super) fn add(&mut self, other: Measured) {
        self.tally.add(other.tally);
        self.elapsed += other.elapsed;
        self.duration += other.duration;
        self.used = self.used.plus(other.used);
    }

    pub(super) fn cycles_per_sec(&self) -> f64 {
        rate(self.tally.cycle.count(), self.elapsed)
    }

    pub(super) fn result(&self) -> LoadResult {
        let cycles = self.tally.cycle.count();
        LoadResult {
            concurrency: self.concurrency,
            connections: self.connections,
            cycles,
            seconds: self.elapsed.as_secs_f64(),
            cycles_per_sec: self.cycles_per_sec(),
            cycle: self.tally.cycle.summary(),
            start_leg: self.tally.start.summary(),
            resume_leg: self.tally.resume.summary(),
            errors: self.tally.errors.clone(),
        }
    }

    /// What the meter read, per cycle: the readings span the measured
    /// time as asked for, so they are divided by the cycles done at the
    /// measured rate in that time.
    pub(super) fn per_cycle(&self) -> PerCycle {
        PerCycle::of(self.used, self.cycles_per_sec() * self.duration.as_secs_f64())
    }
}

/// Runs cycles against `addr` with `concurrency` in flight for a warm-up
/// and a measured period, reading `meter` at the start and the end of the
/// measured one.
pub(super) async fn measure(
    label: &str,
    addr: SocketAddr,
    concurrency: usize,
    load: &LoadArgs,
    meter: &impl Meter,
) -> anyhow::Result<Measured> {
    let concurrency = concurrency.max(1);
    let connections = connections(concurrency, load.per_connection);
    let clients = client::connect(addr, connections).await?;
    let began = Instant::now();
    let measure_from = began + load.warmup;
    let until = measure_from + load.duration;
    let done = Arc::new(AtomicU64::new(0));

    let workers: Vec<_> = (0..concurrency)
        .map(|index| {
            let client = clients[index % connections].clone();
            tokio::spawn(worker(client, measure_from, until, Arc::clone(&done)))
        })
        .collect();

    let bar = progress::timed(&format!("{label} -c {concurrency}"), load.warmup + load.duration);
    let ticker = {
        let bar = bar.clone();
        let done = Arc::clone(&done);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(200));
            loop {
                tick.tick().await;
                let now = Instant::now();
                bar.set_position(u64::try_from((now - began).as_millis()).unwrap_or(u64::MAX));
                let cycles = done.load(Ordering::Relaxed);
                if now < measure_from {
                    bar.set_message("warming up");
                } else {
                    bar.set_message(format!(
                        "{cycles} cycles, {:.0}/s",
                        rate(cycles, now - measure_from)
                    ));
                }
            }
        })
    };

    let metered = async {
        tokio::time::sleep_until(measure_from.into()).await;
        let first = meter.read().await?;
        tokio::time::sleep_until(until.into()).await;
        let last = meter.read().await?;
        anyhow::Ok((first, last))
    };
    let tallied = async {
        let mut tally = Tally::default();
        for worker in workers {
            tally.add(worker.await?);
        }
        anyhow::Ok(tally)
    };
    let (readings, tally) = tokio::join!(metered, tallied);
    let ((first, last), tally) = (readings?, tally?);
    ticker.abort();
    bar.finish_and_clear();

    let end = tally.last_end.unwrap_or(until).max(measure_from);
    Ok(Measured {
        concurrency,
        connections,
        elapsed: end - measure_from,
        duration: load.duration,
        used: last.since(first),
        tally,
    })
}

/// One client: cycles back to back until `until`; only cycles begun at or
/// after `measure_from` are timed.
async fn worker(mut client: Client, measure_from: Instant, until: Instant, done: Arc<AtomicU64>) -> Tally {
    let mut tally = Tally::default();
    loop {
        let began = Instant::now();
        if began >= until {
            break;
        }
        match client::cycle(&mut client).await {
            Ok(times) if began >= measure_from => {
                tally.cycle.record(times.start + times.resume);
                tally.start.record(times.start);
                tally.resume.record(times.resume);
                tally.last_end = Some(Instant::now());
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok(_) => {}
            Err(failure) => tally.errors.record(failure),
        }
    }
    tally
}
