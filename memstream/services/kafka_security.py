"""KafkaSecurity: how every Kafka client of memstream authenticates and encrypts, read once.

One typed value, built from ``MEMSTREAM_KAFKA_*`` (``KAFKA_ENVIRONMENT``) and checked at start:
a bad combination (SASL without a password, a CA file that does not exist or does not parse, a
client certificate without its key, PLAIN without TLS, a SASL or TLS setting that the chosen
protocol would silently ignore) is a ``KafkaSecurityError`` naming the variable and the fix.
Small pure methods map it to each library's configuration: ``aiokafka_options`` (the client,
the publisher, the replay reader, and — through ``memstream.streams.app`` — Faust's worker) and
``librdkafka_config`` (confluent-kafka: the producer, topic provisioning, the health check).

The password is never in a repr, a log line or an error message; a child process gets
``MEMSTREAM_KAFKA_SASL_PASSWORD_FILE`` rather than the password when a file was given.
Must not import adapters, handlers or streams; stdlib only.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN")

P = "MEMSTREAM_KAFKA_"
PROTOCOL = f"{P}SECURITY_PROTOCOL"
MECHANISM = f"{P}SASL_MECHANISM"
USERNAME = f"{P}SASL_USERNAME"
PASSWORD = f"{P}SASL_PASSWORD"
PASSWORD_FILE = f"{P}SASL_PASSWORD_FILE"
CA_FILE = f"{P}SSL_CA_FILE"
CERT_FILE = f"{P}SSL_CERT_FILE"
KEY_FILE = f"{P}SSL_KEY_FILE"

# (environment variable, description): the documentation's table and `memstream --help`.
KAFKA_ENVIRONMENT: tuple[tuple[str, str], ...] = (
    (PROTOCOL, "PLAINTEXT (default), SSL, SASL_PLAINTEXT or SASL_SSL; needs MEMSTREAM_BROKER"),
    (MECHANISM, "SCRAM-SHA-512 (default), SCRAM-SHA-256 or PLAIN (PLAIN only with SASL_SSL)"),
    (USERNAME, "SASL user (SASL_* protocols)"),
    (PASSWORD, "SASL password; or, better, the next one"),
    (PASSWORD_FILE, "a file holding the SASL password (a Docker/Kubernetes secret)"),
    (CA_FILE, "PEM CA bundle that signed the brokers' certificates (default: system store)"),
    (CERT_FILE, "PEM client certificate, for brokers that require mutual TLS"),
    (KEY_FILE, "PEM private key of that certificate (unencrypted)"),
)


class KafkaSecurityError(ValueError):
    """A Kafka security setting that cannot be used; the message names the variable."""


@dataclass(frozen=True, slots=True)
class KafkaSecurity:
    protocol: str = "PLAINTEXT"
    mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False, compare=True)
    password_file: Path | None = None
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def sasl_mechanism(self) -> str:
        return self.mechanism or MECHANISMS[0]

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> KafkaSecurity:
        """Read and check ``MEMSTREAM_KAFKA_*``; nothing set means PLAINTEXT."""

        def get(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        def path(name: str) -> Path | None:
            raw = get(name)
            return Path(raw).expanduser() if raw else None

        protocol = (get(PROTOCOL) or "PLAINTEXT").upper()
        if protocol not in PROTOCOLS:
            raise KafkaSecurityError(f"{PROTOCOL}={protocol!r}: use {', '.join(PROTOCOLS)}")
        password_file = path(PASSWORD_FILE)
        password = env.get(PASSWORD) or None  # a password's spaces are its own: not stripped
        if password is not None and password_file is not None:
            raise KafkaSecurityError(f"set {PASSWORD} or {PASSWORD_FILE}, not both")
        if password_file is not None:
            password = _read_secret(password_file)
        mechanism = get(MECHANISM)
        security = cls(
            protocol=protocol,
            mechanism=mechanism.upper() if mechanism else None,
            username=get(USERNAME),
            password=password,
            password_file=password_file,
            ca_file=path(CA_FILE),
            cert_file=path(CERT_FILE),
            key_file=path(KEY_FILE),
        )
        security.check()
        return security

    def check(self) -> None:
        """KafkaSecurityError for a combination that cannot work or would be ignored."""
        if self.protocol not in PROTOCOLS:
            raise KafkaSecurityError(f"{PROTOCOL}={self.protocol!r}: use {', '.join(PROTOCOLS)}")
        if self.sasl:
            mechanism = self.sasl_mechanism
            if mechanism not in MECHANISMS:
                raise KafkaSecurityError(f"{MECHANISM}={mechanism!r}: use {', '.join(MECHANISMS)}")
            if not self.username:
                raise KafkaSecurityError(f"{PROTOCOL}={self.protocol} needs {USERNAME}")
            if not self.password:
                raise KafkaSecurityError(
                    f"{PROTOCOL}={self.protocol} needs {PASSWORD_FILE} (or {PASSWORD})"
                )
            if mechanism == "PLAIN" and not self.tls:
                raise KafkaSecurityError(
                    f"{MECHANISM}=PLAIN sends the password in clear text over "
                    f"{self.protocol}: use {PROTOCOL}=SASL_SSL, or a SCRAM mechanism"
                )
        else:
            given = [
                name
                for name, value in (
                    (MECHANISM, self.mechanism),
                    (USERNAME, self.username),
                    (PASSWORD, self.password),
                )
                if value
            ]
            if given:
                raise KafkaSecurityError(
                    f"{', '.join(given)} set, but {PROTOCOL}={self.protocol} sends no "
                    "credentials: set it to SASL_SSL (or SASL_PLAINTEXT)"
                )
        files = ((CA_FILE, self.ca_file), (CERT_FILE, self.cert_file), (KEY_FILE, self.key_file))
        if not self.tls:
            given = [name for name, value in files if value is not None]
            if given:
                raise KafkaSecurityError(
                    f"{', '.join(given)} set, but {PROTOCOL}={self.protocol} does not use TLS: "
                    "set it to SSL or SASL_SSL"
                )
            return
        for name, value in files:
            if value is not None and not value.is_file():
                raise KafkaSecurityError(f"{name}={value}: no such file")
        if (self.cert_file is None) != (self.key_file is None):
            raise KafkaSecurityError(f"mutual TLS needs both {CERT_FILE} and {KEY_FILE}")
        self.ssl_context()  # a CA or a key pair that does not load fails now, not at connect

    def ssl_context(self) -> ssl.SSLContext:
        """The client's TLS context: the CA file (or the system store), hostname checked,
        TLS 1.2 at least, the client certificate when one is configured."""
        try:
            context = ssl.create_default_context(
                ssl.Purpose.SERVER_AUTH, cafile=str(self.ca_file) if self.ca_file else None
            )
        except (ssl.SSLError, OSError) as exc:
            raise KafkaSecurityError(f"{CA_FILE}={self.ca_file}: not a PEM CA ({exc})") from None
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        if self.cert_file is not None and self.key_file is not None:
            try:
                context.load_cert_chain(str(self.cert_file), str(self.key_file))
            except (ssl.SSLError, OSError) as exc:
                raise KafkaSecurityError(
                    f"{CERT_FILE}={self.cert_file} with {KEY_FILE}={self.key_file}: not a "
                    f"matching PEM certificate and unencrypted key ({exc.__class__.__name__})"
                ) from None
        return context

    def aiokafka_options(self) -> dict[str, Any]:
        """Keyword arguments for ``AIOKafkaProducer`` / ``AIOKafkaConsumer``."""
        options: dict[str, Any] = {"security_protocol": self.protocol}
        if self.tls:
            options["ssl_context"] = self.ssl_context()
        if self.sasl:
            options.update(
                sasl_mechanism=self.sasl_mechanism,
                sasl_plain_username=self.username,  # aiokafka's names, SCRAM included
                sasl_plain_password=self.password,
            )
        return options

    def librdkafka_config(self) -> dict[str, Any]:
        """Entries for a confluent-kafka ``Producer`` / ``AdminClient`` configuration."""
        config: dict[str, Any] = {"security.protocol": self.protocol.lower()}
        if self.tls:
            config["ssl.endpoint.identification.algorithm"] = "https"  # check the host name
            config["ssl.ca.location"] = str(self.ca_file) if self.ca_file else "probe"
            if self.cert_file is not None and self.key_file is not None:
                config["ssl.certificate.location"] = str(self.cert_file)
                config["ssl.key.location"] = str(self.key_file)
        if self.sasl:
            config.update(
                {
                    "sasl.mechanism": self.sasl_mechanism,
                    "sasl.username": self.username,
                    "sasl.password": self.password,
                }
            )
        return config

    def to_env(self) -> dict[str, str]:
        """The environment that makes ``from_env`` rebuild this value (for child processes);
        with a password file, its path travels, not the password."""
        values = {
            PROTOCOL: self.protocol,
            MECHANISM: self.mechanism,
            USERNAME: self.username,
            PASSWORD_FILE: str(self.password_file) if self.password_file else None,
            PASSWORD: self.password if self.password_file is None else None,
            CA_FILE: str(self.ca_file) if self.ca_file else None,
            CERT_FILE: str(self.cert_file) if self.cert_file else None,
            KEY_FILE: str(self.key_file) if self.key_file else None,
        }
        if self.protocol == "PLAINTEXT":
            return {}
        return {k: v for k, v in values.items() if v is not None}


def resolve(security: KafkaSecurity | None) -> KafkaSecurity:
    """``security``, or — for a client library built without one — the process's
    ``MEMSTREAM_KAFKA_*`` (as ``MEMSTREAM_KEY`` is read for the credential)."""
    return security if security is not None else KafkaSecurity.from_env(os.environ)


def _read_secret(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise KafkaSecurityError(
            f"{PASSWORD_FILE}={path}: cannot be read ({exc.strerror})"
        ) from None
    secret = text.rstrip("\r\n")  # a secret file's trailing newline is not the password's
    if not secret:
        raise KafkaSecurityError(f"{PASSWORD_FILE}={path} is empty")
    return secret
