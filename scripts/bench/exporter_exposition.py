"""The exporter's hand-written exposition beside prometheus_client's generate_latest, alternated rounds, both checked by the official parser.

    .venv/bin/python scripts/bench/exporter_exposition.py --groups 100 --partitions 100 --rounds 5

Builds a view of --groups groups of --partitions partitions each (two samples, every partition
with an owner, a commit and a log end), then per round renders its families both ways: the
exporter's own (families.render_view, what each refresh runs) and generate_latest over the same
families (prometheus_client's, through a registry), alternating which goes first. Before timing,
both texts are parsed by prometheus_client.parser and must hold the same samples.

Last line: groups= partitions= series= hand_median_s= client_median_s= ratio= loadavg=
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from prometheus_client import CollectorRegistry, generate_latest  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402
from prometheus_client.registry import Collector  # noqa: E402

from zkconsumer.admin import group_status  # noqa: E402
from zkconsumer.exporter.families import render_view, view_families  # noqa: E402
from zkconsumer.exporter.group_watch import GroupNodes  # noqa: E402
from zkconsumer.exporter.sampling import Topic, group_sample  # noqa: E402
from zkconsumer.exporter.view import GroupState, ViewState  # noqa: E402
from zkconsumer.exporter.window import GroupWindow  # noqa: E402

REGISTRATION = b'{"version":1,"subscription":{"t":4},"pattern":"static","timestamp":"1"}'


def view(groups: int, partitions: int) -> ViewState:
    states = {}
    topics = {"t": Topic(tuple(range(partitions)), 1)}
    for g in range(groups):
        name = f"group-{g}"
        member = f"{name}_host-1-abc"
        nodes = GroupNodes(
            {member: (REGISTRATION, 7)},
            {("t", p): (str(p).encode(), 10 + p, 1_000 + p) for p in range(partitions)},
            {("t", p): (f"{member}-{p % 4}".encode(), 7) for p in range(partitions)},
            frozenset(),
            frozenset({"t"}),
        )
        samples = tuple(
            group_sample(name, nodes, topics, {"t"}, {("t", p): 2 * p + at // 1000 for p in range(partitions)}, at)
            for at in (1_000, 2_000)
        )
        states[name] = GroupState(name, GroupWindow.of(samples).snapshot(), group_status([s.sample for s in samples]))
    return ViewState(2_000, states, 1.0)


class Families(Collector):
    def __init__(self, state: ViewState) -> None:
        self.state = state

    def collect(self) -> Iterable:  # type: ignore[type-arg]
        return view_families(self.state)


def samples_of(text: bytes) -> set[tuple[str, tuple[tuple[str, str], ...], float]]:
    return {
        (s.name, tuple(sorted(s.labels.items())), s.value)
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    state = view(args.groups, args.partitions)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Families(state))

    def hand() -> bytes:
        return b"".join(render_view(state))

    def client() -> bytes:
        return generate_latest(registry)

    ours, theirs = hand(), client()
    parsed = samples_of(ours)
    if parsed != samples_of(theirs):
        raise SystemExit("the two expositions differ once parsed by prometheus_client.parser")
    timings: dict[str, list[float]] = {"hand": [], "client": []}
    for r in range(args.rounds):
        order = (("hand", hand), ("client", client)) if r % 2 == 0 else (("client", client), ("hand", hand))
        for name, render in order:
            began = time.perf_counter()
            render()
            timings[name].append(time.perf_counter() - began)
        print(f"round {r + 1}: hand {timings['hand'][-1]:.3f} s, client {timings['client'][-1]:.3f} s", flush=True)
    hand_s, client_s = statistics.median(timings["hand"]), statistics.median(timings["client"])
    print(f"medians: hand {hand_s:.3f} s, client {client_s:.3f} s; {len(parsed)} series, {len(ours)} bytes")
    load = "/".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"groups={args.groups} partitions={args.partitions} series={len(parsed)} hand_median_s={hand_s:.4f} "
        f"client_median_s={client_s:.4f} ratio={client_s / hand_s:.2f} loadavg={load}"
    )


if __name__ == "__main__":
    main()
