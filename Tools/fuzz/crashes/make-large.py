#!/usr/bin/env python3
"""Writes the reproducers whose harm grows with their size (see README.md), too large to keep:

    python3 Tools/fuzz/crashes/make-large.py OUT

OUT/journal-log-nested-frames             a 256 KiB log whose first frame fails its checksum and
                                          where a plausible frame starts every 24 bytes
OUT/plan-json-relationship-chain.json     10,000 entities, each with a relationship to the next
"""
import json
import os
import struct
import sys


def nested_frames(size, step=24):
    """A log whose frames overlap: every `step` bytes a `failed` record's frame that runs to the
    end of the file, with a wrong checksum."""
    out = bytearray(size)
    out[0:8] = b"CMLG" + struct.pack("<HH", 1, 0)
    at = 8
    while at + 21 <= size:
        length = min(size - at - 8, 1 << 20)
        out[at:at + 21] = struct.pack("<IIBqI", length, 0, 5, 0, length - 13)
        at += step
    return bytes(out)


def relationship_chain(count):
    entities = []
    for index in range(count):
        entity = {"name": f"E{index}", "source": {"table": "s"}, "destination": {"table": f"d{index}"}}
        if index + 1 < count:
            entity["relationships"] = {"r": {"from": "r", "to": f"E{index + 1}"}}
        entities.append(entity)
    return json.dumps({"entities": entities}, separators=(",", ":")).encode()


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    files = {
        "journal-log-nested-frames": nested_frames(256 << 10),
        "plan-json-relationship-chain.json": relationship_chain(10000),
    }
    for name, data in files.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        print(f"{out}/{name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
