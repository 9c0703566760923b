"""Recording of unreadable input: the rows of the ``problems`` table.

Forensic input is often damaged. Readers never stop at the first bad byte: they report a
:class:`Problem` (file, byte position, kind, detail) to a :class:`ProblemLog` and carry on.
In strict mode the same report raises :class:`~workbench.errors.CorruptDataError` instead.

Kinds are short stable identifiers (``truncated``, ``crc_mismatch``, ``zero_fill``,
``bad_length``, ``unknown_magic``, ``unknown_codec``, ``decompress_error``,
``record_error``, ``decode_error``, ``garbage``, ``unknown_version``, ``out_of_range``, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workbench.errors import CorruptDataError

#: The instants a table can hold, in epoch milliseconds: 1970-01-01 to 2262-04-11 23:47:16.854 UTC,
#: the last instant pandas (``datetime64[ns]``) represents, so that every table converts with
#: ``toPandas``. A time read from a file outside it loads as null with an ``out_of_range`` problem.
TIMESTAMP_RANGE_MS = (0, (2**63 - 1) // 1_000_000)


def timestamp_in_range(ms: float | int | None) -> bool:
    """Whether a millisecond time read from a file can enter a table (see :data:`TIMESTAMP_RANGE_MS`).

    >>> timestamp_in_range(1_795_000_000_000), timestamp_in_range(2**62), timestamp_in_range(float("inf"))
    (True, False, False)
    """
    return ms is not None and TIMESTAMP_RANGE_MS[0] <= ms <= TIMESTAMP_RANGE_MS[1]


@dataclass(frozen=True)
class Problem:
    """One thing that could not be read.

    Attributes
    ----------
    path : str
        File the problem was found in ("" for in-memory bytes).
    position : int
        Byte position in the file (line number for text inputs, stated in ``detail``).
    kind : str
        Short stable identifier of the problem class.
    detail : str
        Human-readable explanation: what was expected and what was found.
    """

    path: str
    position: int
    kind: str
    detail: str


@dataclass
class ProblemLog:
    """Collects problems for one reader run; raises instead when ``strict``.

    Examples
    --------
    >>> log = ProblemLog("seg.log")
    >>> log.report(120, "crc_mismatch", "stored 0x1 computed 0x2")
    >>> log.report(120, "crc_mismatch", "stored 0x1 computed 0x2")   # met again by the record reader
    >>> [(p.position, p.kind) for p in log.problems]
    [(120, 'crc_mismatch')]
    """

    path: str = ""
    strict: bool = False
    problems: list[Problem] = field(default_factory=list)
    _seen: set[tuple[int, str, str]] = field(default_factory=set, repr=False)

    def report(self, position: int, kind: str, detail: str) -> None:
        """Record a problem at ``position`` or raise it in strict mode.

        The same problem (position, kind and detail) is recorded once, however many readers
        of the same bytes (batch header, then records) meet it.
        """
        if self.strict:
            raise CorruptDataError(self.path, position, kind, detail)
        key = (position, kind, detail)
        if key in self._seen:
            return
        self._seen.add(key)
        self.problems.append(Problem(self.path, position, kind, detail))

    def take_since(self, n: int) -> list[Problem]:
        """Remove and return the problems recorded after the first ``n``, so a reader that decodes ahead can
        report them again in file order.

        >>> log = ProblemLog("seg.log")
        >>> log.report(10, "truncated", "x")
        >>> [p.position for p in log.take_since(0)], len(log)
        ([10], 0)
        """
        taken = self.problems[n:]
        del self.problems[n:]
        for p in taken:
            self._seen.discard((p.position, p.kind, p.detail))
        return taken

    def __len__(self) -> int:
        return len(self.problems)
