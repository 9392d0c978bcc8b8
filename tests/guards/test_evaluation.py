"""The evaluation's statistics and splits, and one real run over the corpora."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from mcpward.cli.main import app
from mcpward.evaluation.corpora import CorpusMissing, corpora_dir
from mcpward.evaluation.split import split_of
from mcpward.evaluation.stats import beta_cdf, beta_ppf, clopper_pearson


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [  # reference values from R's binom.test / scipy.stats.beta.ppf
        (0, 10, 0.0, 0.3084971),
        (5, 10, 0.1870860, 0.8129140),
        (95, 100, 0.8871651, 0.9835681),
        (10, 10, 0.6915029, 1.0),
        (2, 50, 0.0048702, 0.1371367),
    ],
)
def test_clopper_pearson_matches_reference(k: int, n: int, low: float, high: float) -> None:
    lo, hi = clopper_pearson(k, n)
    assert lo == pytest.approx(low, abs=2e-4)
    assert hi == pytest.approx(high, abs=2e-4)


@given(st.integers(1, 400).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_interval_contains_the_estimate_and_beta_inverts(kn: tuple[int, int]) -> None:
    k, n = kn
    lo, hi = clopper_pearson(k, n)
    assert 0.0 <= lo <= k / n <= hi <= 1.0
    if 0 < k < n:
        assert beta_cdf(beta_ppf(0.025, k, n - k + 1), k, n - k + 1) == pytest.approx(
            0.025, abs=1e-9
        )


def test_split_is_deterministic_and_balanced() -> None:
    keys = [f"example-{i}" for i in range(2000)]
    first = [split_of(k) for k in keys]
    assert first == [split_of(k) for k in keys]
    assert 900 < first.count("test") < 1100


def test_eval_detectors_runs_on_the_corpora() -> None:
    try:
        corpora_dir()
    except CorpusMissing:
        pytest.skip("the shared corpora are not next to this checkout")
    result = CliRunner().invoke(app, ["eval", "detectors", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    guards = {r["guard"] for r in rows}
    assert guards == {"tool_poisoning", "tool_shadowing", "secrets", "response_injection"}
    assert {r["split"] for r in rows} >= {"dev", "test"}
    for row in rows:
        assert row["tp"] + row["fp"] + row["fn"] + row["tn"] > 0
        low, high = row["recall"]["ci95"]
        assert 0.0 <= low <= high <= 1.0
    # issue #16's second secrets row: the keyword-anchored rules' positives, recall >= 0.85
    anchored = [r for r in rows if r["dataset"].startswith("rule examples of the keyword-anchored")]
    assert {r["split"] for r in anchored} == {"dev", "test"}
    assert all(r["recall"]["value"] >= 0.85 and r["fn"] <= 2 for r in anchored), anchored


def test_eval_dev_split_never_computes_held_out_rows() -> None:
    try:
        corpora_dir()
    except CorpusMissing:
        pytest.skip("the shared corpora are not next to this checkout")
    result = CliRunner().invoke(app, ["eval", "detectors", "--json", "--split", "dev"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert {r["split"] for r in rows} == {"dev"}
    assert not any("heldout" in r["dataset"] or "(test)" in r["dataset"] for r in rows)
    bad = CliRunner().invoke(app, ["eval", "detectors", "--split", "test"])
    assert bad.exit_code == 2


def test_a_negative_that_is_another_rules_positive_is_a_label_conflict() -> None:
    from mcpward.evaluation.corpora import SecretExample, is_label_conflict, positive_texts

    token = "xoxb-" + "1" * 12 + "-abcdefghijklmnopqrstuvwx"
    examples = [
        SecretExample("slack.2", True, "dev", token),
        SecretExample("slack.4", False, "dev", token),  # another rule says positive
        SecretExample("slack.2", False, "dev", token + " "),  # not character for character
        SecretExample("slack.2", False, "dev", "x" + token),
    ]
    positives = positive_texts(examples)
    assert [is_label_conflict(e, positives) for e in examples] == [False, True, False, False]
