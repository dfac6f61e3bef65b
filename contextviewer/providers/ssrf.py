"""The SSRF guard: a user-set base URL may not reach loopback, private or reserved addresses unless
an owner or admin allowed the private network for the project. Cloud metadata endpoints and
link-local addresses (where clouds put their metadata, credential and DNS endpoints) are refused
always.

An IPv6 address that embeds an IPv4 address (IPv4-mapped, IPv4-translated, IPv4-compatible, 6to4,
Teredo, NAT64) is judged by the IPv4 address it embeds: `[2002:a9fe:a9fe::]` is 169.254.169.254.

Checked when the setting is saved and again when a provider is built. The name is resolved once
(`check`), every address it resolves to is checked, and the provider's HTTP client connects only to
those addresses (`pinned_http_client`), keeping the Host header and the TLS server name and
certificate check for the name: a DNS answer that changes after the check (rebinding) is never
used. Pure of Django.
"""

from __future__ import annotations

import importlib
import ipaddress
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from .base import ProviderError

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

METADATA = {
    ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack
    ipaddress.ip_address("169.254.170.2"),  # ECS task metadata
    ipaddress.ip_address("100.100.100.200"),  # Alibaba
    ipaddress.ip_address("fd00:ec2::254"),  # AWS IPv6
}
CGNAT = ipaddress.ip_network("100.64.0.0/10")

# Refused whatever the project allows; the other kinds only unless the private network is allowed.
ALWAYS_REFUSED = ("metadata", "link-local")
SEVERITY = ("metadata", "link-local", "loopback", "reserved", "private")

IPV4_MAPPED = ipaddress.ip_network("::ffff:0:0/96")
IPV4_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")
NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")


class UnsafeBaseURL(ProviderError):
    pass


def _bits(value: int, start: int, length: int) -> int:
    """`length` bits of a 128-bit value starting at bit `start` (0 = the most significant)."""
    return (value >> (128 - start - length)) & ((1 << length) - 1)


def _rfc6052(value: int, prefix_len: int) -> ipaddress.IPv4Address:
    """The IPv4 address embedded after a NAT64 prefix of this length (RFC 6052 section 2.2: the
    bits 64-71 are skipped)."""
    if prefix_len == 96:
        return ipaddress.IPv4Address(_bits(value, 96, 32))
    if prefix_len == 64:
        return ipaddress.IPv4Address(_bits(value, 72, 32))
    before = 64 - prefix_len  # bits of the IPv4 address before bit 64
    high = _bits(value, prefix_len, before)
    low = _bits(value, 72, 32 - before)
    return ipaddress.IPv4Address((high << (32 - before)) | low)


def embedded_ipv4(addr: Address) -> list[tuple[str, ipaddress.IPv4Address]]:
    """Every IPv4 address an IPv6 address embeds, each with the name of its form."""
    if not isinstance(addr, ipaddress.IPv6Address):
        return []
    value = int(addr)
    found: list[tuple[str, ipaddress.IPv4Address]] = []
    if addr in IPV4_MAPPED:
        found.append(("IPv4-mapped", ipaddress.IPv4Address(value & 0xFFFFFFFF)))
    elif addr in IPV4_TRANSLATED:
        found.append(("IPv4-translated", ipaddress.IPv4Address(value & 0xFFFFFFFF)))
    elif addr in IPV4_COMPATIBLE and value > 1:  # :: and ::1 are IPv6's own unspecified and loopback
        found.append(("IPv4-compatible", ipaddress.IPv4Address(value & 0xFFFFFFFF)))
    if addr.sixtofour is not None:
        found.append(("6to4", addr.sixtofour))
    if addr.teredo is not None:
        server, client = addr.teredo  # the client address is stored inverted; ipaddress undoes that
        found += [("Teredo client", client), ("Teredo server", server)]
    if addr in NAT64_WELL_KNOWN:
        found.append(("NAT64", _rfc6052(value, 96)))
    elif addr in NAT64_LOCAL:
        # A local-use NAT64 prefix may be /48 to /96: every place the IPv4 address could be.
        found.append(("NAT64", _rfc6052(value, 96)))
        found += [(f"NAT64/{n}", _rfc6052(value, n)) for n in (48, 56, 64)]
    return found


# Places a local-use NAT64 address may carry its IPv4 address, besides the last 32 bits: only the
# kinds refused always count there (any other reading would refuse every such address as 0.0.0.0).
_LAYOUT_GUESSES = {f"NAT64/{n}" for n in (48, 56, 64)}


def _own_kind(addr: Address) -> str | None:
    if addr in METADATA:
        return "metadata"
    if addr.is_loopback:
        return "loopback"
    if addr.is_link_local:
        return "link-local"
    if addr.is_unspecified or addr.is_multicast or addr.is_reserved:
        return "reserved"
    if addr.is_private or addr in CGNAT or not addr.is_global:
        return "private"
    return None


def classify(addr: Address) -> tuple[str | None, str]:
    """(kind, description): kind is None for a public address, else one of SEVERITY. An address
    embedding IPv4 addresses takes the worst kind of them (IPv6's own registry calls most of these
    forms reserved or private, which would let them through when the private network is allowed)."""
    embedded = embedded_ipv4(addr)
    if not embedded:
        return _own_kind(addr), str(addr)
    worst: tuple[str | None, str] = (None, str(addr))
    if addr in NAT64_LOCAL:  # a translator on the local network (RFC 8215): private at least
        worst = ("private", f"{addr} (a local-use NAT64 address)")
    for form, v4 in embedded:
        kind = _own_kind(v4)
        if form in _LAYOUT_GUESSES and kind not in ALWAYS_REFUSED:
            continue
        if kind and (worst[0] is None or SEVERITY.index(kind) <= SEVERITY.index(worst[0])):
            worst = (kind, f"{addr} ({form} of {v4})")
    return worst


def _kind(addr: Address) -> str | None:
    return classify(addr)[0]


def resolve(host: str, port: int) -> list[str]:
    """Every address the name resolves to, in the resolver's order, without duplicates."""
    try:
        infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as exc:
        raise UnsafeBaseURL(f"the base URL's host {host!r} does not resolve ({exc})") from exc
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True)
class CheckedURL:
    """A base URL that passed the guard, with the only addresses its client may connect to."""

    url: str
    host: str
    port: int
    addresses: tuple[str, ...]


def check(url: str, *, allow_private: bool = False) -> CheckedURL:
    """Resolve the URL's host once and check every address; UnsafeBaseURL with a message a person
    can act on."""
    url = (url or "").strip()
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise UnsafeBaseURL(f"the base URL must be http:// or https:// with a host name (got {url!r})")
    if parsed.username or parsed.password:
        raise UnsafeBaseURL("the base URL may not carry a user name or password: put the key in the API key field")
    try:
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
    except ValueError as exc:
        raise UnsafeBaseURL(f"the base URL has a bad port ({exc})") from exc
    addresses = []
    for text in resolve(parsed.hostname, port):
        try:
            addr = ipaddress.ip_address(text.split("%", 1)[0])
        except ValueError as exc:
            raise UnsafeBaseURL(f"the base URL's host {parsed.hostname!r} resolves to {text!r}, not an IP address") from exc
        kind, what = classify(addr)
        if kind == "metadata":
            raise UnsafeBaseURL(f"the base URL {url!r} resolves to {what}, a cloud metadata address: refused")
        if kind == "link-local":
            raise UnsafeBaseURL(f"the base URL {url!r} resolves to {what}, a link-local address: refused")
        if kind and not allow_private:
            raise UnsafeBaseURL(
                f"the base URL {url!r} resolves to {what}, a {kind} address: refused unless a project "
                "owner or admin allows the private network for this project"
            )
        addresses.append(str(addr))
    if not addresses:
        raise UnsafeBaseURL(f"the base URL's host {parsed.hostname!r} does not resolve")
    return CheckedURL(url=url.rstrip("/"), host=parsed.hostname, port=port, addresses=tuple(addresses))


def check_base_url(url: str, *, allow_private: bool = False) -> str:
    """The URL, normalized, or UnsafeBaseURL with a message a person can act on."""
    return check(url, allow_private=allow_private).url


def _host_names(host: str) -> set[str]:
    names = {host.lower().strip("[]")}
    try:
        names.add(host.encode("idna").decode("ascii").lower())
    except UnicodeError:
        pass
    return names


def _http_modules(client_class: type) -> tuple[Any, Any]:
    """The httpx and httpcore the SDK's client class is built on (httpx/httpcore or httpx2/httpcore2)."""
    for klass in client_class.__mro__:
        root = klass.__module__.split(".", 1)[0]
        if root in ("httpx", "httpx2"):
            core = "httpcore" if root == "httpx" else "httpcore2"
            return importlib.import_module(root), importlib.import_module(core)
    raise TypeError(f"{client_class!r} is not an httpx client")


def pinned_http_client(client_class: type, checked: CheckedURL, **kwargs: Any) -> Any:
    """An instance of the SDK's httpx client class (e.g. openai.DefaultHttpxClient) whose connections
    go only to the checked addresses of the checked host and port. The URL keeps the name, so the
    Host header, the TLS server name (SNI) and the certificate check are for the name. No proxy from
    the environment: a proxy would resolve the name again."""
    httpx, httpcore = _http_modules(client_class)
    allowed_names = _host_names(checked.host)

    class PinnedBackend(httpcore.SyncBackend):
        def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
            if host.lower().strip("[]") not in allowed_names or port != checked.port:
                raise httpcore.ConnectError(
                    f"refused to connect to {host}:{port}: only {checked.host}:{checked.port}, the checked base URL, is allowed"
                )
            error: Exception | None = None
            for address in checked.addresses:
                try:
                    return super().connect_tcp(address, port, timeout, local_address, socket_options)
                except httpcore.ConnectError as exc:
                    error = exc
            assert error is not None
            raise error

    transport = httpx.HTTPTransport()
    pool = getattr(transport, "_pool", None)
    if not isinstance(pool, httpcore.ConnectionPool) or not hasattr(pool, "_network_backend"):
        raise UnsafeBaseURL("cannot pin the provider's connection to the checked address with this httpx version")
    pool._network_backend = PinnedBackend()
    return client_class(transport=transport, **kwargs)
