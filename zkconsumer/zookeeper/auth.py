"""How a member authenticates to ZooKeeper (digest, or SASL from a JAAS login section) and which ACL its nodes get."""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from zkconsumer.errors import ZkConsumerError

__all__ = ["JaasError", "LoginModule", "ZkAuth", "parse_jaas", "parse_login_module", "zk_auth", "zookeeper_auth"]

DIGEST_MODULE = "org.apache.zookeeper.server.auth.DigestLoginModule"
KERBEROS_MODULE = "com.sun.security.auth.module.Krb5LoginModule"
CLIENT_KEYTAB_ENV = "KRB5_CLIENT_KTNAME"  # MIT Kerberos: the keytab a client logs in from by itself
_FLAGS = ("required", "requisite", "sufficient", "optional")
_TOKEN = re.compile(r'\s+|//[^\n]*|/\*.*?\*/|"(?:[^"\\]|\\.)*"|[{};=]|[^\s{};="]+', re.DOTALL)


class JaasError(ZkConsumerError, ValueError):
    """A JAAS text that cannot be read, or one without the login section or options we need. A setting to fix."""


@dataclass(frozen=True)
class LoginModule:
    """One login module entry of a JAAS section: its class, flag and options."""

    name: str
    flag: str
    options: Mapping[str, str]


def _tokens(text: str) -> list[str]:
    out, at = [], 0
    while at < len(text):
        match = _TOKEN.match(text, at)
        if match is None:  # an unterminated quote or comment
            raise JaasError(f"cannot read the JAAS text at {text[at : at + 20]!r}")
        token, at = match.group(), match.end()
        if token.strip() and not token.startswith(("//", "/*")):
            out.append(token)
    return out


def _unquote(token: str) -> str:
    if token.startswith('"'):
        return re.sub(r"\\(.)", r"\1", token[1:-1])
    return token


def _modules(tokens: list[str], at: int, end_token: str | None) -> tuple[list[LoginModule], int]:
    """`Module flag key=value ... ;` entries up to `end_token` (None: the end of the text)."""
    modules = []
    while at < len(tokens) and tokens[at] != end_token:
        if at + 1 >= len(tokens) or tokens[at + 1].lower() not in _FLAGS:
            raise JaasError(f"expected a login module and a flag ({'/'.join(_FLAGS)}) at {tokens[at]!r}")
        name, flag, at = tokens[at], tokens[at + 1].lower(), at + 2
        options: dict[str, str] = {}
        while at < len(tokens) and tokens[at] != ";":
            if tokens[at] == "}":
                raise JaasError(f"the entry of {name} does not end with ';'")
            if at + 2 >= len(tokens) or tokens[at + 1] != "=":
                raise JaasError(f"expected key=value in the options of {name}, got {tokens[at]!r}")
            options[tokens[at]] = _unquote(tokens[at + 2])
            at += 3
        if at >= len(tokens):
            raise JaasError(f"the entry of {name} does not end with ';'")
        modules.append(LoginModule(name, flag, options))
        at += 1
    return modules, at


def parse_login_module(text: str) -> LoginModule:
    """One login module entry, as in Kafka's sasl.jaas.config: `Module required key="value";`."""
    modules, _ = _modules(_tokens(text), 0, None)
    if len(modules) != 1:
        raise JaasError(f"expected exactly one login module entry, found {len(modules)}")
    return modules[0]


def parse_jaas(text: str, section: str = "Client") -> LoginModule:
    """The first login module of `section` in a JAAS configuration file's text."""
    tokens, at = _tokens(text), 0
    sections: list[str] = []
    while at < len(tokens):
        if at + 1 >= len(tokens) or tokens[at + 1] != "{":
            raise JaasError(f"expected 'Name {{' at {tokens[at]!r}")
        name = tokens[at]
        modules, at = _modules(tokens, at + 2, "}")
        if at >= len(tokens):
            raise JaasError(f"section {name} has no closing '}}'")
        at += 1 + (at + 1 < len(tokens) and tokens[at + 1] == ";")
        if name == section:
            if not modules:
                raise JaasError(f"section {section} names no login module")
            return modules[0]
        sections.append(name)
    raise JaasError(f"no section {section!r} (found: {', '.join(sections) or 'none'})")


@dataclass(frozen=True)
class ZkAuth:
    """Credentials for kazoo and the ACL of the owner and offset nodes we create.

    `set_acl` gives those nodes (and the owners/offsets folders) the ACL a secured Scala 1.1
    member gives its own: every right to the identity that created it, read to everyone. The
    group node, ids/ and member registrations stay open, as Scala leaves them, so members of
    other identities can still join.
    """

    digest: str | None = None
    sasl: Mapping[str, str] | None = None
    set_acl: bool = False
    keytab: str | None = None  # Krb5LoginModule's keyTab (useKeyTab=true), see use_client_keytab

    @property
    def identity(self) -> str:
        """Who we are to ZooKeeper, for error messages (no secret)."""
        if self.sasl is not None:
            who = self.sasl.get("username") or self.sasl.get("principal") or "the ticket cache's principal"
            return f"sasl:{who} ({self.sasl['mechanism']})"
        if self.digest is not None:
            return f"digest:{self.digest.split(':', 1)[0]}"
        return "an unauthenticated client"

    def kazoo_options(self) -> dict[str, Any]:
        """auth_data and sasl_options for KazooClient."""
        return {
            "auth_data": [("digest", self.digest)] if self.digest else None,
            "sasl_options": dict(self.sasl) if self.sasl is not None else None,
        }

    def node_acl(self) -> list[Any] | None:
        """The ACL of the owner and offset nodes we create; None: ZooKeeper's open default."""
        from kazoo.security import CREATOR_ALL_ACL, READ_ACL_UNSAFE

        return CREATOR_ALL_ACL + READ_ACL_UNSAFE if self.set_acl else None

    def use_client_keytab(self) -> None:
        """Let MIT Kerberos log the principal in from `keytab`, as the JVM's Krb5LoginModule does.

        pure-sasl's GSSAPI (through pykerberos) takes no keytab argument: the library reads the
        client keytab from KRB5_CLIENT_KTNAME, one per process. _kerberos_options refused a
        configuration whose keytab differs from one already set there.
        """
        if self.keytab is not None:
            os.environ.setdefault(CLIENT_KEYTAB_ENV, self.keytab)

    def prepare_login(self, hosts: str) -> None:
        """Run before a kazoo client with these credentials connects to `hosts` (zookeeper.connect):
        sets the client keytab and, for GSSAPI, has Kerberos issue the ZooKeeper service ticket now.
        kazoo would ask on its connection thread, where a failure ends the thread silently and the
        client never connects; here it is ZooKeeperAccessDenied with Kerberos' own words."""
        from zkconsumer.errors import ZooKeeperAccessDenied

        self.use_client_keytab()
        problem = self.kerberos_login_problem(hosts)
        if problem is not None:
            raise ZooKeeperAccessDenied(f"cannot log in to ZooKeeper at {hosts} as {self.identity}: {problem}")

    def kerberos_login_problem(self, hosts: str) -> str | None:
        """Why Kerberos cannot give us a ticket for the ZooKeeper service of the first server in
        `hosts` (no credentials for the principal, no such service principal, the KDC unreachable,
        ...); None if it can or GSSAPI is not used."""
        if self.sasl is None or self.sasl.get("mechanism") != "GSSAPI":
            return None
        import kerberos  # _kerberos_options checked that it is installed

        from zkconsumer.config.checks import parse_zookeeper_connect

        host = parse_zookeeper_connect(hosts)[0][0][0]  # kazoo names the service after the host as written
        service = f"{self.sasl.get('service', 'zookeeper')}@{host}"
        context = None
        try:
            _, context = kerberos.authGSSClientInit(service=service, principal=self.sasl.get("principal"))
            kerberos.authGSSClientStep(context, "")  # acquires the credentials and the service ticket
        except kerberos.GSSError as exc:
            return "; ".join(str(part[0]) for part in exc.args if isinstance(part, tuple) and part)
        finally:
            if context is not None:
                kerberos.authGSSClientClean(context)
        return None


def _kerberos_options(module: LoginModule, where: str) -> tuple[dict[str, str], str | None]:
    """GSSAPI sasl_options and the keytab to log in from (None: the process's ticket cache)."""
    if importlib.util.find_spec("kerberos") is None:
        raise JaasError(
            f"{where}: {KERBEROS_MODULE} (GSSAPI) needs the Python package kerberos: "
            f"pip install 'zkconsumer[kerberos]' (it builds against MIT Kerberos: libkrb5-dev)"
        )
    options = {"mechanism": "GSSAPI"}
    if "principal" in module.options:
        options["principal"] = module.options["principal"]
    if module.options.get("useKeyTab", "false").lower() != "true":
        return options, None
    keytab = module.options.get("keyTab")
    if not keytab:
        raise JaasError(f"{where}: {KERBEROS_MODULE} with useKeyTab=true needs keyTab")
    current = os.environ.get(CLIENT_KEYTAB_ENV)
    if current and current != keytab:
        raise JaasError(
            f"{where}: keyTab {keytab} differs from {CLIENT_KEYTAB_ENV}={current}; "
            f"a process logs in from one client keytab"
        )
    return options, keytab


def _sasl_options(module: LoginModule, where: str) -> tuple[dict[str, str], str | None]:
    if module.name == DIGEST_MODULE:
        missing = [k for k in ("username", "password") if k not in module.options]
        if missing:
            raise JaasError(f"{where}: {DIGEST_MODULE} needs {' and '.join(missing)}")
        return {
            "mechanism": "DIGEST-MD5",
            "username": module.options["username"],
            "password": module.options["password"],
        }, None
    if module.name == KERBEROS_MODULE:
        return _kerberos_options(module, where)
    raise JaasError(f"{where}: login module {module.name} is not supported (use {DIGEST_MODULE} or {KERBEROS_MODULE})")


def zk_auth(
    *,
    digest: str | None,
    jaas_inline: str | None,
    jaas_file_text: str | None,
    jaas_file: str | None,
    section: str,
    sasl_client: bool,
    set_acl: bool | None,
) -> ZkAuth:
    """The ZkAuth the properties describe: an inline login module wins over a JAAS file's section;
    `sasl_client=false` turns SASL off (as the JVM's zookeeper.sasl.client); set_acl defaults to
    "SASL is used", as a Scala member secures its nodes exactly when its JAAS has a Client section."""
    sasl, keytab = None, None
    if sasl_client and jaas_inline is not None:
        sasl, keytab = _sasl_options(parse_login_module(jaas_inline), "zookeeper.sasl.jaas.config")
    elif sasl_client and jaas_file_text is not None:
        sasl, keytab = _sasl_options(parse_jaas(jaas_file_text, section), f"{jaas_file} section {section}")
    return ZkAuth(digest=digest, sasl=sasl, set_acl=(sasl is not None) if set_acl is None else set_acl, keytab=keytab)


def zookeeper_auth(config: Any) -> ZkAuth:
    """The ZkAuth of a ConsumerConfig, reading the JAAS file it names; ConfigError names the property."""
    from zkconsumer.config.checks import ConfigError

    path = config.java_security_auth_login_config
    file_text = None
    if path is not None and config.zookeeper_sasl_client and config.zookeeper_sasl_jaas_config is None:
        try:
            with open(path, encoding="utf-8") as handle:
                file_text = handle.read()
        except OSError as exc:
            raise ConfigError("java.security.auth.login.config", f"cannot read the JAAS file {path}: {exc}") from None
    try:
        return zk_auth(
            digest=config.zookeeper_digest,
            jaas_inline=config.zookeeper_sasl_jaas_config,
            jaas_file_text=file_text,
            jaas_file=path,
            section=config.zookeeper_sasl_clientconfig,
            sasl_client=config.zookeeper_sasl_client,
            set_acl=config.zookeeper_set_acl,
        )
    except JaasError as exc:
        key = "zookeeper.sasl.jaas.config" if config.zookeeper_sasl_jaas_config else "java.security.auth.login.config"
        raise ConfigError(key, f"{key}: {exc}") from None
