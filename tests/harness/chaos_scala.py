"""A real Scala member (1.1.1, or an older release) in a chaos group: a ScalaMember whose deliveries a chaos Checker follows."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from harness.chaos_proxy import TcpProxy
from harness.scala import DEFAULT_RELEASE, ScalaMember

Note = Callable[..., None]  # checker.note(kind, member, detail="")


class ScalaChaosMember:
    """Joins, leaves cleanly (SIGTERM: Scala's shutdown commits) or is killed -9, like ProcessMember.

    Only the properties both consumers know are passed on (zkconsumer.* and librdkafka.* are not).
    Its delivery file has the chaos members' timed format, so `Checker.follow(member.out, ...)`
    judges Scala's deliveries like everyone else's.
    """

    kind = "scala"
    stopped = False  # never SIGSTOPped (the scenarios that do so pick process members)

    def __init__(
        self,
        zookeeper: str,
        group: str,
        props: Mapping[str, object],
        topics: Mapping[str, int],
        workdir: Path,
        name: str,
        note: Note,
        *,
        wrap: Callable[[list[str]], list[str]] | None = None,
        release: str = DEFAULT_RELEASE,
    ) -> None:
        scala_props = {
            k: v
            for k, v in props.items()
            if not k.startswith(("zkconsumer.", "librdkafka.")) and k not in ("zookeeper.connect", "group.id")
        }
        self.member = ScalaMember(
            zookeeper,
            group,
            name,
            workdir=workdir,
            topics=topics,
            properties=scala_props,
            timed=True,
            wrap=wrap,
            release=release,
        )
        self.consumer_id = self.member.consumer_id
        self.out = self.member.out_path
        self.alive = False
        self.proxy: TcpProxy | None = None
        self._note = note

    def start(self) -> ScalaChaosMember:
        self.member.start()
        self.member.wait_ready()
        self.alive = True
        return self

    def session(self) -> tuple[int, bytes] | None:
        return None  # the JVM does not tell: Scala members are never expired by the driver

    def kill(self) -> None:
        self._note("kill", self.consumer_id)
        self.member.kill()
        self.alive = False

    def leave(self, timeout: float = 30.0) -> None:
        """SIGTERM: connector.shutdown() commits and closes the session."""
        if not self.member.running:
            self.alive = False
            return
        self._note("leave", self.consumer_id)
        self.alive = False
        self.member.stop(timeout)

    def exited(self) -> int | None:
        return None if self.member.running else self.member.process.exit_code

    def log_tail(self, lines: int = 30) -> str:
        return self.member.log_tail(lines)

    def describe(self) -> str:
        return f"{self.consumer_id} (Scala 1.1.1, log {self.member.log_path})"
