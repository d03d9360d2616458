// An MCP server's request for input as a form: a form built from its
// requested schema (by the same schema-to-form code as a custom tool's
// resume data), or a page to open; answered with Submit, Decline or
// Cancel. A refusal marks each field its BadRequest names
// (`elicitation.content.NAME`).
import type { JsonObject } from "@bufbuild/protobuf";
import { ElicitationAction, ElicitationMode, type Elicitation } from "./gen/agentd/v1/agentd_pb";
import { h } from "./dom";
import { schemaEditor, shell, submit, type Answer, type Send } from "./form_parts";
import { summarize } from "./schema_form";

/** What the inbox says an MCP server's request for input asks. */
export function elicitationHeadline(asked: Elicitation): string {
  return `${asked.server} asks: ${asked.message}`;
}

const CONTENT = "elicitation.content.";

function respond(action: ElicitationAction, content?: JsonObject): Answer {
  return { case: "elicitation", value: { action, content } };
}

/** Decline and Skip (MCP's cancel: no answer either way), which carry no
 * content; the run goes on after either. */
function declineButtons(form: HTMLFormElement, send: Send): HTMLButtonElement[] {
  const decline = h("button", { type: "button", class: "danger" }, "Decline");
  const cancel = h("button", { type: "button", class: "quiet" }, "Skip without answering");
  decline.addEventListener("click", () => void submit(form, send, respond(ElicitationAction.DECLINE), "Declined"));
  cancel.addEventListener("click", () => void submit(form, send, respond(ElicitationAction.CANCEL), "Cancelled"));
  return [decline, cancel];
}

const FORMATS: Record<string, string> = {
  email: "Not an email address: write it like name@example.com.",
  uri: "Not a web address: write it like https://example.com.",
  date: "Not a date.",
  "date-time": "Not a time.",
};

/** A server's problem with a field in plain words (`"ken@" is not a
 * "email"`: not an email address). */
export function plainProblem(description: string): string {
  const format = /is not a "([a-z-]+)"$/.exec(description)?.[1];
  return (format && FORMATS[format]) || description;
}

export function elicitationForm(asked: Elicitation, send: Send): HTMLFormElement {
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
    h("p", { class: "hint" }, host ? `Opens ${host} in a new tab. ` : "", `${asked.server} asks you to finish there, then say so here.`),
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
  const editor = schemaEditor(form, asked.requestedSchema ?? { type: "object" }, "Content");
  body.append(editor.element, h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Submit"), ...declineButtons(form, send)));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void (async () => {
      const content = editor.read();
      if (!content) return;
      const summary = summarize(content);
      const refusal = await submit(form, send, respond(ElicitationAction.ACCEPT, content), summary ? `Submitted: ${summary}` : "Submitted");
      const problems = new Map<string, string[]>();
      for (const violation of refusal?.violations ?? []) {
        if (!violation.field.startsWith(CONTENT)) continue;
        const name = violation.field.slice(CONTENT.length).split(".")[0];
        problems.set(name, [...(problems.get(name) ?? []), violation.description]);
      }
      problems.forEach((said, name) => editor.mark(name, said.map(plainProblem).join(" ")));
    })();
  });
  return form;
}
