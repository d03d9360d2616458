"""agentd as an A2A agent, driven by the official A2A Python SDK (a2a-sdk,
its gRPC transport and card resolver) against real servers: one open, one
with API keys for two tenants. Run by tests/api/a2a.rs; exits non-zero on
the first failed check."""

import argparse
import asyncio
import json
import uuid

import grpc
import httpx
from a2a.client.card_resolver import A2ACardResolver
from a2a.client.client import ClientCallContext
from a2a.client.transports.grpc import GrpcTransport
from a2a.types import a2a_pb2 as a2a
from a2a.utils.errors import (
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from google.protobuf import json_format


def check(condition, what):
    if not condition:
        raise AssertionError(what)
    print(f"ok: {what}")


def user_message(text=None, data=None, task_id="", context_id=""):
    parts = []
    if text is not None:
        parts.append(a2a.Part(text=text))
    if data is not None:
        part = a2a.Part()
        part.data.CopyFrom(json_format.ParseDict(data, part.data))
        parts.append(part)
    return a2a.Message(
        message_id=str(uuid.uuid4()),
        role=a2a.ROLE_USER,
        parts=parts,
        task_id=task_id,
        context_id=context_id,
    )


class Agent:
    """An agent of a server, as its card names it, through the SDK's gRPC
    transport."""

    def __init__(self, card, key=None):
        interface = card.supported_interfaces[0]
        check(interface.protocol_binding == "GRPC", f"{card.name}: the card names a gRPC interface")
        self.tenant = interface.tenant
        address = interface.url.split("://", 1)[1]
        self.transport = GrpcTransport(grpc.aio.insecure_channel(address), card)
        params = {"authorization": f"Bearer {key}"} if key else None
        self.context = ClientCallContext(service_parameters=params)

    async def stream(self, message):
        request = a2a.SendMessageRequest(tenant=self.tenant, message=message)
        return [event async for event in self.transport.send_message_streaming(request, context=self.context)]

    async def send(self, message):
        request = a2a.SendMessageRequest(tenant=self.tenant, message=message)
        return (await self.transport.send_message(request, context=self.context)).task

    async def get(self, task_id):
        return await self.transport.get_task(a2a.GetTaskRequest(tenant=self.tenant, id=task_id), context=self.context)

    async def cancel(self, task_id):
        return await self.transport.cancel_task(a2a.CancelTaskRequest(tenant=self.tenant, id=task_id), context=self.context)

    async def subscribe(self, task_id):
        request = a2a.SubscribeToTaskRequest(tenant=self.tenant, id=task_id)
        return self.transport.subscribe(request, context=self.context)


def final_state(events):
    states = [e.status_update.status.state for e in events if e.HasField("status_update")]
    return states[-1] if states else None


def question(status):
    """The typed question of an INPUT_REQUIRED status: its data part."""
    data = [json_format.MessageToDict(p.data) for p in status.message.parts if p.HasField("data")]
    texts = [p.text for p in status.message.parts if p.HasField("text")]
    return data[0], texts[0]


def answer_text(events):
    return "".join(
        p.text for e in events if e.HasField("artifact_update") for p in e.artifact_update.artifact.parts
    )


async def open_server(address):
    async with httpx.AsyncClient() as http:
        card = await A2ACardResolver(http, f"http://{address}").get_agent_card()
    check(card.name == "assistant", "the default agent's card is served at /.well-known/agent-card.json")
    check(card.capabilities.streaming, "the card says it streams")
    check(any(skill.id == "ask_user" for skill in card.skills), "the card lists ask_user as a skill")
    check(not card.security_requirements, "an open server's card asks for no credentials")
    agent = Agent(card)

    # A single-select question, answered with text.
    events = await agent.stream(user_message("Help me pick a plan"))
    check(events[0].HasField("task"), "the stream opens with the task")
    task_id = events[0].task.id
    check(final_state(events) == a2a.TASK_STATE_INPUT_REQUIRED, "the task needs input")
    data, text = question([e for e in events if e.HasField("status_update")][-1].status_update.status)
    ask = data["askUser"]
    check(ask["selectionMode"] == "single_select", "the question is typed: single-select")
    check([o["label"] for o in ask["options"]] == ["Basic", "Pro", "Enterprise"], "with its options")
    check(data["toolCallId"], "and the call it answers")
    check("Which plan" in text, "the status message reads as text too")
    fetched = await agent.get(task_id)
    check(fetched.status.state == a2a.TASK_STATE_INPUT_REQUIRED, "GetTask agrees")

    # An answer that fits no option: refused, the task still waits.
    try:
        await agent.stream(user_message("Platinum", task_id=task_id))
        check(False, "an invalid answer is refused")
    except Exception as error:  # the SDK's error for INVALID_ARGUMENT
        check("Basic" in str(error) and "Enterprise" in str(error), "the refusal lists the valid labels")
    check((await agent.get(task_id)).status.state == a2a.TASK_STATE_INPUT_REQUIRED, "the task still waits")

    events = await agent.stream(user_message("Pro", task_id=task_id))
    check(final_state(events) == a2a.TASK_STATE_COMPLETED, "the answered task completes")
    check("Pro" in answer_text(events), "its answer artifact streams the answer text")
    done = await agent.get(task_id)
    check(done.status.state == a2a.TASK_STATE_COMPLETED, "GetTask: completed")
    check("Pro" in done.artifacts[0].parts[0].text, "with the answer artifact")
    check(any(m.role == a2a.ROLE_USER for m in done.history), "and its history")

    # A multi-select question, answered with a data part (unary calls).
    waiting = await agent.send(user_message("multi please"))
    check(waiting.status.state == a2a.TASK_STATE_INPUT_REQUIRED, "SendMessage returns the waiting task")
    data, _ = question(waiting.status)
    check(data["askUser"]["selectionMode"] == "multi_select", "a multi-select question")
    done = await agent.send(user_message(data={"selections": ["Olives", "Basil"]}, task_id=waiting.id))
    check(done.status.state == a2a.TASK_STATE_COMPLETED, "answered with selections, it completes")
    check("Olives, Basil" in done.artifacts[0].parts[0].text, "with both selections in the answer")

    # Cancel, and a task that cannot be canceled any more.
    waiting = await agent.send(user_message("Help me pick a plan"))
    cancelled = await agent.cancel(waiting.id)
    check(cancelled.status.state == a2a.TASK_STATE_CANCELED, "a waiting task is canceled")
    try:
        await agent.cancel(waiting.id)
        check(False, "a canceled task cannot be canceled again")
    except TaskNotCancelableError:
        check(True, "canceling it again is TaskNotCancelableError")

    # Resubscribe to a running task: the snapshot, then what follows.
    request = a2a.SendMessageRequest(
        tenant=agent.tenant,
        message=user_message("stream 40 every 25 ms"),
        configuration=a2a.SendMessageConfiguration(return_immediately=True),
    )
    started = (await agent.transport.send_message(request, context=agent.context)).task
    check(started.status.state == a2a.TASK_STATE_WORKING, "return_immediately gives the working task")
    events = [event async for event in await agent.subscribe(started.id)]
    check(events[0].HasField("task") and events[0].task.id == started.id, "a resubscription opens with the task")
    check(final_state(events) == a2a.TASK_STATE_COMPLETED, "and follows it to its end")
    check("token39" in answer_text(events), "with the text streamed after it joined")
    try:
        [event async for event in await agent.subscribe(started.id)]
        check(False, "a finished task cannot be subscribed to")
    except UnsupportedOperationError:
        check(True, "subscribing to a finished task is UnsupportedOperationError")

    # Unknown tasks.
    for unknown in [str(uuid.uuid4()), "not-a-task-id"]:
        try:
            await agent.get(unknown)
            check(False, "an unknown task is not found")
        except TaskNotFoundError:
            check(True, f"GetTask({unknown}) is TaskNotFoundError")

    listed = await agent.transport.list_tasks(
        a2a.ListTasksRequest(tenant=agent.tenant, status=a2a.TASK_STATE_COMPLETED), context=agent.context
    )
    check(len(listed.tasks) >= 3 and all(t.status.state == a2a.TASK_STATE_COMPLETED for t in listed.tasks),
          "ListTasks filters by state")


async def keyed_server(address, acme_key, globex_key):
    async with httpx.AsyncClient() as http:
        card = await A2ACardResolver(http, f"http://{address}").get_agent_card()
    check("bearer" in card.security_schemes, "with API keys, the card names the bearer scheme")
    acme, globex = Agent(card, acme_key), Agent(card, globex_key)
    waiting = await acme.send(user_message("Help me pick a plan"))
    check(waiting.status.state == a2a.TASK_STATE_INPUT_REQUIRED, "acme's task waits")
    try:
        await globex.get(waiting.id)
        check(False, "another tenant's task is not found")
    except TaskNotFoundError:
        check(True, "another tenant's task is TaskNotFoundError")
    try:
        await globex.send(user_message("Pro", task_id=waiting.id))
        check(False, "another tenant cannot answer it")
    except TaskNotFoundError:
        check(True, "answering another tenant's task is TaskNotFoundError")
    check((await acme.get(waiting.id)).status.state == a2a.TASK_STATE_INPUT_REQUIRED, "acme's task is untouched")


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--open", required=True)
    parser.add_argument("--keyed", required=True)
    parser.add_argument("--acme-key", required=True)
    parser.add_argument("--globex-key", required=True)
    args = parser.parse_args()
    await open_server(args.open)
    await keyed_server(args.keyed, args.acme_key, args.globex_key)
    print(json.dumps({"result": "passed"}))


asyncio.run(main())
