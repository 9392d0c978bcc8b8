"""Train the learned directive scorers (guards/detection/directive_model.py) on development data
only, report leave-one-source-out numbers, and write the weight tables.

    .venv/bin/pip install scikit-learn   # training only; the gateway never imports it
    .venv/bin/python scripts/train_directive_model.py definition [--write]
    .venv/bin/python scripts/train_directive_model.py result [--write]

Development data (every row was read while tuning): the opened sealed sets of rounds 5 to 9,
our round-5, round-6, round-8 and multilingual rows, the corpora's dev split, the recorded
real tools, half of the recorded real outputs and ordinary documents (by a fixed hash; the other
half and the 135-tool held-out batch of real servers are never trained on).
A sealed set that has not been opened is never read here.

Leave-one-source-out: the model is trained without one source and scored on it, which is what
a blind set written by someone else looks like; the threshold is set on out-of-fold scores of
the benign rows (false positives at most `--fpr`). `--hold-out SOURCE --write --out DIR` trains
without a source and writes the tables elsewhere, to measure the guards on it (never shipped).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from mcpward.evaluation import corpora as C  # noqa: E402
from mcpward.evaluation import recorded as R  # noqa: E402
from mcpward.evaluation.round5 import load_rows, open_sealed  # noqa: E402
from mcpward.evaluation.synthetic import DATA  # noqa: E402
from mcpward.guards.detection.directive_model import (  # noqa: E402
    VERSION,
    read_data,
    read_definition,
)

# Character n-grams: worth their cost on definitions (judged once per list), not on every
# tool result (the 4 KiB budget is 0.2 ms for all content guards).
GRAMS = {"definition": True, "result": False}
SEALED = ROOT / "tests/evaluation"
HELD_OUT: set[str] = set()  # sources left out of training (--hold-out), to measure on them
Row = tuple[str, int, list[Counter[str]], bool, str]  # source, label, units' features, ruled, lang


def held_half(key: str) -> bool:
    """The half of the recorded real data never trained on (fixed by hash)."""
    return hashlib.sha256(b"directive-model/1\x00" + key.encode()).digest()[0] < 128


def written_sets() -> list[tuple[str, list[dict[str, Any]]]]:
    """The written development sets: the opened sealed sets of rounds 5 to 9 (each opened once,
    then development data) and the development rows of rounds 5, 6 and 8 (written for
    training, not blind), one source per writer. A sealed set not yet opened is never read
    here."""
    out = [("round5-dev", load_rows())]
    for folder, stem in (
        ("sealed", "round5"),
        ("sealed6", "round6"),
        ("sealed7", "round7"),
        ("sealed8", "round8"),
        ("sealed9", "round9"),
    ):
        out.append((f"{stem}-sealed", load_rows(text=open_sealed(SEALED / folder, stem))))
    by_writer: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for name in ("round6_dev.jsonl", "round8_dev.jsonl"):
        # ids dev6-, dev6b-, dev6c- (round 6) and dev8d-, dev8e- (round 8): one writer each
        for r in load_rows(DATA / name):
            writer = r["id"].split("-")[0]
            by_writer[f"round{writer[3]}-dev-{writer[4:] or 'a'}"].append(r)
    return [(s, rows) for s, rows in out + sorted(by_writer.items()) if s not in HELD_OUT]


def data_hashes() -> dict[str, str]:
    """SHA-256 of each committed development file the models are trained on (a test checks the
    shipped tables against them: change the data, retrain)."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(DATA.glob("*.jsonl"))
    }


def definition_rows() -> list[Row]:
    from mcpward.evaluation.guards import poisoning_guard
    from mcpward.guards.detection.scanner import definition_score

    scanner = poisoning_guard().scanner

    def feats(tool: dict[str, Any]) -> tuple[list[Counter[str]], bool]:
        findings = scanner.scan_definition(tool)
        return [
            u.features(GRAMS["definition"]) for u in read_definition(tool, findings)
        ], definition_score(findings) >= 1.0

    rows: list[Row] = []
    for source, data in written_sets():
        for r in data:
            if r["kind"] in ("definition", "cross_server"):  # a shadowing tool is poisoned too
                rows.append((source, int(r["label"] == "poisoned"), *feats(r["tool"]), r["lang"]))
    for line in (DATA / "multilingual_definitions.jsonl").read_text("utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            rows.append(
                ("multilingual", int(r["label"] == "poisoned"), *feats(r["tool"]), r["lang"])
            )
    for ex in C.tool_definitions(C.corpora_dir()):
        if ex.split == "dev" and ex.group in ("positive", "benign"):
            rows.append(("corpus-dev", int(ex.group == "positive"), *feats(ex.tool), "en"))
    # every recorded real tool: with half of them held out, the first model flagged 5 of the
    # held half's 670 (0.75 %), over the goal of no more false positives on them than the rules
    # alone; the 135-tool held-out batch stays out of training
    for _server, tool in R.unique_definitions(R.bench_servers(ROOT / "tests/data")):
        rows.append(("real-train", 0, *feats(tool), "en"))
    for s in C.real_servers(ROOT / "tests/data/real_servers"):
        if s.batch == "dev":
            rows += [("real-dev-batch", 0, *feats(t), "en") for t in s.tools]
    return rows


def result_rows() -> list[Row]:
    from mcpward.evaluation.guards import injection_guard

    guard = injection_guard(learned=False)

    def feats(text: str) -> tuple[list[Counter[str]], bool]:
        verdict = guard.scan_text(text)
        units = [u.features(GRAMS["result"]) for u in read_data(text)]
        return units, verdict.score >= guard.threshold

    rows: list[Row] = []
    for source, data in written_sets():
        for r in data:
            if r["kind"] == "result":
                rows.append((source, int(r["label"] == "poisoned"), *feats(r["text"]), r["lang"]))
    corp = C.corpora_dir()
    # BIPIA's train side: its untouched e-mails as benign, its injected instructions alone as
    # hostile (spliced copies would teach the e-mails' own words as hostile)
    for email in C.bipia_emails(corp, "train"):
        rows.append(("bipia-train", 0, *feats(email), "en"))
    for _, instruction in C.bipia_instructions(corp, "train"):
        rows.append(("bipia-train", 1, *feats(instruction), "en"))
    for line in (DATA / "preference_outputs.jsonl").read_text("utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            rows.append(("preference", int(r["label"] != "benign"), *feats(r["text"]), "en"))
    for out in R.tool_outputs(ROOT / "tests/data"):
        if not held_half(out.server + "/" + out.tool):
            rows += [("real-train", 0, *feats(t), "en") for t in out.texts()]
    # ordinary code, JSON and documents from real packages (half; at most 8 KiB of each)
    for doc in R.ordinary_documents(ROOT / "tests/data", []):
        if not doc.source.startswith("output:") and not held_half(doc.id):
            rows.append(("real-documents", 0, *feats(doc.text[:8192]), "en"))
    return rows


def _fit_units(units: list[Counter[str]], labels: list[int], c: float) -> tuple[Any, Any]:
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression

    vec = DictVectorizer()
    x = vec.fit_transform([dict(u) for u in units])
    model = LogisticRegression(C=c, max_iter=4000, class_weight="balanced")
    model.fit(x, labels)
    return vec, model


def fit(rows: list[Row], c: float) -> tuple[Any, Any]:
    """Sentence units: every sentence of a benign item is benign; a poisoned item has at least
    one hostile sentence. First every sentence of a poisoned item counts as hostile, then only
    the one the first model rates highest (one round of multiple-instance refinement)."""
    units = [u for r in rows for u in r[2]]
    labels = [r[1] for r in rows for _ in r[2]]
    vec, model = _fit_units(units, labels, c)
    units, labels = [], []
    for r in rows:
        if r[1]:
            ps = _unit_probabilities(vec, model, r[2])
            units.append(r[2][max(range(len(ps)), key=ps.__getitem__)])
            labels.append(1)
        else:
            units += r[2]
            labels += [0] * len(r[2])
    return _fit_units(units, labels, c)


def _unit_probabilities(vec: Any, model: Any, units: list[Counter[str]]) -> list[float]:
    return list(model.predict_proba(vec.transform([dict(u) for u in units]))[:, 1])


def probabilities(vec: Any, model: Any, rows: list[Row]) -> list[float]:
    """Each item's probability: its worst sentence's."""
    units = [u for r in rows for u in r[2]]
    ps = iter(_unit_probabilities(vec, model, units))
    return [max(next(ps) for _ in r[2]) for r in rows]


def out_of_fold(rows: list[Row], c: float, folds: int = 5) -> list[float]:
    scores = [0.0] * len(rows)
    for k in range(folds):
        train = [r for i, r in enumerate(rows) if i % folds != k]
        vec, model = fit(train, c)
        test_idx = [i for i in range(len(rows)) if i % folds == k]
        for i, p in zip(
            test_idx, probabilities(vec, model, [rows[i] for i in test_idx]), strict=True
        ):
            scores[i] = p
    return scores


REAL_FPR = 0.001  # one outlier in a thousand recorded real tools or outputs, out of fold


def threshold_for(rows: list[Row], scores: list[float], fpr: float, real_fpr: float = 0.0) -> float:
    """The lowest probability (at least 0.5) at which at most `fpr` of the written benign rows
    and `real_fpr` of the recorded real ones ("real-*" sources) score: real tools and outputs
    flagged are the false positives users meet."""
    # (a benign row the rules flag already is no extra false positive of the model's)
    negatives = [(r, s) for r, s in zip(rows, scores, strict=True) if not r[1] and not r[3]]
    real = sorted((s for r, s in negatives if r[0].startswith("real")), reverse=True)
    real = real[int(real_fpr * len(real)) :]  # (the `real_fpr` highest may score over)
    benign = sorted((s for r, s in negatives if not r[0].startswith("real")), reverse=True)
    allowed = int(fpr * len(benign))
    written = benign[allowed] + 1e-4 if benign else 0.5
    return max(0.5, written, max(real, default=0.0) + 1e-4)


def report(
    name: str, rows: list[Row], c: float, fpr: float, loso: bool = True, dump: Path | None = None
) -> tuple[float, float]:
    """Print out-of-fold and leave-one-source-out numbers; (threshold, consult floor)."""
    oof = out_of_fold(rows, c)
    if dump is not None:
        dump.write_text("".join(json.dumps([r[0], r[1], r[3], r[4], p]) + "\n"
                                for r, p in zip(rows, oof, strict=True)))  # fmt: skip
    t = threshold_for(rows, oof, fpr, real_fpr=REAL_FPR)
    floor = threshold_for(rows, oof, 0.05, real_fpr=0.005)
    print(f"[{name}] rows {Counter((r[0], r[1]) for r in rows)}")
    print(f"[{name}] C={c} threshold (OOF benign FPR <= {fpr}) = {t:.3f}")
    by: dict[str, list[int]] = defaultdict(lambda: [0] * 8)
    for r, s in zip(rows, oof, strict=True):
        cell = by[r[0]]
        cell[0 if r[1] else 2] += int(s >= t)
        cell[1 if r[1] else 3] += 1
        cell[4 if r[1] else 5] += int(r[3])
        cell[6 if r[1] else 7] += int(r[3] or s >= t)
    for source, (tp, pos, fp, neg, rtp, rfp, utp, ufp) in sorted(by.items()):
        print(
            f"  OOF {source:16} model {tp}/{pos} FP {fp}/{neg} | rules {rtp}/{pos} FP {rfp}/{neg}"
            f" | either {utp}/{pos} FP {ufp}/{neg}"
        )
    for held in sorted({r[0] for r in rows if r[1]}) if loso else ():
        train = [r for r in rows if r[0] != held]
        test = [r for r in rows if r[0] == held]
        vec, model = fit(train, c)
        t_held = threshold_for(train, out_of_fold(train, c), fpr, real_fpr=REAL_FPR)
        ps = probabilities(vec, model, test)
        tp = sum(1 for r, p in zip(test, ps, strict=True) if r[1] and (p >= t_held or r[3]))
        fp = sum(1 for r, p in zip(test, ps, strict=True) if not r[1] and (p >= t_held or r[3]))
        pos = sum(r[1] for r in test)
        print(
            f"  LOSO without {held:14} either recall {tp}/{pos}  FP {fp}/{len(test) - pos}"
            f"  (threshold {t_held:.3f})"
        )
        if held == "round5-sealed":
            langs: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            for r, p in zip(test, ps, strict=True):
                if r[1]:
                    langs[r[4]][0] += int(p >= t_held or r[3])
                    langs[r[4]][1] += 1
            print("    by language:", {k: f"{a}/{b}" for k, (a, b) in sorted(langs.items())})
    return t, floor


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["definition", "result"])
    parser.add_argument("--c", type=float, default=0.5)
    parser.add_argument("--fpr", type=float, default=0.005)
    parser.add_argument("--keep", type=int, default=6000, help="Largest weights kept.")
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--no-loso", action="store_true", help="Skip leave-one-source-out.")
    parser.add_argument(
        "--threshold", type=float, help="Ship this threshold (read off the --dump curve)."
    )
    parser.add_argument(
        "--uncued-threshold",
        type=float,
        help="Results: the threshold for data with no rule cue (`learned_reads: all`).",
    )
    parser.add_argument("--dump", type=Path, help="Write the out-of-fold scores (JSONL).")
    parser.add_argument(
        "--hold-out",
        action="append",
        default=[],
        help="Leave this written source out of training (e.g. round7-sealed), to measure on it.",
    )
    parser.add_argument("--out", type=Path, help="Write the table into this folder instead.")
    args = parser.parse_args()
    HELD_OUT.update(args.hold_out)
    if HELD_OUT and args.write and args.out is None:
        parser.error("a table trained with --hold-out is written only to --out (never shipped)")
    rows = definition_rows() if args.kind == "definition" else result_rows()
    threshold, floor = report(args.kind, rows, args.c, args.fpr, not args.no_loso, args.dump)
    threshold = args.threshold or threshold
    if not args.write:
        return
    vec, model = fit(rows, args.c)
    names = vec.get_feature_names_out()
    pairs = sorted(zip(model.coef_[0], names, strict=True), key=lambda p: -abs(p[0]))
    weights = {str(n): round(float(w), 4) for w, n in pairs[: args.keep] if abs(w) >= 1e-3}
    table = {
        "version": VERSION,
        "name": args.kind,
        "grams": GRAMS[args.kind],
        "bias": round(float(model.intercept_[0]), 4),
        "threshold": round(threshold, 4),
        "floor": round(min(threshold, floor), 4),
        **({"uncued_threshold": args.uncued_threshold} if args.uncued_threshold else {}),
        "data_sha256": data_hashes(),
        "trained_on": dict(Counter(f"{r[0]}:{'poisoned' if r[1] else 'benign'}" for r in rows)),
        "weights": weights,
    }
    folder = args.out or ROOT / "src/mcpward/guards/detection/data"
    out = folder / f"directive_{args.kind}.json"
    out.write_text(json.dumps(table, ensure_ascii=False, separators=(",", ":")) + "\n", "utf-8")
    print(f"wrote {out} ({len(weights)} weights, {out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
