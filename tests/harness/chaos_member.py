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
import time
from typing import TextIO

from harness.chaos_history import now
from zkconsumer import ConsumerConnector, Whitelist
from zkconsumer.consumer.stream import KafkaStream
from zkconsumer.errors import ConsumerError, ConsumerTimeout


def _session_of(connector: ConsumerConnector) -> tuple[int, bytes] | None:
    group = getattr(connector, "group", None)  # absent on broker coordination: no ZooKeeper session
    return None if group is None else group.client.client_id


def write_session_file(connector: ConsumerConnector, path: str) -> tuple[int, bytes] | None:
    """Write the member's ZooKeeper session id (hex) and password to `path`; return what was written."""
    current = _session_of(connector)
    if current is not None:
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{current[0]:x} {current[1].hex()}\n")
        os.replace(tmp, path)  # atomic: the driver never reads half a line
    return current


def keep_session_file(connector: ConsumerConnector, path: str, stop: threading.Event) -> None:
    """Keep `path` holding the member's current session (a new one after an expiry), for the driver."""
    seen = None
    while not stop.wait(0.1):
        current = _session_of(connector)
        if current is not None and current != seen:
            seen = write_session_file(connector, path)


def log_deliveries(stream: KafkaStream, out: TextIO, lock: threading.Lock, stop: threading.Event) -> None:
    """Write one line per delivered message (monotonic time, topic, partition, offset, value) until shutdown."""
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


def sigterm_flag() -> list[bool]:
    """A SIGTERM handler that only sets `flag[0]`: an Event.set() from a handler can deadlock the main
    thread when the signal lands while that thread holds the Event's lock (a second SIGTERM as
    stop.wait() returned did: the member never shut down)."""
    flag = [False]
    signal.signal(signal.SIGTERM, lambda *_: flag.__setitem__(0, True))
    return flag


def serve(connector: ConsumerConnector, streams: list[KafkaStream], out_path: str, terminated: list[bool]) -> None:
    """Tell the driver the member is up, log every delivery to `out_path` and keep `out_path`.session
    current until SIGTERM (`terminated`), then shut the connector down."""
    session_path = out_path + ".session"
    write_session_file(connector, session_path)  # before the line the driver waits for
    print(json.dumps({"consumer_id": connector.consumer_id, "pid": os.getpid()}), flush=True)
    stop = threading.Event()
    lock = threading.Lock()
    with open(out_path, "a", buffering=1) as out:
        threads = [
            threading.Thread(target=log_deliveries, args=(s, out, lock, stop), name=f"drain-{s.name}", daemon=True)
            for s in streams
        ]
        threads.append(
            threading.Thread(
                target=keep_session_file, args=(connector, session_path, stop), name="session-file", daemon=True
            )
        )
        for t in threads:
            t.start()
        while not terminated[0]:
            time.sleep(0.1)
        stop.set()
        connector.shutdown()
        for t in threads:
            t.join(10)


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
    terminated = sigterm_flag()
    connector = ConsumerConnector(props)
    if args.whitelist:
        streams = connector.create_message_streams_by_filter(Whitelist(args.whitelist), args.streams)
    else:
        counts = {t.split(":")[0]: int(t.split(":")[1]) if ":" in t else 1 for t in args.topic}
        streams = [s for group in connector.create_message_streams(counts).values() for s in group]
    serve(connector, streams, args.out, terminated)
    return 0


if __name__ == "__main__":
    sys.exit(main())
