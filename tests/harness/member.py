"""`python -m harness.member`: one group member in its own process, logging each delivery.

Each delivered message becomes a line "<topic> <partition> <offset>" in --out (flushed at
once), so a test can kill -9 the process and still know exactly what it handed out.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

from zkconsumer import ConsumerConnector, Whitelist
from zkconsumer.errors import ConsumerTimeout


def command(
    zookeeper: str, group: str, topic: str, out: Path, *, streams: int = 1, properties: Mapping[str, object] = {}
) -> list[str]:
    """The argv that starts this module as a member (run it with harness.python_env())."""
    props = [f"--property={k}={v}" for k, v in properties.items()]
    return [sys.executable, "-m", "harness.member", "--zookeeper", zookeeper, "--group", group, "--topic", topic,
            "--streams", str(streams), "--out", str(out), *props]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--zookeeper", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", help="static subscription topic")
    parser.add_argument("--whitelist", help="wildcard subscription regex")
    parser.add_argument("--streams", type=int, default=1)
    parser.add_argument("--out", required=True)
    parser.add_argument("--property", action="append", default=[], help="consumer property k=v")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    props: dict[str, object] = {
        "zookeeper.connect": args.zookeeper,
        "group.id": args.group,
        "auto.offset.reset": "smallest",
        "consumer.timeout.ms": 500,
    }
    props.update(dict(p.split("=", 1) for p in args.property))
    connector = ConsumerConnector(props)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    if args.whitelist:
        streams = connector.create_message_streams_by_filter(Whitelist(args.whitelist), args.streams)
    else:
        streams = connector.create_message_streams({args.topic: args.streams})[args.topic]
    print(json.dumps({"consumer_id": connector.consumer_id}), flush=True)
    lock = threading.Lock()
    with open(args.out, "a", buffering=1) as out:

        def drain(stream) -> None:  # type: ignore[no-untyped-def]
            while not stop.is_set():
                try:
                    for msg in stream:
                        with lock:
                            out.write(f"{msg.topic()} {msg.partition()} {msg.offset()}\n")
                        if stop.is_set():
                            break
                    else:
                        return
                except ConsumerTimeout:
                    continue

        threads = [threading.Thread(target=drain, args=(s,), daemon=True) for s in streams]
        for t in threads:
            t.start()
        stop.wait()
        connector.shutdown()
        for t in threads:
            t.join(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
