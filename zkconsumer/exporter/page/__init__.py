"""The exporter's web page: one HTML file, its script and its style, shipped in the package and served as they are."""

from __future__ import annotations

from functools import cache
from importlib import resources

# path -> (file of this package, content type)
ASSETS = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/ui/page.js": ("page.js", "text/javascript; charset=utf-8"),
    "/ui/page.css": ("page.css", "text/css; charset=utf-8"),
}


@cache
def _read(name: str) -> bytes:
    return resources.files(__name__).joinpath(name).read_bytes()


def asset(path: str) -> tuple[int, str, bytes] | None:
    """(200, content type, body) of the page's file served at `path`; None for any other path."""
    found = ASSETS.get(path)
    if found is None:
        return None
    name, content_type = found
    return 200, content_type, _read(name)
