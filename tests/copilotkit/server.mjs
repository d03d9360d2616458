// CopilotKit's runtime (stock CopilotRuntime, @ag-ui/client's HttpAgent
// pointing at agentd's /ag-ui) and the page, on one local HTTP server.
// agentd keeps the thread: the runner runs the agent as CopilotKit's
// in-memory runner does, and a page that connects (a reload) is answered
// by agentd, which replays the thread for a request with no new message.
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import { join } from "node:path";

import { HttpAgent } from "@ag-ui/client";
import { CopilotRuntime, InMemoryAgentRunner } from "@copilotkit/runtime/v2";
import { createCopilotNodeListener } from "@copilotkit/runtime/v2/node";
import { Observable } from "rxjs";

class AgentdRunner extends InMemoryAgentRunner {
  constructor(url) {
    super();
    this.url = url;
  }

  connect({ threadId }) {
    return new Observable((subscriber) => {
      const agent = new HttpAgent({ url: this.url, threadId });
      agent
        .runAgent(
          {},
          {
            onEvent: ({ event }) => subscriber.next(event),
            // A thread agentd does not have (or whose run is still
            // running) has nothing to come back to.
            onRunFailed: () => ({ stopPropagation: true }),
          },
        )
        .catch(() => {})
        .finally(() => subscriber.complete());
    });
  }
}

/// Serves the page from `dist` and the runtime for agentd at `agentdUrl`;
/// resolves to the server once it listens.
export async function serve({ agentdUrl, dist }) {
  const url = `${agentdUrl}/ag-ui`;
  const runtime = new CopilotRuntime({
    agents: { default: new HttpAgent({ url }) },
    runner: new AgentdRunner(url),
  });
  const copilotkit = createCopilotNodeListener({ runtime, basePath: "/api/copilotkit", activateChannels: false });
  const files = { "/page.js": "text/javascript", "/page.css": "text/css" };
  const server = createServer(async (request, response) => {
    const path = new URL(request.url, "http://page").pathname;
    if (path.startsWith("/api/copilotkit")) return copilotkit(request, response);
    if (files[path]) {
      response.writeHead(200, { "content-type": files[path] });
      return response.end(await readFile(join(dist, path)));
    }
    response.writeHead(200, { "content-type": "text/html" });
    response.end(
      `<!doctype html><html><head><meta charset="utf-8"><title>agentd with CopilotKit</title>` +
        `<link rel="stylesheet" href="/page.css"></head><body><div id="root"></div>` +
        `<script type="module" src="/page.js"></script></body></html>`,
    );
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}
