// The inbox's triage controls: Search (with the count of what matches),
// Kind, Agent and Sort, the Compact view switch, and the keyboard
// shortcuts (j/k next/previous run, / search, ? shows them, Escape leaves
// a text box). It holds the controls' state and says when it changes; the
// inbox applies it. On a narrow screen the filters fold behind a
// `Filters` button, so the runs start high on the first screen.
import { h } from "./dom";

export interface Triage {
  agent: string;
  kind: string;
  /** Lower case; empty matches everything. */
  query: string;
  compact: boolean;
}

const SHORTCUTS: [string, string][] = [
  ["j", "Next run"],
  ["k", "Previous run"],
  ["/", "Search"],
  ["?", "Show or hide these shortcuts"],
  ["Esc", "Clear Search, or leave a text box"],
];

function select(id: string, onchange: () => void, options: [string, string][]): HTMLSelectElement {
  return h("select", { id, onchange }, ...options.map(([value, text]) => h("option", { value }, text)));
}

/** Whether a key press belongs to a control that takes text. */
function typing(target: EventTarget | null): boolean {
  const element = target as HTMLElement | null;
  if (!element) return false;
  return element.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(element.tagName);
}

export class Toolbar {
  readonly element: HTMLElement;
  private readonly search = h("input", { id: "search", type: "search", autocomplete: "off", placeholder: "Question, prompt, metadata, run id" });
  private readonly counter = h("p", { class: "count", id: "search-count", "aria-live": "polite" });
  private readonly kind: HTMLSelectElement;
  private readonly agent: HTMLSelectElement;
  private readonly sort: HTMLSelectElement;
  private readonly compact = h(
    "button",
    { type: "button", role: "switch", class: "switch", "aria-checked": "false" },
    h("span", { class: "switch-track", "aria-hidden": "true" }),
    "Compact view",
  );
  private readonly filters = h("div", { class: "filters", id: "filters" });
  private readonly filtersButton = h(
    "button",
    { type: "button", class: "filters-toggle", "aria-expanded": "false", "aria-controls": "filters" },
    "Filters",
  );
  private readonly help = h(
    "section",
    { class: "shortcuts", "aria-label": "Keyboard shortcuts", hidden: true },
    h("h2", {}, "Keyboard shortcuts"),
    h("dl", {}, ...SHORTCUTS.flatMap(([key, what]) => [h("dt", {}, h("kbd", {}, key)), h("dd", {}, what)])),
  );

  constructor(agents: string[], changed: () => void, move: (step: 1 | -1) => void) {
    this.search.setAttribute("aria-describedby", "search-count");
    this.search.addEventListener("input", changed);
    // Escape clears the box and the filter together (the browser's own
    // clearing of a search box would leave the filter applied); in an
    // empty box it leaves the box, like in any other.
    this.search.addEventListener("keydown", (event) => {
      if (event.key !== "Escape" || !this.search.value) return;
      event.preventDefault();
      event.stopPropagation();
      this.search.value = "";
      changed();
    });
    this.kind = select("kind-filter", changed, [
      ["all", "All"],
      ["question", "Question"],
      ["approval", "Approval"],
      ["review", "Review"],
      ["form", "Form"],
    ]);
    this.agent = select("agent-filter", changed, [["", "All agents"], ...agents.map((id): [string, string] => [id, id])]);
    this.sort = select("sort", changed, [
      ["newest", "Newest first"],
      ["oldest", "Oldest first"],
    ]);
    this.compact.addEventListener("click", () => {
      this.compact.setAttribute("aria-checked", String(this.compact.getAttribute("aria-checked") !== "true"));
      changed();
    });
    this.filtersButton.addEventListener("click", () => {
      const open = this.filtersButton.getAttribute("aria-expanded") !== "true";
      this.filtersButton.setAttribute("aria-expanded", String(open));
      this.element.classList.toggle("filters-open", open);
    });
    const labelled = (text: string, control: HTMLElement) => h("div", { class: "filter" }, h("label", { for: control.id }, text), control);
    this.filters.append(labelled("Kind", this.kind), labelled("Agent", this.agent), labelled("Sort", this.sort), this.compact);
    this.element = h(
      "div",
      { class: "toolbar" },
      h("div", { class: "search", role: "search" }, labelled("Search", this.search), this.filtersButton, this.counter),
      this.filters,
      this.help,
    );
    document.addEventListener("keydown", (event) => {
      if (event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) return;
      if (event.key === "Escape" && typing(event.target)) {
        // Escape leaves a text box, so the shortcuts work again; focus
        // goes to its run, from where j and k go on.
        const target = event.target as HTMLElement;
        const run = target.closest<HTMLElement>("article");
        if (run) run.focus({ preventScroll: true });
        else target.blur();
        return;
      }
      if (typing(event.target)) return;
      if (event.key === "/") {
        event.preventDefault();
        this.search.focus();
      } else if (event.key === "j" || event.key === "k") {
        event.preventDefault();
        move(event.key === "j" ? 1 : -1);
      } else if (event.key === "?") {
        event.preventDefault();
        this.help.hidden = !this.help.hidden;
      }
    });
  }

  get newestFirst(): boolean {
    return this.sort.value !== "oldest";
  }

  state(): Triage {
    return {
      agent: this.agent.value,
      kind: this.kind.value,
      query: this.search.value.trim().toLowerCase(),
      compact: this.compact.getAttribute("aria-checked") === "true",
    };
  }

  /** Shows how many waiting runs match the filters, of how many. */
  count(matching: number, waiting: number): void {
    const { agent, kind, query } = this.state();
    // Folded, the button says how many filters apply.
    const on = (agent ? 1 : 0) + (kind !== "all" ? 1 : 0);
    this.filtersButton.textContent = on ? `Filters (${on})` : "Filters";
    const runs = (n: number) => (n === 1 ? "1 run" : `${n} runs`);
    this.counter.textContent =
      agent || kind !== "all" || query
        ? `${matching} of ${runs(waiting)} ${matching === 1 ? "matches" : "match"}`
        : `${runs(waiting)} ${waiting === 1 ? "waits" : "wait"} on you`;
  }
}
