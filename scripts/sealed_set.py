"""Seal and open the blind evaluation set of a detector round (tests/evaluation/sealed/).

    python scripts/sealed_set.py seal PLAIN OUT  # OUT: tests/evaluation/sealed/round5.jsonl.fernet
    python scripts/sealed_set.py open OUT KEY    # plaintext to stdout; exit 1 on a SHA-256 mismatch

`seal` encrypts PLAIN (JSONL) with Fernet under a fresh key and writes, beside OUT: the key
(`<stem>.key`), the hex SHA-256 of the plaintext (`<stem>.sha256`) and `MANIFEST.json` (row
counts per kind, label, language and family: counts only, never text). `open` decrypts and
checks the plaintext against `<stem>.sha256`. Needs the `cryptography` package.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections import Counter
from pathlib import Path

from cryptography.fernet import Fernet

SUFFIX = ".jsonl.fernet"


def _stem(out: Path) -> Path:
    """tests/evaluation/sealed/round5.jsonl.fernet -> tests/evaluation/sealed/round5."""
    name = out.name[: -len(SUFFIX)] if out.name.endswith(SUFFIX) else out.stem
    return out.with_name(name)


def _nested(counter: Counter[tuple[str, ...]]) -> dict:
    """{("a", "b"): 3} -> {"a": {"b": 3}}, keys sorted."""
    tree: dict = {}
    for key in sorted(counter):
        node = tree
        for part in key[:-1]:
            node = node.setdefault(part, {})
        node[key[-1]] = counter[key]
    return tree


def manifest(rows: list[dict], sha256: str) -> dict:
    """Counts of the sealed rows; no row text."""
    by = Counter[tuple[str, ...]]
    return {
        "rows": len(rows),
        "sha256": sha256,
        "kind_label": _nested(by((r["kind"], r["label"]) for r in rows)),
        "kind_label_lang": _nested(by((r["kind"], r["label"], r["lang"]) for r in rows)),
        "kind_family_lang": _nested(by((r["kind"], r["family"], r["lang"]) for r in rows)),
        "kind_hard_benign": dict(Counter(r["kind"] for r in rows if r.get("hard"))),
        "definition_secondary_families": dict(
            sorted(
                Counter(
                    f for r in rows if r["kind"] == "definition" for f in r.get("families", [])[1:]
                ).items()
            )
        ),
        "cross_server_poisoned_namespaced": sum(
            1 for r in rows if r["kind"] == "cross_server" and r.get("namespaced")
        ),
    }


def seal(plain: Path, out: Path) -> None:
    data = plain.read_bytes()
    rows = [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
    ids = [r["id"] for r in rows]
    if len(ids) != len(set(ids)):
        raise SystemExit("duplicate ids in the plaintext")
    key = Fernet.generate_key()
    digest = hashlib.sha256(data).hexdigest()
    stem = _stem(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(Fernet(key).encrypt(data))
    stem.with_name(stem.name + ".key").write_bytes(key + b"\n")
    stem.with_name(stem.name + ".sha256").write_text(digest + "\n")
    text = json.dumps(manifest(rows, digest), indent=2, ensure_ascii=False)
    (out.parent / "MANIFEST.json").write_text(text + "\n")
    print(f"sealed {len(rows)} rows -> {out} (sha256 {digest})", file=sys.stderr)


def open_(out: Path, key: Path) -> None:
    data = Fernet(key.read_bytes().strip()).decrypt(out.read_bytes())
    stem = _stem(out)
    expected = stem.with_name(stem.name + ".sha256").read_text().strip()
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        print(f"SHA-256 mismatch: {actual} != {expected}", file=sys.stderr)
        raise SystemExit(1)
    sys.stdout.buffer.write(data)
    print(f"sha256 ok ({actual})", file=sys.stderr)


def main(argv: list[str]) -> None:
    if len(argv) == 3 and argv[0] == "seal":
        seal(Path(argv[1]), Path(argv[2]))
    elif len(argv) == 3 and argv[0] == "open":
        open_(Path(argv[1]), Path(argv[2]))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
