"""Archive bundles: bounded extraction into a directory the workbench owns and removes, clear errors.

The bombs are real archives (their CRCs and sizes are right: with the limits raised they would
extract), built quickly by repeating one flushed deflate block of zeros instead of compressing
2 GiB.
"""

from __future__ import annotations

import io
import os
import struct
import subprocess
import sys
import tarfile
import tempfile
import zipfile
import zlib
from pathlib import Path

import pytest

from tests.test_bundle import make_tree
from workbench.bundle import ArchiveLimits, extract_archive, open_bundle, parse_size
from workbench.errors import BundleError, ConfigError, UnsupportedError

MiB, GiB = 1 << 20, 1 << 30
CHUNK = 16 * MiB


def deflate_zeros(total: int, prefix: bytes = b"") -> tuple[bytes, int]:
    """A raw deflate stream of ``prefix`` then ``total`` zero bytes (a multiple of 16 MiB), and its CRC-32."""
    assert total % CHUNK == 0
    head = zlib.compressobj(9, zlib.DEFLATED, -15)
    start = head.compress(prefix) + head.flush(zlib.Z_FULL_FLUSH) if prefix else b""
    block = zlib.compressobj(9, zlib.DEFLATED, -15)
    one = block.compress(bytes(CHUNK)) + block.flush(zlib.Z_FULL_FLUSH)  # byte-aligned, history reset
    crc = zlib.crc32(prefix)
    zeros = bytes(CHUNK)
    for _ in range(total // CHUNK):
        crc = zlib.crc32(zeros, crc)
    return start + one * (total // CHUNK) + b"\x03\x00", crc  # \x03\x00: an empty final block


def zip_bomb(path: Path, size: int = 2 * GiB, name: str = "nodes/1/zeros.log") -> Path:
    """One member of ``size`` zeros, deflated (about 2 MB for 2 GiB)."""
    data, crc = deflate_zeros(size)
    encoded = name.encode()
    local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 8, 0, 0, crc, len(data), size, len(encoded), 0)
    central = struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 8, 0, 0, crc, len(data), size, len(encoded),
                          0, 0, 0, 0, 0o100644 << 16, 0)
    with open(path, "wb") as f:
        f.write(local + encoded + data)
        cd_start = f.tell()
        f.write(central + encoded)
        cd_size = f.tell() - cd_start
        f.write(struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 1, 1, cd_size, cd_start, 0))
    return path


def tar_gz_bomb(path: Path, members: int = 1, member_size: int = 2 * GiB) -> Path:
    """``members`` files of ``member_size`` zeros in a .tar.gz."""
    raw = b""
    crc = 0
    total = 0
    head_block = zlib.compressobj(9, zlib.DEFLATED, -15)
    zeros_stream, zeros_crc = deflate_zeros(member_size)
    zeros_stream = zeros_stream[:-2]  # not final yet
    for i in range(members):
        info = tarfile.TarInfo(f"nodes/1/zeros-{i}.log")
        info.size = member_size
        header = info.tobuf(format=tarfile.GNU_FORMAT)
        head_block = zlib.compressobj(9, zlib.DEFLATED, -15)
        raw += head_block.compress(header) + head_block.flush(zlib.Z_FULL_FLUSH) + zeros_stream
        crc = zlib.crc32(header, crc)
        crc = zlib.crc32(bytes(member_size), crc) if member_size <= 64 * MiB else _crc_zeros(crc, member_size)
        total += len(header) + member_size
    tail = bytes(1024)  # two empty blocks end the tar
    last = zlib.compressobj(9, zlib.DEFLATED, -15)
    raw += last.compress(tail) + last.flush()
    crc = zlib.crc32(tail, crc)
    total += len(tail)
    gz = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + raw + struct.pack("<2L", crc, total & 0xFFFFFFFF)
    path.write_bytes(gz)
    return path


def _crc_zeros(crc: int, size: int) -> int:
    zeros = bytes(CHUNK)
    for _ in range(size // CHUNK):
        crc = zlib.crc32(zeros, crc)
    return crc


def tree_size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private ``$TMPDIR`` for this process and its children."""
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read $TMPDIR
    return tmp


# --------------------------------------------------------------------------------------------
# bombs and limits


def test_a_2mb_zip_that_expands_to_2gib_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    bomb = zip_bomb(tmp_path / "bomb.zip")
    assert bomb.stat().st_size < 3 * MiB
    with zipfile.ZipFile(bomb) as zf:  # a well-formed archive: Python would extract 2 GiB of it
        assert [(i.filename, i.file_size) for i in zf.infolist()] == [("nodes/1/zeros.log", 2 * GiB)]
        with zf.open("nodes/1/zeros.log") as member:
            assert member.read(MiB) == bytes(MiB)
    target = tmp_path / "target"
    with pytest.raises(BundleError, match=r"bomb.zip: extracting 'nodes/1/zeros.log' would bring the bundle to "
                                          r"2,147,483,648 bytes, more than the 1,073,741,824 allowed for an "
                                          r"archive of [\d,]+ bytes \(200 times its size, at least 1,073,741,824: "
                                          r"a compression bomb\?\)"):
        extract_archive(bomb, target)
    assert tree_size(target) == 0


def test_a_2mb_tar_gz_that_expands_to_2gib_is_refused_at_its_header(tmp_path: Path) -> None:
    bomb = tar_gz_bomb(tmp_path / "bomb.tar.gz")
    assert bomb.stat().st_size < 3 * MiB
    target = tmp_path / "target"
    with pytest.raises(BundleError, match="compression bomb"):
        extract_archive(bomb, target)
    assert tree_size(target) == 0


def test_a_bomb_of_many_members_stops_before_writing_past_the_limit(tmp_path: Path) -> None:
    bomb = tar_gz_bomb(tmp_path / "many.tar.gz", members=6, member_size=16 * MiB)  # 96 MiB in ~100 kB
    limits = ArchiveLimits(max_ratio=10, ratio_floor=40 * MiB)
    allowed = limits.allowed(bomb.stat().st_size)
    assert allowed == 40 * MiB
    target = tmp_path / "target"
    with pytest.raises(BundleError, match=r"extracting 'nodes/1/zeros-2.log' would bring the bundle to "
                                          r"50,331,648 bytes"):
        extract_archive(bomb, target, limits)
    assert tree_size(target) == 32 * MiB  # two members written, the third refused before its first byte
    # raised limits let the same archive through
    extract_archive(bomb, tmp_path / "raised", ArchiveLimits(max_ratio=10, ratio_floor=GiB))
    assert tree_size(tmp_path / "raised") == 6 * 16 * MiB


def test_limits_on_bytes_and_members(tmp_path: Path) -> None:
    src = tmp_path / "src"
    make_tree(src)
    archive = tmp_path / "b.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for f in sorted(src.rglob("*")):
            zf.write(f, f.relative_to(src).as_posix())
    members = len(list(src.rglob("*")))
    with pytest.raises(BundleError, match=f"more than {members - 1} members; refused"):
        extract_archive(archive, tmp_path / "t1", ArchiveLimits(max_members=members - 1))
    extract_archive(archive, tmp_path / "t2", ArchiveLimits(max_members=members))
    with pytest.raises(BundleError, match="more than 20 bytes; raise the limit with --archive-max-bytes"):
        extract_archive(archive, tmp_path / "t3", ArchiveLimits(max_bytes=20))


def test_limits_from_the_environment_and_options() -> None:
    env = {"WORKBENCH_ARCHIVE_MAX_BYTES": "100G", "WORKBENCH_ARCHIVE_MAX_MEMBERS": "5",
           "WORKBENCH_ARCHIVE_MAX_RATIO": "1000"}
    assert ArchiveLimits.from_env(env) == ArchiveLimits(max_bytes=100 * GiB, max_members=5, max_ratio=1000.0)
    assert ArchiveLimits.from_env(env, max_members="7", max_bytes=None).max_members == 7
    assert ArchiveLimits.from_env({}) == ArchiveLimits()
    with pytest.raises(ConfigError, match="WORKBENCH_ARCHIVE_MAX_BYTES: expected a size such as 20G"):
        ArchiveLimits.from_env({"WORKBENCH_ARCHIVE_MAX_BYTES": "lots"})
    with pytest.raises(ConfigError, match="--archive-max-ratio: expected a positive number"):
        ArchiveLimits.from_env({}, max_ratio="-3")
    assert [parse_size(t) for t in ("1k", "2MiB", "1.5g", "7")] == [1024, 2 * MiB, 3 * GiB // 2, 7]


# --------------------------------------------------------------------------------------------
# damaged, encrypted, unsupported and ambiguous archives


def _tree_archive(tmp_path: Path, name: str) -> Path:
    src = tmp_path / "src"
    if not src.exists():
        make_tree(src)
        (src / "nodes" / "7" / "logs" / "big.log").write_bytes(os.urandom(256 * 1024))
    archive = tmp_path / name
    if name.endswith(".zip"):
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
            for f in sorted(src.rglob("*")):
                zf.write(f, f.relative_to(src).as_posix())
    else:
        with tarfile.open(archive, "w:gz") as tf:
            tf.add(src, arcname=".")
    return archive


def test_a_truncated_tar_gz_is_one_line_naming_the_file(tmp_path: Path) -> None:
    archive = _tree_archive(tmp_path, "b.tar.gz")
    data = archive.read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(BundleError) as caught:
        open_bundle(cut)
    message = str(caught.value)
    assert message.startswith(f"cannot extract {cut}: truncated or damaged archive") and "\n" not in message


def _patch_zip_headers(archive: Path, offsets: dict[bytes, int], change: object) -> None:
    """Rewrite one 16-bit field of every local (``PK\\3\\4``) and central (``PK\\1\\2``) header."""
    data = bytearray(archive.read_bytes())
    for sig, offset in offsets.items():
        at = data.find(sig)
        while at >= 0:
            struct.pack_into("<H", data, at + offset, change(struct.unpack_from("<H", data, at + offset)[0]))
            at = data.find(sig, at + 4)
    archive.write_bytes(bytes(data))


def test_an_encrypted_zip_is_refused_with_one_line(tmp_path: Path) -> None:
    archive = _tree_archive(tmp_path, "secret.zip")
    # general-purpose flag bit 0: the members are encrypted (as `zip -P` or 7-Zip's ZipCrypto mark them)
    _patch_zip_headers(archive, {b"PK\x03\x04": 6, b"PK\x01\x02": 8}, lambda flags: flags | 1)
    with zipfile.ZipFile(archive) as zf, pytest.raises(RuntimeError, match="encrypted, password required"):
        zf.read(next(i for i in zf.infolist() if not i.is_dir()))  # Python itself reads it as an encrypted zip
    with pytest.raises(UnsupportedError, match=r"secret.zip: member '.*' is encrypted; give the workbench an "
                                               r"unencrypted archive or a directory$"):
        extract_archive(archive, tmp_path / "t")
    assert tree_size(tmp_path / "t") == 0


def test_a_deflate64_zip_is_refused_with_one_line(tmp_path: Path) -> None:
    archive = _tree_archive(tmp_path, "d.zip")
    # Deflate64 is method 9: set it in every local and central header, as 7-Zip or Windows write it
    _patch_zip_headers(archive, {b"PK\x03\x04": 8, b"PK\x01\x02": 10}, lambda method: 9 if method == 8 else method)
    with zipfile.ZipFile(archive) as zf, pytest.raises(NotImplementedError, match="compression method"):
        zf.read(next(i for i in zf.infolist() if i.compress_type == 9))  # what Python does with it
    with pytest.raises(UnsupportedError, match="uses Deflate64 compression, which Python cannot read"):
        open_bundle(archive, extract_to=tmp_path / "t")
    assert tree_size(tmp_path / "t") == 0


def test_duplicate_member_names_are_refused(tmp_path: Path) -> None:
    archive = tmp_path / "dup.zip"
    with pytest.warns(UserWarning, match="Duplicate name"), zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("nodes/1/meta.properties", "node.id=1\n")
        zf.writestr("nodes/1/meta.properties", "node.id=2\n")
    with pytest.raises(BundleError, match="member 'nodes/1/meta.properties' appears twice; refused"):
        extract_archive(archive, tmp_path / "t1")
    assert tree_size(tmp_path / "t1") == 0
    archive = tmp_path / "dup.tar"
    with tarfile.open(archive, "w") as tf:
        for name, body in (("a/x.log", b"one"), ("a/./x.log", b"two")):  # the same file, spelt twice
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tf.addfile(info, io.BytesIO(body))
    with pytest.raises(BundleError, match=r"member 'a/./x.log' appears twice"):
        extract_archive(archive, tmp_path / "t2")


def test_special_members_are_refused(tmp_path: Path) -> None:
    archive = tmp_path / "fifo.tar"
    with tarfile.open(archive, "w") as tf:
        info = tarfile.TarInfo("nodes/1/pipe")
        info.type = tarfile.FIFOTYPE
        tf.addfile(info)
    with pytest.raises(BundleError, match="device, pipe or other special file: 'nodes/1/pipe'"):
        extract_archive(archive, tmp_path / "t")
    archive = tmp_path / "hard.tar"
    with tarfile.open(archive, "w") as tf:
        info = tarfile.TarInfo("nodes/1/hard")
        info.type = tarfile.LNKTYPE
        info.linkname = "nodes/1/other"
        tf.addfile(info)
    with pytest.raises(BundleError, match="is a link"):
        extract_archive(archive, tmp_path / "t")


# --------------------------------------------------------------------------------------------
# the extraction directory is the workbench's, and goes


def test_an_archive_bundle_owns_its_extraction_and_removes_it(private_tmp: Path, tmp_path: Path) -> None:
    archive = _tree_archive(tmp_path, "b.tar.gz")
    with open_bundle(archive) as bundle:
        assert bundle.owned_dir is not None and bundle.root.is_relative_to(private_tmp.resolve())
        assert any(a.kind == "segment" for a in bundle.artifacts)
        assert (bundle.root / "manifest.json").is_file()
    assert list(private_tmp.iterdir()) == []
    bundle.close()  # idempotent
    # a directory given by the caller is the caller's
    kept = open_bundle(archive, extract_to=tmp_path / "mine")
    kept.close()
    assert (tmp_path / "mine" / "manifest.json").is_file()


def test_a_refused_archive_leaves_nothing(private_tmp: Path, tmp_path: Path) -> None:
    bomb = tar_gz_bomb(tmp_path / "many.tar.gz", members=6, member_size=16 * MiB)
    with pytest.raises(BundleError, match="compression bomb"):
        open_bundle(bomb, limits=ArchiveLimits(max_ratio=10, ratio_floor=40 * MiB))
    assert list(private_tmp.iterdir()) == []


def test_an_unclosed_bundle_is_removed_when_the_process_ends(private_tmp: Path, tmp_path: Path) -> None:
    archive = _tree_archive(tmp_path, "b.zip")
    code = ("import sys; from workbench.bundle import open_bundle; b = open_bundle(sys.argv[1]); "
            "print(b.root); assert (b.root / 'manifest.json').is_file()")
    res = subprocess.run([sys.executable, "-c", code, str(archive)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert Path(res.stdout.strip()).parent == private_tmp.resolve()
    assert list(private_tmp.iterdir()) == []


def test_inspect_of_an_archive_leaves_nothing_in_tmpdir(private_tmp: Path, tmp_path: Path) -> None:
    archive = _tree_archive(tmp_path, "b.tar.gz")
    res = subprocess.run([sys.executable, "-m", "workbench", "inspect", str(archive), "--deep"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "  node 3 (nodes/7/logs/meta.properties): " in res.stdout and "segment 3" in res.stdout
    assert list(private_tmp.iterdir()) == []
    bomb = zip_bomb(tmp_path / "bomb.zip")
    res = subprocess.run([sys.executable, "-m", "workbench", "inspect", str(bomb)], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and "compression bomb" in res.stderr
    assert list(private_tmp.iterdir()) == []
    res = subprocess.run([sys.executable, "-m", "workbench", "inspect", str(bomb), "--archive-max-ratio", "x"],
                         capture_output=True, text=True, timeout=120)
    assert (res.returncode, res.stderr) == (2, "workbench: --archive-max-ratio: expected a positive number, "
                                               "got 'x'\n")
