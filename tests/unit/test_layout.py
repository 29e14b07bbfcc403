"""The layout rule (docs/design.md, "Modules") holds in zkconsumer/, and test files have unique names."""

from __future__ import annotations

import importlib.util
import sys
from collections import defaultdict
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "zkconsumer"
TESTS = ROOT / "tests"
SCRIPT = ROOT / "scripts" / "layout_report.py"

# The layer order and the AST scans live in the report script (one home for the test and the
# figures); it is loaded from its file, so scripts/ is not put on sys.path for the whole session.
_spec = importlib.util.spec_from_file_location("layout_report", SCRIPT)
assert _spec is not None and _spec.loader is not None
layout = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = layout
_spec.loader.exec_module(layout)

# pytest's default python_files. A test file in a folder without __init__.py (most of tests/) is
# imported by its basename, so two of one name fail collection with "import file mismatch"; tests/sim
# is a package and would get away with it, but one name per test file holds wherever a file moves.
COLLECTED = ("test_*.py", "*_test.py")


def duplicate_test_files(tests: Path) -> dict[str, list[str]]:
    """Basenames of the test files pytest collects under `tests` that more than one folder has."""
    places: dict[str, list[str]] = defaultdict(list)
    for path in sorted({path for pattern in COLLECTED for path in tests.rglob(pattern)}):
        places[path.name].append(str(path.relative_to(tests)))
    return {name: where for name, where in places.items() if len(where) > 1}


@cache
def scanned() -> layout.Layout:
    """zkconsumer/ parsed once for the rule's tests."""
    return layout.Layout.of(PACKAGE)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


# --- the rule on zkconsumer/ ---


def test_only_package_faces_re_export() -> None:
    found = scanned().reexports()
    assert found == {}, (
        f"import the name from the module that defines it (no `import X as X` outside __init__.py): {found}"
    )


def test_no_all_outside_package_faces_lists_a_foreign_name() -> None:
    found = scanned().foreign_all()
    assert found == {}, f"an __all__ outside __init__.py lists only names its module defines: {found}"


def test_each_top_level_module_and_package_is_in_one_layer() -> None:
    placed = [entry for layer in layout.LAYERS for entry in layer]
    assert len(placed) == len(set(placed)), f"in two layers: {sorted({e for e in placed if placed.count(e) > 1})}"
    unplaced = scanned().unplaced()
    assert unplaced == set(), f"add it to a layer (LAYERS in scripts/layout_report.py): {sorted(unplaced)}"


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    found = scanned().upward()
    where = [f"{a.source}:{a.line} -> {a.target}" for a in found]
    assert where == [], f"an import from a higher layer (LAYERS in scripts/layout_report.py, bottom first): {where}"


def test_no_two_classes_share_a_name() -> None:
    # Private classes too: two `_State`s in two modules read as one thing in a traceback or a grep.
    found = scanned().duplicate_classes()
    assert found == {}, f"name each class for what it is (one per name in the package): {found}"


def test_pytest_collects_no_two_test_files_of_one_name() -> None:
    found = duplicate_test_files(TESTS)
    assert found == {}, f"rename one (pytest imports a test file by its basename): {found}"


# --- the scans catch what they are for ---


def test_the_scan_sees_each_re_export_spelling(tmp_path: Path) -> None:
    made = tmp_path / "made.py"
    made.write_text(
        "from zkconsumer.errors import ZkConsumerError as ZkConsumerError\n"
        "import json as json\n"
        "from zkconsumer.errors import ConsumerError as Failed\n"  # a rename, no re-export
        "import os.path as path\n"  # neither
        "def f():\n"
        "    from zkconsumer.clock import Clock as Clock\n"
    )
    assert layout.reexports(made) == [
        "1: from zkconsumer.errors import ZkConsumerError as ZkConsumerError",
        "2: import json as json",
        "6: from zkconsumer.clock import Clock as Clock",
    ]


def test_the_scan_sees_foreign_names_in_all(tmp_path: Path) -> None:
    made = tmp_path / "made.py"
    made.write_text(
        "from typing import TYPE_CHECKING\n"
        "from zkconsumer.errors import ZkConsumerError\n"
        "A = 1\n"
        "B: int = 2\n"
        "def f(): pass\n"
        "class C: pass\n"
        "if TYPE_CHECKING:\n"
        "    D = int\n"
        "try:\n"
        "    E = 1\n"
        "except ImportError:\n"
        "    E = 2\n"
        "__all__ = ['A', 'B', 'f', 'C', 'D', 'E', 'ZkConsumerError', 'Missing']\n"
    )
    assert layout.foreign_all(made) == ["ZkConsumerError", "Missing"]
    made.write_text("A = 1\n")
    assert layout.foreign_all(made) == []


def test_the_package_scans_leave_package_faces_alone(tmp_path: Path) -> None:
    _write(
        tmp_path / "zkconsumer",
        {
            "__init__.py": "from zkconsumer.errors import E as E\n__all__ = ['E']\n",
            "errors.py": "class E(Exception): pass\n__all__ = ['E']\n",
            "admin/__init__.py": "from zkconsumer.admin.tool import T as T\n__all__ = ['T']\n",
            "admin/tool.py": "from zkconsumer.errors import E as E\nclass T: pass\n__all__ = ['T', 'E']\n",
        },
    )
    found = layout.Layout.of(tmp_path / "zkconsumer")
    assert found.reexports() == {"zkconsumer/admin/tool.py": ["1: from zkconsumer.errors import E as E"]}
    assert found.foreign_all() == {"zkconsumer/admin/tool.py": ["E"]}


def test_the_scan_sees_imports_from_above_at_the_top_typed_lazy_and_relative(tmp_path: Path) -> None:
    _write(
        tmp_path / "zkconsumer",
        {
            "__init__.py": "from zkconsumer.connector import C\n",
            "errors.py": "def f():\n    from zkconsumer.admin import tool\n",  # lazy
            "partitions.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from zkconsumer.cli.main import main\n"  # typed only
            ),
            "zookeeper/__init__.py": "",
            "zookeeper/reads.py": "from ..coordinator import plan\nfrom . import writes\n",  # relative
            "zookeeper/writes.py": "import zkconsumer.errors\n",  # down: fine
            "coordinator/__init__.py": "",
            "coordinator/plan.py": "from zkconsumer.zookeeper.reads import x\nfrom zkconsumer import C\n",
            "connector.py": "class C: pass\n",
            "admin/__init__.py": "",
            "admin/tool.py": "from zkconsumer.coordinator.plan import Plan\n",  # down: fine
            "cli/__init__.py": "",
            "cli/main.py": "def main(): pass\n",
            "newcomer.py": "",
        },
    )
    found = layout.Layout.of(tmp_path / "zkconsumer")
    assert found.unplaced() == {"newcomer"}
    assert sorted((a.source, a.line, a.target) for a in found.upward()) == [
        ("zkconsumer.coordinator.plan", 2, "zkconsumer"),  # the package face sits above the coordinator
        ("zkconsumer.errors", 2, "zkconsumer.admin.tool"),
        ("zkconsumer.partitions", 3, "zkconsumer.cli.main"),
        ("zkconsumer.zookeeper.reads", 1, "zkconsumer.coordinator.plan"),
    ]
    # A layer list of one's own: the check follows it.
    assert found.upward([{"coordinator", "zookeeper", "errors", "partitions", "cli", "admin"}]) == []


def test_the_scan_sees_a_class_name_twice_private_and_nested_ones_too(tmp_path: Path) -> None:
    _write(
        tmp_path / "zkconsumer",
        {
            "__init__.py": "",
            "retries.py": "class Outcome: pass\nclass _State: pass\n",
            "copy.py": "class Outcome: pass\ndef f():\n    class _State: pass\n",
            "other.py": "class Unique: pass\n",
        },
    )
    assert layout.Layout.of(tmp_path / "zkconsumer").duplicate_classes() == {
        "Outcome": ["zkconsumer/copy.py:1", "zkconsumer/retries.py:1"],
        "_State": ["zkconsumer/copy.py:3", "zkconsumer/retries.py:2"],
    }


def test_the_scan_sees_two_test_files_of_one_name(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "unit/test_status.py": "",
            "cluster/test_status.py": "",
            "cluster/status_test.py": "",
            "sim/status_test.py": "",
            "cluster/test_other.py": "",
            "spark/helpers.py": "",
            "unit/helpers.py": "",  # not collected: a shared name is the folder's own business
        },
    )
    assert duplicate_test_files(tmp_path) == {
        "status_test.py": ["cluster/status_test.py", "sim/status_test.py"],
        "test_status.py": ["cluster/test_status.py", "unit/test_status.py"],
    }


def test_the_report_counts_a_planted_package(tmp_path: Path) -> None:
    _write(
        tmp_path / "zkconsumer",
        {
            "__init__.py": "from zkconsumer.connector import C as C\n",
            "errors.py": "from zkconsumer.connector import C\nclass E(Exception): pass\n",
            "connector.py": "from zkconsumer.errors import E as E\nclass C: pass\n" + "\n" * 40,
            "admin/__init__.py": "",
            "admin/tool.py": "from zkconsumer import errors\nfrom zkconsumer.connector import C\nclass C: pass\n",
        },
    )
    lines = layout.report(tmp_path)
    figures = dict(pair.split("=") for pair in lines[-1].split())
    assert figures == {
        "files": "5",
        "inits": "2",
        "small_modules": "2",  # errors.py, admin/tool.py
        "small_inits": "2",
        "import_arrows": "5",  # face->connector, errors->connector, connector->errors, tool->errors, tool->connector
        "folder_arrows": "1",  # zkconsumer/admin -> zkconsumer
        "layers": str(len(layout.LAYERS)),
        "unplaced": "0",
        "arrows_up": "1",  # errors -> connector
        "reexports": "1",  # connector.py (the face's own is allowed)
        "foreign_all": "0",
        "duplicate_classes": "1",  # C
    }
