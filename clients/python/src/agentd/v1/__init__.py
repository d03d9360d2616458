"""agentd.v1, generated from proto/agentd/v1/agentd.proto (do not edit the
generated modules: run clients/generate).

- `agentd.v1.agentd_pb2`: the messages and enums (`StreamAgentRequest`,
  `AgentChunk`, `ResumeRequest`, `FinishReason`, ...);
- `agentd.v1.agentd_pb2_grpc`: `AgentServiceStub`, the client of
  `agentd.v1.AgentService`, for `grpc.Channel` and `grpc.aio.Channel`.

Both have type hints (`.pyi`).
"""
