// agentd's gRPC API, agentd.v1, for JavaScript and TypeScript: the
// messages, enums and the AgentService descriptor generated from
// proto/agentd/v1/agentd.proto (src/gen, by clients/generate: do not edit
// it), and a Connect client of the service over any transport:
// createGrpcTransport (@connectrpc/connect-node) from Node.js,
// createGrpcWebTransport (@connectrpc/connect-web) from a browser.

import { createClient } from "@connectrpc/connect";

import { AgentService } from "./gen/agentd/v1/agentd_pb.js";

export * from "./gen/agentd/v1/agentd_pb.js";

/**
 * A client of agentd.v1.AgentService over `transport`: one method per RPC
 * (`streamAgent`, `resume` and `subscribeRun` return async iterables of
 * AgentChunk; the others a promise of their response).
 */
export function createAgentClient(transport) {
  return createClient(AgentService, transport);
}
