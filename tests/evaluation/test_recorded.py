"""The data recorded from real servers and packages (tests/data, committed) and the development
rows computed on it. Reads the committed files only: nothing is installed or started."""

from __future__ import annotations

import gzip
import json

from mcpward.evaluation import detectors as D
from mcpward.evaluation import recorded as R
from mcpward.evaluation import recorded_rows
from mcpward.evaluation.corpora import real_servers_dir

DATA = real_servers_dir().parent


def test_tool_dumps_cover_sixty_servers_and_a_thousand_distinct_tools() -> None:
    with gzip.open(DATA / "real_tools" / "tools.jsonl.gz", "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    assert all(r["server"] and r["version"] and r["package"] for r in rows)
    servers = R.bench_servers(DATA)
    assert len(servers) >= 60
    assert len(R.unique_definitions(servers)) >= 1000
    registries = {r["registry"] for r in rows}
    assert registries == {"npm", "pypi"}


def test_recorded_outputs_and_ordinary_text_are_large_enough() -> None:
    outputs = R.tool_outputs(DATA)
    assert len(outputs) >= 1000
    assert all(o.texts() for o in outputs)
    assert len(R.ordinary_documents(DATA, [])) >= 2000


def test_every_document_labelled_as_a_secret_is_one_the_scanner_redacts() -> None:
    labels = R.secret_labels(DATA)
    docs = {d.id: d for d in R.ordinary_documents(DATA, [])}
    scanner = D.secrets_guard().scanner
    for doc_id, why in labels.items():
        assert doc_id in docs, doc_id
        assert why and scanner.find(docs[doc_id].text), doc_id


def test_false_positive_rates_on_real_data_meet_their_goals() -> None:
    # Computed once per process (shared with `mcpward eval detectors` in the other tests).
    poisoning = recorded_rows.poisoning_rows(DATA)[0].counts.fpr
    outputs = recorded_rows.injection_rows(DATA)[0].counts.fpr
    shadowing = recorded_rows.shadowing_rows(DATA)[0].counts.fpr
    assert poisoning.high is not None and poisoning.high <= 0.02
    assert outputs.high is not None and outputs.high <= 0.02
    assert shadowing.value is not None and shadowing.value <= 0.01


def test_preference_manipulation_outputs_are_all_told_apart() -> None:
    row = recorded_rows.injection_rows(DATA)[1]
    assert (row.counts.fp, row.counts.fn) == (0, 0), row.missed


def test_keyword_anchored_secrets_meet_their_false_positive_goal_on_ordinary_text() -> None:
    row = recorded_rows.secrets_rows(DATA, ())[1]
    assert row.counts.fpr.high <= 0.005, row.missed


def test_the_opt_in_reading_of_every_result_flags_no_more_real_outputs_than_the_default() -> None:
    # `learned_reads: all`: the result table's uncued_threshold is set for this
    rows = recorded_rows.injection_rows(DATA)
    assert "learned_reads: all" in rows[2].dataset
    assert rows[2].counts.fp <= rows[0].counts.fp
