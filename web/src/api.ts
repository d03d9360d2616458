// The agent service over gRPC-Web, from the page's own origin, sending the
// API key (if the person gave one) with every call, and the header that
// tells the server the call is the inbox's (its decisions are recorded
// with the source DECISION_SOURCE_INBOX).
import { Code, ConnectError, createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { AgentService } from "./gen/agentd/v1/agentd_pb";

export type Agentd = Client<typeof AgentService>;

export function connect(key: string | null): Agentd {
  const authorize: Interceptor = (next) => (request) => {
    if (key) request.header.set("authorization", `Bearer ${key}`);
    request.header.set("x-agentd-client", "inbox");
    return next(request);
  };
  const transport = createGrpcWebTransport({
    baseUrl: window.location.origin,
    useBinaryFormat: true,
    interceptors: [authorize],
  });
  return createClient(AgentService, transport);
}

/** What the server said, as it said it (for logs and unknown cases). */
export function describe(error: unknown): string {
  const refused = ConnectError.from(error);
  return refused.rawMessage || `${Code[refused.code]}`;
}

/** A sentence: a capital first letter and a stop at the end. */
function sentence(text: string): string {
  const trimmed = text.trim();
  if (!trimmed) return "";
  const capital = trimmed[0].toUpperCase() + trimmed.slice(1);
  return /[.!?]$/.test(capital) ? capital : `${capital}.`;
}

/** A JSON Schema complaint in words: `data/decision: "maybe" is not one
 * of ["approve","reject","edit"]` as `decision: "maybe" is not one of the
 * choices: approve, reject, edit`. */
function schemaWords(text: string): string {
  return text
    .replace(/^does not match the resume schema of (\S+): /, "That does not fit what $1 accepts: ")
    .replace(/\bdata\//g, "")
    .replace(/\bdata: /g, "")
    .replace(/is not one of (\[[^\]]*\])/g, (whole, list: string) => {
      try {
        return `is not one of the choices: ${(JSON.parse(list) as unknown[]).map(String).join(", ")}`;
      } catch {
        return whole;
      }
    });
}

/** Why the server refused, in plain words, with the valid choices when
 * it named them; no status codes, no protocol detail. */
export function plain(error: unknown): string {
  const refused = ConnectError.from(error);
  const info = errorInfo(error);
  switch (refused.code) {
    case Code.Unauthenticated:
      return "The server did not accept your key. Sign in again.";
    case Code.NotFound:
      return "This run is gone: it no longer exists here.";
    case Code.Unavailable:
    case Code.Unknown:
    case Code.DeadlineExceeded:
    case Code.Canceled:
      return "The server cannot be reached just now. Try again in a moment.";
    case Code.ResourceExhausted:
      return "The server is too busy just now. Try again in a moment.";
    case Code.FailedPrecondition:
      if (info?.reason === "RUN_NOT_SUSPENDED" || info?.reason === "RUN_FINISHED") {
        return `This run no longer waits for an answer: it is ${info.metadata.status ?? "finished"}.`;
      }
      if (info?.reason === "RESUME_CONFLICT") return "Someone else answered this at the same moment.";
      break;
    case Code.InvalidArgument: {
      if (info?.reason !== "INVALID_ANSWER") break;
      const found = violations(error);
      const said = found.length === 1 && !found[0].field.startsWith("elicitation.") ? found[0].description : null;
      if (said === null) break;
      const labels = info.metadata.valid_labels;
      const words = sentence(schemaWords(said));
      return labels ? `${words} Choose one of: ${labels}.` : words;
    }
    default:
      break;
  }
  return sentence(describe(error));
}

/** A refusal's google.rpc.ErrorInfo: its reason and metadata. */
export interface ErrorInfo {
  reason: string;
  metadata: Record<string, string>;
}

/** The ErrorInfo of a refusal, read from the wire: `string reason = 1`,
 * `string domain = 2`, `map<string, string> metadata = 3`. */
export function errorInfo(error: unknown): ErrorInfo | null {
  for (const detail of ConnectError.from(error).details) {
    if (!("type" in detail) || detail.type !== "google.rpc.ErrorInfo") continue;
    try {
      const info: ErrorInfo = { reason: "", metadata: {} };
      const reader = new BinaryReader(detail.value);
      while (reader.pos < reader.len) {
        const [number, wireType] = reader.tag();
        if (number === 1 && wireType === WireType.LengthDelimited) info.reason = reader.string();
        else if (number === 3 && wireType === WireType.LengthDelimited) {
          const entry = new BinaryReader(reader.bytes());
          let key = "";
          let value = "";
          while (entry.pos < entry.len) {
            const [field, type] = entry.tag();
            if (field === 1 && type === WireType.LengthDelimited) key = entry.string();
            else if (field === 2 && type === WireType.LengthDelimited) value = entry.string();
            else entry.skip(type);
          }
          info.metadata[key] = value;
        } else reader.skip(wireType);
      }
      return info;
    } catch {
      return null;
    }
  }
  return null;
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
