/* A quick one-pass reader of protobuf-c messages, for the HloProtos.
 *
 * protobuf_c_message_unpack reads a message in two passes through a table
 * of scanned fields, and keeps a copy of every field it does not know; on a
 * module of hundreds of thousands of instructions that is most of a plan's
 * time.  xpf_pb_quick fills the same structs from the same descriptors in
 * one pass over each message (two where it has repeated fields: their
 * counts first), and leaves out the fields it does not know (nothing reads
 * them).  It vouches only for what it reads exactly as protobuf-c would;
 * for anything else (a group, a singular message given twice, a length of
 * over five bytes, a tag of over four, a type the HloProto does not use)
 * it answers NULL, and the caller asks protobuf-c, which decides and words
 * any error.  xpf_pb_same is the check: the two readers agree on every
 * message the quick one takes (tests, fuzz target). */
#ifndef XPF_PB_QUICK_H
#define XPF_PB_QUICK_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

/* Blocks that unpacked messages live in.  protobuf-c makes one allocation
 * per message, string and repeated field (millions for a module of hundreds
 * of thousands of instructions, each with malloc's header); taking them from
 * large blocks instead needs less memory and frees a whole message at once.
 * Nothing is freed before that: what protobuf-c frees while unpacking (its
 * scratch for repeated fields) stays in its block.  A list starts NULL. */
typedef struct xpf_pb_blocks xpf_pb_blocks;
ProtobufCAllocator xpf_pb_blocks_allocator(xpf_pb_blocks **blocks);
void xpf_pb_blocks_free(xpf_pb_blocks **blocks); /* every block; *blocks NULL */

/* The same blocks, with a bound on what one unpack may take from them:
 * past `left` bytes an allocation fails (the unpack with it) and `over`
 * says so.  protobuf-c allocates a whole struct for a message of no bytes
 * (176 for an empty instruction, 2 bytes on the wire): without a bound a
 * hostile HloProto takes ~90 times its size. */
typedef struct xpf_pb_budget {
	xpf_pb_blocks **blocks;
	size_t left;
	bool over;
} xpf_pb_budget;
ProtobufCAllocator xpf_pb_budget_allocator(xpf_pb_budget *b);

/* The message of descriptor d in [p, p + n) (p may be NULL when n is 0),
 * its parts from a, or NULL (whatever it took from a is not given back:
 * a's blocks go whole). */
ProtobufCMessage *xpf_pb_quick(const ProtobufCMessageDescriptor *d, ProtobufCAllocator *a,
			       const uint8_t *p, size_t n);

/* Whether x and y (of one descriptor) hold the same known fields. */
bool xpf_pb_same(const ProtobufCMessage *x, const ProtobufCMessage *y);

/* Both readers on [p, p + n): 1 when the quick one answers and protobuf-c
 * gives the same, 0 when the quick one leaves it to protobuf-c, -1 when
 * they differ (a bug). */
int xpf_pb_quick_check(const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t n);

#endif
