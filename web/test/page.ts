// What every browser test script shares: where chromium is, and a run's
// card found as a screen reader finds it.
import type { Locator, Page } from "playwright-core";

/** The browser to drive: CHROMIUM, or Debian's chromium. */
export function chromiumPath(): string {
  const env = (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env;
  return env?.CHROMIUM || "/usr/bin/chromium";
}

/** Run `runId`'s card: the article whose accessible name holds the id. */
export function card(page: Page, runId: string): Locator {
  return page.getByRole("article", { name: new RegExp(runId) });
}
