// agentd's AG-UI surface driven by the official AG-UI client (@ag-ui/client's
// HttpAgent, which verifies the event sequence) and checked with
// @ag-ui/core's schemas; each interrupt's responseSchema is checked with
// ajv against right and wrong answers. Every scenario runs with both
// generations of the client: 1.0 (@ag-ui/client, which sends
// protocolVersion) and 0.0.59 (ag-ui-client-0 / ag-ui-core-0, aliases of
// the versions CopilotKit pins, whose schema is strict about RUN_FINISHED's
// outcome). tests/api/ag_ui.rs starts the servers and runs this script:
//
//   AGUI_URL        an open server: agents `assistant` (default: ask_user,
//                   human_review) and `careful` (human_review needs approval)
//   AGUI_KEYED_URL  a server with two tenants' keys, ACME_KEY and GLOBEX_KEY
//
// For the question answered through gRPC it prints `waiting run: ID` and
// waits for a line `answered` on stdin.

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createInterface } from "node:readline";

import { HttpAgent as HttpAgentV1 } from "@ag-ui/client";
import { AgentCapabilitiesSchema as CapabilitiesV1, EventSchema as EventV1 } from "@ag-ui/core/schemas";
import { HttpAgent as HttpAgentLegacy } from "ag-ui-client-0";
import { AgentCapabilitiesSchema as CapabilitiesLegacy, EventSchemas as EventLegacy } from "ag-ui-core-0";
import AjvModule from "ajv";

// The two generations of the client.
const generations = [
  { name: "1.0", v1: true, HttpAgent: HttpAgentV1, EventSchema: EventV1, AgentCapabilitiesSchema: CapabilitiesV1 },
  {
    name: "0.0.59",
    v1: false,
    HttpAgent: HttpAgentLegacy,
    EventSchema: EventLegacy,
    AgentCapabilitiesSchema: CapabilitiesLegacy,
  },
];

const Ajv = AjvModule.default ?? AjvModule;
const ajv = new Ajv({ allErrors: true });

const open = process.env.AGUI_URL;
const keyed = process.env.AGUI_KEYED_URL;
assert.ok(open && keyed, "AGUI_URL and AGUI_KEYED_URL name the servers");

const stdin = createInterface({ input: process.stdin });
const lines = stdin[Symbol.asyncIterator]();

// The scenarios, run with the client of `generation`.
function scenariosOf({ v1, HttpAgent, EventSchema, AgentCapabilitiesSchema }) {
  // An HttpAgent that asks for the protobuf encoding of the events.
  class ProtoAgent extends HttpAgent {
    requestInit(input) {
      const init = super.requestInit(input);
      return { ...init, headers: { ...init.headers, Accept: "application/vnd.ag-ui.event+proto" } };
    }
  }

  function agent(path = "/ag-ui", { base = open, key, proto = false } = {}) {
    const headers = key ? { Authorization: `Bearer ${key}` } : {};
    const Agent = proto ? ProtoAgent : HttpAgent;
    return new Agent({ url: `${base}${path}`, headers, threadId: randomUUID() });
  }

  // One run of `agent`: every event (each valid by @ag-ui/core's schema), and
  // how the run finished.
  async function run(agent, parameters = {}) {
    const events = [];
    let finished;
    await agent.runAgent(parameters, {
      onEvent({ event }) {
        EventSchema.parse(event);
        events.push(event);
      },
      onRunFinishedEvent({ event, outcome, interrupts, pendingToolCallIds, result }) {
        finished = { event, outcome, interrupts, pendingToolCallIds, result };
      },
    });
    const started = events.find((event) => event.type === "RUN_STARTED");
    const runId = started?.runId;
    return { events, finished, runId };
  }

  async function say(agent, text, parameters) {
    agent.addMessage({ id: randomUUID(), role: "user", content: text });
    return run(agent, parameters);
  }

  // A request the server refuses: the HTTP status and its error object.
  async function refused(promise) {
    const error = await promise.then(
      () => assert.fail("the request was not refused"),
      (error) => error,
    );
    assert.ok(error.status, `an HTTP refusal, not ${error}`);
    return { status: error.status, error: error.payload?.error };
  }

  function types(events) {
    return events.map((event) => event.type);
  }

  function resolved(interruptId, payload) {
    return { interruptId, status: "resolved", payload };
  }

  // Starts a run that asks `prompt`; its one interrupt, checked.
  async function asked(agent, prompt, reason) {
    const { finished, runId } = await say(agent, prompt);
    assert.equal(finished.outcome, "interrupt");
    assert.equal(finished.interrupts.length, 1);
    const interrupt = finished.interrupts[0];
    assert.equal(interrupt.reason, reason);
    assert.equal(interrupt.id, interrupt.toolCallId);
    assert.ok(Date.parse(interrupt.expiresAt) > Date.now(), "expiresAt is an ISO 8601 time to come");
    assert.deepEqual(agent.pendingInterrupts.map((i) => i.id), [interrupt.id]);
    return { interrupt, runId };
  }

  // The interrupt's responseSchema accepts `right` and refuses `wrong`.
  function schemaFits(interrupt, right, wrong) {
    const validate = ajv.compile(interrupt.responseSchema);
    for (const answer of right) {
      assert.ok(validate(answer), `${JSON.stringify(answer)} fits: ${ajv.errorsText(validate.errors)}`);
    }
    for (const answer of wrong) {
      assert.ok(!validate(answer), `${JSON.stringify(answer)} does not fit ${JSON.stringify(interrupt.responseSchema)}`);
    }
  }

  // Answers the interrupt; the same run goes on and completes.
  async function answer(agent, interrupt, runId, payload) {
    const resumed = await run(agent, { resume: [resolved(interrupt.id, payload)] });
    assert.equal(resumed.runId, runId, "the resume continues the same run");
    assert.equal(resumed.finished.outcome, "success");
    return resumed;
  }

  const scenarios = {
    async "capabilities"() {
      const response = await fetch(`${open}/ag-ui/careful/capabilities`);
      assert.equal(response.status, 200);
      const capabilities = AgentCapabilitiesSchema.parse(await response.json());
      assert.equal(capabilities.humanInTheLoop.interrupts, true);
      assert.equal(capabilities.humanInTheLoop.approveWithEdits, true);
      assert.equal(capabilities.transport.streaming, true);
      assert.deepEqual(capabilities.tools.items.map((tool) => tool.name), ["ask_user", "human_review"]);
      assert.equal((await fetch(`${open}/ag-ui/nobody/capabilities`)).status, 404);
    },

    async "text streams as a text message"() {
      const chat = agent();
      const { events, finished, runId } = await say(chat, "plain hello");
      const kinds = types(events);
      assert.equal(kinds[0], "RUN_STARTED");
      assert.equal(kinds.at(-1), "RUN_FINISHED");
      assert.ok(kinds.filter((kind) => kind === "TEXT_MESSAGE_CONTENT").length > 1, "text streams in deltas");
      assert.ok(kinds.includes("STEP_STARTED") && kinds.includes("STEP_FINISHED"));
      assert.equal(events.find((e) => e.type === "STEP_STARTED").stepName, "step 1");
      assert.equal(finished.outcome, "success");
      assert.match(finished.result, /You said: plain hello/);
      assert.equal(events.at(-1).runId, runId);
      const reply = chat.messages.at(-1);
      assert.equal(reply.role, "assistant");
      assert.equal(reply.content, finished.result);

      // The next turn sends the whole history again; only the new message
      // is new input (the thread holds the rest).
      const next = await say(chat, "recap");
      assert.notEqual(next.runId, runId, "a new run on the thread");
      assert.match(next.finished.result, /Recap: 3 messages, the first from the user/);
    },

    async "a tool call and its result"() {
      const { events, finished } = await say(agent(), "invalid");
      const kinds = types(events);
      for (const kind of ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]) {
        assert.ok(kinds.includes(kind), `${kind} in ${kinds}`);
      }
      const start = events.find((e) => e.type === "TOOL_CALL_START");
      assert.equal(start.toolCallName, "ask_user");
      const result = events.find((e) => e.type === "TOOL_CALL_RESULT");
      assert.equal(result.toolCallId, start.toolCallId);
      assert.match(result.content, /Failed to ask user/);
      assert.equal(finished.outcome, "success");
    },

    async "free text: its schema, and a resume that continues the run"() {
      const chat = agent();
      const { interrupt, runId } = await asked(chat, "free", "ask_user");
      assert.equal(interrupt.message, "What should I call you?");
      assert.equal(interrupt.metadata.askUser.selectionMode, "free_text");
      schemaFits(interrupt, ["Ada"], ["", 3, ["Ada"]]);
      const resumed = await answer(chat, interrupt, runId, "Ada");
      const result = resumed.events.find((e) => e.type === "TOOL_CALL_RESULT");
      assert.equal(result.content, "User answered: Ada");
      assert.match(resumed.finished.result, /You answered: Ada/);
      assert.deepEqual(chat.pendingInterrupts, []);
    },

    async "single-select: its schema, and a bad payload that changes nothing"() {
      const chat = agent();
      const { interrupt, runId } = await asked(chat, "help me pick a plan", "ask_user");
      assert.deepEqual(
        interrupt.metadata.askUser.options.map((option) => option.label),
        ["Basic", "Pro", "Enterprise"],
      );
      assert.equal(interrupt.metadata.askUser.selectionMode, "single_select");
      schemaFits(interrupt, ["Basic", "Enterprise"], ["Gold", "", ["Pro"]]);
      const bad = await refused(run(chat, { resume: [resolved(interrupt.id, "Gold")] }));
      assert.equal(bad.status, 400);
      assert.equal(bad.error.code, "invalid_answer");
      assert.equal(bad.error.interruptId, interrupt.id);
      assert.equal(bad.error.field, "resume[0].payload");
      assert.match(bad.error.message, /Basic, Pro, Enterprise/);
      const wrongShape = await refused(run(chat, { resume: [resolved(interrupt.id, ["Pro"])] }));
      assert.equal(wrongShape.status, 400);
      assert.equal(wrongShape.error.field, "resume[0].payload");
      // The run still waits on the same interrupt.
      const resumed = await answer(chat, interrupt, runId, "Enterprise");
      assert.match(resumed.finished.result, /You answered: Enterprise/);
    },

    async "multi-select: its schema"() {
      const chat = agent();
      const { interrupt, runId } = await asked(chat, "multi", "ask_user");
      assert.equal(interrupt.metadata.askUser.selectionMode, "multi_select");
      schemaFits(interrupt, [["Olives"], ["Mushrooms", "Basil"]], [[], ["Olives", "Olives"], ["Ham"], "Olives"]);
      const resumed = await answer(chat, interrupt, runId, ["Olives", "Basil"]);
      assert.match(resumed.finished.result, /Olives, Basil/);
    },

    async "an approval: its schema, approved with edited arguments"() {
      const chat = agent("/ag-ui/careful");
      const { interrupt, runId } = await asked(chat, 'call human_review {"draft": "Dear customer"}', "tool_approval");
      assert.equal(interrupt.metadata.approval.toolName, "human_review");
      assert.deepEqual(interrupt.metadata.approval.args, { draft: "Dear customer" });
      schemaFits(
        interrupt,
        [{ approved: true }, { approved: false, reason: "no" }, { approved: true, editedArgs: { draft: "Hello" } }],
        [{}, { approved: "yes" }, { approved: true, editedArgs: { draft: "" } }, { approved: true, extra: 1 }],
      );
      // Approved, the call runs: human_review asks for its review next.
      const resumed = await run(chat, {
        resume: [resolved(interrupt.id, { approved: true, editedArgs: { draft: "Hello" } })],
      });
      assert.equal(resumed.runId, runId);
      assert.equal(resumed.finished.outcome, "interrupt");
      const review = resumed.finished.interrupts[0];
      assert.equal(review.reason, "custom");
      assert.equal(review.metadata.custom.payload.draft, "Hello");
    },

    async "an approval remembered in the conversation: the thread's next call is not asked about"() {
      const chat = agent("/ag-ui/careful");
      const { interrupt, runId } = await asked(chat, 'call human_review {"draft": "Dear customer"}', "tool_approval");
      schemaFits(
        interrupt,
        [{ approved: true, remember: "thread" }, { approved: true, remember: "run", rememberFor: "8h" }],
        [{ approved: true, remember: "always" }, { approved: true, rememberFor: 3600 }],
      );
      // A duration that is none: refused, the interrupt still open.
      const bad = await refused(
        run(chat, { resume: [resolved(interrupt.id, { approved: true, remember: "thread", rememberFor: "soon" })] }),
      );
      assert.equal(bad.status, 400);
      assert.equal(bad.error.field, "resume[0].payload.rememberFor");
      // Approved and remembered: human_review runs and asks for its review.
      const resumed = await run(chat, { resume: [resolved(interrupt.id, { approved: true, remember: "thread" })] });
      assert.equal(resumed.runId, runId);
      assert.equal(resumed.finished.outcome, "interrupt");
      const review = resumed.finished.interrupts[0];
      assert.equal(review.reason, "custom");
      await answer(chat, review, runId, { decision: "approve" });
      // The thread's next call of human_review asks for its review at once.
      const next = await asked(chat, 'call human_review {"draft": "A second letter"}', "custom");
      assert.notEqual(next.runId, runId);
      await answer(chat, next.interrupt, next.runId, { decision: "approve" });
    },

    async "a custom tool: its resume schema"() {
      const chat = agent();
      const { interrupt, runId } = await asked(chat, 'call human_review {"draft": "Dear customer"}', "custom");
      assert.equal(interrupt.metadata.custom.toolName, "human_review");
      schemaFits(
        interrupt,
        [{ decision: "approve" }, { decision: "edit", revised_text: "Hi" }],
        [{}, { decision: "maybe" }, { decision: "edit" }, "approve"],
      );
      const bad = await refused(run(chat, { resume: [resolved(interrupt.id, { decision: "edit" })] }));
      assert.equal(bad.status, 400);
      assert.equal(bad.error.interruptId, interrupt.id);
      assert.match(bad.error.field, /^resume\[0\]\.payload/);
      const resumed = await answer(chat, interrupt, runId, { decision: "approve" });
      assert.match(resumed.finished.result, /human_review tool returned/);
    },

    async "cancelled declines an approval"() {
      const chat = agent("/ag-ui/careful");
      const { interrupt, runId } = await asked(chat, 'call human_review {"draft": "Dear customer"}', "tool_approval");
      const resumed = await run(chat, { resume: [{ interruptId: interrupt.id, status: "cancelled" }] });
      assert.equal(resumed.runId, runId);
      assert.equal(resumed.finished.outcome, "success");
      assert.match(resumed.finished.result, /declined/);
    },

    async "cancelled cancels the run on a question"() {
      const chat = agent();
      const { interrupt, runId } = await asked(chat, "free", "ask_user");
      const resumed = await run(chat, { resume: [{ interruptId: interrupt.id, status: "cancelled" }] });
      assert.equal(resumed.runId, runId);
      if (v1) {
        assert.equal(resumed.finished.outcome, "cancelled");
      } else {
        // 0.0.59 has no cancelled outcome: success, and agentd says so.
        assert.deepEqual(resumed.finished.event.outcome, { type: "success" });
        assert.equal(resumed.finished.event.metadata.agentd.outcome, "cancelled");
      }
      assert.deepEqual(chat.pendingInterrupts, [], "the client holds no open interrupt");
      const again = await refused(run(chat, { resume: [resolved(interrupt.id, "Ada")] }));
      assert.equal(again.status, 409);
      assert.match(again.error.message, /cancelled/);
      // The thread takes its next run.
      const next = await say(chat, "plain again");
      assert.equal(next.finished.outcome, "success");
    },

    async "two interrupts answered in one resume"() {
      const chat = agent();
      const { finished, runId } = await say(chat, "two questions");
      assert.equal(finished.outcome, "interrupt");
      const [name, plan] = finished.interrupts;
      assert.equal(finished.interrupts.length, 2);
      assert.equal(name.message, "What should I call you?");
      assert.equal(plan.message, "Which plan should I set up for you?");
      // Both or nothing: one bad answer refuses the whole resume.
      const bad = await refused(run(chat, { resume: [resolved(name.id, "Ada"), resolved(plan.id, "Gold")] }));
      assert.equal(bad.status, 400);
      assert.equal(bad.error.interruptId, plan.id);
      assert.equal(bad.error.field, "resume[1].payload");
      // A resume that leaves one open is refused by the server too.
      const partial = await fetch(chat.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          threadId: chat.threadId,
          runId: randomUUID(),
          messages: [],
          resume: [resolved(name.id, "Ada")],
        }),
      });
      assert.equal(partial.status, 400);
      assert.equal(partial.headers.get("content-type"), "application/json");
      const body = await partial.json();
      assert.equal(body.error.field, "resume");
      assert.equal(body.error.interruptId, plan.id);
      const resumed = await run(chat, { resume: [resolved(name.id, "Ada"), resolved(plan.id, "Pro")] });
      assert.equal(resumed.runId, runId);
      assert.equal(resumed.finished.outcome, "success");
      assert.match(resumed.finished.result, /You answered: Ada; Pro/);
    },

    async "a frontend tool round trip"() {
      const chat = agent();
      const tools = [
        {
          name: "get_weather",
          description: "The weather in a city, as the browser knows it.",
          parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
        },
      ];
      const { events, finished, runId } = await say(chat, 'call get_weather {"city": "Paris"}', { tools });
      assert.equal(finished.outcome, "success");
      const start = events.find((e) => e.type === "TOOL_CALL_START");
      assert.equal(start.toolCallName, "get_weather");
      if (v1) {
        assert.deepEqual(finished.pendingToolCallIds, [start.toolCallId]);
      } else {
        // 0.0.59's schema allows nothing else in a success outcome: the
        // client derives the pending call from the stream; agentd names it
        // in the event's metadata.
        assert.deepEqual(finished.event.outcome, { type: "success" });
        assert.deepEqual(finished.event.metadata.agentd.pendingToolCallIds, [start.toolCallId]);
      }
      const message = chat.messages.find((m) => m.role === "assistant" && m.toolCalls?.length);
      assert.equal(message.id, start.parentMessageId, "the call is in its step's assistant message");
      const args = events.filter((e) => e.type === "TOOL_CALL_ARGS").map((e) => e.delta).join("");
      assert.deepEqual(JSON.parse(args), { city: "Paris" });
      chat.addMessage({ id: randomUUID(), role: "tool", toolCallId: start.toolCallId, content: "Sunny, 21 degrees" });
      const resumed = await run(chat, { tools });
      assert.equal(resumed.runId, runId, "the tool's result continues the same run");
      assert.equal(resumed.finished.outcome, "success");
      assert.match(resumed.finished.result, /get_weather tool returned: Sunny, 21 degrees/);
    },

    async "a new message while questions wait is refused with them"() {
      const chat = agent();
      const { finished, runId } = await say(chat, "two questions");
      // Another page on the same thread, which knows of no interrupt.
      const other = agent();
      other.threadId = chat.threadId;
      const busy = await refused(say(other, "plain hello"));
      assert.equal(busy.status, 409);
      assert.equal(busy.error.code, "thread_busy");
      assert.equal(busy.error.runId, runId);
      assert.deepEqual(busy.error.interrupts, finished.interrupts);
      assert.doesNotMatch(busy.error.message, /Resume|gRPC/);
      assert.match(busy.error.message, /resume/);
      for (const interrupt of busy.error.interrupts) {
        assert.ok(interrupt.responseSchema, "each with its schema");
      }
    },

    async "a reloaded page comes back to its open questions"() {
      const chat = agent();
      const { finished, runId } = await say(chat, "two questions");
      // The page reloads: a new client on the thread, with no messages.
      const reloaded = agent();
      reloaded.threadId = chat.threadId;
      const back = await run(reloaded);
      assert.deepEqual(types(back.events), ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]);
      assert.equal(back.runId, runId);
      assert.equal(back.finished.outcome, "interrupt");
      assert.deepEqual(back.finished.interrupts, finished.interrupts);
      assert.deepEqual(reloaded.pendingInterrupts.map((i) => i.id), finished.interrupts.map((i) => i.id));
      assert.deepEqual(reloaded.messages.map((m) => m.role), ["user", "assistant"]);
      assert.equal(reloaded.messages[0].content, "two questions");
      assert.deepEqual(
        reloaded.messages[1].toolCalls.map((call) => call.id),
        finished.interrupts.map((i) => i.toolCallId),
      );
      // A second replay says the same, and nothing changed.
      const again = agent();
      again.threadId = chat.threadId;
      const twice = await run(again);
      assert.deepEqual(again.messages, reloaded.messages);
      assert.deepEqual(twice.finished.interrupts, finished.interrupts);
      // The reloaded page answers them.
      const [name, plan] = back.finished.interrupts;
      const resumed = await run(reloaded, { resume: [resolved(name.id, "Ada"), resolved(plan.id, "Pro")] });
      assert.equal(resumed.runId, runId);
      assert.equal(resumed.finished.result, "Thanks! You answered: Ada; Pro.");
      // Reloaded once more, it shows the finished conversation.
      const later = agent();
      later.threadId = chat.threadId;
      const done = await run(later);
      assert.equal(done.finished.outcome, "success");
      assert.equal(done.finished.result, resumed.finished.result);
      assert.deepEqual(later.messages.map((m) => m.role), ["user", "assistant", "tool", "tool", "assistant"]);
      assert.deepEqual(later.pendingInterrupts, []);
      // And takes the next message.
      const next = await say(later, "plain again");
      assert.equal(next.finished.outcome, "success");
    },

    async "a resumed stream: its results inside the step it continues, its own usage"() {
      const chat = agent();
      const asked = await say(chat, "help me pick a plan");
      const interrupt = asked.finished.interrupts[0];
      const resumed = await run(chat, { resume: [resolved(interrupt.id, "Pro")] });
      const kinds = types(resumed.events);
      assert.deepEqual(kinds.slice(0, 4), ["RUN_STARTED", "STEP_STARTED", "TOOL_CALL_RESULT", "STEP_FINISHED"]);
      assert.equal(resumed.events[1].stepName, "step 1");
      assert.equal(resumed.events[4].stepName, "step 2");
      // Its usage is its own step's (tests/api/ag_ui.rs adds the streams
      // up against GetRun's).
      assert.ok(resumed.events.at(-1).usage[0].inputTokens > 0);
    },

    async "the protobuf encoding says what the event stream says"() {
      const response = await fetch(`${open}/ag-ui`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/vnd.ag-ui.event+proto" },
        body: JSON.stringify({ threadId: randomUUID(), runId: "r", messages: [{ id: "m", role: "user", content: "plain" }] }),
      });
      assert.equal(response.headers.get("content-type"), "application/vnd.ag-ui.event+proto");
      await response.arrayBuffer();

      const json = await say(agent(), "two questions");
      const chat = agent("/ag-ui", { proto: true });
      const proto = await say(chat, "two questions");
      assert.deepEqual(types(proto.events), types(json.events));
      assert.equal(proto.finished.outcome, "interrupt");
      const strip = ({ expiresAt, ...interrupt }) => interrupt;
      assert.deepEqual(proto.finished.interrupts.map(strip), json.finished.interrupts.map(strip));
      // A replay in protobuf says what it says in the event stream.
      const reloadedJson = agent();
      reloadedJson.threadId = chat.threadId;
      const replayedJson = await run(reloadedJson);
      const reloaded = agent("/ag-ui", { proto: true });
      reloaded.threadId = chat.threadId;
      const replayed = await run(reloaded);
      assert.deepEqual(types(replayed.events), ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]);
      assert.deepEqual(reloaded.messages, reloadedJson.messages);
      assert.deepEqual(replayed.finished.interrupts, replayedJson.finished.interrupts);
      const [name, plan] = proto.finished.interrupts;
      const resumed = await run(chat, { resume: [resolved(name.id, "Ada"), resolved(plan.id, "Pro")] });
      assert.equal(resumed.runId, proto.runId);
      assert.equal(resumed.finished.result, "Thanks! You answered: Ada; Pro.");
      assert.equal(chat.messages.at(-1).content, resumed.finished.result);
    },

    async "a question answered through gRPC first"() {
      const chat = agent();
      const { interrupt, runId } = await asked(chat, "help me pick a plan", "ask_user");
      console.log(`waiting run: ${runId}`);
      const { value } = await lines.next();
      assert.equal(value, "answered");
      const late = await refused(run(chat, { resume: [resolved(interrupt.id, "Basic")] }));
      assert.equal(late.status, 409);
      assert.equal(late.error.code, "interrupt_not_open");
      assert.equal(late.error.interruptId, interrupt.id);
      assert.match(late.error.message, /completed/);
    },

    async "keys and tenants"() {
      const nobody = await refused(say(agent("/ag-ui", { base: keyed }), "plain hello"));
      assert.equal(nobody.status, 401);
      assert.equal(nobody.error.code, "unauthenticated");
      const acme = agent("/ag-ui", { base: keyed, key: process.env.ACME_KEY });
      const { interrupt, runId } = await asked(acme, "help me pick a plan", "ask_user");
      // Globex on the same thread id has a thread of its own: nothing waits
      // there, and its runs do not see Acme's.
      const globex = agent("/ag-ui", { base: keyed, key: process.env.GLOBEX_KEY });
      globex.threadId = acme.threadId;
      const foreign = await refused(run(globex, { resume: [resolved(interrupt.id, "Pro")] }));
      assert.equal(foreign.status, 404);
      assert.equal(foreign.error.interruptId, interrupt.id);
      const own = await say(globex, "recap");
      assert.match(own.finished.result, /Recap: 1 messages?/);
      // Acme's question still waits, and Acme answers it.
      const resumed = await answer(acme, interrupt, runId, "Pro");
      assert.match(resumed.finished.result, /You answered: Pro/);
    },
  };
  // 0.0.59's protobuf encoding has no TOOL_CALL_RESULT (nor does its
  // HttpAgent ask for protobuf): that generation is tested on event streams.
  if (!v1) delete scenarios["the protobuf encoding says what the event stream says"];
  return scenarios;
}

let failed = 0;
for (const generation of generations) {
  for (const [name, scenario] of Object.entries(scenariosOf(generation))) {
    try {
      await scenario();
      console.log(`ok - [${generation.name}] ${name}`);
    } catch (error) {
      failed += 1;
      console.log(`not ok - [${generation.name}] ${name}`);
      console.log(error?.stack ?? error);
    }
  }
}
console.log(failed === 0 ? "all scenarios passed" : `${failed} scenarios failed`);
stdin.close();
process.exit(failed === 0 ? 0 : 1);
