"""Bytes (.json / .json.gz) -> :class:`~tracereader._events.Trace` columns.

The entry point of loading, and with its helpers the only code that knows raw
Chrome-trace keys. Loading has three paths that produce identical columns:

* **fast** (``trace.parser == "fast"``, :mod:`tracereader._fast`): msgspec
  decodes the memory-mapped ``traceEvents`` array piece by piece into small
  gc-free structs, in forked processes for big files. A numeric arg written
  as a string (ROCm's ``"stream": "0x0"``) stays on this path; a value the
  structs refuse (a float ``pid``, a non-string ``name``) sends only its
  piece of about 4 MB through the tolerant per-event rules below.
* **tolerant** (``trace.parser == "tolerant"``, :mod:`tracereader._tolerant`):
  when msgspec refuses the bytes (raw control characters in strings, invalid
  UTF-8, ``NaN`` tokens, a lone surrogate escape) the stdlib ``json``
  module, which accepts all of those, decodes the text, and every fix is
  written to ``trace.repairs``.
* **stdlib** (``trace.parser == "stdlib"``): the tolerant path, taken at once
  where msgspec is not installed (a GPU machine that only records). msgspec is
  imported only when a trace is loaded, so ``import tracereader`` never needs it.

All paths feed the same :class:`~tracereader._columns.Columns` builder, and
every path keeps times exact to the ns: absolute µs ``ts`` with a ns fraction
(torch about 2.2-2.3, beyond a float64's precision) are read a second time as
text. A GPU event whose ``pid`` is not a device number (``"GPU 0"``, ``1.5``,
``2**64 - 1``) is skipped, a lone surrogate in a name becomes U+FFFD, and
``baseTimeNanoseconds`` is ignored where adding it to ``ts`` that are
absolute already would pass the int64 range; each is listed in
``trace.repairs``.
Anything that is not a trace raises :class:`TraceError` with one line naming
the file and the reason.
"""

from __future__ import annotations

import mmap
import os
import zlib
from collections.abc import Collection
from pathlib import Path

from ._columns import Buffer, TraceError, extra_columns, skip_space
from ._events import Trace
from ._tolerant import load_tolerant

__all__ = ["TraceError", "load"]

#: Bytes inflated per zlib call when reading .json.gz.
INFLATE_BYTES = 64 << 20
#: Uncompressed files at least this big are memory-mapped instead of read.
MMAP_BYTES = 1 << 20

_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"


# --------------------------------------------------------------------------- bytes
def _read_bytes(source: str | os.PathLike[str] | bytes) -> tuple[Buffer, str]:
    """Return the (gunzipped) JSON bytes and a label naming the input.

    Big uncompressed files are memory-mapped rather than read: the decoder
    then works on the page cache directly, with no copy of the file.
    """
    data: Buffer
    if isinstance(source, (bytes, bytearray, memoryview)):
        data, label = bytes(source), "<bytes>"
    else:
        label = str(source)
        try:
            data = _map_or_read(Path(source))
        except FileNotFoundError:
            raise TraceError(f"{label}: no such file") from None
        except IsADirectoryError:
            raise TraceError(f"{label}: is a directory, not a trace file") from None
        except OSError as exc:
            raise TraceError(f"{label}: cannot read ({exc.strerror or exc})") from None
    if data[:2] == _GZIP_MAGIC:
        data = _gunzip(data, label)
    if data[:3] == _BOM:
        data = data[3:]
    start = skip_space(data)
    if start == len(data):
        raise TraceError(f"{label}: empty file")
    if data[start : start + 1] not in (b"{", b"["):
        raise TraceError(f"{label}: not a JSON trace (starts with {data[start : start + 8]!r})")
    return data, label


def _map_or_read(path: Path) -> Buffer:
    with path.open("rb") as fh:
        if os.fstat(fh.fileno()).st_size < max(MMAP_BYTES, 1) or fh.read(2) == _GZIP_MAGIC:
            fh.seek(0)
            return fh.read()
        mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    if hasattr(mapped, "madvise"):
        mapped.madvise(mmap.MADV_SEQUENTIAL)
    return mapped


def _gunzip(data: Buffer, label: str) -> bytearray:
    """Decompress every gzip member; a cut-off stream is an error, not a partial trace.

    The output grows in one ``bytearray`` (extended in place), so the peak is
    the JSON text once, not the twice a one-shot ``zlib.decompress`` needs to
    join its blocks.
    """
    out, rest = bytearray(), data
    try:
        while rest:
            inflater = zlib.decompressobj(wbits=31)
            while not inflater.eof:
                piece = inflater.decompress(rest, INFLATE_BYTES)
                rest = inflater.unconsumed_tail
                if not piece and not rest and not inflater.eof:
                    raise TraceError(f"{label}: truncated gzip data (the file was cut off)")
                out += piece
            rest = inflater.unused_data.lstrip(b"\x00")
    except zlib.error as exc:
        raise TraceError(f"{label}: corrupt gzip data ({exc})") from None
    return out


# --------------------------------------------------------------------------- entry point
def load(
    source: str | os.PathLike[str] | bytes,
    *,
    workers: int | None = None,
    extra_args: bool | Collection[str] = True,
) -> Trace:
    """Load a torch.profiler (Kineto) Chrome trace into columns.

    Parameters
    ----------
    source
        A path to a ``.json`` or ``.json.gz`` file (gzip is detected from the
        first two bytes, not the name), or the raw bytes of one.
    workers
        Processes that decode a big file (over ``PARALLEL_BYTES``) in parallel:
        each forked worker takes a contiguous share of the event array and
        sends its columns back. ``None``: one per CPU, at most
        ``MAX_WORKERS``; ``1``: decode in this process only. Forking is used
        on Linux, from a process with a single Python thread (not in Jupyter);
        elsewhere, and whenever a worker fails, the parent decodes everything
        itself, with the same result. Without msgspec, one process decodes.
    extra_args
        Read the args beyond ``correlation`` and ``External id``: the columns
        of ``trace.extra`` (volumes, registers, Python ids, shapes...), the
        ``[memory]`` events and the args of communication events. ``False``
        skips them, unread, for a quicker load where only the ids are needed
        (``tracereader summary``): ``trace.extra`` is then empty, and
        ``trace.memory_events`` and ``trace.comm_args`` too. Names of
        ``trace.extra`` columns (``("registers", "input_dims")``) keep those
        columns only, and the memory and communication events: the other args
        are skipped unread (``tracereader report``). ``grid`` and ``grid_xyz``
        come together, as do ``block`` and ``block_xyz``; an unknown name
        raises :class:`ValueError`. ``trace.repairs`` names only what was read.

    Returns
    -------
    Trace
        One row per complete (``ph: "X"``) event, sorted by start time.
        ``trace.parser`` says which path decoded it (``"fast"``,
        ``"tolerant"``, or ``"stdlib"`` where msgspec is not installed) and
        ``trace.repairs`` lists every fix that was needed.

    Raises
    ------
    TraceError
        With a one-line reason naming the input when it is not a trace: a
        missing file, a directory, an empty or cut-off file, JSON nested too
        deeply (100,000 levels, say), JSON without ``traceEvents``, or a
        trace without a single complete event.

    Examples
    --------
    >>> trace = load("tests/data/h200/train_eager.json.gz")  # doctest: +SKIP
    >>> trace.parser, len(trace), trace.repairs  # doctest: +SKIP
    ('fast', 5012, [])
    """
    extra_columns(extra_args)  # an unknown column name fails before the file is read
    data, label = _read_bytes(source)
    try:
        from ._fast import NotFast, load_fast
    except ModuleNotFoundError as exc:  # no msgspec (the recording machine, say)
        if exc.name != "msgspec":
            raise
        return load_tolerant(data, label, parser="stdlib", extra_args=extra_args)
    holder = [data]
    del data
    try:
        return load_fast(holder, label, workers, extra_args)
    except NotFast:
        return load_tolerant(holder[0], label, extra_args=extra_args)
