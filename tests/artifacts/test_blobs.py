"""The content-addressed blob store: layout, atomic idempotent streaming writes, and a verified
read that refuses tampered, truncated, extended or missing content (MWP-WRK-023, MWP-WRK-024)."""

from __future__ import annotations

import errno
import hashlib
import io
import os
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import blake3
import pytest

from mwp_local.protocol.errors import ErrorCode
from mwp_local.store import blobs as blobs_module
from mwp_local.store.blobs import (
    _SIDE_BY_SIDE_FROM,
    CHUNK_SIZE,
    ArtifactIntegrityError,
    BlobRef,
    BlobStore,
)

CONTENT = b"def add(a, b):\n    return a + b\n"


@pytest.fixture
def blobs(tmp_path: Path) -> BlobStore:
    return BlobStore(tmp_path / "blobs", durable=False)


def _flip(path: Path, offset: int = 0) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.req("MWP-WRK-023")
def test_put_stores_content_under_its_blake3_key_and_names_it_by_sha256(blobs: BlobStore) -> None:
    ref = blobs.put(CONTENT)
    b3 = blake3.blake3(CONTENT).hexdigest()
    assert ref == BlobRef(
        sha256="sha256:" + hashlib.sha256(CONTENT).hexdigest(), b3=b3, size=len(CONTENT)
    )
    assert blobs.blob_path(b3) == blobs.root / b3[:2] / b3
    assert blobs.blob_path(b3).read_bytes() == CONTENT
    assert blobs.get(ref.sha256) == CONTENT
    assert ref.sha256 in blobs
    assert list(blobs.refs()) == [ref]


@pytest.mark.req("MWP-WRK-023")
def test_put_is_idempotent_and_leaves_no_temporary_files(blobs: BlobStore) -> None:
    first = blobs.put(CONTENT)
    again = blobs.put(io.BytesIO(CONTENT))
    assert first == again
    assert list((blobs.root / "tmp").iterdir()) == []
    assert len(list(blobs.refs())) == 1


class _ChunkOnly(io.RawIOBase):
    """A stream that refuses whole-file reads, so a test can prove the store streams."""

    def __init__(self, size: int) -> None:
        self.left = size
        self.largest = 0

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        assert 0 < n <= CHUNK_SIZE, f"read({n}) is not a bounded chunk"
        self.largest = max(self.largest, n)
        take = min(n, self.left)
        self.left -= take
        return b"x" * take


@pytest.mark.req("MWP-WRK-023")
def test_large_content_streams_in_bounded_chunks_both_ways(
    blobs: BlobStore, tmp_path: Path
) -> None:
    size = 3 * CHUNK_SIZE + 17
    stream = _ChunkOnly(size)
    ref = blobs.put(stream)  # type: ignore[arg-type]
    assert ref.size == size and stream.largest == CHUNK_SIZE
    with blobs.open(ref.sha256) as reader:
        sizes = [len(chunk) for chunk in reader]
    assert max(sizes) <= CHUNK_SIZE and sum(sizes) == size
    source = tmp_path / "big.bin"
    source.write_bytes(b"x" * size)
    assert blobs.put(source) == ref
    out = tmp_path / "copy.bin"
    assert blobs.copy_to(ref.sha256, out) == ref
    assert out.stat().st_size == size


@pytest.mark.req("MWP-WRK-023")
def test_a_failing_source_stores_nothing(blobs: BlobStore) -> None:
    class Broken(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def read(self, n: int = -1) -> bytes:
            raise OSError("disk went away")

    with pytest.raises(OSError):
        blobs.put(Broken())  # type: ignore[arg-type]
    assert list(blobs.refs()) == []
    assert list((blobs.root / "tmp").iterdir()) == []


def test_put_refuses_text_because_a_str_is_ambiguous(blobs: BlobStore) -> None:
    with pytest.raises(TypeError):
        blobs.put("some/path")  # type: ignore[arg-type]


@pytest.mark.req("MWP-WRK-024")
@pytest.mark.parametrize("offset", [0, len(CONTENT) - 1])
def test_a_tampered_blob_is_refused_on_read_naming_the_artifact(
    blobs: BlobStore, offset: int
) -> None:
    ref = blobs.put(CONTENT)
    _flip(blobs.blob_path(ref.b3), offset)
    with pytest.raises(ArtifactIntegrityError) as caught:
        blobs.get(ref.sha256, name="urn:mwp-local:artifact:patch")
    error = caught.value
    assert error.code is ErrorCode.PROTOCOL_VIOLATION and not error.retryable
    assert error.reason == "sha256-mismatch"
    assert "urn:mwp-local:artifact:patch" in error.explanation and ref.sha256 in error.explanation
    assert error.details["artifactHash"] == ref.sha256
    assert error.details["artifactId"] == "urn:mwp-local:artifact:patch"
    with pytest.raises(ArtifactIntegrityError):
        blobs.verify(ref.sha256)


@pytest.mark.req("MWP-WRK-024")
def test_a_truncated_blob_is_refused(blobs: BlobStore) -> None:
    ref = blobs.put(CONTENT)
    path = blobs.blob_path(ref.b3)
    path.write_bytes(CONTENT[:-5])
    with pytest.raises(ArtifactIntegrityError) as caught:
        blobs.get(ref.sha256)
    assert caught.value.reason == "size-mismatch"
    assert "truncated" in caught.value.explanation


@pytest.mark.req("MWP-WRK-024")
def test_a_blob_with_extra_bytes_is_refused(blobs: BlobStore) -> None:
    ref = blobs.put(CONTENT)
    with blobs.blob_path(ref.b3).open("ab") as handle:
        handle.write(b"# appended\n")
    with pytest.raises(ArtifactIntegrityError) as caught:
        blobs.get(ref.sha256)
    assert caught.value.reason == "size-mismatch"


@pytest.mark.req("MWP-WRK-024")
def test_an_index_pointing_at_other_content_is_refused(blobs: BlobStore) -> None:
    mine, other = blobs.put(CONTENT), blobs.put(b"other content entirely")
    index = blobs.root / "sha256" / mine.sha256[7:9] / mine.sha256[7:]
    index.write_text(f"{other.b3} {other.size}\n")
    with pytest.raises(ArtifactIntegrityError) as caught:
        blobs.get(mine.sha256)
    assert caught.value.reason == "sha256-mismatch"


def test_get_checks_the_identity_and_verify_the_local_address_too(blobs: BlobStore) -> None:
    """§13.1 asks a retrieval for the content hash: bytes with the signed SHA-256 are the
    Artifact, so ``get`` hands them on even when the store filed them under a wrong BLAKE3
    name; ``verify`` (what verify-log runs) reports that inconsistency of the store."""
    ref = blobs.put(CONTENT)
    wrong = "0" * 64
    blobs.blob_path(wrong).parent.mkdir(exist_ok=True)
    blobs.blob_path(ref.b3).rename(blobs.blob_path(wrong))
    index = blobs.root / "sha256" / ref.sha256[7:9] / ref.sha256[7:]
    index.write_text(f"{wrong} {ref.size}\n")
    assert blobs.get(ref.sha256) == CONTENT
    with pytest.raises(ArtifactIntegrityError) as caught:
        blobs.verify(ref.sha256)
    assert caught.value.reason == "blake3-mismatch"


@pytest.mark.parametrize("size", [0, 1, CHUNK_SIZE - 1, CHUNK_SIZE, 3 * CHUNK_SIZE + 7])
def test_get_returns_what_the_verifying_stream_returns(blobs: BlobStore, size: int) -> None:
    content = random.Random(size).randbytes(size)
    ref = blobs.put(content)
    with blobs.open(ref.sha256) as reader:
        streamed = b"".join(reader)
    assert blobs.get(ref.sha256) == streamed == content


#: Content whose chunks are hashed with SHA-256 and BLAKE3 side by side on two threads.
LARGE = os.urandom(_SIDE_BY_SIDE_FROM + 3 * CHUNK_SIZE + 5)


def _tamper(blobs: BlobStore, ref: BlobRef, damage: str) -> str:
    """Damage the stored copy of ``ref``; return the refusal's expected reason."""
    path = blobs.blob_path(ref.b3)
    if damage in ("first-byte", "last-byte", "chunk-edge"):
        offset = {"first-byte": 0, "last-byte": ref.size - 1, "chunk-edge": CHUNK_SIZE}[damage]
        _flip(path, offset)
        return "sha256-mismatch"
    if damage == "truncated":
        path.write_bytes(LARGE[:-1])
        return "size-mismatch"
    if damage == "extended":
        path.write_bytes(LARGE + b"\0")
        return "size-mismatch"
    # the same size and SHA-256 index entry, another BLAKE3 key: both digests are checked
    other = blobs.put(b"\1" + LARGE[1:])
    index = blobs.root / "sha256" / ref.sha256[7:9] / ref.sha256[7:]
    index.write_text(f"{other.b3} {other.size}\n")
    return "sha256-mismatch"


@pytest.mark.req("MWP-WRK-024")
@pytest.mark.parametrize(
    "damage", ["first-byte", "last-byte", "chunk-edge", "truncated", "extended", "other-blob"]
)
def test_large_content_hashed_side_by_side_is_refused_when_damaged(
    blobs: BlobStore, tmp_path: Path, damage: str
) -> None:
    ref = blobs.put(LARGE)
    assert ref.sha256 == "sha256:" + hashlib.sha256(LARGE).hexdigest()
    assert ref.b3 == blake3.blake3(LARGE).hexdigest()
    assert blobs.get(ref.sha256) == LARGE
    reason = _tamper(blobs, ref, damage)
    for read in (blobs.get, blobs.verify, lambda h: blobs.copy_to(h, tmp_path / "out")):
        with pytest.raises(ArtifactIntegrityError) as caught:
            read(ref.sha256)
        assert caught.value.reason == reason
    assert not (tmp_path / "out").exists()


def test_digests_are_computed_inline_when_no_thread_is_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A busy pool (its only thread blocked) never delays or changes a put or a get."""
    pool = ThreadPoolExecutor(max_workers=1)
    release = threading.Event()
    pool.submit(release.wait)
    monkeypatch.setattr(blobs_module, "_threads", lambda: pool)
    try:
        store = BlobStore(tmp_path / "blobs", durable=False)
        ref = store.put(LARGE)
        assert ref.b3 == blake3.blake3(LARGE).hexdigest()
        assert store.get(ref.sha256) == LARGE
        _flip(store.blob_path(ref.b3), ref.size - 1)
        with pytest.raises(ArtifactIntegrityError):
            store.get(ref.sha256)
    finally:
        release.set()
        pool.shutdown()


@pytest.mark.req("MWP-WRK-024")
def test_a_missing_blob_is_refused(blobs: BlobStore) -> None:
    ref = blobs.put(CONTENT)
    os.unlink(blobs.blob_path(ref.b3))
    with pytest.raises(ArtifactIntegrityError) as caught:
        blobs.get(ref.sha256)
    assert caught.value.reason == "blob-missing"
    unknown = "sha256:" + "1" * 64
    with pytest.raises(ArtifactIntegrityError) as caught:
        blobs.get(unknown)
    assert caught.value.reason == "blob-missing" and unknown not in blobs


@pytest.mark.req("MWP-WRK-024")
def test_the_streaming_reader_withholds_the_final_bytes_of_a_tampered_blob(
    blobs: BlobStore,
) -> None:
    content = bytes(range(256)) * 10
    ref = blobs.put(content)
    _flip(blobs.blob_path(ref.b3), len(content) - 1)
    received = []
    with pytest.raises(ArtifactIntegrityError), blobs.open(ref.sha256) as reader:
        while chunk := reader.read(1000):
            received.append(chunk)
    # The chunk holding the end (and the tampered byte) was never handed out.
    assert sum(map(len, received)) == 2000


@pytest.mark.req("MWP-WRK-024")
def test_copy_to_creates_no_file_from_a_tampered_blob(blobs: BlobStore, tmp_path: Path) -> None:
    ref = blobs.put(CONTENT)
    _flip(blobs.blob_path(ref.b3))
    out = tmp_path / "out.txt"
    with pytest.raises(ArtifactIntegrityError):
        blobs.copy_to(ref.sha256, out)
    assert not out.exists() and list(tmp_path.glob(".out.txt*")) == []


def test_reindex_restores_a_lost_index_entry_and_reports_a_corrupt_blob(blobs: BlobStore) -> None:
    good, bad = blobs.put(CONTENT), blobs.put(b"will be corrupted")
    for ref in (good, bad):
        (blobs.root / "sha256" / ref.sha256[7:9] / ref.sha256[7:]).unlink()
    _flip(blobs.blob_path(bad.b3))
    problems = blobs.reindex()
    assert len(problems) == 1 and bad.b3 in problems[0]
    assert blobs.get(good.sha256) == CONTENT and bad.sha256 not in blobs


def test_reading_a_store_creates_nothing(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    assert ("sha256:" + "2" * 64) not in store
    with pytest.raises(ArtifactIntegrityError):
        store.verify("sha256:" + "2" * 64)
    assert not (tmp_path / "blobs").exists()


def _record_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Record the path of every fsync from now on (and still do it)."""
    synced: list[Path] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(Path(os.readlink(f"/proc/self/fd/{fd}")))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return synced


@pytest.fixture(params=[True, False], ids=["unnamed", "named"])
def unnamed(request: pytest.FixtureRequest) -> bool:
    """Both ways of writing a new file: O_TMPFILE, and the named temporary file without it."""
    return bool(request.param)


def _durable(root: Path, unnamed: bool) -> BlobStore:
    store = BlobStore(root)
    if unnamed and not store._unnamed:
        pytest.skip("no O_TMPFILE here")
    store._unnamed = unnamed
    return store


def _sibling(content: bytes, ref: BlobRef) -> bytes:
    """Other content whose blob lands in the same fan-out directory as ``ref``'s."""
    for n in range(100_000):
        other = content + n.to_bytes(4, "big")
        if blake3.blake3(other).hexdigest()[:2] == ref.b3[:2]:
            return other
    raise AssertionError("no sibling found")


def test_a_deferred_put_syncs_its_bytes_before_naming_them_and_directories_at_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unnamed: bool
) -> None:
    store = _durable(tmp_path / "blobs", unnamed)
    synced = _record_fsyncs(monkeypatch)
    ref = store.put(CONTENT, defer_sync=True)
    blob, index = store.blob_path(ref.b3), store._index_path(ref.sha256)
    # only the two files' bytes, while they were still in tmp/ (unnamed or not yet renamed)
    assert len(synced) == 2 and all(path.parent == store._tmp for path in synced)
    assert store.get(ref.sha256) == CONTENT  # readable at once
    waiting = {blob.parent, index.parent, store.root, store._index, store.root.parent}
    assert set(store.unsynced) == waiting
    synced.clear()
    store.sync()
    assert set(synced) == waiting and len(synced) == len(waiting)
    assert store.unsynced == ()
    synced.clear()
    store.sync()  # nothing waits: no fsync
    assert synced == []
    assert list(store._tmp.iterdir()) == []


def test_a_directory_is_synced_only_for_its_new_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unnamed: bool
) -> None:
    store = _durable(tmp_path / "blobs", unnamed)
    ref = store.put(CONTENT, defer_sync=True)
    store.sync()
    other = store.put(_sibling(CONTENT, ref), defer_sync=True)
    expected = {store.blob_path(other.b3).parent, store._index_path(other.sha256).parent}
    if store._index_path(other.sha256).parent != store._index_path(ref.sha256).parent:
        expected.add(store._index)  # a new fan-out directory of the index
    assert set(store.unsynced) == expected  # not blobs/ again: its fan-out entry is durable
    store.sync()
    synced = _record_fsyncs(monkeypatch)
    assert store.put(CONTENT, defer_sync=True) == ref  # already there: replaced, synced at once
    assert synced[-1] == store.blob_path(ref.b3).parent
    assert store.unsynced == ()


def test_a_durable_put_syncs_bytes_then_the_new_entries_before_it_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unnamed: bool
) -> None:
    store = _durable(tmp_path / "blobs", unnamed)
    synced = _record_fsyncs(monkeypatch)
    ref = store.put(CONTENT)
    blob, index = store.blob_path(ref.b3), store._index_path(ref.sha256)
    assert all(path.parent == store._tmp for path in synced[:2])
    assert set(synced[2:]) == {
        blob.parent,
        index.parent,
        store.root,
        store._index,
        store.root.parent,
    }
    assert store.unsynced == ()
    assert store.get(ref.sha256) == CONTENT


def test_a_deferred_put_over_an_existing_file_syncs_the_replacement_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unnamed: bool
) -> None:
    store = _durable(tmp_path / "blobs", unnamed)
    ref = store.put(CONTENT)  # durable: a log entry may name it already
    store.blob_path(ref.b3).write_bytes(b"")  # lost to a crash, say
    synced = _record_fsyncs(monkeypatch)
    assert store.put(CONTENT, defer_sync=True) == ref
    assert store.get(ref.sha256) == CONTENT
    assert store.blob_path(ref.b3).parent in synced  # renamed over and synced at once
    assert store.unsynced == ()  # the index entry was already right
    assert list(store._tmp.iterdir()) == []


def test_a_file_system_without_o_tmpfile_gets_named_temporary_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = BlobStore(tmp_path / "blobs")
    store._unnamed = True
    real_open = os.open
    refused: list[int] = []

    def no_tmpfile(path: object, flags: int, *args: int, **kwargs: object) -> int:
        if flags & getattr(os, "O_TMPFILE", 0) == getattr(os, "O_TMPFILE", -1):
            refused.append(flags)
            raise OSError(errno.EOPNOTSUPP, "not supported")
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", no_tmpfile)
    ref = store.put(CONTENT, defer_sync=True)
    store.sync()
    assert store.get(ref.sha256) == CONTENT and store.verify(ref.sha256) == ref
    assert store._unnamed is False and len(refused) <= 1  # asked once, then never again
    assert store.put(LARGE) == store.verify(store.put(LARGE).sha256)
    assert list(store._tmp.iterdir()) == []


def test_a_failed_fsync_stores_nothing_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unnamed: bool
) -> None:
    store = _durable(tmp_path / "blobs", unnamed)

    def failing(fd: int) -> None:
        raise OSError(errno.EIO, "disk went away")

    monkeypatch.setattr(os, "fsync", failing)
    with pytest.raises(OSError):
        store.put(LARGE, defer_sync=True)
    assert list(store.refs()) == [] and list(store._tmp.iterdir()) == []
    assert not list(store.root.glob("[0-9a-f][0-9a-f]/*"))


def test_a_store_that_is_not_durable_defers_nothing(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs", durable=False)
    store.put(CONTENT, defer_sync=True)
    assert store.unsynced == ()
