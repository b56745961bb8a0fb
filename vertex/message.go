package vertex

import (
	"time"
	"unsafe"

	"github.com/runnel-dev/runnel/internal/origin"
)

// Message is the envelope every vertex receives and emits: the user's value
// plus the metadata the runtime routes and orders by.
//
// Keys, Tags and Headers are shared, not copied, when a message moves between
// vertices: treat them as immutable once a message is emitted, and build new
// slices or maps to change them.
type Message[T any] struct {
	// origin is where the message came from when the runtime writes it to
	// durable storage (internal/origin): set just before the write, never
	// on a message read. It stays the first field: internal/origin.Of
	// finds it at the message's address.
	origin *origin.Origin
	// ID identifies the message. Built-in sources set a unique ID; [Derive]
	// keeps the input's ID so a message can be followed through a pipeline.
	ID string
	// EventTime is when the event happened. Sources that leave it zero get
	// the time they were read.
	EventTime time.Time
	// Watermark is the event-time progress of the reading vertex when the
	// message was read: no message with an earlier event time is expected
	// any more, unless Late. The runtime sets it when the message is read,
	// for a function or sink to read; what a UDF sets here is ignored.
	Watermark time.Time
	// Keys route the message to a partition when the destination vertex
	// partitions by key ([PartitionByKey], [OrderByKey]), and group it in
	// reduce vertices.
	Keys []string
	// Tags select the outgoing edges whose [Condition] they satisfy. The
	// [DropTag] discards the message.
	Tags []string
	// Headers are free-form metadata carried along.
	Headers map[string]string
	// Value is the user's payload.
	Value T
	// Late reports that the event time was already behind the source's
	// watermark when the source read the message. The runtime sets it, on
	// the messages a source reads, for a function or sink to read; it is
	// not stored in buffers on durable storage. A reduce vertex judges
	// lateness against its own watermark (see [Windowing]).
	Late bool
}

// The origin field is at offset 0 of every Message (internal/origin.Of):
// this fails to compile otherwise.
var _ = [1]struct{}{}[unsafe.Offsetof(Message[struct{}]{}.origin)]

// DropTag, among a message's tags, discards it: the writer forwards it to no
// edge, acks its input and counts it as dropped.
const DropTag = "runnel/drop"

// ReservedTagPrefix starts the tags the runtime reserves for itself (such as
// [DropTag] and watermark control messages); user tags must not use it.
const ReservedTagPrefix = "runnel/"

// Derive returns an output message carrying in's ID, event time, keys, tags
// and headers with value v: the usual way for a map function to emit.
func Derive[Out, In any](in Message[In], v Out) Message[Out] {
	return Message[Out]{
		ID:        in.ID,
		EventTime: in.EventTime,
		Watermark: in.Watermark,
		Keys:      in.Keys,
		Tags:      in.Tags,
		Headers:   in.Headers,
		Value:     v,
		Late:      in.Late,
	}
}

// HasTag reports whether m carries tag.
func (m *Message[T]) HasTag(tag string) bool {
	for _, t := range m.Tags {
		if t == tag {
			return true
		}
	}
	return false
}

// The headers of a message a reduce vertex sends to its late stream: what
// made it late, so that it can be audited. Each value is an instant in
// RFC 3339 with nanoseconds, UTC; they are set on a copy of the message's
// headers, which are kept.
const (
	// LateWatermarkHeader is the watermark the message was judged against:
	// the vertex watermark when it was read (see [Windowing]).
	LateWatermarkHeader = "runnel/late-watermark"
	// LateWindowEndHeader is the end of the latest window the message
	// belongs to (for a session, of its own [t, t+gap)).
	LateWindowEndHeader = "runnel/late-window-end"
	// LateClosedAtHeader is when that window closed: its end plus the
	// allowed lateness, at or below the watermark.
	LateClosedAtHeader = "runnel/late-closed-at"
)
