// One form per pending call, by what the call waits for: a free-text, a
// single-select or a multi-select question, an approval (approve, approve
// with edited arguments, decline with a reason), the resume data of a
// custom suspending tool, or an MCP server's request for input (a form
// built from its schema, or a page to open). Client-executed tools are
// not questions for a person: they get no form. The server checks every
// answer; a refusal is shown in the form's alert (and by the fields it
// names) and the form keeps what the person entered.
import type { JsonObject, JsonValue, MessageInitShape } from "@bufbuild/protobuf";
import {
  ElicitationAction,
  ElicitationMode,
  SelectionMode,
  type Elicitation,
  type PendingToolCall,
  type ResumeRequestSchema,
  type ToolInfo,
} from "./gen/agentd/v1/agentd_pb";
import { fromJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import type { Violation } from "./api";
import { h, pretty, uid } from "./dom";

export type Answer = MessageInitShape<typeof ResumeRequestSchema>["answer"];

/** Why the server did not take an answer: its message, and the fields it
 * named (google.rpc.BadRequest), if any. */
export interface Refusal {
  message: string;
  violations: Violation[];
}

/** Sends an answer; resolves to the server's refusal, or null once the
 * answer is taken. */
export type Send = (answer: Answer, summary: string) => Promise<Refusal | null>;

/** The form for `pending`, or null when no person answers it. */
export function pendingForm(pending: PendingToolCall, tool: ToolInfo | undefined, send: Send): HTMLFormElement | null {
  if (pending.awaitingApproval) return approvalForm(pending, send);
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

/** A form named by its heading, with an alert for refusals. */
function shell(title: string, kind: string): { form: HTMLFormElement; body: HTMLElement } {
  const id = uid("question");
  const body = h("div", { class: "question-body" });
  const form = h("form", { class: `question ${kind}`, "aria-labelledby": id, novalidate: true }, h("h3", { id }, title), body);
  return { form, body };
}

/** Shows `message` in the form's alert (null clears it). */
export function showRefusal(form: HTMLFormElement, message: string | null): void {
  form.querySelector('[role="alert"]')?.remove();
  if (message) form.append(h("div", { role: "alert", class: "alert" }, message));
}

/** Submits through `send` with the form's buttons disabled meanwhile;
 * resolves to the refusal, if any, once it is shown. */
async function submit(form: HTMLFormElement, send: Send, answer: Answer, summary: string): Promise<Refusal | null> {
  const buttons = [...form.querySelectorAll("button")];
  buttons.forEach((button) => (button.disabled = true));
  form.setAttribute("aria-busy", "true");
  const refusal = await send(answer, summary);
  form.removeAttribute("aria-busy");
  buttons.forEach((button) => (button.disabled = false));
  showRefusal(form, refusal?.message ?? null);
  return refusal;
}

function field(label: string, control: HTMLElement, hint?: string): HTMLElement {
  const id = uid("field");
  control.id = id;
  const hintId = hint ? uid("hint") : undefined;
  if (hintId) control.setAttribute("aria-describedby", hintId);
  return h(
    "div",
    { class: "field" },
    h("label", { for: id }, label),
    hint ? h("p", { class: "hint", id: hintId }, hint) : null,
    control,
  );
}

function sendButton(): HTMLButtonElement {
  return h("button", { type: "submit", class: "primary" }, "Send answer");
}

function freeTextForm(question: string, send: Send): HTMLFormElement {
  const { form, body } = shell(question, "free-text");
  const answer = h("textarea", { rows: 3, autocomplete: "off" });
  answer.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) form.requestSubmit();
  });
  body.append(field("Answer", answer, "Ctrl+Enter sends."), h("div", { class: "actions" }, sendButton()));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void submit(form, send, { case: "text", value: answer.value }, answer.value);
  });
  return form;
}

function choiceForm(
  question: string,
  options: { label: string; description: string }[],
  multiple: boolean,
  send: Send,
): HTMLFormElement {
  const { form, body } = shell(question, multiple ? "multi-select" : "single-select");
  const name = uid("choice");
  const inputs = options.map((option) => {
    const labelId = uid("option");
    const descriptionId = option.description ? uid("description") : undefined;
    const input = h("input", {
      type: multiple ? "checkbox" : "radio",
      name,
      value: option.label,
      "aria-labelledby": labelId,
      "aria-describedby": descriptionId,
    });
    body.append(
      h(
        "label",
        { class: "option" },
        input,
        h(
          "span",
          { class: "option-text" },
          h("span", { class: "option-label", id: labelId }, option.label),
          descriptionId ? h("span", { class: "option-description", id: descriptionId }, option.description) : null,
        ),
      ),
    );
    return input;
  });
  const group = h("div", { class: "options", role: multiple ? "group" : "radiogroup", "aria-labelledby": form.getAttribute("aria-labelledby") });
  group.append(...body.childNodes);
  body.append(
    group,
    h("p", { class: "hint" }, multiple ? "Choose one or more." : "Choose one."),
    h("div", { class: "actions" }, sendButton()),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = inputs.filter((input) => input.checked).map((input) => input.value);
    const answer: Answer = multiple
      ? { case: "selections", value: { labels: chosen } }
      : { case: "text", value: chosen[0] ?? "" };
    void submit(form, send, answer, chosen.join(", "));
  });
  return form;
}

function sameJson(a: JsonValue | undefined, b: JsonValue | undefined): boolean {
  return JSON.stringify(a ?? {}) === JSON.stringify(b ?? {});
}

function approvalForm(pending: PendingToolCall, send: Send): HTMLFormElement {
  const { form, body } = shell(`Approve ${pending.toolName}?`, "approval");
  const args = h("textarea", { spellcheck: "false", class: "code" });
  args.value = pretty(pending.args);
  args.rows = Math.min(Math.max(args.value.split("\n").length, 3), 14);
  const reason = h("input", { type: "text", autocomplete: "off" });
  const approve = h("button", { type: "submit", class: "primary" }, "Approve");
  const decline = h("button", { type: "button", class: "danger" }, "Decline");
  body.append(
    field("Arguments", args, "The call as the model made it. Edit the JSON to run it with your arguments instead."),
    h("div", { class: "actions" }, approve),
    field("Reason", reason, "Optional. The model is told why you declined."),
    h("div", { class: "actions" }, decline),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    let edited: JsonValue;
    try {
      edited = JSON.parse(args.value) as JsonValue;
    } catch (error) {
      showRefusal(form, `Arguments are not valid JSON: ${(error as Error).message}`);
      return;
    }
    if (edited === null || typeof edited !== "object" || Array.isArray(edited)) {
      showRefusal(form, "Arguments must be a JSON object.");
      return;
    }
    const changed = !sameJson(edited, pending.args);
    const approval = changed ? { approved: true, editedArgs: edited as JsonObject } : { approved: true };
    void submit(form, send, { case: "approval", value: approval }, changed ? "Approved with edited arguments" : "Approved");
  });
  decline.addEventListener("click", () => {
    const why = reason.value.trim();
    void submit(form, send, { case: "approval", value: { approved: false, reason: why } }, why ? `Declined: ${why}` : "Declined");
  });
  return form;
}

/** A starting point for resume data that `schema` describes: its required
 * properties, each with its first allowed value or an empty one. */
export function skeleton(schema: JsonValue | undefined): JsonValue {
  if (!schema || typeof schema !== "object" || Array.isArray(schema)) return {};
  if ("const" in schema) return schema.const ?? null;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  switch (schema.type) {
    case "object": {
      const properties = (schema.properties ?? {}) as JsonObject;
      const required = Array.isArray(schema.required) ? (schema.required as string[]) : Object.keys(properties);
      return Object.fromEntries(required.map((name) => [name, skeleton(properties[name])]));
    }
    case "array":
      return [];
    case "string":
      return "";
    case "number":
    case "integer":
      return 0;
    case "boolean":
      return false;
    default:
      return {};
  }
}

function customForm(pending: PendingToolCall, payload: JsonObject, tool: ToolInfo | undefined, send: Send): HTMLFormElement {
  const { form, body } = shell(`${pending.toolName} asks for a response`, "custom");
  const shown = h("dl", { class: "payload" });
  for (const [name, value] of Object.entries(payload)) {
    shown.append(h("dt", {}, name), h("dd", {}, typeof value === "string" ? value : h("pre", {}, pretty(value))));
  }
  const data = h("textarea", { rows: 5, spellcheck: "false", class: "code" });
  data.value = pretty(skeleton(tool?.resumeSchema));
  body.append(
    shown,
    field("Resume data", data, "JSON, checked against the tool's resume schema."),
  );
  if (tool?.resumeSchema) {
    body.append(h("details", { class: "schema" }, h("summary", {}, "What the tool accepts"), h("pre", {}, pretty(tool.resumeSchema))));
  }
  body.append(h("div", { class: "actions" }, sendButton()));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    let value: JsonValue;
    try {
      value = JSON.parse(data.value) as JsonValue;
    } catch (error) {
      showRefusal(form, `Resume data is not valid JSON: ${(error as Error).message}`);
      return;
    }
    void submit(form, send, { case: "data", value: fromJson(ValueSchema, value) }, "Response sent");
  });
  return form;
}

/** What the inbox says an MCP server's request for input asks. */
export function elicitationHeadline(asked: Elicitation): string {
  return `${asked.server} asks: ${asked.message}`;
}

const CONTENT = "elicitation.content.";

/** One field of an elicitation form: what it holds, and where its
 * problems show. */
interface SchemaField {
  name: string;
  element: HTMLElement;
  /** The value to send; undefined leaves the field out. A string is a
   * problem found before sending. */
  read(): { value?: JsonValue } | string;
  /** Shows `problem` by the field (null clears it). */
  mark(problem: string | null): void;
}

/** A property of a form's schema, as MCP restricts it. */
type Property = JsonObject;

/** Sentences joined, each ending with a stop. */
function sentences(...parts: (string | undefined)[]): string {
  return parts
    .filter((part): part is string => !!part)
    .map((part) => (/[.!?:]$/.test(part) ? part : `${part}.`))
    .join(" ");
}

function text(value: JsonValue | undefined): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

function num(value: JsonValue | undefined): number | undefined {
  return typeof value === "number" ? value : undefined;
}

/** The choices of an enum: `oneOf`/`anyOf` of `{const, title}`, or `enum`
 * with the legacy `enumNames` as titles. */
function choicesOf(schema: Property | undefined): { value: string; title: string }[] | null {
  if (!schema) return null;
  const titled = (schema.oneOf ?? schema.anyOf) as JsonValue | undefined;
  if (Array.isArray(titled)) {
    return titled.flatMap((choice) =>
      choice && typeof choice === "object" && !Array.isArray(choice) && "const" in choice
        ? [{ value: String(choice.const), title: text(choice.title) ?? String(choice.const) }]
        : [],
    );
  }
  if (Array.isArray(schema.enum)) {
    const names = Array.isArray(schema.enumNames) ? schema.enumNames : [];
    return schema.enum.map((value, i) => ({ value: String(value), title: text(names[i]) ?? String(value) }));
  }
  return null;
}

/** A `YYYY-MM-DDTHH:MM` local time for a datetime-local input, from an
 * RFC 3339 time. */
function localTime(value: string): string {
  const time = new Date(value);
  if (Number.isNaN(time.getTime())) return "";
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${time.getFullYear()}-${pad(time.getMonth() + 1)}-${pad(time.getDate())}T${pad(time.getHours())}:${pad(time.getMinutes())}`;
}

const INPUT_TYPES: Record<string, string> = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" };

/** The label of a field: its title (or name), marked when required. */
function labelText(name: string, schema: Property, required: boolean): (Node | string)[] {
  return [text(schema.title) ?? name, required ? h("span", { class: "required" }, " (required)") : ""];
}

/** Where a field's problem shows, tied to `controls` by aria-describedby. */
function problemSlot(wrapper: HTMLElement, controls: HTMLElement[]): (problem: string | null) => void {
  const id = uid("problem");
  const slot = h("p", { class: "field-problem", id, hidden: true });
  wrapper.append(slot);
  return (problem) => {
    slot.textContent = problem ?? "";
    slot.hidden = !problem;
    wrapper.classList.toggle("invalid", !!problem);
    for (const control of controls) {
      const described = (control.getAttribute("aria-describedby") ?? "").split(" ").filter((x) => x && x !== id);
      if (problem) described.push(id);
      if (described.length) control.setAttribute("aria-describedby", described.join(" "));
      else control.removeAttribute("aria-describedby");
      if (problem) control.setAttribute("aria-invalid", "true");
      else control.removeAttribute("aria-invalid");
    }
  };
}

function schemaField(name: string, schema: Property, required: boolean): SchemaField {
  const description = text(schema.description);
  const missing = "Required.";
  if (schema.type === "array") {
    const items = schema.items && typeof schema.items === "object" && !Array.isArray(schema.items) ? schema.items : undefined;
    const choices = choicesOf(items) ?? [];
    const defaults = Array.isArray(schema.default) ? schema.default.map(String) : [];
    const hintId = uid("hint");
    const boxes = choices.map((choice) =>
      h("input", { type: "checkbox", value: choice.value, checked: defaults.includes(choice.value) }),
    );
    const min = num(schema.minItems);
    const max = num(schema.maxItems);
    const limits =
      min !== undefined && max !== undefined
        ? `Choose ${min} to ${max}.`
        : min !== undefined
          ? `Choose at least ${min}.`
          : max !== undefined
            ? `Choose at most ${max}.`
            : "Choose any.";
    const element = h(
      "fieldset",
      { class: "field group", "aria-describedby": hintId },
      h("legend", {}, ...labelText(name, schema, required)),
      h("p", { class: "hint", id: hintId }, sentences(description, limits)),
      h(
        "div",
        { class: "options" },
        ...choices.map((choice, i) =>
          h("label", { class: "option" }, boxes[i], h("span", { class: "option-text" }, h("span", { class: "option-label" }, choice.title))),
        ),
      ),
    );
    return {
      name,
      element,
      read: () => {
        const chosen = boxes.filter((box) => box.checked).map((box) => box.value);
        if (chosen.length === 0 && required && (min ?? 1) > 0) return missing;
        if (chosen.length === 0 && !required && (min ?? 0) > 0) return {};
        return { value: chosen };
      },
      mark: problemSlot(element, boxes),
    };
  }
  if (schema.type === "boolean") {
    const box = h("input", { type: "checkbox", checked: schema.default === true });
    const id = uid("field");
    box.id = id;
    const hintId = description ? uid("hint") : undefined;
    if (hintId) box.setAttribute("aria-describedby", hintId);
    const element = h(
      "div",
      { class: "field check" },
      h("label", { for: id, class: "inline" }, box, " ", ...labelText(name, schema, required)),
      description ? h("p", { class: "hint", id: hintId }, description) : null,
    );
    return { name, element, read: () => ({ value: box.checked }), mark: problemSlot(element, [box]) };
  }
  const choices = choicesOf(schema);
  if (choices) {
    const initial = schema.default === undefined ? "" : String(schema.default);
    const select = h(
      "select",
      { "aria-required": required ? "true" : null },
      initial === "" || !required ? h("option", { value: "" }, required ? "Choose…" : "(none)") : null,
      ...choices.map((choice) => h("option", { value: choice.value, selected: choice.value === initial }, choice.title)),
    );
    select.value = initial;
    const element = field("", select, description);
    element.querySelector("label")!.replaceChildren(...labelText(name, schema, required));
    return {
      name,
      element,
      read: () => (select.value === "" ? (required ? missing : {}) : { value: select.value }),
      mark: problemSlot(element, [select]),
    };
  }
  const numeric = schema.type === "number" || schema.type === "integer";
  const format = text(schema.format) ?? "";
  const input = h("input", {
    type: numeric ? "number" : (INPUT_TYPES[format] ?? "text"),
    autocomplete: "off",
    "aria-required": required ? "true" : null,
    min: numeric ? num(schema.minimum) : undefined,
    max: numeric ? num(schema.maximum) : undefined,
    step: schema.type === "integer" ? 1 : numeric ? "any" : undefined,
    minlength: num(schema.minLength),
    maxlength: num(schema.maxLength),
  });
  if (schema.default !== undefined && schema.default !== null) {
    input.value = format === "date-time" ? localTime(String(schema.default)) : String(schema.default);
  }
  const min = numeric ? num(schema.minimum) : undefined;
  const max = numeric ? num(schema.maximum) : undefined;
  const range =
    min !== undefined && max !== undefined ? `From ${min} to ${max}.` : min !== undefined ? `At least ${min}.` : max !== undefined ? `At most ${max}.` : "";
  const hint = sentences(description, range);
  const element = field("", input, hint || undefined);
  element.querySelector("label")!.replaceChildren(...labelText(name, schema, required));
  return {
    name,
    element,
    read: () => {
      const raw = input.value.trim();
      if (raw === "") return required ? missing : {};
      if (numeric) {
        const value = Number(raw);
        if (!Number.isFinite(value)) return "Not a number.";
        if (schema.type === "integer" && !Number.isInteger(value)) return "A whole number.";
        return { value };
      }
      if (format === "date-time") {
        const time = new Date(raw);
        return Number.isNaN(time.getTime()) ? "Not a time." : { value: time.toISOString() };
      }
      return { value: input.value };
    },
    mark: problemSlot(element, [input]),
  };
}

/** The field a violation names (`elicitation.content.NAME` or a path
 * below it), if it is one of `fields`. */
function fieldOf(violation: Violation, fields: SchemaField[]): SchemaField | undefined {
  if (!violation.field.startsWith(CONTENT)) return undefined;
  const path = violation.field.slice(CONTENT.length);
  return fields
    .filter((f) => path === f.name || path.startsWith(`${f.name}.`))
    .sort((a, b) => b.name.length - a.name.length)[0];
}

function respond(action: ElicitationAction, content?: JsonObject): Answer {
  return { case: "elicitation", value: { action, content } };
}

/** Decline and Cancel, which carry no content. */
function declineButtons(form: HTMLFormElement, send: Send): HTMLButtonElement[] {
  const decline = h("button", { type: "button", class: "danger" }, "Decline");
  const cancel = h("button", { type: "button", class: "quiet" }, "Cancel");
  decline.addEventListener("click", () => void submit(form, send, respond(ElicitationAction.DECLINE), "Declined"));
  cancel.addEventListener("click", () => void submit(form, send, respond(ElicitationAction.CANCEL), "Cancelled"));
  return [decline, cancel];
}

function elicitationForm(asked: Elicitation, send: Send): HTMLFormElement {
  const url = asked.mode === ElicitationMode.URL || (!asked.requestedSchema && asked.url !== "");
  return url ? urlForm(asked, send) : schemaForm(asked, send);
}

/** A page to open: the link, then whether it was done. */
function urlForm(asked: Elicitation, send: Send): HTMLFormElement {
  const { form, body } = shell(elicitationHeadline(asked), "elicitation url");
  let link: Node = document.createTextNode(asked.url);
  let host = "";
  try {
    const parsed = new URL(asked.url);
    if (parsed.protocol === "https:" || parsed.protocol === "http:") {
      host = parsed.host;
      link = h("a", { href: parsed.href, target: "_blank", rel: "noopener noreferrer" }, asked.url);
    }
  } catch {
    // Not a URL: shown as text, not a link.
  }
  const done = h("button", { type: "submit", class: "primary" }, "I've opened it, done");
  body.append(
    h("p", { class: "open-link" }, link),
    h(
      "p",
      { class: "hint" },
      host ? `Opens ${host} in a new tab. ` : "",
      `${asked.server} asks you to finish there, then say so here.`,
    ),
    h("div", { class: "actions" }, done, ...declineButtons(form, send)),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void submit(form, send, respond(ElicitationAction.ACCEPT), "Opened the page");
  });
  return form;
}

/** A form from `requested_schema`: a field per property. */
function schemaForm(asked: Elicitation, send: Send): HTMLFormElement {
  const { form, body } = shell(elicitationHeadline(asked), "elicitation");
  const schema = asked.requestedSchema ?? {};
  const properties = (schema.properties && typeof schema.properties === "object" && !Array.isArray(schema.properties) ? schema.properties : {}) as JsonObject;
  const required = new Set(Array.isArray(schema.required) ? schema.required.map(String) : []);
  // A Struct keeps no order: the required fields first, as `required`
  // lists them, then the others by name.
  const order = [...required].filter((name) => name in properties);
  order.push(...Object.keys(properties).filter((name) => !required.has(name)).sort());
  const fields = order.map((name) => [name, properties[name]] as const).map(([name, property]) =>
    schemaField(name, property && typeof property === "object" && !Array.isArray(property) ? property : {}, required.has(name)),
  );
  body.append(
    ...fields.map((f) => f.element),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Submit"), ...declineButtons(form, send)),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void (async () => {
      const content: JsonObject = {};
      let faults = 0;
      for (const f of fields) {
        const read = f.read();
        f.mark(typeof read === "string" ? read : null);
        if (typeof read === "string") faults += 1;
        else if (read.value !== undefined) content[f.name] = read.value;
      }
      if (faults > 0) {
        showRefusal(form, faults === 1 ? "One field needs your attention." : `${faults} fields need your attention.`);
        (form.querySelector('[aria-invalid="true"]') as HTMLElement | null)?.focus();
        return;
      }
      const summary = Object.entries(content)
        .map(([name, value]) => `${name}: ${Array.isArray(value) ? value.join(", ") : String(value)}`)
        .join("; ");
      const refusal = await submit(form, send, respond(ElicitationAction.ACCEPT, content), summary || "Submitted");
      const problems = new Map<SchemaField, string[]>();
      for (const violation of refusal?.violations ?? []) {
        const named = fieldOf(violation, fields);
        if (named) problems.set(named, [...(problems.get(named) ?? []), violation.description]);
      }
      problems.forEach((said, named) => named.mark(said.join(" ")));
    })();
  });
  return form;
}
