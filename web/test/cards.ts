// What a card says and does, in a real browser (playwright-core driving
// Debian's chromium), through the page's accessibility contract, with
// axe-core checking every state it visits: a card titled by its question
// and the agent's first metadata values, the run id small and copyable;
// an approval's arguments as a table named by the tool's schema, JSON
// behind "Edit arguments"; a review in words, its revised text starting
// from the draft, the status saying the verdict, the question kept on
// the card; search over arguments and drafts; one of two questions
// answered; an MCP form's email checked before sending; cancelling taken
// back with "Keep run" or Escape.
//
//   node test/run.mjs cards.ts URL [SCREENS_DIR]
//
// URL is a server without keys whose default agent `desk` has ask_user,
// human_review and issue_refund (a client tool that needs approval,
// titled "Issue a refund"; inbox_metadata shows `customer` and `order`
// first), and whose agent `travel` uses the MCP server
// tests/mcp/elicit_server.py as `travel`. With SCREENS_DIR, each state is
// saved there as cards-STATE.png. CHROMIUM names the browser (default
// /usr/bin/chromium).
import { createClient, type Client } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { chromium, type Locator, type Page } from "playwright-core";
import { chromiumPath, card } from "./page";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { AgentService, RunStatus, type AgentChunk, type StreamAgentRequestSchema } from "../src/gen/agentd/v1/agentd_pb";
import { expectNoViolations } from "./axe";

type Agentd = Client<typeof AgentService>;
const SOON = { timeout: 15_000 };

function check(condition: unknown, what: string): asserts condition {
  if (!condition) throw new Error(`cards: ${what}`);
}

/** Starts a run and reads its stream to its suspension; returns its id. */
async function start(agentd: Agentd, request: MessageInitShape<typeof StreamAgentRequestSchema>): Promise<string> {
  const chunks: AgentChunk[] = [];
  for await (const chunk of agentd.streamAgent(request)) chunks.push(chunk);
  const last = chunks[chunks.length - 1];
  check(last?.chunk.case === "finish", `the run of ${JSON.stringify(request.prompt)} finished its stream`);
  check((await agentd.getRun({ runId: chunks[0].runId })).status === RunStatus.SUSPENDED, `${request.prompt} waits`);
  return chunks[0].runId;
}

async function visibleIds(page: Page): Promise<string[]> {
  return page.getByRole("article").evaluateAll((cards) =>
    cards.filter((c) => !(c as HTMLElement).hidden && (c as HTMLElement).offsetParent !== null).map((c) => c.getAttribute("data-run-id")!),
  );
}

/** The accessible name of an article, as the page computes it from aria-labelledby. */
async function articleName(locator: Locator): Promise<string> {
  return locator.evaluate((element) =>
    (element.getAttribute("aria-labelledby") ?? "")
      .split(" ")
      .map((id) => document.getElementById(id)?.textContent ?? "")
      .join(" "),
  );
}

const REFUND = 'call issue_refund {"amount": 12500, "currency": "EUR", "order_id": "A-1043", "reason": "Parcel arrived damaged"}';
const DRAFT = "Dear Ken, your refund of 12,500 EUR is on its way.";
const REVIEW = `call human_review {"draft": "${DRAFT}", "instructions": "Check the amount"}`;
const TWO = 'call ask_user {"question": "Which tone should the reply take?"} then call ask_user {"question": "Who signs the reply?"}';

export async function main([url, screens]: string[]) {
  check(url, "usage: cards.ts URL [SCREENS_DIR]");
  const agentd = createClient(AgentService, createGrpcWebTransport({ baseUrl: url }));
  const browser = await chromium.launch({ executablePath: chromiumPath(), args: ["--no-sandbox"] });
  try {
    // axe-core goes into the page as an inline script, which the page's CSP refuses.
    const context = await browser.newContext({ viewport: { width: 1000, height: 1000 }, bypassCSP: true });
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: url });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(error.message));
    /** axe-core finds nothing in this state; its screenshot is saved. */
    const state = async (name: string, target?: Locator) => {
      await expectNoViolations(page, name);
      if (!screens) return;
      if (target) {
        // Tall enough for the card, below the sticky header, which would
        // otherwise cover part of it.
        await page.setViewportSize({ width: 1000, height: 2000 });
        await target.evaluate((element) => {
          element.scrollIntoView({ block: "start" });
          window.scrollBy(0, -(document.querySelector(".top")?.getBoundingClientRect().height ?? 80) - 8);
        });
        await target.screenshot({ path: `${screens}/cards-${name}.png` });
        await page.setViewportSize({ width: 1000, height: 1000 });
      } else {
        await page.screenshot({ path: `${screens}/cards-${name}.png`, fullPage: true });
      }
    };

    const customer = { customer: "Ken Adams", order: "A-1043", trace_id: "t-9" };
    const refund = await start(agentd, { prompt: REFUND, metadata: customer });
    const refund2 = await start(agentd, { prompt: REFUND, metadata: { customer: "Ada Lovelace", order: "B-7" } });
    const review = await start(agentd, { prompt: REVIEW, metadata: customer });
    const two = await start(agentd, { prompt: TWO, metadata: { customer: "Grace Hopper" } });
    await page.goto(url);
    await page.getByRole("status").filter({ hasText: /^Live$/ }).waitFor(SOON);

    // 1. Titled by the question and the first metadata values; the run id
    // after the title, small, and copyable.
    const refundCard = card(page, refund);
    const refundTitle = "Approve: Issue a refund? · Ken Adams · A-1043";
    await refundCard.getByRole("heading", { level: 2, name: refundTitle, exact: true }).waitFor(SOON);
    const named = await articleName(refundCard);
    check(named === `${refundTitle} run ${refund}`, `the card's name: ${named}`);
    await card(page, refund2).getByRole("heading", { level: 2, name: "Approve: Issue a refund? · Ada Lovelace · B-7", exact: true }).waitFor(SOON);
    await card(page, review).getByRole("heading", { level: 2, name: "Review the draft · Ken Adams · A-1043", exact: true }).waitFor(SOON);
    await refundCard.getByText(refund, { exact: true }).waitFor(SOON);
    await refundCard.getByRole("button", { name: "Copy run id" }).click();
    await refundCard.getByRole("button", { name: "Run id copied" }).waitFor(SOON);
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    check(copied === refund, `the clipboard holds the run id: ${copied}`);
    await state("titles");

    // 2. The approval: the tool's description, its arguments as a table
    // named by the schema's titles, the JSON behind "Edit arguments".
    const approval = refundCard.getByRole("form", { name: /^Approve: Issue a refund\?/ });
    await approval.getByText("Refund a customer's payment to the card they paid with.").waitFor(SOON);
    const table = approval.getByRole("table", { name: "What issue_refund will be run with" });
    const rows = await table.getByRole("rowheader").allTextContents();
    check(
      JSON.stringify(rows) === JSON.stringify(["AmountIn the currency's units.", "Currency", "Order", "Reason given"]),
      `the rows are named by the schema's titles: ${JSON.stringify(rows)}`,
    );
    await table.getByRole("row", { name: /Amount/ }).getByRole("cell", { name: "12500" }).waitFor(SOON);
    await table.getByRole("row", { name: /Currency/ }).getByRole("cell", { name: "EUR" }).waitFor(SOON);
    const json = approval.getByRole("textbox", { name: "Arguments as JSON" });
    check(!(await json.isVisible()), "the JSON waits behind Edit arguments");
    await state("approval", refundCard);
    const edit = approval.getByRole("button", { name: "Edit arguments" });
    await edit.click();
    check((await edit.getAttribute("aria-expanded")) === "true", "Edit arguments is expanded");
    await json.waitFor({ state: "visible", ...SOON });
    check(JSON.parse(await json.inputValue()).amount === 12500, "the JSON holds the call");
    await state("approval-json", refundCard);
    await edit.click();
    await json.waitFor({ state: "hidden", ...SOON });

    // 7. Search finds approval arguments and review drafts.
    const search = page.getByRole("searchbox", { name: "Search" });
    await search.fill("parcel arrived damaged");
    await page.waitForFunction((ids) => {
      const shown = [...document.querySelectorAll("article")].filter((c) => !(c as HTMLElement).hidden).map((c) => c.getAttribute("data-run-id"));
      return JSON.stringify(shown.sort()) === JSON.stringify([...ids].sort());
    }, [refund, refund2]);
    await search.fill("refund of 12,500");
    await page.waitForFunction((id) => {
      const shown = [...document.querySelectorAll("article")].filter((c) => !(c as HTMLElement).hidden).map((c) => c.getAttribute("data-run-id"));
      return JSON.stringify(shown) === JSON.stringify([id]);
    }, review);
    await state("search-draft");
    await search.fill("");
    await card(page, two).waitFor({ state: "visible", ...SOON });

    // Approved: the question stays on the card with what was sent.
    await approval.getByRole("button", { name: "Approve", exact: true }).click();
    await refundCard.getByRole("status").filter({ hasText: "Approved · it waits for its client, not for you" }).waitFor(SOON);
    await refundCard.getByRole("heading", { level: 3, name: "Approve: Issue a refund?" }).waitFor(SOON);
    await refundCard.getByText("You: Approved").waitFor(SOON);
    await refundCard.getByRole("heading", { level: 2, name: refundTitle, exact: true }).waitFor(SOON);
    await state("approved", refundCard);

    // 2, 3. The review in words; Edit starts from the draft; the status
    // says the verdict, not the letter.
    const reviewCard = card(page, review);
    const reviewForm = reviewCard.getByRole("form", { name: /^Review the draft/ });
    const payload = await reviewForm.locator("dl.payload dt").allTextContents();
    check(JSON.stringify(payload) === JSON.stringify(["Draft", "Instructions"]), `the payload's names: ${payload}`);
    await reviewForm.getByText(DRAFT, { exact: true }).waitFor(SOON);
    const decision = reviewForm.getByRole("radiogroup", { name: "Decision" });
    check((await decision.getByRole("radio").count()) === 3, "three decisions");
    for (const word of ["Approve", "Reject", "Edit"]) await decision.getByRole("radio", { name: word, exact: true }).waitFor(SOON);
    await reviewForm.getByRole("textbox", { name: "Comment" }).waitFor(SOON);
    await state("review", reviewCard);
    await decision.getByRole("radio", { name: "Edit", exact: true }).check();
    const revised = reviewForm.getByRole("textbox", { name: "Revised text" });
    await revised.waitFor({ state: "visible", ...SOON });
    check((await revised.inputValue()) === DRAFT, `the revised text starts from the draft: ${await revised.inputValue()}`);
    await state("review-edit", reviewCard);
    await revised.fill("Dear Mr Adams, your refund of 12,500 EUR was sent today.");
    await reviewForm.getByRole("button", { name: "Send answer" }).click();
    const reviewStatus = reviewCard.getByRole("status");
    await reviewStatus.filter({ hasText: "Edited the draft · the run completed" }).waitFor(SOON);
    check(!((await reviewStatus.textContent()) ?? "").includes("Dear Mr Adams"), "the status does not repeat the letter");
    await reviewCard.getByRole("heading", { level: 3, name: "Review the draft" }).waitFor(SOON);
    const next = reviewCard.getByRole("region", { name: "What the agent did next" });
    await next.getByText("The review the agent got").waitFor(SOON);
    await next.getByText("Went on with the answer").waitFor(SOON);
    await next.getByText("Finished", { exact: true }).waitFor(SOON);
    check((await next.getByText(/ask_user returned|human_review returned|Resumed/).count()) === 0, "the output speaks no tool names");
    await state("reviewed", reviewCard);

    // 10. One of two questions answered: said so, and the other keeps
    // the time it was asked.
    const twoCard = card(page, two);
    const asked = twoCard.locator(".meta time").first();
    const askedAt = await asked.getAttribute("datetime");
    const tone = twoCard.getByRole("form", { name: /^Which tone should the reply take\?/ });
    await tone.getByRole("textbox", { name: "Answer" }).fill("Warm");
    await tone.getByRole("button", { name: "Send answer" }).click();
    await twoCard.getByRole("status").filter({ hasText: "Answered: Warm · 1 more question waits on you" }).waitFor(SOON);
    await twoCard.getByRole("form", { name: /^Who signs the reply\?/ }).waitFor(SOON);
    check((await asked.getAttribute("datetime")) === askedAt, `the other question's asked time is kept: ${askedAt} → ${await asked.getAttribute("datetime")}`);
    await twoCard.getByRole("heading", { level: 3, name: "Which tone should the reply take?" }).waitFor(SOON);
    await state("one-of-two", twoCard);

    // 5. Cancel run asks first; Keep run and Escape take it back.
    const cancel = twoCard.getByRole("group", { name: "This run" });
    await cancel.getByRole("button", { name: "Cancel run" }).click();
    await cancel.getByRole("button", { name: "Confirm cancel" }).waitFor(SOON);
    await cancel.getByText("Cancelling stops the run for good").waitFor(SOON);
    await state("confirm-cancel", twoCard);
    await cancel.getByRole("button", { name: "Keep run" }).click();
    await cancel.getByRole("button", { name: "Cancel run" }).waitFor(SOON);
    check((await cancel.getByRole("button", { name: "Keep run" }).count()) === 0 || !(await cancel.getByRole("button", { name: "Keep run" }).isVisible()), "Keep run goes");
    await cancel.getByRole("button", { name: "Cancel run" }).click();
    await cancel.getByRole("button", { name: "Confirm cancel" }).waitFor(SOON);
    await page.keyboard.press("Escape");
    await cancel.getByRole("button", { name: "Cancel run" }).waitFor(SOON);
    check((await agentd.getRun({ runId: two })).status === RunStatus.SUSPENDED, "the run was kept");

    // 5. An MCP form: Skip, apart from the run's own Cancel run; an
    // email checked in the page, in plain words.
    const booking = await start(agentd, { agentId: "travel", prompt: 'call book {"destination": "Lisbon"}' });
    const bookingCard = card(page, booking);
    const form = bookingCard.getByRole("form", { name: /^travel asks: Book a stay in Lisbon\?/ });
    await form.waitFor(SOON);
    await form.getByRole("button", { name: "Skip without answering" }).waitFor(SOON);
    check((await form.getByRole("button", { name: /Cancel/ }).count()) === 0, "the form has no Cancel to mistake for Cancel run");
    await bookingCard.getByRole("group", { name: "This run" }).getByRole("button", { name: "Cancel run" }).waitFor(SOON);
    const email = form.getByRole("textbox", { name: "Email" });
    await email.fill("ken@");
    await form.getByRole("spinbutton", { name: "Nights" }).fill("2");
    await form.getByRole("button", { name: "Submit" }).click();
    await form.getByRole("alert").filter({ hasText: "One field needs your attention." }).waitFor(SOON);
    check((await email.getAttribute("aria-invalid")) === "true", "the email is marked");
    await form.getByText("Not an email address: write it like name@example.com.").waitFor(SOON);
    check((await agentd.getRun({ runId: booking })).status === RunStatus.SUSPENDED, "nothing was sent");
    await state("email", bookingCard);
    await email.fill("ken@example.com");
    await form.getByRole("button", { name: "Submit" }).click();
    await bookingCard.getByRole("status").filter({ hasText: /^Submitted: Email: ken@example\.com; Nights: 2; Breakfast: no; .* · the run completed$/ }).waitFor(SOON);
    await state("submitted", bookingCard);

    // 1. The compact view: each line says the question and the values.
    await page.getByRole("switch", { name: "Compact view" }).click();
    const line = card(page, refund2).getByRole("button", { expanded: false });
    await line.waitFor(SOON);
    const lineText = (await line.textContent()) ?? "";
    check(lineText.includes("Approve: Issue a refund? · Ada Lovelace · B-7"), `the line: ${lineText}`);
    check(!lineText.includes(refund2), `the line has no run id: ${lineText}`);
    await state("compact");
    await page.getByRole("switch", { name: "Compact view" }).click();

    // Confirmed: the run is cancelled.
    await cancel.getByRole("button", { name: "Cancel run" }).click();
    await cancel.getByRole("button", { name: "Confirm cancel" }).click();
    await twoCard.waitFor({ state: "detached", ...SOON });
    check((await agentd.getRun({ runId: two })).status === RunStatus.CANCELLED, "cancelled from the inbox");
    await state("after-cancel");

    check(problems.length === 0, `page errors: ${problems.join("; ")}`);
    console.log("cards: titles, approvals and reviews in words, search, two questions, an email checked, cancel taken back");
  } finally {
    await browser.close();
  }
}
