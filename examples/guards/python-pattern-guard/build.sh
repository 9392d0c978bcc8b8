#!/bin/sh
# Build python-pattern-guard.wasm from app.py with componentize-py (10-25 s on two cores).
set -eu
cd "$(dirname "$0")"
mkdir -p wit
mcpward guard wit > wit/guard.wit
componentize-py -d wit -w security-guard componentize app -o python-pattern-guard.wasm
mcpward guard check python-pattern-guard.wasm
