"""The development rows on data recorded from real servers and packages (evaluation/recorded.py):
false-positive rates of tool_poisoning and tool_shadowing on the round-4 tool dumps, of
response_injection on benign tool outputs, of the secrets rules on ordinary text; and our own
preference-manipulation outputs. Every flag on these sets was read while tuning: development.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from mcpward.evaluation import recorded as R
from mcpward.evaluation.guards import injection_guard, poisoning_guard, secrets_guard
from mcpward.evaluation.rows import Row, count
from mcpward.evaluation.stats import Confusion
from mcpward.evaluation.synthetic import DATA
from mcpward.guards.response_injection import UNCUED_BUDGET
from mcpward.guards.tool_shadowing import ToolShadowingOptions, find_shadowing

# Each function is computed once per process and data directory (the rules do not change
# within a process): the full and the dev report, and the tests, share one computation.
NOTE = "recorded from real servers/packages; every flag read while tuning: development"
# The keyword-anchored rules (a keyword, then a value): ours and gitleaks' generic one.
KEYWORD_KINDS = frozenset(
    {"generic-secret", "hardcoded-password", "credential-argument", "generic-api-key"}
)


@functools.cache
def poisoning_rows(data: Path) -> tuple[Row, ...]:
    guard = poisoning_guard()
    servers = R.bench_servers(data)
    tools = R.unique_definitions(servers)
    counts, missed = count(
        tools,
        lambda _: False,
        lambda st: guard.judge(st[1]).flagged,
        lambda st: f"{st[0]}/{st[1].get('name')}",
    )
    row = Row(
        "tool_poisoning",
        f"real servers, round 4 ({len(servers)} servers, {len(tools)} distinct tools)",
        "dev",
        counts,
        goal="FPR CI high <= 0.02",
        note=NOTE,
        missed=missed,
    )
    return (row,)


@functools.cache
def shadowing_rows(data: Path) -> tuple[Row, ...]:
    servers = R.bench_servers(data)
    catalog = {s.server: s.tools for s in servers}
    order = [s.server for s in servers]
    flagged = total = 0
    drops: list[str] = []
    for s in servers:
        found = find_shadowing(s.server, s.tools, catalog, order, ToolShadowingOptions())
        flagged += len(found)
        total += len(s.tools)
        drops += [
            f"FP {s.server}/{f.tool} ({f.reason} {f.other_upstream}/{f.other_tool})" for f in found
        ]
    row = Row(
        "tool_shadowing",
        f"real servers side by side, round 4 ({len(servers)} servers)",
        "dev",
        Confusion(fp=flagged, tn=total - flagged),
        goal="<= 1% of real tools flagged",
        note="every drop counted as a false positive; " + NOTE,
        missed=drops,
    )
    return (row,)


@functools.cache
def injection_rows(data: Path) -> tuple[Row, ...]:
    guard = injection_guard()
    reads_all = injection_guard(reads="all")

    def flagged(text: str) -> bool:
        return guard.scan_text(text).score >= guard.threshold

    def flagged_reading_all(text: str) -> bool:
        verdict = reads_all.scan_text(text, uncued=len(text) <= UNCUED_BUDGET)
        return verdict.score >= reads_all.threshold

    outputs = R.tool_outputs(data)
    servers = len({o.server for o in outputs})
    counts, missed = count(
        outputs,
        lambda _: False,
        lambda o: any(flagged(t) for t in o.texts()),
        lambda o: f"{o.server}/{o.tool}",
    )
    all_counts, all_missed = count(
        outputs,
        lambda _: False,
        lambda o: any(flagged_reading_all(t) for t in o.texts()),
        lambda o: f"{o.server}/{o.tool}",
    )
    examples = [
        json.loads(line)
        for line in (DATA / "preference_outputs.jsonl").read_text("utf-8").splitlines()
        if line.strip()
    ]
    pref_counts, pref_missed = count(
        examples,
        lambda e: e["label"] == "poisoned",
        lambda e: flagged(e["text"]),
        lambda e: f"{e['label']}/{e['id']}",
    )
    return (
        Row(
            "response_injection",
            f"benign tool outputs recorded from real servers ({servers} servers)",
            "dev",
            counts,
            goal="FPR CI high <= 0.02",
            note=NOTE,
            missed=missed,
        ),
        Row(
            "response_injection",
            "synthetic preference manipulation in English tool outputs vs library docs",
            "dev",
            pref_counts,
            note="written by us; a development number, not a measurement",
            missed=pref_missed,
        ),
        Row(
            "response_injection",
            f"the same outputs with the opt-in learned_reads: all ({servers} servers)",
            "dev",
            all_counts,
            goal="no more flagged than by default",
            note=NOTE,
            missed=all_missed,
        ),
    )


@functools.cache
def secrets_rows(data: Path, emails: tuple[str, ...]) -> tuple[Row, ...]:
    scanner = secrets_guard().scanner
    labels = R.secret_labels(data)
    docs = R.ordinary_documents(data, list(emails))
    kept = [d for d in docs if d.id not in labels]
    held = len(docs) - len(kept)
    found = {d.id: scanner.find(d.text) for d in kept}
    where = (
        f"{len(kept)} documents: code, JSON, tool outputs, emails; {held} holding a secret left out"
    )
    any_counts, any_missed = count(
        kept, lambda _: False, lambda d: bool(found[d.id]), lambda d: f"{d.id} {d.source}"
    )
    kw_counts, kw_missed = count(
        kept,
        lambda _: False,
        lambda d: any(m.kind in KEYWORD_KINDS for m in found[d.id]),
        lambda d: f"{d.id} {d.source}",
    )
    return (
        Row(
            "secrets",
            f"ordinary text, all rules ({where})",
            "dev",
            any_counts,
            note=NOTE,
            missed=any_missed,
        ),
        Row(
            "secrets",
            "ordinary text, keyword-anchored generic rules (same documents)",
            "dev",
            kw_counts,
            goal="FPR CI high <= 0.005",
            note=NOTE,
            missed=kw_missed,
        ),
    )
