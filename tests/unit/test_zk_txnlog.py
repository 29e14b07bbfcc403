"""zk_txnlog decodes ZooKeeper's transaction log format: hand-encoded logs, torn tails, multis."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from harness import zk_txnlog as tl


def _string(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">i", len(raw)) + raw


def _create(path: str, ephemeral: bool) -> bytes:
    acl = struct.pack(">i", 1) + struct.pack(">i", 31) + _string("world") + _string("anyone")
    return _string(path) + struct.pack(">i", 2) + b"v1" + acl + bytes([ephemeral]) + struct.pack(">i", 0)


def _entry(session: int, cxid: int, zxid: int, time_ms: int, type_: int, body: bytes = b"") -> bytes:
    txn = struct.pack(">qiqqi", session, cxid, zxid, time_ms, type_) + body
    return struct.pack(">qi", zlib.adler32(txn), len(txn)) + txn + b"B"


def _log(folder: Path, first_zxid: int, *entries: bytes, padding: int = 64) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    header = struct.pack(">iiq", 0x5A4B4C47, 2, 0)
    (folder / f"log.{first_zxid:x}").write_bytes(header + b"".join(entries) + bytes(padding))


def _multi(*ops: tuple[int, bytes]) -> bytes:
    return struct.pack(">i", len(ops)) + b"".join(struct.pack(">i", t) + struct.pack(">i", len(b)) + b for t, b in ops)


def test_causes_of_each_nodes_end(tmp_path: Path) -> None:
    a, b, c = 0x100, 0x200, 0x300
    _log(
        tmp_path / "version-2",
        1,
        _entry(a, 0, 1, 1000, tl.CREATE_SESSION, struct.pack(">i", 6000)),
        _entry(a, 1, 2, 1001, tl.CREATE, _create("/g/ids/A", True)),
        _entry(
            a,
            2,
            3,
            1002,
            tl.MULTI,
            _multi((tl.CREATE, _create("/g/owners/t/0", True)), (tl.CREATE, _create("/g/owners/t/1", True))),
        ),
        _entry(b, 1, 4, 1003, tl.CREATE, _create("/g/owners/t/2", True)),
        _entry(c, 1, 5, 1004, tl.CREATE, _create("/g/owners/t/3", True)),
        _entry(a, 3, 6, 1005, tl.DELETE, _string("/g/owners/t/0")),
        _entry(a, 0, 7, 1006, tl.CLOSE_SESSION, struct.pack(">i", 0)),  # the server expired a
        _entry(b, 9, 8, 1007, tl.CLOSE_SESSION, struct.pack(">i", 0)),  # b closed itself
        _entry(a, 4, 9, 1008, tl.DELETE, _string("/elsewhere")),
    )
    _log(tmp_path / "version-2", 10, _entry(a, 5, 10, 1009, tl.DELETE, _string("/g/owners/t/3")))
    ends = tl.node_ends(tmp_path, "/g")
    assert {(path, e.cause, e.time_ms) for (path, _), e in ends.items()} == {
        ("/g/owners/t/0", "delete", 1005),
        ("/g/owners/t/1", "expiry", 1006),
        ("/g/ids/A", "expiry", 1006),
        ("/g/owners/t/2", "close", 1007),
        ("/g/owners/t/3", "delete", 1009),
    }
    assert ends[("/g/owners/t/1", 3)].owner_session == a  # a multi: one zxid, two nodes
    assert ends[("/g/owners/t/3", 5)].by_session == a != ends[("/g/owners/t/3", 5)].owner_session
    assert not ends[("/g/owners/t/0", 3)].session_ended and ends[("/g/owners/t/2", 4)].session_ended


def test_a_failed_multi_applies_nothing(tmp_path: Path) -> None:
    # What a claim of two nodes looks like when the second already exists: the first op is logged
    # as a create, the failing one as an error; ZooKeeper applies neither.
    err = struct.pack(">i", -110)
    _log(
        tmp_path,
        1,
        _entry(1, 1, 1, 1000, tl.MULTI, _multi((tl.CREATE, _create("/g/owners/t/0", True)), (tl.ERROR, err))),
        _entry(2, 1, 2, 1001, tl.CREATE, _create("/g/owners/t/0", True)),
        _entry(2, 2, 3, 1002, tl.DELETE, _string("/g/owners/t/0")),
    )
    ends = tl.node_ends(tmp_path, "/g")
    assert [(path, czxid, e.owner_session) for (path, czxid), e in ends.items()] == [("/g/owners/t/0", 2, 2)]


def test_a_torn_last_entry_ends_the_log(tmp_path: Path) -> None:
    good = _entry(1, 1, 1, 1000, tl.CREATE, _create("/x", False))
    torn = bytearray(_entry(1, 2, 2, 1001, tl.DELETE, _string("/x")))
    torn[-5] ^= 0xFF  # a bit flipped by a write cut short: the checksum no longer matches
    _log(tmp_path, 1, good, bytes(torn))
    assert [t.zxid for t in tl.transactions(tmp_path)] == [1]


def test_not_a_transaction_log(tmp_path: Path) -> None:
    (tmp_path / "log.1").write_bytes(b"\0" * 8 + b"not a log at all")
    with pytest.raises(ValueError, match="not a ZooKeeper transaction log"):
        list(tl.transactions(tmp_path))
