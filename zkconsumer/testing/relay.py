"""A TCP relay that holds every chunk a set time before forwarding it: a slow link on real sockets, without netem.

Run as a script (standard library only, so it starts fast in any namespace)::

    python relay.py --port 15999                     # transparent: each connection's real destination
    python relay.py --port 15999 --target HOST:PORT  # fixed: every connection goes to HOST:PORT

Transparent mode serves connections that nftables redirected to it (``redirect to :15999``) and
reads where each was going from conntrack (SO_ORIGINAL_DST); its own upstream sockets carry the
firewall mark MARK, which the redirect rule lets pass. Every chunk read from either side is written
to the other `delay` after it was read (per destination address, "*" for any other): a propagation
delay, not a bandwidth limit, so chunks queued behind each other keep their spacing and order.

Control is on stdin, one command a line, each answered "ok" on stdout: ``delay <address|*> <ms>``.
The relay prints ``ready <port>`` once it listens and exits when stdin closes (its parent died).
`RelayProcess` starts and steers one from Python.
"""

from __future__ import annotations

import argparse
import asyncio
import select
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence

MARK = 0x7A6B  # "zk": a relay's upstream connections carry it and are not redirected again
SO_ORIGINAL_DST = 80  # linux/netfilter_ipv4.h
_CHUNK = 65536
_QUEUE = 256  # chunks held per direction before the relay stops reading (backpressure)


def original_destination(sock: socket.socket) -> tuple[str, int]:
    """Where a redirected connection was going, from conntrack."""
    raw = sock.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
    port, packed = struct.unpack_from("!2xH4s", raw)
    return socket.inet_ntoa(packed), port


class Relay:
    """The relay's event loop side: accepts, connects upstream, pumps both ways with the delay."""

    def __init__(self, port: int, target: tuple[str, int] | None, listen: str) -> None:
        self.port = port
        self.target = target
        self.listen = listen
        self.delays: dict[str, float] = {"*": 0.0}  # destination address -> seconds

    def delay_for(self, address: str) -> float:
        return self.delays.get(address, self.delays["*"])

    async def serve(self, ready: Callable[[], None]) -> None:
        server = await asyncio.start_server(self._handle, self.listen, self.port, reuse_address=True)
        ready()
        async with server:
            await server.serve_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock: socket.socket = writer.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            dest = self.target or original_destination(sock)
            upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                upstream.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, MARK)
            except PermissionError:  # not root: only the fixed-target mode works, and needs no mark
                pass
            upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            upstream.setblocking(False)
            await asyncio.wait_for(asyncio.get_running_loop().sock_connect(upstream, dest), 10.0)
            up_reader, up_writer = await asyncio.open_connection(sock=upstream)
        except (OSError, asyncio.TimeoutError):
            writer.close()
            return
        peer = dest[0]
        try:
            await asyncio.gather(self._pump(reader, up_writer, peer), self._pump(up_reader, writer, peer))
        finally:
            for w in (writer, up_writer):
                w.close()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: str) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue(_QUEUE)

        async def read() -> None:
            try:
                while data := await reader.read(_CHUNK):
                    await queue.put((loop.time() + self.delay_for(peer), data))
            except OSError:
                pass
            await queue.put((loop.time() + self.delay_for(peer), b""))  # the end, as late as the data

        async def write() -> None:
            try:
                while True:
                    due, data = await queue.get()
                    wait = due - loop.time()
                    if wait > 0:
                        await asyncio.sleep(wait)
                    if not data:
                        if writer.can_write_eof():
                            writer.write_eof()
                        return
                    writer.write(data)
                    await writer.drain()
            except OSError:
                writer.close()
                reader_task.cancel()

        reader_task = asyncio.ensure_future(read())
        await write()
        try:
            await reader_task
        except asyncio.CancelledError:
            pass


def _control(relay: Relay, loop: asyncio.AbstractEventLoop, done: asyncio.Event) -> None:
    """stdin commands, on a thread of their own; EOF stops the relay."""
    for line in sys.stdin:
        words = line.split()
        if len(words) == 3 and words[0] == "delay":
            seconds = float(words[2]) / 1000.0
            loop.call_soon_threadsafe(relay.delays.__setitem__, words[1], seconds)
            print("ok", flush=True)
        else:
            print(f"error: unknown command {line.strip()!r}", flush=True)
    loop.call_soon_threadsafe(done.set)


async def _main(args: argparse.Namespace) -> None:
    target = None
    if args.target:
        host, _, port = args.target.rpartition(":")
        target = (host, int(port))
    relay = Relay(args.port, target, args.listen)
    relay.delays["*"] = args.delay / 1000.0
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    serving = asyncio.ensure_future(relay.serve(lambda: print(f"ready {args.port}", flush=True)))
    threading.Thread(target=_control, args=(relay, loop, done), daemon=True).start()
    await done.wait()
    serving.cancel()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A TCP relay that holds every chunk a set time before forwarding it.")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--listen", default="127.0.0.1")
    parser.add_argument("--target", help="HOST:PORT for every connection (default: each one's own destination)")
    parser.add_argument("--delay", type=float, default=0.0, help="initial delay, ms, each direction")
    asyncio.run(_main(parser.parse_args(argv)))
    return 0


class RelayProcess:
    """A relay child process (`wrap` puts it somewhere: a lab host's `command`), steered over its stdin.

    Example::

        relay = RelayProcess(lab_host.command, 15999).start()
        relay.set_delay("10.213.4.2", 300)   # ms, each direction, for connections to that address
        relay.stop()
    """

    def __init__(
        self,
        wrap: Callable[[Sequence[str]], list[str]],
        port: int,
        *,
        target: str | None = None,
        listen: str = "127.0.0.1",
        name: str = "relay",
    ) -> None:
        argv = [sys.executable, "-I", __file__, "--port", str(port), "--listen", listen]
        self.command = wrap(argv + (["--target", target] if target else []))
        self.port = port
        self.name = name
        self.delays: dict[str, int] = {}  # address -> ms, as last set
        self.routed: set[str] = set()  # addresses a lab redirects to it (netfaults.route_through_relay)
        self._proc: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()

    def start(self, timeout: float = 20.0) -> RelayProcess:
        self._proc = subprocess.Popen(
            self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        line = self._read_line(timeout)
        if not line.startswith("ready"):
            self.stop()
            raise RuntimeError(f"{self.name} did not start ({' '.join(self.command)}): {line!r}")
        return self

    def set_delay(self, address: str, delay_ms: int, timeout: float = 10.0) -> None:
        """Hold chunks to and from `address` ("*": any address not named) `delay_ms` in each direction."""
        with self._lock:
            assert self._proc is not None and self._proc.stdin is not None, "start() the relay first"
            self._proc.stdin.write(f"delay {address} {delay_ms}\n")
            self._proc.stdin.flush()
            answer = self._read_line(timeout)
            if answer != "ok":
                raise RuntimeError(f"{self.name}: delay {address} {delay_ms} answered {answer!r}")
            self.delays[address] = delay_ms

    def _read_line(self, timeout: float) -> str:
        assert self._proc is not None and self._proc.stdout is not None
        ready, _, _ = select.select([self._proc.stdout], [], [], timeout)
        return self._proc.stdout.readline().strip() if ready else ""

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stop(self) -> None:
        """Close its stdin (it exits), kill it if it lingers."""
        if self._proc is None:
            return
        try:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
            self._proc.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            self._proc.kill()
            self._proc.wait(5)


if __name__ == "__main__":
    sys.exit(main())
