// A run's chunks as a readable transcript: the model's text as it
// streams, tool calls and their results, questions, and how the stream
// ended. Used for a continuation after an answer and for a run's history.
import { FinishReason, type AgentChunk } from "./gen/agentd/v1/agentd_pb";
import { h, label, pretty, words } from "./dom";
import { elicitationHeadline } from "./elicitation_form";

const ENDINGS: Record<FinishReason, string> = {
  [FinishReason.UNSPECIFIED]: "The stream ended",
  [FinishReason.STOP]: "Finished",
  [FinishReason.SUSPENDED]: "Waiting for an answer",
  [FinishReason.MAX_STEPS]: "Stopped at its step limit",
  [FinishReason.CANCELLED]: "Cancelled",
  [FinishReason.ERROR]: "Failed",
};

/** What a tool's result is, as its label says. */
export function resultLabel(toolName: string, isError: boolean): string {
  if (toolName === "ask_user") return isError ? "The question failed" : "The answer the agent got";
  if (toolName === "human_review") return isError ? "The review failed" : "The review the agent got";
  return `${label(toolName)} ${isError ? "failed" : "returned"}`;
}

export class Transcript {
  readonly element = h("ol", { class: "transcript" });
  /** The paragraph the model's text is streaming into. */
  private text: HTMLElement | null = null;
  /** The last seq shown, so that nothing shows twice. */
  private seq = 0n;

  append(chunk: AgentChunk): void {
    if (chunk.seq <= this.seq) return;
    this.seq = chunk.seq;
    const event = chunk.chunk;
    if (event.case === "textDelta") {
      if (!this.text) {
        this.text = h("p", { class: "text" });
        this.add("model", this.text);
      }
      this.text.append(event.value.text);
      return;
    }
    this.text = null;
    switch (event.case) {
      case "start":
        if (event.value.resumed) this.add("marker", "Went on with the answer");
        break;
      case "toolCall": {
        const call = event.value;
        if (call.originalArgs !== undefined) {
          this.add(
            "call",
            h("span", { class: "label" }, `Runs ${words(call.toolName)} with edited arguments`),
            h("pre", {}, pretty(call.args)),
            h("details", {}, h("summary", {}, "The model's arguments"), h("pre", {}, pretty(call.originalArgs))),
          );
        } else {
          // A question shows itself when it is asked; other calls' arguments on demand.
          this.add(
            "call",
            h("span", { class: "label" }, `Uses ${words(call.toolName)}`),
            call.toolName === "ask_user" ? null : h("details", {}, h("summary", {}, "Arguments"), h("pre", {}, pretty(call.args))),
          );
        }
        break;
      }
      case "toolResult": {
        const result = event.value;
        this.add(
          result.isError ? "result error" : "result",
          h("span", { class: "label" }, resultLabel(result.toolName, result.isError)),
          h("p", {}, result.content),
        );
        break;
      }
      case "toolCallSuspended": {
        const payload = event.value.suspendPayload?.kind;
        const what =
          payload?.case === "askUser"
            ? `Asks: ${payload.value.question}`
            : payload?.case === "elicitation"
              ? elicitationHeadline(payload.value)
              : payload?.case === "clientTool"
                ? `Waits for the client to run ${words(event.value.toolName)}`
                : `${words(event.value.toolName)} waits for a response`;
        this.add("question", what);
        break;
      }
      case "toolCallApproval":
        this.add("question", `Asks to approve ${words(event.value.toolName)}`);
        break;
      case "error":
        this.add("result error", h("span", { class: "label" }, `Error: ${event.value.code}`), h("p", {}, event.value.message));
        break;
      case "finish":
        this.add(
          event.value.reason === FinishReason.ERROR ? "end error" : "end",
          ENDINGS[event.value.reason] ?? "The stream ended",
        );
        break;
      default:
        break;
    }
  }

  private add(kind: string, ...content: (Node | string | null)[]): void {
    this.element.append(h("li", { class: kind }, ...content));
  }
}
