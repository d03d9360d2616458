#!/usr/bin/env node
// The ask_user cycle against an agentd server, from Node.js with
// @grpc/grpc-js and @grpc/proto-loader (the proto is loaded at run time
// from the repository's proto/ folder; nothing is generated).
//
// With the server's scripted model it:
// 1. starts a run that asks a single-select question, prints the streamed
//    chunks, the question and its options;
// 2. answers with a label that is not an option: the server refuses with
//    INVALID_ARGUMENT, and the google.rpc.BadRequest / ErrorInfo details
//    (trailer grpc-status-details-bin) name the field and the valid labels;
//    the run stays suspended;
// 3. answers with a valid label and prints the final text;
// 4. does the same for a multi-select question, answering with
//    `selections`, and for a free-text question.
//
// Usage: node ask_user_cycle.js [HOST:PORT]  (or AGENTD_TARGET; default
// 127.0.0.1:50051). AGENTD_API_KEY, if set, is sent as
// `authorization: Bearer <key>`. Exits non-zero if the server does not
// behave as the contract says.

'use strict';

const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const protobuf = require('protobufjs');

const PROTO_DIR = path.resolve(__dirname, '..', '..', 'proto');

// google.rpc.Status and the details agentd sends; `Detail` has the wire
// shape of google.protobuf.Any.
const RPC_TYPES = protobuf.parse(`
  syntax = "proto3";
  package google.rpc;
  message Detail { string type_url = 1; bytes value = 2; }
  message Status { int32 code = 1; string message = 2; repeated Detail details = 3; }
  message FieldViolation { string field = 1; string description = 2; }
  message BadRequest { repeated FieldViolation field_violations = 1; }
  message ErrorInfo { string reason = 1; string domain = 2; map<string, string> metadata = 3; }
`, { keepCase: true }).root;

function check(condition, message) {
  if (!condition) {
    throw new Error(`unexpected: ${message}`);
  }
}

function loadService() {
  const definition = protoLoader.loadSync('agentd/v1/agentd.proto', {
    includeDirs: [PROTO_DIR],
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  return grpc.loadPackageDefinition(definition).agentd.v1;
}

// Prints a stream's chunks; resolves with what it ended with.
function follow(call) {
  return new Promise((resolve, reject) => {
    const turn = { runId: null, suspensions: [], finish: null, text: '' };
    let failed = false;
    let inText = false;
    call.on('data', (chunk) => {
      turn.runId = turn.runId || chunk.run_id;
      if (inText && chunk.chunk !== 'text_delta') {
        process.stdout.write('\n');
        inText = false;
      }
      switch (chunk.chunk) {
        case 'text_delta':
          turn.text += chunk.text_delta.text;
          process.stdout.write(chunk.text_delta.text);
          inText = true;
          break;
        case 'tool_call_suspended':
          turn.suspensions.push(chunk.tool_call_suspended);
          break;
        case 'finish':
          turn.finish = chunk.finish;
          break;
        default:
          console.log(`[${chunk.seq}] ${chunk.chunk}`);
      }
    });
    call.on('error', (error) => {
      failed = true;
      reject(error);
    });
    call.on('end', () => {
      if (failed) {
        return;
      }
      if (inText) {
        process.stdout.write('\n');
      }
      console.log(`[finish] ${turn.finish && turn.finish.reason}`);
      resolve(turn);
    });
  });
}

function showQuestion(suspended) {
  const ask = suspended.suspend_payload.ask_user;
  console.log(`? ${ask.question}  (${ask.selection_mode})`);
  for (const option of ask.options) {
    console.log(`  - ${option.label}: ${option.description}`);
  }
  return ask;
}

// Prints a refused call with its rich error details; returns the valid labels.
function showRejection(error) {
  console.log(`rejected: ${grpc.status[error.code]}: ${error.details}`);
  const [encoded] = error.metadata.get('grpc-status-details-bin');
  check(encoded, 'the rejection carries google.rpc.Status details');
  const status = RPC_TYPES.lookupType('google.rpc.Status').decode(encoded);
  let validLabels = [];
  for (const detail of status.details) {
    if (detail.type_url.endsWith('/google.rpc.BadRequest')) {
      const badRequest = RPC_TYPES.lookupType('google.rpc.BadRequest').decode(detail.value);
      for (const violation of badRequest.field_violations) {
        console.log(`  field ${violation.field}: ${violation.description}`);
      }
    } else if (detail.type_url.endsWith('/google.rpc.ErrorInfo')) {
      const info = RPC_TYPES.lookupType('google.rpc.ErrorInfo').decode(detail.value);
      console.log(`  reason ${info.reason} (${info.domain}) ${JSON.stringify(info.metadata)}`);
      validLabels = (info.metadata.valid_labels || '').split(', ').filter(Boolean);
    }
  }
  return validLabels;
}

function unary(client, method, request) {
  return new Promise((resolve, reject) => {
    client[method](request, (error, response) => (error ? reject(error) : resolve(response)));
  });
}

async function singleSelect(client) {
  console.log('== single-select, with a rejected answer');
  const started = await follow(client.StreamAgent({ prompt: 'Help me pick a plan' }));
  check(started.finish.reason === 'FINISH_REASON_SUSPENDED', 'the run suspends');
  const [suspended] = started.suspensions;
  const labels = showQuestion(suspended).options.map((option) => option.label);
  const runId = started.runId;
  const toolCallId = suspended.tool_call_id;
  try {
    await follow(client.Resume({ run_id: runId, tool_call_id: toolCallId, text: 'Gold' }));
    check(false, 'an answer that is not an option is refused');
  } catch (error) {
    check(error.code === grpc.status.INVALID_ARGUMENT, `INVALID_ARGUMENT, got ${error.message}`);
    const valid = showRejection(error);
    check(JSON.stringify(valid) === JSON.stringify(labels), `the details list ${labels}, got ${valid}`);
  }
  const run = await unary(client, 'GetRun', { run_id: runId });
  check(run.status === 'RUN_STATUS_SUSPENDED', 'the run is still suspended');
  console.log(`> ${labels[1]}`);
  const done = await follow(client.Resume({ run_id: runId, tool_call_id: toolCallId, text: labels[1] }));
  check(done.finish.reason === 'FINISH_REASON_STOP', 'the run completes');
  check(done.text === `Thanks! You answered: ${labels[1]}.`, `final text ${done.text}`);
}

async function multiSelect(client) {
  console.log('== multi-select');
  const started = await follow(client.StreamAgent({ prompt: 'Order me a pizza, multi toppings' }));
  check(started.finish.reason === 'FINISH_REASON_SUSPENDED', 'the run suspends');
  const [suspended] = started.suspensions;
  const ask = showQuestion(suspended);
  check(ask.selection_mode === 'SELECTION_MODE_MULTI_SELECT', 'a multi-select question');
  const chosen = [ask.options[0].label, ask.options[ask.options.length - 1].label];
  console.log(`> ${chosen.join(', ')}`);
  const done = await follow(client.Resume({
    run_id: started.runId,
    tool_call_id: suspended.tool_call_id,
    selections: { labels: chosen },
  }));
  check(done.finish.reason === 'FINISH_REASON_STOP', 'the run completes');
  check(done.text === `Thanks! You answered: ${chosen.join(', ')}.`, `final text ${done.text}`);
}

async function freeText(client) {
  console.log('== free text');
  const started = await follow(client.StreamAgent({ prompt: 'free text please' }));
  const [suspended] = started.suspensions;
  showQuestion(suspended);
  console.log('> Ada');
  const done = await follow(client.Resume({
    run_id: started.runId,
    tool_call_id: suspended.tool_call_id,
    text: 'Ada',
  }));
  check(done.text === 'Thanks! You answered: Ada.', `final text ${done.text}`);
}

function waitForReady(client, seconds) {
  return new Promise((resolve, reject) => {
    client.waitForReady(Date.now() + seconds * 1000, (error) => (error ? reject(error) : resolve()));
  });
}

async function main() {
  const target = process.argv[2] || process.env.AGENTD_TARGET || '127.0.0.1:50051';
  const { AgentService } = loadService();
  const apiKey = process.env.AGENTD_API_KEY;
  // Adds the API key to every call's metadata.
  const withKey = (options, nextCall) => new grpc.InterceptingCall(nextCall(options), {
    start(metadata, listener, next) {
      metadata.set('authorization', `Bearer ${apiKey}`);
      next(metadata, listener);
    },
  });
  const client = new AgentService(target, grpc.credentials.createInsecure(), {
    interceptors: apiKey ? [withKey] : [],
  });
  try {
    await waitForReady(client, 30);
    await singleSelect(client);
    await multiSelect(client);
    await freeText(client);
  } finally {
    client.close();
  }
  console.log('node example: OK');
}

main().catch((error) => {
  console.error(error.message || error);
  process.exit(1);
});
