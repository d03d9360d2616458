// The fields of a form planned from a JSON Schema (schema.ts), in the
// DOM: an enum as radios named by their titles (or values), a multi-select
// as checkboxes, a boolean as a checkbox, strings and numbers as inputs
// named by the property's title (or name), required fields marked,
// defaults filled in, fields that an `if`/`then` rule requires shown only
// while it does. Used by a custom tool's resume data and by an MCP
// server's request for input. It reads and marks; it never sends.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { clip, h, label, uid } from "./dom";
import { content, fieldsNow, problems, type FieldPlan, type FormPlan, type Values } from "./schema";

/** One field in the DOM. */
interface FieldView {
  plan: FieldPlan;
  element: HTMLElement;
  /** The value entered (undefined: empty), or a problem found reading it. */
  read(): { value?: JsonValue } | string;
  mark(problem: string | null): void;
  /** Marks the field required, or not. */
  require(required: boolean): void;
}

export interface SchemaFields {
  element: HTMLElement;
  /** The content to send, or how many fields need attention (each marked). */
  collect(): { content: JsonObject } | { faults: number };
  /** Marks the field `name` with `problem`; false when there is none. */
  mark(name: string, problem: string): boolean;
}

/** A `YYYY-MM-DDTHH:MM` local time for a datetime-local input, from an
 * RFC 3339 time. */
function localTime(value: string): string {
  const time = new Date(value);
  if (Number.isNaN(time.getTime())) return "";
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${time.getFullYear()}-${pad(time.getMonth() + 1)}-${pad(time.getDate())}T${pad(time.getHours())}:${pad(time.getMinutes())}`;
}

/** Sentences joined, each ending with a stop. */
function sentences(...parts: (string | undefined)[]): string {
  return parts
    .filter((part): part is string => !!part)
    .map((part) => (/[.!?:]$/.test(part) ? part : `${part}.`))
    .join(" ");
}

const INPUT_TYPES: Record<string, string> = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" };

/** What is wrong with a value the browser does not take for its format. */
const FORMAT_PROBLEMS: Record<string, string> = {
  email: "Not an email address: write it like name@example.com.",
  uri: "Not a web address: write it like https://example.com.",
};

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

/** A label's text, and the mark `(required)` that follows it when needed:
 * seen, but not part of the field's name (its control says
 * `aria-required`). */
function labelled(field: FieldPlan): { label: HTMLElement[]; require: (on: boolean) => void } {
  const mark = h("span", { class: "required", "aria-hidden": "true", hidden: !field.required }, " (required)");
  return { label: [h("span", {}, field.label), mark], require: (on) => (mark.hidden = !on) };
}

function ariaRequired(control: HTMLElement, on: boolean): void {
  if (on) control.setAttribute("aria-required", "true");
  else control.removeAttribute("aria-required");
}

function choiceField(field: FieldPlan, multiple: boolean): FieldView {
  const legendId = uid("legend");
  const hintId = uid("hint");
  const { label, require } = labelled(field);
  const defaults = Array.isArray(field.default) ? field.default : field.default === undefined ? [] : [field.default];
  const chosen = (value: JsonValue) => defaults.some((d) => JSON.stringify(d) === JSON.stringify(value));
  const name = uid("choice");
  const inputs = (field.choices ?? []).map((choice) =>
    h("input", { type: multiple ? "checkbox" : "radio", name, value: String(choice.value), checked: chosen(choice.value) }),
  );
  const limits = multiple
    ? field.minItems !== undefined && field.maxItems !== undefined
      ? `Choose ${field.minItems} to ${field.maxItems}.`
      : field.minItems !== undefined
        ? `Choose at least ${field.minItems}.`
        : field.maxItems !== undefined
          ? `Choose at most ${field.maxItems}.`
          : "Choose any."
    : "Choose one.";
  const element = h(
    "fieldset",
    { class: "field group", role: multiple ? "group" : "radiogroup", "aria-labelledby": legendId, "aria-describedby": hintId },
    h("legend", { id: legendId }, ...label),
    h("p", { class: "hint", id: hintId }, sentences(field.description, limits)),
    h(
      "div",
      { class: "options" },
      ...(field.choices ?? []).map((choice, i) =>
        h("label", { class: "option" }, inputs[i], h("span", { class: "option-text" }, h("span", { class: "option-label" }, choice.title))),
      ),
    ),
  );
  const read = () => {
    const values = (field.choices ?? []).filter((_, i) => inputs[i].checked).map((choice) => choice.value);
    if (multiple) return values.length ? { value: values } : {};
    return values.length ? { value: values[0] } : {};
  };
  return {
    plan: field,
    element,
    read,
    mark: problemSlot(element, [element]),
    require: (on) => {
      require(on);
      if (!multiple) ariaRequired(element, on);
    },
  };
}

function booleanField(field: FieldPlan): FieldView {
  const box = h("input", { type: "checkbox", id: uid("field"), checked: field.default === true });
  const hintId = field.description ? uid("hint") : undefined;
  if (hintId) box.setAttribute("aria-describedby", hintId);
  const { label, require } = labelled(field);
  const element = h(
    "div",
    { class: "field check" },
    h("label", { for: box.id, class: "inline" }, box, " ", ...label),
    field.description ? h("p", { class: "hint", id: hintId }, field.description) : null,
  );
  return { plan: field, element, read: () => ({ value: box.checked }), mark: problemSlot(element, [box]), require };
}

function inputField(field: FieldPlan): FieldView {
  const numeric = field.kind === "number" || field.kind === "integer";
  const format = field.format ?? "";
  const long = !numeric && !format && (field.maxLength === undefined || field.maxLength > 200);
  const attributes = {
    id: uid("field"),
    autocomplete: "off",
    "aria-required": field.required ? "true" : null,
    minlength: field.minLength,
    maxlength: field.maxLength,
  };
  const input = long
    ? h("textarea", { ...attributes, rows: 3 })
    : h("input", {
        ...attributes,
        type: numeric ? "number" : (INPUT_TYPES[format] ?? "text"),
        min: field.minimum,
        max: field.maximum,
        step: field.kind === "integer" ? 1 : numeric ? "any" : undefined,
      });
  if (field.default !== undefined && field.default !== null) {
    input.value = format === "date-time" ? localTime(String(field.default)) : String(field.default);
  }
  const { minimum: min, maximum: max } = field;
  const range =
    min !== undefined && max !== undefined ? `From ${min} to ${max}.` : min !== undefined ? `At least ${min}.` : max !== undefined ? `At most ${max}.` : "";
  const hint = sentences(field.description, range);
  const hintId = hint ? uid("hint") : undefined;
  if (hintId) input.setAttribute("aria-describedby", hintId);
  const { label, require } = labelled(field);
  const element = h(
    "div",
    { class: "field" },
    h("label", { for: input.id }, ...label),
    hint ? h("p", { class: "hint", id: hintId }, hint) : null,
    input,
  );
  const read = (): { value?: JsonValue } | string => {
    const raw = input.value.trim();
    if (raw === "") return {};
    if (numeric) {
      const value = Number(raw);
      if (!Number.isFinite(value)) return "Not a number.";
      if (field.kind === "integer" && !Number.isInteger(value)) return "A whole number.";
      return { value };
    }
    // The browser's own check of an email or web address (`ken@` is not one).
    if (input instanceof HTMLInputElement && input.validity.typeMismatch) return FORMAT_PROBLEMS[format] ?? "Not in the expected form.";
    if (format === "date-time") {
      const time = new Date(raw);
      return Number.isNaN(time.getTime()) ? "Not a time." : { value: time.toISOString() };
    }
    return { value: long ? input.value.trim() : input.value };
  };
  return {
    plan: field,
    element,
    read,
    mark: problemSlot(element, [input]),
    require: (on) => {
      require(on);
      ariaRequired(input, on);
    },
  };
}

function fieldView(field: FieldPlan): FieldView {
  switch (field.kind) {
    case "choice":
      return choiceField(field, false);
    case "choices":
      return choiceField(field, true);
    case "boolean":
      return booleanField(field);
    default:
      return inputField(field);
  }
}

/** The fields of `plan`, kept in step with its rules as values change. */
export function schemaFields(plan: FormPlan): SchemaFields {
  const views = plan.fields.map(fieldView);
  const element = h("div", { class: "schema-fields" }, ...views.map((view) => view.element));
  const values = (): Values =>
    Object.fromEntries(
      views.map((view) => {
        const read = view.read();
        return [view.plan.name, typeof read === "string" ? undefined : read.value];
      }),
    );
  const update = () => {
    const { shown, required } = fieldsNow(plan, values());
    for (const view of views) {
      view.element.hidden = !shown.has(view.plan.name);
      view.require(required.has(view.plan.name));
    }
  };
  // A field's problem goes once the person changes it.
  const changed = (event: Event) => {
    views.find((view) => view.element.contains(event.target as Node))?.mark(null);
    update();
  };
  element.addEventListener("input", changed);
  element.addEventListener("change", changed);
  update();
  return {
    element,
    collect() {
      update();
      const entered: Values = {};
      const unread = new Set<string>();
      let faults = 0;
      for (const view of views) {
        const read = view.read();
        view.mark(null);
        if (typeof read !== "string") entered[view.plan.name] = read.value;
        else if (!view.element.hidden) {
          view.mark(read);
          unread.add(view.plan.name);
          faults += 1;
        }
      }
      for (const [name, problem] of problems(plan, entered)) {
        if (unread.has(name)) continue;
        views.find((view) => view.plan.name === name)?.mark(problem);
        faults += 1;
      }
      return faults > 0 ? { faults } : { content: content(plan, entered) };
    },
    mark(name, problem) {
      const view = views.find((v) => v.plan.name === name);
      view?.mark(problem);
      return !!view;
    },
  };
}

/** What was sent, as a person reads it: `Email: ana@example.com;
 * Breakfast: yes; …`, each name as words, long values cut. */
export function summarize(content: JsonObject): string {
  const said = (value: JsonValue): string =>
    typeof value === "boolean" ? (value ? "yes" : "no") : Array.isArray(value) ? value.map(said).join(", ") : typeof value === "object" ? JSON.stringify(value) : String(value);
  return Object.entries(content)
    .map(([name, value]) => `${label(name)}: ${clip(said(value), 60)}`)
    .join("; ");
}
