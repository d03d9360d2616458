// An MCP server's requests for input in the inbox, in a real browser
// (playwright-core driving Debian's chromium), through the page's
// accessibility contract: the form built from the server's schema
// (labels, defaults, required fields), refused by the server with each
// field named and the entries kept, then answered; the tool's result says
// what the server received. Then a page to open, declined.
//
//   node test/run.mjs elicitation.ts URL [SCREENSHOT.png]
//
// With SCREENSHOT, the page is saved there with the form as first shown,
// and the refused form beside it (SCREENSHOT-refused.png).
// URL is a server without keys whose agent `travel` (the scripted model)
// uses the MCP server tests/mcp/elicit_server.py as `travel`. CHROMIUM
// names the browser (default /usr/bin/chromium).
import { createClient, type Client } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { chromium, type Locator, type Page } from "playwright-core";
import { chromiumPath, card } from "./page";
import { AgentService, RunStatus, type AgentChunk } from "../src/gen/agentd/v1/agentd_pb";

type Agentd = Client<typeof AgentService>;
const SOON = { timeout: 15_000 };

function check(condition: unknown, what: string): asserts condition {
  if (!condition) throw new Error(`elicitation: ${what}`);
}

/** Runs `prompt` on `travel` to its suspension; returns the run's id. */
async function start(agentd: Agentd, prompt: string): Promise<string> {
  const chunks: AgentChunk[] = [];
  for await (const chunk of agentd.streamAgent({ agentId: "travel", prompt })) chunks.push(chunk);
  const suspended = chunks.find((chunk) => chunk.chunk.case === "toolCallSuspended");
  check(suspended?.chunk.case === "toolCallSuspended", `${prompt} suspends`);
  check(suspended.chunk.value.suspendPayload?.kind.case === "elicitation", `${prompt} suspends on an elicitation`);
  return chunks[0].runId;
}

async function invalid(control: Locator): Promise<boolean> {
  return (await control.getAttribute("aria-invalid")) === "true";
}

/** The text of what describes `control` (its hint and problem). */
async function description(page: Page, control: Locator): Promise<string> {
  const ids = ((await control.getAttribute("aria-describedby")) ?? "").split(" ").filter(Boolean);
  const texts = await Promise.all(ids.map((id) => page.locator(`[id="${id}"]`).textContent()));
  return texts.join(" ");
}

export async function main([url, screenshot]: string[]) {
  check(url, "usage: elicitation.ts URL [SCREENSHOT]");
  const agentd = createClient(AgentService, createGrpcWebTransport({ baseUrl: url }));
  const browser = await chromium.launch({ executablePath: chromiumPath(), args: ["--no-sandbox"] });
  try {
    const page = await browser.newPage({ viewport: { width: 1000, height: 1100 } });
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(error.message));

    const booking = await start(agentd, 'call book {"destination": "Lisbon"}');
    await page.goto(url);
    await page.getByRole("status").filter({ hasText: "Live" }).waitFor(SOON);
    const form = card(page, booking).getByRole("form", { name: "travel asks: Book a stay in Lisbon?" });
    await form.waitFor(SOON);

    // The fields, named by their titles; defaults filled in; required marked.
    const email = form.getByRole("textbox", { name: "Email", exact: true });
    check((await email.getAttribute("type")) === "email", "format email is an email input");
    check((await email.getAttribute("aria-required")) === "true", "email is required");
    check((await description(page, email)).includes("Where the ticket goes"), "the description describes the field");
    const nights = form.getByRole("spinbutton", { name: "Nights" });
    check((await nights.getAttribute("min")) === "1" && (await nights.getAttribute("max")) === "30", "nights' range");
    check((await nights.getAttribute("step")) === "1", "nights is an integer");
    const budget = form.getByRole("spinbutton", { name: "Budget" });
    check((await budget.inputValue()) === "100", `budget's default: ${await budget.inputValue()}`);
    const breakfast = form.getByRole("checkbox", { name: "Breakfast" });
    check(!(await breakfast.isChecked()), "breakfast's default");
    const seat = form.getByRole("radiogroup", { name: "Seat" });
    check(await seat.getByRole("radio", { name: "window" }).isChecked(), "seat's default");
    const extras = form.getByRole("group", { name: "Extras" });
    check((await extras.getByRole("checkbox").count()) === 3, "three extras");
    if (screenshot) await page.screenshot({ path: screenshot, fullPage: true });

    // Required fields left empty: marked here, nothing sent.
    await form.getByRole("button", { name: "Submit" }).click();
    await form.getByRole("alert").filter({ hasText: "need your attention" }).waitFor(SOON);
    check(await invalid(email), "an empty required email is marked");
    check(await invalid(nights), "empty required nights are marked");
    check((await agentd.getRun({ runId: booking })).status === RunStatus.SUSPENDED, "nothing was sent");

    // Not an email address, and out of the schema's range: marked here in
    // plain words, nothing sent.
    await email.fill("not an address");
    await nights.fill("0");
    await form.getByRole("button", { name: "Submit" }).click();
    await form.getByRole("alert").filter({ hasText: "2 fields need your attention." }).waitFor(SOON);
    check(await invalid(email), "a malformed email is marked");
    check((await description(page, email)).includes("Not an email address"), `email's problem: ${await description(page, email)}`);
    check(await invalid(nights), "nights below the minimum are marked");
    check((await description(page, nights)).includes("At least 1."), `nights' problem: ${await description(page, nights)}`);
    check((await agentd.getRun({ runId: booking })).status === RunStatus.SUSPENDED, "nothing was sent");

    // Values the server refuses (an address the browser takes, with two
    // dots in a row): its message, each field it names marked in plain
    // words, the entries kept.
    await email.fill("ana..lima@example.com");
    await nights.fill("2");
    await form.getByRole("button", { name: "Submit" }).click();
    const alert = form.getByRole("alert").filter({ hasText: "does not fit the form" });
    await alert.waitFor(SOON);
    const refusal = (await alert.textContent()) ?? "";
    check(refusal.includes("elicitation.content.email"), `the refusal names email: ${refusal}`);
    check(await invalid(email), "the server's refusal marks email");
    check(!(await invalid(nights)), "nights are fine now");
    check(!(await invalid(budget)), "budget is fine");
    check((await description(page, email)).includes("Not an email address"), `email's problem: ${await description(page, email)}`);
    check((await email.inputValue()) === "ana..lima@example.com", "the form keeps what was entered");
    check((await agentd.getRun({ runId: booking })).status === RunStatus.SUSPENDED, "a refusal leaves the run suspended");
    if (screenshot) await form.screenshot({ path: screenshot.replace(/(\.png)?$/, "-refused.png") });

    // Answered: the tool goes on with exactly these values.
    await email.fill("ana@example.com");
    await nights.fill("2");
    await budget.fill("80.5");
    await breakfast.check();
    await seat.getByRole("radio", { name: "aisle" }).check();
    await extras.getByRole("checkbox", { name: "wifi" }).check();
    await extras.getByRole("checkbox", { name: "pool" }).check();
    await form.getByRole("button", { name: "Submit" }).click();
    const result = card(page, booking).getByText(/^booked Lisbon: /);
    await result.waitFor(SOON);
    const received = JSON.parse(((await result.textContent()) ?? "").replace(/^booked Lisbon: /, ""));
    const given = { breakfast: true, budget: 80.5, email: "ana@example.com", extras: ["wifi", "pool"], nights: 2, seat: "aisle" };
    check(JSON.stringify(received) === JSON.stringify(given), `the server received ${JSON.stringify(received)}`);
    await card(page, booking).getByRole("status").filter({ hasText: /^Submitted: .* · the run completed$/ }).waitFor(SOON);
    check((await agentd.getRun({ runId: booking })).status === RunStatus.COMPLETED, "the booking run completed");

    // A page to open: a link that opens apart from the inbox; declined.
    const payment = await start(agentd, 'call pay {"amount": 30}');
    const payCard = card(page, payment);
    const pay = payCard.getByRole("form", { name: "travel asks: Pay 30 EUR" });
    await pay.waitFor(SOON);
    const link = pay.getByRole("link", { name: "https://pay.example.com/checkout?amount=30" });
    check((await link.getAttribute("href")) === "https://pay.example.com/checkout?amount=30", "the link's target");
    check((await link.getAttribute("rel")) === "noopener noreferrer", "the link shares nothing with the page");
    check((await link.getAttribute("target")) === "_blank", "the link opens apart");
    check((await pay.getByRole("button", { name: "I've opened it, done" }).count()) === 1, "an accept button");
    await payCard.getByRole("button", { name: "Show history" }).click();
    await payCard.getByRole("region", { name: "History" }).getByText("travel asks: Pay 30 EUR").waitFor(SOON);
    await pay.getByRole("button", { name: "Decline" }).click();
    await payCard.getByText("payment: decline", { exact: true }).waitFor(SOON);
    await payCard.getByRole("status").filter({ hasText: "Declined · the run completed" }).waitFor(SOON);

    check(problems.length === 0, `page errors: ${problems.join("; ")}`);
    console.log("elicitation: a form refused, then answered; a page to open, declined");
  } finally {
    await browser.close();
  }
}
