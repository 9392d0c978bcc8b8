"""Compiled guard code cached in the state dir, keyed by the module's SHA-256 and the runtime.

Deserialising compiled code runs it as native code, so only files this gateway wrote are used:
each carries an HMAC under a key kept in the state dir (0600); anything else is recompiled.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import stat
import tempfile
from pathlib import Path

from wasmtime import Engine, WasmtimeError
from wasmtime.component import Component

from mcpward.store.keys import load_or_create_secret

log = logging.getLogger("mcpward.guards.wasm")

_MAGIC = b"mcpward-cwasm-1\n"
_MAC_LEN = 32


class CompiledCache:
    """`<state_dir>/wasm-cache/<sha256>.<runtime tag>.cwasm`, each file MAC'd with the cache key."""

    def __init__(self, state_dir: Path, cache_tag: str) -> None:
        self.directory = state_dir / "wasm-cache"
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._tag = cache_tag
        self._key = load_or_create_secret(self.directory / "cache.key")

    def path_for(self, sha256: str) -> Path:
        return self.directory / f"{sha256}.{self._tag}.cwasm"

    def _mac(self, sha256: str, payload: bytes | bytearray | memoryview) -> bytes:
        mac = hmac.new(self._key, digestmod=hashlib.sha256)
        mac.update(f"{sha256}\n{self._tag}\n".encode())
        mac.update(payload)
        return mac.digest()

    def load(self, engine: Engine, sha256: str) -> Component | None:
        """The cached component, or None if absent, foreign, damaged or made by another runtime."""
        path = self.path_for(sha256)
        try:
            info = path.lstat()
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
                log.warning(
                    "ignoring compiled-code cache file %s: not a private regular file", path.name
                )
                return None
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning("cannot read compiled-code cache file %s: %s", path.name, exc.strerror)
            return None
        head = len(_MAGIC) + _MAC_LEN
        if not data.startswith(_MAGIC) or len(data) <= head:
            log.warning("ignoring compiled-code cache file %s: unknown format", path.name)
            return None
        payload = memoryview(data)[head:]
        if not hmac.compare_digest(data[len(_MAGIC) : head], self._mac(sha256, payload)):
            log.warning("ignoring compiled-code cache file %s: its MAC does not verify", path.name)
            return None
        try:
            return Component.deserialize(engine, payload.tobytes())
        except WasmtimeError as exc:
            log.warning(
                "ignoring compiled-code cache file %s: %s", path.name, str(exc).splitlines()[0]
            )
            return None

    def store(self, component: Component, sha256: str) -> None:
        """Write atomically (0600); a failure to cache is logged, never fatal."""
        path = self.path_for(sha256)
        try:
            payload = component.serialize()
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=".cwasm")
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(_MAGIC)
                    out.write(self._mac(sha256, payload))
                    out.write(payload)
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except (OSError, WasmtimeError) as exc:
            log.warning("cannot write compiled-code cache file %s: %s", path.name, exc)
