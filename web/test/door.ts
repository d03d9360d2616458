// The front door in a real browser (playwright-core driving Debian's
// chromium): a page of another origin (PAGE_URL, served by the test on
// another port) sends what any web page may send without asking CORS,
// `no-cors` POSTs with a valid-looking body as text/plain and as an untyped Blob, to /ag-ui,
// /a2a/jsonrpc, /a2a/rest and /mcp, and a JSON POST that needs CORS; none
// of them runs anything. Then a page the server itself served sends the
// same AG-UI request as JSON, which runs: the requests did reach it.
//
//   node test/run.mjs door.ts AGENTD_URL PAGE_URL
//
// AGENTD_URL is a server without keys whose default agent asks (the test
// checks over gRPC that only the last request ran). CHROMIUM names the
// browser (default /usr/bin/chromium).
import { chromium } from "playwright-core";
import { chromiumPath } from "./page";

function check(condition: unknown, what: string): asserts condition {
  if (!condition) throw new Error(`door: ${what}`);
}

const PROMPT = "Help me pick a plan";

/** The bodies each surface would take, if it took them from this page. */
const ATTACKS: Record<string, unknown> = {
  "/ag-ui": { threadId: "attack", runId: "r", messages: [{ id: "m", role: "user", content: PROMPT }] },
  "/a2a/jsonrpc": {
    jsonrpc: "2.0",
    id: 1,
    method: "SendMessage",
    params: { message: { messageId: "m", role: "ROLE_USER", parts: [{ text: PROMPT }] } },
  },
  "/a2a/rest/message:send": { message: { messageId: "m", role: "ROLE_USER", parts: [{ text: PROMPT }] } },
  "/mcp": {
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: { name: "assistant", arguments: { prompt: PROMPT } },
  },
};

export async function main([agentd, attacker]: string[]) {
  check(agentd && attacker, "usage: door.ts AGENTD_URL PAGE_URL");
  const browser = await chromium.launch({ executablePath: chromiumPath(), args: ["--no-sandbox"] });
  try {
    const page = await browser.newPage();
    await page.goto(attacker);
    check(new URL(page.url()).origin !== new URL(agentd).origin, "the page is of another origin");
    const outcomes = await page.evaluate(
      async ({ agentd, attacks }) => {
        const sent: string[] = [];
        for (const [path, body] of Object.entries(attacks)) {
          const url = agentd + path;
          const text = JSON.stringify(body);
          const headers = { "a2a-version": "1.0" };
          // What any page may send: text/plain, and an untyped Blob.
          const plain = await fetch(url, { method: "POST", mode: "no-cors", body: text });
          sent.push(`${path} text/plain: ${plain.type}`);
          const blob = await fetch(url, { method: "POST", mode: "no-cors", body: new Blob([text]) });
          sent.push(`${path} blob: ${blob.type}`);
          // JSON needs CORS: the preflight is refused, so the call is.
          try {
            await fetch(url, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: text });
            sent.push(`${path} json: answered`);
          } catch {
            sent.push(`${path} json: refused`);
          }
        }
        return sent;
      },
      { agentd: agentd.replace(/\/$/, ""), attacks: ATTACKS },
    );
    for (const path of Object.keys(ATTACKS)) {
      check(outcomes.includes(`${path} text/plain: opaque`), `${path}: the no-cors POST was sent (${outcomes})`);
      check(outcomes.includes(`${path} blob: opaque`), `${path}: the Blob POST was sent (${outcomes})`);
      check(outcomes.includes(`${path} json: refused`), `${path}: the JSON POST is refused (${outcomes})`);
    }

    // The server's own page may: the same request as JSON runs.
    const own = await browser.newPage();
    await own.goto(agentd);
    const status = await own.evaluate(async (body) => {
      const response = await fetch("/ag-ui", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "text/event-stream" },
        body: JSON.stringify({ ...(body as Record<string, unknown>), threadId: "own" }),
      });
      await response.text();
      return response.status;
    }, ATTACKS["/ag-ui"]);
    check(status === 200, `the server's own page runs the agent (status ${status})`);
    console.log(`door: ${outcomes.length} requests of another origin refused; the own page ran`);
  } finally {
    await browser.close();
  }
}
