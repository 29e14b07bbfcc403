"""The exporter's alert rules: `promtool check rules` accepts them and `promtool test rules` proves each fires when it should."""

from __future__ import annotations

import re
from pathlib import Path

from harness.prometheus import promtool

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "zkconsumer" / "exporter" / "alerts.yml"
RULE_TESTS = Path(__file__).with_name("exporter_alerts_test.yml")


def test_promtool_checks_the_rules() -> None:
    result = promtool("check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 8 rules found" in result.stdout


def test_promtool_unit_tests_pass() -> None:
    result = promtool("test", "rules", RULE_TESTS.name, cwd=RULE_TESTS.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_every_alert_is_tested() -> None:
    alerts = set(re.findall(r"^ +- alert: (\S+)$", RULES.read_text(), re.MULTILINE))
    # a firing expectation (a list of alerts follows), not only a "not yet" (exp_alerts: [])
    tested = set(re.findall(r"alertname: (\S+)[^\n]*\n +exp_alerts:\n", RULE_TESTS.read_text()))
    assert len(alerts) == 8 and tested == alerts


def test_every_alert_has_a_case_it_must_not_page_for() -> None:
    """Beside what it must catch, each rule meets its nearby harmless case: a ramp, a planned reset,
    a retired group, a rolling restart, an exporter restart, a blip (an expectation marked "must not"
    lists only the alerts that fire, so the harmless group is checked absent)."""
    alerts = set(re.findall(r"^ +- alert: (\S+)$", RULES.read_text(), re.MULTILINE))
    spared = set(re.findall(r"alertname: (\S+) +# must not", RULE_TESTS.read_text()))
    assert spared == alerts, alerts - spared


def test_a_wrong_expectation_fails(tmp_path: Path) -> None:
    """The rule tests can fail: the same file with one summary changed does."""
    broken = RULE_TESTS.read_text().replace("has no member while messages wait", "is fine")
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "alerts.yml").write_text(RULES.read_text())
    (tmp_path / "rules" / "t.yml").write_text(broken.replace("../../zkconsumer/exporter/alerts.yml", "alerts.yml"))
    result = promtool("test", "rules", "t.yml", cwd=tmp_path / "rules")
    assert result.returncode == 1 and "ZkConsumerGroupStopped" in result.stdout + result.stderr
