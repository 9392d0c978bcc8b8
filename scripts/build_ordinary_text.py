"""Build the ordinary-text set: documents that are not secrets, the negatives of the secrets
rows in `mcpward eval detectors` (with the recorded tool outputs and BIPIA's emails).

    .venv/bin/python scripts/build_ordinary_text.py            # seed 16, the committed file

Sampled with a fixed seed: code and text files of the packages installed in .venv (first 4 KiB,
cut at a line end) and JSON files (package.json of the npm servers in .bench-servers/, JSON
shipped in site-packages). Output: tests/data/ordinary_text/docs.jsonl.gz (id, source, package,
version, text) and manifest.json (seed, package versions, counts). Documents that were read and
found to hold a real credential are listed by id, with why, in labels.json beside it (kept by
hand); the eval rows leave them out and say how many.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import importlib.metadata
import json
import random
import sys
import sysconfig
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "ordinary_text" / "docs.jsonl.gz"
NPM = ROOT / ".bench-servers" / "npm"
LIMIT = 4096
CODE_SUFFIXES = (".py", ".pyi", ".md", ".rst", ".txt", ".toml", ".cfg", ".ini", ".html", ".js")


def _head(text: str) -> str:
    if len(text) <= LIMIT:
        return text
    cut = text.rfind("\n", 0, LIMIT)
    return text[: cut if cut > 0 else LIMIT]


def _owner(path: Path, site: Path, owners: dict[str, tuple[str, str]]) -> tuple[str, str]:
    top = path.relative_to(site).parts[0]
    return owners.get(top, (top, "unknown"))


def _owners() -> dict[str, tuple[str, str]]:
    """Top-level site-packages entry -> (distribution, version)."""
    out: dict[str, tuple[str, str]] = {}
    for dist in importlib.metadata.distributions():
        name, ver = dist.metadata["Name"], dist.version
        for file in dist.files or []:
            out.setdefault(file.parts[0], (name, ver))
    return out


def _read(path: Path) -> str | None:
    try:
        return path.read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def code_docs(rnd: random.Random, count: int) -> list[dict[str, Any]]:
    site = Path(sysconfig.get_paths()["purelib"])
    owners = _owners()
    files = sorted(
        p
        for p in site.rglob("*")
        if p.suffix in CODE_SUFFIXES
        and p.is_file()
        and "__pycache__" not in p.parts
        and p.stat().st_size > 300
        and not p.parts[len(site.parts)].startswith("_")
    )
    docs = []
    for path in rnd.sample(files, min(count * 2, len(files))):
        text = _read(path)
        if text is None or not text.strip():
            continue
        package, ver = _owner(path, site, owners)
        docs.append({"source": f"code:{path.relative_to(site)}", "package": package,
                     "version": ver, "text": _head(text)})  # fmt: skip
        if len(docs) == count:
            break
    return docs


def json_docs(rnd: random.Random, count: int) -> list[dict[str, Any]]:
    site = Path(sysconfig.get_paths()["purelib"])
    files = sorted(NPM.glob("*/node_modules/**/package.json")) + sorted(site.rglob("*.json"))
    seen: set[str] = set()
    docs = []
    for path in rnd.sample(files, min(count * 3, len(files))):
        text = _read(path)
        if text is None or len(text) < 200:
            continue
        try:
            data = json.loads(text)
        except ValueError:
            continue
        name = str(data.get("name", path.parent.name)) if isinstance(data, dict) else path.name
        ver = str(data.get("version", "")) if isinstance(data, dict) else ""
        if name in seen:
            continue
        seen.add(name)
        source = f"json:{name}/{path.name}"
        docs.append({"source": source, "package": name, "version": ver, "text": _head(text)})
        if len(docs) == count:
            break
    return docs


def build(seed: int, code: int, json_count: int) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    docs = code_docs(rnd, code) + json_docs(rnd, json_count)
    unique: dict[str, dict[str, Any]] = {}
    for doc in docs:
        digest = hashlib.sha256(doc["text"].encode()).hexdigest()[:12]
        unique.setdefault(digest, {"id": digest, **doc})
    return list(unique.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--code", type=int, default=1100, help="Code and text files.")
    parser.add_argument("--json", type=int, default=350, help="JSON files.")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    docs = build(args.seed, args.code, args.json)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    body = "\n".join(json.dumps(d, ensure_ascii=False, sort_keys=True) for d in docs) + "\n"
    with gzip.GzipFile(args.out, "wb", mtime=0) as handle:
        handle.write(body.encode("utf-8"))
    versions = sorted({(d["package"], d["version"]) for d in docs})
    manifest = {
        "seed": args.seed,
        "documents": len(docs),
        "by_source": {
            k: sum(1 for d in docs if d["source"].startswith(k)) for k in ("code:", "json:")
        },
        "packages": [f"{name}=={ver}" for name, ver in versions],
        "python": sys.version.split()[0],
    }
    (args.out.parent / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{len(docs)} documents -> {args.out}")


if __name__ == "__main__":
    main()
