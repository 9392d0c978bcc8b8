"""Which store a CLI command works on: `--config F` (its `store:`, `keys:` and state dir), else
`--state-dir D` or the default state directory (SQLite)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from mcpward.config.loader import ConfigError, load_config
from mcpward.store.factory import StoreContext, context_from_config, sqlite_context
from mcpward.store.paths import resolve_state_dir, state_dir_path


class StoreChoiceError(Exception):
    """The config named by `--config` cannot be loaded."""


def cli_store_context(
    state_dir: Path | None, config: Path | None, *, create: bool = True
) -> StoreContext:
    """`create`: make the state directory if missing (`mcpward doctor` passes False)."""
    locate = resolve_state_dir if create else state_dir_path
    if config is None:
        return sqlite_context(locate(state_dir))
    try:
        loaded = load_config(config)
    except ConfigError as exc:
        raise StoreChoiceError(str(exc)) from None
    context = context_from_config(loaded.config, config, create=create)
    if state_dir is not None:
        directory = locate(state_dir)
        keys = directory if loaded.config.keys.dir is None else context.keys_dir
        context = dataclasses.replace(context, state_dir=directory, keys_dir=keys)
    return context
