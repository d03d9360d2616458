"""agentd's agents as MCP tools, driven by the official MCP Python SDK
(`mcp`) over Streamable HTTP against real servers: one open, one with API
keys for two tenants (the open one has `careful`, whose ask_user calls
wait for approval). Run by tests/api/mcp.rs, which answers one question
through gRPC while this script's call waits (the lines `asked` and
`answered` between them); exits non-zero on the first failed check. Prints
`run: <id>` and `granted run: <id>` for each run the Rust side checks
further."""

import argparse
import asyncio
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import ElicitResult


def check(condition, what):
    if not condition:
        raise AssertionError(what)
    print(f"ok: {what}", flush=True)


def client(url, key=None, mode="legacy", elicitation=None):
    headers = {"authorization": f"Bearer {key}"} if key else {}
    transport = streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=60))
    return Client(transport, mode=mode, elicitation_callback=elicitation)


class Answers:
    """An elicitation callback answering each question with the next reply
    (a callable of the request's schema), and keeping what it was asked."""

    def __init__(self, *replies):
        self.replies = list(replies)
        self.asked = []

    async def __call__(self, context, params):
        self.asked.append(params)
        return self.replies.pop(0)(params.requested_schema)


def accept(answer):
    return lambda schema: ElicitResult(action="accept", content={"answer": answer})


def text_of(result):
    return "".join(block.text for block in result.content if getattr(block, "text", None))


async def tools_are_agents(url):
    async with client(url) as mcp:
        tools = (await mcp.list_tools()).tools
        names = [tool.name for tool in tools]
        check("assistant" in names, f"each agent is a tool: {names}")
        schema = tools[names.index("assistant")].input_schema
        check(schema["required"] == ["prompt"], "the tool takes a prompt")
        check("thread_id" in schema["properties"], "and a thread id")


async def questions_in_the_callback(url, mode):
    answers = Answers(accept("Pro"))
    progress = []

    async def on_progress(value, total, message):
        progress.append(message)

    async with client(url, mode=mode, elicitation=answers) as mcp:
        result = await mcp.call_tool("assistant", {"prompt": "Help me pick a plan"}, progress_callback=on_progress)
        asked = answers.asked[0]
        check(asked.message == "Which plan should I set up for you?", f"{mode}: the question is asked")
        answer = asked.requested_schema["properties"]["answer"]
        check(answer["type"] == "string", f"{mode}: single-select is a string")
        check(
            answer["oneOf"] == [{"const": label, "title": label} for label in ["Basic", "Pro", "Enterprise"]],
            f"{mode}: with titled options",
        )
        check(
            answer["description"].split("\n")
            == [
                "Basic: One project, community support",
                "Pro: Unlimited projects, email support",
                "Enterprise: SSO, audit logs and a dedicated engineer",
            ],
            f"{mode}: what each option means is the field's description: {answer.get('description')}",
        )
        check(not result.is_error, f"{mode}: the run completes")
        check("Pro" in text_of(result), f"{mode}: the final text quotes the answer: {text_of(result)}")
        structured = result.structured_content
        check(structured["status"] == "completed", f"{mode}: structuredContent says completed")
        check(structured["finalText"] == text_of(result), f"{mode}: and carries the final text")
        print(f"run: {structured['runId']}", flush=True)

        answers = Answers(accept(["Olives", "Basil"]))
        mcp.session._elicitation_callback = answers
        result = await mcp.call_tool("assistant", {"prompt": "multi"})
        answer = answers.asked[0].requested_schema["properties"]["answer"]
        check(answer["type"] == "array", f"{mode}: multi-select is an array")
        check([o["const"] for o in answer["items"]["anyOf"]] == ["Mushrooms", "Olives", "Peppers", "Basil"], "of the options")
        check(answer["description"].startswith("Mushrooms: Roasted chestnut mushrooms\n"), f"{mode}: described: {answer.get('description')}")
        check("Olives, Basil" in text_of(result), f"{mode}: both labels answered: {text_of(result)}")

        answers = Answers(accept("Ada"))
        mcp.session._elicitation_callback = answers
        result = await mcp.call_tool("assistant", {"prompt": "free"})
        check(answers.asked[0].requested_schema["properties"]["answer"] == {"type": "string", "title": "Answer"}, "free text is a string")
        check("Ada" in text_of(result), f"{mode}: the free-text answer reaches the model: {text_of(result)}")

        answers = Answers(lambda schema: ElicitResult(action="decline"))
        mcp.session._elicitation_callback = answers
        result = await mcp.call_tool("assistant", {"prompt": "free"})
        check(not result.is_error and result.structured_content["status"] == "completed", f"{mode}: a decline lets the run finish")
        check("declined" in text_of(result).lower(), f"{mode}: the model learns of the decline: {text_of(result)}")

        answers = Answers(lambda schema: ElicitResult(action="cancel"))
        mcp.session._elicitation_callback = answers
        result = await mcp.call_tool("assistant", {"prompt": "free"})
        check(result.is_error, f"{mode}: a cancel ends the call with an error")
        check(result.structured_content["status"] == "cancelled", f"{mode}: the run is cancelled")


async def approvals_remembered(url, mode):
    """`careful` asks before each ask_user call. Approved in its form with
    `remember: "thread"`, the thread's next run asks its question without
    asking for approval first; a run on no thread offers the run only."""
    thread = f"mcp-remember-{mode}"

    def approve(remember):
        def reply(schema):
            check(schema["required"] == ["approved"], f"{mode}: an approval form")
            return ElicitResult(action="accept", content={"approved": True, "remember": remember})

        return reply

    answers = Answers(approve("thread"), accept("Pro"))
    async with client(url, mode=mode, elicitation=answers) as mcp:
        result = await mcp.call_tool("careful", {"prompt": "Help me pick a plan", "thread_id": thread})
        offered = answers.asked[0].requested_schema["properties"]["remember"]["oneOf"]
        check([o["const"] for o in offered] == ["run", "thread"], f"{mode}: on a thread, the run or the conversation: {offered}")
        check(answers.asked[0].message.startswith("Approve this call of ask_user?"), f"{mode}: asked to approve first")
        check(answers.asked[1].message == "Which plan should I set up for you?", f"{mode}: then the question")
        check("Pro" in text_of(result), f"{mode}: the run completes with the answer: {text_of(result)}")

        answers = Answers(accept("Basic"))
        mcp.session._elicitation_callback = answers
        result = await mcp.call_tool("careful", {"prompt": "Help me pick a plan", "thread_id": thread})
        check(
            [asked.message for asked in answers.asked] == ["Which plan should I set up for you?"],
            f"{mode}: the thread's next run is not asked to approve: {[a.message for a in answers.asked]}",
        )
        check("Basic" in text_of(result), f"{mode}: and completes: {text_of(result)}")
        print(f"granted run: {result.structured_content['runId']}", flush=True)

        answers = Answers(approve("thread"), approve("run"), accept("Pro"))
        mcp.session._elicitation_callback = answers
        result = await mcp.call_tool("careful", {"prompt": "Help me pick a plan"})
        offered = answers.asked[0].requested_schema["properties"]["remember"]["oneOf"]
        check([o["const"] for o in offered] == ["run"], f"{mode}: on no thread, the run only: {offered}")
        again = answers.asked[1].message
        check(again.startswith("The answer was not accepted ("), f"{mode}: remembering in no thread is refused, and asked again: {again}")
        check("remembered in the run only" in again, f"{mode}: in words: {again}")
        check("Approve this call of ask_user?" in again, f"{mode}: the same approval: {again}")
        check("Pro" in text_of(result), f"{mode}: the second answer is taken, in the same call: {text_of(result)}")


async def invalid_answer_is_asked_again(url, mode):
    """An answer Resume refuses is asked again in the same call, with the
    reason; after three refusals the call says so and how to answer."""
    answers = Answers(accept("Platinum"), accept("Pro"))
    async with client(url, mode=mode, elicitation=answers) as mcp:
        result = await mcp.call_tool("assistant", {"prompt": "Help me pick a plan"})
        check(len(answers.asked) == 2, f"{mode}: an answer that fits no option is asked again")
        again = answers.asked[1].message
        check(again.startswith("The answer was not accepted (") and "Platinum" in again, f"{mode}: with the reason: {again}")
        check(again.endswith("Which plan should I set up for you?"), f"{mode}: and the question: {again}")
        check(not result.is_error and "Pro" in text_of(result), f"{mode}: the second answer completes the run: {text_of(result)}")

    if mode != "legacy":
        return
    answers = Answers(*[accept("Platinum")] * 3)
    async with client(url, mode=mode, elicitation=answers) as mcp:
        result = await mcp.call_tool("assistant", {"prompt": "Help me pick a plan"})
        check(len(answers.asked) == 3, "asked three times")
        check(result.is_error, "three refused answers are an error result")
        text = text_of(result)
        check("not accepted" in text and "Resume" in text, f"the client is told why and how to answer: {text}")
        check("calling this tool again starts a new run" in text, f"and not to call the tool again: {text}")
        check(result.structured_content["status"] == "suspended", "the run still waits")


async def without_elicitation(url):
    async with client(url) as mcp:
        result = await mcp.call_tool("assistant", {"prompt": "Help me pick a plan"})
        text = text_of(result)
        check("[Question for user]: Which plan should I set up for you?" in text, "a client without elicitation reads the question")
        check("Options: Basic, Pro, Enterprise" in text, "with its options")
        run_id = result.structured_content["runId"]
        check(run_id in text and "Resume" in text, "the run id and how to answer it")
        check(result.structured_content["status"] == "suspended", "the run waits")
        print(f"waiting run: {run_id}", flush=True)


async def answered_elsewhere(url):
    """The question is answered through gRPC (by tests/api/mcp.rs) while
    this call waits in the callback: agentd cancels its elicitation/create
    (notifications/cancelled), which ends the callback as a host closes its
    form, and the call goes on with the gRPC answer; a late answer to the
    withdrawn form is refused in words."""
    loop = asyncio.get_running_loop()
    withdrawn = []
    sessions = []

    async def keep_session(response):
        if response.headers.get("mcp-session-id"):
            sessions.append(response.headers["mcp-session-id"])

    async def never_answers(context, params):
        print("asked", flush=True)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            withdrawn.append(context.request_id)
            raise

    http = httpx2.AsyncClient(timeout=60, event_hooks={"response": [keep_session]})
    transport = streamable_http_client(url, http_client=http)
    async with Client(transport, mode="legacy", elicitation_callback=never_answers) as mcp:
        result = await mcp.call_tool("assistant", {"prompt": "Help me pick a plan"})
        check(len(withdrawn) == 1, f"the form is withdrawn (notifications/cancelled): {withdrawn}")
        text = text_of(result)
        check("Enterprise" in text, f"the call continues with the gRPC answer: {text}")
        check(
            "The form was withdrawn: the question was answered through gRPC" in text,
            f"and says the question was answered elsewhere: {text}",
        )
        line = await loop.run_in_executor(None, sys.stdin.readline)
        check(line.strip() == "answered", "answered through gRPC meanwhile")
        late = await http.post(
            url,
            json={"jsonrpc": "2.0", "id": withdrawn[0], "result": {"action": "accept", "content": {"answer": "Pro"}}},
            headers={"mcp-session-id": sessions[-1], "accept": "application/json, text/event-stream"},
        )
        check(late.status_code == 409, f"a late answer to the withdrawn form is refused: {late.status_code}")
        message = late.json()["error"]["message"]
        check(
            message.startswith("This answer was not used. The form was withdrawn: the question was answered through gRPC"),
            f"in words: {message}",
        )


async def answered_elsewhere_retried(url):
    """2026-07-28: the question of an input-required result is answered
    through gRPC (by tests/api/mcp.rs) before the client retries with its
    answer; the retried call says its answer was not used and what the run
    became."""
    async with client(url, mode="2026-07-28", elicitation=Answers()) as mcp:
        first = await mcp.session.call_tool("assistant", {"prompt": "Help me pick a plan"}, allow_input_required=True)
        check(first.result_type == "input_required", "2026-07-28: an input-required result")
        print("asked", flush=True)
        line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        check(line.strip() == "answered", "2026-07-28: answered through gRPC meanwhile")
        answer = {"answer": {"action": "accept", "content": {"answer": "Pro"}}}
        done = await mcp.session.call_tool(
            "assistant", {"prompt": "Help me pick a plan"}, input_responses=answer, request_state=first.request_state
        )
        text = text_of(done)
        check(
            "This answer was not used: the question was answered through gRPC" in text,
            f"2026-07-28: the late answer is said to be unused: {text}",
        )
        check("Enterprise" in text, f"2026-07-28: with what the run became: {text}")
        check(done.structured_content["status"] == "completed", "2026-07-28: the run completed")


async def keys_and_tenants(url, acme, globex):
    refused = False
    try:
        async with client(url) as mcp:
            await mcp.list_tools()
    except Exception:  # the SDK reports the HTTP status as an error of its own
        refused = True
    check(refused, "the SDK without a key is refused")
    async with httpx2.AsyncClient() as http:
        response = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        check(response.status_code == 401, f"no key is 401: {response.status_code}")
        response = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={"authorization": "Bearer wrong"})
        check(response.status_code == 401, f"a wrong key is 401: {response.status_code}")

    async with client(url, acme, mode="2026-07-28", elicitation=Answers(accept("Pro"))) as mine:
        first = await mine.session.call_tool("assistant", {"prompt": "Help me pick a plan"}, allow_input_required=True)
        check(first.result_type == "input_required", "a 2026-07-28 client gets an input-required result")
        request = first.input_requests["answer"]
        check(request.params.message == "Which plan should I set up for you?", "asking the question")
        state = first.request_state
        answer = {"answer": {"action": "accept", "content": {"answer": "Pro"}}}
        async with client(url, globex, mode="2026-07-28") as theirs:
            try:
                await theirs.session.call_tool("assistant", {"prompt": "Help me pick a plan"}, input_responses=answer, request_state=state)
                check(False, "another tenant cannot answer")
            except MCPError as error:
                check("requestState" in str(error), f"another tenant's state is refused: {error}")
        try:
            await mine.session.call_tool("assistant", {"prompt": "x"}, input_responses=answer, request_state=state[:-2] + "AA")
            check(False, "an altered state is refused")
        except MCPError as error:
            check("requestState" in str(error), "an altered state is refused")
        done = await mine.session.call_tool("assistant", {"prompt": "Help me pick a plan"}, input_responses=answer, request_state=state)
        check("Pro" in text_of(done), "the owner's retry answers it")


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--open", required=True)
    parser.add_argument("--keyed", required=True)
    parser.add_argument("--acme-key", required=True)
    parser.add_argument("--globex-key", required=True)
    args = parser.parse_args()
    open_url = f"http://{args.open}/mcp"
    keyed_url = f"http://{args.keyed}/mcp"
    await tools_are_agents(open_url)
    await questions_in_the_callback(open_url, "legacy")
    await questions_in_the_callback(open_url, "2026-07-28")
    await approvals_remembered(open_url, "legacy")
    await approvals_remembered(open_url, "2026-07-28")
    await invalid_answer_is_asked_again(open_url, "legacy")
    await invalid_answer_is_asked_again(open_url, "2026-07-28")
    await without_elicitation(open_url)
    await keys_and_tenants(keyed_url, args.acme_key, args.globex_key)
    await answered_elsewhere(open_url)
    await answered_elsewhere_retried(open_url)
    print('{"result": "passed"}', flush=True)


if __name__ == "__main__":
    asyncio.run(main())
