"""The options several commands share: one name, one type, one help text in every command.

`tests/cli/test_help_wording.py` walks every command and fails if a name is worded two ways.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

CONFIG = typer.Option(
    "--config", "-c", help="A gateway config file (YAML): the upstreams, state directory and store."
)
ConfigOpt = Annotated[Path | None, CONFIG]
RequiredConfigOpt = Annotated[Path, CONFIG]

StateDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--state-dir",
        help="mcpward's state directory (default: the config's state_dir, $MCPWARD_STATE_DIR, "
        "or ~/.local/state/mcpward).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
OutputOpt = Annotated[
    Path | None,
    typer.Option("--output", "-o", help="Where to write it (without it: standard output)."),
]
SinceOpt = Annotated[
    str | None, typer.Option("--since", help="Only what is newer: 24h, 7d, 30d or an ISO date.")
]
TimeoutOpt = Annotated[
    float, typer.Option("--timeout", help="Seconds to wait for the server's lists.")
]
KindOpt = Annotated[
    str, typer.Option("--kind", "-k", help="tool | prompt | resource | resource_template | server")
]
AllOpt = Annotated[bool, typer.Option("--all", help="The whole upstream instead of one NAME.")]
ByOpt = Annotated[
    str | None,
    typer.Option("--by", help="Who is acting, recorded with the result (default: the OS user)."),
]
UPSTREAM_ID = typer.Option(
    "--id", help="The upstream's id: the name its pins, holds and receipts use."
)
UpstreamIdOpt = Annotated[str | None, UPSTREAM_ID]
ForceOpt = Annotated[
    bool, typer.Option("--force", help="Go ahead although it overwrites a file, and edits to it.")
]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Show the diff; write nothing.")]
ClientFileOpt = Annotated[
    Path | None,
    typer.Option("--config-file", help="The client's config file, if not at its default place."),
]
TokenFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--token-file", help="File (mode 600) holding the token whoever connects must present."
    ),
]
AllowNonLoopbackOpt = Annotated[
    bool,
    typer.Option(
        "--allow-non-loopback",
        help="Acknowledge a listening address beyond this host (not 127.0.0.1 or ::1).",
    ),
]
VerboseOpt = Annotated[
    bool, typer.Option("--verbose", help="List each miss (and false positive) by id.")
]


def example(*lines: str) -> str:
    """A command's help epilog: one or more `mcpward ...` lines, each shown as an example."""
    return "\n\n".join(f"Example: {line}" for line in lines)
