// One form per pending call, by what the call waits for: a free-text, a
// single-select or a multi-select question, an approval (approve, approve
// with edited arguments, approve and remember in the run's conversation,
// decline with a reason), the resume data of a
// custom suspending tool (a form from its resume schema, or JSON), or an
// MCP server's request for input (elicitation_form.ts). Client-executed
// tools are not questions for a person: they get no form. The page checks
// what it can before sending; the server checks every answer, and a
// refusal is shown in the form's alert in plain words while the form
// keeps what the person entered.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { fromJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { GrantScope, SelectionMode, type PendingToolCall, type ToolInfo } from "./gen/agentd/v1/agentd_pb";
import { clip, h, label, pretty, uid, words } from "./dom";
import { elicitationForm } from "./elicitation_form";
import { field, schemaEditor, shell, showRefusal, submit, type Answer, type Send } from "./form_parts";

/** What a tool is called in a sentence: its input schema's title, or its
 * name as words (`issue_refund`: `issue refund`). */
export function toolWords(toolName: string, tool: ToolInfo | undefined): string {
  const title = tool?.inputSchema?.title;
  return typeof title === "string" && title.trim() ? title.trim() : words(toolName);
}

/** The text of a JSON value for search and summaries. */
export function flatText(value: JsonValue | undefined): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "object") return (Array.isArray(value) ? value : Object.values(value)).map(flatText).join(" ");
  return String(value);
}

/** A value as a person reads it in a table cell. */
function shownValue(value: JsonValue): Node | string {
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (value === null) return "none";
  if (typeof value === "object") {
    if (Array.isArray(value) && value.every((item) => typeof item !== "object" || item === null)) return value.join(", ");
    return h("pre", {}, pretty(value));
  }
  return String(value);
}

/** A labelled table of `values`: each row named by its property's title
 * in `schema` (or its name as words), described by its description. */
export function valueTable(caption: string, values: JsonObject, schema: JsonValue | undefined): HTMLTableElement {
  const properties =
    schema && typeof schema === "object" && !Array.isArray(schema) && schema.properties && typeof schema.properties === "object" && !Array.isArray(schema.properties)
      ? (schema.properties as JsonObject)
      : {};
  const rows = Object.entries(values).map(([name, value]) => {
    const property = properties[name];
    const about = property && typeof property === "object" && !Array.isArray(property) ? property : {};
    const title = typeof about.title === "string" && about.title.trim() ? about.title : label(name);
    const description = typeof about.description === "string" ? about.description : "";
    return h(
      "tr",
      {},
      h("th", { scope: "row" }, title, description ? h("span", { class: "arg-description" }, description) : null),
      h("td", {}, shownValue(value)),
    );
  });
  return h("table", { class: "args" }, h("caption", {}, caption), h("tbody", {}, ...rows));
}

/** The form for `pending`, or null when no person answers it; an
 * approval of a run on a thread (`onThread`) may be remembered there. */
export function pendingForm(
  pending: PendingToolCall,
  tool: ToolInfo | undefined,
  send: Send,
  onThread = false,
): HTMLFormElement | null {
  if (pending.awaitingApproval) return approvalForm(pending, tool, send, onThread);
  const payload = pending.suspendPayload?.kind;
  switch (payload?.case) {
    case "askUser": {
      const { question, options, selectionMode } = payload.value;
      if (selectionMode === SelectionMode.UNSPECIFIED || options.length === 0) return freeTextForm(question, send);
      return choiceForm(question, options, selectionMode === SelectionMode.MULTI_SELECT, send);
    }
    case "custom":
      return customForm(pending, payload.value, tool, send);
    case "elicitation":
      return elicitationForm(payload.value, send);
    default:
      return null;
  }
}

function sendButton(): HTMLButtonElement {
  return h("button", { type: "submit", class: "primary" }, "Send answer");
}

function freeTextForm(question: string, send: Send): HTMLFormElement {
  const { form, body } = shell(question, "free-text");
  const answer = h("textarea", { rows: 3, autocomplete: "off" });
  answer.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  body.append(field("Answer", answer, "Enter sends; Shift+Enter starts a new line."), h("div", { class: "actions" }, sendButton()));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = answer.value.trim();
    if (!text) {
      showRefusal(form, "Write an answer.");
      answer.focus();
      return;
    }
    void submit(form, send, { case: "text", value: text }, `Answered: ${text}`);
  });
  return form;
}

function choiceForm(question: string, options: { label: string; description: string }[], multiple: boolean, send: Send): HTMLFormElement {
  const { form, body } = shell(question, multiple ? "multi-select" : "single-select");
  const name = uid("choice");
  const inputs: HTMLInputElement[] = [];
  const choices = options.map((option) => {
    const labelId = uid("option");
    const descriptionId = option.description ? uid("description") : undefined;
    const input = h("input", {
      type: multiple ? "checkbox" : "radio",
      name,
      value: option.label,
      "aria-labelledby": labelId,
      "aria-describedby": descriptionId,
    });
    inputs.push(input);
    return h(
      "label",
      { class: "option" },
      input,
      h(
        "span",
        { class: "option-text" },
        h("span", { class: "option-label", id: labelId }, option.label),
        descriptionId ? h("span", { class: "option-description", id: descriptionId }, option.description) : null,
      ),
    );
  });
  const group = h("div", { class: "options", role: multiple ? "group" : "radiogroup", "aria-labelledby": form.getAttribute("aria-labelledby") }, ...choices);
  body.append(group, h("p", { class: "hint" }, multiple ? "Choose one or more." : "Choose one."), h("div", { class: "actions" }, sendButton()));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = inputs.filter((input) => input.checked).map((input) => input.value);
    if (chosen.length === 0) {
      showRefusal(form, multiple ? "Choose at least one option." : "Choose an option.");
      inputs[0]?.focus();
      return;
    }
    const answer: Answer = multiple ? { case: "selections", value: { labels: chosen } } : { case: "text", value: chosen[0] };
    void submit(form, send, answer, `Answered: ${chosen.join(", ")}`);
  });
  return form;
}

function sameJson(a: JsonValue | undefined, b: JsonValue | undefined): boolean {
  return JSON.stringify(a ?? {}) === JSON.stringify(b ?? {});
}

function approvalForm(pending: PendingToolCall, tool: ToolInfo | undefined, send: Send, onThread: boolean): HTMLFormElement {
  const { form, body } = shell(`Approve: ${toolWords(pending.toolName, tool)}?`, "approval");
  form.dataset.search = [pending.toolName, tool?.description ?? "", flatText(pending.args)].join(" ");
  const args = h("textarea", { spellcheck: "false", class: "code" });
  args.value = pretty(pending.args);
  args.rows = Math.min(Math.max(args.value.split("\n").length, 3), 14);
  const jsonField = field("Arguments as JSON", args, "Edit them to run the call with your arguments instead of the model's.");
  jsonField.hidden = true;
  const editArgs = h("button", { type: "button", class: "quiet", "aria-expanded": "false", "aria-controls": args.id }, "Edit arguments");
  editArgs.addEventListener("click", () => {
    const open = editArgs.getAttribute("aria-expanded") !== "true";
    editArgs.setAttribute("aria-expanded", String(open));
    jsonField.hidden = !open;
    if (open) args.focus();
  });
  const reason = h("input", { type: "text", autocomplete: "off" });
  const approve = h("button", { type: "submit", class: "primary" }, "Approve");
  // Later calls of this tool in the conversation run without asking (a
  // grant of the thread, which GetThread lists and RevokeGrant ends).
  const remember = onThread
    ? h(
        "button",
        { type: "submit", class: "remember", value: "remember", title: `Also approves later calls of ${pending.toolName} in this conversation` },
        "Approve and remember",
      )
    : null;
  const decline = h("button", { type: "button", class: "danger" }, "Decline");
  if (tool?.description) body.append(h("p", { class: "tool-description" }, tool.description));
  body.append(
    valueTable(`What ${pending.toolName} will be run with`, pending.args ?? {}, tool?.inputSchema as JsonValue | undefined),
    h("div", { class: "edit-args" }, editArgs),
    jsonField,
    h("div", { class: "actions" }, approve, remember),
    field("Reason", reason, "Optional. The model is told why you declined."),
    h("div", { class: "actions" }, decline),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const remembered = remember !== null && (event as SubmitEvent).submitter === remember;
    let edited: JsonValue;
    try {
      edited = JSON.parse(args.value) as JsonValue;
    } catch (error) {
      showRefusal(form, `The arguments are not valid JSON: ${(error as Error).message}.`);
      return;
    }
    if (edited === null || typeof edited !== "object" || Array.isArray(edited)) {
      showRefusal(form, "The arguments must be a JSON object.");
      return;
    }
    const changed = !sameJson(edited, pending.args);
    const approval = {
      approved: true,
      ...(changed ? { editedArgs: edited as JsonObject } : {}),
      ...(remembered ? { remember: GrantScope.THREAD } : {}),
    };
    const said = changed ? "Approved with edited arguments" : "Approved";
    void submit(form, send, { case: "approval", value: approval }, remembered ? `${said}, and remembered in this conversation` : said);
  });
  decline.addEventListener("click", () => {
    const why = reason.value.trim();
    void submit(form, send, { case: "approval", value: { approved: false, reason: why } }, why ? `Declined: ${why}` : "Declined");
  });
  return form;
}

const REVIEWED: Record<string, string> = { approve: "Approved the draft", reject: "Rejected the draft", edit: "Edited the draft" };

/** What a response said, in a line: a review's verdict (and comment), or
 * each value named, long ones cut. */
function responseSummary(data: JsonObject): string {
  const verdict = typeof data.decision === "string" ? REVIEWED[data.decision] : undefined;
  if (verdict) {
    const comment = typeof data.comment === "string" ? data.comment.trim() : "";
    return comment ? `${verdict}: ${clip(comment)}` : verdict;
  }
  const said = Object.entries(data)
    .map(([name, value]) => `${label(name)}: ${clip(flatText(value), 60)}`)
    .join("; ");
  return said ? `Answered: ${said}` : "Answered";
}

/** Where a response starts: a review's revised text from its draft. */
function startingPoint(schema: JsonObject | undefined, payload: JsonObject): JsonObject {
  const properties = schema?.properties;
  const hasRevised = !!properties && typeof properties === "object" && !Array.isArray(properties) && "revised_text" in properties;
  return hasRevised && typeof payload.draft === "string" ? { revised_text: payload.draft } : {};
}

function customForm(pending: PendingToolCall, payload: JsonObject, tool: ToolInfo | undefined, send: Send): HTMLFormElement {
  const draft = typeof payload.draft === "string";
  const { form, body } = shell(draft ? "Review the draft" : `${label(toolWords(pending.toolName, tool))} needs your response`, "custom");
  form.dataset.search = [pending.toolName, flatText(payload)].join(" ");
  const shown = h("dl", { class: "payload" });
  for (const [name, value] of Object.entries(payload)) {
    shown.append(h("dt", {}, label(name)), h("dd", {}, typeof value === "string" ? value : h("pre", {}, pretty(value))));
  }
  const editor = schemaEditor(form, tool?.resumeSchema, "Response as JSON", startingPoint(tool?.resumeSchema, payload));
  body.append(shown, editor.element, h("div", { class: "actions" }, sendButton()));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const data = editor.read();
    if (!data) return;
    void submit(form, send, { case: "data", value: fromJson(ValueSchema, data) }, responseSummary(data));
  });
  return form;
}
