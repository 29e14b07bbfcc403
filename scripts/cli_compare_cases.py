"""The live command lines `scripts/cli_compare.py` runs under both checkouts, and the input files they read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# What scripts/cli_compare.py seeds (see its seed()): topics, groups and the scratch groups that
# the writing commands change (seeded again before each checkout's run).
TOPICS = {"orders": 4, "events": 3, "single": 1}
MESSAGES = 30  # per partition; the live group's member reads them all, then 5 more arrive per partition
COMMITTED = {"orders": [10, 20, 30, 0], "events": [5, 5, 5]}  # group `settled`, no members
SCRATCH = "scratch"  # offsets as `settled`'s, for orders only
PEEK = "peek"  # a scratch group that `consume` joins: none before each run
UNREACHABLE = "127.0.0.1:1"  # nothing listens on port 1


@dataclass(frozen=True)
class Case:
    """One command line: its arguments after `zkconsumer`, and what to prepare and show around it."""

    label: str
    args: tuple[str, ...]
    zookeeper: bool = True  # pass --zookeeper <the cluster>; False: args carry it (or leave it out)
    scratch: tuple[str, ...] = ()  # groups seeded again before each run; their ZooKeeper data is shown after
    kafka_scratch: bool = False  # also delete the scratch group's Kafka-committed offsets first
    files: tuple[str, ...] = ()  # files (in the work folder) removed before and shown after the run
    writes: bool = False  # changes what later commands read: run alone, not beside the other checkout's run

    @property
    def alone(self) -> bool:
        """Whether the two checkouts' runs must follow each other (else they run side by side)."""
        return self.writes or bool(self.scratch or self.files)


# Input files for `offsets import` (written into the work folder): one good file per format, and
# bad ones. The import rows name the scratch group, whose offsets are orders 10, 20, 30, 0.
IMPORT_FILES = {
    "good.lines": "/consumers/scratch/offsets/orders/0:12\n/consumers/scratch/offsets/orders/1:20\n",
    "good.json": '{"scratch": {"orders": {"0": 3, "2": 7}}}\n',
    "good.csv": "orders,0,1\norders,3,4\n",
    "groups.csv": "group,topic,partition,offset\nscratch,orders,1,2\nsettled,orders,1,2\n",
    "beyond.lines": "/consumers/scratch/offsets/orders/0:100000\n",
    "negative.lines": "/consumers/scratch/offsets/orders/0:-4\n",
    "nopartition.lines": "/consumers/scratch/offsets/orders/42:1\n",
    "notopic.lines": "/consumers/scratch/offsets/missing-topic/0:1\n",
    "garbled.lines": "this is not an export\n",
    "notanumber.lines": "/consumers/scratch/offsets/orders/0:ten\n",
    "empty.lines": "",
    "bad.json": '{"scratch": [1, 2]\n',
    "short.csv": "orders,0\n",
    "live.lines": "/consumers/live/offsets/orders/0:1\n",
}


def _each(base: tuple[str, ...], variants: list[tuple[str, ...]]) -> list[Case]:
    return [Case(" ".join((*base, *v)), (*base, *v)) for v in variants]


def live_cases(zookeeper: str, bootstrap: str) -> list[Case]:
    """Every live command line, in the order they run (the writing ones last within their noun)."""
    hosts = zookeeper.split("/", 1)[0]
    cases: list[Case] = []
    groups = ["settled", "live", "held", "odd", "multi", "empty", "kafkagroup", "nosuchgroup"]
    cases += [Case("groups list", ("groups", "list")), Case("groups list --json", ("groups", "list", "--json"))]
    for group in groups:
        formats: list[tuple[str, ...]] = (
            [(), ("--members",), ("--json",)] if group in ("settled", "live", "odd") else [()]
        )
        cases += _each(("groups", "describe", "-g", group), formats)
    cases += _each(
        ("groups", "describe"),
        [
            ("--all-groups",),
            ("--all-groups", "--json"),
            ("--all-groups", "--members"),
            ("-g", "settled", "-g", "live"),
            ("-g", "settled", "-t", "orders"),
            ("-g", "settled", "-t", "orders:0,2"),
            ("-g", "settled", "-t", "orders,events"),
            ("-g", "settled", "-t", "missing-topic"),
            ("-g", "settled", "--bootstrap-server", bootstrap),
        ],
    )
    for group in ["settled", "live", "held", "odd", "nosuchgroup"]:
        cases += _each(("groups", "status", "-g", group), [(), ("--json",)] if group == "odd" else [()])
    cases += [Case("groups status --watch", ("groups", "status", "-g", "settled", "--watch", "1", "--interval", "0.5"))]
    for group in ["settled", "live", "held", "odd", "empty", "nosuchgroup"]:
        cases += _each(("verify", "-g", group), [(), ("--json",)] if group in ("live", "odd") else [()])
    cases += [Case("verify --include-internal-topics", ("verify", "-g", "live", "--include-internal-topics"))]
    for group in ["live", "settled", "held", "nosuchgroup"]:
        cases += _each(("groups", "rebalance", "-g", group), [(), ("--json",)] if group == "live" else [()])
    cases += [
        Case(
            "groups rebalance --execute live",
            ("groups", "rebalance", "-g", "live", "--execute", "--timeout", "20"),
            writes=True,
        )
    ]
    cases += _each(
        ("groups", "delete"),
        [("-g", "settled"), ("-g", "live"), ("-g", "held"), ("-g", "nosuchgroup"), ("--all-groups",), ("-t", "events")],
    )
    cases += [
        Case("groups delete --execute scratch", ("groups", "delete", "-g", SCRATCH, "--execute"), scratch=(SCRATCH,)),
        Case(
            "groups delete --execute scratch topic",
            ("groups", "delete", "-g", SCRATCH, "-t", "orders", "--execute"),
            scratch=(SCRATCH,),
        ),
    ]
    cases += _each(
        ("offsets", "export"),
        [
            (),
            ("-g", "settled"),
            ("-g", "settled", "--format", "json"),
            ("-g", "settled", "--json"),
            ("-g", "settled", "--format", "csv"),
            ("-g", "settled", "-g", "multi", "--format", "csv"),
            ("-g", "settled", "--format", "spark"),
            ("-g", "settled", "--format", "spark", "-t", "orders"),
            ("-g", "settled", "-g", "multi", "--format", "spark"),
            ("-g", "odd"),
            ("-g", "odd", "--format", "json"),
            ("-g", "settled", "-t", "events"),
            ("-g", "nosuchgroup"),
        ],
    )
    cases += [
        Case(
            "offsets export --output",
            ("offsets", "export", "-g", "settled", "-o", "out.offsets"),
            files=("out.offsets",),
        )
    ]
    imports: list[tuple[str, ...]] = [
        ("-i", "good.lines"),
        ("-i", "good.lines", "--json"),
        ("-i", "good.lines", "--zookeeper-only"),
        ("-i", "good.json", "--format", "json"),
        ("-i", "good.csv", "--format", "csv", "-g", SCRATCH),
        ("-i", "good.csv", "--format", "csv"),
        ("-i", "groups.csv", "--format", "csv"),
        ("-i", "groups.csv", "--format", "csv", "-g", "settled"),
        ("-i", "beyond.lines"),
        ("-i", "beyond.lines", "--clamp"),
        ("-i", "negative.lines"),
        ("-i", "nopartition.lines"),
        ("-i", "notopic.lines"),
        ("-i", "garbled.lines"),
        ("-i", "notanumber.lines"),
        ("-i", "empty.lines"),
        ("-i", "bad.json", "--format", "json"),
        ("-i", "good.lines", "--format", "json"),
        ("-i", "short.csv", "--format", "csv", "-g", SCRATCH),
        ("-i", "live.lines"),
        ("-i", "no-such-file.lines"),
    ]
    cases += _each(("offsets", "import"), imports)
    cases += [
        Case("offsets import --execute", ("offsets", "import", "-i", "good.lines", "--execute"), scratch=(SCRATCH,)),
        Case(
            "offsets import --execute csv",
            ("offsets", "import", "-i", "good.csv", "--format", "csv", "-g", SCRATCH, "--execute"),
            scratch=(SCRATCH,),
        ),
    ]
    resets: list[tuple[str, ...]] = [
        ("--to-earliest",),
        ("--to-latest",),
        ("--to-current",),
        ("--to-offset", "5"),
        ("--shift-by", "-3"),
        ("--shift-by", "-3", "--partitions", "0,1"),
        ("--to-datetime", "2000-01-01T00:00:00Z"),
        ("--by-duration", "PT1H"),
        ("--to-earliest", "--export"),
        ("--to-earliest", "--json"),
        ("--to-earliest", "--zookeeper-only"),
        ("--shift-by", "1000"),
        ("--shift-by", "1000", "--clamp"),
        ("--to-offset", "100000"),
        ("--to-offset", "-1"),
        (),
        ("--to-earliest", "--to-latest"),
        ("--to-datetime", "yesterday"),
        ("--by-duration", "an hour"),
    ]
    cases += _each(("offsets", "reset", "-g", "settled", "-t", "orders"), resets)
    cases += _each(
        ("offsets", "reset"),
        [
            ("-g", "settled", "-t", "orders:0,2", "--to-offset", "1"),
            ("-g", "settled", "-t", "orders:42", "--to-offset", "1"),
            ("-g", "settled", "-t", "missing-topic", "--to-earliest"),
            ("-g", "settled", "--all-topics", "--to-latest"),
            ("-g", "settled", "-g", "multi", "-t", "orders", "--to-earliest"),
            ("--all-groups", "-t", "events", "--to-earliest"),
            ("-g", "live", "-t", "orders", "--to-earliest"),
            ("-g", "live", "-t", "orders", "--to-earliest", "--force"),
            ("-g", "held", "-t", "orders", "--to-earliest"),
            ("-g", "held", "-t", "orders", "--to-earliest", "--force"),
            ("-g", "odd", "--all-topics", "--to-earliest"),
            ("-g", "kafkagroup", "-t", "orders", "--to-earliest"),
            ("-g", "nosuchgroup", "-t", "orders", "--to-earliest"),
        ],
    )
    scratch_resets: list[tuple[str, ...]] = [
        ("--to-earliest",),
        ("--shift-by", "2", "--partitions", "0,1"),
        ("--to-offset", "100000", "--clamp"),
    ]
    for target in scratch_resets:
        args = ("offsets", "reset", "-g", SCRATCH, "-t", "orders", *target, "--execute")
        cases += [Case(f"offsets reset --execute {' '.join(target)}", args, scratch=(SCRATCH,))]
    cases += _each(
        ("migrate", "plan"),
        [
            ("-g", "settled"),
            ("-g", "settled", "--json"),
            ("-g", "settled", "--to", "zookeeper"),
            ("-g", "settled", "-t", "events"),
            ("-g", "kafkagroup"),
            ("-g", "kafkagroup", "--to", "zookeeper"),
            ("-g", "live"),
            ("-g", "held"),
            ("-g", "odd"),
            ("-g", "nosuchgroup"),
        ],
    )
    cases += _each(
        ("migrate", "offsets"),
        [
            ("-g", "settled", "--to", "kafka"),
            ("-g", "settled", "--to", "kafka", "--json"),
            ("-g", "kafkagroup", "--to", "zookeeper"),
            ("-g", "live", "--to", "kafka"),
        ],
    )
    cases += [
        Case(
            "migrate offsets --execute scratch",
            ("migrate", "offsets", "-g", SCRATCH, "--to", "kafka", "--execute"),
            scratch=(SCRATCH,),
            kafka_scratch=True,
        )
    ]
    cases += _each(
        ("consume", "-t", "orders"),
        [
            ("--partition", "1", "--offset", "2", "--max-messages", "3"),
            ("--partition", "1", "--offset", "earliest", "--max-messages", "2", "--json"),
            ("--partition", "2", "--from-beginning", "--max-messages", "2", "--property", "print.offset=true"),
            ("--partition", "9", "--max-messages", "1"),
            ("--partition", "1", "--offset", "100000", "--max-messages", "1"),
            ("--from-beginning", "--max-messages", "3", "--timeout-ms", "10000", "--partition", "0"),
        ],
    )
    cases += [
        Case(
            "consume group",
            (
                "consume",
                "-t",
                "single",
                "-g",
                PEEK,
                "--from-beginning",
                "--max-messages",
                "3",
                "--timeout-ms",
                "10000",
                "--property",
                "print.partition=true",
                "--property",
                "print.key=true",
            ),  # fmt: skip
            scratch=(PEEK,),
        ),
        Case(
            "consume live group",
            ("consume", "-t", "orders", "-g", "live", "--delete-consumer-offsets", "--max-messages", "1"),
            writes=True,  # refused (the group has a member), unless a change broke that
        ),
    ]
    cases += _each(("top", "-g", "settled"), [("--once",), ("--once", "--json")])
    cases += [Case("top nosuchgroup", ("top", "-g", "nosuchgroup", "--once"))]
    errors: list[tuple[str, ...]] = [
        ("groups", "list", "--zookeeper", f"{UNREACHABLE}/x", "--zk-timeout", "0.5"),
        ("groups", "describe", "-g", "settled", "--zookeeper", UNREACHABLE, "--zk-timeout", "0.5"),
        (
            "offsets",
            "reset",
            "-g",
            "settled",
            "-t",
            "orders",
            "--to-earliest",
            "--zookeeper",
            UNREACHABLE,
            "--zk-timeout",
            "0.5",
        ),
        ("groups", "list", "--zookeeper", f"{hosts}/no-such-chroot"),
        (
            "offsets",
            "reset",
            "-g",
            SCRATCH,
            "-t",
            "orders",
            "--to-earliest",
            "--execute",
            "--zookeeper",
            f"{hosts}/wrong",
        ),
        ("groups", "list", "--zookeeper", hosts),
        ("groups", "list"),
        ("groups", "list", "--zookeeper", zookeeper, "--zk-timeout", "0"),
        ("groups", "list", "--zookeeper", zookeeper, "--zk-timeout", "soon"),
        ("groups", "describe", "--zookeeper", zookeeper),
        ("groups", "list", "--zookeeper", zookeeper, "--no-such-option"),
        ("offsets", "export", "--zookeeper", zookeeper, "--format", "xml"),
        ("offsets", "reset", "--zookeeper", zookeeper, "-g", "settled", "-t", "orders", "--to-offset", "abc"),
        ("groups", "status", "--zookeeper", zookeeper, "-g", "settled", "--watch", "-1"),
        ("consume", "--zookeeper", zookeeper, "-t", "orders", "--max-messages", "0"),
        ("consume", "--zookeeper", zookeeper),
        ("migrate", "plan", "--zookeeper", zookeeper, "-g", "settled", "--to", "nowhere"),
        ("groups", "describe", "--zookeeper", zookeeper, "-g", "settled", "--zk-digest", "nocolon"),
        ("nosuchnoun",),
        ("groups", "nosuchverb"),
        ("--version",),
        (),
    ]
    cases += [Case(f"error {' '.join(args) or '(no arguments)'}", args, zookeeper=False) for args in errors]
    return cases


def write_import_files(folder: Path) -> None:
    """Write IMPORT_FILES into `folder` (the commands run there and name them relatively)."""
    for name, text in IMPORT_FILES.items():
        (folder / name).write_text(text)
