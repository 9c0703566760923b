"""A quick pure-Python pass over a bundle's binary files to list what cannot be read."""

from __future__ import annotations

from workbench.bundle import Bundle
from workbench.formats.problems import Problem, ProblemLog


def scan_problems(bundle: Bundle, *, deep: bool = False) -> list[Problem]:
    """Read the metadata logs (and with ``deep`` every segment) and return their problems.

    Batch headers and CRCs are checked for every file read; metadata records are decoded too.
    Nothing is kept but the problems, so memory stays flat whatever the bundle's size.
    """
    import fsspec

    from workbench.formats.batch import read_batches
    from workbench.formats.metadata import decode_metadata_record

    files = bundle.metadata_files
    if deep:
        # a headers-only extract (<base>.log.headers) holds no records to read
        files = files + [a for a in bundle.of_kind("segment") if a not in files and a.path.endswith(".log")]
    problems: list[Problem] = []
    for artifact in files:
        path = str(bundle.root / artifact.path)
        log = ProblemLog(path)
        is_metadata = artifact in bundle.metadata_files
        try:
            with fsspec.open(path, "rb") as f:
                for batch in read_batches(f, path=path, problems=log):
                    records = batch.records(log)
                    if is_metadata and not batch.is_control:
                        for record in records:
                            if record.value is None:
                                continue
                            md = decode_metadata_record(record.value)
                            if md.error:
                                log.report(batch.position, "decode_error", f"offset {record.offset}: {md.error}")
        except OSError as exc:
            log.report(0, "unreadable", str(exc))
        problems.extend(log.problems)
    return problems
