"""Turn legacy consumer properties into one validated, typed, immutable ConsumerConfig.

Names, defaults and checks follow ``kafka.consumer.ConsumerConfig`` and ``ZKConfig``
(Kafka 1.1.1), read through ``VerifiableProperties``: every value is trimmed, integers
are 32-bit decimal, booleans are exactly ``true`` or ``false``.

================================= ================== ======================== ================================================
Property                          Default            Accepted                 Meaning
================================= ================== ======================== ================================================
zookeeper.connect                 (required)         host[:port],...[/chroot] ZooKeeper ensemble; port defaults to 2181
zookeeper.session.timeout.ms      6000               >= 1                     session; a dead member's znodes vanish after it
zookeeper.connection.timeout.ms   = session timeout  >= 1                     wait this long for the first ZK connection
zookeeper.sync.time.ms            2000               >= 0                     ZK follower lag; default of rebalance.backoff.ms
group.id                          (required)         [A-Za-z0-9._-]+          consumer group; znode /consumers/<group.id>
consumer.id                       (generated)        text without '/'         member id <group.id>_<consumer.id>; tests only
socket.timeout.ms                 30000              >= fetch.wait.max.ms     broker socket read timeout (0: none)
socket.receive.buffer.bytes       65536              any (<= 0: OS default)   broker socket SO_RCVBUF
fetch.message.max.bytes           1048576            >= 1                     bytes per partition per fetch (one chunk)
fetch.max.bytes                   52428800           any                      parsed but unused by the Scala consumer too
num.consumer.fetchers             1                  >= 1                     fetcher threads per broker
auto.commit.enable                true               true | false             commit consumed offsets periodically
auto.commit.interval.ms           60000              >= 1 if auto-commit      period of the automatic commit
queued.max.message.chunks         2                  >= 1                     chunks buffered in each stream's queue
rebalance.max.retries             4                  >= 1                     rebalance attempts before giving up
rebalance.backoff.ms              = sync time        >= 0                     sleep between rebalance attempts
refresh.leader.backoff.ms         200                >= 0                     wait before looking for a lost leader again
fetch.min.bytes                   1                  any                      broker answers once it has this many bytes...
fetch.wait.max.ms                 100                >= 0                     ...or after this long
auto.offset.reset                 largest            smallest | largest       start here without a valid stored offset
consumer.timeout.ms               -1                 any (< 0: block)         iterator gives up after this long idle
client.id                         = group.id         [A-Za-z0-9._-]*          client id sent with broker requests
offsets.storage                   zookeeper          zookeeper | kafka        where offsets live (case-insensitive)
offsets.channel.backoff.ms        1000               >= 0                     offset channel reconnect / commit retry backoff
offsets.channel.socket.timeout.ms 10000              >= 0                     socket timeout of the offset channel
offsets.commit.max.retries        5                  >= 0                     extra attempts of a scheduled commit
dual.commit.enabled               = storage is kafka true | false             kafka storage also writes ZooKeeper offsets
partition.assignment.strategy     range              range | roundrobin       how partitions are spread over threads
exclude.internal.topics           true               true | false             wildcard subscriptions skip internal topics
zkconsumer.compat.version         1.1                0.8.2 .. 1.1             oldest Scala release in the group
zkconsumer.rebalance.recheck.ms   30000              >= 0 (0: off)            longest back-off between retries of a failed rebalance
zkconsumer.rebalance.incremental  true               true | false             only partitions that move stop fetching
zkconsumer.rebalance.watched.wait.ms                                          a rebalance waiting on owner nodes it watches
                                  = retries x session >= 0                    does not count its attempts for this long
zkconsumer.watchdog.interval.ms   10000              >= 0 (0: off)            re-check owners; rebalance on zombies/gaps
zkconsumer.release.linger.ms      1000               0 .. linger cap (0: off) keep released owner nodes at least this long
                                                                              after the commit when a Scala member may claim
zkconsumer.release.linger.max.ms  = linger cap       release.linger.ms ..     ... and at most this long (the linger grows
                                  (3000)             linger cap               with the Scala member's share, see linger.py);
                                                                              the cap: half a Scala joiner's retry budget
                                                                              (config/timing.py)
zkconsumer.fetch.in.reader        true               true | false             an iterator whose queue is empty fetches in
                                                                              its own thread (false: the fetcher thread only)
zkconsumer.zookeeper.digest       (unset)            user:password            ZooKeeper digest authentication
zookeeper.sasl.jaas.config        (unset)            Module required k="v";   SASL login to ZooKeeper (DigestLoginModule:
                                                                              DIGEST-MD5; Krb5LoginModule: GSSAPI)
java.security.auth.login.config   (unset)            a JAAS file path         the same from a JAAS file's Client section
zookeeper.sasl.clientconfig       Client             a section name           the JAAS file's section to use
zookeeper.sasl.client             true               true | false             false: no SASL even with a JAAS file
zookeeper.set.acl                 = SASL is used     true | false             our nodes: creator all, world read (Scala's)
zkconsumer.broker.listener        (unset)            a listener name          connect to brokers through this listener;
                                                                              unset: the first endpoint speaking
                                                                              librdkafka.security.protocol (PLAINTEXT)
zkconsumer.zookeeper.jute.maxbuffer                                           the servers' jute.maxbuffer: largest request
                                  1048575            >= 4096
zkconsumer.zookeeper.transaction.max.bytes                                    claims are split in transactions of this size
                                  = maxbuffer / 2    1024 .. maxbuffer - 1024
zkconsumer.zookeeper.tick.ms      2000               >= 1                     the servers' tickTime: lease renewals are
                                                                              quorum writes where a sync is not safe
zkconsumer.coordination           zookeeper          zookeeper | broker       who runs the group: ZooKeeper, or the brokers'
                                                                              group coordinator (offsets in Kafka; see
                                                                              docs/configuration.md#broker-coordination)
librdkafka.<name>                 (unset)            text                     given as <name> to the confluent-kafka Consumer
================================= ================== ======================== ================================================

Scala itself checks only the group.id/client.id characters, auto.offset.reset,
offsets.storage, partition.assignment.strategy and fetch.wait.max.ms <= socket.timeout.ms.
The other bounds above are ours: they reject values on which the Scala consumer later
crashes or stalls (a 0-capacity queue, "% 0" fetcher choice, 0 rebalance attempts...).

Accepted silently but unused: ``kafka.metrics.reporters``,
``kafka.metrics.polling.interval.secs`` and (as in Scala) keys starting with ``external``.
Any other unknown key gives a ``UserWarning`` with the closest known name.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from zkconsumer.config.checks import (
    _SPEC_BY_NAME,
    _SPECS,
    KNOWN_PROPERTIES,
    REQUIRED,
    SECURITY_PROTOCOLS,
    ConfigError,
    _check_combined,
    _fill_derived_defaults,
    _passthrough_text,
    _read,
    _warn_unknown,
    invalid_value,
    parse_zookeeper_connect,
)
from zkconsumer.config.compat import Compat
from zkconsumer.config.properties import parse_properties
from zkconsumer.config.timing import check_timing

__all__ = ["ConsumerConfig", "LIBRDKAFKA_PREFIX", "merge"]

LIBRDKAFKA_PREFIX = "librdkafka."
V = TypeVar("V")
_IGNORED = frozenset({"kafka.metrics.reporters", "kafka.metrics.polling.interval.secs"})


@dataclass(frozen=True, kw_only=True, repr=False)
class ConsumerConfig:
    """Effective legacy consumer settings; build with from_mapping / from_properties(_file)."""

    zookeeper_connect: str
    zookeeper_session_timeout_ms: int
    zookeeper_connection_timeout_ms: int
    zookeeper_sync_time_ms: int
    group_id: str
    consumer_id: str | None
    socket_timeout_ms: int
    socket_receive_buffer_bytes: int
    fetch_message_max_bytes: int
    fetch_max_bytes: int
    num_consumer_fetchers: int
    auto_commit_enable: bool
    auto_commit_interval_ms: int
    queued_max_message_chunks: int
    rebalance_max_retries: int
    rebalance_backoff_ms: int
    refresh_leader_backoff_ms: int
    fetch_min_bytes: int
    fetch_wait_max_ms: int
    auto_offset_reset: Literal["smallest", "largest"]
    consumer_timeout_ms: int
    client_id: str
    offsets_storage: Literal["zookeeper", "kafka"]
    offsets_channel_backoff_ms: int
    offsets_channel_socket_timeout_ms: int
    offsets_commit_max_retries: int
    dual_commit_enabled: bool
    partition_assignment_strategy: Literal["range", "roundrobin"]
    exclude_internal_topics: bool
    compat: Compat
    rebalance_recheck_ms: int
    rebalance_incremental: bool
    rebalance_watched_wait_ms: int
    watchdog_interval_ms: int
    release_linger_ms: int
    release_linger_max_ms: int
    fetch_in_reader: bool
    zookeeper_digest: str | None
    broker_listener: str | None
    coordination: Literal["zookeeper", "broker"]
    zookeeper_sasl_jaas_config: str | None
    java_security_auth_login_config: str | None
    zookeeper_sasl_clientconfig: str
    zookeeper_sasl_client: bool
    zookeeper_set_acl: bool | None
    zookeeper_jute_maxbuffer: int
    zookeeper_transaction_max_bytes: int
    zookeeper_tick_ms: int
    # Sorted (name, value) pairs rather than a dict so the config stays hashable and immutable.
    librdkafka_items: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_mapping(cls, props: Mapping[str, object]) -> ConsumerConfig:
        """Validate ``props`` (str values as from .properties, or native int/bool) into a config.

        A value of None counts as not given, so optional CLI layers can be merged blindly.
        """
        supplied: dict[str, object] = {}
        passthrough: dict[str, str] = {}
        for key, raw in props.items():
            if raw is None:
                continue
            if not isinstance(key, str):
                raise ConfigError(None, f"consumer property names must be strings, got {key!r}")
            if key.startswith(LIBRDKAFKA_PREFIX) and len(key) > len(LIBRDKAFKA_PREFIX):
                passthrough[key.removeprefix(LIBRDKAFKA_PREFIX)] = _passthrough_text(key, raw)
            elif key in _SPEC_BY_NAME:
                supplied[key] = raw
            elif key not in _IGNORED and not key.startswith("external"):
                _warn_unknown(key)
        missing = [name for name in REQUIRED if name not in supplied]
        if missing:
            noun = "property" if len(missing) == 1 else "properties"
            names = ", ".join(map(repr, missing))
            raise ConfigError(missing[0], f"missing required consumer {noun} {names} (no default)")
        values: dict[str, Any] = {
            spec.attr: _read(spec, supplied[spec.name]) if spec.name in supplied else spec.default for spec in _SPECS
        }
        _fill_derived_defaults(values)
        _check_combined(values)
        try:
            values["compat"] = Compat.parse(values["compat"])
        except ValueError as exc:  # Compat's message already lists the accepted versions
            raise ConfigError(
                "zkconsumer.compat.version",
                f"invalid value {values['compat']!r} for consumer property 'zkconsumer.compat.version': {exc}",
            ) from None
        check_timing(values)
        protocol = passthrough.get("security.protocol", "PLAINTEXT")
        if protocol.upper() not in SECURITY_PROTOCOLS:
            raise invalid_value("librdkafka.security.protocol", protocol, " | ".join(SECURITY_PROTOCOLS))
        return cls(**values, librdkafka_items=tuple(sorted(passthrough.items())))

    @classmethod
    def from_properties(cls, text: str) -> ConsumerConfig:
        """Parse Java ``.properties`` text, then validate it like :meth:`from_mapping`."""
        try:
            props = parse_properties(text)
        except ValueError as exc:
            raise ConfigError(None, f"cannot parse consumer properties: {exc}") from None
        return cls.from_mapping(props)

    @classmethod
    def from_properties_file(cls, path: str | os.PathLike[str]) -> ConsumerConfig:
        """Read a ``.properties`` file as ISO-8859-1, like Kafka's Utils.loadProps; use \\uXXXX for others."""
        with open(path, encoding="iso-8859-1") as handle:
            return cls.from_properties(handle.read())

    @property
    def librdkafka_overrides(self) -> dict[str, str]:
        """``librdkafka.*`` properties with the prefix stripped (a fresh dict each call)."""
        return dict(self.librdkafka_items)

    @property
    def broker_security_protocol(self) -> str:
        """The protocol spoken to brokers (librdkafka.security.protocol, upper-cased; PLAINTEXT)."""
        return dict(self.librdkafka_items).get("security.protocol", "PLAINTEXT").upper()

    @property
    def zookeeper_hosts(self) -> tuple[tuple[str, int], ...]:
        """The ensemble as (host, port) pairs, port 2181 where none was given."""
        return parse_zookeeper_connect(self.zookeeper_connect)[0]

    @property
    def zookeeper_chroot(self) -> str | None:
        """The chroot path ("/kafka") or None; every znode path is relative to it."""
        return parse_zookeeper_connect(self.zookeeper_connect)[1]

    def get(self, name: str) -> object:
        """Value by property name ("auto.commit.enable"); ConfigError if the name is unknown."""
        spec = _SPEC_BY_NAME.get(name)
        if spec is not None:
            value = getattr(self, spec.attr)
            return str(value) if isinstance(value, Compat) else value
        overrides = self.librdkafka_overrides
        if name.startswith(LIBRDKAFKA_PREFIX) and name.removeprefix(LIBRDKAFKA_PREFIX) in overrides:
            return overrides[name.removeprefix(LIBRDKAFKA_PREFIX)]
        closest = difflib.get_close_matches(name, KNOWN_PROPERTIES, n=1)
        accepted = f"did you mean {closest[0]!r}?" if closest else "see zkconsumer.config"
        raise ConfigError(name, f"unknown consumer property {name!r}; {accepted}")

    def as_properties(self, *, redact: bool = False) -> dict[str, str]:
        """Every set property as Java would print it; ``redact`` masks secrets for logs."""
        out: dict[str, str] = {}
        for spec in _SPECS:
            value = self.get(spec.name)
            if value is not None:
                out[spec.name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
        for name, value in self.librdkafka_items:
            secret = any(word in name for word in ("password", "secret", "sasl.oauthbearer.config"))
            out[LIBRDKAFKA_PREFIX + name] = "****" if redact and secret else value
        if redact and self.zookeeper_digest is not None:
            out["zkconsumer.zookeeper.digest"] = self.zookeeper_digest.split(":", 1)[0] + ":****"
        if redact and self.zookeeper_sasl_jaas_config is not None:
            out["zookeeper.sasl.jaas.config"] = re.sub(
                r'(password\s*=\s*)("(?:[^"\\]|\\.)*"|\S+?(?=;|\s|$))', r'\1"****"', self.zookeeper_sasl_jaas_config
            )
        return out

    def __repr__(self) -> str:
        return f"ConsumerConfig({self.as_properties(redact=True)!r})"


def merge(*layers: Mapping[str, V | None]) -> dict[str, V]:
    """Combine property layers (e.g. a file, then --consumer-property); later layers win.

    A None value means "not given here" and never hides an earlier layer's value.
    """
    merged: dict[str, V] = {}
    for layer in layers:
        merged.update((key, value) for key, value in layer.items() if value is not None)
    return merged
