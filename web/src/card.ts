// One run that waits on a person: its agent, how long it has waited and
// until when, a form for each pending call, the continuation streaming in
// after an answer, its whole history on demand, and cancelling it.
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import {
  FinishReason,
  RunStatus,
  type AgentChunk,
  type InboxSettings,
  type PendingToolCall,
  type Run,
  type ToolInfo,
} from "./gen/agentd/v1/agentd_pb";
import { codeOf, plain, violations, type Agentd } from "./api";
import { contextGroup, historyList, openingAndLast, shownMetadata } from "./context";
import { h } from "./dom";
import type { Answer, Refusal, Send } from "./form_parts";
import { pendingForm } from "./forms";
import { ago, full, micros, until } from "./time";
import { Transcript } from "./transcript";

/** What a card needs from the inbox around it. */
export interface CardContext {
  client: Agentd;
  tool(agentId: string, toolName: string): ToolInfo | undefined;
  /** How the agent's runs show in the inbox. */
  inbox(agentId: string): InboxSettings | undefined;
  /** The card no longer belongs in the inbox. */
  remove(card: RunCard): void;
  /** The card's state changed (counts, filters). */
  changed(): void;
}

export interface RunSummary {
  runId: string;
  agentId: string;
  threadId: string;
  /** When the run started waiting. */
  since?: Timestamp;
}

const STATUS_TEXT: Record<RunStatus, string> = {
  [RunStatus.UNSPECIFIED]: "unknown",
  [RunStatus.RUNNING]: "running",
  [RunStatus.SUSPENDED]: "waiting",
  [RunStatus.COMPLETED]: "completed",
  [RunStatus.FAILED]: "failed",
  [RunStatus.CANCELLED]: "cancelled",
  [RunStatus.EXPIRED]: "expired",
};

/** What a call waits for, as the Kind filter names it. */
export type Kind = "question" | "approval" | "review" | "form";

export function kindOf(pending: PendingToolCall): Kind {
  if (pending.awaitingApproval) return "approval";
  switch (pending.suspendPayload?.kind.case) {
    case "askUser":
      return "question";
    case "elicitation":
      return "form";
    default:
      return "review";
  }
}

/** Whether a person answers this call (client-executed tools are the
 * caller's). */
export function forPerson(pending: PendingToolCall): boolean {
  return pending.awaitingApproval || pending.suspendPayload?.kind.case !== "clientTool";
}

export class RunCard {
  readonly element: HTMLElement;
  readonly runId: string;
  readonly agentId: string;
  /** Answering here: the card follows its own continuation, and run
   * events about it are not for it to act on. */
  busy = false;
  /** Answered here and finished: it stays until dismissed. */
  done = false;
  /** When the run came to the state the card shows (microseconds since
   * the epoch): a run event no newer than that is not news. */
  shownAt = 0;
  private since: Date | null;
  private expires: Date | null = null;
  private readonly meta = h("p", { class: "meta" });
  private readonly context = h("div", { class: "context-slot" });
  private readonly pendingList = h("div", { class: "pending" });
  private readonly forms = new Map<string, HTMLFormElement>();
  private readonly kinds = new Map<string, Kind>();
  private readonly live = h("section", { class: "live", hidden: true });
  private transcript: Transcript | null = null;
  private readonly history = h("section", { class: "history", hidden: true });
  private readonly historyButton: HTMLButtonElement;
  private readonly cancelButton: HTMLButtonElement;
  private readonly footerAlert = h("div", { class: "footer-alert" });
  /** The card's status: what was sent, then how the run went on. */
  private readonly status = h("p", { class: "outcome", role: "status", tabindex: "-1" });
  /** The one line of the compact view, which opens the card in place. */
  private readonly line: HTMLButtonElement;
  private readonly lineText = h("span", { class: "line-text" });
  /** The title: the questions, then the agent's first metadata values. */
  private readonly title = h("span", { class: "title-question" });
  private readonly titleMeta = h("span", { class: "title-meta" });
  /** The run's id as the card shows it; forms name their run by it. */
  private readonly refId: string;
  private readonly keepButton: HTMLButtonElement;
  private readonly cancelWarning = h("p", { class: "cancel-warning", hidden: true }, "Cancelling stops the run for good: its questions go unanswered.");
  private confirmingCancel = false;
  /** The values of the agent's first metadata keys, as GetRun read them. */
  private firstValues: string[] = [];
  /** Questions answered here, which stay on the card. */
  private readonly answeredTitles: string[] = [];
  /** Every call this card has shown: a call not among them is news. */
  private readonly seenCalls = new Set<string>();
  /** Whether the run belongs to a thread (a conversation), where an
   * approval can be remembered. */
  private readonly onThread: boolean;
  /** What search matches: questions, prompt, metadata values, run id. */
  private searchable = "";
  private contextText = "";

  constructor(
    private readonly ctx: CardContext,
    summary: RunSummary,
  ) {
    this.runId = summary.runId;
    this.agentId = summary.agentId;
    this.onThread = summary.threadId !== "";
    this.since = summary.since ? timestampDate(summary.since) : null;
    if (summary.since) this.shownAt = micros(summary.since);
    const titleId = `run-${summary.runId}`;
    this.refId = `run-ref-${summary.runId}`;
    // Regions named by their heading and the run: every card has them.
    this.live.setAttribute("aria-labelledby", `live-${summary.runId} ${this.refId}`);
    this.history.setAttribute("aria-labelledby", `history-${summary.runId} ${this.refId}`);
    this.historyButton = h("button", { type: "button", "aria-expanded": "false", onclick: () => void this.toggleHistory() }, "Show history");
    this.cancelButton = h("button", { type: "button", class: "danger quiet", onclick: () => void this.cancel() }, "Cancel run");
    this.keepButton = h("button", { type: "button", hidden: true, onclick: () => this.keepRun() }, "Keep run");
    const copy = h("button", { type: "button", class: "quiet copy" }, "Copy run id");
    copy.addEventListener("click", () => void this.copyRunId(copy));
    const dismiss = h("button", { type: "button", class: "quiet dismiss", onclick: () => this.ctx.remove(this) }, "Dismiss");
    this.line = h(
      "button",
      { type: "button", class: "line", "aria-expanded": "false", onclick: () => this.setExpanded(!this.element.classList.contains("expanded")) },
      this.lineText,
    );
    this.element = h(
      "article",
      { class: "run", "aria-labelledby": `${titleId} ${this.refId}`, "data-run-id": summary.runId, tabindex: "-1" },
      h(
        "header",
        {},
        h("h2", { id: titleId }, this.title, this.titleMeta),
        h(
          "p",
          { class: "run-ref" },
          h("span", { class: "agent" }, summary.agentId),
          " ",
          h("span", { class: "run-id", id: this.refId }, "run ", h("code", {}, summary.runId)),
          " ",
          copy,
        ),
        this.line,
        this.meta,
        summary.threadId ? h("p", { class: "thread" }, `Thread ${summary.threadId}`) : null,
      ),
      this.context,
      this.pendingList,
      this.live,
      this.status,
      this.history,
      h("footer", { role: "group", "aria-label": "This run" }, this.historyButton, this.cancelWarning, this.cancelButton, this.keepButton, dismiss, this.footerAlert),
    );
    // Escape takes back a cancel not yet confirmed.
    this.element.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && this.confirmingCancel) {
        event.preventDefault();
        event.stopPropagation();
        this.keepRun();
      }
    });
    this.tick();
  }

  private async copyRunId(button: HTMLButtonElement): Promise<void> {
    try {
      await navigator.clipboard.writeText(this.runId);
      button.textContent = "Run id copied";
    } catch {
      // No clipboard here: the id stays selectable.
      window.getSelection()?.selectAllChildren(document.getElementById(this.refId)?.querySelector("code") ?? button);
      button.textContent = "Run id selected";
    }
    window.setTimeout(() => (button.textContent = "Copy run id"), 2000);
  }

  /** The run as GetRun read it: its context. */
  setRun(run: Run): void {
    const { prompt, said } = openingAndLast(run.messages);
    this.contextText = [prompt, said, ...Object.values(run.metadata)].join("\n");
    const first = new Set(this.ctx.inbox(this.agentId)?.metadataFirst ?? []);
    this.firstValues = shownMetadata(run.metadata, this.ctx.inbox(this.agentId))
      .filter(([key]) => first.has(key))
      .map(([, value]) => value);
    this.context.replaceChildren(contextGroup(run, this.ctx.inbox(this.agentId)));
    this.index();
    this.ctx.changed();
  }

  /** Opens (or closes) the card in place in the compact view. */
  setExpanded(open: boolean): void {
    this.element.classList.toggle("expanded", open);
    this.line.setAttribute("aria-expanded", String(open));
  }

  /** The calls the run waits on now: forms for new ones, the forms of
   * those still waiting kept as the person left them, the others gone. */
  setPending(pending: PendingToolCall[], since?: Timestamp): void {
    const human = pending.filter(forPerson);
    if (since) {
      // Asked then only if a call is new: one answered among several
      // leaves the others asked when they were.
      if (this.seenCalls.size === 0 || human.some((call) => !this.seenCalls.has(call.toolCallId))) this.since = timestampDate(since);
      this.shownAt = Math.max(this.shownAt, micros(since));
    }
    for (const call of human) this.seenCalls.add(call.toolCallId);
    const ids = new Set(human.map((call) => call.toolCallId));
    for (const [id, form] of this.forms) {
      if (!ids.has(id)) {
        form.remove();
        this.forms.delete(id);
        this.kinds.delete(id);
      }
    }
    for (const call of human) {
      if (call.expiresAt) this.expires = timestampDate(call.expiresAt);
      if (this.forms.has(call.toolCallId)) continue;
      const tool = this.ctx.tool(this.agentId, call.toolName);
      const send: Send = (answer, summary) => this.answer(call.toolCallId, answer, summary);
      const form = pendingForm(call, tool, send, this.onThread);
      if (!form) continue;
      form.dataset.toolCallId = call.toolCallId;
      // Named with the run too: forms asking the same in several runs differ.
      form.setAttribute("aria-labelledby", `${form.getAttribute("aria-labelledby")} ${this.refId}`);
      this.forms.set(call.toolCallId, form);
      this.kinds.set(call.toolCallId, kindOf(call));
      this.pendingList.append(form);
    }
    this.index();
    this.tick();
    this.ctx.changed();
  }

  /** How many calls wait on a person. */
  get waiting(): number {
    return this.forms.size;
  }

  /** Whether the card waits on a call of `kind`. */
  hasKind(kind: Kind): boolean {
    return [...this.kinds.values()].includes(kind);
  }

  /** Whether `query` (lower case) is in its questions, prompt, metadata
   * values or run id. */
  matches(query: string): boolean {
    return !query || this.searchable.includes(query);
  }

  private index(): void {
    const forms = [...this.forms.values()];
    const questions = forms.map((form) => form.querySelector("h3")?.textContent ?? "");
    const searched = forms.map((form) => form.dataset.search ?? "");
    this.searchable = [this.runId, ...questions, ...searched, ...this.answeredTitles, this.contextText].join("\n").toLowerCase();
    const title = questions.join(" · ") || this.answeredTitles.join(" · ") || "Nothing waits on you";
    this.title.textContent = title;
    this.titleMeta.textContent = this.firstValues.map((value) => ` · ${value}`).join("");
    this.lineText.replaceChildren(
      h("span", { class: "line-question" }, title, this.titleMeta.textContent),
      h("span", { class: "line-agent" }, this.agentId),
    );
  }

  /** Brings the ages and expiries up to date. */
  tick(): void {
    const parts: (Node | string)[] = [];
    if (this.since) parts.push("asked ", h("time", { datetime: this.since.toISOString(), title: full(this.since) }, ago(this.since)));
    if (this.expires) {
      if (parts.length) parts.push(" · ");
      parts.push("expires ", h("time", { datetime: this.expires.toISOString(), title: full(this.expires) }, until(this.expires)));
    }
    this.meta.replaceChildren(...parts);
  }

  private say(text: string): void {
    this.status.textContent = text;
  }

  private async answer(toolCallId: string, answer: Answer, summary: string): Promise<Refusal | null> {
    this.busy = true;
    const iterator = this.ctx.client.resume({ runId: this.runId, toolCallId, answer })[Symbol.asyncIterator]();
    let first: IteratorResult<AgentChunk>;
    try {
      first = await iterator.next();
    } catch (error) {
      this.busy = false;
      if (codeOf(error) === Code.FailedPrecondition) void this.refresh();
      return { message: plain(error), violations: violations(error) };
    }
    const form = this.forms.get(toolCallId);
    this.forms.delete(toolCallId);
    this.kinds.delete(toolCallId);
    // The question stays on the card, with what was sent.
    const question = form?.querySelector("h3")?.textContent ?? "";
    if (question) this.answeredTitles.push(question);
    form?.replaceWith(h("div", { class: "answered" }, h("h3", {}, question), h("p", {}, h("span", { class: "label" }, "You: "), summary.replace(/^Answered: /, ""))));
    this.answered = summary;
    this.say(summary);
    this.status.focus();
    this.pendingList.inert = true;
    this.transcript = new Transcript();
    this.live.replaceChildren(h("h3", { id: `live-${this.runId}` }, "What the agent did next"), this.transcript.element);
    this.live.hidden = false;
    if (!first.done) this.transcript.append(first.value);
    void this.follow(iterator);
    this.index();
    this.ctx.changed();
    return null;
  }

  /** What was last sent from this card. */
  private answered = "";

  /** Streams the rest of the continuation, then shows where the run is. */
  private async follow(iterator: AsyncIterator<AgentChunk>): Promise<void> {
    let finish: FinishReason | null = null;
    try {
      for (;;) {
        const next = await iterator.next();
        if (next.done) break;
        this.transcript?.append(next.value);
        if (next.value.chunk.case === "finish") finish = next.value.chunk.value.reason;
      }
    } catch (error) {
      this.showFooterAlert(`The continuation broke off: ${plain(error)}`);
    }
    this.pendingList.inert = false;
    // Busy until the run is read again: the events of this continuation
    // may arrive after its stream ended, and must not take the card away.
    if (finish === FinishReason.SUSPENDED || finish === null) {
      await this.refresh();
    } else {
      this.finished(
        finish === FinishReason.STOP || finish === FinishReason.MAX_STEPS
          ? "the run completed"
          : `the run ended: ${FinishReason[finish].toLowerCase().replace("_", " ")}`,
      );
    }
    this.busy = false;
  }

  /** Reads the run again: its pending calls if it still waits, else how it ended. */
  private async refresh(): Promise<void> {
    try {
      const run = await this.ctx.client.getRun({ runId: this.runId });
      if (run.status === RunStatus.SUSPENDED) {
        const fresh = run.pending.filter(forPerson).some((call) => !this.seenCalls.has(call.toolCallId));
        this.setPending(run.pending, run.updatedAt);
        if (this.waiting === 0) this.finished("it waits for its client, not for you");
        else if (this.answered && fresh) this.say(`${this.answered} · it asks again`);
        else if (this.answered) this.say(`${this.answered} · ${this.waiting === 1 ? "1 more question waits" : `${this.waiting} more questions wait`} on you`);
      } else {
        this.finished(`the run is ${STATUS_TEXT[run.status]}`);
      }
    } catch (error) {
      this.showFooterAlert(plain(error));
    }
  }

  /** Nothing waits on a person any more; the card stays until dismissed. */
  finished(how: string): void {
    this.done = true;
    for (const form of this.forms.values()) form.remove();
    this.forms.clear();
    this.kinds.clear();
    const text = this.answered ? `${this.answered} · ${how}` : how[0].toUpperCase() + how.slice(1);
    this.say(text);
    this.element.classList.add("finished");
    this.cancelButton.hidden = true;
    this.index();
    this.ctx.changed();
  }

  private showFooterAlert(message: string): void {
    this.footerAlert.replaceChildren(h("div", { role: "alert", class: "alert" }, message));
  }

  private async toggleHistory(): Promise<void> {
    const open = this.historyButton.getAttribute("aria-expanded") === "true";
    this.historyButton.setAttribute("aria-expanded", String(!open));
    this.historyButton.textContent = open ? "Show history" : "Hide history";
    this.history.hidden = open;
    if (open) return;
    this.history.replaceChildren(h("h3", { id: `history-${this.runId}` }, "History"), h("p", { class: "hint" }, "Reading…"));
    try {
      const run = await this.ctx.client.getRun({ runId: this.runId });
      this.history.replaceChildren(h("h3", { id: `history-${this.runId}` }, "History"), historyList(run));
    } catch (error) {
      this.history.replaceChildren(h("h3", { id: `history-${this.runId}` }, "History"), h("div", { role: "alert", class: "alert" }, plain(error)));
    }
  }

  /** Asks before cancelling: Confirm cancel, or Keep run (or Escape). */
  private confirmCancel(on: boolean): void {
    this.confirmingCancel = on;
    this.cancelButton.textContent = on ? "Confirm cancel" : "Cancel run";
    this.cancelButton.classList.toggle("quiet", !on);
    this.cancelWarning.hidden = !on;
    this.keepButton.hidden = !on;
  }

  private keepRun(): void {
    this.confirmCancel(false);
    this.cancelButton.focus();
  }

  private async cancel(): Promise<void> {
    if (!this.confirmingCancel) {
      this.confirmCancel(true);
      return;
    }
    this.cancelButton.disabled = true;
    try {
      await this.ctx.client.cancelRun({ runId: this.runId, reason: "cancelled from the inbox" });
      this.ctx.remove(this);
    } catch (error) {
      this.cancelButton.disabled = false;
      this.showFooterAlert(plain(error));
    }
  }
}
