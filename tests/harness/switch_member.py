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
import logging
import sys

from harness.chaos_member import serve, sigterm_flag
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
    terminated = sigterm_flag()
    connector = ConsumerConnector(props)
    streams = connector.create_message_streams({args.topic: args.streams})[args.topic]
    serve(connector, streams, args.out, terminated)
    return 0


if __name__ == "__main__":
    sys.exit(main())
