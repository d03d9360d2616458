#!/usr/bin/env python3
"""The ask_user cycle against an agentd server, from Python, with the
agentd-client package (clients/python: stubs and type hints generated from
the proto) and grpcio.

With the server's scripted model it:

1. starts a run that asks a single-select question, prints the streamed
   chunks, the question and its options;
2. answers with a label that is not an option: the server refuses with
   INVALID_ARGUMENT, and the google.rpc.BadRequest / ErrorInfo details name
   the field and the valid labels; the run stays suspended;
3. answers with a valid label and prints the final text;
4. does the same for a multi-select question, answering with `selections`,
   and for a free-text question.

Usage: python3 ask_user_cycle.py [HOST:PORT]  (or AGENTD_TARGET; default
127.0.0.1:50051). AGENTD_API_KEY, if set, is sent as
`authorization: Bearer <key>`. Exits non-zero if the server does not
behave as the contract says. Install its packages into a virtual
environment first (see docs/clients.md, "Clients in other languages").
"""

import os
import sys
from collections.abc import Iterable

import grpc
# googleapis-common-protos ships no type hints.
from google.rpc import error_details_pb2  # type: ignore[import-untyped]
from grpc_status import rpc_status

from agentd.v1 import agentd_pb2 as pb
from agentd.v1 import agentd_pb2_grpc as pb_grpc


def check(condition: bool, message: str) -> None:
    if not condition:
        sys.exit(f"unexpected: {message}")


Followed = tuple[str, list[pb.ToolCallSuspended], pb.RunFinished, str]


class Client:
    def __init__(self, channel: grpc.Channel, api_key: str | None = None) -> None:
        self.stub = pb_grpc.AgentServiceStub(channel)
        self.metadata: tuple[tuple[str, str | bytes], ...] = (
            (("authorization", f"Bearer {api_key}"),) if api_key else ()
        )

    def follow(self, stream: Iterable[pb.AgentChunk]) -> Followed:
        """Prints a stream's chunks; returns (run_id, suspensions, finish, text)."""
        run_id, text = "", ""
        suspensions: list[pb.ToolCallSuspended] = []
        finish: pb.RunFinished | None = None
        in_text = False
        for chunk in stream:
            run_id = run_id or chunk.run_id
            kind = chunk.WhichOneof("chunk")
            if in_text and kind != "text_delta":
                print()
                in_text = False
            if kind == "text_delta":
                text += chunk.text_delta.text
                in_text = True
                print(chunk.text_delta.text, end="", flush=True)
            elif kind == "tool_call_suspended":
                suspensions.append(chunk.tool_call_suspended)
            elif kind == "finish":
                finish = chunk.finish
            else:
                print(f"[{chunk.seq}] {kind}")
        if in_text:
            print()
        if finish is None:
            sys.exit("unexpected: the stream ended without a finish chunk")
        reason = pb.FinishReason.Name(finish.reason)
        print(f"[finish] {reason}")
        return run_id, suspensions, finish, text

    def start(self, prompt: str) -> Followed:
        request = pb.StreamAgentRequest(prompt=prompt)
        return self.follow(self.stub.StreamAgent(request, metadata=self.metadata))

    def resume(self, request: pb.ResumeRequest) -> Followed:
        return self.follow(self.stub.Resume(request, metadata=self.metadata))

    def show_question(self, suspended: pb.ToolCallSuspended) -> pb.AskUserPayload:
        ask = suspended.suspend_payload.ask_user
        mode = pb.SelectionMode.Name(ask.selection_mode)
        print(f"? {ask.question}  ({mode})")
        for option in ask.options:
            print(f"  - {option.label}: {option.description}")
        return ask


def show_rejection(error: grpc.Call) -> list[str]:
    """Prints a refused Resume with its rich error details; returns the valid labels."""
    print(f"rejected: {error.code().name}: {error.details()}")
    status = rpc_status.from_call(error)
    check(status is not None, "the rejection carries google.rpc.Status details")
    valid_labels: list[str] = []
    for detail in status.details:
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad_request = error_details_pb2.BadRequest()
            detail.Unpack(bad_request)
            for violation in bad_request.field_violations:
                print(f"  field {violation.field}: {violation.description}")
        elif detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            print(f"  reason {info.reason} ({info.domain}) {dict(info.metadata)}")
            valid_labels = [l for l in info.metadata.get("valid_labels", "").split(", ") if l]
    return valid_labels


def single_select(client: Client) -> None:
    print("== single-select, with a rejected answer")
    run_id, suspensions, finish, _ = client.start("Help me pick a plan")
    check(finish.reason == pb.FINISH_REASON_SUSPENDED, "the run suspends")
    suspended = suspensions[0]
    ask = client.show_question(suspended)
    labels = [option.label for option in ask.options]
    try:
        client.resume(pb.ResumeRequest(run_id=run_id, tool_call_id=suspended.tool_call_id, text="Gold"))
        check(False, "an answer that is not an option is refused")
    except grpc.RpcError as error:
        # A failed call's error is also the call (grpc.Call).
        call: grpc.Call = error  # type: ignore[assignment]
        check(call.code() == grpc.StatusCode.INVALID_ARGUMENT, "the refusal is INVALID_ARGUMENT")
        valid = show_rejection(call)
        check(valid == labels, f"the details list the valid labels {labels}, got {valid}")
    run = client.stub.GetRun(pb.GetRunRequest(run_id=run_id), metadata=client.metadata)
    check(run.status == pb.RUN_STATUS_SUSPENDED, "the run is still suspended")
    print(f"> {labels[1]}")
    answer = pb.ResumeRequest(run_id=run_id, tool_call_id=suspended.tool_call_id, text=labels[1])
    _, _, finish, text = client.resume(answer)
    check(finish.reason == pb.FINISH_REASON_STOP, "the run completes")
    check(text == f"Thanks! You answered: {labels[1]}.", f"final text {text!r}")


def multi_select(client: Client) -> None:
    print("== multi-select")
    run_id, suspensions, finish, _ = client.start("Order me a pizza, multi toppings")
    check(finish.reason == pb.FINISH_REASON_SUSPENDED, "the run suspends")
    suspended = suspensions[0]
    ask = client.show_question(suspended)
    check(ask.selection_mode == pb.SELECTION_MODE_MULTI_SELECT, "a multi-select question")
    chosen = [ask.options[0].label, ask.options[-1].label]
    print(f"> {', '.join(chosen)}")
    selections = pb.Selections(labels=chosen)
    answer = pb.ResumeRequest(run_id=run_id, tool_call_id=suspended.tool_call_id, selections=selections)
    _, _, finish, text = client.resume(answer)
    check(finish.reason == pb.FINISH_REASON_STOP, "the run completes")
    check(text == f"Thanks! You answered: {', '.join(chosen)}.", f"final text {text!r}")


def free_text(client: Client) -> None:
    print("== free text")
    run_id, suspensions, _, _ = client.start("free text please")
    suspended = suspensions[0]
    client.show_question(suspended)
    print("> Ada")
    answer = pb.ResumeRequest(run_id=run_id, tool_call_id=suspended.tool_call_id, text="Ada")
    _, _, _, text = client.resume(answer)
    check(text == "Thanks! You answered: Ada.", f"final text {text!r}")


def main() -> None:
    target = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("AGENTD_TARGET", "127.0.0.1:50051")
    with grpc.insecure_channel(target) as channel:
        grpc.channel_ready_future(channel).result(timeout=30)
        client = Client(channel, os.environ.get("AGENTD_API_KEY"))
        single_select(client)
        multi_select(client)
        free_text(client)
    print("python example: OK")


if __name__ == "__main__":
    main()
