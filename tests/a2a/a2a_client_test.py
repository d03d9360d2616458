"""agentd as an A2A agent, driven by the official A2A Python SDK (a2a-sdk,
its card resolver and its transports of the three bindings: JSON-RPC,
HTTP+JSON and gRPC) against real servers: one open, one with API keys for
two tenants, one that pushes notifications to private addresses (to a
receiver of this script on 127.0.0.1). Every scenario runs on every
binding; a task started over one binding is answered over another. Run by
tests/api/a2a.rs (the open server has `careful`, whose ask_user calls
wait for approval); exits non-zero on the first failed check. Prints
`granted task: <id>` for each task the Rust side checks further."""

import argparse
import asyncio
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
import httpx
from a2a.client.card_resolver import A2ACardResolver
from a2a.client.client import ClientCallContext
from a2a.client.client_factory import create_client
from a2a.client.transports.grpc import GrpcTransport
from a2a.client.transports.jsonrpc import JsonRpcTransport
from a2a.client.transports.rest import RestTransport
from a2a.types import a2a_pb2 as a2a
from a2a.utils.errors import (
    InvalidParamsError,
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


BINDINGS = ["JSONRPC", "HTTP+JSON", "GRPC"]


class Agent:
    """An agent of a server, as its card names it, through the SDK's
    transport of `binding`."""

    def __init__(self, card, key=None, binding="GRPC"):
        interface = next(i for i in card.supported_interfaces if i.protocol_binding == binding)
        check(interface.protocol_version == "1.0", f"{card.name}: the card names a {binding} interface of A2A 1.0")
        self.binding = binding
        self.tenant = interface.tenant
        if binding == "GRPC":
            address = interface.url.split("://", 1)[1]
            self.transport = GrpcTransport(grpc.aio.insecure_channel(address), card)
        else:
            # As the SDK's client factory makes it: every request says its
            # protocol version.
            http = httpx.AsyncClient(headers={"A2A-Version": "1.0"}, timeout=60)
            kind = JsonRpcTransport if binding == "JSONRPC" else RestTransport
            self.transport = kind(http, card, interface.url)
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


class Receiver:
    """An HTTP server on 127.0.0.1 that keeps every POST it gets: path,
    headers (names in lower case) and JSON body."""

    def __init__(self):
        received = self.received = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                received.append((self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(body)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    async def wait_for(self, path, done, timeout=20):
        """The pushes to `path` once `done(pushes)` holds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pushes = [(headers, body) for p, headers, body in self.received if p == path]
            if done(pushes):
                return pushes
            await asyncio.sleep(0.05)
        raise AssertionError(f"no such pushes to {path} in {timeout} s: {self.received}")


def pushed_states(pushes):
    return [body["statusUpdate"]["status"]["state"] for _, body in pushes if "statusUpdate" in body]


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


async def open_server(address, binding):
    print(f"-- {binding}")
    async with httpx.AsyncClient() as http:
        card = await A2ACardResolver(http, f"http://{address}").get_agent_card()
    check(card.name == "assistant", "the default agent's card is served at /.well-known/agent-card.json")
    check([i.protocol_binding for i in card.supported_interfaces] == BINDINGS,
          "it lists the JSON-RPC, HTTP+JSON and gRPC interfaces, JSON-RPC first")
    check(card.capabilities.streaming, "the card says it streams")
    check(any(skill.id == "ask_user" for skill in card.skills), "the card lists ask_user as a skill")
    check(not card.security_requirements, "an open server's card asks for no credentials")
    agent = Agent(card, binding=binding)

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
    except InvalidParamsError as error:
        check("Basic" in str(error) and "Enterprise" in str(error),
              "the refusal is InvalidParamsError, listing the valid labels")
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


async def approvals_remembered(address, binding):
    """`careful` asks before each ask_user call. Approved with `remember:
    "thread"`, its context's next task asks its question at once."""
    async with httpx.AsyncClient() as http:
        resolver = A2ACardResolver(http, f"http://{address}", agent_card_path="/agents/careful/.well-known/agent-card.json")
        card = await resolver.get_agent_card()
    agent = Agent(card, binding=binding)
    context = str(uuid.uuid4())
    waiting = await agent.send(user_message("Help me pick a plan", context_id=context))
    data, text = question(waiting.status)
    check(data["approval"]["toolName"] == "ask_user", f"careful asks to approve ask_user first: {data}")

    # A duration that is none: refused, the task still waits.
    approval = {"approved": True, "remember": "thread", "rememberFor": "soon"}
    try:
        await agent.send(user_message(data={"approval": approval}, task_id=waiting.id))
        check(False, "a remembered approval with a wrong duration is refused")
    except InvalidParamsError as error:
        check("approval.rememberFor" in str(error), f"the refusal names rememberFor: {error}")
    check((await agent.get(waiting.id)).status.state == a2a.TASK_STATE_INPUT_REQUIRED, "the task still waits")

    approval["rememberFor"] = "8h"
    asked = await agent.send(user_message(data={"approval": approval}, task_id=waiting.id))
    data, _ = question(asked.status)
    check("askUser" in data, "approved and remembered, ask_user asks its question")
    done = await agent.send(user_message("Pro", task_id=waiting.id))
    check(done.status.state == a2a.TASK_STATE_COMPLETED, "and the task completes")

    granted = await agent.send(user_message("Help me pick a plan", context_id=context))
    data, _ = question(granted.status)
    check("askUser" in data, f"the context's next task asks its question without asking for approval: {data}")
    done = await agent.send(user_message("Basic", task_id=granted.id))
    check(done.status.state == a2a.TASK_STATE_COMPLETED, "and completes")
    print(f"granted task: {granted.id}")


async def push_server(address, refusing_address, binding):
    print(f"-- {binding}")
    async with httpx.AsyncClient() as http:
        card = await A2ACardResolver(http, f"http://{address}").get_agent_card()
    check(card.capabilities.push_notifications, "the card says it pushes notifications")
    agent = Agent(card, binding=binding)
    receiver = Receiver()
    before = (await agent.transport.list_tasks(a2a.ListTasksRequest(tenant=agent.tenant), context=agent.context)).total_size

    # A config given with the message: every update of the task is pushed.
    config = a2a.TaskPushNotificationConfig(
        url=f"{receiver.url}/first",
        token="token-1",
        authentication=a2a.AuthenticationInfo(scheme="Bearer", credentials="secret-1"),
    )
    request = a2a.SendMessageRequest(
        tenant=agent.tenant,
        message=user_message("Help me pick a plan"),
        configuration=a2a.SendMessageConfiguration(task_push_notification_config=config),
    )
    waiting = (await agent.transport.send_message(request, context=agent.context)).task
    check(waiting.status.state == a2a.TASK_STATE_INPUT_REQUIRED, "the task with a push config waits")

    # Create, get, list (paged), delete.
    second = await agent.transport.create_task_push_notification_config(
        a2a.TaskPushNotificationConfig(
            tenant=agent.tenant, task_id=waiting.id, id="second", url=f"{receiver.url}/second", token="token-2"
        ),
        context=agent.context,
    )
    check(second.id == "second" and second.task_id == waiting.id, "CreateTaskPushNotificationConfig keeps the id")
    fetched = await agent.transport.get_task_push_notification_config(
        a2a.GetTaskPushNotificationConfigRequest(tenant=agent.tenant, task_id=waiting.id, id="second"),
        context=agent.context,
    )
    check(fetched.url == f"{receiver.url}/second" and fetched.token == "token-2", "GetTaskPushNotificationConfig")
    listing = a2a.ListTaskPushNotificationConfigsRequest(tenant=agent.tenant, task_id=waiting.id, page_size=1)
    first_page = await agent.transport.list_task_push_notification_configs(listing, context=agent.context)
    check(len(first_page.configs) == 1 and first_page.next_page_token, "a page of one config, and a next page")
    listing.page_token = first_page.next_page_token
    second_page = await agent.transport.list_task_push_notification_configs(listing, context=agent.context)
    check(len(second_page.configs) == 1 and not second_page.next_page_token, "the last page")
    urls = sorted(c.url for c in [*first_page.configs, *second_page.configs])
    check(urls == [f"{receiver.url}/first", f"{receiver.url}/second"], "the pages list both configs")
    generated = first_page.configs[0] if first_page.configs[0].id != "second" else second_page.configs[0]
    check(generated.id and generated.authentication.scheme == "Bearer", "the message's config got an id")
    await agent.transport.delete_task_push_notification_config(
        a2a.DeleteTaskPushNotificationConfigRequest(tenant=agent.tenant, task_id=waiting.id, id="second"),
        context=agent.context,
    )
    try:
        await agent.transport.get_task_push_notification_config(
            a2a.GetTaskPushNotificationConfigRequest(tenant=agent.tenant, task_id=waiting.id, id="second"),
            context=agent.context,
        )
        check(False, "a deleted config is not found")
    except Exception as error:
        check("no push notification config" in str(error), "a deleted config is not found")
    try:
        await agent.transport.create_task_push_notification_config(
            a2a.TaskPushNotificationConfig(tenant=agent.tenant, task_id=str(uuid.uuid4()), url=receiver.url),
            context=agent.context,
        )
        check(False, "a config of an unknown task is refused")
    except TaskNotFoundError:
        check(True, "a config of an unknown task is TaskNotFoundError")

    # Answered, the task completes; the pushes came in order, with the
    # token and the credentials.
    done = await agent.send(user_message("Pro", task_id=waiting.id))
    check(done.status.state == a2a.TASK_STATE_COMPLETED, "the answered task completes")
    pushes = await receiver.wait_for("/first", lambda p: "TASK_STATE_COMPLETED" in pushed_states(p))
    states = pushed_states(pushes)
    check(states.index("TASK_STATE_INPUT_REQUIRED") < states.index("TASK_STATE_COMPLETED"),
          f"pushed in order: INPUT_REQUIRED, then COMPLETED ({states})")
    check(all(h.get("x-a2a-notification-token") == "token-1" for h, _ in pushes), "each with the config's token")
    check(all(h.get("authorization") == "Bearer secret-1" for h, _ in pushes), "and its credentials")
    check(all(b["statusUpdate"]["taskId"] == waiting.id for _, b in pushes), "each names the task")
    asked = next(b for _, b in pushes if b["statusUpdate"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED")
    parts = asked["statusUpdate"]["status"]["message"]["parts"]
    check(any("askUser" in (p.get("data") or {}) for p in parts), "the INPUT_REQUIRED push carries the question")
    check(not [p for p, _, _ in receiver.received if p == "/second"], "a deleted config gets no pushes")

    # ListTasks: total_size counts every page; status_timestamp_after
    # filters before paging.
    cutoff = done.status.timestamp
    later = [await agent.send(user_message(f"plain hello {i}")) for i in range(3)]
    listed = await agent.transport.list_tasks(
        a2a.ListTasksRequest(tenant=agent.tenant, page_size=2), context=agent.context
    )
    check(len(listed.tasks) == 2 and listed.total_size == before + 4 and listed.next_page_token,
          f"ListTasks: a page of 2, total_size 4 more than before ({listed.total_size})")
    request = a2a.ListTasksRequest(tenant=agent.tenant, page_size=2)
    request.status_timestamp_after.CopyFrom(cutoff)
    page = await agent.transport.list_tasks(request, context=agent.context)
    check(len(page.tasks) == 2 and page.total_size == 3 and page.next_page_token,
          f"status_timestamp_after: the first page of the 3 changed later ({page.total_size})")
    request.page_token = page.next_page_token
    rest = await agent.transport.list_tasks(request, context=agent.context)
    ids = [t.id for t in [*page.tasks, *rest.tasks]]
    check(len(rest.tasks) == 1 and not rest.next_page_token, "and the last page of them")
    check(sorted(ids) == sorted(t.id for t in later), "exactly the tasks changed after the cutoff")

    # A server that does not allow private addresses refuses them.
    async with httpx.AsyncClient() as http:
        card = await A2ACardResolver(http, f"http://{refusing_address}").get_agent_card()
    refusing = Agent(card, binding=binding)
    waiting = await refusing.send(user_message("Help me pick a plan"))
    for url in [receiver.url, "http://localhost:9/x", "http://169.254.169.254/latest", "ftp://example.com/"]:
        try:
            await refusing.transport.create_task_push_notification_config(
                a2a.TaskPushNotificationConfig(tenant=refusing.tenant, task_id=waiting.id, url=url),
                context=refusing.context,
            )
            check(False, f"{url} is refused")
        except InvalidParamsError:
            check(True, f"a push to {url} is InvalidParamsError")
    request = a2a.SendMessageRequest(
        tenant=refusing.tenant,
        message=user_message("Help me pick a plan"),
        configuration=a2a.SendMessageConfiguration(
            task_push_notification_config=a2a.TaskPushNotificationConfig(url=receiver.url)
        ),
    )
    try:
        await refusing.transport.send_message(request, context=refusing.context)
        check(False, "a message with a private push URL is refused")
    except InvalidParamsError:
        check(True, "a message with a private push URL is InvalidParamsError")
    receiver.server.shutdown()


async def keyed_server(address, acme_key, globex_key, binding):
    print(f"-- {binding}")
    async with httpx.AsyncClient() as http:
        card = await A2ACardResolver(http, f"http://{address}").get_agent_card()
    check("bearer" in card.security_schemes, "with API keys, the card names the bearer scheme")
    acme, globex = Agent(card, acme_key, binding), Agent(card, globex_key, binding)
    try:
        await Agent(card, None, binding).get(str(uuid.uuid4()))
        check(False, "a call without a key is refused")
    except Exception as error:
        check("401" in str(error) or "UNAUTHENTICATED" in str(error), "a call without a key is refused")
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
    try:
        await globex.transport.create_task_push_notification_config(
            a2a.TaskPushNotificationConfig(tenant=globex.tenant, task_id=waiting.id, url="https://example.com/"),
            context=globex.context,
        )
        check(False, "another tenant cannot configure pushes of it")
    except TaskNotFoundError:
        check(True, "a push config of another tenant's task is TaskNotFoundError")
    try:
        await globex.transport.list_task_push_notification_configs(
            a2a.ListTaskPushNotificationConfigsRequest(tenant=globex.tenant, task_id=waiting.id),
            context=globex.context,
        )
        check(False, "another tenant cannot list its push configs")
    except TaskNotFoundError:
        check(True, "listing another tenant's task's push configs is TaskNotFoundError")


async def across_bindings(address):
    """A task started over JSON-RPC, read over HTTP+JSON, answered over
    gRPC, followed over JSON-RPC."""
    print("-- across bindings")
    async with httpx.AsyncClient() as http:
        card = await A2ACardResolver(http, f"http://{address}").get_agent_card()
    jsonrpc, rest, grpc_agent = (Agent(card, binding=b) for b in BINDINGS)
    waiting = await jsonrpc.send(user_message("Help me pick a plan"))
    check(waiting.status.state == a2a.TASK_STATE_INPUT_REQUIRED, "a task started over JSON-RPC waits")
    check((await rest.get(waiting.id)).status.state == a2a.TASK_STATE_INPUT_REQUIRED, "HTTP+JSON reads it")
    try:
        await rest.send(user_message("Platinum", task_id=waiting.id))
        check(False, "an invalid answer over HTTP+JSON is refused")
    except InvalidParamsError:
        check(True, "an invalid answer over HTTP+JSON is InvalidParamsError")
    events = await grpc_agent.stream(user_message("Enterprise", task_id=waiting.id))
    check(final_state(events) == a2a.TASK_STATE_COMPLETED, "answered over gRPC, it completes")
    done = await jsonrpc.get(waiting.id)
    check("Enterprise" in done.artifacts[0].parts[0].text, "JSON-RPC reads the answer")


async def default_client(address):
    """The SDK's own client, made from the server's URL: it picks the
    card's first interface, JSON-RPC, and says its version itself."""
    print("-- the default client")
    client = await create_client(f"http://{address}")
    events = [e async for e in client.send_message(a2a.SendMessageRequest(message=user_message("Help me pick a plan")))]
    check(final_state(events) == a2a.TASK_STATE_INPUT_REQUIRED, "the default client's task waits")
    task_id = events[0].task.id
    events = [e async for e in client.send_message(a2a.SendMessageRequest(message=user_message("Basic", task_id=task_id)))]
    check(final_state(events) == a2a.TASK_STATE_COMPLETED, "answered through it, the task completes")
    await client.close()


async def versions(address):
    """What a request without `A2A-Version: 1.0` gets."""
    print("-- versions")
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": str(uuid.uuid4())}}
    async with httpx.AsyncClient() as http:
        answer = await http.post(f"http://{address}/a2a/jsonrpc", json=rpc)
        check(answer.status_code == 200 and answer.json()["error"]["code"] == -32009,
              "JSON-RPC without A2A-Version: VersionNotSupportedError (-32009)")
        answer = await http.post(f"http://{address}/a2a/jsonrpc", json=rpc, headers={"A2A-Version": "1.0"})
        check(answer.json()["error"]["code"] == -32001, "with it: TaskNotFoundError (-32001)")
        info = answer.json()["error"]["data"][-1]
        check(info["reason"] == "TASK_NOT_FOUND" and info["domain"] == "a2a-protocol.org", "its ErrorInfo in data")
        answer = await http.post(f"http://{address}/a2a/jsonrpc", json={**rpc, "method": "Nope"},
                                 headers={"A2A-Version": "1.0"})
        check(answer.json()["error"]["code"] == -32601, "an unknown method: -32601")
        answer = await http.get(f"http://{address}/a2a/rest/tasks/{uuid.uuid4()}", headers={"A2A-Version": "0.3"})
        reason = answer.json()["error"]["details"][-1]["reason"]
        check(answer.status_code == 400 and reason == "VERSION_NOT_SUPPORTED",
              "HTTP+JSON with A2A-Version 0.3: 400, VERSION_NOT_SUPPORTED")
        answer = await http.get(f"http://{address}/a2a/rest/tasks/{uuid.uuid4()}", headers={"A2A-Version": "1.0"})
        check(answer.status_code == 404 and answer.json()["error"]["details"][-1]["reason"] == "TASK_NOT_FOUND",
              "HTTP+JSON, an unknown task: 404, TASK_NOT_FOUND")


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--open", required=True)
    parser.add_argument("--keyed", required=True)
    parser.add_argument("--acme-key", required=True)
    parser.add_argument("--globex-key", required=True)
    parser.add_argument("--push", required=True)
    args = parser.parse_args()
    for binding in BINDINGS:
        await open_server(args.open, binding)
        await approvals_remembered(args.open, binding)
        await push_server(args.push, args.open, binding)
        await keyed_server(args.keyed, args.acme_key, args.globex_key, binding)
    await across_bindings(args.open)
    await default_client(args.open)
    await versions(args.open)
    print(json.dumps({"result": "passed"}))


asyncio.run(main())
