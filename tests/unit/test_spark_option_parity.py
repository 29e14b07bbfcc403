"""Spark Kafka source option names: refused by name with what to use instead, or honoured with Spark's meaning
(startingOffsets JSON shape, includeHeaders, timestampType, maxRecordsPerPartition)."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_spark_task_read import Msg

from zkconsumer.spark.kafka_read import ARROW_SCHEMA, ARROW_SCHEMA_WITH_HEADERS, SCHEMA, to_record_batch
from zkconsumer.spark.offsets import OffsetRange, split
from zkconsumer.spark.options import OptionError, parse_options, wants_headers
from zkconsumer.spark.position_options import explicit_offsets
from zkconsumer.spark.refused_options import INSTEAD, refusals
from zkconsumer.spark.source import ZkConsumerDataSource
from zkconsumer.spark.stream_reader import ZkStreamReader

BASE = {"zookeeper.connect": "zk:2181", "group.id": "g", "topics": "t"}


@pytest.mark.parametrize(
    ("option", "value", "instead"),
    [
        ("subscribe", "t", "'topics'"),
        ("subscribePattern", "t.*", "'whitelist'"),
        ("assign", '{"t":[0]}', "'partitions'"),
        ("kafka.bootstrap.servers", "b:9092", "'bootstrap.servers'"),
        ("kafka.group.id", "g", "'group.id'"),
        ("kafka.isolation.level", "read_committed", "'librdkafka.isolation.level'"),
        ("groupIdPrefix", "spark", "'group.id'"),
        ("kafkaConsumer.pollTimeoutMs", "512", "'pollTimeoutMs'"),
    ],
)
@pytest.mark.parametrize("streaming", [True, False])
def test_a_spark_option_this_source_cannot_honour_is_refused_by_name(
    option: str, value: str, instead: str, streaming: bool
) -> None:
    """Before: each went to the legacy properties with a Python warning and was ignored."""
    with pytest.raises(OptionError, match=rf"option '{option.lower()}' is a Spark Kafka source option.*{instead}"):
        parse_options({**BASE, option: value}, streaming=streaming)


def test_every_refusal_is_named_at_once_and_legacy_kafka_properties_stay_accepted() -> None:
    found = refusals(["subscribe", "topic", "zookeeper.connect", "kafka.metrics.reporters"])
    assert [f.split("'")[1] for f in found] == ["subscribe", "topic"]
    assert parse_options({**BASE, "kafka.metrics.reporters": ""}, streaming=True).topics == ("t",)


def test_no_refused_name_is_one_this_source_honours() -> None:
    from zkconsumer.spark.options import SOURCE_OPTIONS

    assert not set(INSTEAD) & SOURCE_OPTIONS
    assert not refusals(SOURCE_OPTIONS | {"fetchoffset.numretries", "fetchoffset.retryintervalms"})


@pytest.mark.parametrize("option", ["startingOffsets", "endingOffsets"])
def test_spark_s_offsets_json_shape_is_accepted_beside_ours(option: str) -> None:
    spark = '{"t": {"0": 23, "1": -1}, "u": {"2": 5}}'
    ours = '{"t/0": 23, "t/1": -1, "u/2": 5}'
    parsed = [parse_options({**BASE, "topics": "t,u", option: text}, streaming=False) for text in (spark, ours)]
    field = "starting_explicit" if option == "startingOffsets" else "ending_explicit"
    assert getattr(parsed[0], field) == getattr(parsed[1], field) == {("t", 0): 23, ("t", 1): -1, ("u", 2): 5}


@pytest.mark.parametrize(
    ("option", "streaming"),
    [
        ("startingOffsets", True),
        ("startingOffsets", False),
        ("endingOffsets", False),
        ("startingOffsetsByTimestamp", True),
        ("endingOffsetsByTimestamp", False),
    ],
)
def test_a_position_entry_for_a_topic_outside_the_subscription_is_refused_by_name(option: str, streaming: bool) -> None:
    """Finding 9 (issue 52): silently accepted, where Spark refuses an entry it is not assigned."""
    with pytest.raises(OptionError, match=rf"option '{option}' names topic\(s\) other.*not subscribed"):
        parse_options({**BASE, option: '{"t": {"0": 5}, "other": {"0": 1}}'}, streaming=streaming)
    with pytest.raises(OptionError, match=r"names topic\(s\) t, not subscribed"):
        parse_options({**BASE, "topics": "", "whitelist": "u.*", option: '{"t": {"0": 5}}'}, streaming=streaming)
    assert parse_options(
        {**BASE, "topics": "t,other", option: '{"t": {"0": 5}, "other": {"0": 1}}'}, streaming=streaming
    )


@pytest.mark.parametrize(
    "text",
    ['{"t": {"x": 1}}', '{"t": {"0": "1"}}', '{"t": {"0": true}}', '{"t/0": 1, "t": {"0": 2}}', '{"t": {"0": -3}}'],
)
def test_a_bad_offsets_json_of_either_shape_names_the_option(text: str) -> None:
    with pytest.raises(OptionError, match=r"option 'startingOffsets' must be .*\{\"topic\": \{\"0\": 42\}\}"):
        parse_options({**BASE, "startingOffsets": text}, streaming=True)


@given(
    st.dictionaries(
        st.tuples(st.sampled_from(["t", "a.b", "my/topic"]), st.integers(0, 50)), st.integers(-2, 10**12), max_size=8
    )
)
def test_both_shapes_decode_to_the_same_offsets(offsets: dict[tuple[str, int], int]) -> None:
    ours = {f"{t}/{p}": o for (t, p), o in offsets.items()}
    spark: dict[str, dict[str, int]] = {}
    for (t, p), o in offsets.items():
        spark.setdefault(t, {})[str(p)] = o
    assert explicit_offsets(json.loads(json.dumps(ours))) == offsets
    assert explicit_offsets(json.loads(json.dumps(spark))) == offsets


def test_headers_are_a_column_only_with_include_headers_and_timestamp_type_always_is() -> None:
    """Spark's columns and order; before: headers always, no timestampType."""
    assert SCHEMA.fieldNames() == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    plain = ZkConsumerDataSource({**BASE}).schema()
    with_headers = ZkConsumerDataSource({**BASE, "includeHeaders": "true"}).schema()
    assert plain.fieldNames() == SCHEMA.fieldNames()
    assert with_headers.fieldNames() == [*SCHEMA.fieldNames(), "headers"]
    assert wants_headers({"INCLUDEHEADERS": "TRUE"}) and not wants_headers({})
    assert parse_options({**BASE, "includeHeaders": "true"}, streaming=True).include_headers


class Stamped(Msg):
    def __init__(self, offset: int, kind: int, ms: int, headers: list[tuple[str, bytes]] | None) -> None:
        super().__init__("t", 0, offset)
        self.kind, self.ms, self.found = kind, ms, headers

    def timestamp(self) -> tuple[int, int]:
        return (self.kind, self.ms)

    def headers(self) -> list[tuple[str, bytes]] | None:  # type: ignore[override]
        return self.found


def test_timestamp_type_is_kafka_s_id_and_headers_come_only_when_asked() -> None:
    msgs = [Stamped(0, 1, 5, None), Stamped(1, 2, 6, [("h", b"v")]), Stamped(2, 0, -1, None)]
    plain = to_record_batch(msgs, "t", 0)
    assert plain.schema.equals(ARROW_SCHEMA)
    assert plain.column("timestampType").to_pylist() == [0, 1, -1]  # CreateTime, LogAppendTime, none
    assert plain.column("timestamp").null_count == 1
    full = to_record_batch(msgs, "t", 0, headers=True)
    assert full.schema.equals(ARROW_SCHEMA_WITH_HEADERS)
    assert full.column("headers").to_pylist() == [None, [{"key": "h", "value": b"v"}], None]
    assert pa.types.is_int32(full.schema.field("timestampType").type)


@given(
    sizes=st.lists(st.integers(0, 500), min_size=1, max_size=6),
    cap=st.integers(1, 120),
    min_partitions=st.one_of(st.none(), st.integers(1, 40)),
)
def test_max_records_per_partition_caps_every_piece_and_covers_each_range_once(
    sizes: list[int], cap: int, min_partitions: int | None
) -> None:
    ranges = [(("t", p), 1000 * p, 1000 * p + n) for p, n in enumerate(sizes)]
    parts = split(ranges, "b", min_partitions, None, cap)
    assert all(0 < r.size <= cap for r in parts if r.size) and all(r.size <= cap for r in parts)
    for key, lo, hi in ranges:
        mine = sorted((r.start, r.end) for r in parts if r.key == key)
        assert mine[0][0] == lo and mine[-1][1] == hi
        assert all(a[1] == b[0] for a, b in zip(mine, mine[1:], strict=False)), "contiguous, no overlap"
        if hi - lo > 0:
            assert len(mine) >= -(-(hi - lo) // cap)


def test_max_records_per_partition_keeps_a_task_per_piece() -> None:
    opts = parse_options({**BASE, "maxRecordsPerPartition": "40", "bootstrap.servers": "b:9092"}, streaming=False)
    assert opts.max_records_per_partition == 40
    reader = ZkStreamReader.__new__(ZkStreamReader)
    reader.opts = opts
    tasks = reader._tasks([(("t", 0), 0, 100), (("t", 1), 0, 10)], "b:9092", {})
    assert sorted((r.partition, r.start, r.end) for t in tasks for r in t.ranges) == [
        (0, 0, 33),
        (0, 33, 66),
        (0, 66, 100),
        (1, 0, 10),
    ]
    assert all(len(t.ranges) == 1 for t in tasks)
    with pytest.raises(OptionError, match="'maxrecordsperpartition' must be >= 1"):
        parse_options({**BASE, "maxRecordsPerPartition": "0"}, streaming=False)


def test_an_offset_range_pieces_keep_their_epoch() -> None:
    parts = split([(("t", 0), 0, 10)], "b", None, {"t": 7}, 3)
    assert {r.epoch for r in parts} == {7} and all(isinstance(r, OffsetRange) for r in parts)


def test_a_stream_on_pyspark_without_read_limits_is_refused_not_run_without_max_offsets_per_trigger(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """pyspark 4.0/4.1 (which setup.cfg allowed) called latestOffset() without a limit, so
    maxOffsetsPerTrigger was silently ignored there."""
    from zkconsumer.spark import source

    monkeypatch.setattr(source, "STREAM_API", False)
    with pytest.raises(OptionError, match=r"need pyspark >= 4\.2 .*maxOffsetsPerTrigger would be ignored"):
        ZkConsumerDataSource({**BASE, "maxOffsetsPerTrigger": "10"}).streamReader(SCHEMA)


def test_setup_cfg_requires_the_pyspark_that_gives_python_sources_a_read_limit() -> None:
    import configparser
    from pathlib import Path

    import pyspark
    from packaging.requirements import Requirement
    from packaging.version import Version

    cfg = configparser.ConfigParser()
    cfg.read(Path(__file__).resolve().parents[2] / "setup.cfg")
    extras = cfg["options.extras_require"]
    for extra in ("spark", "spark-connect"):
        (pin,) = [Requirement(r) for r in extras[extra].split("\n") if r.strip().startswith("pyspark")]
        assert not pin.specifier.contains("4.1.1") and pin.specifier.contains("4.2.0")
    assert Version(pyspark.__version__) >= Version("4.2")


def test_earliest_is_refused_as_an_end_offset_as_in_spark() -> None:
    with pytest.raises(OptionError, match=r"'endingOffsets': -2 \(earliest\) is not an end"):
        parse_options({**BASE, "endingOffsets": '{"t": {"0": -2}}'}, streaming=False)
    assert parse_options({**BASE, "endingOffsets": '{"t": {"0": -1}}'}, streaming=False).ending_explicit == {
        ("t", 0): -1
    }


def test_docs_name_every_source_option_and_every_refused_spark_name() -> None:
    from pathlib import Path

    from zkconsumer.spark.options import SOURCE_OPTIONS

    text = (Path(__file__).resolve().parents[2] / "docs" / "spark.md").read_text().lower()
    named = (SOURCE_OPTIONS - {"path"}) | set(INSTEAD)  # path: what load(path) sets, unused here
    missing = sorted(n for n in named if f"`{n}`" not in text and f"`{n} " not in text)
    assert not missing, f"docs/spark.md does not name {missing}"
