"""A real headless Chromium (Debian's package) with its DevTools port open, started and stopped like the test cluster's servers."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from harness.devtools import DevTools
from zkconsumer.testing.probes import ClusterStartError, free_port, get_json, start_until
from zkconsumer.testing.process import JavaProcess

INSTALL_HINT = "install Debian's package chromium (apt-get install chromium; scripts/setup-env.sh does it)"
# Headless as root in a sandbox-less container, and nothing that reaches out to the network: this
# machine has none, and each refused background connection slows the start.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--remote-debugging-address=127.0.0.1",
)


def program() -> str:
    """Path of `chromium`; ClusterStartError naming the package when missing."""
    found = shutil.which("chromium")
    if found is None:
        raise ClusterStartError(f"chromium is not on PATH: {INSTALL_HINT}")
    return found


class Chromium:
    """One headless Chromium process, its profile and log under `workdir`; `page()` opens a
    DevTools session with its first tab.

    Example::

        with Chromium(tmp_path / "chromium") as browser, browser.page() as page:
            page.navigate("http://127.0.0.1:9308/")
            page.wait_for("document.body.dataset.renders >= 1", timeout_s=10)
    """

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        args = [*FLAGS, f"--remote-debugging-port={self.port}", f"--user-data-dir={self.workdir / 'profile'}"]
        self.process = JavaProcess(
            "chromium", [*args, "about:blank"], log_path=self.workdir / "chromium.log", java=program()
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> Chromium:
        """Start Chromium; return once its DevTools port lists a page (ClusterStartError with its log tail if not)."""
        start_until(self.process, self._ready, timeout, "a page on its DevTools port")
        return self

    def stop(self) -> None:
        self.process.stop(timeout=10.0)

    def __enter__(self) -> Chromium:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def log_tail(self, lines: int = 40) -> str:
        return self.process.log_tail(lines)

    def version(self) -> str:
        return str(get_json(self.url + "/json/version", 5.0).get("Browser", "?"))

    def page(self, timeout_s: float = 30.0) -> DevTools:
        """A DevTools session with the first page target."""
        return DevTools(self._pages()[0]["webSocketDebuggerUrl"], timeout_s)

    def _pages(self) -> list[dict[str, Any]]:
        return [t for t in get_json(self.url + "/json/list", 5.0) if t.get("type") == "page"]

    def _ready(self) -> bool:
        try:
            return bool(self._pages())
        except OSError:
            return False
