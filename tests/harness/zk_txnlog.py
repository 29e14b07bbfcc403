"""Reads a ZooKeeper server's transaction logs: exactly when and why each ephemeral node went away.

A chaos run's observer polls, so it sees a node vanish late and cannot tell a member's own
delete from its session's end. The server's transaction log (dataDir/version-2/log.<zxid>)
records both exactly: every create, delete and closeSession with its session id and the
server's wall-clock time. Only the record types the chaos checker needs are decoded; the
format is jute's binary archive (big-endian; strings and buffers are an int length + bytes).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

_MAGIC = 0x5A4B4C47  # "ZKLG"
_END_OF_RECORD = 0x42  # "B"

CREATE, DELETE, MULTI, CREATE2, CREATE_CONTAINER, DELETE_CONTAINER, CREATE_TTL = 1, 2, 14, 15, 19, 20, 21
CREATE_SESSION, CLOSE_SESSION, ERROR = -10, -11, -1


@dataclass(frozen=True)
class Txn:
    """One logged change: `session` made it (for a closeSession: the session that ended)."""

    session: int
    cxid: int  # the client's request number; 0 on a closeSession the server issued itself (expiry)
    zxid: int
    time_ms: int  # server wall clock
    type: int
    path: str | None = None
    ephemeral: bool = False


@dataclass(frozen=True)
class NodeEnd:
    """How one node life (identified by its creation zxid) ended."""

    path: str
    czxid: int
    owner_session: int  # 0 for a persistent node
    time_ms: int
    by_session: int  # the session whose delete or closeSession removed it
    cause: str  # "delete" (a client deleted it), "close" (its owner closed its session), "expiry"

    @property
    def session_ended(self) -> bool:
        """The node went with its owner's session (expired, or closed by a client holding it)."""
        return self.cause != "delete"


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def int(self) -> int:
        (value,) = struct.unpack_from(">i", self.data, self.at)
        self.at += 4
        return value

    def long(self) -> int:
        (value,) = struct.unpack_from(">q", self.data, self.at)
        self.at += 8
        return value

    def bool(self) -> bool:
        self.at += 1
        return self.data[self.at - 1] != 0

    def buffer(self) -> bytes:
        n = self.int()
        if n < 0:
            return b""
        self.at += n
        return self.data[self.at - n : self.at]

    def string(self) -> str:
        return self.buffer().decode("utf-8", errors="replace")


def _records(path: Path) -> Iterator[bytes]:
    """The txn entries of one log file; stops at the zero padding ZooKeeper preallocates."""
    data = path.read_bytes()
    if len(data) < 16:
        return
    magic, _version, _dbid = struct.unpack_from(">iiq", data, 0)
    if magic != _MAGIC:
        raise ValueError(f"{path}: not a ZooKeeper transaction log (magic {magic:#x})")
    at = 16
    while at + 12 <= len(data):
        crc, length = struct.unpack_from(">qi", data, at)
        if length <= 0 or at + 12 + length + 1 > len(data):
            return
        entry = data[at + 12 : at + 12 + length]
        if data[at + 12 + length] != _END_OF_RECORD or zlib.adler32(entry) != crc & 0xFFFFFFFF:
            return  # a torn last write (the server was killed mid-append)
        yield entry
        at += 12 + length + 1


def _create(r: _Reader, type_: int) -> tuple[str, bool]:
    path = r.string()
    r.buffer()  # data
    for _ in range(max(r.int(), 0)):  # ACLs: perms, scheme, id
        r.int(), r.string(), r.string()
    ephemeral = r.bool() if type_ in (CREATE, CREATE2) else False
    return path, ephemeral


def _decode(entry: bytes) -> Iterator[Txn]:
    r = _Reader(entry)
    session, cxid, zxid, time_ms, type_ = r.long(), r.int(), r.long(), r.long(), r.int()
    yield from _body(r, session, cxid, zxid, time_ms, type_)


def _body(r: _Reader, session: int, cxid: int, zxid: int, time_ms: int, type_: int) -> Iterator[Txn]:
    if type_ in (CREATE, CREATE2, CREATE_CONTAINER, CREATE_TTL):
        path, ephemeral = _create(r, type_)
        yield Txn(session, cxid, zxid, time_ms, type_, path, ephemeral)
    elif type_ in (DELETE, DELETE_CONTAINER):
        yield Txn(session, cxid, zxid, time_ms, DELETE, r.string())
    elif type_ == MULTI:
        ops = [(r.int(), r.buffer()) for _ in range(max(r.int(), 0))]
        # A failed multi is logged with the ops before the failing one unchanged and the rest as
        # errors; the server applies none of it.
        if any(sub_type == ERROR for sub_type, _ in ops):
            return
        for sub_type, body in ops:
            yield from _body(_Reader(body), session, cxid, zxid, time_ms, sub_type)
    elif type_ in (CREATE_SESSION, CLOSE_SESSION):
        yield Txn(session, cxid, zxid, time_ms, type_)


def transactions(data_dir: Path) -> Iterator[Txn]:
    """Every decoded txn of every log in data_dir (or its version-2 folder), in zxid order."""
    folder = data_dir / "version-2" if (data_dir / "version-2").is_dir() else data_dir
    logs = sorted(folder.glob("log.*"), key=lambda p: int(p.name.split(".", 1)[1], 16))
    last = -1
    for log_file in logs:
        for entry in _records(log_file):
            for txn in _decode(entry):
                if txn.zxid >= last:  # a restarted server may re-log a tail it had already written
                    last = txn.zxid
                    yield txn


def node_ends(data_dir: Path, prefix: str = "/") -> dict[tuple[str, int], NodeEnd]:
    """(path, creation zxid) -> how that node life ended, for nodes under `prefix` (chroot included).

    The path is part of the key because one multi creates all its nodes with the same zxid.
    """
    alive: dict[str, tuple[int, int]] = {}  # path -> (czxid, owner session)
    by_session: dict[int, set[str]] = {}
    ends: dict[tuple[str, int], NodeEnd] = {}
    for txn in transactions(data_dir):
        if txn.type in (CREATE, CREATE2, CREATE_CONTAINER, CREATE_TTL) and txn.path is not None:
            owner = txn.session if txn.ephemeral else 0
            alive[txn.path] = (txn.zxid, owner)
            if owner:
                by_session.setdefault(owner, set()).add(txn.path)
        elif txn.type == DELETE and txn.path in alive:
            czxid, owner = alive.pop(txn.path)
            by_session.get(owner, set()).discard(txn.path)
            if txn.path.startswith(prefix):
                ends[(txn.path, czxid)] = NodeEnd(txn.path, czxid, owner, txn.time_ms, txn.session, "delete")
        elif txn.type == CLOSE_SESSION:
            for path in sorted(by_session.pop(txn.session, set())):
                czxid, owner = alive.pop(path)
                if path.startswith(prefix):
                    # The server ends an expired session with a request of its own, numbered 0;
                    # a client's close carries its next request number (1 or more).
                    cause = "expiry" if txn.cxid == 0 else "close"
                    ends[(path, czxid)] = NodeEnd(path, czxid, owner, txn.time_ms, txn.session, cause)
    return ends
