//! `agentd bench` on a tiny budget: each scenario runs the real binary,
//! which starts its servers as separate processes, and prints a JSON report
//! that must be well formed and free of errors. Timings are never asserted.
//! The bench is a cargo feature (`--features bench`); a binary built
//! without it says so.

use serde_json::Value;

/// Runs `agentd bench ARGS --json` and parses its report.
async fn bench(args: &[&str]) -> Value {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentd"))
        .arg("bench")
        .args(args)
        .arg("--json")
        .env("NO_COLOR", "1")
        .kill_on_drop(true)
        .output()
        .await
        .expect("run agentd bench");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "agentd bench {args:?} failed: {}\nstdout: {stdout}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("report is not JSON ({e}): {stdout}"))
}

fn count(value: &Value, field: &str) -> u64 {
    value[field]
        .as_u64()
        .unwrap_or_else(|| panic!("{field} is not a count in {value}"))
}

fn assert_no_errors(value: &Value) {
    assert_eq!(count(&value["errors"], "total"), 0, "errors in {value}");
}

fn assert_load(result: &Value, concurrency: u64) {
    assert_eq!(count(result, "concurrency"), concurrency);
    assert_eq!(count(result, "connections"), 1);
    assert!(count(result, "cycles") > 0, "no cycle completed: {result}");
    assert!(result["cycles_per_sec"].as_f64().is_some_and(|r| r > 0.0));
    for leg in ["cycle", "start_leg", "resume_leg"] {
        assert_eq!(count(&result[leg], "count"), count(result, "cycles"), "{leg}");
        assert!(result[leg]["p50_ms"].as_f64().is_some_and(|p| p > 0.0), "{leg}");
        assert!(
            result[leg]["p50_ms"].as_f64() <= result[leg]["p99_ms"].as_f64(),
            "{leg}"
        );
    }
    assert_no_errors(result);
}

#[tokio::test]
#[cfg_attr(
    not(feature = "bench"),
    ignore = "needs the bench: cargo test --features bench; .ci/run runs it"
)]
async fn bench_cycle_measures_agentd_and_the_ceiling() {
    let report = bench(&["cycle", "-c", "2", "--duration", "1s", "--warmup", "0s"]).await;
    assert_eq!(report["scenario"], "cycle");
    assert_eq!(report["ceiling"]["synchronous"], "full");
    assert_eq!(report["ceiling"]["group_commit"], true);
    assert_eq!(report["ceiling"]["store"], "sqlite");
    let levels = report["levels"].as_array().expect("levels");
    assert_eq!(levels.len(), 1);
    let level = &levels[0];
    assert_load(&level["agentd"], 2);
    assert_load(&level["ceiling"], 2);
    let ratio = level["ratio"].as_f64().expect("ratio");
    let expected = level["agentd"]["cycles_per_sec"].as_f64().unwrap()
        / level["ceiling"]["cycles_per_sec"].as_f64().unwrap();
    assert!((ratio - expected).abs() < 1e-9, "{ratio} vs {expected}");
    // One round: no list of rounds, no median.
    assert!(level.get("round_ratios").is_none(), "{level}");
    assert!(level.get("median_round_ratio").is_none(), "{level}");
}

/// `--rounds 3`: agentd and the ceiling alternate three times; the level
/// sums the rounds (its cycles are theirs together, its ratio that of the
/// sums), and the report gives each round's ratio.
#[tokio::test]
#[cfg_attr(
    not(feature = "bench"),
    ignore = "needs the bench: cargo test --features bench; .ci/run runs it"
)]
async fn bench_cycle_in_rounds_alternates_agentd_and_the_ceiling_and_sums_them() {
    let report = bench(&[
        "cycle",
        "-c",
        "2",
        "--duration",
        "3s",
        "--warmup",
        "0s",
        "--rounds",
        "3",
    ])
    .await;
    assert_eq!(report["rounds"], 3);
    assert_eq!(report["duration_secs"].as_f64(), Some(3.0));
    let level = &report["levels"][0];
    assert_load(&level["agentd"], 2);
    assert_load(&level["ceiling"], 2);
    let rounds: Vec<f64> = level["round_ratios"]
        .as_array()
        .expect("round_ratios")
        .iter()
        .map(|r| r.as_f64().expect("a ratio"))
        .collect();
    assert_eq!(rounds.len(), 3, "{level}");
    assert!(rounds.iter().all(|r| *r > 0.0), "{rounds:?}");
    let mut sorted = rounds.clone();
    sorted.sort_by(f64::total_cmp);
    assert_eq!(level["median_round_ratio"].as_f64(), Some(sorted[1]), "{level}");
    // Each round measured a second: the level measured the three.
    for server in ["agentd", "ceiling"] {
        let seconds = level[server]["seconds"].as_f64().unwrap();
        assert!(
            (2.0..6.0).contains(&seconds),
            "{server} measured {seconds}s in all"
        );
    }
    let ratio = level["ratio"].as_f64().expect("ratio");
    let expected = level["agentd"]["cycles_per_sec"].as_f64().unwrap()
        / level["ceiling"]["cycles_per_sec"].as_f64().unwrap();
    assert!((ratio - expected).abs() < 1e-9, "{ratio} vs {expected}");
    assert!(level["agentd_per_cycle"]["server_cpu_ms"].as_f64().unwrap() > 0.0);
}

#[tokio::test]
#[cfg_attr(
    not(feature = "bench"),
    ignore = "needs the bench: cargo test --features bench; .ci/run runs it"
)]
async fn bench_stream_receives_and_finds_every_chunk_persisted() {
    let report = bench(&["stream", "--deltas", "1000"]).await;
    assert_eq!(report["scenario"], "stream");
    // start, step_start, 1000 deltas, ..., finish.
    assert!(count(&report, "chunks") >= 1002, "{report}");
    assert_eq!(count(&report, "replayed"), count(&report, "chunks"));
    assert_eq!(report["all_persisted"], true);
    assert!(count(&report, "bytes") > 1000);
    assert_no_errors(&report);
}

#[tokio::test]
#[cfg_attr(
    not(feature = "bench"),
    ignore = "needs the bench: cargo test --features bench; .ci/run runs it"
)]
async fn bench_capacity_suspends_every_run_and_resumes_a_sample() {
    let report = bench(&["capacity", "--runs", "50", "-c", "8", "--sample", "10"]).await;
    assert_eq!(report["scenario"], "capacity");
    assert_eq!(count(&report, "suspended"), 50);
    assert_eq!(count(&report["resume"], "count"), 10);
    assert!(count(&report, "rss_after") > 0);
    assert!(count(&report, "store_bytes") > 0);
    assert!(report["store_bytes_per_run"].as_f64().is_some_and(|b| b > 0.0));
    let files = report["store_files"].as_array().expect("store files");
    assert!(
        files
            .iter()
            .any(|f| f[0].as_str().is_some_and(|n| n.ends_with(".sqlite3"))),
        "{files:?}"
    );
    assert!(report["restart"]["first_call_ms"]
        .as_f64()
        .is_some_and(|ms| ms > 0.0));
    assert_no_errors(&report);
}

/// On PostgreSQL: agentd and the ceiling each in a fresh schema, a cost
/// per cycle read for both (CPU from /proc, statements and round trips
/// through the counting relay), and no schema left behind.
#[tokio::test]
#[cfg_attr(
    feature = "bench",
    ignore = "needs PostgreSQL: set AGENTD_TEST_POSTGRES_URL; .ci/run runs it"
)]
#[cfg_attr(
    not(feature = "bench"),
    ignore = "needs the bench and PostgreSQL: cargo test --features bench with AGENTD_TEST_POSTGRES_URL; .ci/run runs it"
)]
async fn bench_cycle_on_postgres_counts_what_a_cycle_costs_and_drops_its_schemas() {
    let url = crate::pg::base_url();
    let report = bench(&[
        "cycle",
        "--store",
        &url,
        "-c",
        "2",
        "--duration",
        "1s",
        "--warmup",
        "0s",
    ])
    .await;
    assert!(
        report["store"]
            .as_str()
            .is_some_and(|s| s.starts_with("postgres (synchronous_commit=")),
        "{report}"
    );
    // The ceiling commits as the database does, not as the SQLite
    // options say.
    assert_eq!(report["ceiling"]["store"], "postgres", "{report}");
    assert!(
        report["store"].as_str().unwrap().contains(&format!(
            "synchronous_commit={}",
            report["ceiling"]["synchronous"].as_str().unwrap()
        )),
        "{report}"
    );
    let level = &report["levels"][0];
    assert_load(&level["agentd"], 2);
    assert_load(&level["ceiling"], 2);
    for server in ["agentd_per_cycle", "ceiling_per_cycle"] {
        let cost = &level[server];
        for field in ["server_cpu_ms", "postgres_cpu_ms", "statements", "round_trips"] {
            assert!(
                cost[field].as_f64().is_some_and(|v| v > 0.0),
                "{server}.{field} in {cost}"
            );
        }
    }
    // The ceiling does one statement per RPC, two per cycle, and agentd
    // at least one write per leg.
    let ceiling = level["ceiling_per_cycle"]["statements"].as_f64().unwrap();
    assert!(
        (1.8..=2.2).contains(&ceiling),
        "ceiling statements per cycle: {ceiling}"
    );
    assert!(level["agentd_per_cycle"]["statements"].as_f64().unwrap() >= 2.0);

    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    let driver = tokio::spawn(connection);
    let left: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'agentd_bench_%'",
            &[],
        )
        .await
        .expect("count schemas")
        .get(0);
    assert_eq!(left, 0, "the bench left schemas behind");
    drop(client);
    let _ = driver.await;
}

/// A binary built without the bench refuses `agentd bench` and says how to
/// build one with it.
#[cfg(not(feature = "bench"))]
#[tokio::test]
async fn a_build_without_the_bench_says_how_to_get_one() {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentd"))
        .args(["bench", "cycle", "-c", "1"])
        .env("NO_COLOR", "1")
        .kill_on_drop(true)
        .output()
        .await
        .expect("run agentd bench");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--features bench"), "{stderr}");
}
