"""`zkconsumer exporter` scraped by a real Prometheus: PromQL and the JSON API give the true lag and ownership of zkconsumer, Scala-only, mixed and member-less groups, and every query of the Grafana dashboard returns their series."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import grafana_dashboard, members
from harness.members import Recorder, drain, keys_of, wait_for_balanced
from harness.prometheus import Prometheus
from harness.scala import ScalaMember
from zkconsumer import ConsumerConnector
from zkconsumer.testing.probes import ClusterStartError, free_port
from zkconsumer.zookeeper import znodes

pytestmark = [pytest.mark.cluster, pytest.mark.ecosystem]

ROOT = Path(__file__).resolve().parents[2]
ALERTS = ROOT / "zkconsumer" / "exporter" / "alerts.yml"


class ExporterProcess:
    """`zkconsumer exporter` as an operator runs it: its own process, stopped with SIGTERM."""

    def __init__(self, zookeeper_connect: str, log_path: Path) -> None:
        self.port = free_port()
        self.log_path = log_path
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed by stop()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "zkconsumer.cli.main", "exporter", "--zookeeper", zookeeper_connect]
            + ["--listen", f"127.0.0.1:{self.port}", "--interval", "1", "--window", "30"],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def log_tail(self) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-30:])

    def get(self, path: str) -> tuple[int, Any]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5.0) as answer:
                body = answer.read()
                return answer.status, json.loads(body) if path.startswith("/v1") else body.decode()
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read()) if path.startswith("/v1") else ""

    def wait_healthy(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"the exporter exited ({self.process.returncode}):\n{self.log_tail()}", pytrace=False)
            try:
                if self.get("/healthz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        pytest.fail(f"the exporter never refreshed within {timeout:g} s:\n{self.log_tail()}", pytrace=False)

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
            return -9
        finally:
            self._log.close()


def eventually(check: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    """check()'s first truthy answer; fails with its last answer after `timeout`."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.5)
    pytest.fail(f"{what}: never true within {timeout:g} s; last answer {last!r}", pytrace=False)


@pytest.fixture
def exporter(cluster, tmp_path) -> Iterator[ExporterProcess]:  # type: ignore[no-untyped-def]
    running = ExporterProcess(cluster.zookeeper_connect, tmp_path / "exporter.log")
    yield running
    if running.process.poll() is None:
        running.stop()


def test_prometheus_and_the_json_api_give_the_true_lag_and_ownership(  # type: ignore[no-untyped-def]
    cluster, zk, topic_factory, produce, group_id, exporter, tmp_path
) -> None:
    topic = topic_factory(partitions=2)
    produce(topic, 20, partitions=2)  # 10 per partition
    live, stopped, scala, mixed = (f"{group_id}-{kind}" for kind in ("live", "stopped", "scala", "mixed"))

    # A group with committed offsets and no live member: 4 and 7 of 10 consumed.
    for partition, offset in ((0, 4), (1, 7)):
        zk.create(znodes.offset_path(stopped, topic, partition), str(offset).encode(), makepath=True)
    # A Scala-only group (one 1.1.1 member) and a mixed one (a Scala member and a zkconsumer
    # member, one partition each), all auto-committing every 0.5 s.
    committing = {"auto.commit.enable": "true", "auto.commit.interval.ms": 500}
    scala_members = [
        ScalaMember(cluster.zookeeper_connect, group, name, workdir=tmp_path / name, topics={topic: 1},
                    properties=committing)
        for group, name in ((scala, "s1"), (mixed, "s2"))
    ]  # fmt: skip
    for member in scala_members:
        member.start()
    recorder = Recorder()
    base = {"zookeeper.connect": cluster.zookeeper_connect, **members.FAST}
    live_settings = {**base, "group.id": live, "consumer.id": "a", "auto.commit.enable": False}
    mixed_settings = {**base, "group.id": mixed, "consumer.id": "z", "auto.commit.enable": True}
    mixed_settings["auto.commit.interval.ms"] = 500
    try:
        for member in scala_members:
            member.wait_ready()
        with ConsumerConnector(live_settings) as conn, ConsumerConnector(mixed_settings) as mixed_conn:
            drain("a", conn.create_message_streams({topic: 1})[topic], recorder)
            drain("z", mixed_conn.create_message_streams({topic: 1})[topic], Recorder())
            recorder.wait_for({(topic, p, o) for p in (0, 1) for o in range(10)}, timeout=60)
            conn.commit_offsets()  # at 10 and 10
            owners = wait_for_balanced(zk, live, [topic], members=1)
            wait_for_balanced(zk, mixed, [topic], members=2)
            # 6 more (13 per partition): the live member reads them but commits nothing: lag 3 + 3.
            recorder.wait_for(keys_of(produce(topic, 6, partitions=2, start=20)), timeout=60)
            eventually(lambda: len(scala_members[0].deliveries()) == 26, "the Scala member read all 26")
            truth = {
                (live, "0"): 3.0, (live, "1"): 3.0,
                (stopped, "0"): 9.0, (stopped, "1"): 6.0,
                (scala, "0"): 0.0, (scala, "1"): 0.0,
                (mixed, "0"): 0.0, (mixed, "1"): 0.0,
            }  # fmt: skip
            groups = (live, stopped, scala, mixed)
            _check_prometheus_and_api(cluster, exporter, tmp_path, topic, truth, owners, groups)
    finally:
        for member in scala_members:
            member.stop()
    assert exporter.stop() == 0, exporter.log_tail()
    assert "Traceback" not in exporter.log_path.read_text()


def _check_prometheus_and_api(  # type: ignore[no-untyped-def]
    cluster, exporter: ExporterProcess, tmp_path: Path, topic: str, truth, owners, groups: tuple[str, ...]
) -> None:
    live, stopped, scala, mixed = groups
    exporter.wait_healthy()
    try:
        prom = Prometheus(f"127.0.0.1:{exporter.port}", tmp_path / "prometheus", rules=ALERTS).start()
    except ClusterStartError as exc:
        pytest.fail(f"Prometheus did not start:\n{exc}", pytrace=False)
    try:
        prom.wait_for_target_up()
        selector = f'group=~"{"|".join(groups)}", topic="{topic}"'

        def lags() -> dict[tuple[str, ...], float] | None:
            found = prom.values(f"zkconsumer_partition_lag{{{selector}}}", "group", "partition")
            return found if found == truth else None

        try:
            eventually(lags, "PromQL's lag per partition is the true lag", timeout=90)
        except BaseException:
            print(exporter.get(f"/v1/groups/{stopped}/partitions"), exporter.log_tail(), prom.log_tail())
            raise
        unowned = prom.values(f'zkconsumer_group_unowned_partitions{{group=~"{"|".join(groups)}"}}', "group")
        assert unowned == {(live,): 0.0, (stopped,): 2.0, (scala,): 0.0, (mixed,): 0.0}
        kinds = prom.values(f'zkconsumer_group_members{{group=~"{"|".join(groups)}"}} > 0', "group", "kind")
        assert kinds == {
            (live, "zkconsumer"): 1.0,
            (scala, "scala"): 1.0,
            (mixed, "scala"): 1.0,
            (mixed, "zkconsumer"): 1.0,
        }
        owner_rows = prom.query(f'zkconsumer_partition_owner_info{{group="{live}"}}')
        assert {(r["metric"]["partition"], r["metric"]["owner"]) for r in owner_rows} == {
            (str(p), owners[(topic, p)]) for p in (0, 1)
        }
        assert prom.values(f'sum(zkconsumer_group_lag{{group="{stopped}"}})') == {(): 15.0}
        # Lag in seconds from the exporter's own samples: the stopped group's messages have waited
        # since before its first sample; the Scala group has nothing waiting.
        waited = eventually(
            lambda: prom.values(f'zkconsumer_partition_lag_seconds{{group="{stopped}"}} >= 2', "partition"),
            "the stopped group's messages waited 2 s or more",
        )
        assert set(waited) == {("0",), ("1",)}
        assert prom.values(f'zkconsumer_partition_lag_seconds{{group="{scala}"}}', "partition") == {
            ("0",): 0.0,
            ("1",): 0.0,
        }
        statuses = prom.values('zkconsumer_group_status_info{group=~".*-stopped"}', "group", "status")
        assert statuses[(stopped, "ERR")] == 1.0  # nobody owns partitions whose messages wait
        assert prom.values("zkconsumer_exporter_zookeeper_connected") == {(): 1.0}
        eventually(
            lambda: prom.values("rate(zkconsumer_exporter_refreshes_total{result='ok'}[5s]) > 0"),
            "the exporter's refreshes counted, as a rate",
        )
        rules = prom.rules()
        assert len(rules) == ALERTS.read_text().count("- alert: ") and {r["health"] for r in rules} == {"ok"}, rules

        # The JSON API says the same.
        code, doc = exporter.get("/v1/groups")
        assert code == 200 and set(groups) <= {g["group"] for g in doc["groups"]}
        summary = {g["group"]: g for g in doc["groups"]}
        assert (summary[stopped]["unowned_partitions"], summary[stopped]["total_lag"]) == (2, 15)
        for group in groups:
            code, doc = exporter.get(f"/v1/groups/{group}/partitions")
            assert code == 200
            got = {(group, str(row["partition"])): float(row["lag"]) for row in doc["partitions"]}
            assert got == {k: v for k, v in truth.items() if k[0] == group}
        code, doc = exporter.get(f"/v1/groups/{stopped}/status")
        assert (code, doc["status"], doc["members"]) == (200, "ERR", [])
        assert [r["ownership"] for r in doc["partitions"]] == ["unowned", "unowned"]
        code, doc = exporter.get("/v1/groups/no-such-group/status")
        assert code == 404 and doc["error"] is True and "no-such-group" in doc["message"]

        _check_dashboard(prom, f"127.0.0.1:{exporter.port}", groups)
    finally:
        prom.stop()


def _check_dashboard(prom: Prometheus, instance: str, groups: tuple[str, ...]) -> None:
    """Every query of the Grafana dashboard (Grafana itself is not in Debian) as Grafana would send it
    to this Prometheus: the variables' label_values over the series API, then each panel's targets
    with the variables set to this exporter and these groups (range queries over the last 30 s for
    graphs, instant ones for stats and tables). Each returns series, and only of the chosen groups."""
    began, dashboard = time.monotonic(), grafana_dashboard.load()
    values: dict[str, list[str]] = {}
    for variable in grafana_dashboard.variables(dashboard):
        selector = grafana_dashboard.substitute(variable.selector, values, "5s")
        answer = prom.get("/api/v1/series", **{"match[]": selector, "start": str(time.time() - 300)})
        assert answer.get("status") == "success", (variable.name, selector, answer)
        found = {series.get(variable.label, "") for series in answer["data"]}
        assert found, f"the dashboard's variable {variable.name} ({selector}) finds no {variable.label}"
        wanted = {"instance": [instance], "group": list(groups)}[variable.name]
        assert set(wanted) <= found, (variable.name, wanted, found)
        values[variable.name] = wanted
    now, series = time.time(), 0
    for query in grafana_dashboard.queries(dashboard):
        expr = grafana_dashboard.substitute(query.expr, values, "5s")
        if query.instant:
            answer = prom.get("/api/v1/query", query=expr)
        else:
            answer = prom.get("/api/v1/query_range", query=expr, start=str(now - 30), end=str(now), step="2")
        assert answer.get("status") == "success", (query.where, expr, answer)
        result = answer["data"]["result"]
        assert result, f"the dashboard's panel {query.where} finds no series: {expr}"
        assert {r["metric"].get("group", groups[0]) for r in result} <= set(groups), (query.where, result)
        series += len(result)
    print(
        f"the dashboard's {len(grafana_dashboard.queries(dashboard))} queries: {series} series, {time.monotonic() - began:.2f} s"
    )
