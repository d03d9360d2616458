// What every question form is made of: the answer it sends and the
// refusal it may get back, the form's frame and alert, its submission,
// a labelled field, and the editor of data a JSON Schema describes (its
// fields, or JSON).

import type { JsonObject, JsonValue, MessageInitShape } from "@bufbuild/protobuf";
import type { ResumeRequestSchema } from "./gen/agentd/v1/agentd_pb";
import type { Violation } from "./api";
import { h, pretty, uid } from "./dom";
import { planForm } from "./schema";
import { schemaFields } from "./schema_form";

export type Answer = MessageInitShape<typeof ResumeRequestSchema>["answer"];

/** Why the server did not take an answer: its reason in plain words, and
 * the fields it named (google.rpc.BadRequest), if any. */
export interface Refusal {
  message: string;
  violations: Violation[];
}

/** Sends an answer with what it says (`Answered: Pro`); resolves to the
 * server's refusal, or null once the answer is taken. */
export type Send = (answer: Answer, summary: string) => Promise<Refusal | null>;

/** A form named by its heading, with an alert for refusals. */
export function shell(title: string, kind: string): { form: HTMLFormElement; body: HTMLElement } {
  const id = uid("question");
  const body = h("div", { class: "question-body" });
  const form = h("form", { class: `question ${kind}`, "aria-labelledby": id, novalidate: true }, h("h3", { id }, title), body);
  return { form, body };
}

/** Shows `message` in the form's alert (null clears it). */
export function showRefusal(form: HTMLFormElement, message: string | null): void {
  form.querySelector(':scope > [role="alert"]')?.remove();
  if (message) form.append(h("div", { role: "alert", class: "alert" }, message));
}

/** Submits through `send` with the form's buttons disabled meanwhile;
 * resolves to the refusal, if any, once it is shown. */
export async function submit(form: HTMLFormElement, send: Send, answer: Answer, summary: string): Promise<Refusal | null> {
  showRefusal(form, null);
  const buttons = [...form.querySelectorAll("button")];
  buttons.forEach((button) => (button.disabled = true));
  form.setAttribute("aria-busy", "true");
  const refusal = await send(answer, summary);
  form.removeAttribute("aria-busy");
  buttons.forEach((button) => (button.disabled = false));
  showRefusal(form, refusal?.message ?? null);
  return refusal;
}

export function field(label: string, control: HTMLElement, hint?: string): HTMLElement {
  const id = uid("field");
  control.id = id;
  const hintId = hint ? uid("hint") : undefined;
  if (hintId) control.setAttribute("aria-describedby", hintId);
  return h("div", { class: "field" }, h("label", { for: id }, label), hint ? h("p", { class: "hint", id: hintId }, hint) : null, control);
}

/** A starting point for data that `schema` describes: its required
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

/** A schema's fields with an `Edit as JSON` switch, or only JSON when the
 * form cannot express the schema. */
export interface SchemaEditor {
  element: HTMLElement;
  /** The object to send, or null after showing what is wrong. */
  read(): JsonObject | null;
  /** Marks the field `name` (false: the form shows no such field). */
  mark(name: string, problem: string): boolean;
}

export function schemaEditor(form: HTMLFormElement, schema: JsonObject | undefined, jsonLabel: string, start: JsonObject = {}): SchemaEditor {
  const plan = planForm(schema ?? { type: "object" });
  // Fields without a default of their own start from `start`.
  for (const field of plan?.fields ?? []) if (field.default === undefined && field.name in start) field.default = start[field.name];
  const fields = plan ? schemaFields(plan) : null;
  const json = h("textarea", { rows: 6, spellcheck: "false", class: "code" });
  json.value = pretty(skeleton(schema));
  const jsonField = field(jsonLabel, json, "JSON, checked against the schema.");
  const toggle = h(
    "button",
    { type: "button", role: "switch", class: "switch", "aria-checked": String(!plan), disabled: !plan },
    h("span", { class: "switch-track", "aria-hidden": "true" }),
    "Edit as JSON",
  );
  const showJson = (on: boolean) => {
    toggle.setAttribute("aria-checked", String(on));
    jsonField.hidden = !on;
    if (fields) fields.element.hidden = on;
  };
  toggle.addEventListener("click", () => {
    const on = toggle.getAttribute("aria-checked") !== "true";
    if (on && fields) {
      const read = fields.collect();
      if ("content" in read) json.value = pretty(read.content);
      fields.element.querySelectorAll<HTMLElement>(".invalid").forEach((wrong) => wrong.classList.remove("invalid"));
    }
    showJson(on);
  });
  showJson(!plan);
  // Once every marked field is put right, the alert that counted them goes.
  fields?.element.addEventListener("input", () => {
    if (!form.querySelector('[aria-invalid="true"]')) showRefusal(form, null);
  });
  const element = h(
    "div",
    { class: "schema-editor" },
    fields?.element ?? null,
    jsonField,
    h("div", { class: "switch-row" }, toggle, plan ? null : h("span", { class: "hint" }, "This schema needs JSON: the form cannot show it.")),
  );
  if (schema) element.append(h("details", { class: "schema" }, h("summary", {}, "What is accepted"), h("pre", {}, pretty(schema))));
  return {
    element,
    read() {
      if (toggle.getAttribute("aria-checked") === "true" || !fields) {
        let value: JsonValue;
        try {
          value = JSON.parse(json.value) as JsonValue;
        } catch (error) {
          showRefusal(form, `That is not valid JSON: ${(error as Error).message}.`);
          return null;
        }
        if (value === null || typeof value !== "object" || Array.isArray(value)) {
          showRefusal(form, "The answer must be a JSON object.");
          return null;
        }
        return value;
      }
      const read = fields.collect();
      if ("content" in read) return read.content;
      showRefusal(form, read.faults === 1 ? "One field needs your attention." : `${read.faults} fields need your attention.`);
      (form.querySelector('[aria-invalid="true"]') as HTMLElement | null)?.focus();
      return null;
    },
    mark: (name, problem) => fields?.mark(name, problem) ?? false,
  };
}
