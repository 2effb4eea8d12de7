#!/usr/bin/env python3
"""Read a capture's raw figures without xplanefs, for checking the expected
values that the tests assert on the real captures of ../shared/captures.

It shares no code with xplanefs: a protobuf wire decoder of its own (the
standard library only), over the field numbers of
../shared/reference/capture-format.md (§2 XPlane, §3.1, §3.5, §3.6 HloProto,
§4 /host:metadata).  Times are nanoseconds from the earliest line base of
the capture (SPEC §4: line.timestamp_ns + floor(offset_ps / 1000)).

usage: python3 tests/figures/read-xspace.py WHAT CAPTURE [PLANE]   (CAPTURE may be gzip'd)
  events       every event of the plane (/host:CPU without PLANE), line by
               line: line, start_ns, end_ns, name, stats (name=value ...)
  planes       every plane: name, then its stats (name=value ...)
  allocations  every buffer allocation of every module of /host:metadata:
               module (name(program id)), index, size, color, and the
               flags set of parameter, live_out, thread_local, constant, tuple,
               donated (a parameter's number in input_output_alias)
"""
import gzip
import struct
import sys


def fields(buf):
    """(field number, wire type, value) of a message's bytes, in order."""
    i, n = 0, len(buf)
    while i < n:
        key, i = varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 2:
            ln, i = varint(buf, i)
            v, i = buf[i:i + ln], i + ln
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            sys.exit("wire type %d at byte %d: not a protobuf message" % (wt, i))
        yield num, wt, v


def varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return v, i


def signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def stat(buf, names):
    """An XStat (§2.5) as (name, value); a ref_value is the string it names."""
    mid, val = 0, None
    for num, wt, v in fields(buf):
        if num == 1:
            mid = v
        elif num == 2:
            val = struct.unpack("<d", v)[0]
        elif num == 3:
            val = v
        elif num == 4:
            val = signed(v)
        elif num == 5:
            val = v.decode("utf-8", "replace")
        elif num == 6:
            val = v
        elif num == 7:
            val = names.get(v, "?")
    return names.get(mid, "?"), val


def plane(buf):
    """An XPlane (§2.2) as a dict: name, lines, event metadata, stats."""
    p = {"name": "", "lines": [], "emd": {}, "smd": {}, "stats": []}
    for num, wt, v in fields(buf):
        if num == 2:
            p["name"] = v.decode("utf-8", "replace")
        elif num == 3:
            p["lines"].append(v)
        elif num in (4, 5):
            key, val = 0, b""
            for n2, _, v2 in fields(v):
                if n2 == 1:
                    key = signed(v2)
                elif n2 == 2:
                    val = v2
            p["emd" if num == 4 else "smd"][key] = val
        elif num == 6:
            p["stats"].append(v)
    names = {}
    for k, v in p["smd"].items():
        names[k] = next((v2.decode("utf-8", "replace") for n2, _, v2 in fields(v) if n2 == 2), "")
    p["names"] = names
    emd = {}
    for k, v in p["emd"].items():
        name, stats = "", []
        for n2, _, v2 in fields(v):
            if n2 == 2:
                name = v2.decode("utf-8", "replace")
            elif n2 == 5:
                stats.append(stat(v2, names))
        emd[k] = (name, stats)
    p["emd"] = emd
    p["stats"] = [stat(s, names) for s in p["stats"]]
    return p


def line(buf):
    """An XLine (§2.3): name, timestamp_ns, events."""
    name, ts, evs = "", 0, []
    for num, wt, v in fields(buf):
        if num == 2:
            name = v.decode("utf-8", "replace")
        elif num == 3:
            ts = signed(v)
        elif num == 4:
            evs.append(v)
    return name, ts, evs


def space(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        return [plane(v) for num, wt, v in fields(f.read()) if num == 1]


def shown(v):
    if isinstance(v, bytes):
        return "<%d bytes>" % len(v)
    if isinstance(v, float):
        return repr(v)
    return str(v)


def events(planes, want):
    lines = [(p, line(b)) for p in planes for b in p["lines"]]
    base = min((ts for _, (_, ts, _) in lines), default=0)
    for p, (lname, ts, evs) in lines:
        if p["name"] != want:
            continue
        for ev in evs:
            mid, off, dur, st = 0, 0, 0, []
            for num, wt, v in fields(ev):
                if num == 1:
                    mid = signed(v)
                elif num == 2:
                    off = signed(v)
                elif num == 3:
                    dur = signed(v)
                elif num == 4:
                    st.append(stat(v, p["names"]))
            name, mst = p["emd"].get(mid, ("?", []))
            t0 = ts + off // 1000 - base
            t1 = ts + (off + dur) // 1000 - base
            kv = " ".join("%s=%s" % (k, shown(v)) for k, v in mst + st)
            print("\t".join([lname, str(t0), str(t1), name, kv]))


def aliased(module):
    """The parameter numbers of an HloModuleProto's input_output_alias (§3.5)."""
    nums = set()
    for num, wt, v in fields(module):
        if num != 8:
            continue
        for n2, _, entry in fields(v):
            if n2 == 1:  # parameter_number, 0 when absent (proto3)
                nums.add(next((v3 for n3, w3, v3 in fields(entry) if n3 == 2 and w3 == 0), 0))
    return nums


def allocations(planes):
    for p in planes:
        if p["name"] != "/host:metadata":
            continue
        for mid, (name, st) in sorted(p["emd"].items()):
            hlo = next((v for k, v in st if k == "Hlo Proto" and isinstance(v, bytes)), None)
            if hlo is None:
                continue
            donated = set()
            for num, wt, mod in fields(hlo):
                if num == 1:  # HloProto.hlo_module
                    donated |= aliased(mod)
            for num, wt, ba in fields(hlo):
                if num != 3:  # HloProto.buffer_assignment
                    continue
                for n2, _, al in fields(ba):
                    if n2 != 3:  # BufferAssignmentProto.buffer_allocations
                        continue
                    a = {1: 0, 2: 0, 3: 0, 5: 0, 6: 0, 7: 0, 8: 0, 11: 0, 12: 0}
                    for n3, w3, v3 in fields(al):
                        if n3 in a and w3 == 0:
                            a[n3] = v3
                    flags = [f for f, k in (("parameter", 5), ("live_out", 7), ("thread_local", 3),
                                            ("constant", 12), ("tuple", 11)) if a[k]]
                    if a[5] and a[6] in donated:
                        flags.append("donated")
                    print("\t".join([name, str(a[1]), str(a[2]), str(a[8]), ",".join(flags)]))


def main():
    what = sys.argv[1] if len(sys.argv) > 2 else ""
    if what not in ("events", "planes", "allocations") or len(sys.argv) > (4 if what == "events" else 3):
        sys.exit(__doc__)
    planes = space(sys.argv[2])
    if what == "events":
        events(planes, sys.argv[3] if len(sys.argv) > 3 else "/host:CPU")
    elif sys.argv[1] == "planes":
        for p in planes:
            print("\t".join([p["name"]] + ["%s=%s" % (k, shown(v)) for k, v in p["stats"]]))
    else:
        allocations(planes)


main()
