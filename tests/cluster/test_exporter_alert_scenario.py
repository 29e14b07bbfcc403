"""Every alert rule over a recorded real scenario: the exporter's /metrics on a real cluster (a group that stops, one that stalls, one retired, a rolling restart), replayed through Prometheus's rule engine (promtool), a second of the recording a minute of the rules' clock."""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from harness.prometheus import promtool
from zkconsumer.exporter.exporter import Exporter
from zkconsumer.exporter.log_ends import LogEnds
from zkconsumer.zookeeper import znodes

pytestmark = [pytest.mark.cluster]

ROOT = Path(__file__).resolve().parents[2]
ALERTS = ROOT / "zkconsumer" / "exporter" / "alerts.yml"
SECONDS = 42  # recorded samples (one a second); the rules read each as a minute
RULE_FAMILIES = re.compile(r"zkconsumer_(group|exporter)_\w+")


def record(port: int, seconds: int, events: dict[int, list]) -> list[dict[str, float]]:  # type: ignore[type-arg]
    """One scrape a second: series text -> value; `events[t]` run just before the scrape of second t."""
    scrapes = []
    start = time.monotonic()
    for t in range(seconds):
        for event in events.get(t, []):
            event()
        time.sleep(max(0.0, start + t - time.monotonic()))
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
            text = answer.read().decode()
        sample = {}
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                if RULE_FAMILIES.fullmatch(s.name) and not s.name.endswith("_created"):
                    labels = ", ".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
                    sample[f"{s.name}{{{labels}}}"] = s.value
        scrapes.append(sample)
    return scrapes


def rule_test(scrapes: list[dict[str, float]], checks: list[tuple[int, str, list[dict[str, str]]]]) -> str:
    series = sorted({key for sample in scrapes for key in sample})
    lines = [
        "rule_files:",
        f"  - {ALERTS}",
        "evaluation_interval: 1m",
        "tests:",
        "  - interval: 1m",
        "    input_series:",
    ]
    for key in series:
        name, labels = key.split("{", 1)
        labels = labels.rstrip("}")
        with_job = f'{name}{{{labels}{", " if labels else ""}job="zkconsumer-exporter", instance="x:9308"}}'
        values = " ".join(repr(s[key]) if key in s else "_" for s in scrapes)
        lines += [f"      - series: '{with_job}'", f"        values: '{values}'"]
    lines.append("    alert_rule_test:")
    for minute, alert, expected in checks:
        lines += [
            f"      - eval_time: {minute}m",
            f"        alertname: {alert}",
            "        exp_alerts:" + (" []" if not expected else ""),
        ]
        for labels in expected:
            summary = labels.pop("summary")
            lines.append("          - exp_labels:")
            lines += [f"              {k}: {v}" for k, v in labels.items()]
            lines += ["            exp_annotations:", f'              summary: "{summary}"']
    return "\n".join(lines) + "\n"


def test_every_rule_over_a_recorded_scenario(cluster, zk, topic_factory, produce, group_id, tmp_path) -> None:  # type: ignore[no-untyped-def]
    topic = topic_factory()
    produce(topic, 20)
    stops, stalls, retired, restarting = (f"{group_id}-{name}" for name in ("stops", "stalls", "retired", "restart"))

    def registration() -> bytes:
        return json.dumps({"version": 1, "subscription": {topic: 1}, "pattern": "static", "timestamp": "1"}).encode()

    def join(group: str) -> None:  # a member of the test's session, owning the partition
        zk.create(znodes.member_path(group, f"{group}_m"), registration(), ephemeral=True, makepath=True)
        zk.create(znodes.owner_path(group, topic, 0), f"{group}_m-0".encode(), ephemeral=True, makepath=True)

    def leave(group: str) -> None:
        zk.delete(znodes.owner_path(group, topic, 0))
        zk.delete(znodes.member_path(group, f"{group}_m"))

    for group in (retired, stalls, restarting):
        zk.create(znodes.offset_path(group, topic, 0), b"5", makepath=True)
    join(stalls)
    join(restarting)
    stop = threading.Event()

    def commits() -> None:  # "stalls" commits offset 5 again and again; "restart" keeps up
        offset, log_end = 5, 20
        while not stop.wait(1.0):
            zk.set(znodes.offset_path(stalls, topic, 0), b"5")
            offset = min(offset + 3, log_end)
            zk.set(znodes.offset_path(restarting, topic, 0), str(offset).encode())
            produce(topic, 1)
            log_end += 1

    client = cluster.zk_client()
    with LogEnds(cluster.bootstrap_servers, timeout_s=1.0) as ends:
        exporter = Exporter(
            client, ends, host="127.0.0.1", port=0, interval_s=1.0, window_s=10.0,
            groups=re.compile(re.escape(group_id) + ".*"), expire_group_after_s=30.0,
        )  # fmt: skip
        exporter.start()
        writer = threading.Thread(target=commits, name="scenario-commits", daemon=True)
        writer.start()
        try:
            exporter.wait_for_refresh(0, 30.0)
            events = {
                12: [lambda: leave(restarting)],  # a rolling restart: no member for 3 seconds
                15: [lambda: join(restarting)],
                20: [lambda: zk.create(znodes.offset_path(stops, topic, 0), b"5", makepath=True)],
            }
            scrapes = record(exporter.port, SECONDS, events)
        finally:
            stop.set()
            writer.join(10)
            assert exporter.stop(10)
            client.stop()
            client.close()
    last = SECONDS - 1
    stopped = "Group {} has no member while messages wait"
    checks = [
        # "retired" (no member, its last commit before the start) pages as stopped, then is expired (30 s)
        (22, "ZkConsumerGroupStopped", [{"severity": "warning", "group": retired, "summary": stopped.format(retired)}]),
        # "restart" was ERR for its 3 seconds without member (partitions unowned, messages waiting): not paged
        (
            16,
            "ZkConsumerGroupError",
            [
                {
                    "severity": "critical",
                    "group": stalls,
                    "summary": f"Group {stalls} is ERR: 1 partitions ERR, STOP or STALL",
                }
            ],
        ),  # fmt: skip
        # at the end: "stops" (no member since second 20) pages; "retired" is gone, "restart" never paged
        (last, "ZkConsumerGroupStopped", [{"severity": "warning", "group": stops, "summary": stopped.format(stops)}]),
        (
            last,
            "ZkConsumerGroupError",
            [
                {
                    "severity": "critical",
                    "group": stalls,
                    "summary": f"Group {stalls} is ERR: 1 partitions ERR, STOP or STALL",
                }
            ],
        ),  # fmt: skip
        *(
            (last, alert, [])
            for alert in (
                "ZkConsumerGroupLagGrowing",
                "ZkConsumerPartitionsUnowned",
                "ZkConsumerPartitionsUnseen",
                "ZkConsumerExporterStale",
                "ZkConsumerExporterDown",
                "ZkConsumerExporterZooKeeperDisconnected",
            )
        ),  # fmt: skip
    ]
    (tmp_path / "scenario.yml").write_text(rule_test(scrapes, checks))
    result = promtool("test", "rules", "scenario.yml", cwd=tmp_path)

    def status(sample: dict[str, float], group: str) -> str:
        value = sample.get('zkconsumer_group_status{group="' + group + '"}')
        return "-" if value is None else str(int(value))

    groups = (stops, stalls, retired, restarting)
    timeline = [f"{t:2d}s " + " ".join(status(s, g) for g in groups) for t, s in enumerate(scrapes)]
    report = "\n".join(["stops stalls retired restart (zkconsumer_group_status)", *timeline])
    assert result.returncode == 0, "\n".join([result.stdout[:6000], result.stderr[-2000:], report])
    print(report)
