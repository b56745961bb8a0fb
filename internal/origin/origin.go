// Package origin is where a record a map vertex wrote to durable storage
// came from: the writing vertex, and the partition, offset and output index
// of the input it was made of. A map replica that restarts finds the
// outputs it wrote for inputs it had not yet committed by their origins, and
// writes only the others (see package forwarder, map_resume.go).
//
// An origin travels in a hidden field of vertex.Message, set by the
// forwarder just before a write to durable storage and encoded by the
// envelope codec; a message read from a buffer never carries one (the
// codec decodes an origin only into a slot the caller set, as the restart
// scan does), so a map function that passes its input on cannot pass an
// origin with it. Users never see it.
package origin

import "unsafe"

// Origin is the provenance of one record.
type Origin struct {
	Writer    string // the vertex that wrote the record
	Partition int    // the partition of the input it was made of
	Offset    int64  // that input's offset in its partition
	Index     int    // its place among that input's outputs, from 0
}

// Of returns the origin field of the vertex.Message m points to (nil: the
// message has none). m must point to a vertex.Message of some value type:
// the field is the first of the struct, which package vertex asserts at
// compile time, so its address is the message's whatever the value type.
func Of[M any](m *M) **Origin { return (**Origin)(unsafe.Pointer(m)) }
