// The inbox in a real browser (playwright-core driving Debian's
// chromium), driven through its accessibility contract: every locator is a
// role and an accessible name, as a screen reader finds them. Runs are
// started and checked over gRPC-Web from Node with the generated client.
//
//   node test/run.mjs inbox.ts OPEN_URL KEYED_URL ACME_KEY GLOBEX_KEY [SCREENSHOT.png]
//
// OPEN_URL is a server without keys whose default agent has ask_user and
// human_review, and a second agent `reviewer`; KEYED_URL one with the
// tenants acme and globex. CHROMIUM names the browser (default
// /usr/bin/chromium).
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { chromium, type Locator, type Page } from "playwright-core";
import { AgentService, RunStatus, type AgentChunk } from "../src/gen/agentd/v1/agentd_pb";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { StreamAgentRequestSchema } from "../src/gen/agentd/v1/agentd_pb";

type Agentd = Client<typeof AgentService>;
const SOON = { timeout: 10_000 };

function check(condition: unknown, what: string): asserts condition {
  if (!condition) throw new Error(`inbox: ${what}`);
}

function client(baseUrl: string, key?: string): Agentd {
  const authorize: Interceptor = (next) => (request) => {
    if (key) request.header.set("authorization", `Bearer ${key}`);
    return next(request);
  };
  return createClient(AgentService, createGrpcWebTransport({ baseUrl, interceptors: [authorize] }));
}

/** Starts a run and reads its stream to its suspension; returns its id. */
async function start(agentd: Agentd, request: MessageInitShape<typeof StreamAgentRequestSchema>): Promise<string> {
  const chunks: AgentChunk[] = [];
  for await (const chunk of agentd.streamAgent(request)) chunks.push(chunk);
  const last = chunks[chunks.length - 1];
  check(last?.chunk.case === "finish", `the run of ${JSON.stringify(request.prompt)} finished its stream`);
  return chunks[0].runId;
}

function chromiumPath(): string {
  const env = (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env;
  return env?.CHROMIUM || "/usr/bin/chromium";
}

function card(page: Page, runId: string): Locator {
  return page.getByRole("article", { name: new RegExp(runId) });
}

async function statusOf(agentd: Agentd, runId: string): Promise<RunStatus> {
  return (await agentd.getRun({ runId })).status;
}

const REVIEW = 'call human_review {"draft": "Dear customer, your refund is on its way."}';

export async function main([openUrl, keyedUrl, acmeKey, globexKey, screenshot]: string[]) {
  check(openUrl && keyedUrl && acmeKey && globexKey, "usage: inbox.ts OPEN_URL KEYED_URL ACME_KEY GLOBEX_KEY [SCREENSHOT]");
  const agentd = client(openUrl);
  const browser = await chromium.launch({
    executablePath: chromiumPath(),
    args: ["--no-sandbox"],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1000, height: 900 } });
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(error.message));

    // Runs that wait before the page opens: ListRuns shows them.
    const plan = await start(agentd, { prompt: "Help me pick a plan" });
    const pizza = await start(agentd, { prompt: "Order me a pizza, multi toppings" });
    const name = await start(agentd, { prompt: "free text please" });
    const approve = await start(agentd, { prompt: REVIEW, options: { requireToolApproval: true } });
    await page.goto(openUrl);
    await page.getByRole("status").filter({ hasText: "Live" }).waitFor(SOON);
    for (const runId of [plan, pizza, name, approve]) await card(page, runId).waitFor(SOON);
    const order = await page.getByRole("article").evaluateAll((cards) => cards.map((c) => c.getAttribute("data-run-id")));
    check(JSON.stringify(order) === JSON.stringify([approve, name, pizza, plan]), `newest first: ${order}`);
    if (screenshot) await page.screenshot({ path: screenshot, fullPage: true });

    // Single-select: radios named by their labels, described by their descriptions.
    const planForm = card(page, plan).getByRole("form", { name: "Which plan should I set up for you?" });
    const pro = planForm.getByRole("radio", { name: "Pro", exact: true });
    const described = await pro.getAttribute("aria-describedby");
    check(described, "an option has a description");
    const description = await page.locator(`[id="${described}"]`).textContent();
    check(description === "Unlimited projects, email support", `Pro's description: ${description}`);
    // Nothing chosen: the server refuses, naming the labels; the form stays.
    await planForm.getByRole("button", { name: "Send answer" }).click();
    const alert = planForm.getByRole("alert");
    await alert.waitFor(SOON);
    const refusal = (await alert.textContent()) ?? "";
    check(refusal.includes("Basic, Pro, Enterprise"), `the refusal names the labels: ${refusal}`);
    check((await statusOf(agentd, plan)) === RunStatus.SUSPENDED, "a refusal leaves the run suspended");
    await pro.check();
    await planForm.getByRole("button", { name: "Send answer" }).click();
    await card(page, plan).getByText("Thanks! You answered: Pro.").waitFor(SOON);
    await card(page, plan).getByText("Answered · the run completed").waitFor(SOON);
    check((await statusOf(agentd, plan)) === RunStatus.COMPLETED, "the plan run completed");

    // Multi-select: checkboxes named by their labels.
    const pizzaForm = card(page, pizza).getByRole("form", { name: "Which toppings do you want on your pizza?" });
    await pizzaForm.getByRole("checkbox", { name: "Mushrooms", exact: true }).check();
    await pizzaForm.getByRole("checkbox", { name: "Basil", exact: true }).check();
    await pizzaForm.getByRole("button", { name: "Send answer" }).click();
    await card(page, pizza).getByText("User answered: Mushrooms, Basil").waitFor(SOON);
    await card(page, pizza).getByText("Thanks! You answered: Mushrooms, Basil.").waitFor(SOON);

    // Free text: a textbox named Answer.
    const nameForm = card(page, name).getByRole("form", { name: "What should I call you?" });
    await nameForm.getByRole("textbox", { name: "Answer" }).fill("Ada");
    await nameForm.getByRole("button", { name: "Send answer" }).click();
    await card(page, name).getByText("Thanks! You answered: Ada.").waitFor(SOON);

    // Approve with edited arguments; the tool then asks for a review.
    const approval = card(page, approve).getByRole("form", { name: "Approve human_review?" });
    const args = approval.getByRole("textbox", { name: "Arguments" });
    const shown = JSON.parse(await args.inputValue());
    check(shown.draft === "Dear customer, your refund is on its way.", `the call's arguments: ${JSON.stringify(shown)}`);
    await args.fill(JSON.stringify({ draft: "Dear Ms Lovelace, your refund of 40 EUR is on its way." }, null, 2));
    await approval.getByRole("button", { name: "Approve" }).click();
    const review = card(page, approve).getByRole("form", { name: "human_review asks for a response" });
    await review.waitFor(SOON);
    await review.getByText("Dear Ms Lovelace, your refund of 40 EUR is on its way.").waitFor(SOON);
    const edited = await agentd.getRun({ runId: approve });
    check(edited.editedCalls.length === 1, "GetRun lists the edited call");
    check(edited.editedCalls[0].originalArgs?.draft === "Dear customer, your refund is on its way.", "with the model's arguments");
    // Resume data that breaks the resume schema: the server's message, the editor as it was.
    const data = review.getByRole("textbox", { name: "Resume data" });
    const wrong = '{"decision": "maybe"}';
    await data.fill(wrong);
    await review.getByRole("button", { name: "Send answer" }).click();
    const schemaAlert = review.getByRole("alert");
    await schemaAlert.waitFor(SOON);
    check(((await schemaAlert.textContent()) ?? "").includes("data/decision"), "the refusal names the field");
    check((await data.inputValue()) === wrong, "the editor keeps what was typed");
    await data.fill('{"decision": "approve", "comment": "Good"}');
    await review.getByRole("button", { name: "Send answer" }).click();
    await card(page, approve).getByText("Answered · the run completed").waitFor(SOON);

    // Decline with a reason.
    const declined = await start(agentd, { prompt: REVIEW, options: { requireToolApproval: true } });
    const declineForm = card(page, declined).getByRole("form", { name: "Approve human_review?" });
    await declineForm.waitFor(SOON);
    await declineForm.getByRole("textbox", { name: "Reason" }).fill("The refund is not approved yet");
    await declineForm.getByRole("button", { name: "Decline" }).click();
    await card(page, declined)
      .getByText("The user declined this call of human_review: The refund is not approved yet")
      .first()
      .waitFor(SOON);
    await card(page, declined).getByText("Answered · the run completed").waitFor(SOON);
    check((await statusOf(agentd, declined)) === RunStatus.COMPLETED, "the declined run completed");

    // A new suspension appears live, within a second of being stored.
    const before = Date.now();
    const live = await start(agentd, { prompt: "Which plan, live" });
    await card(page, live).getByRole("form", { name: "Which plan should I set up for you?" }).waitFor({ timeout: 1000 });
    const appeared = Date.now() - before;

    // Answered elsewhere: it leaves.
    for await (const _ of agentd.resume({ runId: live, answer: { case: "text", value: "Basic" } })) {
      // The continuation, read to its end.
    }
    await card(page, live).waitFor({ state: "detached", ...SOON });

    // The whole history, then cancel.
    const history = await start(agentd, { prompt: "free text for the history" });
    const historyCard = card(page, history);
    await historyCard.getByRole("button", { name: "Show history" }).click();
    await historyCard.getByRole("region", { name: "History" }).getByText("Asks: What should I call you?").waitFor(SOON);
    await historyCard.getByRole("button", { name: "Cancel run" }).click();
    await historyCard.getByRole("button", { name: "Confirm cancel" }).click();
    await historyCard.waitFor({ state: "detached", ...SOON });
    check((await statusOf(agentd, history)) === RunStatus.CANCELLED, "cancelled from the inbox");

    // The filter by agent.
    const mine = await start(agentd, { prompt: "free", agentId: "reviewer" });
    const theirs = await start(agentd, { prompt: "free" });
    await card(page, mine).waitFor(SOON);
    await card(page, theirs).waitFor(SOON);
    await page.getByRole("combobox", { name: "Agent" }).selectOption("reviewer");
    await card(page, theirs).waitFor({ state: "hidden", ...SOON });
    check(await card(page, mine).isVisible(), "the reviewer's run is shown");
    await page.getByRole("combobox", { name: "Agent" }).selectOption("");
    await card(page, theirs).waitFor({ state: "visible", ...SOON });

    check(problems.length === 0, `page errors: ${problems.join("; ")}`);
    console.log(`inbox: every scenario passed; a new suspension appeared after ${appeared} ms`);

    // Keys: the page asks for one, refuses a wrong one, and shows only
    // the signed-in tenant's runs.
    const acme = client(keyedUrl, acmeKey);
    const globex = client(keyedUrl, globexKey);
    const acmeRun = await start(acme, { prompt: "Help me pick a plan" });
    const globexRun = await start(globex, { prompt: "Help me pick a plan" });
    const keyed = await browser.newPage();
    await keyed.goto(keyedUrl);
    const key = keyed.getByRole("textbox", { name: "API key" });
    await key.fill("not-a-key-of-anyone");
    await keyed.getByRole("button", { name: "Sign in" }).click();
    await keyed.getByRole("alert").filter({ hasText: "did not accept" }).waitFor(SOON);
    await keyed.getByRole("textbox", { name: "API key" }).fill(acmeKey);
    await keyed.getByRole("button", { name: "Sign in" }).click();
    await card(keyed, acmeRun).waitFor(SOON);
    check((await card(keyed, globexRun).count()) === 0, "another tenant's run is not shown");
    check((await keyed.getByRole("article").count()) === 1, "only the tenant's run");
    // Its answers go through with the key.
    const acmeForm = card(keyed, acmeRun).getByRole("form", { name: "Which plan should I set up for you?" });
    await acmeForm.getByRole("radio", { name: "Enterprise", exact: true }).check();
    await acmeForm.getByRole("button", { name: "Send answer" }).click();
    await card(keyed, acmeRun).getByText("Thanks! You answered: Enterprise.").waitFor(SOON);
    check((await statusOf(globex, globexRun)) === RunStatus.SUSPENDED, "globex's run is untouched");
    console.log("inbox: signing in with a key shows only that tenant's runs");
  } finally {
    await browser.close();
  }
}
