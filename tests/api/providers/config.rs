//! The models guide's provider examples are valid configuration: each
//! `toml` block of the "Real models" section of `docs/models.md` starts a
//! server whose agents report the models they name.

use agentd::config::Overrides;
use agentd::pb;
use agentd::server::FileConfig;

use crate::helpers::*;

/// The `toml` blocks of the section of `guide` titled `title` (a `## `
/// heading), up to the next such heading.
pub(crate) fn toml_blocks(guide: &str, title: &str) -> Vec<String> {
    let section = guide
        .split(&format!("\n## {title}\n"))
        .nth(1)
        .expect("the section exists")
        .split("\n## ")
        .next()
        .unwrap_or_default();
    section
        .split("```toml\n")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn guide_provider_examples_configure_a_server() {
    let guide = include_str!("../../../docs/models.md");
    let blocks = toml_blocks(guide, "Real models");
    assert_eq!(blocks.len(), 2, "the built-in provider and the Ollama examples");
    for block in blocks {
        let file: FileConfig = toml::from_str(&block).unwrap_or_else(|e| panic!("{e}\n{block}"));
        let expected: Vec<String> = file.agents.iter().map(|a| a.model.clone()).collect();
        let temp = tempfile::tempdir().expect("temp dir");
        let mut settings = file.settle(Overrides::default());
        settings.server.listen = "127.0.0.1:0".parse().unwrap();
        settings.server.data_dir = temp.path().to_owned();
        let server = TestServer::start_with(settings).await;
        let agents = server
            .client()
            .list_agents(pb::ListAgentsRequest {})
            .await
            .expect("ListAgents")
            .into_inner()
            .agents;
        let models: Vec<String> = agents.into_iter().map(|a| a.model).collect();
        assert_eq!(models, expected);
    }
}
