// Stock CopilotKit (@copilotkit/react-core 1.74 in Chromium, @copilotkit/runtime
// 1.75 with @ag-ui/client 0.0.59's HttpAgent) against agentd's /ag-ui: a
// frontend tool, a cancelled question, two questions answered together, and a
// page reload that comes back to its open questions. tests/api/ag_ui.rs
// starts agentd and runs this script with AGUI_URL naming it; CHROMIUM names
// the browser (default /usr/bin/chromium).
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { build } from "esbuild";
import { chromium } from "playwright-core";

import { serve } from "./server.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const agentdUrl = process.env.AGUI_URL;
assert.ok(agentdUrl, "AGUI_URL names agentd");

const dist = await mkdtemp(join(tmpdir(), "copilotkit-page-"));
await build({
  entryPoints: [join(here, "page.jsx")],
  bundle: true,
  outdir: dist,
  format: "esm",
  jsx: "automatic",
  define: { "process.env.NODE_ENV": '"production"' },
  loader: { ".ttf": "empty", ".woff": "empty", ".woff2": "empty" },
  logLevel: "error",
});
const server = await serve({ agentdUrl, dist });
const base = `http://127.0.0.1:${server.address().port}`;

const profile = await mkdtemp(join(tmpdir(), "copilotkit-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
  ],
});
const page = context.pages()[0] ?? (await context.newPage());
const logged = [];
page.on("console", (message) => logged.push(`[${message.type()}] ${message.text()}`));
page.on("pageerror", (error) => logged.push(`[pageerror] ${error.message}`));
page.setDefaultTimeout(20_000);

async function say(text) {
  const box = page.getByRole("textbox").first();
  await box.fill(text);
  await box.press("Enter");
  await page.getByText(text, { exact: true }).first().waitFor();
}

function question(text) {
  return page.getByRole("region", { name: text });
}

const steps = {
  async "a frontend tool runs in the browser and its result continues the run"() {
    await page.goto(`${base}/?thread=copilotkit-${Date.now()}`);
    await say('call get_weather {"city": "Paris"}');
    await page.getByText(/get_weather tool returned: Sunny, 21 degrees/).first().waitFor();
    assert.equal(await page.evaluate(() => window.weatherAsked), "Paris");
  },

  async "a cancelled question cancels the run, and the conversation goes on"() {
    await say("free");
    await question("What should I call you?").getByRole("button", { name: "Cancel question" }).click();
    await question("What should I call you?").waitFor({ state: "detached" });
    await say("plain again");
    await page.getByText(/You said: plain again/).first().waitFor();
  },

  async "two questions answered together"() {
    await say("two questions");
    const name = question("What should I call you?");
    const plan = question("Which plan should I set up for you?");
    await name.getByLabel("Your answer").fill("Ada");
    await name.getByRole("button", { name: "Send answer" }).click();
    await name.getByText("Answered: Ada").waitFor();
    await plan.getByRole("button", { name: "Pro" }).click();
    await page.getByText("Thanks! You answered: Ada; Pro.").first().waitFor();
  },

  async "a reloaded page comes back to its open questions"() {
    await page.goto(`${base}/?thread=copilotkit-reload-${Date.now()}`);
    await say("two questions");
    await question("Which plan should I set up for you?").waitFor();
    await page.reload();
    // agentd replays the thread: the transcript and both questions again.
    await page.getByText("two questions", { exact: true }).first().waitFor();
    const name = question("What should I call you?");
    const plan = question("Which plan should I set up for you?");
    await name.getByLabel("Your answer").fill("Grace");
    await name.getByRole("button", { name: "Send answer" }).click();
    await plan.getByRole("button", { name: "Enterprise" }).click();
    await page.getByText("Thanks! You answered: Grace; Enterprise.").first().waitFor();
  },
};

let failed = 0;
for (const [name, step] of Object.entries(steps)) {
  try {
    await step();
    console.log(`ok - ${name}`);
  } catch (error) {
    failed += 1;
    console.log(`not ok - ${name}`);
    console.log(error?.stack ?? error);
    await page.screenshot({ path: join(tmpdir(), `copilotkit-failed-${failed}.png`) }).catch(() => {});
    console.log(`--- the page's log:\n${logged.join("\n")}`);
    break;
  }
}
await context.close();
server.close();
await rm(profile, { recursive: true, force: true });
await rm(dist, { recursive: true, force: true });
console.log(failed === 0 ? "all steps passed" : "a step failed");
process.exit(failed === 0 ? 0 : 1);
