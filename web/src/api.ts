// The agent service over gRPC-Web, from the page's own origin, sending the
// API key (if the person gave one) with every call.
import { Code, ConnectError, createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { AgentService } from "./gen/agentd/v1/agentd_pb";

export type Agentd = Client<typeof AgentService>;

export function connect(key: string | null): Agentd {
  const authorize: Interceptor = (next) => (request) => {
    if (key) request.header.set("authorization", `Bearer ${key}`);
    return next(request);
  };
  const transport = createGrpcWebTransport({
    baseUrl: window.location.origin,
    useBinaryFormat: true,
    interceptors: [authorize],
  });
  return createClient(AgentService, transport);
}

/** What the server said, as a person can read it. */
export function describe(error: unknown): string {
  const refused = ConnectError.from(error);
  return refused.rawMessage || `${Code[refused.code]}`;
}

export function codeOf(error: unknown): Code {
  return ConnectError.from(error).code;
}
