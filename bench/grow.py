#!/usr/bin/python3
"""Grow a capture to about TARGET bytes, for the benchmark, where
`xplane-mkcapture --scale` cannot (its scale adds only a few host events).

Usage: /usr/bin/python3 bench/grow.py PB_DIR SEED TARGET_BYTES OUT [--module-instructions N]

Steps are repeated at the wire level: every line of every plane is copied k
times; copy j is the same XLine message followed by a new `id` and a
`timestamp_ns` moved j spans later (protobuf's last-one-wins rule for scalar
fields overrides the first ones), where a span is the seed's whole time range
plus 1 ms.  So the capture holds k runs of the seed's steps one after the other,
with the same event mix (device kernels, host events, allocator events),
less each line's set-up (events before its first execute-family event: the
device_put of the state, whose buffers are never freed), so that in use stays
steady from copy to copy as in a real long training run.

--module-instructions N adds one more module to /host:metadata: an xla.HloProto
of N instructions (a chain of elementwise ops with op_name and source lines),
one logical buffer each, a temp allocation and its heap-simulator trace, built
with python3-protobuf from proto/hlo.proto (PB_DIR holds hlo_pb2.py).  It is
never executed, so it is decoded by files of its own module directory and by
whatever reads every module (modules/index.tsv, the choice of focus).
"""
import sys


def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def read_varint(buf, i):
    shift = n = 0
    while True:
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return n, i
        shift += 7


def fields(buf):
    """Yield (field, wiretype, value or body, start, end)."""
    i = 0
    while i < len(buf):
        start = i
        key, i = read_varint(buf, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = read_varint(buf, i)
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 2:
            n, i = read_varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d at %d" % (wt, start))
        yield f, wt, v, start, i


def signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def line_range(line):
    """(id, timestamp_ns, end_ns) of an XLine body."""
    lid = ts = 0
    end_ps = 0
    for f, wt, v, _, _ in fields(line):
        if f == 1 and wt == 0:
            lid = signed(v)
        elif f == 3 and wt == 0:
            ts = signed(v)
        elif f == 4 and wt == 2:
            off = dur = 0
            for g, gwt, gv, _, _ in fields(v):
                if g == 2 and gwt == 0:
                    off = signed(gv)
                elif g == 3 and gwt == 0:
                    dur = signed(gv)
            end_ps = max(end_ps, off + dur)
    return lid, ts, ts + end_ps // 1000


def event_names(plane_body):
    names = {}
    for f, wt, v, _, _ in fields(plane_body):
        if f == 4 and wt == 2:
            key, name = None, b""
            for g, gwt, gv, _, _ in fields(v):
                if g == 1 and gwt == 0:
                    key = signed(gv)
                elif g == 2 and gwt == 2:
                    for h, hwt, hv, _, _ in fields(gv):
                        if h == 2 and hwt == 2:
                            name = hv
            names[key] = name
    return names


def steady(line, names):
    """The line without its set-up: on a line that executes modules, the
    events that start before its first execute-family event (device_put of
    the state and the like) are left out of the copies, so that copies repeat
    the steps and not the set-up (whose buffers are never freed)."""
    evs = []
    for f, wt, v, s, e in fields(line):
        if f == 4 and wt == 2:
            md = off = 0
            for g, gwt, gv, _, _ in fields(v):
                if g == 1 and gwt == 0:
                    md = signed(gv)
                elif g == 2 and gwt == 0:
                    off = signed(gv)
            evs.append((off, names.get(md, b""), s, e))
    starts = [o for o, n, _, _ in evs if b"Execute" in n or n.startswith(b"PjitFunction(")]
    if not starts:
        return line
    t = min(starts)
    drop = {(s, e) for o, n, s, e in evs if o < t}
    return b"".join(line[s:e] for f, wt, v, s, e in fields(line) if (s, e) not in drop)


def big_module(pb_dir, n, program_id):
    sys.path.insert(0, pb_dir)
    import hlo_pb2
    name = "jit_big_step"
    hp = hlo_pb2.HloProto()
    m = hp.hlo_module
    m.name = name
    m.entry_computation_name = "main.%d" % n
    m.id = program_id
    m.entry_computation_id = 1
    comp = m.computations.add()
    comp.name = m.entry_computation_name
    comp.id = 1
    ops = ("add", "multiply", "exponential", "fusion", "dot", "transpose", "convert")
    ba = hp.buffer_assignment
    trace = ba.heap_simulator_traces.add()
    trace.whole_module_simulation = True
    offset = 0
    temp = ba.buffer_allocations.add()
    temp.index = 0
    live = []
    for i in range(n):
        ins = comp.instructions.add()
        ins.id = i + 1
        ins.name = "%s.%d" % (ops[i % len(ops)], i + 1)
        ins.opcode = "parameter" if i == 0 else ops[i % len(ops)]
        if i:
            ins.operand_ids.append(i)
        ins.shape.element_type = 16  # BF16
        dims = (8, 128, 64 + (i % 7) * 64)
        ins.shape.dimensions.extend(dims)
        ins.shape.layout.minor_to_major.extend((2, 1, 0))
        md = ins.metadata
        md.op_name = "jit(big_step)/jvp(layer_%d)/%s" % (i // 50, ins.opcode)
        md.source_file = "/app/model.py"
        md.source_line = 100 + i % 400
        size = 2 * dims[0] * dims[1] * dims[2]
        lb = ba.logical_buffers.add()
        lb.id = i
        lb.size = size
        lb.defined_at.instruction_name = ins.name
        lb.defined_at.instruction_id = ins.id
        a = temp.assigned.add()
        a.logical_buffer_id = i
        a.offset = offset
        a.size = size
        offset += size
        ev = trace.events.add()
        ev.kind = 0
        ev.buffer_id = i
        ev.computation_name = comp.name
        ev.instruction_name = ins.name
        live.append((i, ins.name))
        if len(live) > 40:
            j, jn = live.pop(0)
            ev = trace.events.add()
            ev.kind = 1
            ev.buffer_id = j
            ev.computation_name = comp.name
            ev.instruction_name = ins.name
    temp.size = offset
    comp.root_id = n
    seq = m.schedule.sequences[1]
    seq.instruction_ids.extend(range(1, n + 1))
    return name, hp.SerializeToString()


def stat_md_ids(plane):
    ids = {}
    for f, wt, v, _, _ in fields(plane):
        if f == 5 and wt == 2:
            key = None
            for g, gwt, gv, _, _ in fields(v):
                if g == 1 and gwt == 0:
                    key = signed(gv)
                elif g == 2 and gwt == 2:
                    for h, hwt, hv, _, _ in fields(gv):
                        if h == 2 and hwt == 2:
                            ids[hv.decode()] = key
    return ids


def ld(f, body):
    return varint(f << 3 | 2) + varint(len(body)) + body


def vi(f, v):
    return varint(f << 3) + varint(v)


def module_entry(plane, name, hlo, program_id):
    ids = stat_md_ids(plane)
    ev_ids = [signed(v2) for f, wt, v, _, _ in fields(plane) if f == 4 and wt == 2
              for g, gwt, v2, _, _ in fields(v) if g == 1 and gwt == 0]
    new_id = max(ev_ids + [0]) + 1
    extra = b""
    next_st = max(list(ids.values()) + [0]) + 1
    for nm in ("Hlo Proto", "program_id"):
        if nm not in ids:
            ids[nm] = next_st
            extra += ld(5, vi(1, next_st) + ld(2, vi(1, next_st) + ld(2, nm.encode())))
            next_st += 1
    md = (vi(1, new_id) + ld(2, ("%s(%d)" % (name, program_id)).encode()) +
          ld(5, vi(1, ids["Hlo Proto"]) + ld(6, hlo)) +
          ld(5, vi(1, ids["program_id"]) + vi(3, program_id)))
    return extra + ld(4, vi(1, new_id) + ld(2, md))


def main():
    args = sys.argv[1:]
    ninstr = 0
    if "--module-instructions" in args:
        i = args.index("--module-instructions")
        ninstr = int(args[i + 1])
        del args[i:i + 2]
    pb_dir, seed, target, out = args[0], args[1], int(args[2]), args[3]
    data = open(seed, "rb").read()
    planes, t0, t1 = [], None, None
    line_bytes = 0
    for f, wt, v, s, e in fields(data):
        if f == 1 and wt == 2:
            lines, rest = [], []
            name = b""
            names = event_names(v)
            for g, gwt, gv, gs, ge in fields(v):
                if g == 3 and gwt == 2:
                    lid, ts, end = line_range(gv)
                    lines.append((gv, lid, ts, steady(gv, names)))
                    t0 = ts if t0 is None else min(t0, ts)
                    t1 = end if t1 is None else max(t1, end)
                    line_bytes += len(lines[-1][3])
                else:
                    if g == 2 and gwt == 2:
                        name = gv
                    rest.append(v[gs:ge])
            planes.append((name, lines, b"".join(rest)))
        else:
            planes.append((None, None, data[s:e]))
    span = (t1 - t0) + 1000000 if t0 is not None else 0
    k = max(1, round((target - (len(data) - line_bytes)) / max(1, line_bytes)))
    module = big_module(pb_dir, ninstr, 990000001) if ninstr else None
    with open(out, "wb") as o:
        for name, lines, rest in planes:
            if lines is None:
                o.write(rest)
                continue
            parts = [rest]
            if module and name == b"/host:metadata":
                parts.append(module_entry(rest, module[0], module[1], 990000001))
            for copy in range(k):
                for body, lid, ts, rep in lines:
                    if copy:
                        body = rep + vi(1, (lid + copy * 1000003) & ((1 << 64) - 1)) + \
                            vi(3, (ts + copy * span) & ((1 << 64) - 1))
                    parts.append(ld(3, body))
            o.write(ld(1, b"".join(parts)))
    print("grew %s: %d copies of its lines, span %d ns%s -> %s" %
          (seed, k, span, ", module of %d instructions" % ninstr if ninstr else "", out))


if __name__ == "__main__":
    main()
