"""A minimal, fast MCP upstream for benchmarks: raw JSON-RPC on stdio, no SDK overhead.

It answers initialize, tools/list (BENCH_TOOLS tools) and tools/call (echo), so that what the
benchmark measures is the gateway, not the server.
"""

import json
import os
import sys

TOOLS = [
    {
        "name": f"tool_{i}" if i else "echo",
        "description": f"Benchmark tool number {i}: echoes its input back.",
        "inputSchema": {
            "type": "object",
            "properties": {"message": {"type": "string", "description": "Text to echo."}},
            "required": ["message"],
        },
        "annotations": {"readOnlyHint": True},
    }
    for i in range(int(os.environ.get("BENCH_TOOLS", "10")))
]


def main() -> None:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        msg = json.loads(line)
        if "id" not in msg or "method" not in msg:
            continue
        method = msg["method"]
        if method == "initialize":
            result = {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "bench", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            text = json.dumps(msg["params"].get("arguments", {}))
            result = {"content": [{"type": "text", "text": text}], "isError": False}
        else:
            out.write(
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": msg["id"],
                        "error": {"code": -32601, "message": "nope"},
                    }
                ).encode()
                + b"\n"
            )
            out.flush()
            continue
        out.write(
            json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode() + b"\n"
        )
        out.flush()


if __name__ == "__main__":
    main()
