"""Runs the real guards (default options) over the corpora and counts their verdicts per guard,
dataset and split. Nothing here is tuned: it calls the same code the gateway runs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mcpward.evaluation import corpora as C
from mcpward.evaluation import keygen, recorded_rows, synthetic
from mcpward.evaluation.guards import injection_guard, poisoning_guard, secrets_guard
from mcpward.evaluation.rows import Row, count
from mcpward.evaluation.split import Split
from mcpward.evaluation.stats import Confusion, Rate
from mcpward.guards.secrets import SecretsGuard
from mcpward.guards.tool_poisoning import ToolPoisoningGuard
from mcpward.guards.tool_shadowing import ToolShadowingOptions, find_shadowing

SPLITS: tuple[Split, ...] = ("dev", "test")


def evaluate_tool_poisoning(
    corpora: Path, real_dir: Path, splits: Sequence[Split] = SPLITS
) -> list[Row]:
    guard = poisoning_guard()
    examples = C.tool_definitions(corpora)
    rows = []
    for split in splits:
        chosen = [e for e in examples if e.split == split and e.group in ("positive", "benign")]
        counts, missed = count(
            chosen,
            lambda e: e.group == "positive",
            lambda e: guard.judge(e.tool).flagged,
            lambda e: e.id,
        )
        rows.append(
            Row(
                "tool_poisoning",
                "corpus: attack visible in metadata vs benign",
                split,
                counts,
                goal="recall CI low >= 0.90",
                missed=missed,
            )
        )
    for batch in _batches(splits):
        servers = [s for s in C.real_servers(real_dir) if s.batch == batch]
        if not servers:
            continue
        tools = [(s.server, t) for s in servers for t in s.tools]
        counts, missed = count(
            tools,
            lambda _: False,
            lambda st: guard.judge(st[1]).flagged,
            lambda st: f"{st[0]}/{st[1].get('name')}",
        )
        rows.append(
            Row(
                "tool_poisoning",
                f"real servers ({len(servers)} servers, {batch} batch)",
                "dev" if batch == "dev" else "test",
                counts,
                goal="FPR CI high <= 0.02",
                note="benign definitions only",
                missed=missed,
            )
        )
    if "dev" in splits:
        rows.append(_multilingual_row(guard))
        rows += recorded_rows.poisoning_rows(real_dir.parent)
    for split in splits:
        hidden = [e for e in examples if e.split == split and e.group == "hidden"]
        flagged = sum(1 for e in hidden if guard.judge(e.tool).flagged)
        rows.append(
            Row(
                "tool_poisoning",
                "malicious, attack only in code (not a metadata positive)",
                split,
                Confusion(tp=flagged, fn=len(hidden) - flagged),
                note="reported separately: a metadata scanner is not expected to flag these",
            )
        )
    return rows


def _multilingual_row(guard: ToolPoisoningGuard) -> Row:
    """Our own written set (8 languages): development only, it was tuned on."""
    examples = synthetic.multilingual_definitions()
    counts, missed = count(
        examples,
        lambda e: e.poisoned,
        lambda e: guard.judge(e.tool).flagged,
        lambda e: f"{e.lang}/{e.family or 'benign'}/{e.tool.get('name')}",
    )
    langs = len({e.lang for e in examples})
    return Row(
        "tool_poisoning",
        f"synthetic multilingual definitions ({langs} languages, written for development)",
        "dev",
        counts,
        goal="held out: >= 0.90 dropped, none benign",
        note="written by us and tuned on: a development number, not a measurement",
        missed=missed,
    )


def evaluate_tool_shadowing(
    corpora: Path, real_dir: Path, splits: Sequence[Split] = SPLITS
) -> list[Row]:
    options = ToolShadowingOptions()
    rows = []
    cases = C.shadowing_cases(corpora)
    for split in splits:
        chosen = [(e, benign) for e, benign in cases if e.split == split]

        def dropped(case: tuple[C.ToolExample, list[dict[str, Any]]]) -> bool:
            example, benign = case
            catalog = {"original": benign, "added": [example.tool]}
            found = find_shadowing("added", [example.tool], catalog, ["original", "added"], options)
            return bool(found)

        counts, missed = count(chosen, lambda _: True, dropped, lambda c: c[0].id)
        rows.append(
            Row(
                "tool_shadowing",
                "corpus shadowing attacks next to the imitated server",
                split,
                counts,
                goal="recall >= 0.85",
                missed=missed,
            )
        )
    for batch in _batches(splits):
        servers = [s for s in C.real_servers(real_dir) if s.batch == batch]
        if len(servers) < 2:
            continue
        catalog = {s.server: s.tools for s in servers}
        order = [s.server for s in servers]
        flagged = 0
        total = 0
        drops: list[str] = []
        for s in servers:
            found = find_shadowing(s.server, s.tools, catalog, order, options)
            flagged += len(found)
            total += len(s.tools)
            drops += [
                f"FP {s.server}/{f.tool} ({f.reason} {f.other_upstream}/{f.other_tool})"
                for f in found
            ]
        rows.append(
            Row(
                "tool_shadowing",
                f"real servers side by side ({len(servers)}, {batch} batch)",
                "dev" if batch == "dev" else "test",
                Confusion(fp=flagged, tn=total - flagged),
                goal="<= 1% of real tools flagged",
                note="every drop counted as a false positive, even a true name collision",
                missed=drops,
            )
        )
    if "dev" in splits:
        rows += recorded_rows.shadowing_rows(real_dir.parent)
    return rows


def _found_row(
    guard: SecretsGuard,
    examples: Sequence[C.SecretExample],
    dataset: str,
    split: Split,
    goal: str = "",
    note: str = "",
) -> Row:
    """A recall row over examples that all count as secrets: found by any rule, per rule id."""
    counts, missed = count(
        examples,
        lambda _: True,
        lambda e: bool(guard.scanner.find(e.text)),
        lambda e: e.rule_id,
    )
    return Row("secrets", dataset, split, counts, goal=goal, note=note, missed=missed)


KEYWORD_RULE = re.compile(r"(np|kingfisher)\.generic\.\d+$")


def evaluate_secrets(corpora: Path, real_dir: Path, splits: Sequence[Split] = SPLITS) -> list[Row]:
    guard = secrets_guard()
    examples = C.secret_examples(corpora)
    positives = C.positive_texts(examples)
    rows = []
    for split in splits:
        chosen = [e for e in examples if e.split == split]
        clean = [e for e in chosen if not C.is_label_conflict(e, positives)]
        conflicts = [e for e in chosen if C.is_label_conflict(e, positives)]
        counts, missed = count(
            clean,
            lambda e: e.positive,
            lambda e: bool(guard.scanner.find(e.text)),
            lambda e: e.rule_id,
        )
        rows.append(
            Row(
                "secrets",
                "rule examples: positives vs negative examples",
                split,
                counts,
                goal="recall >= 0.95, FPR <= 0.10",
                missed=missed,
            )
        )
        # The keyword-anchored second row of issue #16 (`password = "…"`, `api_key: …`): the
        # positives of the scanners' generic rules, found by any rule (a redactor's question).
        # Their bare weak-password list (`letmein42`, no keyword) is not keyword-anchored.
        anchored = [e for e in clean if e.positive and KEYWORD_RULE.match(e.rule_id)]
        rows.append(
            _found_row(
                guard,
                anchored,
                "rule examples of the keyword-anchored generic rules (np.generic.*, "
                "kingfisher.generic.*)",
                split,
                goal="recall >= 0.85",
            )
        )
        # Reported apart, never as false positives: another rule's positive label says redact.
        rows.append(
            _found_row(
                guard,
                conflicts,
                "label conflicts: negatives that are another rule's positives",
                split,
                note="counted with the other rule's positive label; not in the row above",
            )
        )
    if "dev" in splits:
        rows += _generated_secret_rows(guard)
        train_emails = C.bipia_emails(corpora, "train")
        rows += recorded_rows.secrets_rows(real_dir.parent, tuple(train_emails))
    # Development sees only the dev side of the ordinary text: BIPIA's train emails and the
    # dev batch of real servers; the full run pools both sides, as the table always has.
    everything = "test" in splits
    ordinary = [
        (f"email:{name}:{i}", t)
        for name in (("train", "test") if everything else ("train",))
        for i, t in enumerate(C.bipia_emails(corpora, name))
    ]
    for server in C.real_servers(real_dir):
        if not everything and server.batch != "dev":
            continue
        ordinary += [
            (f"{server.server}/{t.get('name')}", str(t.get("description") or ""))
            for t in server.tools
        ]
    counts, missed = count(
        ordinary, lambda _: False, lambda it: bool(guard.scanner.find(it[1])), lambda it: it[0]
    )
    rows.append(
        Row(
            "secrets",
            "ordinary text (BIPIA emails, real tool descriptions)",
            "all" if everything else "dev",
            counts,
            note="no secrets in these texts",
            missed=missed,
        )
    )
    return rows


def _generated_secret_rows(guard: SecretsGuard) -> list[Row]:
    """Keys in each provider's real format, and look-alikes that must come back byte-identical
    (our own generator, evaluation/keygen.py; the maintainers keep theirs held out)."""
    keys = keygen.generate(keygen.PROVIDERS, per_kind=40, seed=4)
    key_counts, key_missed = count(
        keys, lambda _: True, lambda e: bool(guard.scanner.find(e.text)), lambda e: e.kind
    )
    alikes = keygen.generate(keygen.LOOK_ALIKES, per_kind=40, seed=5)
    alike_counts, alike_changed = count(
        alikes,
        lambda _: False,
        lambda e: guard.scanner.redact_text(e.text)[0] != e.text,
        lambda e: e.kind,
    )
    return [
        Row(
            "secrets",
            f"generated provider-format keys ({len(keygen.PROVIDERS)} formats)",
            "dev",
            key_counts,
            goal="recall >= 0.98",
            note="our generator; development",
            missed=key_missed,
        ),
        Row(
            "secrets",
            f"generated look-alikes ({len(keygen.LOOK_ALIKES)} kinds), byte-identical",
            "dev",
            alike_counts,
            goal="none changed",
            note="UUIDs, hashes, git SHAs, SRI, base64 text, ARNs, buckets, client ids",
            missed=alike_changed,
        ),
    ]


def evaluate_response_injection(
    corpora: Path, splits: Sequence[Split] = SPLITS, data: Path | None = None
) -> list[Row]:
    """`data`: tests/data with the recorded tool outputs (development rows)."""
    guard = injection_guard()
    rows = []

    def flagged(text: str) -> bool:
        return guard.scan_text(text).score >= guard.threshold

    names: list[C.BipiaSplit] = [n for n in ("train", "test") if C.bipia_split(n) in splits]
    for name in names:
        examples = C.bipia_injections(corpora, name)
        counts, missed = count(
            examples, lambda e: e.positive, lambda e: flagged(e.text), lambda e: e.category
        )
        split = C.bipia_split(name)
        rows.append(
            Row(
                "response_injection",
                f"BIPIA: attacks spliced into emails vs untouched ({name})",
                split,
                counts,
                goal="recall >= 0.80, FPR <= 0.02",
                missed=missed,
            )
        )
        alone = C.bipia_instructions(corpora, name)
        hits = sum(1 for _, text in alone if flagged(text))
        rows.append(
            Row(
                "response_injection",
                f"BIPIA: attack instructions alone ({name})",
                split,
                Confusion(tp=hits, fn=len(alone) - hits),
            )
        )
    if "dev" in splits:
        rows.append(_multilingual_data_row(flagged))
        if data is not None:
            rows += recorded_rows.injection_rows(data)
    if "test" not in splits:
        return rows  # the 14 tool outputs have no dev side: only the full run measures them
    outputs = C.malicious_tool_outputs(corpora)
    hits = sum(1 for text in outputs if flagged(text))
    rows.append(
        Row(
            "response_injection",
            "malicious tool outputs (MCP-SafetyBench)",
            "all",
            Confusion(tp=hits, fn=len(outputs) - hits),
        )
    )
    return rows


def _multilingual_data_row(flagged: Callable[[str], bool]) -> Row:
    """Our multilingual definitions' prose pasted into an English tool output as returned data
    (development only). Tool-choice wording (preference manipulation, a named tool) is a
    definition's family, not data's, so fewer poisoned texts count here than in tool_poisoning."""
    filler = "Query returned 3 rows in 12 ms; see https://example.com/r/1 for the full page.\n"
    examples = synthetic.multilingual_definitions()

    def text(e: synthetic.LabelledDefinition) -> str:
        return filler + str(e.tool.get("description") or "") + "\n" + filler

    counts, missed = count(
        examples,
        lambda e: e.poisoned,
        lambda e: flagged(text(e)),
        lambda e: f"{e.lang}/{e.family or 'benign'}/{e.tool.get('name')}",
    )
    return Row(
        "response_injection",
        "synthetic multilingual instructions inside an English tool output",
        "dev",
        counts,
        note="written by us; a development number, not a measurement",
        missed=missed,
    )


def _batches(splits: Sequence[Split]) -> list[str]:
    """Real-server batches on the chosen sides: the dev batch was inspected, heldout never."""
    return [b for b, side in (("dev", "dev"), ("heldout", "test")) if side in splits]


def evaluate_all(
    corpora: Path | None = None,
    real_dir: Path | None = None,
    splits: Sequence[Split] = SPLITS,
) -> list[Row]:
    """Every row; with splits=("dev",) nothing on the held-out side is even computed, so
    development (and `--verbose` misses) never sees it."""
    base = C.corpora_dir(corpora)
    real = C.real_servers_dir(real_dir)
    return (
        evaluate_tool_poisoning(base, real, splits)
        + evaluate_tool_shadowing(base, real, splits)
        + evaluate_secrets(base, real, splits)
        + evaluate_response_injection(base, splits, real.parent)
    )


def rate_text(rate: Rate) -> str:
    if rate.value is None:
        return "-"
    return f"{rate.value:.3f} [{rate.low:.3f}, {rate.high:.3f}]"
