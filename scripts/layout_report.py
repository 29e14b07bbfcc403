"""Print the layout figures of zkconsumer/ from its code (AST only: the package is never imported).

    .venv/bin/python scripts/layout_report.py                       # this checkout
    .venv/bin/python scripts/layout_report.py --root /path/to/checkout --details   # and what they count

The figures: files, small modules, import arrows between modules and between folders, the layers
and the arrows that go up them, `import X as X` re-exports, `__all__` lists of foreign names, and
class names defined more than once. The last line repeats them as key=value pairs.

This module is also the one home of the layer order and of the scans that
tests/unit/test_layout.py checks the layout rule with (docs/design.md, "Modules").
"""

from __future__ import annotations

import argparse
import ast
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "zkconsumer"
SMALL = 30  # lines: a module shorter than this is a fragment worth a look, not a concept

# The layers of zkconsumer, bottom first: a module may import from its own layer and the layers below,
# never from a layer above. Each entry is a module or package right under zkconsumer/ ("__init__" is
# zkconsumer/__init__.py, the package face). A new module or package there fails test_layout until it
# is added to the layer it belongs to.
LAYERS: list[set[str]] = [
    {"errors", "clock", "partitions", "version", "metrics"},  # they import nothing of zkconsumer
    {"config"},
    {"migration"},  # the migration model: pure, no I/O
    {"zookeeper"},
    # group_problems: the one problem analysis (pure), over zookeeper/znodes.py's records; the member's
    # watchdog (coordinator/) and the ops library (admin/) both word their findings with it.
    {"cluster", "group_problems"},
    {"consumer"},
    {"offsets"},
    {"coordinator"},
    {"group_member", "broker_coordination"},  # the two kinds of member a connector runs
    {"connector"},
    {"__init__"},  # the package face: what users import
    {"admin"},
    {"exporter", "spark"},
    {"cli"},
    {"testing"},  # the test kit: nothing in the library may depend on it
]


@dataclass(frozen=True)
class Arrow:
    """One import statement of a zkconsumer module that names another zkconsumer module."""

    source: str  # dotted module names
    target: str
    line: int


def module_name(path: Path, package: Path) -> str:
    """zkconsumer/admin/groups.py -> zkconsumer.admin.groups; zkconsumer/admin/__init__.py -> zkconsumer.admin."""
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(package: Path) -> dict[str, Path]:
    """Every module of the package folder `package`, by dotted name."""
    return {module_name(path, package): path for path in sorted(package.rglob("*.py"))}


def parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def unit(name: str) -> str:
    """The entry of LAYERS a module belongs to: the module or package right under zkconsumer/."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer_of(name: str, layers: list[set[str]] = LAYERS) -> int | None:
    """The index of a module's layer (0 at the bottom), None when no layer has its unit."""
    return next((index for index, layer in enumerate(layers) if unit(name) in layer), None)


def _absolute(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    """The module a `from` import reads from, with a relative one (`from .x import y`) made absolute."""
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    base = base[: len(base) - node.level + (1 if is_package else 0)]
    return ".".join(base + ([node.module] if node.module else []))


def _known(name: str, known: set[str]) -> str | None:
    """The longest prefix of `name` that is a module of the package (zkconsumer.x.Name -> zkconsumer.x)."""
    parts = name.split(".")
    while parts:
        if ".".join(parts) in known:
            return ".".join(parts)
        parts.pop()
    return None


def arrows(name: str, path: Path, known: set[str], tree: ast.Module | None = None) -> list[Arrow]:
    """Each import of a module of `known` by module `name`: at the top, under `if TYPE_CHECKING:` or in a function."""
    found = []
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree or parse(path)):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node, name, is_package)
            # `from zkconsumer.admin import status` imports the module zkconsumer.admin.status.
            targets = [
                f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source for alias in node.names
            ]
        for target in targets:
            module = _known(target, known)
            if module is not None and module != name:
                found.append(Arrow(name, module, node.lineno))
    return list(dict.fromkeys(found))  # `from m import a, b` is one arrow


def reexports(path: Path, tree: ast.Module | None = None) -> list[str]:
    """`line: import` for each `import X as X` / `from m import X as X`: the spelling that re-exports X."""
    found = []
    for node in ast.walk(tree or parse(path)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.asname == alias.name:
                    found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def _defined(tree: ast.Module) -> set[str]:
    """The names a module defines itself: functions, classes and assignments at its top level (under if/try too)."""
    names: set[str] = set()
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.If):
            stack += node.body + node.orelse
        elif isinstance(node, ast.Try):
            stack += node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body]
    return names - {"__all__"}


def _all_names(tree: ast.Module) -> list[str] | None:
    """The literal strings of a top-level `__all__ = [...]` (or tuple), None without one."""
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if any(isinstance(target, ast.Name) and target.id == "__all__" for target in targets):
            elements = value.elts if isinstance(value, (ast.List, ast.Tuple)) else []
            return [e.value for e in elements if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return None


def foreign_all(path: Path, tree: ast.Module | None = None) -> list[str]:
    """The names an `__all__` lists that its module does not define (it re-exports them)."""
    tree = tree or parse(path)
    listed = _all_names(tree)
    if listed is None:
        return []
    defined = _defined(tree)
    return [name for name in listed if name not in defined]


def classes(path: Path, tree: ast.Module | None = None) -> list[tuple[str, int]]:
    """(name, line) of every class statement of a module, nested ones too."""
    return [(node.name, node.lineno) for node in ast.walk(tree or parse(path)) if isinstance(node, ast.ClassDef)]


@dataclass
class Layout:
    """What the scans find in one package folder."""

    package: Path
    files: dict[str, Path]
    trees: dict[str, ast.Module]

    @classmethod
    def of(cls, package: Path) -> Layout:
        files = modules(package)
        return cls(package, files, {name: parse(path) for name, path in files.items()})

    def where(self, name: str) -> str:
        return str(self.files[name].relative_to(self.package.parent))

    def faces(self) -> Iterator[str]:
        return (name for name, path in self.files.items() if path.name == "__init__.py")

    def arrows(self) -> list[Arrow]:
        known = set(self.files)
        return [a for name, path in self.files.items() for a in arrows(name, path, known, self.trees[name])]

    def unplaced(self, layers: list[set[str]] = LAYERS) -> set[str]:
        """Modules and packages right under the package folder that no layer names."""
        return {unit(name) for name in self.files if layer_of(name, layers) is None}

    def upward(self, layers: list[set[str]] = LAYERS) -> list[Arrow]:
        """Arrows from a module to one of a higher layer."""
        return [
            a
            for a in self.arrows()
            if (low := layer_of(a.source, layers)) is not None
            and (high := layer_of(a.target, layers)) is not None
            and high > low
        ]

    def reexports(self) -> dict[str, list[str]]:
        """`import X as X` outside package faces, by file."""
        faces = set(self.faces())
        found = {self.where(n): reexports(p, self.trees[n]) for n, p in self.files.items() if n not in faces}
        return {where: lines for where, lines in found.items() if lines}

    def foreign_all(self) -> dict[str, list[str]]:
        """Foreign names in the `__all__` of modules that are not package faces, by file."""
        faces = set(self.faces())
        found = {self.where(n): foreign_all(p, self.trees[n]) for n, p in self.files.items() if n not in faces}
        return {where: names for where, names in found.items() if names}

    def duplicate_classes(self) -> dict[str, list[str]]:
        """Class names defined more than once in the package: name -> ['file:line', ...]."""
        places: dict[str, list[str]] = defaultdict(list)
        for name, path in self.files.items():
            for cls_name, line in classes(path, self.trees[name]):
                places[cls_name].append(f"{self.where(name)}:{line}")
        return {name: where for name, where in sorted(places.items()) if len(where) > 1}


def folder(name: str, layout: Layout) -> str:
    """The folder a module's file is in, relative to the checkout: zkconsumer/admin."""
    return str(layout.files[name].parent.relative_to(layout.package.parent))


def report(root: Path, details: bool = False) -> list[str]:
    """The figures of root/zkconsumer, a line each (with what they count under them with `details`), then key=value pairs."""
    layout = Layout.of(root / PACKAGE)
    lines = {name: len(path.read_text().splitlines()) for name, path in layout.files.items()}
    faces = set(layout.faces())
    small = sorted(name for name in layout.files if name not in faces and lines[name] < SMALL)
    small_faces = sorted(name for name in faces if lines[name] < SMALL)
    arrows = layout.arrows()
    module_arrows = {(a.source, a.target) for a in arrows}
    folder_arrows = {(folder(s, layout), folder(t, layout)) for s, t in module_arrows} - {
        (f, f) for f in {folder(n, layout) for n in layout.files}
    }
    upward = layout.upward()
    up_arrows = sorted({(a.source, a.target) for a in upward})
    unplaced = sorted(layout.unplaced())
    reexports = layout.reexports()
    foreign = layout.foreign_all()
    duplicates = layout.duplicate_classes()
    listed = {
        f"modules under {SMALL} lines: {len(small)} (and {len(small_faces)} __init__.py)": [
            f"{lines[name]:3d} {layout.where(name)}" for name in small
        ],
        f"import arrows: {len(module_arrows)} distinct module -> module": [],
        f"folder arrows: {len(folder_arrows)} distinct folder -> folder": [
            f"{s} -> {t}" for s, t in sorted(folder_arrows)
        ],
        f"arrows up: {len(up_arrows)}": [f"{s} -> {t}" for s, t in up_arrows],
        f"import X as X outside __init__.py: {sum(map(len, reexports.values()))}": [
            f"{where}:{line}" for where, found in sorted(reexports.items()) for line in found
        ],
        f"__all__ with foreign names outside __init__.py: {len(foreign)} modules": [
            f"{where}: {' '.join(names)}" for where, names in sorted(foreign.items())
        ],
        f"class names defined more than once: {len(duplicates)}": [
            f"{name}: {' '.join(where)}" for name, where in duplicates.items()
        ],
    }
    out = [
        f"layout of {layout.package}",
        f"files: {len(layout.files)} .py ({len(faces)} __init__.py)",
        f"layers: {len(LAYERS)}, bottom first",
        *(f"  {index}: {' '.join(sorted(layer))}" for index, layer in enumerate(LAYERS)),
        f"not in a layer: {' '.join(unplaced) or 'none'}",
    ]
    for heading, items in listed.items():
        out += [heading, *(f"  {item}" for item in items if details)]
    figures = {
        "files": len(layout.files),
        "inits": len(faces),
        "small_modules": len(small),
        "small_inits": len(small_faces),
        "import_arrows": len(module_arrows),
        "folder_arrows": len(folder_arrows),
        "layers": len(LAYERS),
        "unplaced": len(unplaced),
        "arrows_up": len(up_arrows),
        "reexports": sum(map(len, reexports.values())),
        "foreign_all": len(foreign),
        "duplicate_classes": len(duplicates),
    }
    return [*out, " ".join(f"{key}={value}" for key, value in figures.items())]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout holding zkconsumer/ (default: this one)")
    parser.add_argument("--details", action="store_true", help="list what each figure counts under it")
    args = parser.parse_args()
    print("\n".join(report(args.root, args.details)))


if __name__ == "__main__":
    main()
