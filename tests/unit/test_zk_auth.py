"""ZooKeeper authentication settings: JAAS texts, the identity named in errors, the ACL of our nodes,
and NoAuth answers turned into one clear, non-retriable error naming the node."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kazoo.exceptions import NoAuthError, RolledBackError
from kazoo.security import ACL, Id, Permissions

from zkconsumer.config.checks import ConfigError
from zkconsumer.config.consumer_config import ConsumerConfig
from zkconsumer.errors import ZooKeeperAccessDenied, is_retriable
from zkconsumer.zookeeper.auth import (
    CLIENT_KEYTAB_ENV,
    DIGEST_MODULE,
    KERBEROS_MODULE,
    JaasError,
    parse_jaas,
    parse_login_module,
    zk_auth,
    zookeeper_auth,
)
from zkconsumer.zookeeper.client import ZkIO

JAAS_FILE = f"""
// the broker's and the client's sections, as Kafka's docs show them
KafkaServer {{
    org.apache.kafka.common.security.plain.PlainLoginModule required username="b" password="bp";
}};
/* the one a consumer uses */
Client {{
    {DIGEST_MODULE} required
    username="alice"
    password="a \\"quoted\\" secret";
}};
Other {{ {KERBEROS_MODULE} required useKeyTab=true keyTab="/etc/zk.keytab" principal="zk/host@REALM"; }};
"""


def _config(**props: object) -> ConsumerConfig:
    return ConsumerConfig.from_mapping({"zookeeper.connect": "zk:2181", "group.id": "g", **props})


def test_a_jaas_file_section_is_read() -> None:
    module = parse_jaas(JAAS_FILE)
    assert (module.name, module.flag) == (DIGEST_MODULE, "required")
    assert module.options == {"username": "alice", "password": 'a "quoted" secret'}
    assert parse_jaas(JAAS_FILE, "Other").options == {
        "useKeyTab": "true",
        "keyTab": "/etc/zk.keytab",
        "principal": "zk/host@REALM",
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Client { x required a=1 }", "does not end with ';'"),
        ("Client { x a=1; };", "expected a login module and a flag"),
        ("Client { x required a; };", "expected key=value"),
        ('Client { x required a="open; };', "cannot read"),
        ("Client { x required a=1;", "no closing"),
        ("Client { };", "names no login module"),
        ("Server { x required; };", "no section 'Client' (found: Server)"),
    ],
)
def test_a_broken_jaas_text_names_the_problem(text: str, message: str) -> None:
    with pytest.raises(JaasError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_jaas(text)


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60))
def test_any_text_parses_or_raises_jaas_error(text: str) -> None:
    try:
        parse_jaas(text)
    except JaasError:
        pass


@given(
    st.from_regex(r"[A-Za-z0-9_.-]{1,10}", fullmatch=True),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=20),
)
def test_any_password_survives_quoting(user: str, password: str) -> None:
    quoted = password.replace("\\", "\\\\").replace('"', '\\"')
    module = parse_login_module(f'{DIGEST_MODULE} required username="{user}" password="{quoted}";')
    assert module.options == {"username": user, "password": password}


def test_the_inline_login_module_gives_digest_md5_and_scala_acls() -> None:
    auth = zookeeper_auth(
        _config(**{"zookeeper.sasl.jaas.config": f'{DIGEST_MODULE} required username="alice" password="pw";'})
    )
    assert auth.sasl == {"mechanism": "DIGEST-MD5", "username": "alice", "password": "pw"}
    assert auth.identity == "sasl:alice (DIGEST-MD5)"
    options = auth.kazoo_options()
    assert options == {"sasl_options": dict(auth.sasl), "auth_data": None}
    assert auth.node_acl() == [ACL(Permissions.ALL, Id("auth", "")), ACL(Permissions.READ, Id("world", "anyone"))]


def test_a_jaas_file_section_and_the_switches(tmp_path: Path) -> None:
    path = tmp_path / "jaas.conf"
    path.write_text(JAAS_FILE)
    auth = zookeeper_auth(_config(**{"java.security.auth.login.config": str(path)}))
    assert auth.sasl is not None and auth.sasl["username"] == "alice" and auth.set_acl
    kerberos = zookeeper_auth(
        _config(**{"java.security.auth.login.config": str(path), "zookeeper.sasl.clientconfig": "Other"})
    )
    assert kerberos.sasl == {"mechanism": "GSSAPI", "principal": "zk/host@REALM"}
    assert kerberos.keytab == "/etc/zk.keytab" and auth.keytab is None
    off = zookeeper_auth(_config(**{"java.security.auth.login.config": str(path), "zookeeper.sasl.client": "false"}))
    assert off.sasl is None and not off.set_acl
    no_acl = zookeeper_auth(_config(**{"java.security.auth.login.config": str(path), "zookeeper.set.acl": "false"}))
    assert no_acl.sasl is not None and no_acl.node_acl() is None


def test_digest_only_keeps_open_acls_unless_asked() -> None:
    auth = zookeeper_auth(_config(**{"zkconsumer.zookeeper.digest": "bob:pw"}))
    assert (auth.identity, auth.set_acl, auth.kazoo_options()["auth_data"]) == (
        "digest:bob",
        False,
        [("digest", "bob:pw")],
    )
    assert zookeeper_auth(_config(**{"zkconsumer.zookeeper.digest": "bob:pw", "zookeeper.set.acl": "true"})).set_acl
    assert zookeeper_auth(_config()).identity == "an unauthenticated client"


@pytest.mark.parametrize(
    ("props", "key", "message"),
    [
        ({"java.security.auth.login.config": "/no/such/jaas.conf"}, "java.security.auth.login.config", "cannot read"),
        ({"zookeeper.sasl.jaas.config": "x required;"}, "zookeeper.sasl.jaas.config", "not supported"),
        (
            {"zookeeper.sasl.jaas.config": f'{DIGEST_MODULE} required username="a";'},
            "zookeeper.sasl.jaas.config",
            "needs password",
        ),
    ],
)
def test_bad_settings_name_their_property(props: dict[str, str], key: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        zookeeper_auth(_config(**props))
    assert caught.value.key == key


def test_the_jaas_password_is_redacted() -> None:
    config = _config(**{"zookeeper.sasl.jaas.config": f'{DIGEST_MODULE} required username="alice" password="pw;x";'})
    shown = config.as_properties(redact=True)["zookeeper.sasl.jaas.config"]
    assert "pw" not in shown and 'username="alice"' in shown and 'password="****"' in shown


class _Answer:
    def __init__(self, value: object) -> None:
        self.value = value

    def get(self, timeout: float) -> object:
        if isinstance(self.value, BaseException):
            raise self.value
        return self.value


def test_noauth_names_the_request_the_node_and_the_identity() -> None:
    io = ZkIO(object(), 1.0, "sasl:bob (DIGEST-MD5)")
    with pytest.raises(ZooKeeperAccessDenied, match=r"refused delete /consumers/g/owners/t/0 to sasl:bob"):
        io.wait(_Answer(NoAuthError()), "delete /consumers/g/owners/t/0")
    results = [RolledBackError(), NoAuthError()]
    with pytest.raises(ZooKeeperAccessDenied, match=r"claim 2 partitions \(/consumers/g/owners/t/1\)") as caught:
        io.wait(_Answer(results), "claim 2 partitions", ["/consumers/g/owners/t/0", "/consumers/g/owners/t/1"])
    assert not is_retriable(caught.value)
    assert io.wait(_Answer([RolledBackError(), ValueError()]), "other") is not None  # other failures pass through


def _kerberos(module_options: str, monkeypatch: pytest.MonkeyPatch, keytab_env: str | None = None) -> ConsumerConfig:
    if keytab_env is None:  # set first, so that the undo also removes what use_client_keytab sets
        monkeypatch.setenv(CLIENT_KEYTAB_ENV, "placeholder")
        monkeypatch.delenv(CLIENT_KEYTAB_ENV)
    else:
        monkeypatch.setenv(CLIENT_KEYTAB_ENV, keytab_env)
    return _config(**{"zookeeper.sasl.jaas.config": f"{KERBEROS_MODULE} required {module_options};"})


def test_a_kerberos_keytab_becomes_the_processs_client_keytab(monkeypatch: pytest.MonkeyPatch) -> None:
    auth = zookeeper_auth(_kerberos('useKeyTab=true keyTab="/k/alice.keytab" principal="alice@R"', monkeypatch))
    assert (auth.keytab, auth.identity, auth.set_acl) == ("/k/alice.keytab", "sasl:alice@R (GSSAPI)", True)
    auth.use_client_keytab()
    assert __import__("os").environ[CLIENT_KEYTAB_ENV] == "/k/alice.keytab"
    # The same keytab again is fine; the ticket cache (no useKeyTab) leaves the environment alone.
    assert zookeeper_auth(_kerberos('useKeyTab=true keyTab="/k/alice.keytab"', monkeypatch, "/k/alice.keytab")).keytab
    cache = zookeeper_auth(_kerberos('useTicketCache=true principal="alice@R"', monkeypatch))
    cache.use_client_keytab()
    assert cache.keytab is None and CLIENT_KEYTAB_ENV not in __import__("os").environ


@pytest.mark.parametrize(
    ("options", "keytab_env", "message"),
    [
        ("useKeyTab=true", None, "useKeyTab=true needs keyTab"),
        (
            'useKeyTab=true keyTab="/k/a.keytab"',
            "/k/other.keytab",
            "keyTab /k/a.keytab differs from KRB5_CLIENT_KTNAME=/k/other.keytab",
        ),
    ],
)
def test_kerberos_settings_a_process_cannot_honour_name_the_property(
    options: str, keytab_env: str | None, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match="zookeeper.sasl.jaas.config") as failure:
        zookeeper_auth(_kerberos(options, monkeypatch, keytab_env))
    assert message in str(failure.value)


def test_kerberos_without_the_kerberos_package_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "kerberos" else real(name, *a))
    with pytest.raises(JaasError, match=r"pip install 'zkconsumer\[kerberos\]'"):
        zk_auth(
            digest=None,
            jaas_inline=f"{KERBEROS_MODULE} required;",
            jaas_file_text=None,
            jaas_file=None,
            section="Client",
            sasl_client=True,
            set_acl=None,
        )


@pytest.mark.parametrize(
    ("hosts", "host"),
    [
        ("zk1:2181,zk2:2181/kafka", "zk1"),
        ("zk1/kafka", "zk1"),
        ("localhost:2181", "localhost"),
        ("[::1]:2181,zk2", "::1"),
    ],
)
def test_the_kerberos_service_host_is_the_first_servers_name(hosts: str, host: str) -> None:
    from zkconsumer.config.checks import parse_zookeeper_connect

    assert parse_zookeeper_connect(hosts)[0][0][0] == host
