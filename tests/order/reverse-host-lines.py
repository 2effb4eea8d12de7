#!/usr/bin/env python3
"""Copy an XSpace capture with the events of every /host:CPU line in reverse
order (the other bytes as they were): such lines are out of the order the
runtime's stream nests in, so they take its sorted path.

Usage: reverse-host-lines.py IN OUT   (prints how many lines it reversed)"""
import sys


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def enc_varint(v):
    out = bytearray()
    while True:
        c = v & 0x7F
        v >>= 7
        out.append(c | (0x80 if v else 0))
        if not v:
            return bytes(out)


def fields(b):
    """(number, wire type, raw bytes of the whole field, payload) in order."""
    i = 0
    while i < len(b):
        start = i
        tag, i = varint(b, i)
        num, wt = tag >> 3, tag & 7
        if wt == 0:
            _, i = varint(b, i)
            payload = None
        elif wt == 1:
            i += 8
            payload = None
        elif wt == 5:
            i += 4
            payload = None
        elif wt == 2:
            n, i = varint(b, i)
            payload = b[i:i + n]
            i += n
        else:
            raise SystemExit("unsupported wire type %d" % wt)
        yield num, wt, b[start:i], payload


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
