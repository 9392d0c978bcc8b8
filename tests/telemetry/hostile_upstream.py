"""A hostile MCP upstream (raw JSON-RPC over stdio): it lists HOSTILE_TOOLS distinct tool names
(default 10,000, some with characters no label should carry) and answers every call."""

import json
import os
import sys

COUNT = int(os.environ.get("HOSTILE_TOOLS", "10000"))


def name(i: int) -> str:
    return f"t{i:05d}" if i % 10 else f't{i:05d} "quoted"\n{{evil="1"}}'


TOOLS = [
    {"name": name(i), "description": "a tool", "inputSchema": {"type": "object"}}
    for i in range(COUNT)
]


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg or "method" not in msg:
        continue
    rid, method = msg["id"], msg["method"]
    if method == "initialize":
        result = {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "ok"}]}
    elif method in ("prompts/list", "resources/list", "resources/templates/list"):
        result = {method.split("/")[0].replace("templates", "resourceTemplates"): []}
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no"}})
        continue
    send({"jsonrpc": "2.0", "id": rid, "result": result})
