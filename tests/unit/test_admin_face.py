"""zkconsumer.admin's face: every name docs/admin.md cites is on it, and failures leave it as the AdminError family."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kazoo.exceptions import ConnectionLoss, NoAuthError
from kazoo.handlers.threading import KazooTimeoutError

import zkconsumer.admin
from zkconsumer.admin import AdminUnavailable, AdminUsageError, InputError, OffsetWrite
from zkconsumer.admin.public_errors import admin_errors, from_zookeeper
from zkconsumer.cli.common import expected_error_message
from zkconsumer.errors import ZkDataError, ZooKeeperAccessDenied

PAGE = Path(__file__).resolve().parents[2] / "docs" / "admin.md"


def test_every_name_of_the_face_exists_and_the_page_cites_only_the_face() -> None:
    assert all(hasattr(zkconsumer.admin, name) for name in zkconsumer.admin.__all__)
    text = PAGE.read_text()
    cited = re.findall(r"zkconsumer\.admin\.([A-Za-z_][A-Za-z0-9_.]*)", text)
    assert cited, "docs/admin.md cites no zkconsumer.admin name"
    assert [name for name in cited if name not in zkconsumer.admin.__all__] == []


def _raising(exc: BaseException) -> None:
    @admin_errors
    def call() -> None:
        raise exc

    call()


@pytest.mark.parametrize(
    ("raised", "message"),
    [
        (ConnectionLoss(), "ZooKeeper request failed: ConnectionLoss"),
        (KazooTimeoutError("no answer"), "ZooKeeper request failed: no answer"),
    ],
)
def test_kazoo_errors_leave_as_unavailable_with_the_line_the_cli_prints(raised: Exception, message: str) -> None:
    with pytest.raises(AdminUnavailable) as caught:
        _raising(raised)
    assert str(caught.value) == message
    assert caught.value.__cause__ is raised and from_zookeeper(caught.value)
    assert caught.value.bad_request is False


def test_a_plain_value_error_is_a_usage_error_and_our_own_errors_pass_unchanged() -> None:
    with pytest.raises(AdminUsageError, match="invalid group") as caught:
        _raising(ValueError("invalid group"))
    assert caught.value.bad_request is True and not from_zookeeper(caught.value)
    for own in (InputError("line 1: bad"), ZkDataError("/x", "not JSON")):
        with pytest.raises(type(own)) as passed:
            _raising(own)
        assert passed.value is own


def test_a_refused_request_is_access_denied_worded_as_the_cli_printed_it() -> None:
    raised = NoAuthError()
    with pytest.raises(ZooKeeperAccessDenied) as caught:
        _raising(raised)
    assert caught.value.__cause__ is raised
    assert expected_error_message(caught.value) == (
        "ZooKeeper refused access (NoAuthError); pass --zk-jaas FILE (SASL, as the group's Scala members "
        "log in) or --zk-digest user:password"
    )
    assert expected_error_message(caught.value) == expected_error_message(raised)


def test_an_offset_write_says_whether_it_wrote() -> None:
    assert OffsetWrite().written and OffsetWrite().refusal is None
    refused = OffsetWrite("owned by g_m-0 (session 0x1)")
    assert not refused.written and refused.refusal == "owned by g_m-0 (session 0x1)"
