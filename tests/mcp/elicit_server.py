"""An MCP server whose tools ask for input (elicitation), written with the
official MCP Python SDK, for agentd's tests.

    python elicit_server.py stdio
    python elicit_server.py http PORT

Tools:
- book(destination): asks for a booking form (several field types). Works
  on both protocol generations: on 2026-07-28 the SDK answers the call with
  an input-required result, on 2025-11-25 it sends elicitation/create on
  the live session. The result says exactly what the server received.
- pay(amount): asks the person to open a payment page (URL mode).
- pay_at(url): asks the person to open `url` (URL mode), whatever it is;
  says what came back, or the error the client answered with.
- generation(): the protocol version the call came with.
- files(account): refuses the first call for an account with "URL
  elicitation required" (-32042: sign in on a page first); lists the files
  when called again.
- outcome(n): what the n-th call of book ended with, once it has ended.

With ELICIT_SERVER_PID_FILE set, it writes its process id there when it
starts (for the test that it does not outlive agentd).
"""

import asyncio
import json
import os
import sys
from typing import Annotated, Literal

from mcp_types import ElicitRequest, ElicitRequestURLParams, InputRequiredResult
from pydantic import BaseModel, Field

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.shared.exceptions import UrlElicitationRequiredError

server = MCPServer("travel")

# What each call of book ended with, in order, for outcome() to wait on.
outcomes: list[str] = []
ended: asyncio.Condition | None = None


async def record(outcome: str) -> str:
    global ended
    ended = ended or asyncio.Condition()
    async with ended:
        outcomes.append(outcome)
        ended.notify_all()
    return outcome


class Booking(BaseModel):
    email: str = Field(description="Where the ticket goes", json_schema_extra={"format": "email"})
    nights: int = Field(ge=1, le=30, description="How many nights")
    budget: float = Field(default=100.0, description="Per night")
    breakfast: bool = Field(default=False)
    seat: Literal["window", "aisle"] = Field(default="window")
    extras: list[Literal["wifi", "parking", "pool"]] = Field(default_factory=list)


def ask_booking(destination: str) -> Elicit[Booking]:
    return Elicit(f"Book a stay in {destination}?", Booking)


@server.tool()
async def book(
    destination: str,
    booking: Annotated[ElicitationResult[Booking], Resolve(ask_booking)],
) -> str:
    """Books a stay, asking the person for the details."""
    if isinstance(booking, AcceptedElicitation):
        received = booking.data.model_dump(mode="json")
        return await record(f"booked {destination}: " + json.dumps(received, sort_keys=True))
    return await record(f"not booked ({booking.action})")


@server.tool()
async def pay(amount: int, ctx: Context) -> str | InputRequiredResult:
    """Asks the person to pay on a page of its own."""
    url = f"https://pay.example.com/checkout?amount={amount}"
    if (ctx.protocol_version or "") >= "2026-07-28":
        responses = ctx.input_responses or {}
        if "pay" in responses:
            if ctx.request_state != "pay-state":
                return f"payment: the state came back as {ctx.request_state!r}"
            response = responses["pay"]
            action = response.get("action") if isinstance(response, dict) else response.action
            return f"payment: {action}"
        request = ElicitRequest(
            params=ElicitRequestURLParams(
                message=f"Pay {amount} EUR", url=url, elicitation_id=f"pay-{amount}"
            )
        )
        return InputRequiredResult(input_requests={"pay": request}, request_state="pay-state")
    result = await ctx.elicit_url(f"Pay {amount} EUR", url, f"pay-{amount}")
    return f"payment: {result.action}"


@server.tool()
async def pay_at(url: str, ctx: Context) -> str | InputRequiredResult:
    """Asks the person to open a page at `url`."""
    if (ctx.protocol_version or "") >= "2026-07-28":
        responses = ctx.input_responses or {}
        if "pay" in responses:
            response = responses["pay"]
            action = response.get("action") if isinstance(response, dict) else response.action
            return f"payment: {action}"
        request = ElicitRequest(
            params=ElicitRequestURLParams(message="Pay here", url=url, elicitation_id="pay-at")
        )
        return InputRequiredResult(input_requests={"pay": request}, request_state="pay-state")
    try:
        result = await ctx.elicit_url("Pay here", url, "pay-at")
    except Exception as error:  # the client's JSON-RPC error
        return f"the client refused: {error}"
    return f"payment: {result.action}"


@server.tool()
async def outcome(n: int) -> str:
    """What the n-th call of book ended with (waits for it, up to 20 s)."""
    global ended
    ended = ended or asyncio.Condition()
    async with ended:
        await asyncio.wait_for(ended.wait_for(lambda: len(outcomes) >= n), 20)
    return outcomes[n - 1]


# The accounts whose person was sent to the sign-in page.
signed_in: set[str] = set()


@server.tool()
async def files(account: str) -> str:
    """Lists an account's files, once its person has signed in on a page."""
    if account not in signed_in:
        # The page would sign the person in; here asking is enough.
        signed_in.add(account)
        raise UrlElicitationRequiredError(
            [
                ElicitRequestURLParams(
                    message=f"Sign in to the files of {account}",
                    url=f"https://files.example.com/sign-in?account={account}",
                    elicitation_id=f"sign-in-{account}",
                )
            ]
        )
    return f"files of {account}: notes.txt"


@server.tool()
async def generation(ctx: Context) -> str:
    """The protocol version of this call."""
    return ctx.protocol_version or "unknown"


if __name__ == "__main__":
    if os.environ.get("ELICIT_SERVER_PID_FILE"):
        with open(os.environ["ELICIT_SERVER_PID_FILE"], "w") as pid_file:
            pid_file.write(str(os.getpid()))
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", port=int(sys.argv[2]))
    else:
        server.run("stdio")
