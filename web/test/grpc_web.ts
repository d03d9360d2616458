// gRPC-Web from a real client: @connectrpc/connect-web's gRPC-Web
// transport (fetch, HTTP/1.1 under Node) against a running agentd, given
// as the first argument (http://127.0.0.1:PORT). Unary calls, both server
// streams of an ask_user cycle, and a refusal with its status; it throws
// on the first thing that is not as the contract says.
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { plain } from "../src/api";
import {
  AgentService,
  FinishReason,
  RunStatus,
  SelectionMode,
  type AgentChunk,
} from "../src/gen/agentd/v1/agentd_pb";

function check(condition: unknown, what: string): asserts condition {
  if (!condition) throw new Error(`gRPC-Web: ${what}`);
}

async function collect(stream: AsyncIterable<AgentChunk>): Promise<AgentChunk[]> {
  const chunks: AgentChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

export async function main([baseUrl]: string[]) {
  check(baseUrl, "usage: grpc_web.ts http://HOST:PORT");
  const transport = createGrpcWebTransport({ baseUrl, useBinaryFormat: true });
  const client = createClient(AgentService, transport);

  // Unary.
  const agents = await client.listAgents({});
  check(
    agents.agents.some((agent) => agent.agentId === "assistant" && agent.isDefault),
    `ListAgents lists the default agent: ${JSON.stringify(agents.agents.map((a) => a.agentId))}`,
  );

  // A server stream: the run suspends on the plan question.
  const started = await collect(client.streamAgent({ prompt: "Help me pick a plan" }));
  const kinds = started.map((chunk) => chunk.chunk.case);
  check(kinds[0] === "start", `the stream opens with start: ${kinds}`);
  const suspended = started.find((chunk) => chunk.chunk.case === "toolCallSuspended");
  check(suspended?.chunk.case === "toolCallSuspended", `a suspension: ${kinds}`);
  const payload = suspended.chunk.value.suspendPayload?.kind;
  check(payload?.case === "askUser", "an ask_user payload");
  check(payload.value.question === "Which plan should I set up for you?", payload.value.question);
  check(payload.value.selectionMode === SelectionMode.SINGLE_SELECT, "single-select");
  const last = started[started.length - 1];
  check(
    last.chunk.case === "finish" && last.chunk.value.reason === FinishReason.SUSPENDED,
    "the stream ends with finish{SUSPENDED}",
  );
  started.forEach((chunk, index) => check(chunk.seq === BigInt(index + 1), `seq ${index + 1}`));
  const runId = started[0].runId;

  // A refused answer: the status, its message, and the run unchanged.
  try {
    await collect(client.resume({ runId, answer: { case: "text", value: "Gold" } }));
    throw new Error("gRPC-Web: an answer that is no option was accepted");
  } catch (error) {
    const refused = ConnectError.from(error);
    check(refused.code === Code.InvalidArgument, `INVALID_ARGUMENT, not ${Code[refused.code]}`);
    check(refused.rawMessage.includes("Basic, Pro, Enterprise"), `the labels: ${refused.rawMessage}`);
    // The details reach a page over gRPC-Web: the inbox says it in words.
    const words = plain(error);
    check(words === '"Gold" is not one of the options. Choose one of: Basic, Pro, Enterprise.', `in words: ${words}`);
  }
  const waiting = await client.getRun({ runId });
  check(waiting.status === RunStatus.SUSPENDED, "still suspended after the refusal");
  check(waiting.pending.length === 1, "one call pending");

  // The continuation, streamed.
  const resumed = await collect(client.resume({ runId, answer: { case: "text", value: "Pro" } }));
  const first = resumed[0];
  check(first.chunk.case === "start" && first.chunk.value.resumed, "the continuation opens with start{resumed}");
  check(
    resumed.some(
      (chunk) => chunk.chunk.case === "toolResult" && chunk.chunk.value.content === "User answered: Pro",
    ),
    "the model sees the answer",
  );
  const end = resumed[resumed.length - 1];
  check(
    end.chunk.case === "finish" &&
      end.chunk.value.reason === FinishReason.STOP &&
      end.chunk.value.text === "Thanks! You answered: Pro.",
    "finish{STOP} with the final text",
  );
  const done = await client.getRun({ runId });
  check(done.status === RunStatus.COMPLETED, "the run is completed");

  // SubscribeRun from 0 replays the whole life of the run.
  const history = await collect(client.subscribeRun({ runId, afterSeq: 0n }));
  check(history.length === started.length + resumed.length, `the whole history: ${history.length} chunks`);

  // A run that does not exist: NOT_FOUND, from the status in the headers.
  try {
    await client.getRun({ runId: "01890a5d-ac96-774b-bcce-b302099a8057" });
    throw new Error("gRPC-Web: an unknown run was found");
  } catch (error) {
    check(ConnectError.from(error).code === Code.NotFound, "NOT_FOUND for an unknown run");
  }
  console.log(`gRPC-Web: unary calls, StreamAgent, Resume and SubscribeRun streams OK (run ${runId})`);
}
