"""The installation checks of `mcpward doctor`: state directory, key files, stores, wired clients,
and the runtimes (Node/npx) that wrapped servers need. Each check only looks; none creates state.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path, PurePath

from mcpward.contracts.holds import Commands, hold_headline
from mcpward.contracts.model import HoldRecord
from mcpward.contracts.store import PinStoreError
from mcpward.evidence.settings import EvidencePaths
from mcpward.store.factory import PINS_KEY_NAME, StoreContext, sqlite_context
from mcpward.store.keys import KeyFileError, read_secret
from mcpward.store.ledger_sqlite import LedgerStoreError, read_snapshot
from mcpward.store.pins_sqlite import DB_NAME, SqlitePinStore
from mcpward.wiring.backup import WIRING_DIR, WiringStore
from mcpward.wiring.clients import CLIENTS, ClientFormat, default_config_path
from mcpward.wiring.document import ConfigRefused, read_document
from mcpward.wiring.entries import EntryKind, ServerEntry
from mcpward.wiring.findings import Finding, Level
from mcpward.wiring.launcher import EXECUTABLE_NAMES
from mcpward.wiring.masking import printable
from mcpward.wiring.store_checks import check_key_refs, check_postgres

NODE_COMMANDS = {"npx", "node", "npm", "pnpm", "pnpx", "yarn"}
MIN_NODE_MAJOR = 18  # the oldest Node the MCP SDK's servers support
MAX_KEY_FILES = 256


def _private(path: Path, kind: str, mode_fix: str) -> Iterator[Finding]:
    """Owned by us, nothing for group or others."""
    info = path.stat()
    if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        yield Finding(
            Level.FIX, kind, f"{path} belongs to uid {info.st_uid}, not to you", f"chown {path}"
        )
    mode = info.st_mode & 0o777
    if mode & 0o077:
        yield Finding(
            Level.FIX,
            kind,
            f"{path} is open to group/others (mode {mode:o})",
            f"chmod {mode_fix} {path}",
        )


def check_state_dir(state_dir: Path) -> list[Finding]:
    if not state_dir.exists():
        return [
            Finding(Level.NOTE, "state", f"{state_dir} does not exist yet (created on first run)")
        ]
    if not state_dir.is_dir():
        return [Finding(Level.FIX, "state", f"{state_dir} is not a directory", "move it away")]
    found = list(_private(state_dir, "state", "700"))
    return found or [Finding(Level.OK, "state", f"{state_dir} (mode 700, yours)")]


def _key_files(state_dir: Path) -> list[Path]:
    found: list[Path] = []
    for path in state_dir.rglob("*.key"):
        found.append(path)
        if len(found) >= MAX_KEY_FILES:
            break
    return sorted(found)


def check_keys(state_dir: Path) -> list[Finding]:
    if not state_dir.is_dir():
        return []
    findings: list[Finding] = []
    keys = _key_files(state_dir)
    for path in keys:
        problems = list(_private(path, "keys", "600"))
        findings.extend(problems)
        if problems:
            continue
        try:
            read_secret(path)
        except (KeyFileError, OSError) as exc:
            findings.append(Finding(Level.FIX, "keys", str(exc), f"restore {path} from a backup"))
    for database in (state_dir / DB_NAME, EvidencePaths.resolve(state_dir).ledger):
        if database.exists():
            findings.extend(_private(database, "keys", "600"))
    # backups of client configs hold their env values (tokens)
    for backup in sorted((state_dir / WIRING_DIR).glob("*"))[:MAX_KEY_FILES]:
        if backup.is_file():
            findings.extend(_private(backup, "keys", "600"))
    if not any(f.level == Level.FIX for f in findings):
        summary = f"{len(keys)} key file(s), each 0600 and yours" if keys else "no key yet"
        findings.append(Finding(Level.OK, "keys", summary))
    return findings


def check_stores(context: StoreContext) -> list[Finding]:
    """The SQLite pin store and ledger of a state directory, opened with the store's pins key."""
    findings: list[Finding] = []
    state_dir = context.state_dir
    pins_db, pins_key = state_dir / DB_NAME, context.keys_dir / PINS_KEY_NAME
    if pins_db.exists() and context.pins_ref is None and not pins_key.exists():
        findings.append(
            Finding(
                Level.FIX,
                "store",
                f"{pins_db} exists but its key {pins_key} is missing: no pin can be verified",
                f"restore {pins_key} from a backup (or move {pins_db} away to start over)",
            )
        )
    elif pins_db.exists():
        try:
            store = SqlitePinStore(state_dir, key=context.pins_key(create=False))
            try:
                upstreams, holds = store.upstreams(), store.holds()
            finally:
                store.close()
            findings.append(
                Finding(
                    Level.OK,
                    "store",
                    f"pin store {pins_db}: {len(upstreams)} upstream(s), {len(holds)} open hold(s)",
                )
            )
            findings.extend(hold_findings(holds, context.cli_args()))
        except PinStoreError as exc:
            findings.append(Finding(Level.FIX, "store", str(exc), "see docs/contracts.md"))
    else:
        findings.append(Finding(Level.NOTE, "store", "no pin store yet (created on first run)"))
    ledger = EvidencePaths.resolve(state_dir).ledger
    if ledger.exists():
        try:
            with read_snapshot(ledger) as view:
                size = view.size()
            findings.append(Finding(Level.OK, "store", f"ledger {ledger}: {size} entries"))
        except (LedgerStoreError, OSError) as exc:
            findings.append(Finding(Level.FIX, "store", str(exc), "mcpward ledger verify"))
    return findings


def hold_findings(holds: list[HoldRecord], store_args: tuple[str, ...]) -> list[Finding]:
    """Open holds first of all: each one waits for a person (doctor exits 0: nothing is broken)."""
    enforced = [h for h in holds if h.enforced]
    if not enforced:
        return []
    commands = Commands(store_args)
    names = "; ".join(hold_headline(h) for h in enforced[:5])
    more = f"; and {len(enforced) - 5} more" if len(enforced) > 5 else ""
    return [
        Finding(
            Level.WARN,
            "holds",
            f"{len(enforced)} open hold(s), their calls are held until a person reviews them: "
            f"{names}{more}",
            f"{commands.holds()} (review: {commands.review(enforced[0])})",
        )
    ]


def _original_command(entry: ServerEntry) -> str | None:
    args = entry.args
    if "--" not in args:
        return None
    rest = args[args.index("--") + 1 :]
    return rest[0] if rest else None


def _missing(command: str) -> bool:
    if PurePath(command).is_absolute():
        return not os.access(command, os.X_OK)
    return shutil.which(command) is None


def _check_config(client: ClientFormat, path: Path) -> tuple[list[Finding], list[ServerEntry]]:
    """One client config file: servers behind mcpward or not, and wired entries that broke."""
    subject = f"client {client.name}"
    custom = "" if path == default_config_path(client.name) else f" --config-file {path}"
    try:
        doc = read_document(path, client)
    except ConfigRefused as exc:
        return [Finding(Level.NOTE, subject, f"cannot be read as expected: {exc}")], []
    by_kind = {kind: [e for e in doc.entries if e.kind == kind] for kind in EntryKind}
    findings = [
        Finding(
            Level.FIX,
            subject,
            f"{printable(entry.label)} starts {entry.command}, which is not there "
            "(mcpward moved or was uninstalled)",
            f"mcpward unwire {client.name}{custom} && mcpward wire {client.name}{custom}",
        )
        for entry in by_kind[EntryKind.WIRED]
        if _missing(entry.command)
    ]
    unwired = by_kind[EntryKind.STDIO] + by_kind[EntryKind.ENV_FILE]
    message = (
        f"{path}: {len(by_kind[EntryKind.WIRED])} server(s) behind mcpward, "
        f"{len(unwired)} not, {len(by_kind[EntryKind.REMOTE])} remote"
    )
    if unwired:
        names = ", ".join(printable(e.label) for e in unwired)
        message += f" (not behind mcpward: {names})"
        findings.append(
            Finding(Level.NOTE, subject, message, f"mcpward wire {client.name}{custom}")
        )
    else:
        findings.append(Finding(Level.OK, subject, message))
    return findings, by_kind[EntryKind.WIRED]


def check_clients(state_dir: Path) -> tuple[list[Finding], list[ServerEntry]]:
    """Each client at its default path, and every other file `wire` recorded; the wired entries."""
    findings: list[Finding] = []
    wired: list[ServerEntry] = []
    places = [(client, default_config_path(client.name)) for client in CLIENTS.values()]
    defaults = {(client.name, path.resolve()) for client, path in places}
    for marker in WiringStore(state_dir).markers():
        key = (marker.client, Path(marker.config_path))
        if marker.client in CLIENTS and key not in defaults:
            places.append((CLIENTS[marker.client], Path(marker.config_path)))
    for client, path in places:
        if not path.exists():
            findings.append(Finding(Level.NOTE, f"client {client.name}", f"no config at {path}"))
            continue
        found, entries = _check_config(client, path)
        findings.extend(found)
        wired.extend(entries)
    return findings, wired


def _node_major(node: str) -> int | None:
    try:
        done = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.match(r"v(\d+)\.", done.stdout.strip())
    return int(match.group(1)) if match else None


def check_runtimes(wired: list[ServerEntry]) -> list[Finding]:
    """The commands that wired entries wrap must be on PATH; npm servers need Node."""
    findings: list[Finding] = []
    commands = sorted({c for e in wired if (c := _original_command(e))})
    for command in commands:
        name = PurePath(command.replace("\\", "/")).name.lower()
        if name in EXECUTABLE_NAMES:
            continue
        if _missing(command):
            absolute = PurePath(command).is_absolute()
            hint = (
                "install Node.js (it brings npx)"
                if name in NODE_COMMANDS
                else (
                    f"reinstall the server at {command} or wire its new path"
                    if absolute
                    else f"install {command} or put it on PATH"
                )
            )
            where = "does not exist or cannot be run" if absolute else "is not on PATH"
            findings.append(
                Finding(
                    Level.FIX, "runtime", f"{command!r}, which a wired server runs, {where}", hint
                )
            )
    if any(PurePath(c).name.lower() in NODE_COMMANDS for c in commands):
        node = shutil.which("node")
        major = _node_major(node) if node else None
        if node is None:
            findings.append(
                Finding(Level.FIX, "runtime", "node is not on PATH", "install Node.js 18 or newer")
            )
        elif major is None or major < MIN_NODE_MAJOR:
            findings.append(
                Finding(
                    Level.FIX,
                    "runtime",
                    f"{node} is Node {major or 'of unknown version'}; npm MCP servers need "
                    f"{MIN_NODE_MAJOR}+",
                    "install Node.js 18 or newer",
                )
            )
        else:
            findings.append(Finding(Level.OK, "runtime", f"Node {major} at {node}"))
    return findings


def check_launcher() -> list[Finding]:
    found = shutil.which("mcpward")
    if found:
        return [Finding(Level.OK, "install", f"mcpward on PATH at {found}")]
    return [
        Finding(
            Level.NOTE,
            "install",
            "mcpward is not on PATH; `mcpward wire` writes the absolute path of this "
            "installation instead",
        )
    ]


def check_store(context: StoreContext) -> list[Finding]:
    """The store the config names (PostgreSQL, or SQLite in the state dir), and its key files
    when they are kept apart from the state dir (`keys.dir`)."""
    separate = check_keys(context.keys_dir) if context.keys_dir != context.state_dir else []
    if context.postgres:
        return [*separate, *check_postgres(context)]
    return [*separate, *(check_stores(context) if context.state_dir.is_dir() else [])]


def run_checks(state_dir: Path, store: StoreContext | None = None) -> list[Finding]:
    """Every check; `store` (from `--config`) names the store and its keys, else SQLite in
    `state_dir`."""
    context = store if store is not None else sqlite_context(state_dir)
    client_findings, wired = check_clients(state_dir)
    findings = [
        *check_launcher(),
        *check_state_dir(state_dir),
        *check_keys(state_dir),
        *check_store(context),
        *check_key_refs(context),
        *client_findings,
        *check_runtimes(wired),
    ]
    return sorted(findings, key=lambda f: f.subject != "holds")  # open holds lead
