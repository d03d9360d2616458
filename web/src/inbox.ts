// The inbox: the runs of the caller's tenant that wait on a person.
// ListRuns reads them once; WatchRuns keeps up from then on (a run that
// starts waiting appears, one answered or ended elsewhere leaves) and,
// after a broken stream, continues after the last cursor it saw, so
// nothing is missed in between. GetRun reads each run's context. Triage:
// search, kind, agent, sort, a compact view, and keyboard shortcuts.
// The listed runs appear at once, and their contexts fill in (those in
// view first) into space kept for them, so nothing moves under the
// reader; runs that arrive later are marked new until seen.
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { RunEventKind, RunStatus, type Agent, type InboxSettings, type RunEvent, type ToolInfo } from "./gen/agentd/v1/agentd_pb";
import { codeOf, plain, type Agentd } from "./api";
import { forPerson, RunCard, type Kind, type RunSummary } from "./card";
import { Arrivals } from "./arrivals";
import { h } from "./dom";
import { micros } from "./time";
import { Toolbar } from "./toolbar";

// RunEventKind.REMINDED is left out: a reminder changes nothing a card
// shows (the run waits on the same calls), and onEvent would take any
// event other than SUSPENDED for the run leaving the inbox.
const WATCHED = [
  RunEventKind.SUSPENDED,
  RunEventKind.RESUMED,
  RunEventKind.COMPLETED,
  RunEventKind.FAILED,
  RunEventKind.CANCELLED,
  RunEventKind.EXPIRED,
];

/** Waiting runs read at most, page by page. */
const MAX_LISTED = 1000;
/** GetRun calls in flight at once, for the cards' context: with the
 * WatchRuns stream, the six connections a browser opens to a server over
 * HTTP/1.1. */
const CONTEXT_READS = 5;
/** Failed attempts in a row after which the line says Offline. */
const OFFLINE_AFTER = 3;

/** The connection line: exactly one of these (`Connecting…` before the
 * first answer). */
export type Connection = "Connecting…" | "Live" | "Reconnecting…" | "Offline — retrying";

export class Inbox {
  readonly element: HTMLElement;
  private readonly cards = new Map<string, RunCard>();
  private readonly list = h("div", { class: "runs" });
  private readonly empty = h("p", { class: "empty" }, "Nothing waits on you. New questions appear here as agents ask them.");
  private readonly alert = h("div", { class: "list-alert" });
  private readonly toolbar: Toolbar;
  private readonly tools = new Map<string, Map<string, ToolInfo>>();
  private readonly inboxSettings = new Map<string, InboxSettings | undefined>();
  /** The latest event seen of each run: its time, and how many events
   * this page had received when it came. */
  private readonly latest = new Map<string, { time: number; received: number }>();
  private received = 0;
  private cursor = "";
  private readonly contextQueue: RunCard[] = [];
  private contextReads = 0;
  /** Cards in or near view, whose context is read first. */
  private readonly nearView = new Set<Element>();
  private readonly viewObserver = new IntersectionObserver(
    (entries) => entries.forEach((entry) => (entry.isIntersecting ? this.nearView.add(entry.target) : this.nearView.delete(entry.target))),
    { rootMargin: "50% 0px" },
  );
  private readonly arrivals = new Arrivals();
  /** Whether the first listing is shown: runs arriving after it are new. */
  private listed = false;
  /** Set while many cards change at once: the filters apply once after. */
  private batching = false;
  /** Where focus goes once the first listing is shown (after sign-in). */
  private focusOnLoad = false;

  constructor(
    private readonly client: Agentd,
    agents: Agent[],
    private readonly setStatus: (line: Connection) => void,
    private readonly signedOut: () => void,
  ) {
    for (const agent of agents) {
      this.tools.set(agent.agentId, new Map(agent.tools.map((tool) => [tool.name, tool])));
      this.inboxSettings.set(agent.agentId, agent.inbox);
    }
    this.toolbar = new Toolbar(
      agents.map((agent) => agent.agentId),
      () => this.changed(),
      (step) => this.move(step),
    );
    this.empty.hidden = true;
    this.element = h(
      "main",
      { class: "inbox" },
      this.toolbar.element,
      this.alert,
      h("section", { class: "waiting", "aria-label": "Waiting runs" }, this.empty, this.list),
      this.arrivals.region,
    );
    window.setInterval(() => this.cards.forEach((card) => card.tick()), 15_000);
  }

  /** Watches from now on, and lists what already waits once the watch is
   * open; with `focus`, focus then goes to the first run (or the page's
   * heading when none waits). */
  start(focus = false): void {
    this.focusOnLoad = focus;
    void this.watch();
  }

  private async watch(): Promise<void> {
    let backoff = 1000;
    let failures = 0;
    // Offline, the stream is given up at once (a stream can otherwise look
    // open for minutes); back online, the next attempt starts at once.
    let attempt = new AbortController();
    let wake = () => {};
    window.addEventListener("offline", () => attempt.abort());
    window.addEventListener("online", () => wake());
    for (;;) {
      const fresh = this.cursor === "";
      attempt = new AbortController();
      try {
        const events = this.client.watchRuns(
          { afterCursor: this.cursor, kinds: WATCHED },
          {
            signal: attempt.signal,
            onHeader: () => {
              this.setStatus("Live");
              backoff = 1000;
              failures = 0;
              if (fresh) void this.load();
            },
          },
        );
        for await (const event of events) {
          this.cursor = event.cursor;
          this.onEvent(event);
        }
      } catch (error) {
        const code = codeOf(error);
        if (code === Code.Unauthenticated) {
          this.signedOut();
          return;
        }
        // Too old to continue after: read the state again, then watch on.
        if (code === Code.OutOfRange || code === Code.InvalidArgument) this.cursor = "";
      }
      failures += 1;
      this.setStatus(failures >= OFFLINE_AFTER || !navigator.onLine ? "Offline — retrying" : "Reconnecting…");
      await new Promise<void>((resume) => {
        wake = resume;
        window.setTimeout(resume, backoff);
      });
      backoff = Math.min(backoff * 2, 15_000);
    }
  }

  /** Reads every run waiting now; after a reconnect that could not
   * continue, cards of runs that no longer wait leave. */
  private async load(): Promise<void> {
    const receivedBefore = this.received;
    const listed = new Set<string>();
    const runs = [];
    let pageToken = "";
    try {
      // Every page first, then the cards at once: a later page's cards
      // appearing between earlier ones would move them.
      do {
        const page = await this.client.listRuns({ status: RunStatus.SUSPENDED, pageSize: 200, pageToken });
        runs.push(...page.runs);
        page.runs.forEach((run) => listed.add(run.runId));
        pageToken = page.nextPageToken;
      } while (pageToken && listed.size < MAX_LISTED);
      this.alert.replaceChildren();
    } catch (error) {
      this.alert.replaceChildren(h("div", { role: "alert", class: "alert" }, `The waiting runs could not be read: ${plain(error)}`));
      return;
    }
    this.batching = true;
    for (const run of runs) {
      const seen = this.latest.get(run.runId);
      // An event newer than this read already said where the run is.
      if (seen && run.updatedAt && seen.time >= micros(run.updatedAt)) continue;
      this.upsert({ runId: run.runId, agentId: run.agentId, threadId: run.threadId, since: run.updatedAt }, run.pending);
    }
    this.batching = false;
    this.listed = true;
    this.changed();
    if (this.focusOnLoad) {
      this.focusOnLoad = false;
      const first = this.shown()[0] ?? document.querySelector<HTMLElement>("h1");
      first?.focus({ preventScroll: true });
    }
    if (pageToken) return;
    for (const card of [...this.cards.values()]) {
      const seen = this.latest.get(card.runId);
      const newer = seen !== undefined && seen.received > receivedBefore;
      if (!listed.has(card.runId) && !newer && !card.busy && !card.done) this.remove(card);
    }
  }

  private onEvent(event: RunEvent): void {
    this.received += 1;
    if (event.time) this.latest.set(event.runId, { time: micros(event.time), received: this.received });
    const card = this.cards.get(event.runId);
    if (card?.busy) return;
    // No newer than what the card shows (its own answer's events may
    // arrive after it read the run again): nothing new.
    if (card && event.time && micros(event.time) <= card.shownAt) return;
    if (event.kind === RunEventKind.SUSPENDED) {
      this.upsert({ runId: event.runId, agentId: event.agentId, threadId: event.threadId, since: event.time }, event.pending);
    } else if (card && !card.done) {
      // Answered, cancelled or ended elsewhere.
      this.remove(card);
    }
  }

  private upsert(summary: RunSummary, pending: RunEvent["pending"]): void {
    let card = this.cards.get(summary.runId);
    if (!pending.some(forPerson)) {
      if (card && !card.done) this.remove(card);
      return;
    }
    if (!card) {
      card = new RunCard(
        {
          client: this.client,
          tool: (agentId, name) => this.tools.get(agentId)?.get(name),
          inbox: (agentId) => this.inboxSettings.get(agentId),
          remove: (gone) => this.remove(gone),
          changed: () => this.changed(),
        },
        summary,
      );
      card.setExpanded(false);
      this.cards.set(summary.runId, card);
      this.place(card);
      this.viewObserver.observe(card.element);
      this.contextQueue.push(card);
      this.readContext();
      card.setPending(pending, summary.since as Timestamp | undefined);
      if (this.listed) this.arrivals.add(card.element, card.element.querySelector("form h3")?.textContent ?? `a run of ${summary.agentId}`);
      return;
    }
    card.setPending(pending, summary.since as Timestamp | undefined);
  }

  /** Reads the context of queued cards, a few at a time, those in or
   * near view first. */
  private readContext(): void {
    while (this.contextReads < CONTEXT_READS && this.contextQueue.length) {
      const near = this.contextQueue.findIndex((queued) => this.nearView.has(queued.element));
      const card = this.contextQueue.splice(Math.max(near, 0), 1)[0];
      if (!this.cards.has(card.runId)) continue;
      this.contextReads += 1;
      void this.client
        .getRun({ runId: card.runId })
        .then((run) => card.setRun(run))
        .catch(() => {
          // The card shows its question without context; history can retry.
        })
        .finally(() => {
          this.contextReads -= 1;
          this.readContext();
        });
    }
  }

  /** Puts `card` in order (run ids are time-ordered). */
  private place(card: RunCard): void {
    const newest = this.toolbar.newestFirst;
    const after = [...this.list.children].find((element) => {
      const id = (element as HTMLElement).dataset.runId!;
      return newest ? id < card.runId : id > card.runId;
    });
    this.list.insertBefore(card.element, after ?? null);
  }

  private remove(card: RunCard): void {
    card.element.remove();
    this.cards.delete(card.runId);
    this.viewObserver.unobserve(card.element);
    this.nearView.delete(card.element);
    this.arrivals.remove(card.element);
    this.changed();
  }

  /** The runs shown, in order. */
  private shown(): HTMLElement[] {
    return [...this.list.children].filter((element) => !(element as HTMLElement).hidden) as HTMLElement[];
  }

  /** Moves focus to the next (1) or previous (-1) run shown. */
  private move(step: 1 | -1): void {
    const runs = this.shown();
    if (!runs.length) return;
    const at = runs.findIndex((run) => run.contains(document.activeElement));
    const next = at === -1 ? (step === 1 ? 0 : runs.length - 1) : Math.min(Math.max(at + step, 0), runs.length - 1);
    // Scrolled so that its header shows below the sticky header (the
    // card's scroll-margin-top).
    runs[next].focus({ preventScroll: true });
    runs[next].scrollIntoView({ block: "nearest" });
  }

  /** Applies the filters, the order and the view; counts what matches. */
  private changed(): void {
    if (this.batching) return;
    const { agent, kind, query, compact } = this.toolbar.state();
    this.list.classList.toggle("compact", compact);
    const ids = [...this.cards.keys()].sort();
    if (this.toolbar.newestFirst) ids.reverse();
    const inOrder = ids.map((id) => this.cards.get(id)!.element);
    if (inOrder.some((element, i) => this.list.children[i] !== element)) this.list.append(...inOrder);
    let matching = 0;
    let waiting = 0;
    for (const card of this.cards.values()) {
      const visible = (!agent || card.agentId === agent) && (kind === "all" || card.done || card.hasKind(kind as Kind)) && card.matches(query);
      if (card.element.hidden === visible) card.element.hidden = !visible;
      if (card.waiting > 0) {
        waiting += 1;
        if (visible) matching += 1;
      }
    }
    this.empty.hidden = !this.listed || this.shown().length > 0;
    this.toolbar.count(matching, waiting);
  }
}
