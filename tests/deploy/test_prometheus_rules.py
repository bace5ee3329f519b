"""The alert rules: ``promtool check rules`` and the unit tests in deploy/prometheus/tests
(each alert firing and not firing, with its labels and summary)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "lagless-rules.yml"
RULE_TESTS = ROOT / "deploy" / "prometheus" / "tests" / "lagless-rules-test.yml"
ALERTS = {
    "LaglessLagHigh", "LaglessPartitionStalled", "LaglessRebalanceStorm", "LaglessDeadLetters",
    "LaglessInstanceDown",
}  # fmt: skip

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None,
    reason="promtool is not installed (Debian's prometheus package; make tools installs it)",
)


def alerts() -> dict[str, dict[str, object]]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return {rule["alert"]: rule for group in groups for rule in group["rules"]}


def test_the_rules_have_the_issues_alert_names_and_a_summary_naming_their_labels() -> None:
    rules = alerts()
    assert set(rules) == ALERTS
    for name, rule in rules.items():
        summary = str(rule["annotations"]["summary"])  # type: ignore[index]
        labels = ("group",) if name != "LaglessInstanceDown" else ("group", "instance")
        for label in labels:
            assert "$labels." + label in summary, name


def test_every_alert_is_tested_firing_and_not_firing() -> None:
    tests = yaml.safe_load(RULE_TESTS.read_text())["tests"]
    fired = {c["alertname"] for t in tests for c in t["alert_rule_test"] if c["exp_alerts"]}
    quiet = {c["alertname"] for t in tests for c in t["alert_rule_test"] if not c["exp_alerts"]}
    assert fired == ALERTS
    assert quiet == ALERTS


@needs_promtool
def test_promtool_checks_the_rules() -> None:
    done = subprocess.run(
        [str(PROMTOOL), "check", "rules", str(RULES)], check=False, capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 5 rules found" in done.stdout


@needs_promtool
def test_promtool_runs_the_rules_unit_tests() -> None:
    done = subprocess.run(
        [str(PROMTOOL), "test", "rules", RULE_TESTS.name], check=False, capture_output=True,
        text=True, timeout=120, cwd=RULE_TESTS.parent,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


@needs_promtool
def test_a_wrong_expectation_fails(tmp_path: Path) -> None:
    """The unit tests compare labels and annotations: a changed summary fails."""
    wrong = RULE_TESTS.read_text().replace("rebalances 4.0 times", "rebalances 4.5 times")
    wrong = wrong.replace("../lagless-rules.yml", str(RULES))
    (tmp_path / "wrong.yml").write_text(wrong)
    done = subprocess.run(
        [str(PROMTOOL), "test", "rules", "wrong.yml"], check=False, capture_output=True,
        text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode != 0
