// A page built as a CopilotKit app would be, with nothing agentd-specific
// in CopilotKit itself: CopilotChat on a thread named in the URL, a
// frontend tool, and agentd's questions (AG-UI interrupts) rendered in the
// transcript with useInterrupt.
import React, { useState } from "react";
import { createRoot } from "react-dom/client";
import { CopilotChat, CopilotKitProvider, useFrontendTool, useInterrupt } from "@copilotkit/react-core/v2";
import "@copilotkit/react-core/v2/styles.css";
import { z } from "zod";

const threadId = new URLSearchParams(location.search).get("thread");

// One open question: its options as buttons, or a text box; Cancel.
function Question({ interrupt, resolve, cancel }) {
  const [text, setText] = useState("");
  const [answered, setAnswered] = useState(null);
  const ask = interrupt.metadata?.askUser;
  const answer = (payload) => {
    setAnswered(payload);
    resolve(payload, interrupt.id);
  };
  return (
    <section aria-label={interrupt.message} data-interrupt={interrupt.id}>
      <p>{interrupt.message}</p>
      {answered !== null ? (
        <p>Answered: {String(answered)}</p>
      ) : ask?.options?.length ? (
        ask.options.map((option) => (
          <button key={option.label} title={option.description} onClick={() => answer(option.label)}>
            {option.label}
          </button>
        ))
      ) : (
        <form
          onSubmit={(event) => {
            event.preventDefault();
            answer(text);
          }}
        >
          <input aria-label="Your answer" value={text} onChange={(event) => setText(event.target.value)} />
          <button type="submit">Send answer</button>
        </form>
      )}
      {answered === null && <button onClick={() => cancel(interrupt.id)}>Cancel question</button>}
    </section>
  );
}

function Agentd() {
  useFrontendTool({
    name: "get_weather",
    description: "The weather in a city, as the browser knows it.",
    parameters: z.object({ city: z.string() }),
    handler: async ({ city }) => {
      window.weatherAsked = city;
      return "Sunny, 21 degrees";
    },
  });
  useInterrupt({
    render: ({ interrupts, resolve, cancel }) => (
      <div data-testid="questions">
        {interrupts.map((interrupt) => (
          <Question key={interrupt.id} interrupt={interrupt} resolve={resolve} cancel={cancel} />
        ))}
      </div>
    ),
  });
  return <CopilotChat threadId={threadId} />;
}

createRoot(document.getElementById("root")).render(
  <CopilotKitProvider runtimeUrl="/api/copilotkit">
    <Agentd />
  </CopilotKitProvider>,
);
