"""The SSRF guard: a user-set base URL may not reach link-local, metadata, loopback or private
addresses unless an owner or admin allowed the private network for the project. Cloud metadata
endpoints are refused always.

Checked when the setting is saved and again before every call (the name may resolve differently
later); pure of Django.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlparse

from .base import ProviderError

METADATA = {
    ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack
    ipaddress.ip_address("169.254.170.2"),  # ECS task metadata
    ipaddress.ip_address("100.100.100.200"),  # Alibaba
    ipaddress.ip_address("fd00:ec2::254"),  # AWS IPv6
}


class UnsafeBaseURL(ProviderError):
    pass


def _kind(addr: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped:
        addr = addr.ipv4_mapped
    if addr in METADATA:
        return "metadata"
    if addr.is_loopback:
        return "loopback"
    if addr.is_link_local:
        return "link-local"
    if addr.is_unspecified or addr.is_multicast or addr.is_reserved:
        return "reserved"
    if addr.is_private or (isinstance(addr, ipaddress.IPv4Address) and addr in ipaddress.ip_network("100.64.0.0/10")):
        return "private"
    return None


def resolve(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as exc:
        raise UnsafeBaseURL(f"the base URL's host {host!r} does not resolve ({exc})") from exc
    return sorted({info[4][0] for info in infos})


def check_base_url(url: str, *, allow_private: bool = False) -> str:
    """The URL, normalized, or UnsafeBaseURL with a message a person can act on."""
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
    for text in resolve(parsed.hostname, port):
        addr = ipaddress.ip_address(text.split("%", 1)[0])
        kind = _kind(addr)
        if kind == "metadata":
            raise UnsafeBaseURL(f"the base URL {url!r} resolves to {addr}, a cloud metadata address: refused")
        if kind and not allow_private:
            raise UnsafeBaseURL(
                f"the base URL {url!r} resolves to {addr}, a {kind} address: refused unless a project "
                "owner or admin allows the private network for this project"
            )
    return url.rstrip("/")
