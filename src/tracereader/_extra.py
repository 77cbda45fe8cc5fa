"""``Trace.extra``: per-event args as int64 columns, each built when first read.

The loader finds these args (``bytes``, ``registers``, ``python_id``...) on a
few kinds of events each, so it keeps them sparse: groups of trace rows with
one array of values per arg. A column becomes a full ``-1``-filled array the
first time it is read and is kept from then on. Loading, linking and most
analyses never read them, so they pay neither the time nor the memory of ten
full columns.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np
import numpy.typing as npt

__all__ = ["ArgColumns", "Group"]

_Ints = npt.NDArray[np.int64]
#: Rows of some events, and one array of values per arg (as long as the rows).
Group = tuple[_Ints, dict[str, _Ints]]


class ArgColumns(Mapping[str, _Ints]):
    """Read-only mapping: arg name -> int64 column over the trace's rows (-1: absent).

    ``groups`` hold trace rows. Every name in ``names`` is a key, whether or
    not any event carries that arg.
    """

    def __init__(self, names: tuple[str, ...], groups: list[Group], n_rows: int) -> None:
        self._names = names
        self._groups = groups
        self._n_rows = n_rows
        self._built: dict[str, _Ints] = {}

    def __getitem__(self, name: str) -> _Ints:
        column = self._built.get(name)
        if column is None:
            if name not in self._names:
                raise KeyError(name)
            column = np.full(self._n_rows, -1, dtype=np.int64)
            for rows, values in self._groups:
                if name in values:
                    column[rows] = values[name]
            self._built[name] = column
            if len(self._built) == len(self._names):
                self._groups = []  # every column is built: the sparse form can go
        return column

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __repr__(self) -> str:
        built = ", ".join(self._built) or "none yet"
        return f"<ArgColumns {', '.join(self._names)}; built: {built}>"
