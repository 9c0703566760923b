"""The suite's S3 server (:class:`peer.s3proxy.S3Server`, S3Proxy on 127.0.0.1) speaks S3 as s3fs needs it.

Buckets, uploads (one a multipart upload), listings and ranged reads through s3fs, the bytes compared
with the local files; a wrong secret or key is refused; the server listens on the loopback address only.
"""

from __future__ import annotations

import random
import socket
import urllib.parse

import pytest
import s3fs

from peer.s3proxy import S3Server

pytestmark = pytest.mark.kafka

MIB = 1 << 20


def _fs(**options) -> s3fs.S3FileSystem:
    """A client of its own (no instance cache, no listings cache carried across tests)."""
    return s3fs.S3FileSystem(skip_instance_cache=True, use_listings_cache=False, **options)


def _create_bucket(fs: s3fs.S3FileSystem, bucket: str) -> None:
    """Create ``bucket`` with CreateBucket: ``fs.mkdir(bucket)`` raises FileExistsError on S3Proxy, whose
    GetBucketLocation answers 200 for a bucket that does not exist (s3fs's existence probe)."""
    fs.call_s3("create_bucket", Bucket=bucket)
    fs.invalidate_cache()


def test_put_list_and_read_ranges(s3_server: S3Server, tmp_path):
    fs = _fs(**s3_server.storage_options())
    bucket = "bundle-test"
    _create_bucket(fs, bucket)
    rng = random.Random(7)
    local = tmp_path / "bundle"
    (local / "logs").mkdir(parents=True)
    files = {
        "manifest.json": b'{"format": 1}\n',
        "logs/node-1.log": b"".join(b"line %d\n" % i for i in range(2000)),
        "logs/big.bin": rng.randbytes(3 * MIB + 12345),
    }
    for name, data in files.items():
        (local / name).write_bytes(data)
        fs.put_file(str(local / name), f"{bucket}/bundle/{name}")
    # written through a file object in 5 MiB parts: a multipart upload of three parts
    multipart = rng.randbytes(11 * MIB + 7)
    with fs.open(f"{bucket}/bundle/multipart.bin", "wb", block_size=5 * MIB) as fh:
        for start in range(0, len(multipart), MIB):
            fh.write(multipart[start:start + MIB])
    files["multipart.bin"] = multipart

    assert bucket in fs.ls("", detail=False)   # the session's server holds other tests' buckets too
    listed = fs.find(f"{bucket}/bundle", detail=True)
    assert {path: info["size"] for path, info in listed.items()} == {
        f"{bucket}/bundle/{name}": len(data) for name, data in files.items()}
    assert sorted(fs.ls(f"{bucket}/bundle", detail=False)) == [
        f"{bucket}/bundle/{name}" for name in ("logs", "manifest.json", "multipart.bin")]

    for name in ("logs/big.bin", "multipart.bin"):
        data = files[name]
        with fs.open(f"{bucket}/bundle/{name}", "rb", block_size=256 * 1024) as fh:
            for offset, length in ((0, 10), (MIB - 3, 100_000), (len(data) - 50, 50), (2 * MIB + 1, 1)):
                fh.seek(offset)
                assert fh.read(length) == data[offset:offset + length], (name, offset, length)
        assert fs.cat_file(f"{bucket}/bundle/{name}", start=1000, end=5000) == data[1000:5000]
    assert fs.cat(f"{bucket}/bundle/manifest.json") == files["manifest.json"]


def test_wrong_credentials_are_refused(s3_server: S3Server):
    good = s3_server.storage_options()
    fs = _fs(**good)
    _create_bucket(fs, "refusal-test")
    fs.pipe_file("refusal-test/a.txt", b"a")
    for wrong in ({**good, "secret": good["secret"] + "x"}, {**good, "key": "someone-else"}):
        with pytest.raises(PermissionError):
            _fs(**wrong).cat_file("refusal-test/a.txt")
        with pytest.raises(PermissionError):
            _fs(**wrong).ls("refusal-test")
    assert fs.cat_file("refusal-test/a.txt") == b"a"


def _own_addresses() -> set[str]:
    """This machine's non-loopback IPv4 addresses that can be found without sending anything."""
    found: set[str] = set()
    try:
        found.update(info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET))
    except OSError:
        pass
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: a UDP connect only picks the route's source address
            found.add(probe.getsockname()[0])
        except OSError:
            pass
    return {address for address in found if not address.startswith("127.") and address != "0.0.0.0"}


def test_listens_on_loopback_only(s3_server: S3Server):
    url = urllib.parse.urlsplit(s3_server.endpoint_url)
    assert (url.hostname, url.port) == ("127.0.0.1", s3_server.port)
    with socket.create_connection(("127.0.0.1", s3_server.port), timeout=5):
        pass
    for address in sorted(_own_addresses()):
        with pytest.raises(OSError), socket.create_connection((address, s3_server.port), timeout=5):
            pass
