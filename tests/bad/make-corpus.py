#!/usr/bin/env python3
"""Write the bad-input corpus into tests/bad/cases/ (python3 stdlib only).

Every case is a small XSpace (or bare HloProto) built with the tiny protobuf
encoder below from one valid base capture, then broken in one way.  What
xplanefs must do with each is in expect.tsv; tests/bad/test-bad.sh checks it.

    python3 tests/bad/make-corpus.py          # rewrite tests/bad/cases/
The output is deterministic; review `git diff --stat tests/bad/cases` after.
"""
import os
import random
import struct
import sys
import zlib

# ---- wire encoder ---------------------------------------------------------

def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)

def tag(num, wt):
    return varint((num << 3) | wt)

def f_varint(num, v):
    return tag(num, 0) + varint(v)

def f_bytes(num, b):
    if isinstance(b, str):
        b = b.encode()
    return tag(num, 2) + varint(len(b)) + b

def f_double(num, d):
    return tag(num, 1) + struct.pack('<d', d)

def f_packed(num, vals):
    return f_bytes(num, b''.join(varint(v) for v in vals))

def msg(*fields):
    return b''.join(fields)

# ---- HloProto ---------------------------------------------------------------

F32 = 11
U8 = 6

def shape(et=F32, dims=(256,), tuple_shapes=()):
    return msg(f_varint(2, et), f_packed(3, dims) if dims else b'',
               *[f_bytes(4, s) for s in tuple_shapes])

def instr(name, opcode, iid, shp, operands=(), op_name='', param=None):
    md = msg(f_bytes(1, opcode), f_bytes(2, op_name), f_bytes(3, 'train.py'), f_varint(4, 7)) \
        if op_name else b''
    return msg(f_bytes(1, name), f_bytes(2, opcode), f_bytes(3, shp),
               f_bytes(7, md) if md else b'',
               f_varint(9, param) if param is not None else b'',
               f_varint(35, iid), f_packed(36, operands) if operands else b'')

def logical_buffer(lid, size, iname, iid, color=0):
    return msg(f_varint(1, lid), f_varint(2, size),
               f_bytes(3, msg(f_bytes(2, iname), f_varint(4, iid))), f_varint(4, color))

def assigned(lid, offset, size):
    return msg(f_varint(1, lid), f_varint(2, offset), f_varint(3, size))

def allocation(index, size, assigned_list, param=None, live_out=False, color=0):
    return msg(f_varint(1, index), f_varint(2, size),
               f_varint(5, 1) if param is not None else b'',
               f_varint(6, param) if param is not None else b'',
               f_varint(7, 1) if live_out else b'', f_varint(8, color),
               *[f_bytes(9, a) for a in assigned_list])

def heap_event(kind, bid, iname='', share=None):
    return msg(f_varint(1, kind), f_varint(2, bid), f_bytes(3, 'main'), f_bytes(4, iname),
               f_varint(5, share) if share is not None else b'')

def heap_trace(events, alloc_index):
    return msg(*[f_bytes(1, e) for e in events], f_varint(3, alloc_index))

def hlo_proto(name='jit_f', mid=1, *, lbs=None, allocs=None, traces=None, extra_instr=(),
              shp=None, ba=True, schedule=None, tname='t0', top='jit(f)/jvp(mul)'):
    s = shp if shp is not None else shape()
    instrs = [instr('p0', 'parameter', 1, s, param=0),
              instr(tname, 'multiply', 2, s, (1, 1), op_name=top),
              instr('add', 'add', 3, s, (2, 1), op_name='jit(f)/transpose(add)'),
              *extra_instr]
    comp = msg(f_bytes(1, 'main'), *[f_bytes(2, i) for i in instrs], f_varint(5, 1),
               f_varint(6, 3))
    seq = msg(f_packed(1, schedule if schedule is not None else [1, 2, 3]))
    sched = msg(f_bytes(1, msg(f_varint(1, 1), f_bytes(2, seq))))
    module = msg(f_bytes(1, name), f_bytes(2, 'main'), f_bytes(3, comp), f_varint(5, mid),
                 f_varint(6, 1), f_bytes(7, sched))
    if lbs is None:
        lbs = [logical_buffer(0, 1024, 'p0', 1), logical_buffer(1, 1024, tname, 2),
               logical_buffer(2, 1024, 'add', 3)]
    if allocs is None:
        allocs = [allocation(0, 1024, [assigned(0, 0, 1024)], param=0),
                  allocation(1, 1024, [assigned(2, 0, 1024)], live_out=True),
                  allocation(2, 1024, [assigned(1, 0, 1024)])]
    if traces is None:
        traces = [heap_trace([heap_event(0, 1, tname), heap_event(1, 1, 'add')], 2)]
    bam = msg(*[f_bytes(1, l) for l in lbs], *[f_bytes(3, a) for a in allocs],
              *[f_bytes(4, t) for t in traces])
    return msg(f_bytes(1, module), f_bytes(3, bam) if ba else b'')

# ---- XSpace -----------------------------------------------------------------

def stat(mid, kind, v):
    body = f_varint(1, mid)
    if kind == 'd':
        body += f_double(2, v)
    elif kind == 'u':
        body += f_varint(3, v)
    elif kind == 'i':
        body += f_varint(4, v)
    elif kind == 's':
        body += f_bytes(5, v)
    elif kind == 'b':
        body += f_bytes(6, v)
    elif kind == 'r':
        body += f_varint(7, v)
    return body

def event_md(eid, name, stats=()):
    return msg(f_varint(1, eid), f_bytes(2, name), *[f_bytes(5, s) for s in stats])

def stat_md(sid, name):
    return msg(f_varint(1, sid), f_bytes(2, name))

def map_entry(key, value):
    return msg(f_varint(1, key), f_bytes(2, value))

def event(mid, offset_ps, dur=0, stats=()):
    return msg(f_varint(1, mid), f_varint(2, offset_ps), f_varint(3, dur),
               *[f_bytes(4, s) for s in stats])

def line(lid, name, ts, events):
    return msg(f_varint(1, lid), f_bytes(2, name), f_varint(3, ts),
               *[f_bytes(4, e) for e in events], f_varint(9, 10**9))

def plane(pid, name, lines=(), emd=(), smd=(), stats=(), raw_emd=(), raw_smd=()):
    return msg(f_varint(1, pid), f_bytes(2, name), *[f_bytes(3, l) for l in lines],
               *[f_bytes(4, map_entry(e[0], e[1] if isinstance(e[1], bytes) else event_md(*e[1])))
                 for e in emd],
               *[f_bytes(4, r) for r in raw_emd],
               *[f_bytes(5, map_entry(k, stat_md(k, n))) for k, n in smd],
               *[f_bytes(5, r) for r in raw_smd],
               *[f_bytes(6, s) for s in stats])

def metadata_plane(modules):
    """modules: list of (name, program_id, hlo_bytes)."""
    emd = []
    for i, (name, pid, hlo) in enumerate(modules):
        st = [stat(1, 'b', hlo)]
        if pid is not None:
            st.append(stat(2, 'u', pid))
        emd.append((i + 1, (i + 1, name, st)))
    return plane(99, '/host:metadata', emd=emd, smd=[(1, 'Hlo Proto'), (2, 'program_id')])

CPU_SMD = ['allocator_name', 'bytes_allocated', 'bytes_reserved', 'bytes_available',
           'peak_bytes_in_use', 'requested_bytes', 'allocation_bytes', 'addr', 'tf_op',
           'region_type', 'data_type', 'shape']
S = {n: i + 1 for i, n in enumerate(CPU_SMD)}

def alloc_stats(in_use, req, addr, allocator='GPU_0_bfc', peak=None, avail=1 << 30):
    return [stat(S['allocator_name'], 's', allocator), stat(S['bytes_allocated'], 'i', in_use),
            stat(S['bytes_reserved'], 'i', 0), stat(S['bytes_available'], 'i', avail),
            stat(S['peak_bytes_in_use'], 'i', peak if peak is not None else in_use),
            stat(S['requested_bytes'], 'i', req), stat(S['allocation_bytes'], 'i', req),
            stat(S['addr'], 'u', addr)]

def cpu_events(allocator='GPU_0_bfc'):
    a = allocator
    return [event(3, 0, 5_000_000, []),  # jit_f:XLA GPU module
            event(1, 1_000_000, 0, alloc_stats(1024, 1024, 0x7000, a)),
            event(1, 2_000_000, 0, alloc_stats(2048, 1024, 0x8000, a)),
            event(2, 3_000_000, 0, alloc_stats(1024, 1024, 0x8000, a)),
            event(2, 4_000_000, 0, alloc_stats(0, 1024, 0x7000, a))]

def cpu_plane(events=None, ts=1000, extra_lines=(), emd=None):
    if emd is None:
        emd = [(1, (1, 'MemoryAllocation')), (2, (2, 'MemoryDeallocation')),
               (3, (3, 'jit_f(1):XLA GPU module'))]
    return plane(1, '/host:CPU',
                 lines=[line(100, 'python', ts, events if events is not None else cpu_events()),
                        *extra_lines],
                 emd=emd, smd=[(v, k) for k, v in S.items()])

def device_plane(kernel_stats=None, name='/device:GPU:0'):
    """One kernel event; with kernel_stats, those stats on it and the kernel
    stat names (4 hlo_module, 5 program_id, 6 module_name) in the metadata."""
    extra = [] if kernel_stats is None else [(4, 'hlo_module'), (5, 'program_id'),
                                             (6, 'module_name')]
    return plane(0, name,
                 lines=[line(1, 'Stream #1', 2000, [event(1, 20_000, 1000, kernel_stats or ())])],
                 emd=[(1, (1, 'fusion.1'))],
                 smd=[(1, 'memory_size'), (2, 'device_vendor'), (3, 'core_count')] + extra,
                 stats=[stat(1, 'u', 80 << 30), stat(2, 's', 'Nvidia'), stat(3, 'i', 132)])

def xspace(planes, errors=(), warnings=(), hosts=('h',)):
    return msg(*[f_bytes(1, p) for p in planes], *[f_bytes(2, e) for e in errors],
               *[f_bytes(3, w) for w in warnings], *[f_bytes(4, h) for h in hosts])

def base(modules=None, cpu=None, dev=True):
    """dev: True (device_plane()), False (none) or a device plane's bytes."""
    if modules is None:
        modules = [('jit_f(1)', 1, hlo_proto())]
    planes = [metadata_plane(modules), cpu if cpu is not None else cpu_plane()]
    if dev is True:
        planes.append(device_plane())
    elif dev:
        planes.append(dev)
    return xspace(planes)

def nested_shape(depth):
    s = shape(F32, (4,))
    for _ in range(depth):
        s = msg(f_varint(2, 13), f_bytes(4, s))
    return s

def cut_inner(outer_builder, inner, cut):
    """The inner message cut to `cut` bytes, framed consistently outside."""
    return outer_builder(inner[:cut])

# ---- gzip -------------------------------------------------------------------

def gz(data):
    """One gzip member (RFC 1952) with a fixed header (no name, mtime 0, OS
    unknown), so that the bytes depend on zlib's deflate alone."""
    z = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = z.compress(data) + z.flush()
    return (b'\x1f\x8b\x08\x00' + b'\x00' * 4 + b'\x02\xff' + body +
            struct.pack('<II', zlib.crc32(data), len(data) & 0xFFFFFFFF))

def gz_cases(c, good, hlo):
    """gzip'd captures (SPEC §2), read as the file they decompress to:
    good ones under either name, and streams cut, corrupt, of the wrong
    content or followed by junk."""
    z = gz(good)
    c['gz-ok-base.xplane.pb.gz'] = z
    c['gz-ok-noext.xplane.pb'] = z  # told by its first bytes, not its name
    c['gz-ok-hlo.hlo.pb.gz'] = gz(hlo)
    half = len(good) // 2
    c['gz-two-members.xplane.pb.gz'] = gz(good[:half]) + gz(good[half:]) + b'\x00' * 8
    c['gz-trunc-half.xplane.pb.gz'] = z[:len(z) // 2]
    c['gz-trunc-trailer.xplane.pb.gz'] = z[:-4]
    c['gz-trunc-hlo.hlo.pb.gz'] = gz(hlo)[:40]
    c['gz-magic-only.xplane.pb.gz'] = z[:2]
    b = bytearray(z)
    b[-8] ^= 0x01  # the CRC's first byte
    c['gz-bad-crc.xplane.pb.gz'] = bytes(b)
    b = bytearray(z)
    b[2] = 7  # compression method: not deflate
    c['gz-bad-method.xplane.pb.gz'] = bytes(b)
    c['gz-trailing-junk.xplane.pb.gz'] = z + b'junk'
    rnd = random.Random(5)
    c['gz-garbage.xplane.pb.gz'] = gz(bytes(rnd.randrange(256) for _ in range(4096)))
    c['gz-empty.xplane.pb.gz'] = gz(b'')
    c['gz-twice.xplane.pb.gz'] = gz(z)
    c['gz-json.xplane.pb.gz'] = gz(b'{"displayTimeUnit": "ns", "traceEvents": []}')
    c['gz-viewer.trace.json.gz'] = gz(b'{"displayTimeUnit": "ns", "traceEvents": []}')
    # 32 MiB of zeros in 32 KiB: decompressed, then refused at its first byte
    c['gz-zeros-32m.xplane.pb.gz'] = gz(b'\x00' * (32 << 20))

# ---- the cases ----------------------------------------------------------------

def cases():
    c = {}
    good = base()
    c['ok-base.xplane.pb'] = good
    c['ok-hlo.hlo.pb'] = hlo_proto()

    # Whole-file truncations: the outer frames run past the end.
    c['trunc-file-1.xplane.pb'] = good[:1]
    c['trunc-file-2.xplane.pb'] = good[:2]
    c['trunc-file-half.xplane.pb'] = good[:len(good) // 2]
    c['trunc-file-last.xplane.pb'] = good[:-1]
    # Truncations at each inner boundary, outer frames consistent.
    hlo = hlo_proto()
    md = metadata_plane([('jit_f(1)', 1, hlo)])
    c['trunc-plane-name.xplane.pb'] = xspace([plane(1, '/host:CPU')[:5], md])
    cpu = cpu_plane()
    ln = line(100, 'python', 1000, cpu_events())
    def cpu_with_line(lb):
        return plane(1, '/host:CPU', lines=[], smd=[(v, k) for k, v in S.items()],
                     emd=[(1, (1, 'MemoryAllocation'))]) + f_bytes(3, lb)
    c['trunc-line.xplane.pb'] = base(cpu=cpu_with_line(ln[:9]))
    ev = event(1, 1_000_000, 0, alloc_stats(1024, 1024, 0x7000))
    c['trunc-event.xplane.pb'] = base(cpu=cpu_with_line(
        line(100, 'python', 1000, [])+f_bytes(4, ev[:len(ev) - 7])))
    st = stat(S['bytes_allocated'], 'i', 1 << 40)
    c['trunc-stat.xplane.pb'] = base(cpu=cpu_with_line(
        line(100, 'python', 1000, [msg(f_varint(1, 1), f_bytes(4, st[:3]))])))
    c['trunc-event-md-entry.xplane.pb'] = base(cpu=plane(
        1, '/host:CPU', lines=[ln], raw_emd=[map_entry(1, event_md(1, 'MemoryAllocation'))[:6]]))
    c['trunc-stat-md-entry.xplane.pb'] = base(cpu=plane(
        1, '/host:CPU', lines=[ln], emd=[(1, (1, 'MemoryAllocation'))],
        raw_smd=[map_entry(2, stat_md(2, 'bytes_allocated'))[:7]]))
    c['trunc-hlo-half.xplane.pb'] = base(modules=[('jit_f(1)', 1, hlo[:len(hlo) // 2])])
    c['trunc-hlo-varint.xplane.pb'] = base(modules=[('jit_f(1)', 1, hlo + b'\x08\xff')])
    c['trunc-hlo-file.hlo.pb'] = hlo[:len(hlo) - 3]

    # Bit flips in the base capture (deterministic positions).
    rnd = random.Random(9)
    for k in range(4):
        b = bytearray(good)
        for _ in range(3):
            pos = rnd.randrange(len(b))
            b[pos] ^= 1 << rnd.randrange(8)
        c['flip-%d.xplane.pb' % k] = bytes(b)

    # Lengths and counts.
    c['len-plane-4g.xplane.pb'] = tag(1, 2) + varint(0xFFFFFFFF) + good[:40]
    c['len-plane-u64max.xplane.pb'] = tag(1, 2) + varint(2**64 - 1) + good[:40]
    c['varint-overlong.xplane.pb'] = b'\x8a' + b'\x80' * 10 + b'\x01' + good
    # A field number past 2^29 - 1 inside a plane (the plane's own walk
    # must refuse it as the reference reader does, not index it as a line).
    c['field-huge-plane.xplane.pb'] = xspace([metadata_plane([('jit_f(1)', 1, hlo_proto())]),
                                              cpu_plane() + f_bytes((1 << 32) + 3, line(7, 'x', 1000, [])),
                                              device_plane()])
    c['wiretype-group.xplane.pb'] = good + tag(7, 3)
    c['wiretype-7.xplane.pb'] = good + bytes([0x0F])
    c['field-zero.xplane.pb'] = bytes([0x02, 0x00]) + good
    c['len-event-past-line.xplane.pb'] = base(cpu=cpu_with_line(
        line(100, 'python', 1000, []) + tag(4, 2) + varint(0x7FFFFFFF) + b'\x08\x01'))
    c['hlo-packed-huge.xplane.pb'] = base(modules=[('jit_f(1)', 1, msg(
        f_bytes(1, msg(f_bytes(1, 'jit_f'), f_bytes(3, msg(f_bytes(1, 'main'), f_bytes(
            2, msg(f_bytes(1, 'x'), tag(36, 2) + varint(2**62) + b'\x01\x02'))))))))])
    # 20,000 empty planes (one named): memory per plane head is bounded.
    c['count-planes-20k.xplane.pb'] = good + b'\x0a\x00' * 20_000
    # 20,000 deallocations without stats on one line.
    c['count-events-20k.xplane.pb'] = base(cpu=cpu_plane(
        events=cpu_events() + [event(2, 5_000_000 + k)
                                for k in range(20_000)]))
    # 5,000 allocators, one allocation each, on ten lines (so that threads
    # that read some lines each hold fewer): more than a runtime holds.
    c['count-allocators-5k.xplane.pb'] = base(cpu=cpu_plane(extra_lines=[
        line(200 + j, 'pool', 1000, [event(1, 5_000_000 + k, 0,
                                           alloc_stats(1024, 1024, 0x7000,
                                                       allocator='pool_%d' % (j * 500 + k)))
                                     for k in range(500)])
        for j in range(10)]))
    c['hlo-packed-20k.xplane.pb'] = base(modules=[('jit_f(1)', 1, hlo_proto(
        shp=shape(F32, [1] * 20_000)))])

    # Metadata ids.
    c['md-dangling-event.xplane.pb'] = base(cpu=cpu_plane(events=cpu_events() + [
        event(77, 4_500_000, 0, alloc_stats(0, 1, 0x9000))]))
    c['md-dangling-stat.xplane.pb'] = base(cpu=cpu_plane(events=[
        event(1, 1_000_000, 0, [stat(55, 'i', 5)] + alloc_stats(1024, 1024, 0x7000))]))
    c['md-dangling-ref.xplane.pb'] = base(cpu=cpu_plane(events=[
        event(1, 1_000_000, 0, [stat(S['allocator_name'], 'r', 4242)] +
              alloc_stats(1024, 1024, 0x7000)[1:])]))
    # A kernel's stats: the one read (program_id, hlo_module) is checked; an
    # unknown id on a stat no file reads is for --check and errors.txt only.
    c['md-kernel-dangling-ref.xplane.pb'] = base(
        dev=device_plane([stat(4, 'r', 4242), stat(5, 'u', 1)]))
    c['md-kernel-dangling-stat.xplane.pb'] = base(
        dev=device_plane([stat(77, 'i', 3), stat(5, 'u', 1)]))
    # The same broken kernel where no answer needs the kernels (the
    # execution nests a thunk and the host names its module): the runtime
    # does not read the device plane's kernels; --check and errors.txt say.
    c['md-kernel-dangling-ref-unread.xplane.pb'] = base(
        cpu=cpu_plane(events=cpu_events() + [event(4, 4_500_000, 100_000, [])],
                      emd=[(1, (1, 'MemoryAllocation')), (2, (2, 'MemoryDeallocation')),
                           (3, (3, 'jit_f(1):XLA GPU module')), (4, (4, 'loop_fusion'))]),
        dev=device_plane([stat(4, 'r', 4242), stat(5, 'u', 1)]))
    c['md-dup-event.xplane.pb'] = base(cpu=cpu_plane(emd=[
        (1, (1, 'MemoryAllocation')), (1, (1, 'MemoryDeallocation')),
        (2, (2, 'MemoryDeallocation')), (3, (3, 'jit_f(1):XLA GPU module'))]))
    c['md-dup-stat.xplane.pb'] = base(cpu=plane(
        1, '/host:CPU', lines=[ln], emd=[(1, (1, 'MemoryAllocation')), (2, (2, 'MemoryDeallocation'))],
        smd=[(v, k) for k, v in S.items()] + [(S['bytes_allocated'], 'addr')]))
    c['md-key-mismatch.xplane.pb'] = base(cpu=plane(
        1, '/host:CPU', lines=[ln], emd=[(1, (5, 'MemoryAllocation')), (2, (2, 'MemoryDeallocation'))],
        smd=[(v, k) for k, v in S.items()]))
    c['md-negative-ids.xplane.pb'] = base(cpu=cpu_plane(events=[
        event(-1, 1_000_000, 0, [stat(-3, 'i', 5)])]))
    c['md-dup-program-id.xplane.pb'] = base(modules=[('jit_f(1)', 1, hlo), ('jit_g(1)', 1, hlo)])
    # Two device planes of one ordinal, a kernel of each at the same time
    # naming two modules, and an execution that names neither: the kernels
    # link rule takes the first plane's (jit_f(1); tests/cli checks it).
    def dev0(events):
        return plane(0, '/device:GPU:0', lines=[line(1, 'Stream #1', 2000, events)],
                     emd=[(1, (1, 'fusion.1'))],
                     smd=[(4, 'hlo_module'), (5, 'program_id'), (6, 'module_name')])
    c['dev-dup-ordinal.xplane.pb'] = xspace([
        metadata_plane([('jit_f(1)', 1, hlo), ('jit_g(2)', 2, hlo)]),
        cpu_plane(events=[event(1, 0, 5_000_000)],
                  emd=[(1, (1, '[0] PjRtStreamExecutorLoadedExecutable::Execute'))]),
        dev0([event(1, 20_000, 1000, [stat(5, 'u', 1)])]),
        # the second plane is the bigger one
        dev0([event(1, 20_000, 1000, [stat(5, 'u', 2)]),
              event(1, 900_000_000, 1000, [stat(5, 'u', 2)])])])

    # Device ordinals no capture of a few planes has (arrays per ordinal
    # must not be sized by them): the plane is listed, its kernels not read.
    for label, pname in [('u32max', '/device:GPU:4294967295'), ('minus1', '/device:GPU:-1'),
                         ('10m', '/device:GPU:10000000')]:
        c['dev-ordinal-%s.xplane.pb' % label] = base(dev=device_plane(name=pname))
    c['dev-ordinal-tpu.xplane.pb'] = base(dev=plane(
        0, '/device:TPU:4294967295',
        lines=[line(1, 'XLA Modules', 2000, [event(1, 20_000, 1000, [stat(1, 'u', 1)])])],
        emd=[(1, (1, 'jit_f(1)'))], smd=[(1, 'program_id')]))
    c['alloc-ordinal-huge.xplane.pb'] = base(cpu=cpu_plane(events=[
        event(1, 1_000_000, 0, alloc_stats(1024, 1024, 0x7000, allocator='GPU_4294967294_bfc')),
        event(2, 2_000_000, 0, alloc_stats(0, 1024, 0x7000, allocator='GPU_4294967294_bfc'))]))

    # Inconsistent buffer assignments.
    c['ba-lb-missing.xplane.pb'] = base(modules=[('jit_f(1)', 1, hlo_proto(allocs=[
        allocation(0, 1024, [assigned(999, 0, 1024)], param=0),
        allocation(1, 1024, [assigned(2, 0, 1024)], live_out=True)]))])
    c['ba-offset-past.xplane.pb'] = base(modules=[('jit_f(1)', 1, hlo_proto(allocs=[
        allocation(0, 1024, [assigned(0, 0, 1024)], param=0),
        allocation(1, 1024, [assigned(2, 0, 1024)], live_out=True),
        allocation(2, 1024, [assigned(1, 4096, 2048)])]))])
    c['ba-heap-free-unallocated.xplane.pb'] = base(modules=[('jit_f(1)', 1, hlo_proto(
        traces=[heap_trace([heap_event(1, 1, 'add'), heap_event(1, 1, 'add')], 2)]))])
    c['ba-heap-alloc-twice.xplane.pb'] = base(modules=[('jit_f(1)', 1, hlo_proto(
        traces=[heap_trace([heap_event(0, 1, 't0'), heap_event(0, 1, 't0')], 2)]))])
    c['ba-heap-share-dangling.xplane.pb'] = base(modules=[('jit_f(1)', 1, hlo_proto(
        traces=[heap_trace([heap_event(0, 1, 't0'), heap_event(2, 2, 'add', share=555),
                            heap_event(1, 77, 'add')], 2)]))])
    c['ba-heap-bad-alloc-index.xplane.pb'] = base(modules=[('jit_f(1)', 1, hlo_proto(
        traces=[heap_trace([heap_event(0, 1, 't0')], 77), heap_trace([], -1)]))])
    c['ba-heap-unknown-kind.xplane.pb'] = base(modules=[('jit_f(1)', 1, hlo_proto(
        traces=[heap_trace([heap_event(9, 1, 't0'), heap_event(-1, -1, '')], 2)]))])
    c['ba-negative-sizes.xplane.pb'] = base(modules=[('jit_f(1)', 1, hlo_proto(
        lbs=[logical_buffer(0, -5, 'p0', 1), logical_buffer(1, -(2**63), 't0', 2),
             logical_buffer(2, 1024, 'add', 3)],
        allocs=[allocation(0, -1024, [assigned(0, -8, -5)], param=0),
                allocation(1, 1024, [assigned(2, 0, 1024)], live_out=True),
                allocation(2, -(2**63), [assigned(1, 0, -(2**63))])]))])
    c['ba-huge-sizes.xplane.pb'] = base(modules=[('jit_f(1)', 1, hlo_proto(
        lbs=[logical_buffer(0, 2**63 - 1, 'p0', 1), logical_buffer(1, 2**63 - 1, 't0', 2),
             logical_buffer(2, 2**63 - 1, 'add', 3)],
        allocs=[allocation(0, 2**63 - 1, [assigned(0, 0, 2**63 - 1)], param=0),
                allocation(1, 2**63 - 1, [assigned(2, 0, 2**63 - 1)], live_out=True),
                allocation(2, 2**63 - 1, [assigned(1, 2**63 - 1, 2**63 - 1)])]))])
    c['ba-no-assignment.xplane.pb'] = base(modules=[('jit_f(1)', 1, hlo_proto(ba=False))])
    c['ba-bad-colors.xplane.pb'] = base(modules=[('jit_f(1)', 1, hlo_proto(
        lbs=[logical_buffer(0, 1024, 'p0', 1, color=-7), logical_buffer(1, 1024, 't0', 2, color=2**40),
             logical_buffer(2, 1024, 'add', 3)],
        allocs=[allocation(0, 1024, [assigned(0, 0, 1024)], param=-3, color=-7),
                allocation(1, 1024, [assigned(2, 0, 1024)], live_out=True, color=2**40),
                allocation(2, 1024, [assigned(1, 0, 1024)], color=5)]))])
    c['hlo-dangling-ids.xplane.pb'] = base(modules=[('jit_f(1)', 1, hlo_proto(
        extra_instr=[instr('x', 'custom-call', 4, shape(U8, (64,)), (404, -1), op_name='x')],
        schedule=[3, 2, 1, 999, -5]))])
    c['hlo-garbage.xplane.pb'] = base(modules=[('jit_f(1)', 1, b'\xff\xff\xff\xff\x0f' * 8)])
    c['hlo-empty.xplane.pb'] = base(modules=[('jit_f(1)', 1, b'')])
    # Messages of no bytes (issue 38): protobuf-c makes a struct for each
    # (176 bytes for an instruction of 2 bytes on the wire); a 10 MB
    # HloProto of them took 1.5 GB.  A part that would take more than 16
    # times its bytes is refused: a computation, and the head (empty
    # logical buffers, 56 bytes each).
    c['hlo-empty-instrs.xplane.pb'] = base(modules=[('jit_f(1)', 1, hlo_proto(
        extra_instr=[b''] * 40_000))])
    c['hlo-empty-instrs.hlo.pb'] = hlo_proto(extra_instr=[b''] * 40_000)
    c['hlo-empty-buffers.xplane.pb'] = base(modules=[('jit_f(1)', 1, hlo_proto(
        lbs=[logical_buffer(0, 1024, 'p0', 1), logical_buffer(1, 1024, 't0', 2),
             logical_buffer(2, 1024, 'add', 3)] + [b''] * 40_000))])
    c['hlo-deep-shape-100.xplane.pb'] = base(modules=[('jit_f(1)', 1, hlo_proto(
        shp=nested_shape(100)))])
    c['hlo-deep-shape-60.xplane.pb'] = base(modules=[('jit_f(1)', 1, hlo_proto(
        shp=nested_shape(60)))])
    c['hlo-deep-shape-5000.hlo.pb'] = hlo_proto(shp=nested_shape(5000))
    c['hlo-garbage.hlo.pb'] = b'\x0a\xff\xff\xff\xff\x0f'
    c['hlo-no-module.hlo.pb'] = msg(f_bytes(3, b''))
    # A layout copy of an entry parameter live at the peak, under the 1 MiB
    # threshold of param-layout-copy (the fuzzer found a leak on this path).
    c['dup-small-layout-copy.hlo.pb'] = hlo_proto(
        extra_instr=[instr('wrapped_transpose.1', 'transpose', 4, shape(), (1,),
                           op_name='jit(f)/jvp(transpose)')],
        schedule=[1, 4, 2, 3],
        lbs=[logical_buffer(0, 1024, 'p0', 1), logical_buffer(1, 1024, 't0', 2),
             logical_buffer(2, 1024, 'add', 3), logical_buffer(3, 1024, 'wrapped_transpose.1', 4)],
        allocs=[allocation(0, 1024, [assigned(0, 0, 1024)], param=0),
                allocation(1, 1024, [assigned(2, 0, 1024)], live_out=True),
                allocation(2, 2048, [assigned(1, 0, 1024), assigned(3, 1024, 1024)])],
        traces=[heap_trace([heap_event(0, 3, 'wrapped_transpose.1'), heap_event(0, 1, 't0'),
                            heap_event(1, 1, 'add'), heap_event(1, 3, 'add')], 2)])

    # Allocator events with missing or mistyped stats.
    c['alloc-no-stats.xplane.pb'] = base(cpu=cpu_plane(events=[
        event(1, 1_000_000), event(2, 2_000_000)]))
    c['alloc-mistyped.xplane.pb'] = base(cpu=cpu_plane(events=[
        event(1, 1_000_000, 0, [stat(S['allocator_name'], 'i', 7),
                                stat(S['bytes_allocated'], 's', 'lots'),
                                stat(S['bytes_available'], 'd', float('nan')),
                                stat(S['peak_bytes_in_use'], 'd', 1e300),
                                stat(S['requested_bytes'], 'd', -1.5),
                                stat(S['addr'], 'b', b'\x00\x01'),
                                stat(S['bytes_reserved'], 'i', -(2**63))]),
        event(2, 2_000_000, 0, [stat(S['allocator_name'], 'u', 2**64 - 1),
                                stat(S['bytes_allocated'], 'u', 2**64 - 1),
                                stat(S['addr'], 'd', float('inf'))])]))
    c['alloc-free-unallocated.xplane.pb'] = base(cpu=cpu_plane(events=[
        event(2, 1_000_000, 0, alloc_stats(0, 4096, 0xdead)),
        event(2, 2_000_000, 0, alloc_stats(0, 4096, 0xdead))]))
    c['alloc-huge.xplane.pb'] = base(cpu=cpu_plane(events=[
        event(1, 1_000_000, 0, alloc_stats(2**63 - 1, 2**63 - 1, 2**64 - 1, avail=2**63 - 1,
                                            peak=2**63 - 1)),
        event(1, 2_000_000, 0, alloc_stats(2**63 - 1, 2**63 - 1, 0, avail=2**63 - 1))]))
    # Bytes in use (allocated + reserved) past 2^63 around two executions
    # of one module: the growth between them, and compare's, overflowed int64.
    def in_use_u(in_use, addr):
        st = alloc_stats(min(in_use, 2**63 - 1), 1024, addr)
        st[2] = stat(S['bytes_reserved'], 'i', in_use - min(in_use, 2**63 - 1))
        return st
    c['alloc-in-use-2p63.xplane.pb'] = base(cpu=cpu_plane(events=[
        event(1, 500_000, 0, in_use_u(2**63 + 5, 0x7000)),
        event(3, 1_000_000, 1_000_000, []),
        event(1, 2_500_000, 0, in_use_u(2**63 - 1, 0x8000)),
        event(3, 3_000_000, 1_000_000, []),
        event(2, 4_500_000, 0, in_use_u(0, 0x8000))]))
    # jit_f(1) run twice, in use at its starts 1024 then 3072 bytes: a
    # growth of 2048 a run, for compare against a baseline whose growth is
    # unknown (a bare HloProto, a broken runtime: issue 38).
    c['ok-grows.xplane.pb'] = base(cpu=cpu_plane(events=[
        event(1, 500_000, 0, alloc_stats(1024, 1024, 0x7000)),
        event(3, 1_000_000, 1_000_000, []),
        event(1, 2_500_000, 0, alloc_stats(3072, 2048, 0x8000)),
        event(3, 3_000_000, 1_000_000, []),
        event(2, 4_500_000, 0, alloc_stats(1024, 2048, 0x8000))]))
    c['alloc-no-allocator.xplane.pb'] = base(cpu=cpu_plane(events=[
        event(1, 1_000_000, 0, alloc_stats(1024, 1024, 0x7000)[1:]),
        event(2, 2_000_000, 0, alloc_stats(0, 1024, 0x7000)[1:])]))

    # Timestamps near the limits.
    c['ts-near-max.xplane.pb'] = base(cpu=cpu_plane(ts=2**63 - 2, events=[
        event(3, 2**63 - 1, 2**63 - 1), event(1, 2**63 - 1000, 0, alloc_stats(1, 1, 1))]))
    c['ts-negative.xplane.pb'] = base(cpu=cpu_plane(ts=-(2**63), events=[
        event(3, -(2**63), 2**63 - 1), event(1, -5, 0, alloc_stats(1, 1, 1))]))
    c['ts-mixed-lines.xplane.pb'] = base(cpu=cpu_plane(ts=0, extra_lines=[
        line(101, 'other', 2**63 - 1, [event(1, 2**63 - 1, 0, alloc_stats(2, 2, 2))]),
        line(102, 'neg', -(2**63), [event(2, 0, 0, alloc_stats(0, 2, 2))])]))

    # Names.
    c['name-slash.xplane.pb'] = base(modules=[('jit/../../etc/passwd(1)', 1, hlo),
                                              ('/(2)', 2, hlo)])
    c['name-nul.xplane.pb'] = base(modules=[('jit_f\x00evil(1)', 1, hlo)])
    c['name-dots.xplane.pb'] = base(modules=[('.', 1, hlo), ('..', 2, hlo), ('', 3, hlo),
                                             ('_dot_', 4, hlo)])
    c['name-utf8-300.xplane.pb'] = base(modules=[('\u65e5' * 100 + '(1)', 1, hlo),
                                                 ('\u65e5' * 100 + '(2)', 2, hlo),
                                                 ('e\u0301' * 100, 3, hlo)])
    c['name-collide.xplane.pb'] = base(modules=[('jit_f', 1, hlo), ('jit_f', 2, hlo),
                                                ('jit_f (2)', 3, hlo), ('jit_f', 4, hlo)])
    c['name-ctrl.xplane.pb'] = base(modules=[('a\tb\nc\\d\x01(1)', 1, hlo)])
    # A module named as the file beside the module directories.
    c['name-index-tsv.xplane.pb'] = base(modules=[('index.tsv', 1, hlo), ('jit_g(2)', 2, hlo)])
    # Control characters that would forge a line on stderr and in text
    # files, and colour a terminal: in a module name its error reaches
    # (garbage HloProto), and in a device plane's name.
    forge = '\nxplanefs: all good\x1b[31m'
    c['name-ctrl-forge.xplane.pb'] = base(
        modules=[('jit_f' + forge + '(1)', 1, b'\xff\xff\xff\xff\x0f' * 8)],
        dev=device_plane(name='/device:GPU:0' + forge))
    c['name-module-bad-utf8.xplane.pb'] = base(modules=[(b'jit_\xff\xfe(1)', 1, hlo)])
    c['name-plane-bad-utf8.xplane.pb'] = xspace([plane(1, b'/host:\xc0\xaf'), md])
    c['name-plane-nul.xplane.pb'] = xspace([plane(1, b'/host:CPU\x00x')])
    # Names that are not UTF-8 or hold control characters where the
    # capture allows them (issue 38): an allocator's (memory.trace.json
    # was not JSON), an instruction's and its op_name (plan.json dropped
    # the key); every text file must stay UTF-8 and every JSON file parse.
    c['name-alloc-bad-utf8.xplane.pb'] = base(cpu=cpu_plane(events=cpu_events(b'GPU_0_\xff\xfebfc')))
    c['name-alloc-ctrl.xplane.pb'] = base(cpu=cpu_plane(events=cpu_events('GPU_0' + forge)))
    c['name-instr-bad-utf8.xplane.pb'] = base(
        modules=[('jit_f(1)', 1, hlo_proto(tname=b't\xff0', top=b'jit(f)/\xc0\xafmul' + forge.encode()))])

    # Not a capture at all.
    c['not-empty.xplane.pb'] = b''
    c['not-unnamed-planes.xplane.pb'] = xspace([plane(1, ''), plane(2, '')])
    c['not-unknown-planes.xplane.pb'] = xspace([plane(1, 'hello'), plane(2, 'world')])
    c['not-text.xplane.pb'] = b'this is not a protobuf at all\n'
    c['unsupported.xplane.riegeli'] = b'\x83\xaf\x70\xd1\x0d\x88\x4a\x3f' + b'\x00' * 16
    gz_cases(c, good, hlo_proto())
    return c

def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'cases')
    os.makedirs(out, exist_ok=True)
    made = cases()
    for old in os.listdir(out):
        if old not in made:
            os.remove(os.path.join(out, old))
    for name, data in sorted(made.items()):
        with open(os.path.join(out, name), 'wb') as f:
            f.write(data)
    print('%d cases in %s' % (len(made), out), file=sys.stderr)

if __name__ == '__main__':
    main()
