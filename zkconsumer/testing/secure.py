"""Throwaway TLS material and SASL users for secured brokers, and JAAS files for a SASL ZooKeeper (tests only)."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zkconsumer.consumer.log_throttle import throttled_logger
from zkconsumer.zookeeper.auth import DIGEST_MODULE

__all__ = ["BrokerSecurity", "make_ca", "zookeeper_server_jaas", "client_jaas", "zookeeper_sasl_server"]

PASSWORD = "zkconsumer-test"  # protects the keystore of a throwaway CA; never a real secret
DIGEST_LOGIN_MODULE = DIGEST_MODULE  # the login module a Scala member and we use for DIGEST-MD5
SASL_PROVIDER = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"


def _jaas_quote(value: str) -> str:
    if '"' in value or "\\" in value:
        raise ValueError(f"a JAAS value cannot hold quotes or backslashes here: {value!r}")
    return f'"{value}"'


def zookeeper_server_jaas(users: Mapping[str, str]) -> str:
    """A JAAS file's text whose `Server` section lets each user -> password in with SASL DIGEST-MD5."""
    if not users:
        raise ValueError("a SASL ZooKeeper needs at least one user")
    lines = "".join(f"\n  user_{user}={_jaas_quote(password)}" for user, password in users.items())
    return f"Server {{\n  {DIGEST_LOGIN_MODULE} required{lines};\n}};\n"


def client_jaas(user: str, password: str, section: str = "Client") -> str:
    """A JAAS file's text with one section (`Client`: what a ZooKeeper client JVM reads) for DIGEST-MD5."""
    return (
        f"{section} {{\n  {DIGEST_LOGIN_MODULE} required\n  username={_jaas_quote(user)}\n"
        f"  password={_jaas_quote(password)};\n}};\n"
    )


def zookeeper_sasl_server(workdir: Path, users: Mapping[str, str]) -> tuple[str, list[str]]:
    """Write workdir/zookeeper-server.jaas; return the zoo.cfg lines and the JVM flags of a SASL server.

    Clients without credentials still connect (the server does not require authentication); those
    with credentials get a `sasl:<user>` identity that ACLs can name.
    """
    jaas = workdir / "zookeeper-server.jaas"
    jaas.write_text(zookeeper_server_jaas(users))
    return f"authProvider.1={SASL_PROVIDER}\n", [f"-Djava.security.auth.login.config={jaas}"]


def _openssl(*args: str, cwd: Path) -> None:
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args[:2])} failed: {done.stderr.strip()[-500:]}")


def make_ca(folder: Path, name: str = "ca") -> Path:
    """A self-signed CA (name.pem, name.key) in folder; returns the certificate's path."""
    folder.mkdir(parents=True, exist_ok=True)
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        f"{name}.key",
        "-out",
        f"{name}.pem",
        "-days",
        "3",
        "-subj",
        f"/CN=zkconsumer test {name}",
        cwd=folder,
    )
    return folder / f"{name}.pem"


@dataclass(frozen=True)
class BrokerSecurity:
    """SSL, SASL_SSL and a second SSL listener (EXTERNAL) next to the harness's own PLAINTEXT one (which the harness keeps
    using for topics and production): a certificate for 127.0.0.1/localhost signed by a throwaway
    CA, SASL PLAIN users from the listener's JAAS line and SCRAM-SHA-256 users created through the
    brokers (Kafka >= 2.7) once they are up.

    Example::

        security = BrokerSecurity.create(workdir / "tls")
        with LocalCluster(security=security) as cluster:
            conf = security.client_settings("SASL_SSL", mechanism="SCRAM-SHA-256")
    """

    folder: Path
    users: Mapping[str, str] = field(default_factory=lambda: {"alice": "alice-secret"})
    # EXTERNAL is a second SSL listener: choosing by name must pick it over the first SSL endpoint
    listeners: tuple[str, ...] = ("SSL", "SASL_SSL", "EXTERNAL")

    @classmethod
    def create(cls, folder: Path, **kwargs: object) -> BrokerSecurity:
        ca = make_ca(folder)
        (folder / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        _openssl(
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "broker.key",
            "-out",
            "broker.csr",
            "-subj",
            "/CN=localhost",
            cwd=folder,
        )
        _openssl(
            "x509",
            "-req",
            "-in",
            "broker.csr",
            "-CA",
            ca.name,
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "broker.pem",
            "-days",
            "3",
            "-extfile",
            "san.ext",
            cwd=folder,
        )
        _openssl(
            "pkcs12",
            "-export",
            "-in",
            "broker.pem",
            "-inkey",
            "broker.key",
            "-certfile",
            ca.name,
            "-name",
            "broker",
            "-out",
            "broker.p12",
            "-passout",
            f"pass:{PASSWORD}",
            cwd=folder,
        )
        return cls(folder, **kwargs)  # type: ignore[arg-type]

    @property
    def ca_location(self) -> str:
        return str(self.folder / "ca.pem")

    def broker_properties(self) -> dict[str, str]:
        plain_users = " ".join(f'user_{u}="{p}"' for u, p in self.users.items())
        return {
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,EXTERNAL:SSL",
            "ssl.keystore.location": str(self.folder / "broker.p12"),
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.password": PASSWORD,
            "ssl.key.password": PASSWORD,
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};",
            "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        }

    def client_settings(
        self,
        protocol: str,
        *,
        mechanism: str = "PLAIN",
        user: str = "alice",
        password: str | None = None,
        ca_location: str | None = None,
    ) -> dict[str, str]:
        """librdkafka settings of a client of `protocol` (SSL or SASL_SSL), without the prefix."""
        conf = {"security.protocol": protocol, "ssl.ca.location": ca_location or self.ca_location}
        if protocol.upper().startswith("SASL"):
            conf.update(
                {
                    "sasl.mechanism": mechanism,
                    "sasl.username": user,
                    "sasl.password": self.users[user] if password is None else password,
                }
            )
        return conf

    def create_scram_users(self, bootstrap: str, timeout: float = 30.0) -> None:
        """SCRAM-SHA-256 credentials for every user, through a broker's PLAINTEXT listener."""
        from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

        config: dict[str, Any] = {  # confluent-kafka's hints omit the logger setting's type
            "bootstrap.servers": bootstrap,
            "logger": throttled_logger("zkconsumer.testing.librdkafka"),
        }
        admin = AdminClient(config)
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
        futures = admin.alter_user_scram_credentials(
            [UserScramCredentialUpsertion(u, info, p.encode()) for u, p in self.users.items()]
        )
        for future in futures.values():
            future.result(timeout=timeout)
