"""ZkConsumerGroupLagGrowing over what the exporter really reports for a group that falls ever further behind (w7 probe).

The exporter's zkconsumer_group_max_lag_seconds counts from its own log-end samples, so it is at
most --window (the metric's help says so; zkconsumer_group_max_lag_seconds_lower_bound is 1 then).
The rule asked only for `delta(...[10m]) > 0`: once the wait passed the window the value stood still,
the delta was about 0, and the alert resolved while the group was further behind every minute (now
the rule also fires on a lower bound while the lag in messages grows). Its own
must-fire case (exporter_alerts_test.yml, group "slow") feeds 100+60x30, a wait of 1,900 s that a
600 s window can never report.

Here the values come from the production window and judge (GroupWindow, judge_runs), refreshed once a
minute with the CLI's default --window 600: the producer writes 100 messages a minute, the member
commits 50 a minute further (its lag grows by 50 a minute, its status is Burrow's WARN, which no rule
pages for). The wait reported climbs to 600 s at minute 21 and stays there; the old rule fired from about
minute 22 and was silent again from minute 33 (checked with promtool at 22/26/30/33/40 m), when the real
wait is over 16 minutes and growing.
"""

from __future__ import annotations

from pathlib import Path

from harness.prometheus import promtool
from zkconsumer.admin import judge_runs
from zkconsumer.admin.verdicts import Ownership
from zkconsumer.exporter.sampling import SampleMeta
from zkconsumer.exporter.window import GroupWindow

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "zkconsumer" / "exporter" / "alerts.yml"
KEY = ("orders", 0)
MEMBER = "slow_host-1"
MINUTES = 40
WINDOW_S, INTERVAL_S = 600, 60  # the exporter's default --window; one refresh a minute


def reported_max_lag_seconds() -> list[tuple[float, bool]]:
    """zkconsumer_group_max_lag_seconds and its _lower_bound after each minute's refresh (the exporter's pipeline)."""
    window = GroupWindow(int(WINDOW_S // INTERVAL_S) + 1)  # ExporterView.max_samples
    judged = None
    out: list[tuple[float, bool]] = []
    for minute in range(MINUTES + 1):
        at_ms = minute * 60_000
        log_end, committed = 1_000 + 100 * minute, 1_000 + 50 * minute
        written = (10_000 + minute, at_ms - 1_000)  # (mzxid, mtime): a commit every minute
        record = (committed, written, log_end, f"{MEMBER}-0", Ownership.OWNED)
        meta = SampleMeta(at_ms, (MEMBER,), {MEMBER: "zkconsumer"}, written[1], ())
        window.append(meta, {KEY: record})
        snap = window.snapshot()
        args = (snap.runs, snap.times, snap.first, meta.members)
        verdict, judged = judge_runs(*args) if judged is None else judge_runs(*args, judged)
        age = verdict.partitions[KEY].age
        out.append((age.seconds, age.at_least) if age is not None else (0.0, False))
    return out


def test_the_reported_wait_stands_still_at_the_window_while_the_group_falls_behind() -> None:
    # The fact the rule meets (documented for the metric): not a defect by itself.
    values = reported_max_lag_seconds()
    assert max(seconds for seconds, _ in values) <= WINDOW_S + INTERVAL_S
    assert values[-1] == values[-11], "flat over the last 10 minutes"
    assert all(at_least for _, at_least in values[-11:]), "a lower bound"


def test_lag_growing_still_fires_for_a_group_that_falls_further_behind_every_minute(tmp_path: Path) -> None:
    values = reported_max_lag_seconds()
    labels = 'group="slow", job="zkconsumer-exporter", instance="x:9308"'
    lags = " ".join(str(50 * m) for m in range(MINUTES + 1))
    waits = " ".join(f"{seconds:g}" for seconds, _ in values)
    bounds = " ".join(str(int(at_least)) for _, at_least in values)
    summary = "Group slow falls behind: its oldest unconsumed message waited over 2 minutes all of the last 10"
    expectations = "".join(
        f"""
      - eval_time: {minute}m
        alertname: ZkConsumerGroupLagGrowing
        exp_alerts:
          - exp_labels:
              severity: warning
              group: slow
              job: zkconsumer-exporter
              instance: x:9308
            exp_annotations:
              summary: '{summary} (at least {WINDOW_S} s)'"""
        for minute in (33, MINUTES)  # the old rule was silent from minute 33: the wait stood at the window
    )
    (tmp_path / "alerts.yml").write_text(RULES.read_text())
    (tmp_path / "t.yml").write_text(
        f"""rule_files:
  - alerts.yml
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'zkconsumer_group_max_lag_seconds{{{labels}}}'
        values: '{waits}'
      - series: 'zkconsumer_group_max_lag_seconds_lower_bound{{{labels}}}'
        values: '{bounds}'
      - series: 'zkconsumer_group_lag{{{labels}}}'
        values: '{lags}'
    alert_rule_test:{expectations}
"""
    )
    result = promtool("test", "rules", "t.yml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
