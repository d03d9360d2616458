// The inbox with 300 waiting runs, in a real browser (playwright-core
// driving Debian's chromium): the page lists them and fills in their
// contexts without moving what the reader sees (the cumulative layout
// shift, from a PerformanceObserver's `layout-shift` entries without recent
// input, stays under 0.1, on a phone and on a desktop), the contexts in
// view first; a long context unfolds behind `Show all`; and on a phone
// (390×844) the header and the search take at most a fifth of the first
// screen. Every state is checked with axe-core.
//
//   node test/run.mjs many.ts URL [SCREENS_DIR]
//
// URL is a server without keys whose default agent has ask_user (its
// inbox_metadata shows `ticket` and `customer` first, in the cards' titles
// once their contexts are read). The page is opened on a phone, then on a
// desktop. With
// SCREENS_DIR, many-desktop.png, many-context-open.png, many-phone.png and
// many-phone-filters.png are saved there. CHROMIUM names the browser
// (default /usr/bin/chromium).
import { createClient, type Client } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { chromium, type Browser, type Page } from "playwright-core";
import { chromiumPath } from "./page";
import { AgentService, Role, type StreamAgentRequestSchema } from "../src/gen/agentd/v1/agentd_pb";
import { expectNoViolations } from "./axe";

type Agentd = Client<typeof AgentService>;
const RUNS = 300;
const SOON = { timeout: 10_000 };
/** The page reads 300 contexts; on a busy machine that takes a while. */
const FILLED = { timeout: 120_000 };

function check(condition: unknown, what: string): asserts condition {
  if (!condition) throw new Error(`many: ${what}`);
}

const LONG =
  "Help me pick a plan for the whole team. We are twelve people in three countries, " +
  "two of us need single sign-on, the others mostly share documents, and the finance " +
  "department wants one invoice a quarter in euros with our VAT number on it.\nAlso: the old plan ends on the 31st.";

/** The runs differ as real ones do: questions of each kind, short and
 * long prompts, an assistant's last words, metadata or none. */
function request(i: number): MessageInitShape<typeof StreamAgentRequestSchema> {
  const metadata: Record<string, string> = i % 3 === 0 ? {} : { ticket: `T-${5000 + i}`, customer: `Customer ${i}`, region: i % 2 ? "EU" : "US" };
  switch (i % 5) {
    case 0:
      return { prompt: LONG, metadata };
    case 1:
      return { prompt: `Order a pizza, multi ${i}`, metadata };
    case 2:
      return {
        messages: [
          { role: Role.USER, content: `My order ${i} arrived damaged` },
          { role: Role.ASSISTANT, content: "I am sorry. I can send a replacement or refund it." },
          { role: Role.USER, content: "free text please" },
        ],
        metadata,
      };
    default:
      return { prompt: `Help me pick a plan ${i}`, metadata };
  }
}

async function start(agentd: Agentd, i: number): Promise<void> {
  let finished = false;
  for await (const chunk of agentd.streamAgent(request(i))) finished = chunk.chunk.case === "finish";
  check(finished, `run ${i} finished its stream`);
}

/** The cards whose context is shown, of those whose top is on the first screen. */
async function firstScreen(page: Page): Promise<{ cards: number; filled: number }> {
  return page.evaluate(() => {
    const onScreen = [...document.querySelectorAll("article")].filter((card) => card.getBoundingClientRect().top < window.innerHeight);
    return { cards: onScreen.length, filled: onScreen.filter((card) => card.querySelector('[role="group"][aria-label="Context"]')).length };
  });
}

/** Opens the page at `viewport`, waits until the contexts of all runs are
 * shown (those on the first screen first), and checks that nothing moved
 * under the reader meanwhile. */
async function fillIn(browser: Browser, url: string, viewport: { width: number; height: number }, where: string, problems: string[]): Promise<Page> {
  const page = await browser.newPage({ viewport });
  page.on("pageerror", (error) => problems.push(error.message));
  // Every layout shift the reader did not cause, from the first paint on.
  await page.addInitScript(() => {
    const shifts: { value: number; at: number; what: string[] }[] = [];
    (window as unknown as { shifts: typeof shifts }).shifts = shifts;
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries() as (PerformanceEntry & { value: number; hadRecentInput: boolean; sources?: { node?: Node }[] })[]) {
        if (entry.hadRecentInput) continue;
        const what = (entry.sources ?? []).map((source) => {
          const node = source.node as Element | undefined;
          return node ? `${node.nodeName.toLowerCase()}.${node.className}` : "?";
        });
        shifts.push({ value: entry.value, at: Math.round(entry.startTime), what });
      }
    }).observe({ type: "layout-shift", buffered: true });
  });
  const opened = Date.now();
  await page.goto(url);
  await page.getByRole("status").filter({ hasText: /^Live$/ }).waitFor(SOON);
  await page.locator("#search-count").filter({ hasText: `${RUNS} runs wait on you` }).waitFor(FILLED);
  const listedAt = Date.now() - opened;
  // The contexts in view come first.
  await page.waitForFunction(
    () => {
      const onScreen = [...document.querySelectorAll("article")].filter((card) => card.getBoundingClientRect().top < window.innerHeight);
      return onScreen.length > 0 && onScreen.every((card) => card.querySelector('[role="group"][aria-label="Context"]'));
    },
    null,
    FILLED,
  );
  const firstAt = Date.now() - opened;
  const screen = await firstScreen(page);
  await page.waitForFunction((runs) => document.querySelectorAll('[role="group"][aria-label="Context"]').length === runs, RUNS, FILLED);
  const allAt = Date.now() - opened;
  // Shifts are reported after the frame that made them.
  await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
  const shifts = await page.evaluate(() => (window as unknown as { shifts: { value: number; at: number; what: string[] }[] }).shifts);
  const cls = shifts.reduce((sum, shift) => sum + shift.value, 0);
  console.log(
    `many: on ${where}, listed after ${listedAt} ms; the ${screen.cards} contexts on the first screen after ${firstAt} ms, ` +
      `all ${RUNS} after ${allAt} ms; cumulative layout shift ${cls.toFixed(4)} (${shifts.length} shifts` +
      shifts.map((shift) => `; ${shift.value.toFixed(4)} at ${shift.at} ms: ${shift.what.join(", ")}`).join("") +
      ")",
  );
  check(
    cls < 0.1,
    `on ${where}, cumulative layout shift ${cls.toFixed(3)}: ${shifts
      .slice(0, 10)
      .map((s) => `${s.value.toFixed(3)} at ${s.at} ms (${s.what.join(", ")})`)
      .join("; ")}`,
  );
  return page;
}

export async function main([url, screens]: string[]) {
  check(url, "usage: many.ts URL [SCREENS_DIR]");
  const shot = (name: string) => `${screens}/${name}`;
  const agentd = createClient(AgentService, createGrpcWebTransport({ baseUrl: url }));
  const started = Date.now();
  for (let i = 0; i < RUNS; i += 10) await Promise.all(Array.from({ length: 10 }, (_, j) => start(agentd, i + j)));
  console.log(`many: ${RUNS} runs wait, started in ${Date.now() - started} ms`);

  const browser = await chromium.launch({ executablePath: chromiumPath(), args: ["--no-sandbox"] });
  try {
    const problems: string[] = [];
    // On a phone first, then on a desktop: each opens the page afresh.
    const phone = await fillIn(browser, url, { width: 390, height: 844 }, "a phone", problems);
    await phone.close();
    const page = await fillIn(browser, url, { width: 1000, height: 900 }, "a desktop", problems);
    await expectNoViolations(page, `${RUNS} waiting runs, their contexts read`);
    if (screens) await page.screenshot({ path: shot("many-desktop.png") });

    // A long context is folded; Show all unfolds it.
    const long = page.getByRole("article").filter({ hasText: "finance department" }).first();
    const context = long.getByRole("group", { name: "Context" });
    const folded = (await context.boundingBox())!.height;
    const more = context.getByRole("button", { name: "Show all" });
    await more.click();
    check((await context.getByRole("button", { name: "Show less" }).getAttribute("aria-expanded")) === "true", "Show all is expanded");
    const unfolded = (await context.boundingBox())!.height;
    check(unfolded > folded, `unfolded, the context is taller: ${folded} → ${unfolded}`);
    await expectNoViolations(page, "a long context unfolded");
    if (screens) await long.screenshot({ path: shot("many-context-open.png") });

    // A phone: the runs start within the first fifth of the screen.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.evaluate(() => window.scrollTo(0, 0));
    const filters = page.getByRole("button", { name: "Filters" });
    await filters.waitFor(SOON);
    const bottoms = await Promise.all(
      [page.getByRole("banner"), page.getByRole("searchbox", { name: "Search" }), filters, page.locator("#search-count")].map(async (locator) => {
        const box = (await locator.boundingBox())!;
        return box.y + box.height;
      }),
    );
    const ratio = Math.max(...bottoms) / 844;
    console.log(`many: on a phone the header and the search take ${(ratio * 100).toFixed(1)}% of the first screen`);
    check(ratio <= 0.2, `the header and filters take ${(ratio * 100).toFixed(1)}% of a phone's first screen`);
    const firstCard = page.getByRole("article").first();
    const send = firstCard.getByRole("form").first().getByRole("button").first();
    const sendBox = (await send.boundingBox())!;
    check(sendBox.y + sendBox.height <= 844, `the first run's question and its button show on the first screen (${sendBox.y})`);
    await expectNoViolations(page, "300 runs on a phone");
    if (screens) await page.screenshot({ path: shot("many-phone.png") });
    await filters.click();
    await page.getByRole("combobox", { name: "Kind" }).waitFor({ state: "visible", ...SOON });
    if (screens) await page.screenshot({ path: shot("many-phone-filters.png") });
    check(problems.length === 0, `page errors: ${problems.join("; ")}`);
    console.log("many: 300 waiting runs fill in without moving, and fit a phone");
  } finally {
    await browser.close();
  }
}
