// Types of src/index.js: see there.

import type { Client, Transport } from "@connectrpc/connect";

import type { AgentService } from "./gen/agentd/v1/agentd_pb.js";

export * from "./gen/agentd/v1/agentd_pb.js";

/** A client of agentd.v1.AgentService over `transport`. */
export declare function createAgentClient(transport: Transport): Client<typeof AgentService>;
