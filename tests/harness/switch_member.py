"""`python -m harness.switch_member`: an application on the ConsumerConnector API that logs each delivery.

What an operator's application does, unchanged through a migration: `create_message_streams` (or
`create_message_streams_by_filter` with --whitelist), iterate, commit (auto-commit,
`auto.commit.interval.ms`), `shutdown()` on SIGTERM; the coordination (ZooKeeper or the brokers'
group) is whatever its properties say. Each delivery is a line "<clock> <topic> <partition> <offset>
<value>" in --out, flushed at once (<clock>: CLOCK_MONOTONIC, shared by every process of the
machine). While the member has a ZooKeeper session, its id and password (hex) are kept in --out +
".session", so the driver can expire it. It prints one JSON line once its first rebalance is done:
{"consumer_id", "pid"}. With --log-group-leader, librdkafka's JoinGroup answers (which member the
brokers made the group's leader: "LeaderId <id> (me)") are written to its log, and no other debug line.
"""

from __future__ import annotations

import argparse
import logging
import sys

from harness.chaos_member import serve, sigterm_flag
from zkconsumer import ConsumerConnector, Whitelist

JOIN_ANSWER = "JoinGroup response"  # librdkafka's cgrp debug line naming the group's leader (rdkafka_cgrp.c)
# The logger the live switch's seat hands librdkafka (zkconsumer.broker_coordination.shadow).
SEAT_LOGGER = "zkconsumer.coordinator.rebalancer"


def _only_join_answers(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.INFO or JOIN_ANSWER in record.getMessage()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--zookeeper", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True, help="the topic, or with --whitelist the filter's regex")
    parser.add_argument("--whitelist", action="store_true", help="a wildcard subscription: --topic is a regex")
    parser.add_argument("--streams", type=int, default=1)
    parser.add_argument("--out", required=True)
    parser.add_argument("--property", action="append", default=[], help="consumer property k=v, repeatable")
    parser.add_argument("--log-group-leader", action="store_true", help="log librdkafka's JoinGroup answers")
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
    if args.log_group_leader:
        props["librdkafka.debug"] = "cgrp"
        logging.getLogger(SEAT_LOGGER).setLevel(logging.DEBUG)
        for handler in logging.getLogger().handlers:
            handler.addFilter(_only_join_answers)
    props.update(dict(p.split("=", 1) for p in args.property))
    terminated = sigterm_flag()
    connector = ConsumerConnector(props)
    if args.whitelist:
        streams = connector.create_message_streams_by_filter(Whitelist(args.topic), args.streams)
    else:
        streams = connector.create_message_streams({args.topic: args.streams})[args.topic]
    serve(connector, streams, args.out, terminated)
    return 0


if __name__ == "__main__":
    sys.exit(main())
