"""`python -m harness.lab_probe zk|kafka|tcp|echo|rtt ...`: what a process in a lab host can reach, as one JSON line.

Run inside a lab namespace (`LabHost.command`), it answers whether a kazoo client there reaches
ZooKeeper, a confluent-kafka client a broker, or a TCP connect a port, within a time limit, and
measures round trips through an echo server. `probe(host, ...)` runs it from a test.

    {"ok": true, "seconds": 0.31, ...}      exit code 0 when ok, 1 otherwise
"""

from __future__ import annotations

import argparse
import json
import logging
import select
import socket
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

from harness import python_env


def _zk(hosts: str, timeout: float) -> dict[str, Any]:
    from kazoo.client import KazooClient

    from zkconsumer.zookeeper.handler import make_handler

    # zkconsumer's handler, as a member connects: each server gets timeout ÷ servers to answer a
    # connect (stock kazoo gives one silent server the whole timeout, past this probe's deadline).
    client = KazooClient(
        hosts=hosts, timeout=timeout, handler=make_handler(hosts), connection_retry={"max_tries": -1, "max_delay": 0.5}
    )
    try:
        client.start(timeout=timeout)
        began = time.monotonic()
        children = client.get_children("/")
        return {"ok": True, "children": len(children), "request_s": time.monotonic() - began}
    finally:
        client.stop()
        client.close()


def _kafka(bootstrap: str, timeout: float) -> dict[str, Any]:
    from confluent_kafka.admin import AdminClient

    quiet = logging.getLogger("lab_probe.librdkafka")
    quiet.setLevel(logging.CRITICAL)
    client = AdminClient({"bootstrap.servers": bootstrap, "logger": quiet, "socket.connection.setup.timeout.ms": 3000})
    meta = client.list_topics(timeout=timeout)
    return {"ok": bool(meta.brokers), "brokers": sorted(meta.brokers), "controller": meta.controller_id}


def _tcp(address: str, timeout: float) -> dict[str, Any]:
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=timeout):
        return {"ok": True}


def _rtt(address: str, count: int, timeout: float) -> dict[str, Any]:
    """Median, min and max round trip (ms) of 100-byte messages through an echo server."""
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        rtts = []
        for _ in range(count):
            began = time.monotonic()
            sock.sendall(b"x" * 100)
            got = 0
            while got < 100:
                chunk = sock.recv(65536)
                if not chunk:
                    raise ConnectionError("echo server closed")
                got += len(chunk)
            rtts.append((time.monotonic() - began) * 1000.0)
    return {"ok": True, "median_ms": statistics.median(rtts), "min_ms": min(rtts), "max_ms": max(rtts)}


def _echo(address: str) -> None:
    """An echo server; prints "ready" once it listens, serves until killed."""
    host, _, port = address.rpartition(":")
    server = socket.create_server((host, int(port)))
    print("ready", flush=True)

    def serve(conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    while True:
        conn, _ = server.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("what", choices=["zk", "kafka", "tcp", "rtt", "echo"])
    parser.add_argument("target", help="zookeeper hosts, bootstrap servers, or HOST:PORT")
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--count", type=int, default=20)
    args = parser.parse_args(argv)
    if args.what == "echo":
        _echo(args.target)
        return 0
    began = time.monotonic()
    try:
        if args.what == "zk":
            result = _zk(args.target, args.timeout)
        elif args.what == "kafka":
            result = _kafka(args.target, args.timeout)
        elif args.what == "tcp":
            result = _tcp(args.target, args.timeout)
        else:
            result = _rtt(args.target, args.count, args.timeout)
    except Exception as exc:  # noqa: BLE001 - the answer is that it could not
        result = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    result["seconds"] = round(time.monotonic() - began, 3)
    print(json.dumps(result), flush=True)
    return 0 if result["ok"] else 1


def probe(host: Any, what: str, target: str, *, timeout: float = 5.0, **options: Any) -> dict[str, Any]:
    """Run the probe in lab host `host` (a netlab.LabHost) and return its answer."""
    argv = [sys.executable, "-m", "harness.lab_probe", what, target, f"--timeout={timeout}"]
    argv += [f"--{k}={v}" for k, v in options.items()]
    done = subprocess.run(host.command(argv), capture_output=True, text=True, timeout=timeout + 60, env=python_env())
    lines = done.stdout.strip().splitlines()
    if not lines:
        raise RuntimeError(f"probe {what} {target} in {host.name} printed nothing; stderr:\n{done.stderr[-2000:]}")
    answer: dict[str, Any] = json.loads(lines[-1])
    return answer


def start_echo(host: Any, port: int = 7000) -> subprocess.Popen[str]:
    """An echo server on `host`'s address; returns once it listens (kill it when done)."""
    proc = host.popen(
        [sys.executable, "-m", "harness.lab_probe", "echo", f"{host.address}:{port}"],
        stdout=subprocess.PIPE,
        text=True,
        env=python_env(),
    )
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 30.0)
    if not ready or proc.stdout.readline().strip() != "ready":
        proc.kill()
        raise RuntimeError(f"echo server in {host.name} did not start")
    return proc  # type: ignore[no-any-return]


if __name__ == "__main__":
    sys.exit(main())
