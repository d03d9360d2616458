// The inbox in a real browser (playwright-core driving Debian's
// chromium), driven through its accessibility contract: every locator is a
// role and an accessible name, as a screen reader finds them. Runs are
// started and checked over gRPC-Web from Node with the generated client.
//
//   node test/run.mjs inbox.ts OPEN_URL KEYED_URL ACME_KEY GLOBEX_KEY [SCREENSHOT.png [SCREENS_DIR]]
//
// OPEN_URL is a server without keys whose default agent has ask_user and
// human_review (its inbox_metadata shows `ticket` and `customer` first and
// hides `trace_id`), and a second agent `reviewer` (whose deadlines decline
// its questions and approve its reviews); KEYED_URL one with the
// tenants acme and globex. Every state it visits is checked with axe-core
// (zero violations). With SCREENS_DIR, inbox-context.png,
// inbox-phone.png, inbox-phone-filters.png, inbox-review-form.png,
// inbox-remember.png, inbox-remembered.png, inbox-compact.png,
// inbox-deadline.png, inbox-new.png, inbox-triage.png and
// inbox-sign-in.png are saved there. CHROMIUM names the browser (default
// /usr/bin/chromium).
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { chromium, type Locator, type Page } from "playwright-core";
import { chromiumPath, card } from "./page";
import {
  AgentService,
  DecisionSource,
  GrantScope,
  Role,
  RunStatus,
  type AgentChunk,
} from "../src/gen/agentd/v1/agentd_pb";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { StreamAgentRequestSchema } from "../src/gen/agentd/v1/agentd_pb";
import { expectNoViolations } from "./axe";

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
  check(last?.chunk.case === "finish", `the run of ${JSON.stringify(request.prompt ?? request.messages)} finished its stream`);
  return chunks[0].runId;
}

/** The card's status: what was sent, then how the run went on. */
function cardStatus(page: Page, runId: string): Locator {
  return card(page, runId).getByRole("status");
}

async function focused(locator: Locator): Promise<boolean> {
  return locator.evaluate((element) => element === document.activeElement);
}

/** Waits until `locator` has focus. */
async function waitFocused(page: Page, locator: Locator, what: string): Promise<void> {
  const element = await locator.elementHandle(SOON);
  try {
    await page.waitForFunction((target) => target === document.activeElement, element, SOON);
  } catch {
    const now = await page.evaluate(() => document.activeElement?.outerHTML.slice(0, 120));
    throw new Error(`inbox: ${what}; focus is on ${now}`);
  }
}

/** The bottom of the sticky header, in the viewport. */
async function headerBottom(page: Page): Promise<number> {
  const box = (await page.getByRole("banner").boundingBox())!;
  return box.y + box.height;
}

async function visibleIds(page: Page): Promise<string[]> {
  return page.getByRole("article").evaluateAll((cards) =>
    cards.filter((c) => !(c as HTMLElement).hidden && (c as HTMLElement).offsetParent !== null).map((c) => c.getAttribute("data-run-id")!),
  );
}

async function statusOf(agentd: Agentd, runId: string): Promise<RunStatus> {
  return (await agentd.getRun({ runId })).status;
}

const REVIEW = 'call human_review {"draft": "Dear customer, your refund is on its way."}';

export async function main([openUrl, keyedUrl, acmeKey, globexKey, screenshot, screens]: string[]) {
  check(openUrl && keyedUrl && acmeKey && globexKey, "usage: inbox.ts OPEN_URL KEYED_URL ACME_KEY GLOBEX_KEY [SCREENSHOT [SCREENS_DIR]]");
  const agentd = client(openUrl);
  const shot = (name: string) => (screens ? `${screens}/${name}` : "");
  const browser = await chromium.launch({
    executablePath: chromiumPath(),
    args: ["--no-sandbox"],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1000, height: 900 } });
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(error.message));

    // Runs that wait before the page opens: ListRuns shows them.
    const plan = await start(agentd, {
      prompt: "Help me pick a plan",
      metadata: { customer: "Ada Lovelace", ticket: "T-1043", trace_id: "trace-77", region: "EU" },
    });
    const pizza = await start(agentd, { prompt: "Order me a pizza, multi toppings" });
    const name = await start(agentd, {
      messages: [
        { role: Role.USER, content: "My order 1043 arrived damaged" },
        { role: Role.ASSISTANT, content: "I am sorry. I can send a replacement or refund it." },
        { role: Role.USER, content: "free text please" },
      ],
    });
    const approve = await start(agentd, { prompt: REVIEW, options: { requireToolApproval: true } });
    await page.goto(openUrl);
    await page.getByRole("status").filter({ hasText: /^Live$/ }).waitFor(SOON);
    for (const runId of [plan, pizza, name, approve]) await card(page, runId).waitFor(SOON);
    const order = await page.getByRole("article").evaluateAll((cards) => cards.map((c) => c.getAttribute("data-run-id")));
    check(JSON.stringify(order) === JSON.stringify([approve, name, pizza, plan]), `newest first: ${order}`);
    // Who is signed in: a server without keys serves the tenant `default`.
    await page.getByRole("banner").getByText("default", { exact: true }).waitFor(SOON);

    // Context: the prompt, the last assistant text, the metadata as the
    // agent's inbox_metadata orders it (ticket, customer first; trace_id hidden).
    const planContext = card(page, plan).getByRole("group", { name: "Context" });
    await planContext.getByText("Help me pick a plan").waitFor(SOON);
    const terms = await planContext.locator("dt").allTextContents();
    check(JSON.stringify(terms) === JSON.stringify(["ticket", "customer", "region"]), `metadata keys: ${terms}`);
    const values = await planContext.locator("dd").allTextContents();
    check(JSON.stringify(values) === JSON.stringify(["T-1043", "Ada Lovelace", "EU"]), `metadata values: ${values}`);
    const nameContext = card(page, name).getByRole("group", { name: "Context" });
    await nameContext.getByText("My order 1043 arrived damaged").waitFor(SOON);
    await nameContext.getByText("I am sorry. I can send a replacement or refund it.").waitFor(SOON);
    await expectNoViolations(page, "four runs waiting, with their contexts");
    // Dense: a waiting card takes a few hundred pixels, not a screen.
    const planHeight = (await card(page, plan).boundingBox())!.height;
    check(planHeight < 450, `the plan card is ${planHeight}px tall`);
    if (screenshot) await page.screenshot({ path: screenshot, fullPage: true });
    if (screens) await page.screenshot({ path: shot("inbox-context.png"), fullPage: true });

    // A phone: the header and the search take at most a fifth of the first
    // screen, the filters fold behind a button, and the first card's
    // question with its buttons shows without scrolling.
    await page.setViewportSize({ width: 390, height: 844 });
    const filters = page.getByRole("button", { name: "Filters" });
    await filters.waitFor(SOON);
    check(!(await page.getByRole("combobox", { name: "Kind" }).isVisible()), "the filters are folded on a phone");
    const bottoms = await Promise.all(
      [page.getByRole("searchbox", { name: "Search" }), filters, page.locator("#search-count")].map(async (locator) => {
        const box = (await locator.boundingBox())!;
        return box.y + box.height;
      }),
    );
    const chrome = Math.max(await headerBottom(page), ...bottoms);
    check(chrome / 844 <= 0.2, `the header and filters take ${Math.round((chrome / 844) * 100)}% of the first screen`);
    const firstApprove = card(page, approve).getByRole("button", { name: "Decline" });
    const declineBox = (await firstApprove.boundingBox())!;
    check(declineBox.y + declineBox.height <= 844, `the first card's question and buttons show on the first screen: ${declineBox.y}`);
    await expectNoViolations(page, "the phone layout");
    if (screens) await page.screenshot({ path: shot("inbox-phone.png") });
    await filters.click();
    check((await filters.getAttribute("aria-expanded")) === "true", "Filters is expanded");
    await page.getByRole("combobox", { name: "Kind" }).waitFor({ state: "visible", ...SOON });
    await expectNoViolations(page, "the phone layout, filters unfolded");
    if (screens) await page.screenshot({ path: shot("inbox-phone-filters.png") });
    await filters.click();
    await page.setViewportSize({ width: 1000, height: 900 });

    // Single-select: radios named by their labels, described by their descriptions.
    const planForm = card(page, plan).getByRole("form", { name: "Which plan should I set up for you?" });
    const pro = planForm.getByRole("radio", { name: "Pro", exact: true });
    const described = await pro.getAttribute("aria-describedby");
    check(described, "an option has a description");
    const description = await page.locator(`[id="${described}"]`).textContent();
    check(description === "Unlimited projects, email support", `Pro's description: ${description}`);
    // Nothing chosen: said here, nothing sent.
    await planForm.getByRole("button", { name: "Send answer" }).click();
    await planForm.getByRole("alert").filter({ hasText: /^Choose an option\.$/ }).waitFor(SOON);
    check((await statusOf(agentd, plan)) === RunStatus.SUSPENDED, "nothing was sent");
    await pro.check();
    await planForm.getByRole("button", { name: "Send answer" }).click();
    // Focus moves to the card's status, which says what was sent.
    await cardStatus(page, plan).filter({ hasText: /^Answered: Pro/ }).waitFor(SOON);
    check(await focused(cardStatus(page, plan)), "focus on the card's status after the answer");
    await card(page, plan).getByText("Thanks! You answered: Pro.").waitFor(SOON);
    await cardStatus(page, plan).filter({ hasText: "Answered: Pro · the run completed" }).waitFor(SOON);
    check((await statusOf(agentd, plan)) === RunStatus.COMPLETED, "the plan run completed");
    await expectNoViolations(page, "an answered card, finished");

    // Multi-select: checkboxes named by their labels.
    const pizzaForm = card(page, pizza).getByRole("form", { name: "Which toppings do you want on your pizza?" });
    await pizzaForm.getByRole("button", { name: "Send answer" }).click();
    await pizzaForm.getByRole("alert").filter({ hasText: /^Choose at least one option\.$/ }).waitFor(SOON);
    await pizzaForm.getByRole("checkbox", { name: "Mushrooms", exact: true }).check();
    await pizzaForm.getByRole("checkbox", { name: "Basil", exact: true }).check();
    await pizzaForm.getByRole("button", { name: "Send answer" }).click();
    await card(page, pizza).getByText("User answered: Mushrooms, Basil").waitFor(SOON);
    await card(page, pizza).getByText("Thanks! You answered: Mushrooms, Basil.").waitFor(SOON);
    await cardStatus(page, pizza).filter({ hasText: "Answered: Mushrooms, Basil" }).waitFor(SOON);

    // Free text: a textbox named Answer; empty is refused here; Shift+Enter
    // is a new line, Enter sends, trimmed.
    const nameForm = card(page, name).getByRole("form", { name: "What should I call you?" });
    const answer = nameForm.getByRole("textbox", { name: "Answer" });
    await answer.focus();
    await answer.press("Enter");
    await nameForm.getByRole("alert").filter({ hasText: /^Write an answer\.$/ }).waitFor(SOON);
    await answer.pressSequentially("Ada");
    await answer.press("Shift+Enter");
    check((await answer.inputValue()) === "Ada\n", `Shift+Enter is a new line: ${JSON.stringify(await answer.inputValue())}`);
    await answer.fill("  Ada  ");
    await answer.press("Enter");
    await card(page, name).getByText("Thanks! You answered: Ada.").waitFor(SOON);
    await cardStatus(page, name).filter({ hasText: /^Answered: Ada/ }).waitFor(SOON);

    // Approve with edited arguments; the tool then asks for a review.
    const approval = card(page, approve).getByRole("form", { name: "Approve: human review?" });
    await approval.getByRole("button", { name: "Edit arguments" }).click();
    const args = approval.getByRole("textbox", { name: "Arguments as JSON" });
    const shown = JSON.parse(await args.inputValue());
    check(shown.draft === "Dear customer, your refund is on its way.", `the call's arguments: ${JSON.stringify(shown)}`);
    await args.fill(JSON.stringify({ draft: "Dear Ms Lovelace, your refund of 40 EUR is on its way." }, null, 2));
    await approval.getByRole("button", { name: "Approve" }).click();
    const review = card(page, approve).getByRole("form", { name: "Review the draft" });
    await review.waitFor(SOON);
    await review.getByText("Dear Ms Lovelace, your refund of 40 EUR is on its way.").waitFor(SOON);
    const edited = await agentd.getRun({ runId: approve });
    check(edited.editedCalls.length === 1, "GetRun lists the edited call");
    check(edited.editedCalls[0].originalArgs?.draft === "Dear customer, your refund is on its way.", "with the model's arguments");
    // The resume schema as a form: the decision as radios named by their
    // values in words, the revised text only once Edit is chosen.
    const decision = review.getByRole("radiogroup", { name: "Decision", exact: true });
    check((await decision.getByRole("radio").count()) === 3, "three decisions");
    const revised = review.getByRole("textbox", { name: "Revised text", exact: true });
    check((await revised.count()) === 0 || !(await revised.isVisible()), "revised_text waits for edit");
    // JSON stays behind the switch: data the schema refuses is said in words, with the choices.
    const asJson = review.getByRole("switch", { name: "Edit as JSON" });
    await asJson.click();
    const data = review.getByRole("textbox", { name: "Response as JSON" });
    await data.fill('{"decision": "maybe"}');
    await review.getByRole("button", { name: "Send answer" }).click();
    const schemaAlert = review.getByRole("alert");
    await schemaAlert.waitFor(SOON);
    const said = (await schemaAlert.textContent()) ?? "";
    check(said.startsWith("That does not fit what human_review accepts: "), `the refusal in words: ${said}`);
    check(said.includes('"approve", "reject" or "edit"'), `the refusal names the choices: ${said}`);
    check(!said.includes("data/"), `no JSON pointer: ${said}`);
    check((await data.inputValue()) === '{"decision": "maybe"}', "the editor keeps what was typed");
    await asJson.click();
    await decision.getByRole("radio", { name: "Edit", exact: true }).check();
    await revised.waitFor({ state: "visible", ...SOON });
    check((await revised.getAttribute("aria-required")) === "true", "revised_text is required on edit");
    check((await decision.getAttribute("aria-required")) === "true", "the decision is required");
    check((await revised.inputValue()) === "Dear Ms Lovelace, your refund of 40 EUR is on its way.", "the revised text starts from the draft");
    await revised.fill("");
    await review.getByRole("button", { name: "Send answer" }).click();
    await review.getByRole("alert").filter({ hasText: "One field needs your attention." }).waitFor(SOON);
    check((await revised.getAttribute("aria-invalid")) === "true", "an empty revised_text is marked");
    await revised.fill("Dear Ms Lovelace, your refund of 40 EUR was sent today.");
    await review.getByRole("textbox", { name: "Comment", exact: true }).fill("Say when");
    await expectNoViolations(page, "a review's form, a field marked");
    if (screens) {
      await page.setViewportSize({ width: 1000, height: 1600 });
      await review.evaluate((form) => form.scrollIntoView({ block: "center" }));
      await review.screenshot({ path: shot("inbox-review-form.png") });
      await page.setViewportSize({ width: 1000, height: 900 });
    }
    await review.getByRole("button", { name: "Send answer" }).click();
    await card(page, approve).getByText("Reviewer edited the draft: Dear Ms Lovelace, your refund of 40 EUR was sent today.").first().waitFor(SOON);
    await cardStatus(page, approve).filter({ hasText: "the run completed" }).waitFor(SOON);

    // Decline with a reason.
    const declined = await start(agentd, { prompt: REVIEW, options: { requireToolApproval: true } });
    const declineForm = card(page, declined).getByRole("form", { name: "Approve: human review?" });
    await declineForm.waitFor(SOON);
    // A run outside any thread offers no remembering.
    const rememberOffered = declineForm.getByRole("button", { name: "Approve and remember", exact: true });
    check((await rememberOffered.count()) === 0, "no thread, no remembering");
    await declineForm.getByRole("textbox", { name: "Reason" }).fill("Not today");
    await declineForm.getByRole("button", { name: "Decline" }).click();
    await card(page, declined).getByText("The user declined this call of human_review: Not today").first().waitFor(SOON);
    await cardStatus(page, declined).filter({ hasText: "Declined: Not today · the run completed" }).waitFor(SOON);
    check((await statusOf(agentd, declined)) === RunStatus.COMPLETED, "the declined run completed");
    check(
      (await agentd.getRun({ runId: declined })).decisions[0]?.source === DecisionSource.INBOX,
      "the inbox's decisions come through the inbox",
    );

    // On a thread: approve and remember in this conversation; the thread's
    // next run is approved by the grant, without asking.
    const threadId = "support:remember";
    const remembered = await start(agentd, { prompt: REVIEW, threadId, options: { requireToolApproval: true } });
    const rememberForm = card(page, remembered).getByRole("form", { name: "Approve: human review?" });
    await rememberForm.waitFor(SOON);
    const rememberButton = rememberForm.getByRole("button", { name: "Approve and remember", exact: true });
    await rememberButton.waitFor(SOON);
    // Its buttons' labels fit on a phone, on one line each.
    await page.setViewportSize({ width: 390, height: 844 });
    const rememberHeight = (await rememberButton.boundingBox())!.height;
    check(rememberHeight < 45, `Approve and remember is one line on a phone: ${rememberHeight}px`);
    await expectNoViolations(page, "an approval on a thread, on a phone");
    if (screens) {
      await rememberForm.evaluate((form) => form.scrollIntoView({ block: "center" }));
      await card(page, remembered).screenshot({ path: shot("inbox-remember.png") });
    }
    await page.setViewportSize({ width: 1000, height: 900 });
    await rememberButton.click();
    const rememberedReview = card(page, remembered).getByRole("form", { name: "Review the draft" });
    await rememberedReview.waitFor(SOON);
    await cardStatus(page, remembered).filter({ hasText: "Approved, and remembered in this conversation" }).waitFor(SOON);
    if (screens) {
      // What was sent stays said on the card, above the run's next question.
      await page.setViewportSize({ width: 1000, height: 1600 });
      await card(page, remembered).evaluate((element) => element.scrollIntoView({ block: "center" }));
      await card(page, remembered).screenshot({ path: shot("inbox-remembered.png") });
      await page.setViewportSize({ width: 1000, height: 900 });
    }
    const grants = (await agentd.getThread({ threadId })).grants;
    check(grants.length === 1 && grants[0].toolName === "human_review", `the thread's grant: ${grants.map((g) => g.toolName)}`);
    check(grants[0].scope === GrantScope.THREAD && !grants[0].expiresAt, "a grant of the thread without an end");
    await rememberedReview.getByRole("radiogroup", { name: "Decision", exact: true }).getByRole("radio", { name: "Approve", exact: true }).check();
    await rememberedReview.getByRole("button", { name: "Send answer" }).click();
    await cardStatus(page, remembered).filter({ hasText: "the run completed" }).waitFor(SOON);
    const granted = await start(agentd, { prompt: REVIEW, threadId, options: { requireToolApproval: true } });
    await card(page, granted).getByRole("form", { name: "Review the draft" }).waitFor(SOON);
    check(
      (await card(page, granted).getByRole("form", { name: "Approve: human review?" }).count()) === 0,
      "nobody is asked to approve",
    );
    const grantedRun = await agentd.getRun({ runId: granted });
    check(grantedRun.decisions[0]?.source === DecisionSource.GRANT, `approved by the grant: ${grantedRun.decisions.map((d) => d.source)}`);
    await agentd.revokeGrant({ grantId: grants[0].grantId });
    check((await agentd.getThread({ threadId })).grants.length === 0, "revoked");
    const grantedReview = card(page, granted).getByRole("form", { name: "Review the draft" });
    await grantedReview.getByRole("radiogroup", { name: "Decision", exact: true }).getByRole("radio", { name: "Approve", exact: true }).check();
    await grantedReview.getByRole("button", { name: "Send answer" }).click();
    await cardStatus(page, granted).filter({ hasText: "the run completed" }).waitFor(SOON);

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

    // The whole history from the prompt on, then cancel.
    const history = await start(agentd, { prompt: "free text for the history" });
    const historyCard = card(page, history);
    await historyCard.getByRole("button", { name: "Show history" }).click();
    const historyRegion = historyCard.getByRole("region", { name: "History" });
    await historyRegion.getByText("free text for the history").waitFor(SOON);
    await historyRegion.getByText("Asks: What should I call you?").waitFor(SOON);
    await expectNoViolations(page, "a run's history");
    await historyCard.getByRole("button", { name: "Cancel run" }).click();
    await historyCard.getByRole("button", { name: "Confirm cancel" }).click();
    await historyCard.waitFor({ state: "detached", ...SOON });
    check((await statusOf(agentd, history)) === RunStatus.CANCELLED, "cancelled from the inbox");

    // Nobody approved a review nor answered a question by their deadline,
    // which approved the one and declined the other: the review asked for
    // next shows the declined question in its history as the deadline's.
    const lapsed = await start(agentd, {
      prompt: `${REVIEW}; call ask_user {"question": "Which tone?"}`,
      agentId: "reviewer",
      options: { suspendTtlSeconds: 3n },
    });
    const lapsedCard = card(page, lapsed);
    const lapsedApproval = lapsedCard.getByRole("form", { name: "Approve: human review?" });
    await lapsedApproval.waitFor(SOON);
    await lapsedApproval.waitFor({ state: "detached", ...SOON });
    await lapsedCard.getByRole("button", { name: "Show history" }).click();
    const lapsedHistory = lapsedCard.getByRole("region", { name: "History" });
    await lapsedHistory.getByText("Nobody answered in time").waitFor(SOON);
    await expectNoViolations(page, "a history with the deadline's answer");
    if (screens) await lapsedCard.screenshot({ path: shot("inbox-deadline.png") });
    // Nobody reviews it either: declined at its own deadline, the run ends.
    await lapsedCard.waitFor({ state: "detached", ...SOON });
    check((await statusOf(agentd, lapsed)) === RunStatus.COMPLETED, "the run went on past its deadlines");

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
    for (const done of [plan, pizza, name, approve, declined, remembered, granted]) {
      await card(page, done).getByRole("button", { name: "Dismiss" }).click();
    }

    // Triage: 50 waiting runs; Search narrows them by metadata, prompt,
    // question and run id, with the count beside it.
    const fifty: string[] = [];
    for (let i = 0; i < 50; i += 1) {
      const customer = i % 10 === 3 ? "Grace Hopper" : `Customer ${i}`;
      const prompt = i === 7 ? "free text: the invoice is wrong" : i % 2 ? "Order a pizza, multi" : `Help me pick a plan ${i}`;
      fifty.push(await start(agentd, { prompt, metadata: { customer, ticket: `T-${2000 + i}` } }));
    }
    const waitingNow = 52;
    for (const runId of fifty) await card(page, runId).waitFor(SOON);
    const search = page.getByRole("searchbox", { name: "Search" });
    const count = page.locator("#search-count");
    await count.filter({ hasText: `${waitingNow} runs wait on you` }).waitFor(SOON);
    await expectNoViolations(page, "52 waiting runs, many asking the same");
    await search.fill("grace HOPPER");
    await count.filter({ hasText: `5 of ${waitingNow} runs match` }).waitFor(SOON);
    const graces = fifty.filter((_, i) => i % 10 === 3);
    check(JSON.stringify((await visibleIds(page)).sort()) === JSON.stringify([...graces].sort()), "the search finds Grace Hopper's five runs");
    await search.fill("invoice is wrong");
    await count.filter({ hasText: `1 of ${waitingNow} runs match` }).waitFor(SOON);
    check(JSON.stringify(await visibleIds(page)) === JSON.stringify([fifty[7]]), "the prompt is searched");
    await search.fill(fifty[20]);
    await count.filter({ hasText: `1 of ${waitingNow} runs match` }).waitFor(SOON);
    await search.fill("toppings");
    await count.filter({ hasText: `24 of ${waitingNow} runs match` }).waitFor(SOON);
    await search.fill("t-2011");
    await count.filter({ hasText: `1 of ${waitingNow} runs match` }).waitFor(SOON);
    await expectNoViolations(page, "a search that matches one run");
    // Escape clears the box and the filter together; in an empty box it
    // leaves the box.
    await search.press("Escape");
    check((await search.inputValue()) === "", "Escape empties Search");
    await count.filter({ hasText: `${waitingNow} runs wait on you` }).waitFor(SOON);
    check((await visibleIds(page)).length === waitingNow, "Escape shows every run again");
    check(await focused(search), "the first Escape stays in Search");
    await search.press("Escape");
    check(!(await focused(search)), "Escape in an empty Search leaves it");

    // Kind: a review waits among the questions.
    const reviewRun = await start(agentd, { prompt: 'call human_review {"draft": "Hello"}' });
    await card(page, reviewRun).waitFor(SOON);
    const kind = page.getByRole("combobox", { name: "Kind" });
    await kind.selectOption({ label: "Review" });
    await count.filter({ hasText: `1 of ${waitingNow + 1} runs match` }).waitFor(SOON);
    check(JSON.stringify(await visibleIds(page)) === JSON.stringify([reviewRun]), "Review shows the custom tool's run");
    await kind.selectOption({ label: "Question" });
    await count.filter({ hasText: `${waitingNow} of ${waitingNow + 1} runs match` }).waitFor(SOON);
    await kind.selectOption({ label: "All" });

    // Sort: oldest first.
    await page.getByRole("combobox", { name: "Sort" }).selectOption({ label: "Oldest first" });
    const oldest = await visibleIds(page);
    check(oldest[0] === mine && oldest[oldest.length - 1] === reviewRun, `oldest first: ${oldest[0]} … ${oldest[oldest.length - 1]}`);
    await page.getByRole("combobox", { name: "Sort" }).selectOption({ label: "Newest first" });
    check((await visibleIds(page))[0] === reviewRun, "newest first again");

    // Compact view: one line per run, still an article named by its run
    // id, opened in place by its button.
    const compact = page.getByRole("switch", { name: "Compact view" });
    check((await compact.getAttribute("aria-checked")) === "false", "the compact view is off by default");
    await compact.click();
    const first = card(page, fifty[48]);
    const opener = first.getByRole("button", { expanded: false });
    await opener.waitFor(SOON);
    check(!(await first.getByRole("form").isVisible()), "a compact run hides its form");
    const height = (await first.boundingBox())?.height ?? 0;
    check(height < 60, `one line: ${height}px`);
    await opener.click();
    await first.getByRole("button", { expanded: true }).waitFor(SOON);
    await first.getByRole("form", { name: "Which plan should I set up for you?" }).waitFor({ state: "visible", ...SOON });
    await first.getByRole("group", { name: "Context" }).waitFor({ state: "visible", ...SOON });
    await expectNoViolations(page, "the compact view, one run open");
    if (screens) await page.screenshot({ path: shot("inbox-compact.png") });

    // Shortcuts: / searches, j and k move between runs, ? shows them.
    await page.locator("body").click({ position: { x: 5, y: 300 } });
    await page.keyboard.press("/");
    check(await focused(search), "/ focuses Search");
    await page.keyboard.press("Escape");
    await page.keyboard.press("j");
    check(await focused(card(page, reviewRun)), "j: the first run");
    await page.keyboard.press("j");
    check(await focused(card(page, fifty[49])), "j: the next run");
    await page.keyboard.press("k");
    check(await focused(card(page, reviewRun)), "k: the previous run");
    await page.keyboard.press("?");
    await page.getByRole("region", { name: "Keyboard shortcuts" }).waitFor(SOON);
    await expectNoViolations(page, "the shortcuts shown");
    if (screens) await page.screenshot({ path: shot("inbox-triage.png") });
    await page.keyboard.press("?");
    await compact.click();

    // k from the bottom up: each run it moves to shows its header below
    // the sticky header, never under it.
    await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
    await page.locator("body").click({ position: { x: 5, y: 300 } });
    await page.keyboard.press("k");
    for (let i = 0; i < 6; i += 1) {
      await page.keyboard.press("k");
      const box = (await page.locator("article:focus").boundingBox())!;
      const under = await headerBottom(page);
      check(box.y >= under - 1, `k: the run's top (${box.y}) is below the sticky header (${under})`);
    }
    // Escape leaves a text box for its run, and the shortcuts work again.
    const freeText = card(page, fifty[7]);
    const freeAnswer = freeText.getByRole("textbox", { name: "Answer" });
    await freeAnswer.focus();
    await page.keyboard.type("j");
    check((await freeAnswer.inputValue()) === "j", "j types in a text box");
    await page.keyboard.press("Escape");
    check(await focused(freeText), "Escape leaves the text box for its run");
    await page.keyboard.press("j");
    check(await focused(card(page, fifty[6])), "j goes on from that run");
    await freeAnswer.fill("");

    // The runs started above arrived while the page was open: counted in
    // the tab's title. Opened afresh, what is listed is not new.
    check(/^\(\d+\) agentd inbox$/.test(await page.title()), `arrivals counted in the title: ${await page.title()}`);
    await page.reload();
    await page.getByRole("status").filter({ hasText: /^Live$/ }).waitFor(SOON);
    await card(page, fifty[0]).waitFor(SOON);
    check((await page.title()) === "agentd inbox", `the title of a page opened afresh: ${await page.title()}`);
    check((await page.getByText("New", { exact: true }).count()) === 0, "nothing listed is new");
    // A run that arrives while the reader is further down: counted in the
    // tab's title, said in a polite live region, marked New until seen.
    await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
    const arrived = await start(agentd, { prompt: "free text, while you read" });
    await card(page, arrived).waitFor(SOON);
    await page.waitForFunction(() => document.title === "(1) agentd inbox", null, SOON);
    await page.getByRole("status").filter({ hasText: /^New: What should I call you\?/ }).waitFor({ state: "attached", ...SOON });
    const badge = card(page, arrived).getByText("New", { exact: true });
    check(await badge.isVisible(), "the new run is marked New");
    const arrivedToo = await start(agentd, { prompt: "Help me pick a plan, while you read" });
    await page.waitForFunction(() => document.title === "(2) agentd inbox", null, SOON);
    await expectNoViolations(page, "two runs arrived, not seen yet");
    // Seen once in view for a moment: the mark and the count go.
    await card(page, arrived).scrollIntoViewIfNeeded();
    if (screens) await page.screenshot({ path: shot("inbox-new.png") });
    await badge.waitFor({ state: "detached", ...SOON });
    await card(page, arrivedToo).scrollIntoViewIfNeeded();
    await card(page, arrivedToo).getByText("New", { exact: true }).waitFor({ state: "detached", ...SOON });
    await page.waitForFunction(() => document.title === "agentd inbox", null, SOON);

    check(problems.length === 0, `page errors: ${problems.join("; ")}`);
    console.log(`inbox: every scenario passed; a new suspension appeared after ${appeared} ms`);

    // Keys: the page asks for one, refuses a wrong one, and shows only
    // the signed-in tenant's runs; the header names the tenant.
    const acme = client(keyedUrl, acmeKey);
    const globex = client(keyedUrl, globexKey);
    const acmeRun = await start(acme, { prompt: "Help me pick a plan" });
    const globexRun = await start(globex, { prompt: "Help me pick a plan" });
    const context = await browser.newContext();
    const keyed = await context.newPage();
    await keyed.goto(keyedUrl);
    const key = keyed.getByRole("textbox", { name: "API key" });
    await key.waitFor(SOON);
    await expectNoViolations(keyed, "the sign-in form");
    if (screens) await keyed.screenshot({ path: shot("inbox-sign-in.png") });
    const remember = keyed.getByRole("checkbox", { name: "Remember on this device" });
    check(!(await remember.isChecked()), "Remember on this device is off by default");
    await key.fill("not-a-key-of-anyone");
    await keyed.getByRole("button", { name: "Sign in" }).click();
    await keyed.getByRole("alert").filter({ hasText: "did not accept" }).waitFor(SOON);
    await expectNoViolations(keyed, "a key refused");
    await keyed.getByRole("textbox", { name: "API key" }).fill(acmeKey);
    await keyed.getByRole("button", { name: "Sign in" }).click();
    await card(keyed, acmeRun).waitFor(SOON);
    // Signed in, focus goes to the first run.
    await waitFocused(keyed, card(keyed, acmeRun), "after sign-in, focus is on the first run");
    await keyed.getByRole("banner").getByText("acme", { exact: true }).waitFor(SOON);
    await expectNoViolations(keyed, "signed in as acme");
    check((await card(keyed, globexRun).count()) === 0, "another tenant's run is not shown");
    check((await keyed.getByRole("article").count()) === 1, "only the tenant's run");
    // Kept for this tab only: another tab asks again.
    check((await keyed.evaluate(() => localStorage.getItem("agentd.apiKey"))) === null, "not remembered");
    const otherTab = await context.newPage();
    await otherTab.goto(keyedUrl);
    await otherTab.getByRole("textbox", { name: "API key" }).waitFor(SOON);
    // Remembered: other tabs open signed in, until Sign out.
    await otherTab.getByRole("textbox", { name: "API key" }).fill(acmeKey);
    await otherTab.getByRole("checkbox", { name: "Remember on this device" }).check();
    await otherTab.getByRole("button", { name: "Sign in" }).click();
    await card(otherTab, acmeRun).waitFor(SOON);
    const third = await context.newPage();
    await third.goto(keyedUrl);
    await card(third, acmeRun).waitFor(SOON);
    await third.getByRole("button", { name: "Sign out" }).click();
    await third.getByRole("textbox", { name: "API key" }).waitFor(SOON);
    check((await third.evaluate(() => localStorage.getItem("agentd.apiKey"))) === null, "Sign out forgets the key");
    // Its answers go through with the key.
    const acmeForm = card(keyed, acmeRun).getByRole("form", { name: "Which plan should I set up for you?" });
    await acmeForm.getByRole("radio", { name: "Enterprise", exact: true }).check();
    await acmeForm.getByRole("button", { name: "Send answer" }).click();
    await card(keyed, acmeRun).getByText("Thanks! You answered: Enterprise.").waitFor(SOON);
    check((await statusOf(globex, globexRun)) === RunStatus.SUSPENDED, "globex's run is untouched");
    // The connection line, without protocol detail.
    const line = keyed.getByRole("banner").getByRole("status");
    check((await line.textContent()) === "Live", `the line: ${await line.textContent()}`);
    await context.setOffline(true);
    await line.filter({ hasText: /^Offline — retrying$/ }).waitFor({ timeout: 20_000 });
    await expectNoViolations(keyed, "offline");
    await context.setOffline(false);
    await line.filter({ hasText: /^Live$/ }).waitFor({ timeout: 20_000 });
    console.log("inbox: signing in with a key shows only that tenant's runs, and names the tenant");
  } finally {
    await browser.close();
  }
}
