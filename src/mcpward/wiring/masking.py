"""What of a client config may be printed: a unified diff in which secrets cannot appear.

Only the command, args and type of server entries are shown; every other string value (env,
headers, URLs, and whatever else the file holds), every comment, and args that look like
credentials print as "***"; the secret scanner redacts what it recognises in the rest of the
args, and control characters are escaped.
"""

from __future__ import annotations

import difflib
import re
from functools import lru_cache
from urllib.parse import urlsplit

from mcpward.guards.detection.secret_scanner import SecretScanner
from mcpward.wiring.document import ConfigDocument
from mcpward.wiring.jsonc import Node
from mcpward.wiring.rewrite import Edit, apply_edits

MASK = '"***"'
MAX_SHOWN_SEGMENT = 16
SHOWN_KEYS = ("command", "type")
_SECRET_FLAG = re.compile(r"(?i)(token|secret|passw|pwd|key|auth|credential|cookie|session)")
_URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/@\s]*:[^/@\s]*@")


@lru_cache(maxsize=1)
def _scanner() -> SecretScanner:
    return SecretScanner()


def redact(text: str) -> str:
    """The text with recognised credentials replaced by [REDACTED:kind]."""
    return _scanner().redact_text(text)[0]


def _shown_args(items: list[Node]) -> set[int]:
    """The args that may be shown: not the value after a secret-looking flag (`--token X`),
    not `--password=X`, not a URL with a password in it (`postgres://u:pw@db`)."""
    shown: set[int] = set()
    after_secret_flag = False
    for item in items:
        value = item.value if item.kind == "string" else ""
        flag, equals, _ = value.partition("=")
        if not (
            after_secret_flag
            or (equals and _SECRET_FLAG.search(flag))
            or _URL_PASSWORD.search(value)
        ):
            shown.add(item.start)
        after_secret_flag = (
            value.startswith("-") and not equals and bool(_SECRET_FLAG.search(value))
        )
    return shown


def masked_text(doc: ConfigDocument) -> str:
    """The document's text with every string value outside command/args/type replaced."""
    shown: set[int] = set()
    for entry in doc.entries:
        for key in SHOWN_KEYS:
            node = entry.node.get(key)
            if node is not None:
                shown.add(node.start)
        args = entry.node.get("args")
        if args is not None:
            shown.update(_shown_args(args.items))
    edits = [Edit(s.start, s.end, MASK) for s in doc.root.strings() if s.start not in shown]
    # comments are free text: a pasted token or password could sit in one
    edits += [
        Edit(start, end, "// ***" if doc.text.startswith("//", start) else "/* *** */")
        for start, end in doc.root.comments
    ]
    return apply_edits(doc.text, edits)


def masked_diff(before: ConfigDocument, after: ConfigDocument, after_label: str) -> str:
    """A unified diff of the two documents, masked and redacted; empty if they are equal."""
    lines = difflib.unified_diff(
        masked_text(before).splitlines(keepends=True),
        masked_text(after).splitlines(keepends=True),
        fromfile=f"{before.path} (now)",
        tofile=f"{after.path} ({after_label})",
    )
    text = "".join(printable(line.rstrip("\r\n")) + "\n" for line in lines)
    return redact(text)


def printable(text: str) -> str:
    """A name from a config file, safe for a terminal (control characters escaped)."""
    return "".join(c if c.isprintable() or c == "\t" else repr(c)[1:-1] for c in text)


def safe_url(url: str | None) -> str:
    """scheme://host[:port]/path of a URL without credentials, query or fragment; long path
    segments (some services put an API key in the path) print as "…"."""
    if not url:
        return "(no url)"
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(unparseable url)"
    segments = [s if len(s) <= MAX_SHOWN_SEGMENT else "…" for s in parts.path.split("/")]
    return printable(redact(f"{parts.scheme}://{host}{port}{'/'.join(segments)}"))
