"""The fetcher against a real local web site: redirects re-checked, sizes capped while
reading, addresses checked before anything is sent, connections pinned to the checked
address (DNS rebinding), and TLS still checking the host's name."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import httpcore
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from orchestrator.adapters.web import FetchRefused, Page, Redirect, WebFetcher
from orchestrator.core.web_targets import FetchTarget
from tests.web_site import Site


def follow_all(target: FetchTarget, hop: int) -> tuple[Any, str]:
    return "follow", "allowed"


def nobody_private(host: str) -> bool:
    return False


def only(host: str):  # type: ignore[no-untyped-def]
    return lambda name: name == host


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    served = await Site().start()
    try:
        yield served
    finally:
        await served.stop()


async def test_a_page_is_fetched_when_an_exact_rule_lets_its_private_host(site: Site) -> None:
    got = await WebFetcher().fetch(
        f"{site.base}/page", check=follow_all, private_ok=only("127.0.0.1")
    )
    assert isinstance(got, Page)
    assert got.status == 200 and got.content_type == "text/html" and got.charset == "utf-8"
    assert b"Sorting lists" in got.body and got.hosts == ("127.0.0.1",)


async def test_loopback_is_refused_before_anything_is_sent(site: Site) -> None:
    with pytest.raises(FetchRefused, match=r"127\.0\.0\.1 is a loopback address"):
        await WebFetcher().fetch(f"{site.base}/page", check=follow_all, private_ok=nobody_private)
    assert site.hits == []


@pytest.mark.parametrize("host", ["2130706433", "127.1", "0x7f.0.0.1", "[::ffff:127.0.0.1]"])
async def test_other_spellings_of_the_loopback_are_refused(site: Site, host: str) -> None:
    # The system resolver reads "127.1" and "2130706433" as 127.0.0.1; an exact rule for
    # 127.0.0.1 does not name these spellings.
    with pytest.raises(FetchRefused, match="loopback"):
        await WebFetcher().fetch(
            f"http://{host}:{site.port}/page", check=follow_all, private_ok=only("127.0.0.1")
        )
    assert site.hits == []


async def test_a_redirect_into_loopback_is_refused(site: Site) -> None:
    # localhost is allowed by name; the page it serves redirects to 127.0.0.1, which is not.
    url = f"http://localhost:{site.port}/redirect?to=http://127.0.0.1:{site.port}/page"
    with pytest.raises(FetchRefused, match="loopback"):
        await WebFetcher().fetch(url, check=follow_all, private_ok=only("localhost"))
    assert site.hits == ["/redirect"]


async def test_redirects_are_followed_up_to_ten(site: Site) -> None:
    fetcher = WebFetcher()
    got = await fetcher.fetch(
        f"{site.base}/chain/9", check=follow_all, private_ok=only("127.0.0.1")
    )
    assert isinstance(got, Page) and got.url.endswith("/page")
    site.hits.clear()
    with pytest.raises(FetchRefused, match="more than 10 redirects"):
        await fetcher.fetch(f"{site.base}/chain/12", check=follow_all, private_ok=only("127.0.0.1"))
    assert len(site.hits) == 11  # the first request and ten redirects, then it stopped


async def test_every_redirect_is_put_to_the_rules(site: Site) -> None:
    seen: list[tuple[str, int]] = []

    def check(target: FetchTarget, hop: int) -> tuple[Any, str]:
        seen.append((target.url.removeprefix(site.base), hop))
        if target.url.endswith("/chain/1"):
            return "deny", "denied by the rule web_fetch(domain:x)"
        return "follow", "ok"

    with pytest.raises(FetchRefused, match=r"redirected to .*/chain/1 is not fetched: denied"):
        await WebFetcher().fetch(f"{site.base}/chain/3", check=check, private_ok=only("127.0.0.1"))
    assert seen == [("/chain/3", 0), ("/chain/2", 1), ("/chain/1", 2)]
    assert site.hits == ["/chain/3", "/chain/2"]


async def test_a_redirect_to_a_host_that_would_ask_is_reported_not_followed(site: Site) -> None:
    def check(target: FetchTarget, hop: int) -> tuple[Any, str]:
        return ("ask", "no rule allows it") if target.host == "localhost" else ("follow", "")

    url = f"{site.base}/redirect?to=http://localhost:{site.port}/page"
    got = await WebFetcher().fetch(url, check=check, private_ok=only("127.0.0.1"))
    assert isinstance(got, Redirect)
    assert got.to == f"http://localhost:{site.port}/page" and got.reason == "no rule allows it"
    assert site.hits == ["/redirect"]


@pytest.mark.parametrize(
    ("location", "why"),
    [
        ("file:///etc/passwd", "only http and https"),
        ("http://user:pw@127.0.0.1/", "credentials"),
        ("http://127.0.0.1:25/", "port 25 is refused"),
    ],
)
async def test_a_redirect_to_a_url_web_fetch_refuses_is_refused(
    site: Site, location: str, why: str
) -> None:
    with pytest.raises(FetchRefused, match=why):
        await WebFetcher().fetch(
            f"{site.base}/redirect?to={location}", check=follow_all, private_ok=only("127.0.0.1")
        )


@pytest.mark.parametrize("path", ["/huge", "/huge-declared", "/bomb"])
async def test_bodies_over_the_cap_are_refused_while_reading(site: Site, path: str) -> None:
    with pytest.raises(FetchRefused, match="larger than web_fetch reads"):
        await WebFetcher().fetch(
            f"{site.base}{path}", check=follow_all, private_ok=only("127.0.0.1")
        )


async def test_a_small_cap_refuses_a_page_that_claims_nothing(site: Site) -> None:
    fetcher = WebFetcher(max_bytes=1000)
    with pytest.raises(FetchRefused, match="larger"):
        await fetcher.fetch(f"{site.base}/long", check=follow_all, private_ok=only("127.0.0.1"))


async def test_a_stalled_body_is_given_up(site: Site) -> None:
    fetcher = WebFetcher(total_timeout_s=0.5)
    with pytest.raises(FetchRefused, match="gave up"):
        await fetcher.fetch(f"{site.base}/stall", check=follow_all, private_ok=only("127.0.0.1"))


# -- DNS: resolve once, connect to what was checked -------------------------------------------


class Recording(httpcore.AsyncNetworkBackend):
    """A network that records where connections were asked to go and refuses them all:
    the test never sends a packet to a public address."""

    def __init__(self) -> None:
        self.connects: list[tuple[str, int]] = []

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        self.connects.append((host, port))
        raise httpcore.ConnectError("the test's network reaches nothing")

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise AssertionError("never")

    async def sleep(self, seconds: float) -> None:
        return None


class Rebinding:
    """A resolver that answers public first and a private address ever after."""

    def __init__(self, answers: Iterable[list[str]]) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        return self.answers[min(len(self.asked), len(self.answers)) - 1]


async def test_the_connection_goes_to_the_address_that_was_checked() -> None:
    resolver = Rebinding([["93.184.216.34"], ["127.0.0.1"]])
    network = Recording()
    fetcher = WebFetcher(resolver=resolver, network=network)
    with pytest.raises(FetchRefused, match="could not connect"):
        await fetcher.fetch("http://rebind.test/", check=follow_all, private_ok=nobody_private)
    assert resolver.asked == ["rebind.test"]  # resolved once, by the guard
    assert network.connects == [("93.184.216.34", 80)]  # and connected where it checked


async def test_a_name_with_any_private_address_is_refused_and_nothing_connects() -> None:
    network = Recording()
    fetcher = WebFetcher(resolver=Rebinding([["93.184.216.34", "10.1.2.3"]]), network=network)
    with pytest.raises(FetchRefused, match=r"resolves to 10\.1\.2\.3, which is a private address"):
        await fetcher.fetch("https://mixed.test/x", check=follow_all, private_ok=nobody_private)
    assert network.connects == []


@pytest.mark.parametrize(
    ("answer", "what"),
    [
        ("169.254.169.254", "link-local"),
        ("fd00:ec2::254", "unique local"),
        ("::ffff:127.0.0.1", "loopback address inside the IPv6 address"),
        ("100.64.0.1", "carrier-grade NAT"),
        ("0.0.0.0", "this network"),
    ],
)
async def test_metadata_and_private_answers_are_refused(answer: str, what: str) -> None:
    network = Recording()
    fetcher = WebFetcher(resolver=Rebinding([[answer]]), network=network)
    with pytest.raises(FetchRefused, match=what):
        await fetcher.fetch("http://metadata.test/", check=follow_all, private_ok=nobody_private)
    assert network.connects == []


async def test_a_host_nobody_checked_is_never_connected() -> None:
    from orchestrator.adapters.web import PinnedBackend

    network = Recording()
    backend = PinnedBackend(network)
    with pytest.raises(httpcore.ConnectError, match="no checked address"):
        await backend.connect_tcp("unchecked.test", 80)
    assert network.connects == []


# -- TLS checks the name, not the address it connects to --------------------------------------


def _certificates(tmp: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A CA, a certificate it signed for ``good.test``, and the server's and a client's
    contexts (the client trusts only that CA)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "good.test")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("good.test")]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    (tmp / "leaf.pem").write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    (tmp / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(tmp / "leaf.pem", tmp / "key.pem")
    client = ssl.create_default_context(cadata=ca.public_bytes(serialization.Encoding.PEM).decode())
    return server, client


async def test_tls_verifies_the_name_while_connecting_to_the_pinned_address(
    tmp_path: Path,
) -> None:
    server_tls, client_tls = _certificates(tmp_path)
    site = await Site(tls=server_tls).start()
    try:
        resolver = Rebinding([["127.0.0.1"]])
        fetcher = WebFetcher(resolver=resolver, verify=client_tls)
        both = {"good.test", "evil.test"}
        good = await fetcher.fetch(
            f"https://good.test:{site.port}/page", check=follow_all, private_ok=both.__contains__
        )
        assert isinstance(good, Page) and b"Sorting lists" in good.body
        # The same address under another name: the certificate is not that name's.
        with pytest.raises(
            FetchRefused, match=r"could not connect.*(CERTIFICATE|certificate|match)"
        ):
            await fetcher.fetch(
                f"https://evil.test:{site.port}/page",
                check=follow_all,
                private_ok=both.__contains__,
            )
        assert site.hits == ["/page"]
    finally:
        await site.stop()


def test_the_test_addresses_are_what_they_claim() -> None:
    assert ipaddress.ip_address("93.184.216.34").is_global
