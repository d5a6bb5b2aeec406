"""Certificates made in the test: a CA, a server certificate for 127.0.0.1, client certificates.

Real X.509 through the ``cryptography`` package (a test dependency), ECDSA P-256 keys for speed,
so the TLS tests run real handshakes and never ship key material in the repository.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_DAY = datetime.timedelta(days=1)


@dataclass(frozen=True)
class Pem:
    """A certificate and its private key as PEM files."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class Authority:
    name: str
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey
    path: Path
    """The CA certificate as a PEM file (a CA bundle of one)."""

    def issue(self, directory: Path, stem: str, *, server: bool) -> Pem:
        """A leaf certificate for ``127.0.0.1``/``localhost`` (server) or a client named ``stem``."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, stem)]))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _DAY)
            .not_valid_after(now + _DAY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
        )
        if server:
            builder = builder.add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
                ),
                critical=False,
            )
        cert = builder.sign(self.key, hashes.SHA256())
        return _write(directory, stem, cert, key)


def authority(directory: Path, name: str) -> Authority:
    """A self-signed CA named ``name``, its certificate written to ``directory/name.crt``."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _DAY)
        .not_valid_after(now + 10 * _DAY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    pem = _write(directory, name, cert, key)
    return Authority(name, cert, key, pem.cert)


def _write(directory: Path, stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> Pem:
    directory.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = directory / f"{stem}.crt", directory / f"{stem}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return Pem(cert_path, key_path)


@dataclass(frozen=True)
class Pki:
    """What a TLS test needs: the server's files, a good client, and a client of another CA."""

    ca: Authority
    server: Pem
    client: Pem
    stranger: Pem
    """A client certificate signed by a CA the server does not trust."""


def make_pki(directory: Path) -> Pki:
    ca = authority(directory, "rte-test-ca")
    other = authority(directory, "another-ca")
    return Pki(
        ca=ca,
        server=ca.issue(directory, "server", server=True),
        client=ca.issue(directory, "kube-scheduler", server=False),
        stranger=other.issue(directory, "intruder", server=False),
    )
