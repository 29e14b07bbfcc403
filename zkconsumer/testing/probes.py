"""Readiness probes and helpers of the test cluster's JVMs: free ports, four-letter words, waits, kazoo clients, an external cluster."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from zkconsumer.errors import ZkConsumerError
from zkconsumer.testing.process import JavaProcess

if TYPE_CHECKING:
    from kazoo.client import KazooClient


class ClusterStartError(ZkConsumerError, RuntimeError):
    """A JVM did not become ready; the message carries its log tail. Starting it again may work."""

    retriable = True


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def zookeeper_ruok(port: int, timeout: float = 1.0, *, host: str = "127.0.0.1") -> bool:
    """True when the ZooKeeper server on host:port answers the `ruok` four-letter word."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(b"ruok")
            return s.recv(4) == b"imok"
    except OSError:
        return False


def four_letter_word(port: int, word: str, timeout: float = 2.0, *, host: str = "127.0.0.1") -> str | None:
    """The server's whole answer to a four-letter word (srvr, mntr, ...); None if it did not answer
    within `timeout` (each read; a server that keeps the line open without answering counts as none)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(word.encode())
            answer = b""
            while chunk := s.recv(65536):
                answer += chunk
    except OSError:
        return None
    return answer.decode(errors="replace")


def zookeeper_version(port: int, timeout: float = 2.0, *, host: str = "127.0.0.1") -> str | None:
    """The server's version from `srvr` ("3.4.14-4c25d480..., built on ..." -> "3.4.14"); None if no answer."""
    answer = four_letter_word(port, "srvr", timeout, host=host)
    first = (answer or "").partition("\n")[0]  # "Zookeeper version: 3.4.14-..."
    return first.partition(":")[2].strip().split("-")[0].split(",")[0] or None


def wait_until(check: Callable[[], bool], timeout: float, what: str, proc: JavaProcess) -> None:
    """Poll check() until true; fail fast with the log tail if proc died or time ran out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        if not proc.running:
            raise ClusterStartError(
                f"{proc.name} exited with code {proc.exit_code} before {what}; "
                f"log tail ({proc.log_path}):\n{proc.log_tail()}"
            )
        time.sleep(0.2)
    raise ClusterStartError(
        f"{proc.name} not ready after {timeout:.0f}s ({what}); log tail ({proc.log_path}):\n{proc.log_tail()}"
    )


def start_until(
    proc: JavaProcess, check: Callable[[], bool], timeout: float, what: str, *, stop_timeout: float = 10.0
) -> None:
    """Start proc and wait_until check(); on any failure (or an interrupt) stop proc before raising,
    so a server that never got ready leaves no process behind."""
    proc.start()
    try:
        wait_until(check, timeout, what, proc)
    except BaseException:
        proc.stop(timeout=stop_timeout)
        raise


def get_json(url: str, timeout: float) -> Any:
    """GET a JSON endpoint; its decoded body, that of an error answer included (Burrow's 404 for an
    unknown group and Prometheus's 400 for a bad query carry JSON too)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            return json.load(answer)
    except urllib.error.HTTPError as error:
        return json.load(error)


def connect_zk(hosts: str, **kwargs: object) -> KazooClient:
    """A started kazoo client with bounded retries (kazoo's defaults retry forever)."""
    from kazoo.client import KazooClient

    with warnings.catch_warnings():  # a chroot appears only once a broker has started
        warnings.filterwarnings("ignore", "No chroot path exists")
        settings: dict[str, object] = {"timeout": 10.0, "command_retry": {"max_tries": 5, "deadline": 20}}
        client = KazooClient(hosts=hosts, **{**settings, **kwargs})
        client.start(timeout=15)
    return client


@dataclass(frozen=True)
class ExternalCluster:
    """Addresses of a cluster somebody else runs: no process control."""

    zookeeper_connect: str
    bootstrap_servers: str

    def zk_client(self, **kwargs: object) -> KazooClient:
        return connect_zk(self.zookeeper_connect, **kwargs)

    def create_topic(
        self, name: str, partitions: int = 1, replication_factor: int | None = None, timeout: float = 60.0
    ) -> None:
        from zkconsumer.testing.kafka import create_topic

        create_topic(self.bootstrap_servers, name, partitions, replication_factor or 1, timeout)
