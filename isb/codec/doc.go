// Package codec holds the serializers that durable storage (isb/mmap) uses
// to turn items into bytes and back; remote storage (NATS JetStream, not
// written yet) is meant to use them too.
//
// Three codecs are provided:
//
//   - [JSON]: encoding/json, the default; portable and self-describing.
//   - [MsgPack]: MessagePack (github.com/vmihailenco/msgpack/v5); smaller and
//     faster than JSON for most structs.
//   - [Raw]: the in-memory bytes of a fixed-size type without pointers
//     (numbers, bools, arrays and structs of those). It copies memory, so it
//     is the fastest, but its bytes are only readable on a machine with the
//     same byte order and the same Go type layout.
//
// Every codec is safe for concurrent use. An encode error is returned to
// the caller, which must then store nothing.
package codec
