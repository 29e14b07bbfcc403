"""A throwaway MIT Kerberos KDC (Debian's krb5-kdc) on loopback, for ZooKeeper GSSAPI tests."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from zkconsumer.testing.probes import ClusterStartError, free_port, start_until
from zkconsumer.testing.process import JavaProcess
from zkconsumer.testing.secure import SASL_PROVIDER

INSTALL_HINT = "install Debian's packages krb5-kdc and krb5-admin-server (scripts/test.sh does it)"
ZOOKEEPER_HOST = "localhost"  # a Kerberos cluster is reached as localhost: its server is zookeeper/localhost

_KDC_CONF = """\
[kdcdefaults]
 kdc_ports = {port}
 kdc_tcp_ports = {port}

[realms]
 {realm} = {{
  database_name = {folder}/principal
  key_stash_file = {folder}/stash
  acl_file = {folder}/kadm5.acl
  max_life = 2h
  supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
 }}

[logging]
 kdc = FILE:{folder}/kdc-events.log
"""

# No DNS anywhere (the sandbox has none), TCP only (Java's default would try UDP first), and host
# names taken as written: a client asked for zookeeper@localhost wants zookeeper/localhost@REALM.
_KRB5_CONF = """\
[libdefaults]
 default_realm = {realm}
 dns_lookup_kdc = false
 dns_lookup_realm = false
 dns_canonicalize_hostname = false
 rdns = false
 udp_preference_limit = 1
 ticket_lifetime = 2h

[realms]
 {realm} = {{
  kdc = 127.0.0.1:{port}
 }}

[domain_realm]
 localhost = {realm}
"""


def _tool(name: str) -> str:
    found = shutil.which(name) or (f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists() else None)
    if found is None:
        raise ClusterStartError(f"{name} is not installed: {INSTALL_HINT}")
    return found


class Kdc:
    """One realm's KDC with principals made on demand, each with a keytab of its own.

    Example::

        with Kdc(workdir) as kdc:
            keytab = kdc.add_principal("alice")             # alice@ZKC.TEST
            server = kdc.add_principal("zookeeper/localhost")
            env = kdc.client_env()                          # KRB5_CONFIG for Python and C clients
            flags = kdc.jvm_flags()                         # -Djava.security.krb5.conf=... for JVMs
    """

    def __init__(self, workdir: Path, realm: str = "ZKC.TEST") -> None:
        self.realm = realm
        self.port = free_port()
        self.folder = Path(workdir)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.kdc_conf = self.folder / "kdc.conf"
        self.krb5_conf = self.folder / "krb5.conf"
        self.kdc_conf.write_text(_KDC_CONF.format(port=self.port, realm=realm, folder=self.folder))
        self.krb5_conf.write_text(_KRB5_CONF.format(port=self.port, realm=realm))
        (self.folder / "kadm5.acl").write_text("")
        self._run("kdb5_util", "create", "-s", "-r", realm, "-P", "zkconsumer-test-master")
        self.process = JavaProcess(
            "krb5kdc",
            ["-n", "-r", realm],
            log_path=self.folder / "krb5kdc.log",
            java=_tool("krb5kdc"),
            env=self._server_env(),
        )

    def start(self, timeout: float = 30.0) -> Kdc:
        start_until(self.process, self._listening, timeout, f"listening on port {self.port}")
        return self

    def stop(self) -> None:
        self.process.stop(timeout=10.0)

    def __enter__(self) -> Kdc:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def principal(self, name: str) -> str:
        """The full name of `name` in this realm ("alice" -> "alice@ZKC.TEST")."""
        return name if "@" in name else f"{name}@{self.realm}"

    def add_principal(self, name: str) -> Path:
        """Create `name` with a random key; return a keytab holding it (folder/<name>.keytab)."""
        keytab = self.folder / (name.replace("/", "_") + ".keytab")
        self._run("kadmin.local", "-r", self.realm, "-q", f"addprinc -randkey {self.principal(name)}")
        self._run("kadmin.local", "-r", self.realm, "-q", f"ktadd -k {keytab} {self.principal(name)}")
        return keytab

    def client_env(self) -> dict[str, str]:
        """Environment for a Kerberos client in C or Python (pykerberos): this realm's krb5.conf."""
        return {"KRB5_CONFIG": str(self.krb5_conf)}

    def jvm_flags(self) -> list[str]:
        return [f"-Djava.security.krb5.conf={self.krb5_conf}"]

    def login_module(self, name: str, keytab: Path, *, is_initiator: bool = True) -> str:
        """A JAAS Krb5LoginModule entry (without the section around it) logging in from `keytab`."""
        extra = "" if is_initiator else "\n  isInitiator=false"
        return (
            f'com.sun.security.auth.module.Krb5LoginModule required\n  useKeyTab=true\n  keyTab="{keytab}"\n'
            f'  storeKey=true\n  useTicketCache=false{extra}\n  principal="{self.principal(name)}";'
        )

    def login(self, name: str) -> KerberosLogin:
        """A new principal `name` and what a client needs to log in as it."""
        return KerberosLogin(self, self.principal(name), self.add_principal(name))

    def zookeeper_server(self, workdir: Path) -> tuple[str, list[str]]:
        """zoo.cfg lines and JVM flags of a ZooKeeper server taking GSSAPI logins as zookeeper/localhost."""
        name = f"zookeeper/{ZOOKEEPER_HOST}"
        jaas = workdir / "zookeeper-server.jaas"
        jaas.write_text(f"Server {{\n  {self.login_module(name, self.add_principal(name))}\n}};\n")
        return f"authProvider.1={SASL_PROVIDER}\n", [f"-Djava.security.auth.login.config={jaas}", *self.jvm_flags()]

    def _server_env(self) -> dict[str, str]:
        return {"KRB5_CONFIG": str(self.krb5_conf), "KRB5_KDC_PROFILE": str(self.kdc_conf)}

    def _run(self, tool: str, *args: str) -> None:
        done = subprocess.run(
            [_tool(tool), *args], env={**os.environ, **self._server_env()}, capture_output=True, text=True, timeout=60
        )
        if done.returncode != 0 or "error" in done.stderr.lower():
            raise ClusterStartError(
                f"{tool} {' '.join(args)} failed ({done.returncode}): {(done.stdout + done.stderr).strip()[-800:]}"
            )

    def _listening(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1.0):
                return True
        except OSError:
            return False


@dataclass(frozen=True)
class KerberosLogin:
    """A principal with its keytab: the JAAS `Client` section a JVM or zkconsumer logs in to ZooKeeper with."""

    kdc: Kdc
    principal: str
    keytab: Path

    def client_jaas(self, section: str = "Client") -> str:
        return f"{section} {{\n  {self.kdc.login_module(self.principal, self.keytab)}\n}};\n"
