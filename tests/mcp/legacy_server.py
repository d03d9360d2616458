"""A stdio MCP server that speaks only the 2025-11-25 protocol generation,
in plain JSON-RPC (no SDK): `initialize` and `tools/list` are answered,
every other request (`server/discover` among them) is "Method not found",
as a server that predates 2026-07-28 answers. For agentd's test that
pinning 2026-07-28 against it says so."""

import json
import sys

for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message or "method" not in message:
        continue
    if message["method"] == "initialize":
        result = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "legacy", "version": "1"},
        }
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
    elif message["method"] == "tools/list":
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": {"tools": []}}
    else:
        error = {"code": -32601, "message": f"Method not found: {message['method']}"}
        reply = {"jsonrpc": "2.0", "id": message["id"], "error": error}
    print(json.dumps(reply), flush=True)
