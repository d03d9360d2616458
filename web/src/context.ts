// What a card shows around its question: the run's context (the prompt it
// was started with, the last thing the assistant said before asking, its
// metadata as the agent's inbox settings order it) and its whole history,
// both read from GetRun's conversation. It only renders.
import { AnswerSource, Role, type InboxSettings, type PendingToolCall, type Run, type ThreadMessage } from "./gen/agentd/v1/agentd_pb";
import { h, pretty, uid, words } from "./dom";
import { elicitationHeadline } from "./elicitation_form";
import { resultLabel } from "./transcript";

/** The opening prompt and the last assistant text of a conversation. */
export function openingAndLast(messages: ThreadMessage[]): { prompt: string; said: string } {
  const prompt = messages.find((m) => m.role === Role.USER)?.content ?? "";
  const said = [...messages].reverse().find((m) => m.role === Role.ASSISTANT && m.content.trim() !== "")?.content ?? "";
  return { prompt, said };
}

/** The metadata to show, in order: the agent's first keys, then the
 * others by name, without the hidden ones. */
export function shownMetadata(metadata: Record<string, string>, inbox: InboxSettings | undefined): [string, string][] {
  const hidden = new Set(inbox?.metadataHidden ?? []);
  const first = (inbox?.metadataFirst ?? []).filter((key) => key in metadata && !hidden.has(key));
  const rest = Object.keys(metadata)
    .filter((key) => !hidden.has(key) && !first.includes(key))
    .sort();
  return [...first, ...rest].map((key) => [key, metadata[key]]);
}

/** The group `Context`: prompt, last assistant text, metadata. Folded,
 * it is one line of each, in the space a card keeps for it before it is
 * read (so filling it in moves nothing); a longer context has a `Show
 * all` button that unfolds it. */
export function contextGroup(run: Run, inbox: InboxSettings | undefined): HTMLElement {
  const { prompt, said } = openingAndLast(run.messages);
  const metadata = shownMetadata(run.metadata, inbox);
  const lines = h("div", { class: "context-lines", id: uid("context") });
  const group = h("div", { role: "group", "aria-label": "Context", class: "context" }, lines);
  if (prompt) lines.append(h("div", { class: "said prompt" }, h("span", { class: "label" }, "Prompt"), h("p", {}, prompt)));
  if (said) lines.append(h("div", { class: "said assistant" }, h("span", { class: "label" }, "Assistant said"), h("p", {}, said)));
  if (metadata.length) {
    lines.append(h("dl", { class: "metadata", "aria-label": "Metadata" }, ...metadata.flatMap(([key, value]) => [h("dt", {}, key), h("dd", {}, value)])));
  }
  if (!lines.childElementCount) lines.append(h("p", { class: "hint" }, "No prompt or metadata."));
  const more = h("button", { type: "button", class: "quiet more", "aria-expanded": "false", "aria-controls": lines.id, hidden: true }, "Show all");
  more.addEventListener("click", () => {
    const open = more.getAttribute("aria-expanded") !== "true";
    more.setAttribute("aria-expanded", String(open));
    more.textContent = open ? "Show less" : "Show all";
    group.classList.toggle("open", open);
  });
  group.append(more);
  // Once laid out: a line cut short offers the rest.
  const cut = () => [...lines.children].some((line) => line.scrollHeight > line.clientHeight + 1 || line.scrollWidth > line.clientWidth + 1);
  const observer = new ResizeObserver(() => {
    if (group.classList.contains("open")) return;
    more.hidden = !cut();
  });
  observer.observe(lines);
  return group;
}

/** What a pending call asks, in a line. */
export function pendingHeadline(call: PendingToolCall): string {
  if (call.awaitingApproval) return `Asks to approve ${words(call.toolName)}`;
  const payload = call.suspendPayload?.kind;
  switch (payload?.case) {
    case "askUser":
      return `Asks: ${payload.value.question}`;
    case "elicitation":
      return elicitationHeadline(payload.value);
    case "clientTool":
      return `Waits for the client to run ${words(call.toolName)}`;
    default:
      return `${words(call.toolName)} waits for a response`;
  }
}

/** The whole conversation from the prompt on: messages, calls, results,
 * answers, then what the run waits on now. */
export function historyList(run: Run): HTMLElement {
  const list = h("ol", { class: "transcript" });
  const add = (kind: string, ...content: (Node | string | null)[]) => list.append(h("li", { class: kind }, ...content));
  const pendingIds = new Set(run.pending.map((call) => call.toolCallId));
  for (const message of run.messages) {
    switch (message.role) {
      case Role.USER:
        add("user", h("span", { class: "label" }, "User"), h("p", {}, message.content));
        break;
      case Role.ASSISTANT:
        if (message.content.trim()) add("model", h("p", { class: "text" }, message.content));
        for (const call of message.toolCalls) {
          const question = call.toolName === "ask_user" && typeof call.args?.question === "string" ? call.args.question : null;
          if (question !== null) {
            if (!pendingIds.has(call.toolCallId)) add("question", `Asks: ${question}`);
          } else if (call.originalArgs !== undefined) {
            add(
              "call",
              h("span", { class: "label" }, `Runs ${words(call.toolName)} with edited arguments`),
              h("pre", {}, pretty(call.args)),
              h("details", {}, h("summary", {}, "The model's arguments"), h("pre", {}, pretty(call.originalArgs))),
            );
          } else {
            add("call", h("span", { class: "label" }, `Uses ${words(call.toolName)}`), h("details", {}, h("summary", {}, "Arguments"), h("pre", {}, pretty(call.args))));
          }
        }
        break;
      case Role.TOOL: {
        const result = message.toolResult;
        // The deadline answered for nobody (the tool's on_expiry): say so,
        // rather than let "declined to answer" read as a person's.
        const deadline = message.answer?.source === AnswerSource.DEADLINE;
        if (message.answer) add("answer", h("span", { class: "label" }, deadline ? "Nobody answered in time" : "Answer"), message.answer.text);
        add(
          result?.isError ? "result error" : "result",
          h("span", { class: "label" }, resultLabel(result?.toolName ?? "tool", result?.isError ?? false)),
          h("p", {}, message.content),
        );
        break;
      }
      default:
        break;
    }
  }
  for (const call of run.pending) add("question", pendingHeadline(call));
  return list;
}
