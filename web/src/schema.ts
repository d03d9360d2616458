// From a JSON Schema to the plan of a form, without the DOM: which
// fields, of which kind, in which order, which required, which shown only
// when an `if`/`then` rule holds, and what is wrong with a set of values
// before they are sent. A schema this cannot express faithfully plans no
// form (null): the page then offers JSON. It never sends anything; the
// server checks every answer again.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { label } from "./dom";

/** One choice of an enum: the value sent, and what the person reads. */
export interface Choice {
  value: JsonValue;
  title: string;
}

/** `choice`: one of several (radios); `choices`: any of several
 * (checkboxes); the others one input each. */
export type FieldKind = "choice" | "choices" | "boolean" | "text" | "number" | "integer";

export interface FieldPlan {
  name: string;
  /** The property's title, or its name as words. */
  label: string;
  description?: string;
  kind: FieldKind;
  /** Required whatever the other values are. */
  required: boolean;
  choices?: Choice[];
  default?: JsonValue;
  /** A string's format: email, uri, date, date-time. */
  format?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
}

/** One condition of an `if`: the field's value is one of `values` (a
 * field left empty satisfies it unless `present` says it must be there). */
export interface Condition {
  name: string;
  values: JsonValue[];
  present: boolean;
}

/** `if` all `when` hold, the fields of `then` are required (and shown);
 * otherwise those of `otherwise` are. */
export interface Rule {
  when: Condition[];
  then: string[];
  otherwise: string[];
}

export interface FormPlan {
  fields: FieldPlan[];
  rules: Rule[];
}

/** What the person entered: a value per field name (undefined: empty). */
export type Values = Record<string, JsonValue | undefined>;

function object(value: JsonValue | undefined): JsonObject | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? value : undefined;
}

function text(value: JsonValue | undefined): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

function num(value: JsonValue | undefined): number | undefined {
  return typeof value === "number" ? value : undefined;
}

function names(value: JsonValue | undefined): string[] | null {
  if (value === undefined) return [];
  return Array.isArray(value) && value.every((x) => typeof x === "string") ? (value as string[]) : null;
}

function scalar(value: JsonValue): boolean {
  return value === null || typeof value !== "object";
}

/** Keys a property may have and still be shown faithfully. */
const PROPERTY_KEYS = new Set([
  "type", "title", "description", "default", "enum", "enumNames", "oneOf", "anyOf", "const", "format",
  "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "items", "uniqueItems", "examples",
]);
const FORMATS = new Set(["email", "uri", "date", "date-time"]);

/** The choices of an enum: `oneOf`/`anyOf` of `{const, title}`, or `enum`
 * with the legacy `enumNames` as titles; undefined when it has none, null
 * when they are not plain values. */
export function choicesOf(schema: JsonObject | undefined): Choice[] | null | undefined {
  if (!schema) return undefined;
  const titled = schema.oneOf ?? schema.anyOf;
  if (titled !== undefined) {
    if (!Array.isArray(titled)) return null;
    const choices: Choice[] = [];
    for (const choice of titled) {
      const option = object(choice);
      if (!option || !("const" in option) || !scalar(option.const)) return null;
      choices.push({ value: option.const, title: text(option.title) ?? String(option.const) });
    }
    return choices;
  }
  if (schema.enum !== undefined) {
    if (!Array.isArray(schema.enum) || !schema.enum.every(scalar)) return null;
    const titles = Array.isArray(schema.enumNames) ? schema.enumNames : [];
    return schema.enum.map((value, i) => ({ value, title: text(titles[i]) ?? (typeof value === "string" ? label(value) : String(value)) }));
  }
  return undefined;
}

/** The plan of one property's field, or null when no field shows it. */
export function planField(name: string, property: JsonValue | undefined, required: boolean): FieldPlan | null {
  const schema = object(property);
  if (!schema || Object.keys(schema).some((key) => !PROPERTY_KEYS.has(key))) return null;
  const base: FieldPlan = {
    name,
    label: text(schema.title) ?? label(name),
    description: text(schema.description),
    kind: "text",
    required,
    default: schema.default,
  };
  if (schema.type === "array") {
    const items = object(schema.items);
    const choices = choicesOf(items);
    if (!choices) return null;
    return { ...base, kind: "choices", choices, minItems: num(schema.minItems), maxItems: num(schema.maxItems) };
  }
  const choices = choicesOf(schema);
  if (choices === null) return null;
  if (choices) return { ...base, kind: "choice", choices };
  switch (schema.type) {
    case "boolean":
      return { ...base, kind: "boolean" };
    case "number":
    case "integer":
      return { ...base, kind: schema.type, minimum: num(schema.minimum), maximum: num(schema.maximum) };
    case "string": {
      const format = text(schema.format);
      if (format && !FORMATS.has(format)) return { ...base, minLength: num(schema.minLength), maxLength: num(schema.maxLength) };
      return { ...base, format, minLength: num(schema.minLength), maxLength: num(schema.maxLength) };
    }
    default:
      return null;
  }
}

/** A rule from `if`/`then`/`else`, or null when it says more than which
 * fields a value makes required. */
function planRule(schema: JsonObject, known: Set<string>): Rule | null {
  const condition = object(schema.if);
  if (!condition || Object.keys(condition).some((key) => key !== "properties" && key !== "required")) return null;
  const present = names(condition.required);
  const properties = object(condition.properties) ?? {};
  if (!present) return null;
  const when: Condition[] = [];
  for (const [name, property] of Object.entries(properties)) {
    const test = object(property);
    if (!test || !known.has(name)) return null;
    const keys = Object.keys(test);
    let values: JsonValue[];
    if (keys.length === 1 && "const" in test) values = [test.const];
    else if (keys.length === 1 && Array.isArray(test.enum)) values = test.enum;
    else return null;
    when.push({ name, values, present: present.includes(name) });
  }
  if (present.some((name) => !(name in properties))) return null;
  const branch = (value: JsonValue | undefined): string[] | null => {
    if (value === undefined) return [];
    const part = object(value);
    if (!part || Object.keys(part).some((key) => key !== "required")) return null;
    const required = names(part.required);
    return required && required.every((name) => known.has(name)) ? required : null;
  };
  const then = branch(schema.then);
  const otherwise = branch(schema.else);
  if (!then || !otherwise) return null;
  return { when, then, otherwise };
}

/** Keys an object schema may have and still be shown as a form. */
const OBJECT_KEYS = new Set(["type", "properties", "required", "additionalProperties", "if", "then", "else", "allOf", "title", "description", "$schema"]);

/** The form for an object schema, or null when a form cannot express it
 * (nested objects, arrays of anything but choices, `oneOf` of shapes,
 * rules on anything but a field's value...). */
export function planForm(schema: JsonValue | undefined): FormPlan | null {
  const root = object(schema);
  if (!root || (root.type !== undefined && root.type !== "object")) return null;
  if (Object.keys(root).some((key) => !OBJECT_KEYS.has(key))) return null;
  const properties = object(root.properties) ?? {};
  const required = names(root.required);
  if (!required || required.some((name) => !(name in properties))) return null;
  const known = new Set(Object.keys(properties));
  // A Struct keeps no order: the required fields first, as `required`
  // lists them, then the others by name.
  const order = [...required, ...Object.keys(properties).filter((name) => !required.includes(name)).sort()];
  const fields: FieldPlan[] = [];
  for (const name of order) {
    const field = planField(name, properties[name], required.includes(name));
    if (!field) return null;
    fields.push(field);
  }
  const ruleSchemas: JsonObject[] = [];
  if (root.if !== undefined) ruleSchemas.push(root);
  else if (root.then !== undefined || root.else !== undefined) return null;
  if (root.allOf !== undefined) {
    if (!Array.isArray(root.allOf)) return null;
    for (const part of root.allOf) {
      const rule = object(part);
      if (!rule || Object.keys(rule).some((key) => !["if", "then", "else"].includes(key))) return null;
      ruleSchemas.push(rule);
    }
  }
  const rules: Rule[] = [];
  for (const part of ruleSchemas) {
    const rule = planRule(part, known);
    if (!rule) return null;
    rules.push(rule);
  }
  return { fields, rules };
}

function holds(rule: Rule, values: Values): boolean {
  return rule.when.every((condition) => {
    const value = values[condition.name];
    if (value === undefined) return !condition.present;
    return condition.values.some((wanted) => JSON.stringify(wanted) === JSON.stringify(value));
  });
}

/** Which fields show and which are required, given the values entered: a
 * field that only a rule requires shows only while that rule requires it. */
export function fieldsNow(plan: FormPlan, values: Values): { shown: Set<string>; required: Set<string> } {
  const required = new Set(plan.fields.filter((field) => field.required).map((field) => field.name));
  const conditional = new Set(plan.rules.flatMap((rule) => [...rule.then, ...rule.otherwise]));
  for (const rule of plan.rules) {
    for (const name of holds(rule, values) ? rule.then : rule.otherwise) required.add(name);
  }
  const shown = new Set(
    plan.fields.filter((field) => !conditional.has(field.name) || required.has(field.name) || field.required).map((field) => field.name),
  );
  return { shown, required };
}

/** What is wrong with `values` before sending, by field name. */
export function problems(plan: FormPlan, values: Values): Map<string, string> {
  const { shown, required } = fieldsNow(plan, values);
  const found = new Map<string, string>();
  for (const field of plan.fields) {
    if (!shown.has(field.name)) continue;
    const value = values[field.name];
    const empty = value === undefined || (Array.isArray(value) && value.length === 0);
    if (empty) {
      if (required.has(field.name)) {
        found.set(field.name, field.kind === "choice" ? "Choose an option." : field.kind === "choices" ? "Choose at least one option." : "Required.");
      }
      continue;
    }
    if (typeof value === "number") {
      if (field.minimum !== undefined && value < field.minimum) found.set(field.name, `At least ${field.minimum}.`);
      else if (field.maximum !== undefined && value > field.maximum) found.set(field.name, `At most ${field.maximum}.`);
    } else if (typeof value === "string" && field.kind === "text") {
      if (field.minLength !== undefined && value.length < field.minLength) found.set(field.name, `At least ${field.minLength} characters.`);
      else if (field.maxLength !== undefined && value.length > field.maxLength) found.set(field.name, `At most ${field.maxLength} characters.`);
    } else if (Array.isArray(value)) {
      if (field.minItems !== undefined && value.length < field.minItems) found.set(field.name, `Choose at least ${field.minItems}.`);
      else if (field.maxItems !== undefined && value.length > field.maxItems) found.set(field.name, `Choose at most ${field.maxItems}.`);
    }
  }
  return found;
}

/** The values to send: those of the fields shown and filled in. */
export function content(plan: FormPlan, values: Values): JsonObject {
  const { shown } = fieldsNow(plan, values);
  const sent: JsonObject = {};
  for (const field of plan.fields) {
    const value = values[field.name];
    if (shown.has(field.name) && value !== undefined) sent[field.name] = value;
  }
  return sent;
}
