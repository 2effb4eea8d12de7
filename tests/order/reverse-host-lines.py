#!/usr/bin/env python3
"""Copy an XSpace capture with the events of every /host:CPU line in reverse
order (the other bytes as they were): such lines are out of the order the
runtime's stream nests in, so they take its sorted path.

Usage: reverse-host-lines.py IN OUT   (prints how many lines it reversed)"""
import os
import sys

# the wire reader and writer bench/grow.py already has
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from grow import fields as grow_fields, varint as enc_varint  # noqa: E402


def fields(b):
    """(number, wire type, raw bytes of the whole field, payload of a LEN)."""
    for num, wt, v, start, end in grow_fields(b):
        yield num, wt, b[start:end], v if wt == 2 else None


def len_field(num, payload):
    return enc_varint(num << 3 | 2) + enc_varint(len(payload)) + payload


def reverse_line(line):
    fs = list(fields(line))
    events = [f[2] for f in fs if f[0] == 4 and f[1] == 2]
    out, done = [], False
    for num, wt, raw, _ in fs:
        if num == 4 and wt == 2:
            if not done:
                out.extend(reversed(events))
                done = True
        else:
            out.append(raw)
    return b"".join(out), len(events) > 1


def main():
    data = open(sys.argv[1], "rb").read()
    out, nrev = [], 0
    for num, wt, raw, payload in fields(data):
        if num == 1 and wt == 2:
            pf = list(fields(payload))
            name = next((p[3] for p in pf if p[0] == 2 and p[1] == 2), b"")
            if name == b"/host:CPU":
                parts = []
                for pnum, pwt, praw, ppay in pf:
                    if pnum == 3 and pwt == 2:
                        line, rev = reverse_line(ppay)
                        nrev += rev
                        parts.append(len_field(3, line))
                    else:
                        parts.append(praw)
                raw = len_field(1, b"".join(parts))
        out.append(raw)
    open(sys.argv[2], "wb").write(b"".join(out))
    print(nrev)


if __name__ == "__main__":
    main()
