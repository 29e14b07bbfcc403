"""zkconsumer.admin's face: every name docs/admin.md cites is on it, and failures leave it as the AdminError family."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest
from kazoo.exceptions import ConnectionLoss, NoAuthError
from kazoo.handlers.threading import KazooTimeoutError

import zkconsumer.admin
from zkconsumer.admin import AdminUnavailable, AdminUsageError, InputError, OffsetWrite
from zkconsumer.admin.error_boundary import admin_errors, from_zookeeper
from zkconsumer.cli.common import expected_error_message
from zkconsumer.errors import ZkDataError, ZooKeeperAccessDenied

PAGE = Path(__file__).resolve().parents[2] / "docs" / "admin.md"
FACE = Path(zkconsumer.admin.__file__)


def test_every_name_of_the_face_exists_and_the_page_cites_only_the_face() -> None:
    assert all(hasattr(zkconsumer.admin, name) for name in zkconsumer.admin.__all__)
    text = PAGE.read_text()
    cited = re.findall(r"zkconsumer\.admin\.([A-Za-z_][A-Za-z0-9_.]*)", text)
    assert cited, "docs/admin.md cites no zkconsumer.admin name"
    assert [name for name in cited if name not in zkconsumer.admin.__all__] == []


def _type_checking_imports(path: Path) -> dict[str, tuple[str, ...]]:
    """module -> names, of the face's `if TYPE_CHECKING:` block (each `X as X`)."""
    found: dict[str, tuple[str, ...]] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module
                assert all(alias.asname == alias.name for alias in imp.names), ast.unparse(imp)
                found[imp.module] = found.get(imp.module, ()) + tuple(alias.name for alias in imp.names)
    return found


def test_the_lazy_face_says_the_same_to_type_checkers_and_at_run_time() -> None:
    assert _type_checking_imports(FACE) == zkconsumer.admin._HOMES
    for module, names in zkconsumer.admin._HOMES.items():  # each name is where the face says it is
        home = importlib.import_module(module)
        assert all(getattr(zkconsumer.admin, name) is getattr(home, name) for name in names), module
    with pytest.raises(AttributeError, match="no_such_name"):
        zkconsumer.admin.no_such_name  # noqa: B018


def test_no_name_of_the_face_is_also_a_module_of_it() -> None:
    # Loading a module sets it as an attribute of its package: `from zkconsumer.admin import unstick`
    # would then give whoever asked after that load the module, not the function.
    modules = {found.name for found in pkgutil.iter_modules(zkconsumer.admin.__path__)}
    assert modules & set(zkconsumer.admin.__all__) == set()


def test_the_check_of_the_face_catches_a_name_the_type_checkers_are_not_told_of(tmp_path: Path) -> None:
    planted = tmp_path / "__init__.py"
    planted.write_text(
        FACE.read_text().replace("    from zkconsumer.admin.sampler import GroupSampler as GroupSampler\n", "")
    )
    assert planted.read_text() != FACE.read_text()
    assert _type_checking_imports(planted) != zkconsumer.admin._HOMES


def test_importing_the_face_loads_no_module_of_the_library() -> None:
    # A command loads only the parts it uses: the whole library costs each verb tens of milliseconds.
    code = "import sys, zkconsumer.admin; print(sorted(m for m in sys.modules if m.startswith('zkconsumer.admin.')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


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
