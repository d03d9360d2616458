// The agent service over gRPC-Web, from the page's own origin, sending the
// API key (if the person gave one) with every call.
import { Code, ConnectError, createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
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

/** One field the server found at fault (a google.rpc.BadRequest
 * violation): its path, such as `elicitation.content.email`, and why. */
export interface Violation {
  field: string;
  description: string;
}

/** The field violations of a refusal's google.rpc.BadRequest details,
 * read from the wire (the page carries no generated code for
 * google.rpc): BadRequest has `repeated FieldViolation field_violations =
 * 1`, a FieldViolation `string field = 1` and `string description = 2`. */
export function violations(error: unknown): Violation[] {
  const found: Violation[] = [];
  for (const detail of ConnectError.from(error).details) {
    if (!("type" in detail) || detail.type !== "google.rpc.BadRequest") continue;
    try {
      const reader = new BinaryReader(detail.value);
      while (reader.pos < reader.len) {
        const [number, wireType] = reader.tag();
        if (number !== 1 || wireType !== WireType.LengthDelimited) {
          reader.skip(wireType);
          continue;
        }
        const inner = new BinaryReader(reader.bytes());
        const violation: Violation = { field: "", description: "" };
        while (inner.pos < inner.len) {
          const [field, type] = inner.tag();
          if (field === 1 && type === WireType.LengthDelimited) violation.field = inner.string();
          else if (field === 2 && type === WireType.LengthDelimited) violation.description = inner.string();
          else inner.skip(type);
        }
        found.push(violation);
      }
    } catch {
      // Details that do not decode name no field.
    }
  }
  return found;
}
