// Unit tests of the schema-to-form mapping (src/schema.ts) and of the
// plain words the page says for a server's refusal (src/api.ts), under
// Node without a browser:
//
//   node test/run.mjs schema.ts
import type { JsonObject } from "@bufbuild/protobuf";
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import { Code, ConnectError } from "@connectrpc/connect";
import { plain } from "../src/api";
import { fieldsNow, planForm, problems, content, type FormPlan } from "../src/schema";

function check(condition: unknown, what: string): asserts condition {
  if (!condition) throw new Error(`schema: ${what}`);
}

function same(actual: unknown, expected: unknown, what: string): void {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  check(a === e, `${what}: ${a}, not ${e}`);
}

/** human_review's resume schema, as src/tools/human_review.rs declares it. */
const REVIEW: JsonObject = {
  type: "object",
  properties: {
    decision: { type: "string", enum: ["approve", "reject", "edit"], description: "The reviewer's verdict." },
    comment: { type: "string", description: "Why, or what to change." },
    revised_text: { type: "string", minLength: 1, description: "The draft as the reviewer edited it; required when decision is edit." },
  },
  required: ["decision"],
  additionalProperties: false,
  if: { properties: { decision: { const: "edit" } }, required: ["decision"] },
  then: { required: ["revised_text"] },
};

function reviewForm(): FormPlan {
  const plan = planForm(REVIEW);
  check(plan, "human_review's schema is a form");
  return plan;
}

function humanReview(): void {
  const plan = reviewForm();
  same(plan.fields.map((f) => [f.name, f.kind, f.required]), [["decision", "choice", true], ["comment", "text", false], ["revised_text", "text", false]], "fields, required first");
  same(plan.fields[0].choices?.map((c) => c.title), ["Approve", "Reject", "Edit"], "an enum's choices are named by their values, as words");
  // revised_text appears, and is required, only when edit is chosen.
  const approve = fieldsNow(plan, { decision: "approve" });
  check(!approve.shown.has("revised_text") && approve.shown.has("comment"), "approve hides revised_text");
  const edit = fieldsNow(plan, { decision: "edit" });
  check(edit.shown.has("revised_text") && edit.required.has("revised_text"), "edit shows and requires revised_text");
  same([...problems(plan, {})], [["decision", "Choose an option."]], "nothing chosen");
  same([...problems(plan, { decision: "edit" })], [["revised_text", "Required."]], "edit without the text");
  same([...problems(plan, { decision: "approve" })], [], "approve alone is enough");
  same(content(plan, { decision: "approve", revised_text: "left over" }), { decision: "approve" }, "a hidden field is not sent");
  same(content(plan, { decision: "edit", revised_text: "Dear Ada", comment: "tone" }), { decision: "edit", comment: "tone", revised_text: "Dear Ada" }, "edit sends the text");
}

function kindsAndDefaults(): void {
  const plan = planForm({
    type: "object",
    properties: {
      email: { type: "string", format: "email", title: "Email" },
      nights: { type: "integer", minimum: 1, maximum: 30 },
      budget: { type: "number", default: 100 },
      breakfast: { type: "boolean", default: false },
      seat: { type: "string", enum: ["window", "aisle"], default: "window" },
      size: { type: "string", oneOf: [{ const: "s", title: "Small" }, { const: "l", title: "Large" }] },
      legacy: { type: "string", enum: ["a", "b"], enumNames: ["Alpha", "Beta"] },
      extras: { type: "array", items: { type: "string", enum: ["wifi", "pool"] }, minItems: 1 },
    },
    required: ["email", "nights"],
  });
  check(plan, "a flat schema is a form");
  const by = Object.fromEntries(plan.fields.map((f) => [f.name, f]));
  same(plan.fields.map((f) => f.name), ["email", "nights", "breakfast", "budget", "extras", "legacy", "seat", "size"], "required first, then by name");
  same([by.email.kind, by.email.format, by.email.label, by.email.required], ["text", "email", "Email", true], "a string with a format, titled");
  same([by.nights.kind, by.nights.minimum, by.nights.maximum], ["integer", 1, 30], "an integer's range");
  same([by.budget.kind, by.budget.default], ["number", 100], "a number's default");
  same([by.breakfast.kind, by.breakfast.default], ["boolean", false], "a boolean");
  same([by.seat.kind, by.seat.default], ["choice", "window"], "an enum with its default");
  same(by.size.choices, [{ value: "s", title: "Small" }, { value: "l", title: "Large" }], "oneOf of const and title");
  same(by.legacy.choices?.map((c) => c.title), ["Alpha", "Beta"], "enumNames as titles");
  same([by.extras.kind, by.extras.minItems], ["choices", 1], "a multi-select");
  same([...problems(plan, { email: "a@b.c", nights: 31 })], [["nights", "At most 30."]], "a range checked");
  same([...problems(plan, { nights: 2 })], [["email", "Required."]], "a required field");
  same([...problems(plan, { email: "a@b.c", nights: 2, extras: [] })], [], "an empty optional multi-select is left out");
}

function whatNoFormExpresses(): void {
  for (const [schema, why] of [
    [{ type: "object", properties: { address: { type: "object", properties: { city: { type: "string" } } } } }, "a nested object"],
    [{ type: "object", properties: { lines: { type: "array", items: { type: "object" } } } }, "an array of objects"],
    [{ oneOf: [{ type: "object" }, { type: "string" }] }, "a oneOf of shapes"],
    [{ type: "string" }, "not an object"],
    [{ type: "object", properties: { a: { type: "string" } }, if: { properties: { a: { pattern: "^x" } } }, then: { required: ["a"] } }, "a rule on a pattern"],
    [{ type: "object", properties: { a: { type: "string", pattern: "^x" } } }, "a pattern"],
  ] as [JsonObject, string][]) {
    check(planForm(schema) === null, `${why} needs JSON`);
  }
  check(planForm({ type: "object" }), "an empty object is an empty form");
  const rules = planForm({
    type: "object",
    properties: { kind: { enum: ["card", "bank"] }, card: { type: "string" }, iban: { type: "string" } },
    required: ["kind"],
    allOf: [
      { if: { properties: { kind: { const: "card" } } }, then: { required: ["card"] }, else: { required: ["iban"] } },
    ],
  });
  check(rules, "allOf of if/then/else is a form");
  same([...fieldsNow(rules, { kind: "bank" }).shown].sort(), ["iban", "kind"], "else shows its field");
}

function errorInfo(reason: string, metadata: Record<string, string>): Uint8Array {
  const writer = new BinaryWriter().uint32((1 << 3) | 2).string(reason);
  for (const [key, value] of Object.entries(metadata)) {
    writer.uint32((3 << 3) | 2).bytes(new BinaryWriter().uint32((1 << 3) | 2).string(key).uint32((2 << 3) | 2).string(value).finish());
  }
  return writer.finish();
}

function badRequest(field: string, description: string): Uint8Array {
  const violation = new BinaryWriter().uint32((1 << 3) | 2).string(field).uint32((2 << 3) | 2).string(description).finish();
  return new BinaryWriter().uint32((1 << 3) | 2).bytes(violation).finish();
}

function refusal(code: Code, message: string, info: Uint8Array, violation?: Uint8Array): ConnectError {
  const details = [{ type: "google.rpc.ErrorInfo", value: info }];
  if (violation) details.push({ type: "google.rpc.BadRequest", value: violation });
  // Details as they arrive from the wire: a type name and its bytes.
  return new ConnectError(message, code, undefined, details as unknown as ConstructorParameters<typeof ConnectError>[3]);
}

function plainWords(): void {
  const label = refusal(
    Code.InvalidArgument,
    'invalid answer: text: "Ultra" is not one of the options (valid labels: Basic, Pro, Enterprise)',
    errorInfo("INVALID_ANSWER", { field: "text", valid_labels: "Basic, Pro, Enterprise" }),
    badRequest("text", '"Ultra" is not one of the options'),
  );
  same(plain(label), '"Ultra" is not one of the options. Choose one of: Basic, Pro, Enterprise.', "a wrong label");
  const data = refusal(
    Code.InvalidArgument,
    "invalid answer: data: ...",
    errorInfo("INVALID_ANSWER", { field: "data" }),
    badRequest("data", 'does not match the resume schema of human_review: data/decision: "maybe" is not one of ["approve","reject","edit"]'),
  );
  same(plain(data), 'That does not fit what human_review accepts: decision: "maybe" is not one of the choices: approve, reject, edit.', "resume data");
  const gone = refusal(Code.FailedPrecondition, "run is completed", errorInfo("RUN_NOT_SUSPENDED", { status: "completed" }));
  same(plain(gone), "This run no longer waits for an answer: it is completed.", "a run answered elsewhere");
}

export async function main() {
  humanReview();
  kindsAndDefaults();
  whatNoFormExpresses();
  plainWords();
  console.log("schema: the schema-to-form mapping and the plain words hold");
}
