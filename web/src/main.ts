// The page: asks for an API key when the server wants one (kept for this
// tab, or in this browser when the person asks it to be remembered), then
// shows who is signed in and the inbox.
import { Code } from "@connectrpc/connect";
import { codeOf, connect } from "./api";
import { h } from "./dom";
import { Inbox, type Connection } from "./inbox";

const KEY = "agentd.apiKey";

const status = h("p", { class: "status", role: "status" }, "Connecting…");
const tenant = h("p", { class: "tenant", hidden: true });
const signOut = h("button", { type: "button", class: "quiet", hidden: true, onclick: () => leave() }, "Sign out");
const app = document.getElementById("app")!;

function setStatus(line: Connection | "Signed out"): void {
  status.textContent = line;
  status.classList.toggle("is-live", line === "Live");
}

/** The key this tab signed in with, or the one this browser remembers. */
function storedKey(): string | null {
  return sessionStorage.getItem(KEY) ?? localStorage.getItem(KEY);
}

function forget(): void {
  sessionStorage.removeItem(KEY);
  localStorage.removeItem(KEY);
}

function leave(): void {
  forget();
  window.location.reload();
}

/** Opens the inbox with `key`; `remember` is null when the key was not
 * just typed in (then focus stays where the page starts). */
async function open(key: string | null, remember: boolean | null): Promise<void> {
  const client = connect(key);
  let listed;
  for (let failures = 1; ; failures += 1) {
    try {
      listed = await client.listAgents({});
      break;
    } catch (error) {
      if (codeOf(error) === Code.Unauthenticated) {
        forget();
        signIn(key ? "The server did not accept that key." : null);
        return;
      }
      setStatus(failures >= 3 ? "Offline — retrying" : "Reconnecting…");
      await new Promise((resume) => window.setTimeout(resume, Math.min(1000 * 2 ** failures, 15_000)));
    }
  }
  if (key && remember !== null) {
    forget();
    (remember ? localStorage : sessionStorage).setItem(KEY, key);
  }
  signOut.hidden = !key;
  tenant.replaceChildren(h("span", { class: "label" }, "Tenant"), h("span", { class: "tenant-name" }, listed.tenant || "default"));
  tenant.hidden = false;
  const inbox = new Inbox(client, listed.agents, setStatus, leave);
  app.replaceChildren(inbox.element);
  // Signed in: focus goes to the first run, not nowhere.
  inbox.start(remember !== null);
}

function signIn(refusal: string | null): void {
  setStatus("Signed out");
  tenant.hidden = true;
  signOut.hidden = true;
  const key = h("input", { id: "api-key", type: "password", autocomplete: "current-password", required: true });
  const remember = h("input", { id: "remember", type: "checkbox" });
  const form = h(
    "form",
    { class: "sign-in", "aria-labelledby": "sign-in-title" },
    h("h2", { id: "sign-in-title" }, "Sign in"),
    h("p", {}, "This server requires an API key. It is sent with every call, and kept in this tab only unless you ask this browser to remember it."),
    h("div", { class: "field" }, h("label", { for: "api-key" }, "API key"), key),
    h(
      "div",
      { class: "field check" },
      h("label", { for: "remember", class: "inline" }, remember, " Remember on this device"),
      h("p", { class: "hint" }, "Keeps the key in this browser, for other tabs too, until you sign out."),
    ),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Sign in")),
    refusal ? h("div", { role: "alert", class: "alert" }, refusal) : null,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void open(key.value.trim(), remember.checked);
  });
  app.replaceChildren(h("main", { class: "inbox" }, form));
  key.focus();
}

document.getElementById("header-tools")!.append(tenant, status, signOut);
// The sticky header's height, which a run scrolled to keeps clear of
// (its scroll-margin-top).
const top = document.querySelector<HTMLElement>("header.top")!;
new ResizeObserver(() => document.documentElement.style.setProperty("--top-height", `${top.offsetHeight}px`)).observe(top);
void open(storedKey(), null);
