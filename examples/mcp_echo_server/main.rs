//! An example MCP server on stdio, to try agentd's MCP support (and used by
//! its integration tests). Configure it in `agentd.toml`:
//!
//! ```toml
//! [[mcp_servers]]
//! name = "echo"
//! command = "target/debug/examples/mcp_echo_server"
//!
//! [[agents]]
//! id = "echoer"
//! tools = ["mcp:echo"]
//! ```
//!
//! Build it with `cargo build --example mcp_echo_server`.

mod echo;

use rmcp::ServiceExt;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let server = echo::EchoServer {
        can_exit: true,
        ..echo::EchoServer::default()
    };
    let running = server.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}
