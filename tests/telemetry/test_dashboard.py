"""deploy/grafana/mcpward-dashboard.json: a Grafana dashboard with a datasource variable whose
queries name only metrics the gateway exports, and that shows every metric it exports."""

from __future__ import annotations

import json
import re

from mcpward.telemetry.histogram import Histogram
from mcpward.telemetry.metrics import GatewayMetrics, LedgerCounts
from tests.support.paths import REPO_ROOT

DASHBOARD = REPO_ROOT / "deploy" / "grafana" / "mcpward-dashboard.json"
SUFFIXES = ("_total", "_bucket", "_count", "_sum")


def exported_families() -> set[str]:
    """Every family a gateway's registry exposes (all of them made to appear)."""
    metrics = GatewayMetrics(["a"])
    metrics.watch_holds(lambda: 0)
    metrics.watch_ledger(lambda: LedgerCounts(1, 1, Histogram()))
    return {family.name for family in metrics.registry.collect()}


def family_of(sample_name: str, families: set[str]) -> str:
    for suffix in SUFFIXES:
        if sample_name.endswith(suffix) and sample_name[: -len(suffix)] in families:
            return sample_name[: -len(suffix)]
    return sample_name


def test_dashboard_queries_exist_and_cover_every_metric() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    assert panels and len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])
    families = exported_families()
    queried: set[str] = set()
    for panel in panels:
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "${datasource}"
            for name in re.findall(r"\bmcpward_[a-z_]+", target["expr"]):
                family = family_of(name, families)
                assert family in families, f"{panel['title']}: {name} is not exported"
                queried.add(family)
    assert queried == families, f"no panel for {families - queried}"
