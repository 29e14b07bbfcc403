"""Unit tests of zkconsumer.errors: the exception hierarchy, the `retriable` flags and is_retriable()."""

from __future__ import annotations

import pickle

import pytest
from confluent_kafka import KafkaError, KafkaException
from kazoo.exceptions import (
    AuthFailedError,
    BadArgumentsError,
    BadVersionError,
    ConnectionLoss,
    InvalidACLError,
    NoAuthError,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError

from zkconsumer import errors
from zkconsumer.config.checks import ConfigError
from zkconsumer.errors import (
    AdminError,
    AdminRefused,
    AdminUnavailable,
    AdminUsageError,
    BrokersUnavailable,
    CommitFailed,
    ConsumerError,
    ConsumerRebalanceFailed,
    ConsumerTimeout,
    DeleteRefused,
    InputError,
    LogOffsetsUnavailable,
    RegistrationConflict,
    SessionLost,
    ShutdownIncomplete,
    UnknownGroup,
    ZkConsumerError,
    ZkDataError,
    ZooKeeperAccessDenied,
    ZooKeeperClosed,
    ZooKeeperUnavailable,
    ZooKeeperUnreachable,
    is_retriable,
)

# ---- third-party errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "exc",
    [
        ConnectionLoss(),
        SessionExpiredError(),
        NoNodeError(),
        BadVersionError(),
        OperationTimeoutError(),
        KazooTimeoutError("no answer"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_transient_kazoo_errors_are_retriable(exc: BaseException) -> None:
    assert is_retriable(exc) is True


@pytest.mark.parametrize(
    "exc",
    [
        NoAuthError(),
        AuthFailedError(),
        BadArgumentsError(),
        InvalidACLError(),
    ],
    ids=lambda e: type(e).__name__,
)
def test_kazoo_errors_no_retry_can_fix_are_not_retriable(exc: BaseException) -> None:
    assert is_retriable(exc) is False


@pytest.mark.parametrize(
    "code", [KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN], ids=["_TRANSPORT", "_ALL_BROKERS_DOWN"]
)
def test_transient_kafka_errors_are_retriable(code: int) -> None:
    err = KafkaError(code)
    assert not err.fatal()
    assert is_retriable(KafkaException(err)) is True


def test_fatal_kafka_error_is_not_retriable() -> None:
    # KafkaError(error, reason=None, fatal=False, retriable=False, txn_requires_abort=False)
    err = KafkaError(KafkaError._FATAL, "producer fenced", fatal=True)
    assert err.fatal()
    assert is_retriable(KafkaException(err)) is False


def test_fatal_flag_decides_even_for_an_otherwise_transient_code() -> None:
    assert is_retriable(KafkaException(KafkaError(KafkaError._TRANSPORT, fatal=True))) is False


@pytest.mark.parametrize(
    "exc",
    [
        OSError("io"),
        TimeoutError("slow"),
        ConnectionError("refused"),
        ConnectionResetError("reset"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_os_level_errors_are_retriable(exc: BaseException) -> None:
    assert is_retriable(exc) is True


@pytest.mark.parametrize(
    "exc",
    [
        RuntimeError("bug"),
        ValueError("bug"),
        KeyError("bug"),
        AssertionError("bug"),
        TypeError("bug"),
        AttributeError("bug"),
        Exception("unknown"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_programming_errors_are_never_retried(exc: BaseException) -> None:
    assert is_retriable(exc) is False


# ---- zkconsumer's own exceptions -------------------------------------------------------------------

EXPECTED_FLAGS: dict[type[ZkConsumerError], bool] = {
    ZkConsumerError: False,
    ConsumerError: False,
    ConsumerTimeout: True,
    ConsumerRebalanceFailed: True,
    RegistrationConflict: True,
    ZooKeeperUnavailable: True,
    ZooKeeperUnreachable: True,
    BrokersUnavailable: True,
    ZooKeeperAccessDenied: False,
    ZooKeeperClosed: False,
    SessionLost: True,
    CommitFailed: True,
    ShutdownIncomplete: False,
    ZkDataError: True,
    ConfigError: False,
    # The ops library's: asking again unchanged fails again (an unavailable broker is the caller's to retry).
    AdminError: False,
    AdminUsageError: False,
    AdminRefused: False,
    AdminUnavailable: False,
    InputError: False,
    UnknownGroup: False,
    DeleteRefused: False,
    LogOffsetsUnavailable: False,
}


def make(cls: type[ZkConsumerError]) -> ZkConsumerError:
    if cls is ZkDataError:
        return ZkDataError("/brokers/ids/1", "not JSON")
    if cls is ConfigError:
        return ConfigError("group.id", "missing")
    if cls is ShutdownIncomplete:
        return ShutdownIncomplete("out of time", {("t", 0): 5})
    if cls is CommitFailed:
        return CommitFailed("commit failed", [("t", 0)])
    return cls("message")


def _all_subclasses(cls: type) -> set[type]:
    out = set()
    for sub in cls.__subclasses__():
        out.add(sub)
        out |= _all_subclasses(sub)
    return out


@pytest.mark.parametrize("cls", list(EXPECTED_FLAGS), ids=lambda c: c.__name__)
def test_every_zkconsumer_exception_derives_from_the_root(cls: type[ZkConsumerError]) -> None:
    assert issubclass(cls, ZkConsumerError)
    assert isinstance(make(cls), ZkConsumerError)


@pytest.mark.parametrize(("cls", "flag"), list(EXPECTED_FLAGS.items()), ids=lambda c: getattr(c, "__name__", ""))
def test_flags_and_is_retriable_agree(cls: type[ZkConsumerError], flag: bool) -> None:
    exc = make(cls)
    assert cls.retriable is flag
    assert exc.retriable is flag
    assert is_retriable(exc) is flag


def test_config_error_is_not_retriable_and_zk_data_error_is() -> None:
    assert is_retriable(ConfigError(None, "bad line")) is False
    assert is_retriable(ZkDataError("/x", "bad")) is True


def test_every_exception_class_in_errors_module_is_covered() -> None:
    defined = {
        obj
        for obj in vars(errors).values()
        if isinstance(obj, type) and issubclass(obj, BaseException) and obj.__module__ == errors.__name__
    }
    assert defined <= set(EXPECTED_FLAGS)


# Every exception class the package defines, outside errors.py: under the root, with its flag.
ELSEWHERE: dict[str, bool] = {
    "zkconsumer.coordinator.assignors.AssignmentError": True,  # Scala fails the attempt: retried
    "zkconsumer.coordinator.peers.OwnRegistrationError": False,  # per instance: a missing one is retriable
    "zkconsumer.config.checks.ConfigError": False,
    "zkconsumer.zookeeper.auth.JaasError": False,
    "zkconsumer.zookeeper.nudge.NudgeOutcomeUnknown": False,  # a blind re-run could nudge twice: look first
    "zkconsumer.offsets.store.KafkaSideFailed": False,
    "zkconsumer.cli.common.CliError": False,
    "zkconsumer.zookeeper.fenced_delete.MemberJoined": False,
    "zkconsumer.migration.switch.SwitchNodeError": False,  # a node no zkconsumer writes: someone must look
    "zkconsumer.spark.kafka_read.FetchTimeoutError": True,  # the task fails; Spark retries it
    "zkconsumer.spark.kafka_read.KafkaReadFailed": False,  # a fatal Kafka error: the task fails
    "zkconsumer.spark.offsets.DataLossError": False,
    "zkconsumer.spark.checkpoint.CheckpointError": False,
    "zkconsumer.spark.options.OptionError": False,
    "zkconsumer.spark.stream_member.MemberLeft": False,
    "zkconsumer.spark.broker_offsets.OffsetsUnavailable": True,  # broker trouble: the trigger plans nothing
    "zkconsumer.spark.broker_offsets.OffsetLookupFailed": False,
    "zkconsumer.spark.broker_trouble.PartitionsUnreadable": True,  # the query fails; a restart resumes
    "zkconsumer.spark.triggers.AvailableNowIncomplete": True,  # a later run may own the partitions
    "zkconsumer.spark.ingest.IngestLockLost": True,  # nothing committed: a rerun resumes
    "zkconsumer.testing.probes.ClusterStartError": True,  # a broker that lost its session is started again
    "zkconsumer.testing.jars.JarsMissingError": False,
    "zkconsumer.testing.netlab.LabError": False,
}


def _package_exceptions() -> dict[str, type[BaseException]]:
    """Every public exception class defined in a zkconsumer module (private ones, `_Name`, are
    control flow that never leaves its module)."""
    import importlib
    import pkgutil

    import zkconsumer

    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(zkconsumer.__path__, "zkconsumer."):
        if info.name.endswith(".pytest_plugin"):
            continue  # importing it as a module would register it with pytest a second time
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (
                isinstance(obj, type)
                and issubclass(obj, BaseException)
                and obj.__module__ == info.name
                and not name.startswith("_")
            ):
                found[f"{info.name}.{name}"] = obj
    return found


def test_every_exception_the_package_defines_is_under_the_root_with_its_flag() -> None:
    found = _package_exceptions()
    outside = {name for name, cls in found.items() if name.startswith("zkconsumer.errors.")}
    assert set(found) - outside == set(ELSEWHERE)
    for name, cls in found.items():
        assert issubclass(cls, ZkConsumerError), name
        if name in ELSEWHERE:
            exc = cls.__new__(cls)
            assert is_retriable(exc) is ELSEWHERE[name], name


def test_the_ops_library_errors_are_one_family_and_only_usage_errors_are_bad_requests() -> None:
    for cls in (AdminUsageError, AdminRefused, AdminUnavailable, InputError, UnknownGroup, DeleteRefused):
        assert issubclass(cls, AdminError)
    assert issubclass(LogOffsetsUnavailable, AdminUnavailable) and issubclass(DeleteRefused, AdminRefused)
    assert [cls("x").bad_request for cls in (AdminError, AdminUsageError, AdminRefused, AdminUnavailable)] == [
        False,
        True,
        False,
        False,
    ]
    assert AdminUsageError("x", details=["row 1"]).details == ("row 1",)
    assert isinstance(InputError("x"), ValueError) and isinstance(UnknownGroup("x"), LookupError)


def test_the_root_keeps_the_builtin_bases_callers_catch() -> None:
    from zkconsumer.coordinator.assignors import AssignmentError
    from zkconsumer.zookeeper.auth import JaasError

    assert isinstance(AssignmentError("x"), ValueError) and is_retriable(AssignmentError("x")) is True
    assert isinstance(JaasError("x"), ValueError) and is_retriable(JaasError("x")) is False


def test_every_loaded_subclass_reports_its_own_flag() -> None:
    # Whatever subclasses are loaded (other modules may add some), is_retriable returns their flag.
    classes = _all_subclasses(ZkConsumerError) | {ZkConsumerError}
    assert set(EXPECTED_FLAGS) <= classes
    for cls in classes:
        exc = cls.__new__(cls)
        assert is_retriable(exc) is cls.retriable, cls


def test_the_flag_wins_over_a_retriable_builtin_base() -> None:
    # ZooKeeperUnavailable is a ConnectionError (an OSError); a ZkConsumerError's flag must decide alone.
    class Final(ZkConsumerError, ConnectionError):
        retriable = False

    class Transient(ZkConsumerError, ValueError):
        retriable = True

    assert is_retriable(Final("x")) is False
    assert is_retriable(Transient("x")) is True
    assert isinstance(ZooKeeperUnavailable("x"), ConnectionError)


def test_instance_flag_is_what_is_retriable_returns() -> None:
    exc = SessionLost("gone")
    exc.retriable = False
    assert is_retriable(exc) is False


def test_a_chained_retriable_cause_does_not_make_a_final_error_retriable() -> None:
    try:
        try:
            raise ConnectionLoss()
        except ConnectionLoss as cause:
            raise ConsumerError("fetcher died") from cause
    except ConsumerError as exc:
        assert is_retriable(exc.__cause__) is True
        assert is_retriable(exc) is False


def test_carried_details() -> None:
    assert CommitFailed("x").partitions == []
    assert CommitFailed("x", [("t", 1)]).partitions == [("t", 1)]
    assert ShutdownIncomplete("x", {("t", 1): 7}).uncommitted == {("t", 1): 7}
    assert isinstance(ConsumerError("x"), RuntimeError)
    assert isinstance(BrokersUnavailable("x"), ConnectionError)
    assert isinstance(ZooKeeperAccessDenied("x"), PermissionError)


@pytest.mark.parametrize("cls", list(EXPECTED_FLAGS), ids=lambda c: c.__name__)
def test_every_exception_of_errors_py_survives_pickling(cls: type[ZkConsumerError]) -> None:
    # Spark ships a task's exception to the driver pickled, and multiprocessing pools do the same.
    exc = make(cls)
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is cls and str(back) == str(exc) and vars(back) == vars(exc)


def test_a_usage_error_of_the_ops_library_is_a_value_error_too() -> None:
    assert issubclass(AdminUsageError, ValueError) and issubclass(InputError, AdminUsageError)
    assert not issubclass(AdminUnavailable, ValueError) and not issubclass(AdminRefused, ValueError)
