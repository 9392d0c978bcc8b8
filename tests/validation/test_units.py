"""The battery generator and the monitor's log reader, without a sandbox."""

from __future__ import annotations

from pathlib import Path

from jsonschema import Draft202012Validator

from mcpward.validation.battery import generate
from mcpward.validation.trace import TraceLog
from tests.fixtures.validation_server import INPUT

BWRAP = "/usr/bin/bwrap"


def test_the_battery_is_seeded_labelled_and_covers_each_kind_of_case() -> None:
    cases = generate(INPUT, seed=3)
    assert cases == generate(INPUT, seed=3)
    assert cases != generate(INPUT, seed=4)
    validator = Draft202012Validator(INPUT)
    assert all(validator.is_valid(c.arguments) is c.valid for c in cases)
    labels = {c.label for c in cases}
    for expected in (
        "required properties only (defaults apply)",
        "every default given explicitly",
        "n: at minimum",
        "n: at maximum",
        "n: beyond maximum",
        "n: wrong type",
        "unit: not one of the enum",
        "missing required unit",
        "an extra property",
    ):
        assert expected in labels


def test_an_unusable_schema_gives_no_case_called_valid() -> None:
    assert generate({"type": "object", "properties": {"x": {"type": 5}}}, seed=1) == []


def test_the_log_reader_skips_the_isolator_set_up_and_joins_split_lines(tmp_path: Path) -> None:
    log = tmp_path / "trace.log"
    log.write_text(
        f'10 execve("{BWRAP}", ["bwrap"], 0x1 /* 3 vars */) = 0\n'
        '11 mkdir("newroot", 0755) = 0\n'
        '12 execve("/usr/bin/python3", ["python3"], 0x1 /* 3 vars */) = 0\n'
        '12 openat(AT_FDCWD, "/usr/lib/x/__pycache__/y.pyc", O_WRONLY|O_CREAT, 0644) = -1 EROFS'
        " (Read-only file system)\n"
        '12 openat(AT_FDCWD, "/dev/null", O_WRONLY) = 3\n'
        '13 connect(3, {sa_family=AF_INET, sin_port=htons(8080), sin_addr=inet_addr("10.0.0.1")}'
        ", 16 <unfinished ...>\n"
        '12 openat(AT_FDCWD, "/etc/passwd", O_RDONLY) = 3\n'
        "13 <... connect resumed>) = -1 ENETUNREACH (Network is unreachable)\n"
        '12 unlinkat(AT_FDCWD, "/work/x", 0) = -1 EROFS (Read-only file system)\n'
        '12 openat(AT_FDCWD, "partial',
        encoding="utf-8",
    )
    events = TraceLog(log, BWRAP).take()
    assert [e.describe() for e in events] == [
        "connect 10.0.0.1:8080: failed (ENETUNREACH)",
        "unlinkat /work/x: failed (EROFS)",
    ]
