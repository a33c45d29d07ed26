"""Content-addressed Artifact blobs beside the Group log, verified on every read (§13.1).

Owns the on-disk layout of ``DIR/blobs/`` and every byte written to or read from it. Artifact
content never enters the Group log: the log holds only the signed manifest, which names the
content by its protocol identity ``sha256:<hex>``. Locally the content is stored under its BLAKE3
digest (``DESIGN.md`` decision 2), with a small index from the protocol identity to the storage
key::

    blobs/<b3[:2]>/<b3>              the content, named by its BLAKE3 digest (64 hex)
    blobs/sha256/<hex[:2]>/<hex>     index entry: "<b3> <size>\\n" for "sha256:<hex>"
    blobs/tmp/                       where new files are written before they are named

Writes are atomic and idempotent: content streams into a new file in ``blobs/tmp/`` while both
digests are computed chunk by chunk, in the same pass (a large file is never read whole into
memory). The file is unnamed (``O_TMPFILE``) where the file system allows it, else a named
temporary file. Its bytes are fsynced, the first chunks while the later ones are still hashed,
before it gets its content address (linked there, or renamed without ``O_TMPFILE``), so no name
ever shows bytes that are not durable; the index entry follows the same way. Then the
directories holding a new entry are fsynced, side by side: the fan-out directory, and its parent
only while the fan-out directory's own entry is not known durable. The same content always lands
at the same path with the same bytes, so repeating a ``put`` (or two writers racing) is harmless,
and a crash leaves at most a stray temporary file (none at all with ``O_TMPFILE``).

``put(..., defer_sync=True)`` leaves those directory fsyncs for ``sync()``, which does each
directory once for every entry made in it since the last. A ``put`` that finds a file under its
name already replaces it and fsyncs that directory at once, deferred or not. Who defers and why a
blob is never less durable than a log entry naming it: ``docs/durability.md``.

Every read verifies the size and the content hash against the index before anything is handed on;
the streaming ``open`` checks before it returns the final bytes. ``get`` checks the protocol
identity, SHA-256, which is what §13.1 asks of a retrieval: bytes with the signed hash are the
Artifact, whatever their local name. ``open``, ``copy_to`` and ``verify`` check the BLAKE3 address
too, so ``verify`` (and ``mwp-local verify-log``) also proves that the store itself is consistent:
each blob lies under its own name. A mismatch, a truncated or extended file or a missing blob raises
:class:`ArtifactIntegrityError`, a ``ProtocolError`` with code ``PROTOCOL_VIOLATION``: section 19
has no Artifact-specific code, and the stored bytes no longer matching the signed content hash
breaks a core invariant of the protocol (an Artifact is immutable and content addressed, §13.1). It
is not ``SCHEMA_VALIDATION_FAILED`` (the manifest is fine), not ``AUTH_INVALID_SIGNATURE`` (the
signature is fine) and not ``INTERNAL_ERROR`` (retryable by default, and reading the same bytes
again cannot help). Identity is only ever the hash: this module never resolves a URI.

It must not parse manifests or decide who may read what (``manifests``, ``isolation`` do).
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import re
import tempfile
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any, BinaryIO

import blake3

from ..protocol.errors import ErrorCode, ProtocolError
from ..protocol.hashing import is_sha256_id

__all__ = [
    "CHUNK_SIZE",
    "ArtifactIntegrityError",
    "BlobReader",
    "BlobRef",
    "BlobStore",
]

#: Bytes hashed and copied per step: large enough for hashing on two threads to pay off, small
#: enough that a multi-gigabyte Artifact never sits in memory.
CHUNK_SIZE = 1 << 20

_HEX64 = re.compile(r"[0-9a-f]{64}")
#: Chunks of at least this size have their two digests computed side by side (``_Digests``).
#: Below it, on this shared 2-core machine, waking a second thread cost more than it saved
#: (1 MiB gets: 0.48 of SHA-256 side by side against 0.58 one after the other, load ~10).
_SIDE_BY_SIDE_FROM = 4 * CHUNK_SIZE
_RULE = "§13.1 verify the content hash when retrieving an Artifact"
#: ``get`` reads content up to this size in one call (it returns it whole anyway).
WHOLE_READ_MAX = 256 * CHUNK_SIZE


@dataclass(frozen=True, slots=True, kw_only=True)
class BlobRef:
    """Where a piece of content is and what it is: identity, storage key and size."""

    #: The protocol identity ``sha256:<64 lower-case hex>`` (what manifests cite).
    sha256: str
    #: The local storage key: the BLAKE3 digest as 64 lower-case hex.
    b3: str
    #: Size in bytes.
    size: int

    def __post_init__(self) -> None:
        if not is_sha256_id(self.sha256):
            raise ValueError(f"{self.sha256!r} is not a 'sha256:<64 hex>' content hash")
        if not _HEX64.fullmatch(self.b3):
            raise ValueError(f"{self.b3!r} is not a 64-hex BLAKE3 digest")
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 0:
            raise ValueError(f"size must be a non-negative integer, not {self.size!r}")


class ArtifactIntegrityError(ProtocolError):
    """Stored Artifact content failed verification on read; it must not be used.

    ``details`` names the Artifact (``artifactHash`` and, when the caller knew it,
    ``artifactId``), what was expected and what was found; ``reason`` is one of
    ``blob-missing``, ``size-mismatch``, ``sha256-mismatch``, ``blake3-mismatch``.
    """

    def __init__(
        self,
        sha256: str,
        reason: str,
        problem: str,
        *,
        name: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        label = f"Artifact {name} ({sha256})" if name else f"Artifact {sha256}"
        super().__init__(
            ErrorCode.PROTOCOL_VIOLATION,
            f"{label} failed its integrity check on read: {problem}. It was refused and must "
            "not be used; restore the blob from a trusted copy (its identity is the content "
            "hash, never a URI).",
            retryable=False,
            details={
                "artifactHash": sha256,
                **({"artifactId": name} if name else {}),
                **(details or {}),
            },
            rule=_RULE,
            stage="artifact-integrity",
            reason=reason,
        )


_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def _threads() -> ThreadPoolExecutor:
    """The threads BLAKE3 runs on beside SHA-256, a new file's fsync runs on while it is still
    hashed, and directories are fsynced on (started on first use, shared by every store).
    Eight, because fsyncs of several paths wait on the disk together: a journalling file system
    commits them at once (~3x faster for one put's six paths)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="mwp-blobs")
        return _pool


class _Digests:
    """SHA-256 and BLAKE3 of the same bytes, fed chunk by chunk.

    Both digests are needed on every write and every read, and both hashers release the GIL:
    a large chunk is hashed with BLAKE3 on a pool thread while SHA-256 (the slower of the two)
    runs on the caller's, so the pair costs about what SHA-256 alone does. BLAKE3 runs
    single-threaded (the other core is busy with SHA-256)."""

    __slots__ = ("b3", "sha")

    def __init__(self) -> None:
        self.sha = hashlib.sha256()
        self.b3 = blake3.blake3()

    def update(self, chunk: bytes) -> None:
        """Hash ``chunk`` with both digests before returning."""
        if len(chunk) < _SIDE_BY_SIDE_FROM:
            self.sha.update(chunk)
            self.b3.update(chunk)
            return
        pending = _threads().submit(self.b3.update, chunk)
        try:
            self.sha.update(chunk)
        except BaseException:
            if not pending.cancel():
                wait([pending])  # never leave the other half running behind an error
            raise
        if pending.cancel():  # no thread was free to start it (a busy machine): do it here
            self.b3.update(chunk)
        else:
            pending.result()  # returns (or raises) once the other half is done

    def ref(self, size: int) -> BlobRef:
        """The reference of the content hashed so far (``size`` bytes)."""
        return BlobRef(sha256="sha256:" + self.sha.hexdigest(), b3=self.b3.hexdigest(), size=size)


def _chunks(source: IO[bytes]) -> Iterator[bytes]:
    while True:
        chunk = source.read(CHUNK_SIZE)
        if not chunk:
            return
        yield chunk


def fsync_path(path: Path) -> None:
    """fsync a file or a directory, by name."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_all(paths: Iterable[Path]) -> None:
    """fsync every path, side by side; raises the first failure once all are done."""
    paths = list(paths)
    if len(paths) == 1:
        fsync_path(paths[0])
    elif paths:  # list() waits for every fsync and raises the first failure
        list(_threads().map(fsync_path, paths))


#: ``O_TMPFILE`` where the platform defines it (Linux); whether the file system takes it is
#: learnt on the first write (``BlobStore._unnamed``).
_O_TMPFILE: int = getattr(os, "O_TMPFILE", 0)
#: What ``open(O_TMPFILE)`` fails with on a file system (or kernel) without it.
_NO_TMPFILE = frozenset({errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL})


class _NewFile:
    """One file the store writes: its bytes, their fsync, and giving it its final name.

    The file is unnamed (``O_TMPFILE`` in ``blobs/tmp/``) until ``place`` links it onto its
    content address, so a crash never leaves a stray file and no name ever shows bytes that are
    not yet durable; without ``O_TMPFILE`` (``unnamed=False``) it is a named temporary file in
    ``blobs/tmp/`` renamed into place, the same otherwise. With ``durable`` each write is
    followed by an fsync on a pool thread when none is running, so the disk writes back the
    first bytes while the later ones are still being hashed; ``finish`` waits for the bytes to
    be durable."""

    def __init__(self, directory: Path, *, durable: bool, unnamed: bool) -> None:
        self._directory = directory
        self._durable = durable
        self._pending: Future[None] | None = None
        self._dirty = False
        self.unnamed = False
        self._path: Path | None = None
        if unnamed:
            try:
                self.fd = os.open(directory, _O_TMPFILE | os.O_WRONLY, 0o600)
                self.unnamed = True
                return
            except OSError as error:
                if error.errno not in _NO_TMPFILE:
                    raise
        fd, name = tempfile.mkstemp(dir=directory, prefix="put-")
        self.fd, self._path = fd, Path(name)

    def write(self, chunk: bytes | memoryview) -> None:
        """Write all of ``chunk``; start an fsync of what is written when none is running."""
        view = memoryview(chunk)
        while view:
            view = view[os.write(self.fd, view) :]
        if not self._durable:
            return
        if self._pending is not None and not self._pending.done():
            self._dirty = True  # the running fsync may have started before this write
            return
        if self._pending is not None:
            self._pending.result()  # raise its failure, if any
        self._pending = _threads().submit(os.fsync, self.fd)
        self._dirty = False

    def finish(self) -> None:
        """Return once every byte written is durable (at once without ``durable``)."""
        if not self._durable:
            return
        if self._pending is not None:
            pending, self._pending = self._pending, None
            if not pending.cancel():  # not cancelled: it ran, or runs; else do it here
                pending.result()
                if not self._dirty:
                    return
        os.fsync(self.fd)
        self._dirty = False

    def place(self, target: Path) -> bool:
        """Give the file the name ``target``; ``False`` (and nothing done) if it exists."""
        try:
            if self.unnamed:
                self._link(target)
            else:  # a rename, not a link: some file systems without O_TMPFILE have no links
                assert self._path is not None
                if target.exists():
                    return False
                os.replace(self._path, target)
        except FileExistsError:
            return False
        return True

    def replace(self, target: Path) -> None:
        """Give the file the name ``target`` in place of the file there, atomically."""
        if self.unnamed:
            # a named link first, since only a rename replaces atomically
            self._path = self._directory / f"put-{os.urandom(8).hex()}"
            self.unnamed = False
            self._link(self._path)
        assert self._path is not None
        os.replace(self._path, target)

    def _link(self, target: Path) -> None:
        # linkat(AT_SYMLINK_FOLLOW) of /proc/self/fd/N names an O_TMPFILE file without the
        # privilege AT_EMPTY_PATH needs; os.link only calls linkat when given a directory fd.
        proc = os.open("/proc/self/fd", os.O_RDONLY)
        try:
            os.link(str(self.fd), target, src_dir_fd=proc, follow_symlinks=True)
        finally:
            os.close(proc)

    def close(self) -> None:
        """Close the file (after any fsync still running) and remove a temporary name."""
        if self._pending is not None:
            wait([self._pending])  # never close a descriptor a pool thread still uses
            self._pending = None
        os.close(self.fd)
        if self._path is not None:
            self._path.unlink(missing_ok=True)

    def __enter__(self) -> _NewFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _missing(ref: BlobRef, name: str | None) -> ArtifactIntegrityError:
    return ArtifactIntegrityError(
        ref.sha256,
        "blob-missing",
        f"its blob {ref.b3[:2]}/{ref.b3} is gone",
        name=name,
        details={"b3": ref.b3},
    )


class BlobStore:
    """The content-addressed blob directory of one sandbox (``DIR/blobs``).

    ``durable=False`` skips the fsyncs (tests, throw-away demos); the writes stay atomic.
    Safe to share between threads: every write goes through its own temporary file, and renames
    and ``sync`` are serialized by a lock.
    """

    def __init__(self, root: Path | str, *, durable: bool = True) -> None:
        self.root = Path(root)
        self.durable = durable
        self._tmp = self.root / "tmp"
        self._index = self.root / "sha256"
        self._ready = False
        #: Whether new files are written unnamed (``O_TMPFILE``); cleared when the file system
        #: refuses it, so later writes go straight to a named temporary file.
        self._unnamed = _O_TMPFILE != 0 and os.path.isdir("/proc/self/fd")
        #: Serializes placing files with the bookkeeping of directory fsyncs.
        self._sync_lock = threading.Lock()
        #: Directories holding an entry a deferred ``put`` made and no fsync has covered yet.
        self._unsynced_dirs: dict[Path, None] = {}
        #: Fan-out directories whose own entry (in ``blobs/`` or ``blobs/sha256/``) is known
        #: durable: a new file in one needs only that directory fsynced, not its parent too.
        self._durable_dirs: set[Path] = set()
        #: Fan-out directories that join ``_durable_dirs`` once the pending fsyncs are done.
        self._unsynced_fanouts: dict[Path, None] = {}
        #: Whether the entries of ``blobs/`` (in its parent) and ``blobs/sha256/`` are known
        #: durable (the first write of each store fsyncs them).
        self._root_durable = False

    def _prepare(self) -> None:
        # Directories are made on the first write only, so reading (verify-log) changes nothing.
        if not self._ready:
            self._tmp.mkdir(parents=True, exist_ok=True)
            self._index.mkdir(exist_ok=True)
            self._ready = True

    # ------------------------------------------------------------------ layout

    def blob_path(self, b3: str) -> Path:
        """Where the content with BLAKE3 digest ``b3`` lives: ``blobs/<b3[:2]>/<b3>``."""
        if not _HEX64.fullmatch(b3):
            raise ValueError(f"{b3!r} is not a 64-hex BLAKE3 digest")
        return self.root / b3[:2] / b3

    def _index_path(self, sha256: str) -> Path:
        if not is_sha256_id(sha256):
            raise ValueError(f"{sha256!r} is not a 'sha256:<64 hex>' content hash")
        hexdigest = sha256[len("sha256:") :]
        return self._index / hexdigest[:2] / hexdigest

    def uri(self, ref: BlobRef) -> str:
        """A retrieval URI for a manifest (``file://``). A hint for people, never identity."""
        return self.blob_path(ref.b3).resolve().as_uri()

    # ------------------------------------------------------------------ writing

    def put(
        self,
        source: bytes | bytearray | memoryview | os.PathLike[str] | BinaryIO,
        *,
        defer_sync: bool = False,
    ) -> BlobRef:
        """Store content and return its reference; idempotent.

        ``source`` is the content itself, a path (``pathlib.Path`` or another ``os.PathLike``)
        of a file to stream in, or a binary stream read chunk by chunk. A plain ``str`` is
        refused: it is ambiguous between a path and text. With ``defer_sync`` the content is
        durable only after the next ``sync()`` (see the module docstring).
        """
        defer = defer_sync and self.durable
        if isinstance(source, bytes | bytearray | memoryview):
            data = bytes(source)
            return self._put_stream([data], defer)
        if isinstance(source, str):
            raise TypeError("put() takes bytes, a Path or a binary stream, not str")
        if isinstance(source, os.PathLike):
            path = Path(source)
            with path.open("rb") as stream:
                return self._put_stream(_chunks(stream), defer)
        if hasattr(source, "read"):
            return self._put_stream(_chunks(source), defer)
        raise TypeError(f"cannot store a {type(source).__name__}")

    def sync(self) -> None:
        """Make every deferred ``put`` durable: fsync the directories holding its new entries
        (side by side; its bytes were fsynced before they were named). A no-op when nothing
        waits; on failure what waits stays remembered."""
        with self._sync_lock:
            _fsync_all(self._unsynced_dirs)
            self._durable_dirs.update(self._unsynced_fanouts)
            self._root_durable = self._root_durable or self.root.parent in self._unsynced_dirs
            self._unsynced_dirs.clear()
            self._unsynced_fanouts.clear()

    @property
    def unsynced(self) -> tuple[Path, ...]:
        """The directories whose new entries a deferred ``put`` left for ``sync`` to fsync."""
        with self._sync_lock:
            return tuple(self._unsynced_dirs)

    def _new_file(self) -> _NewFile:
        out = _NewFile(self._tmp, durable=self.durable, unnamed=self._unnamed)
        if self._unnamed and not out.unnamed:
            self._unnamed = False  # this file system has no O_TMPFILE: stop asking
        return out

    def _put_stream(self, chunks: Iterable[bytes], defer: bool) -> BlobRef:
        self._prepare()
        digests = _Digests()
        size = 0
        with self._new_file() as blob:
            for chunk in chunks:
                blob.write(chunk)  # written first, so that its fsync runs while it is hashed
                digests.update(chunk)
                size += len(chunk)
            ref = digests.ref(size)
            index = self._index_path(ref.sha256)
            entry = f"{ref.b3} {ref.size}\n".encode("ascii")
            try:
                index_done = index.read_bytes() == entry
            except FileNotFoundError:
                index_done = False
            if index_done:
                blob.finish()
                self._place([(blob, self.blob_path(ref.b3), self.root)], defer)
                return ref
            with self._new_file() as index_file:
                index_file.write(entry)  # its fsync runs beside the blob's last one
                blob.finish()
                index_file.finish()
                # The blob goes first, so an index entry never names content that is not there.
                self._place(
                    [(blob, self.blob_path(ref.b3), self.root), (index_file, index, self._index)],
                    defer,
                )
            return ref

    def _place(self, files: list[tuple[_NewFile, Path, Path]], defer: bool) -> None:
        """Name each written, durable file by its target (making the fan-out directory below
        ``top``), then fsync the directories holding new entries, or with ``defer`` leave them
        for ``sync``. A file already there is replaced, and that directory fsynced at once: a
        durable log entry may name it, so the replacement must not wait."""
        with self._sync_lock:
            new_dirs: dict[Path, None] = {}
            fanouts: dict[Path, None] = {}
            if not self._root_durable:
                # the first write of this store: blobs/ and blobs/sha256/ may be new too
                new_dirs.update(dict.fromkeys((self.root.parent, self.root)))
            for out, target, top in files:
                fanout = target.parent
                fanout.mkdir(exist_ok=True)
                if out.place(target):
                    new_dirs[fanout] = None
                else:
                    out.replace(target)
                    if self.durable:
                        fsync_path(fanout)
                if fanout not in self._durable_dirs:
                    new_dirs[top] = None  # its entry there may be new, or not yet durable
                    fanouts[fanout] = None
            if not self.durable:
                return
            if defer:
                self._unsynced_dirs.update(new_dirs)
                self._unsynced_fanouts.update(fanouts)
                return
            _fsync_all(new_dirs)
            self._durable_dirs.update(fanouts)
            self._root_durable = True

    def _write_index(self, ref: BlobRef) -> None:
        """Write the index entry of ``ref``, durable when this returns, unless it is right."""
        index = self._index_path(ref.sha256)
        entry = f"{ref.b3} {ref.size}\n".encode("ascii")
        try:
            if index.read_bytes() == entry:
                return
        except FileNotFoundError:
            pass
        with self._new_file() as out:
            out.write(entry)
            out.finish()
            self._place([(out, index, self._index)], defer=False)

    # ------------------------------------------------------------------ looking up

    def ref(self, sha256: str, *, name: str | None = None) -> BlobRef:
        """The reference the index holds for ``sha256`` (no content is read).

        Raises :class:`ArtifactIntegrityError` (``blob-missing``) when the store does not hold
        it, or its index entry is unreadable.
        """
        try:
            text = self._index_path(sha256).read_text("ascii")
            b3, size = text.split()
            return BlobRef(sha256=sha256, b3=b3, size=int(size))
        except (OSError, ValueError, UnicodeDecodeError):
            raise ArtifactIntegrityError(
                sha256, "blob-missing", "this store holds no content for it", name=name
            ) from None

    def __contains__(self, sha256: object) -> bool:
        return (
            isinstance(sha256, str) and is_sha256_id(sha256) and self._index_path(sha256).is_file()
        )

    def refs(self) -> Iterator[BlobRef]:
        """Every indexed blob (in no particular order); unreadable entries are skipped."""
        for entry in self._index.glob("*/*"):
            try:
                yield self.ref("sha256:" + entry.name)
            except ArtifactIntegrityError:
                continue

    # ------------------------------------------------------------------ reading

    def open(self, sha256: str, *, name: str | None = None) -> BlobReader:
        """A streaming reader that verifies as it goes (see :class:`BlobReader`)."""
        ref = self.ref(sha256, name=name)
        try:
            handle = self.blob_path(ref.b3).open("rb")
        except OSError:
            raise _missing(ref, name) from None
        return BlobReader(handle, ref, name=name)

    def get(self, sha256: str, *, name: str | None = None) -> bytes:
        """The whole content, returned only after its size and SHA-256 (the protocol identity
        the manifest signs, §13.1) verified; the BLAKE3 address is what found the file, and
        ``verify`` checks it.

        For large Artifacts prefer :meth:`copy_to` or :meth:`open`. ``name`` (the Artifact ID,
        say) is put into the error so that a refusal names the Artifact.
        """
        ref = self.ref(sha256, name=name)
        if ref.size > WHOLE_READ_MAX:  # stream it, never holding more than one chunk extra
            buffer = bytearray()
            with self.open(sha256, name=name) as reader:
                for chunk in reader:
                    buffer += chunk
            return bytes(buffer)
        try:
            with self.blob_path(ref.b3).open("rb") as handle:
                content = handle.read(ref.size + 1)
        except OSError:
            raise _missing(ref, name) from None
        # One byte more than the size proves the end; the hash is checked on the caller's
        # thread: a second digest here would only re-prove the file's local name.
        BlobReader(io.BytesIO(), ref, name=name).check_identity(content)
        return content

    def verify(self, sha256: str, *, name: str | None = None) -> BlobRef:
        """Re-hash the stored content (streaming) and return its reference, or raise."""
        with self.open(sha256, name=name) as reader:
            for _chunk in reader:
                pass
        return reader.ref

    def copy_to(self, sha256: str, destination: Path | str, *, name: str | None = None) -> BlobRef:
        """Stream verified content to ``destination``; it appears only once fully verified.

        The copy goes to a temporary file beside ``destination`` and is renamed into place
        after the last digest check, so a tampered blob never produces a destination file.
        """
        target = Path(destination)
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        try:
            with os.fdopen(fd, "wb") as out, self.open(sha256, name=name) as reader:
                for chunk in reader:
                    out.write(chunk)
                ref = reader.ref
            os.replace(tmp_name, target)
            return ref
        finally:
            Path(tmp_name).unlink(missing_ok=True)

    # ------------------------------------------------------------------ maintenance

    def reindex(self) -> list[str]:
        """Rebuild the index from the blobs themselves (after a crash between blob and index).

        Every blob is re-hashed; one whose BLAKE3 digest no longer matches its file name is not
        indexed and is reported. Returns the problems found (empty when all is well).
        """
        self._prepare()
        problems: list[str] = []
        for directory in sorted(self.root.glob("[0-9a-f][0-9a-f]")):
            for path in sorted(directory.iterdir()):
                if not _HEX64.fullmatch(path.name):
                    continue
                digests = _Digests()
                size = 0
                with path.open("rb") as stream:
                    for chunk in _chunks(stream):
                        digests.update(chunk)
                        size += len(chunk)
                if digests.b3.hexdigest() != path.name:
                    problems.append(f"blob {directory.name}/{path.name} does not hash to its name")
                    continue
                self._write_index(digests.ref(size))
        return problems


class BlobReader:
    """Reads one blob in chunks, hashing as it goes.

    The final bytes are returned only after the end of the file was reached and both digests
    and the size matched; any mismatch raises :class:`ArtifactIntegrityError` instead (a blob
    longer than its size fails as soon as the extra bytes appear). Bytes returned by earlier
    reads are provisional until that last read succeeds: a consumer that must never act on
    unverified bytes uses :meth:`BlobStore.get` or :meth:`BlobStore.copy_to`.
    """

    def __init__(self, handle: BinaryIO, ref: BlobRef, *, name: str | None = None) -> None:
        self.ref = ref
        self.name = name
        self._handle = handle
        self._digests = _Digests()
        self._seen = 0
        self._done = False

    def read(self, size: int = CHUNK_SIZE) -> bytes:
        """Up to ``size`` verified-so-far bytes; ``b""`` at the (verified) end."""
        if self._done:
            return b""
        want = CHUNK_SIZE if size is None or size < 0 else size
        # Never read past the declared size by more than one byte: that byte proves the end.
        want = min(want, self.ref.size - self._seen) or 1
        chunk = self._handle.read(want)
        self._seen += len(chunk)
        if self._seen > self.ref.size:
            self._fail("size-mismatch", "the stored file is longer than the content it indexes")
        self._digests.update(chunk)
        if self._seen == self.ref.size:
            if self._handle.read(1):
                self._fail("size-mismatch", "the stored file is longer than the content it indexes")
            self._finish()
        elif not chunk:
            self._fail(
                "size-mismatch",
                f"the stored file is truncated ({self._seen} of {self.ref.size} bytes)",
            )
        return chunk

    def check_identity(self, content: bytes) -> None:
        """Verify ``content``, read whole (with at most one byte past the indexed size): the
        size, then its SHA-256 against the identity (``get``; ``read`` checks both digests)."""
        if len(content) > self.ref.size:
            self._fail("size-mismatch", "the stored file is longer than the content it indexes")
        if len(content) < self.ref.size:
            self._fail(
                "size-mismatch",
                f"the stored file is truncated ({len(content)} of {self.ref.size} bytes)",
            )
        sha = "sha256:" + hashlib.sha256(content).hexdigest()
        if sha != self.ref.sha256:
            self._fail("sha256-mismatch", f"the stored content hashes to {sha}", found=sha)
        self._seen = len(content)
        self._done = True

    def _finish(self) -> None:
        sha = "sha256:" + self._digests.sha.hexdigest()
        if sha != self.ref.sha256:
            self._fail("sha256-mismatch", f"the stored content hashes to {sha}", found=sha)
        b3 = self._digests.b3.hexdigest()
        if b3 != self.ref.b3:
            self._fail("blake3-mismatch", f"the stored content's BLAKE3 digest is {b3}", found=b3)
        self._done = True

    def _fail(self, reason: str, problem: str, *, found: str | None = None) -> None:
        self.close()
        details: dict[str, Any] = {"b3": self.ref.b3, "expectedSize": self.ref.size}
        if found is not None:
            details["found"] = found
        raise ArtifactIntegrityError(
            self.ref.sha256, reason, problem, name=self.name, details=details
        )

    def __iter__(self) -> Iterator[bytes]:
        while True:
            chunk = self.read(CHUNK_SIZE)
            if not chunk:
                return
            yield chunk

    def close(self) -> None:
        """Close the file (idempotent)."""
        self._handle.close()

    def __enter__(self) -> BlobReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
