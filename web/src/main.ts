// The page: asks for an API key when the server wants one (and keeps it
// for this tab only), then shows the inbox.
import { Code } from "@connectrpc/connect";
import { codeOf, connect, describe } from "./api";
import { h } from "./dom";
import { Inbox } from "./inbox";

const KEY = "agentd.apiKey";

const status = h("p", { class: "status", role: "status" }, "Connecting…");
const signOut = h("button", { type: "button", class: "quiet", hidden: true, onclick: () => leave() }, "Sign out");
const app = document.getElementById("app")!;

function setStatus(live: boolean, text: string): void {
  status.textContent = text;
  status.classList.toggle("is-live", live);
}

function leave(): void {
  sessionStorage.removeItem(KEY);
  window.location.reload();
}

async function open(key: string | null): Promise<void> {
  const client = connect(key);
  let agents;
  try {
    agents = (await client.listAgents({})).agents;
  } catch (error) {
    if (codeOf(error) === Code.Unauthenticated) {
      sessionStorage.removeItem(KEY);
      signIn(key ? "The server did not accept that key." : null);
      return;
    }
    setStatus(false, `The server cannot be reached: ${describe(error)}`);
    app.replaceChildren(
      h("main", { class: "inbox" }, h("div", { role: "alert", class: "alert" }, describe(error)), h("button", { type: "button", onclick: () => void open(key) }, "Try again")),
    );
    return;
  }
  if (key) sessionStorage.setItem(KEY, key);
  signOut.hidden = !key;
  const inbox = new Inbox(client, agents, setStatus, leave);
  app.replaceChildren(inbox.element);
  inbox.start();
}

function signIn(refusal: string | null): void {
  setStatus(false, "Signed out");
  const key = h("input", { id: "api-key", type: "password", autocomplete: "current-password", required: true });
  const form = h(
    "form",
    { class: "sign-in", "aria-labelledby": "sign-in-title" },
    h("h2", { id: "sign-in-title" }, "Sign in"),
    h("p", {}, "This server requires an API key. It is kept in this tab only, and sent with every call."),
    h("div", { class: "field" }, h("label", { for: "api-key" }, "API key"), key),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Sign in")),
    refusal ? h("div", { role: "alert", class: "alert" }, refusal) : null,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void open(key.value.trim());
  });
  app.replaceChildren(h("main", { class: "inbox" }, form));
  key.focus();
}

document.getElementById("header-tools")!.append(status, signOut);
void open(sessionStorage.getItem(KEY));
