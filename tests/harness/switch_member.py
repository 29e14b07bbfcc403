"""`python -m harness.switch_member`: an application on the ConsumerConnector API that logs each delivery.

What an operator's application does, unchanged through a migration: `create_message_streams`,
iterate, commit (auto-commit, `auto.commit.interval.ms`), `shutdown()` on SIGTERM; the coordination
(ZooKeeper or the brokers' group) is whatever its properties say. Each delivery is a line
"<clock> <topic> <partition> <offset> <value>" in --out, flushed at once (<clock>: CLOCK_MONOTONIC,
shared by every process of the machine). While the member has a ZooKeeper session, its id and
password (hex) are kept in --out + ".session", so the driver can expire it. It prints one JSON line
once its first rebalance is done: {"consumer_id", "pid"}.
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

from harness.chaos_member import keep_session_file, log_deliveries
from zkconsumer import ConsumerConnector


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--zookeeper", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--streams", type=int, default=1)
    parser.add_argument("--out", required=True)
    parser.add_argument("--property", action="append", default=[], help="consumer property k=v, repeatable")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(threadName)s %(name)s %(message)s"
    )
    props: dict[str, object] = {
        "zookeeper.connect": args.zookeeper,
        "group.id": args.group,
        "auto.offset.reset": "smallest",
        "consumer.timeout.ms": 200,
        "auto.commit.interval.ms": 1000,
        "zookeeper.connection.timeout.ms": 30000,  # a starved machine: the first connect may be slow
    }
    props.update(dict(p.split("=", 1) for p in args.property))
    # The handler only flips a flag: an Event.set() from a handler can deadlock the main thread when
    # the signal lands while that thread holds the Event's lock (a second SIGTERM right as stop.wait()
    # returns did, in this harness: the member never shut down).
    terminated = [False]
    signal.signal(signal.SIGTERM, lambda *_: terminated.__setitem__(0, True))
    stop = threading.Event()
    connector = ConsumerConnector(props)
    streams = connector.create_message_streams({args.topic: args.streams})[args.topic]
    print(json.dumps({"consumer_id": connector.consumer_id, "pid": os.getpid()}), flush=True)
    lock = threading.Lock()
    with open(args.out, "a", buffering=1) as out:
        threads = [
            threading.Thread(target=log_deliveries, args=(s, out, lock, stop), name=f"drain-{s.name}", daemon=True)
            for s in streams
        ]
        threads.append(
            threading.Thread(
                target=keep_session_file,
                args=(connector, args.out + ".session", stop),
                name="session-file",
                daemon=True,
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
