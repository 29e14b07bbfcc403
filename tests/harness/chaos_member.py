"""`python -m harness.chaos_member`: a group member in its own process that logs each delivery.

Each delivered message becomes a line "<clock> <topic> <partition> <offset> <value>" in --out,
flushed at once; <clock> is CLOCK_MONOTONIC, which every process on the machine shares, so the
parent can line deliveries up with its own observations. The member's ZooKeeper session
(id and password, hex) is kept current in --out + ".session", so the parent can expire it.
SIGTERM shuts the member down cleanly; SIGKILL and SIGSTOP are the point of running it apart.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading

from harness.chaos_history import now
from zkconsumer import ConsumerConnector, Whitelist
from zkconsumer.consumer.stream import KafkaStream
from zkconsumer.errors import ConsumerError, ConsumerTimeout


def _write_session(path: str, client_id: tuple[int, bytes] | None) -> None:
    if client_id is None:
        return
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{client_id[0]:x} {client_id[1].hex()}\n")
    os.replace(tmp, path)  # atomic: the parent never reads half a line


def _follow_session(connector: ConsumerConnector, path: str, stop: threading.Event) -> None:
    seen = None
    while not stop.wait(0.1):
        current = connector.group.client.client_id
        if current != seen:
            _write_session(path, current)
            seen = current


def _drain(stream: KafkaStream, out, lock: threading.Lock, stop: threading.Event) -> None:  # type: ignore[no-untyped-def]
    while not stop.is_set():
        try:
            for msg in stream:
                at = now()
                value = (msg.value() or b"-").decode(errors="replace").replace(" ", "_").replace("\n", "_")
                with lock:
                    out.write(f"{at:.6f} {msg.topic()} {msg.partition()} {msg.offset()} {value}\n")
            return  # the connector shut down
        except ConsumerTimeout:
            continue
        except ConsumerError as exc:
            print(f"stream {stream.name} failed: {exc!r}", file=sys.stderr, flush=True)
            return


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--zookeeper", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", action="append", default=[], help="TOPIC[:STREAMS], repeatable")
    parser.add_argument("--whitelist", help="wildcard subscription regex (instead of --topic)")
    parser.add_argument("--streams", type=int, default=1, help="streams of a --whitelist subscription")
    parser.add_argument("--out", required=True)
    parser.add_argument("--property", action="append", default=[], help="consumer property k=v")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(threadName)s %(name)s %(message)s"
    )
    # A member starting on a starved machine may wait longer than one session timeout for its first
    # connection: that is not what the chaos run judges.
    props: dict[str, object] = {
        "zookeeper.connect": args.zookeeper,
        "group.id": args.group,
        "auto.offset.reset": "smallest",
        "consumer.timeout.ms": 200,
        "zookeeper.connection.timeout.ms": 30000,
    }
    props.update(dict(p.split("=", 1) for p in args.property))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    connector = ConsumerConnector(props)
    if args.whitelist:
        streams = connector.create_message_streams_by_filter(Whitelist(args.whitelist), args.streams)
    else:
        counts = {t.split(":")[0]: int(t.split(":")[1]) if ":" in t else 1 for t in args.topic}
        streams = [s for group in connector.create_message_streams(counts).values() for s in group]
    session_path = args.out + ".session"
    _write_session(session_path, connector.group.client.client_id)
    print(json.dumps({"consumer_id": connector.consumer_id, "pid": os.getpid()}), flush=True)
    lock = threading.Lock()
    with open(args.out, "a", buffering=1) as out:
        threads = [
            threading.Thread(target=_drain, args=(s, out, lock, stop), name=f"drain-{s.name}", daemon=True)
            for s in streams
        ]
        threads.append(
            threading.Thread(
                target=_follow_session, args=(connector, session_path, stop), name="session-file", daemon=True
            )
        )
        for t in threads:
            t.start()
        stop.wait()
        connector.shutdown()
        for t in threads:
            t.join(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
