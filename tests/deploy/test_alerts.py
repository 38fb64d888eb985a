"""The shipped Prometheus alerting rules (deploy/monitoring/), checked against the engine itself.

Each rule's expression is read by a small PromQL reader (selectors, label lists of by/on/without,
functions, durations), and every metric and label it names must be in the exposition a real Temporal
runtime serves after the engine recorded one of each of its metrics: renaming a metric or a label in
adapters/metrics.py breaks a test here, as the issue asks (not a string compare against a list).
"""

from __future__ import annotations

import re
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.runtime import Runtime

from adapters.metrics import HISTOGRAM_BUCKETS, EngineMetrics
from config.logs import sdk_telemetry
from skills.run.catalog import ServerState
from skills.spec.models import RunRecord
from tests.conftest import eventually, free_port
from tests.service.http import samples

RULES = Path(__file__).resolve().parents[2] / "deploy" / "monitoring" / "skills-alerts.rules.yaml"

TARGET_LABELS = {"instance", "job"}
"""Labels Prometheus adds to every scraped series: not the engine's to export."""
FUNCTIONS = {"rate", "increase", "irate", "delta", "histogram_quantile", "time", "sum", "max", "min", "avg",
             "count", "absent", "absent_over_time", "max_over_time", "min_over_time", "avg_over_time", "clamp_min",
             "topk", "bottomk", "vector", "scalar"}
KEYWORDS = {"and", "or", "unless", "bool", "offset"}
LABEL_LISTS = {"by", "without", "on", "ignoring", "group_left", "group_right"}
DURATION = re.compile(r"^\d+[smhdwy]$")
TOKEN = re.compile(r'\s*(?:(?P<string>"(?:[^"\\]|\\.)*")|(?P<range>\[[^\]]*\])|(?P<number>\d+(?:\.\d+)?(?:e[+-]?\d+)?)'
                   r'|(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)|(?P<op>=~|!~|!=|==|>=|<=|[-+*/%^(){}=,<>]))')


@dataclass
class Read:
    """What an expression names: metric -> label names matched on it; labels of by/on lists; functions."""

    metrics: dict[str, set[str]] = field(default_factory=dict)
    grouping: set[str] = field(default_factory=set)
    functions: set[str] = field(default_factory=set)


def read_promql(expr: str) -> Read:
    tokens: list[tuple[str, str]] = []
    position = 0
    while position < len(expr.rstrip()):
        match = TOKEN.match(expr, position)
        if match is None or match.end() == position:
            raise ValueError(f"cannot read {expr[position:position + 20]!r} in {expr!r}")
        kind = match.lastgroup or ""
        tokens.append((kind, match[kind]))
        position = match.end()
    depth = 0
    read = Read()
    i = 0
    while i < len(tokens):
        kind, text = tokens[i]
        following = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        if text == "(":
            depth += 1
        elif text == ")":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced ')' in {expr!r}")
        elif kind == "range":
            if not DURATION.match(text[1:-1].strip()):
                raise ValueError(f"{text} is not a range in {expr!r}")
        elif kind == "name" and text in LABEL_LISTS:
            if following == "(":
                close = next(j for j in range(i + 1, len(tokens)) if tokens[j][1] == ")")
                read.grouping |= {t for k, t in tokens[i + 2:close] if k == "name"}
                i = close
        elif kind == "name" and (following == "(" or following in ("by", "without")):  # sum by (x) (...)
            if text not in FUNCTIONS:
                raise ValueError(f"{text}() is no PromQL function this reader knows, in {expr!r}")
            read.functions.add(text)
        elif kind == "name" and text not in KEYWORDS:
            labels = read.metrics.setdefault(text, set())
            if following == "{":
                close = next(j for j in range(i + 1, len(tokens)) if tokens[j][1] == "}")
                matchers = tokens[i + 2:close]
                for j in range(0, len(matchers), 4):  # name op "value" [,]
                    name, op, value = matchers[j:j + 3]
                    if name[0] != "name" or op[0] != "op" or value[0] != "string":
                        raise ValueError(f"bad matcher in {expr!r}")
                    labels.add(name[1])
                i = close
        i += 1
    if depth:
        raise ValueError(f"unbalanced '(' in {expr!r}")
    return read


@pytest.fixture(scope="module")
def exposition() -> dict[str, set[str]]:
    """Metric name -> label names, as a real runtime's Prometheus exporter serves the engine's metrics."""
    address = f"127.0.0.1:{free_port()}"
    runtime = Runtime(telemetry=sdk_telemetry(address, HISTOGRAM_BUCKETS))
    metrics = EngineMetrics(runtime.metric_meter.with_additional_attributes({"task_queue": "q"}))
    from datetime import UTC, datetime, timedelta

    at = datetime(2026, 1, 1, tzinfo=UTC)
    for status in ("success", "error", "skipped"):
        run = RunRecord(run_id=status, skill_id=1, skill_name="s", workflow_id="w", scheduled_at=at, started_at=at,
                        finished_at=at + timedelta(seconds=3), status=status, summary="backoff: x", tier="agent",
                        prompt_tokens=5, completion_tokens=2)
        metrics.run_recorded(run, agent="a", disabled="failures")
        metrics.fire_lag(run, "start")
        metrics.fire_lag(run, "done")
    metrics.overdue_skills(2, at.timestamp())
    metrics.llm_endpoint(False)
    metrics.runs_pruned(3, 4)
    metrics.overlap_skips(1)
    metrics.stuck_skills(1)
    metrics.tool_call("outbox", "ok", 3.0)
    metrics.catalog([ServerState(name="outbox", transport="stdio", status="connected", tools=2)])

    def scrape() -> str | None:
        try:
            with urllib.request.urlopen(f"http://{address}/metrics", timeout=5) as response:
                text = response.read().decode()
        except OSError:
            return None
        return text if "skills_watch_timestamp_seconds" in text else None

    import asyncio

    text = asyncio.run(eventually(scrape, timeout=30))
    found: dict[str, set[str]] = {}
    for name, labels, _ in samples(text):
        found.setdefault(name, set()).update(labels)
    return found


@pytest.fixture(scope="module")
def rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(RULES.read_text())
    return [rule for group in document["groups"] for rule in group["rules"]]


def test_the_rules_file_has_prometheus_shape() -> None:
    document = yaml.safe_load(RULES.read_text())
    assert set(document) == {"groups"}
    names = [group["name"] for group in document["groups"]]
    assert len(names) == len(set(names))
    for group in document["groups"]:
        assert set(group) <= {"name", "interval", "rules"}
        for rule in group["rules"]:
            assert set(rule) <= {"alert", "expr", "for", "keep_firing_for", "labels", "annotations"}, rule
            assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", rule["alert"]), rule["alert"]
            assert "for" not in rule or DURATION.match(rule["for"]), rule["for"]
            assert rule["labels"]["severity"] in {"info", "warning", "critical"}
            assert rule["annotations"]["summary"] and rule["annotations"]["description"]


def test_every_metric_and_label_the_rules_name_is_one_the_engine_exports(
        rules: list[dict[str, Any]], exposition: dict[str, set[str]]) -> None:
    for rule in rules:
        read = read_promql(rule["expr"])
        assert read.metrics, rule["alert"]
        for metric, labels in read.metrics.items():
            assert metric in exposition, f"{rule['alert']}: {metric} is not a metric the engine exports"
            assert labels <= exposition[metric], f"{rule['alert']}: {metric} has no label {labels - exposition[metric]}"
        exported = set().union(*(exposition[m] for m in read.metrics)) | TARGET_LABELS
        assert read.grouping <= exported, f"{rule['alert']}: groups by {read.grouping - exported}, not exported"


def test_the_rules_cover_what_issue_22_asks_for(rules: list[dict[str, Any]]) -> None:
    named = {rule["alert"]: set(read_promql(rule["expr"]).metrics) for rule in rules}
    wanted = {"fire lag": "skills_fire_lag_bucket", "overdue skills": "skills_overdue", "failing skills": "skills_fires",
              "auto-disabled skills": "skills_auto_disables", "LLM endpoint down": "skills_llm_endpoint_up"}
    for what, metric in wanted.items():
        assert any(metric in metrics for metrics in named.values()), f"no rule alerts on {what} ({metric})"


def test_the_fire_lag_buckets_reach_from_seconds_to_hours(exposition: dict[str, set[str]]) -> None:
    buckets = HISTOGRAM_BUCKETS["skills_fire_lag"]
    assert buckets[0] <= 1 and buckets[-1] >= 3600 and list(buckets) == sorted(buckets)
    assert "le" in exposition["skills_fire_lag_bucket"]


def test_the_reader_refuses_what_the_engine_does_not_export(exposition: dict[str, set[str]]) -> None:
    """The check above would catch a renamed metric, a label that is not there, a typo in a function."""
    misspelt = read_promql('sum(rate(skills_fire_lags_bucket{stage="start"}[5m]))')
    assert "skills_fire_lags_bucket" not in exposition and set(misspelt.metrics) == {"skills_fire_lags_bucket"}
    wrong_label = read_promql('skills_fires{state="error"}')
    assert not wrong_label.metrics["skills_fires"] <= exposition["skills_fires"]
    with pytest.raises(ValueError, match="no PromQL function"):
        read_promql("rated(skills_fires[5m])")
    with pytest.raises(ValueError, match="unbalanced"):
        read_promql("sum(rate(skills_fires[5m])")
