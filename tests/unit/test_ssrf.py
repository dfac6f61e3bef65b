"""The SSRF guard for user-set provider base URLs: every IPv6 form that embeds an IPv4 address is
judged by that IPv4 address, and the provider's HTTP client connects only to the addresses that
were checked (a name that resolves to something else after the check is never followed), with the
Host header and TLS (SNI, certificate) still for the name."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl

import pytest

from contextviewer.providers import ssrf
from contextviewer.providers.anthropic_provider import AnthropicProvider
from contextviewer.providers.base import RetryableProviderError
from contextviewer.providers.openai_provider import OpenAIProvider
from tests.fake_providers import FakeProvider

PROVIDERS = {"openai": OpenAIProvider, "anthropic": AnthropicProvider}
PUBLIC = "93.184.215.14"  # a public address: the guard lets it through, the tests never reach it


def teredo(client: str, server: str = "65.54.227.120") -> str:
    """A Teredo address (2001::/32): the server address, flags and port, then the client address
    with every bit inverted."""
    value = (0x20010000 << 96) | (int(ipaddress.IPv4Address(server)) << 64) | (0x8000 << 48) | (0x63BF << 32)
    value |= ~int(ipaddress.IPv4Address(client)) & 0xFFFFFFFF
    return f"[{ipaddress.IPv6Address(value)}]"


# (URL, refused with the private network off: the kind named, refused with it allowed: the kind
# named); None = allowed. The first three are the forms the issue found accepted.
TABLE = [
    ("http://[2002:a9fe:a9fe::]/", "metadata", "metadata"),  # 6to4 of 169.254.169.254
    ("http://[::a9fe:a9fe]/", "metadata", "metadata"),  # IPv4-compatible
    ("http://[64:ff9b::a9fe:a9fe]/", "metadata", "metadata"),  # NAT64 well-known prefix
    ("http://[::ffff:a9fe:a9fe]/", "metadata", "metadata"),  # IPv4-mapped
    ("http://[::ffff:169.254.169.254]/v1", "metadata", "metadata"),
    ("http://[::169.254.169.254]/", "metadata", "metadata"),
    ("http://[64:ff9b::169.254.169.254]/", "metadata", "metadata"),
    ("http://[::ffff:0:a9fe:a9fe]/", "metadata", "metadata"),  # IPv4-translated
    (f"http://{teredo('169.254.169.254')}/", "metadata", "metadata"),
    ("http://[64:ff9b:1::a9fe:a9fe]/", "metadata", "metadata"),  # local-use NAT64, /96
    ("http://[64:ff9b:1:a9fe:a9:fe00::]/", "metadata", "metadata"),  # local-use NAT64, /48 layout
    ("http://[64:ff9b:1:a9fe:a9:fe00::1]/", "metadata", "metadata"),  # a suffix the translator ignores
    ("http://[64:ff9b:1:0:a9:fea9:fe00:0]/", "metadata", "metadata"),  # /64 layout
    ("http://[2002:a9fe:aa02::]:8080/", "metadata", "metadata"),  # 6to4 of ECS 169.254.170.2
    ("http://[64:ff9b::6464:64c8]/", "metadata", "metadata"),  # NAT64 of Alibaba 100.100.100.200
    ("http://169.254.169.254/latest", "metadata", "metadata"),
    # link-local (169.254/16, fe80::/10): refused even with the private network allowed
    ("http://169.254.10.1/", "link-local", "link-local"),
    ("http://[2002:a9fe:a01::]/", "link-local", "link-local"),
    ("http://[::a9fe:a01]/", "link-local", "link-local"),
    ("http://[64:ff9b::a9fe:a01]/", "link-local", "link-local"),
    ("http://[::ffff:169.254.10.1]/", "link-local", "link-local"),
    (f"http://{teredo('169.254.10.1')}/", "link-local", "link-local"),
    ("http://[fe80::1]/", "link-local", "link-local"),
    # loopback: only with the private network allowed
    ("http://[2002:7f00:1::]/", "loopback", None),
    ("http://[::127.0.0.1]/", "loopback", None),
    ("http://[::ffff:127.0.0.1]/", "loopback", None),
    ("http://[::ffff:0:127.0.0.1]/", "loopback", None),
    ("http://[64:ff9b::7f00:1]/", "loopback", None),
    ("http://[64:ff9b:1::7f00:1]/", "loopback", None),
    (f"http://{teredo('127.0.0.1')}/", "loopback", None),
    ("http://[::1]:8080/v1", "loopback", None),
    ("http://127.0.0.1:11434/v1", "loopback", None),
    # private: only with the private network allowed
    ("http://[2002:a00:1::]/", "private", None),
    ("http://[2002:c0a8:114::]/v1", "private", None),
    ("http://[::10.0.0.1]/", "private", None),
    ("http://[::ffff:10.0.0.1]/", "private", None),
    ("http://[64:ff9b::ac10:1]/", "private", None),
    ("http://[64:ff9b:1::a00:1]/", "private", None),
    ("http://[64:ff9b:1::808:808]/", "private", None),  # local-use NAT64: a translator on the local network
    ("http://[::ffff:100.64.0.1]/", "private", None),  # carrier-grade NAT
    (f"http://{teredo('192.168.1.1')}/", "private", None),
    (f"http://{teredo('8.8.8.8', server='10.0.0.1')}/", "private", None),
    ("http://10.1.2.3:8000/v1", "private", None),
    ("http://[fd00::5]/", "private", None),
    # public addresses in every form: allowed either way
    ("http://[2002:808:808::]/", None, None),
    ("http://[::8.8.8.8]/", None, None),
    ("http://[::ffff:8.8.8.8]/", None, None),
    ("http://[64:ff9b::808:808]/", None, None),
    (f"http://{teredo('8.8.8.8')}/", None, None),
    ("http://[2606:4700:4700::1111]/v1", None, None),
    ("https://1.1.1.1/v1", None, None),
]


@pytest.mark.parametrize("url, kind_off, kind_on", TABLE)
def test_every_embedded_form_is_judged_by_its_ipv4_address(url, kind_off, kind_on):
    for allow_private, kind in ((False, kind_off), (True, kind_on)):
        if kind is None:
            assert ssrf.check_base_url(url, allow_private=allow_private) == url.rstrip("/")
            continue
        with pytest.raises(ssrf.UnsafeBaseURL) as exc:
            ssrf.check_base_url(url, allow_private=allow_private)
        message = str(exc.value)
        assert f"a {kind} address" in message or f"a cloud {kind} address" in message, message
        assert "refused" in message
        if kind in ("metadata", "link-local"):
            assert "unless" not in message, message  # no setting lets these through


def test_the_message_names_the_embedded_address():
    with pytest.raises(ssrf.UnsafeBaseURL, match=r"6to4 of 169\.254\.169\.254\), a cloud metadata address"):
        ssrf.check_base_url("http://[2002:a9fe:a9fe::]/")
    with pytest.raises(ssrf.UnsafeBaseURL, match=r"Teredo client of 10\.0\.0\.7"):
        ssrf.check_base_url(f"http://{teredo('10.0.0.7')}/")


def test_the_embedded_ipv4_address_of_each_form():
    forms = {
        "::ffff:1.2.3.4": [("IPv4-mapped", "1.2.3.4")],
        "::ffff:0:1.2.3.4": [("IPv4-translated", "1.2.3.4")],
        "::1.2.3.4": [("IPv4-compatible", "1.2.3.4")],
        "2002:102:304:5::6": [("6to4", "1.2.3.4")],
        "2001:0:4136:e378:8000:63bf:fefd:fcfb": [("Teredo client", "1.2.3.4"), ("Teredo server", "65.54.227.120")],
        "64:ff9b::1.2.3.4": [("NAT64", "1.2.3.4")],
    }
    for text, expected in forms.items():
        found = [(form, str(v4)) for form, v4 in ssrf.embedded_ipv4(ipaddress.ip_address(text))]
        assert found == expected, text
    # 64:ff9b:1::/48 may carry the address after a /48, /56, /64 or /96 prefix: each place is checked
    found = ssrf.embedded_ipv4(ipaddress.ip_address("64:ff9b:1:102:3:400::"))
    assert ("NAT64/48", ipaddress.IPv4Address("1.2.3.4")) in found
    found = ssrf.embedded_ipv4(ipaddress.ip_address("64:ff9b:1::1.2.3.4"))
    assert found[0] == ("NAT64", ipaddress.IPv4Address("1.2.3.4"))
    assert ssrf.embedded_ipv4(ipaddress.ip_address("::1")) == []
    assert ssrf.embedded_ipv4(ipaddress.ip_address("2606:4700::1111")) == []


@pytest.fixture
def resolver(monkeypatch):
    """Names ending in .test resolve to what `answers` holds: the first answer once, then the next
    (the last one repeats). Every lookup is recorded; every TCP connect attempt too."""
    real_getaddrinfo = socket.getaddrinfo
    real_create_connection = socket.create_connection
    state = {"answers": ["127.0.0.1"], "lookups": [], "connects": []}

    def getaddrinfo(host, port, *args, **kwargs):
        if isinstance(host, str) and host.endswith(".test"):
            state["lookups"].append(host)
            answers = state["answers"]
            address = answers.pop(0) if len(answers) > 1 else answers[0]
            return real_getaddrinfo(address, port, *args, **kwargs)
        return real_getaddrinfo(host, port, *args, **kwargs)

    def create_connection(address, *args, **kwargs):
        state["connects"].append(address[0])
        if address[0] == PUBLIC:  # stands for a server out there: never reached from a test
            raise ConnectionRefusedError(f"test: {PUBLIC} is not reachable from here")
        return real_create_connection(address, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket, "create_connection", create_connection)
    return state


@pytest.mark.parametrize("protocol", PROVIDERS)
def test_a_name_that_rebinds_to_loopback_after_the_check_is_not_followed(protocol, resolver):
    resolver["answers"] = [PUBLIC, "127.0.0.1"]  # public for the check, loopback afterwards
    with FakeProvider() as server:
        url = server.url(protocol).replace("127.0.0.1", "rebind.test")
        checked = ssrf.check(url)  # the private network is not allowed: the public answer passes
        provider = PROVIDERS[protocol](base_url=checked.url, api_key="sk-x", model="m", timeout=5, checked=checked)
        with pytest.raises(RetryableProviderError, match="could not connect"):
            provider.complete(system="s", prompt="p", role="handoff")
        assert server.count() == 0  # the server on 127.0.0.1 received nothing
    assert checked.addresses == (PUBLIC,)
    assert resolver["lookups"] == ["rebind.test"]  # resolved once, for the check
    assert resolver["connects"] == [PUBLIC]


@pytest.mark.parametrize("protocol", PROVIDERS)
def test_a_pinned_name_reaches_the_checked_address_with_its_own_host_header(protocol, resolver):
    with FakeProvider(["ok", "ok"]) as server:
        url = server.url(protocol).replace("127.0.0.1", "provider.test")
        checked = ssrf.check(url, allow_private=True)
        provider = PROVIDERS[protocol](base_url=checked.url, api_key="sk-x", model="m", timeout=5, checked=checked)
        for _ in range(2):
            assert provider.complete(system="s", prompt="p", role="handoff").text
        hosts = [r["headers"]["host"] for r in server.requests]
    assert hosts == [f"provider.test:{server.port}"] * 2
    assert resolver["lookups"] == ["provider.test"]
    assert set(resolver["connects"]) == {"127.0.0.1"}


def test_the_pinned_client_refuses_any_other_host_or_port(resolver):
    import openai

    with FakeProvider() as server:
        checked = ssrf.check(f"http://provider.test:{server.port}/v1", allow_private=True)
        client = ssrf.pinned_http_client(openai.DefaultHttpxClient, checked, follow_redirects=False)
        for url in (
            f"http://127.0.0.1:{server.port}/v1/chat/completions",
            f"http://other.test:{server.port}/v1",
            f"http://provider.test:{server.port + 1}/v1",
        ):
            with pytest.raises(Exception, match="refused to connect"):
                client.post(url, json={})
        assert server.count() == 0
    assert resolver["connects"] == []


def _certificates(tmp_path, name: str):
    """A CA (its PEM file) and a server context whose certificate is for `name` only."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ssrf test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
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
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_file = tmp_path / "ca.pem"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    return ca_file, context


@pytest.mark.parametrize("cert_name, ok", [("provider.test", True), ("someone-else.test", False)])
def test_tls_uses_the_name_for_sni_and_the_certificate_check(tmp_path, monkeypatch, resolver, cert_name, ok):
    ca_file, context = _certificates(tmp_path, cert_name)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    server_names = []
    context.sni_callback = lambda sock, name, ctx: server_names.append(name)
    fake = FakeProvider()
    fake.server.socket = context.wrap_socket(fake.server.socket, server_side=True)
    with fake as server:
        checked = ssrf.check(f"https://provider.test:{server.port}/v1", allow_private=True)
        provider = OpenAIProvider(base_url=checked.url, api_key="sk-x", model="m", timeout=5, checked=checked)
        if ok:
            assert provider.complete(system="s", prompt="p", role="handoff").text
            assert [r["headers"]["host"] for r in server.requests] == [f"provider.test:{server.port}"]
        else:  # a certificate for another name is refused although the address is the checked one
            with pytest.raises(RetryableProviderError, match="could not connect"):
                provider.complete(system="s", prompt="p", role="handoff")
            assert server.count() == 0
    assert server_names == ["provider.test"]
    assert set(resolver["connects"]) == {"127.0.0.1"}
