/* libFuzzer target over the quick HloProto reader (capture/pb_quick.h):
 * the input is read as an HloProto, an HloComputationProto and an
 * HloInstructionProto by both the quick reader and protobuf-c; wherever
 * the quick one answers, protobuf-c must give the same.  Small and fast,
 * beside fuzz_capture (which reaches the reader only through whole bare
 * HloProtos).  Run with scripts/fuzz. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capture/pb_quick.h"
#include "hlo.pb-c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const ProtobufCMessageDescriptor *const types[] = {
		&xla__hlo_proto__descriptor,
		&xla__hlo_computation_proto__descriptor,
		&xla__hlo_instruction_proto__descriptor,
	};
	/* its own copy, so that ASan sees a read one past the end */
	uint8_t *copy = malloc(size ? size : 1);
	if (copy == NULL)
		return 0;
	memcpy(copy, data, size);
	for (size_t i = 0; i < sizeof types / sizeof *types; i++)
		if (xpf_pb_quick_check(types[i], copy, size) < 0)
			abort();
	free(copy);
	return 0;
}
