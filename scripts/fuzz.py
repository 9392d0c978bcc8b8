#!/usr/bin/env python
"""The long fuzz run: the properties of tests/fuzz against real gateway processes for N minutes.

    .venv/bin/python scripts/fuzz.py --minutes 10 [--front stdio|http|all]
        [--direction client|upstream|all] [--results DIR] [--no-shrink]

It runs hypothesis in chunks with fresh random seeds, round-robin over the fronts and directions
asked for, until the time is up; prints the frames run per front and direction and each crasher
(shrunk to a minimal frame, saved under the results directory); exits 1 if it found any.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from tests.fuzz import runner  # noqa: E402
from tests.fuzz.gateways import MAX_FRAME_BYTES, HttpGateway, StdioGateway  # noqa: E402
from tests.fuzz.runner import Fuzzer, FuzzFailure, save_frame  # noqa: E402
from tests.fuzz.strategies import client_frames, upstream_scripts  # noqa: E402

FRONTS = {"stdio": ["stdio"], "http": ["http-legacy", "http-modern"]}
FRONTS["all"] = FRONTS["stdio"] + FRONTS["http"]
DIRECTIONS = {"client": ["client"], "upstream": ["upstream"], "all": ["client", "upstream"]}


def run_chunk(
    fuzzer: Fuzzer, front: str, direction: str, examples: int, shrink: bool
) -> FuzzFailure | None:
    """One hypothesis run of `examples` fresh examples; the (shrunk) failure, if any."""
    phases = [Phase.generate, Phase.shrink] if shrink else [Phase.generate]
    strategy: st.SearchStrategy[Any]
    step: Callable[[str, Any], None]
    if direction == "client":
        strategy, step = client_frames(MAX_FRAME_BYTES), fuzzer.client_frame
    else:
        strategy, step = upstream_scripts(MAX_FRAME_BYTES), fuzzer.upstream_script

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=False,
        phases=phases,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    @given(frame=strategy)
    def prop(frame: Any) -> None:
        step(front, frame)

    try:
        prop()
    except FuzzFailure as failure:  # hypothesis re-raises the minimal example's failure last
        return failure
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, required=True)
    parser.add_argument("--front", choices=sorted(FRONTS), default="all")
    parser.add_argument("--direction", choices=sorted(DIRECTIONS), default="all")
    parser.add_argument("--results", type=Path, default=REPO_ROOT / "results" / "fuzz")
    parser.add_argument("--chunk", type=int, default=25, help="examples per hypothesis run")
    parser.add_argument("--no-shrink", action="store_true", help="report failures unshrunk")
    parser.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="REGEX",
        help="count failures whose message matches instead of stopping at them (repeatable)",
    )
    args = parser.parse_args()

    work = args.results / time.strftime("run-%Y%m%dT%H%M%S")
    crashers_dir = work / "crashers"
    stdio = StdioGateway(work / "stdio") if args.front in ("stdio", "all") else None
    http = HttpGateway(work / "http") if args.front in ("http", "all") else None
    fuzzer = Fuzzer(stdio, http, [re.compile(pattern) for pattern in args.ignore])
    pairs = [(f, d) for f in FRONTS[args.front] for d in DIRECTIONS[args.direction]]
    crashers: list[tuple[str, str, str, Path]] = []
    started = time.monotonic()
    deadline = started + args.minutes * 60
    print(
        f"fuzzing {', '.join(f'{f}/{d}' for f, d in pairs)} for {args.minutes} min; "
        f"results in {work}",
        flush=True,
    )
    try:
        while time.monotonic() < deadline:
            for front, direction in pairs:
                if time.monotonic() >= deadline:
                    break
                failure = run_chunk(fuzzer, front, direction, args.chunk, not args.no_shrink)
                if failure is None:
                    continue
                saved = save_frame(crashers_dir, failure.frame)
                saved.with_suffix(".txt").write_text(str(failure), encoding="utf-8")
                crashers.append((front, direction, failure.what.splitlines()[0], saved))
                print(
                    f"CRASHER [{front}, {direction}] {failure.what.splitlines()[0]}\n"
                    f"  minimal frame: {runner.show(failure.frame, 600)}\n  saved: {saved}",
                    flush=True,
                )
    finally:
        for gateway in (stdio, http):
            if gateway is not None:
                gateway.stop()
    elapsed = time.monotonic() - started
    print(f"\nran {elapsed / 60:.1f} min; frames per front and direction:")
    for front, direction in pairs:
        print(f"  {front:12} {direction:9} {runner.COUNTS[(front, direction)]:7}")
    if fuzzer.known:
        print("known failures (--ignore), not stopped at:")
        for what, count in fuzzer.known.most_common():
            print(f"  {count:6}x {what}")
    distinct = {saved: (front, direction, what) for front, direction, what, saved in crashers}
    print(f"crashers: {len(crashers)} ({len(distinct)} distinct minimal frames)")
    for saved, (front, direction, what) in distinct.items():
        print(f"  [{front}, {direction}] {what[:160]}  ({saved})")
    return 1 if crashers else 0


if __name__ == "__main__":
    sys.exit(main())
