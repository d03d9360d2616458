// The inbox: the runs of the caller's tenant that wait on a person,
// newest first. ListRuns reads them once; WatchRuns keeps up from then on
// (a run that starts waiting appears, one answered or ended elsewhere
// leaves) and, after a broken stream, continues after the last cursor it
// saw, so nothing is missed in between.
import { timestampMs, type Timestamp } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { RunEventKind, RunStatus, type Agent, type RunEvent, type ToolInfo } from "./gen/agentd/v1/agentd_pb";
import { codeOf, describe, type Agentd } from "./api";
import { forPerson, RunCard, type RunSummary } from "./card";
import { h } from "./dom";

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

export class Inbox {
  readonly element: HTMLElement;
  private readonly cards = new Map<string, RunCard>();
  private readonly list = h("div", { class: "runs" });
  private readonly empty = h("p", { class: "empty" }, "Nothing waits on you. New questions appear here as agents ask them.");
  private readonly count = h("p", { class: "count", "aria-live": "polite" });
  private readonly filter: HTMLSelectElement;
  private readonly tools = new Map<string, Map<string, ToolInfo>>();
  /** The latest event seen of each run: its time, and how many events
   * this page had received when it came. */
  private readonly latest = new Map<string, { time: number; received: number }>();
  private received = 0;
  private cursor = "";

  constructor(
    private readonly client: Agentd,
    agents: Agent[],
    private readonly setStatus: (live: boolean, text: string) => void,
    private readonly signedOut: () => void,
  ) {
    for (const agent of agents) {
      this.tools.set(agent.agentId, new Map(agent.tools.map((tool) => [tool.name, tool])));
    }
    const filterId = "agent-filter";
    this.filter = h(
      "select",
      { id: filterId, onchange: () => this.changed() },
      h("option", { value: "" }, "All agents"),
      ...agents.map((agent) => h("option", { value: agent.agentId }, agent.agentId)),
    );
    this.element = h(
      "main",
      { class: "inbox" },
      h(
        "div",
        { class: "toolbar" },
        h("div", { class: "filter" }, h("label", { for: filterId }, "Agent"), this.filter),
        this.count,
      ),
      h("section", { class: "waiting", "aria-label": "Waiting runs" }, this.empty, this.list),
    );
    window.setInterval(() => this.cards.forEach((card) => card.tick()), 15_000);
  }

  /** Watches from now on, and lists what already waits once the watch is open. */
  start(): void {
    void this.watch();
  }

  private async watch(): Promise<void> {
    let backoff = 1000;
    for (;;) {
      const fresh = this.cursor === "";
      try {
        const events = this.client.watchRuns(
          { afterCursor: this.cursor, kinds: WATCHED },
          {
            onHeader: () => {
              this.setStatus(true, "Live");
              backoff = 1000;
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
        this.setStatus(false, `Reconnecting… (${describe(error)})`);
      }
      await new Promise((resume) => window.setTimeout(resume, backoff));
      backoff = Math.min(backoff * 2, 15_000);
    }
  }

  /** Reads every run waiting now; after a reconnect that could not
   * continue, cards of runs that no longer wait leave. */
  private async load(): Promise<void> {
    const receivedBefore = this.received;
    const listed = new Set<string>();
    let pageToken = "";
    try {
      do {
        const page = await this.client.listRuns({ status: RunStatus.SUSPENDED, pageSize: 200, pageToken });
        for (const run of page.runs) {
          listed.add(run.runId);
          const seen = this.latest.get(run.runId);
          // An event newer than this read already said where the run is.
          if (seen && run.updatedAt && seen.time >= timestampMs(run.updatedAt)) continue;
          this.upsert({ runId: run.runId, agentId: run.agentId, threadId: run.threadId, since: run.updatedAt }, run.pending);
        }
        pageToken = page.nextPageToken;
      } while (pageToken && listed.size < MAX_LISTED);
    } catch (error) {
      this.setStatus(false, `Could not list the runs: ${describe(error)}`);
      return;
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
    if (event.time) this.latest.set(event.runId, { time: timestampMs(event.time), received: this.received });
    const card = this.cards.get(event.runId);
    if (card?.busy) return;
    if (event.kind === RunEventKind.SUSPENDED) {
      this.upsert(
        { runId: event.runId, agentId: event.agentId, threadId: event.threadId, since: event.time },
        event.pending,
      );
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
          remove: (gone) => this.remove(gone),
          changed: () => this.changed(),
        },
        summary,
      );
      this.cards.set(summary.runId, card);
      this.place(card);
    }
    card.setPending(pending, summary.since as Timestamp | undefined);
  }

  /** Puts `card` in order: newest run first (run ids are time-ordered). */
  private place(card: RunCard): void {
    const after = [...this.list.children].find(
      (element) => (element as HTMLElement).dataset.runId! < card.runId,
    );
    this.list.insertBefore(card.element, after ?? null);
  }

  private remove(card: RunCard): void {
    card.element.remove();
    this.cards.delete(card.runId);
    this.changed();
  }

  /** Applies the agent filter and counts what waits. */
  private changed(): void {
    const agent = this.filter.value;
    let shown = 0;
    let waiting = 0;
    for (const card of this.cards.values()) {
      const visible = !agent || card.agentId === agent;
      card.element.hidden = !visible;
      if (visible) {
        shown += 1;
        waiting += card.waiting > 0 ? 1 : 0;
      }
    }
    this.empty.hidden = shown > 0;
    this.count.textContent = waiting === 1 ? "1 run waits on you" : `${waiting} runs wait on you`;
  }
}
