"""Kafka's own message schema files (the ``*.json`` in its jars), as oracles for our layouts.

The schema files of the pinned releases (:data:`peer.kafka.VERSIONS`) come from their fetched
classpaths (:func:`peer.kafka.fetch`); a record type the workbench knows that the newest pinned
release does not have is listed in :data:`FOLLOWS` with the release whose layout it follows, and
that release's one jar is fetched from Maven Central (:func:`peer.kafka.fetch_jar`), never taken
from whatever happens to sit in a cache.

Examples
--------
>>> json_key("KRaftVersion")
'kRaftVersion'
>>> snake_upper("ZkMigrationStateRecord")
'ZK_MIGRATION_STATE_RECORD'
"""

from __future__ import annotations

import json
import re
import zipfile
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from peer.kafka import VERSIONS

#: The pinned releases, newest first; layouts are compared with the newest.
NEWEST_PIN = next(iter(VERSIONS))

#: Where schema files sit inside Kafka's jars.
_SCHEMA_DIRS = ("common/message/", "common/metadata/", "message/")


class Follows(NamedTuple):
    """A record type the newest pinned release lacks: the release (and jar) whose layout we model."""

    artifact: str
    release: str
    why: str


#: Record types the workbench decodes that Kafka 4.3.1 (the newest pin) does not have, each with
#: the one Kafka release on Maven Central whose schema file our layout must equal (checked by
#: ``tests/formats/test_messages.py``, which also checks that 4.3.1 really lacks them).
FOLLOWS: dict[str, Follows] = {
    "UnregisterControllerRecord": Follows(
        "kafka-metadata", "4.4.0", "metadata record 29 (controller removal), first released in 4.4.0"),
    "ShareGroupPartitionMetadataKey": Follows(
        "kafka-group-coordinator", "4.0.0",
        "share group preview record type 9 of 4.0 (removed in 4.1; 3.9 had another layout)"),
    "ShareGroupPartitionMetadataValue": Follows(
        "kafka-group-coordinator", "4.0.0",
        "share group preview record type 9 of 4.0 (removed in 4.1; 3.9 had InitializedTopics/DeletingTopics)"),
}

#: Tagged fields our layout has beyond the newest pin's (so the pin's records decode alike),
#: with the release whose schema file holds them all.
NEWER_TAGGED_FIELDS: dict[str, tuple[Follows, tuple[str, ...]]] = {
    "StreamsGroupMetadataValue": (
        Follows("kafka-group-coordinator", "4.4.0", "streams group plugin description epochs, tags 2 and 3"),
        ("StoredDescriptionTopologyEpoch", "FailedDescriptionTopologyEpoch"),
    ),
}

#: Record types in no Kafka release on Maven Central (checked absent from the pinned jars and from
#: the newest release's group coordinator jar): kept so that logs written by builds of Kafka's
#: development line still decode.
NEVER_RELEASED: dict[str, str] = {
    "StreamsGroupPartitionMetadataKey": "KIP-1071 development record type 18, removed before 4.1.0",
    "StreamsGroupPartitionMetadataValue": "KIP-1071 development record type 18, removed before 4.1.0",
}
NEVER_RELEASED_CHECKED_IN = Follows("kafka-group-coordinator", "4.4.0", "the newest release on Maven Central")

#: Modelled differently on purpose: our layout has a field Kafka reads outside its schema.
#: name -> the fields of ours that Kafka's file does not have.
MODELLED_WITH_EXTRA_FIELDS: dict[str, tuple[str, ...]] = {
    "EndTxnMarker": ("Version",),  # the int16 version prefix of the marker value, as a field
}


def strip_comments(text: str) -> str:
    """Kafka's schema files start with ``//`` license lines; JSON does not allow them."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))


def json_key(name: str) -> str:
    """Kafka's JSON key of a field (the first letter lower-cased)."""
    return name[:1].lower() + name[1:]


def snake_upper(name: str) -> str:
    """The ``MetadataRecordType`` constant Kafka's generator makes from a record name."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


def schema_files(jars: list[Path]) -> dict[str, tuple[str, str]]:
    """name -> (``<jar file name>!<entry>``, raw text) of every schema file in ``jars``.

    Raises
    ------
    AssertionError
        When two jars define the same name differently.
    """
    found: dict[str, tuple[str, str]] = {}
    for jar in sorted(jars):
        if jar.name.endswith(("-sources.jar", "-javadoc.jar")):
            continue
        with zipfile.ZipFile(jar) as z:
            for entry in z.namelist():
                if not (entry.endswith(".json") and entry.startswith(_SCHEMA_DIRS)):
                    continue
                text = z.read(entry).decode("utf-8")
                try:
                    data = json.loads(strip_comments(text))
                except ValueError:
                    continue
                if not isinstance(data, dict) or "name" not in data or "fields" not in data:
                    continue
                name = data["name"]
                if name in found:
                    assert json.loads(strip_comments(found[name][1])) == data, (name, found[name][0], jar.name)
                    continue
                found[name] = (f"{jar.name}!{entry}", text)
    return found


@cache
def pinned_schema_files(version: str) -> dict[str, tuple[str, str]]:
    """Schema files of pinned release ``version`` (fetched from Maven Central when missing)."""
    from peer.kafka import fetch

    return schema_files(sorted(fetch(version).lib.glob("*.jar")))


@cache
def release_schema_files(artifact: str, release: str) -> dict[str, tuple[str, str]]:
    """Schema files of one jar of a release that is not pinned (fetched, then cached)."""
    from peer.kafka import fetch_jar

    return schema_files([fetch_jar(artifact, release)])


def versions_of(text: str) -> tuple[int, int]:
    """``validVersions`` of a schema file as (low, high)."""
    spec = json.loads(strip_comments(text))["validVersions"]
    lo, _, hi = str(spec).partition("-")
    return int(lo), int(hi or lo)


def _in_range(spec: str | None, version: int) -> bool:
    if spec is None or spec == "none":
        return False
    if spec.endswith("+"):
        return version >= int(spec[:-1])
    lo, _, hi = spec.partition("-")
    return int(lo) <= version <= int(hi or lo)


def _scalar_default(ftype: str, text: str | None) -> Any:
    ints = ("int8", "int16", "int32", "int64", "uint16", "uint32")
    if text is None or text == "":
        if ftype in ints:
            return 0
        return {"bool": False, "float64": 0.0, "string": "", "bytes": b"", "records": b"",
                "uuid": "AAAAAAAAAAAAAAAAAAAAAA"}[ftype]
    if text == "null":
        return None
    if ftype in ints:
        return int(text, 0)
    if ftype == "bool":
        return text.lower() == "true"
    if ftype == "float64":
        return float(text)
    return text


def kafka_defaults(text: str) -> dict[str, Any]:
    """The value of every top-level field when it is absent, by Kafka's rules for its schema file.

    Kafka's generated classes start every field at its ``default`` (``"null"`` for null), else at
    the type's zero: 0, false, ``""``, empty bytes, the zero UUID, an empty array, or a struct
    whose fields are at their defaults.
    """
    data = json.loads(strip_comments(text))
    structs = {s["name"]: s for s in data.get("commonStructs", [])}

    def default(f: dict[str, Any]) -> Any:
        ftype = f["type"]
        if ftype.startswith("[]"):
            return None if f.get("default") == "null" else []
        if ftype in ("bool", "float64", "string", "bytes", "records", "uuid") or ftype.startswith(("int", "uint")):
            return _scalar_default(ftype, f.get("default"))
        if f.get("default") == "null":
            return None
        sub = f.get("fields") or structs[ftype]["fields"]
        return {json_key(s["name"]): default(s) for s in sub}

    return {json_key(f["name"]): default(f) for f in data["fields"]}


def field_versions(text: str) -> dict[str, str]:
    """JSON key -> ``versions`` of every top-level field of a schema file."""
    return {json_key(f["name"]): f.get("versions", "0+") for f in json.loads(strip_comments(text))["fields"]}


def present_in(text: str, version: int) -> list[str]:
    """JSON keys of the top-level fields that ``version`` of the record has."""
    return [k for k, spec in field_versions(text).items() if _in_range(spec, version)]
