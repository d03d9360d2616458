#!/usr/bin/env node
// The ask_user cycle against an agentd server, from Node.js, with the
// @agentd/client package (clients/typescript: generated from the proto)
// over gRPC with Connect for Node.js (@connectrpc/connect-node). Its types
// are checked with `npm run typecheck` (tsc, from the package's
// declaration files).
//
// With the server's scripted model it:
// 1. starts a run that asks a single-select question, prints the streamed
//    chunks, the question and its options;
// 2. answers with a label that is not an option: the server refuses with
//    INVALID_ARGUMENT, and the google.rpc.BadRequest / ErrorInfo details
//    name the field and the valid labels; the run stays suspended;
// 3. answers with a valid label and prints the final text;
// 4. does the same for a multi-select question, answering with
//    `selections`, and for a free-text question.
//
// Usage: node ask_user_cycle.js [HOST:PORT]  (or AGENTD_TARGET; default
// 127.0.0.1:50051). AGENTD_API_KEY, if set, is sent as
// `authorization: Bearer <key>`. Exits non-zero if the server does not
// behave as the contract says.

import { BinaryReader } from '@bufbuild/protobuf/wire';
import { Code, ConnectError } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import {
  createAgentClient,
  FinishReason,
  RunStatus,
  SelectionMode,
} from '@agentd/client';

/** @typedef {import('@agentd/client').AgentChunk} AgentChunk */
/** @typedef {import('@agentd/client').AskUserPayload} AskUserPayload */
/** @typedef {import('@agentd/client').RunFinished} RunFinished */
/** @typedef {import('@agentd/client').ToolCallSuspended} ToolCallSuspended */
/** @typedef {ReturnType<typeof createAgentClient>} AgentClient */
/**
 * @typedef {object} Turn
 * @property {string} runId
 * @property {ToolCallSuspended[]} suspensions
 * @property {RunFinished} finish
 * @property {string} text
 */

/**
 * @param {boolean} condition
 * @param {string} message
 * @returns {asserts condition}
 */
function check(condition, message) {
  if (!condition) {
    throw new Error(`unexpected: ${message}`);
  }
}

/**
 * Prints a stream's chunks; resolves with what it ended with.
 * @param {AsyncIterable<AgentChunk>} stream
 * @returns {Promise<Turn>}
 */
async function follow(stream) {
  let runId = '';
  let text = '';
  /** @type {ToolCallSuspended[]} */
  const suspensions = [];
  /** @type {RunFinished | undefined} */
  let finish;
  let inText = false;
  for await (const chunk of stream) {
    runId = runId || chunk.runId;
    const kind = chunk.chunk;
    if (inText && kind.case !== 'textDelta') {
      process.stdout.write('\n');
      inText = false;
    }
    switch (kind.case) {
      case 'textDelta':
        text += kind.value.text;
        process.stdout.write(kind.value.text);
        inText = true;
        break;
      case 'toolCallSuspended':
        suspensions.push(kind.value);
        break;
      case 'finish':
        finish = kind.value;
        break;
      default:
        console.log(`[${chunk.seq}] ${kind.case}`);
    }
  }
  if (inText) {
    process.stdout.write('\n');
  }
  check(finish !== undefined, 'the stream ends with a finish chunk');
  console.log(`[finish] ${FinishReason[finish.reason]}`);
  return { runId, suspensions, finish, text };
}

/**
 * @param {ToolCallSuspended} suspended
 * @returns {AskUserPayload}
 */
function showQuestion(suspended) {
  const kind = suspended.suspendPayload?.kind;
  check(kind?.case === 'askUser', 'an ask_user question');
  const ask = kind.value;
  console.log(`? ${ask.question}  (${SelectionMode[ask.selectionMode]})`);
  for (const option of ask.options) {
    console.log(`  - ${option.label}: ${option.description}`);
  }
  return ask;
}

/**
 * The string fields of a protobuf message, by field number (repeated ones
 * in order), and the entries of its map<string, string> fields: enough of
 * google.rpc.BadRequest and ErrorInfo to print them.
 * @param {Uint8Array} bytes
 * @returns {{ strings: Map<number, string[]>, messages: Map<number, Uint8Array[]> }}
 */
function readFields(bytes) {
  const reader = new BinaryReader(bytes);
  /** @type {Map<number, string[]>} */
  const strings = new Map();
  /** @type {Map<number, Uint8Array[]>} */
  const messages = new Map();
  while (reader.pos < reader.len) {
    const [number, wireType] = reader.tag();
    if (wireType !== 2) {
      reader.skip(wireType);
      continue;
    }
    const value = reader.bytes();
    messages.set(number, [...(messages.get(number) ?? []), value]);
    strings.set(number, [...(strings.get(number) ?? []), new TextDecoder().decode(value)]);
  }
  return { strings, messages };
}

/**
 * Prints a refused call with its rich error details; returns the valid
 * labels.
 * @param {ConnectError} error
 * @returns {string[]}
 */
function showRejection(error) {
  console.log(`rejected: ${Code[error.code]}: ${error.rawMessage}`);
  check(error.details.length > 0, 'the rejection carries google.rpc.Status details');
  /** @type {string[]} */
  let validLabels = [];
  for (const detail of error.details) {
    if (!('type' in detail) || !('value' in detail)) {
      continue;
    }
    if (detail.type === 'google.rpc.BadRequest') {
      // repeated FieldViolation field_violations = 1 { field = 1; description = 2; }
      for (const violation of readFields(detail.value).messages.get(1) ?? []) {
        const { strings } = readFields(violation);
        console.log(`  field ${strings.get(1)?.[0]}: ${strings.get(2)?.[0]}`);
      }
    } else if (detail.type === 'google.rpc.ErrorInfo') {
      // reason = 1; domain = 2; map<string, string> metadata = 3;
      const { strings, messages } = readFields(detail.value);
      /** @type {Record<string, string>} */
      const metadata = {};
      for (const entry of messages.get(3) ?? []) {
        const pair = readFields(entry).strings;
        metadata[pair.get(1)?.[0] ?? ''] = pair.get(2)?.[0] ?? '';
      }
      console.log(`  reason ${strings.get(1)?.[0]} (${strings.get(2)?.[0]}) ${JSON.stringify(metadata)}`);
      validLabels = (metadata.valid_labels ?? '').split(', ').filter(Boolean);
    }
  }
  return validLabels;
}

/** @param {AgentClient} client */
async function singleSelect(client) {
  console.log('== single-select, with a rejected answer');
  const started = await follow(client.streamAgent({ prompt: 'Help me pick a plan' }));
  check(started.finish.reason === FinishReason.SUSPENDED, 'the run suspends');
  const [suspended] = started.suspensions;
  const labels = showQuestion(suspended).options.map((option) => option.label);
  const { runId } = started;
  const toolCallId = suspended.toolCallId;
  try {
    await follow(client.resume({ runId, toolCallId, answer: { case: 'text', value: 'Gold' } }));
    check(false, 'an answer that is not an option is refused');
  } catch (error) {
    const refused = ConnectError.from(error);
    check(refused.code === Code.InvalidArgument, `INVALID_ARGUMENT, got ${refused.message}`);
    const valid = showRejection(refused);
    check(JSON.stringify(valid) === JSON.stringify(labels), `the details list ${labels}, got ${valid}`);
  }
  const run = await client.getRun({ runId });
  check(run.status === RunStatus.SUSPENDED, 'the run is still suspended');
  console.log(`> ${labels[1]}`);
  const done = await follow(client.resume({ runId, toolCallId, answer: { case: 'text', value: labels[1] } }));
  check(done.finish.reason === FinishReason.STOP, 'the run completes');
  check(done.text === `Thanks! You answered: ${labels[1]}.`, `final text ${done.text}`);
}

/** @param {AgentClient} client */
async function multiSelect(client) {
  console.log('== multi-select');
  const started = await follow(client.streamAgent({ prompt: 'Order me a pizza, multi toppings' }));
  check(started.finish.reason === FinishReason.SUSPENDED, 'the run suspends');
  const [suspended] = started.suspensions;
  const ask = showQuestion(suspended);
  check(ask.selectionMode === SelectionMode.MULTI_SELECT, 'a multi-select question');
  const chosen = [ask.options[0].label, ask.options[ask.options.length - 1].label];
  console.log(`> ${chosen.join(', ')}`);
  const done = await follow(client.resume({
    runId: started.runId,
    toolCallId: suspended.toolCallId,
    answer: { case: 'selections', value: { labels: chosen } },
  }));
  check(done.finish.reason === FinishReason.STOP, 'the run completes');
  check(done.text === `Thanks! You answered: ${chosen.join(', ')}.`, `final text ${done.text}`);
}

/** @param {AgentClient} client */
async function freeText(client) {
  console.log('== free text');
  const started = await follow(client.streamAgent({ prompt: 'free text please' }));
  const [suspended] = started.suspensions;
  showQuestion(suspended);
  console.log('> Ada');
  const done = await follow(client.resume({
    runId: started.runId,
    toolCallId: suspended.toolCallId,
    answer: { case: 'text', value: 'Ada' },
  }));
  check(done.text === 'Thanks! You answered: Ada.', `final text ${done.text}`);
}

async function main() {
  const target = process.argv[2] || process.env.AGENTD_TARGET || '127.0.0.1:50051';
  const apiKey = process.env.AGENTD_API_KEY;
  const transport = createGrpcTransport({
    baseUrl: `http://${target}`,
    // Adds the API key to every call's metadata.
    interceptors: apiKey
      ? [(next) => (request) => {
          request.header.set('authorization', `Bearer ${apiKey}`);
          return next(request);
        }]
      : [],
  });
  const client = createAgentClient(transport);
  await singleSelect(client);
  await multiSelect(client);
  await freeText(client);
  console.log('node example: OK');
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
