// axe-core in the page under test: every state a browser test visits is
// checked against the WCAG 2.x A and AA rules and best practices, and a
// violation fails the test with the rule, its impact and the elements.
import axe from "axe-core";
import type { Page } from "playwright-core";

interface AxeResults {
  violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[]; failureSummary?: string }[] }[];
}

/** Runs axe-core on the page as it is now; throws naming `state` and every violation. */
export async function expectNoViolations(page: Page, state: string): Promise<void> {
  // Evaluated over the DevTools protocol: the page's Content-Security-Policy
  // (script-src 'self') refuses an inline script tag.
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(axe.source);
  const results = (await page.evaluate(() =>
    (window as unknown as { axe: { run: (context: Document, options: object) => Promise<unknown> } }).axe.run(document, {
      resultTypes: ["violations"],
    }),
  )) as AxeResults;
  if (results.violations.length === 0) return;
  const lines = results.violations.map(
    (violation) =>
      `${violation.id} (${violation.impact}): ${violation.help}\n` +
      violation.nodes.map((node) => `    ${JSON.stringify(node.target)} ${node.failureSummary ?? ""}`.trimEnd()).join("\n"),
  );
  throw new Error(`axe-core: ${results.violations.length} violation(s) in ${state}:\n${lines.join("\n")}`);
}
