package pipeline

import "github.com/runnel-dev/runnel/vertex"

// Stream is the typed output of one or more vertices, as the input of
// another. The zero Stream carries nothing; a vertex fed by it fails
// validation with ErrNoInput. Streams are values: Where and
// DiscardWhenFull return a new Stream and leave the receiver as it was.
type Stream[T any] struct {
	p     *Pipeline
	parts []streamPart
}

// streamPart is one edge of a stream: its origin and how it carries.
type streamPart struct {
	from    *node
	p       *Pipeline
	when    *vertex.Condition
	discard bool
	late    bool // the late-data stream of a reduce vertex
}

func streamOf[T any](p *Pipeline, from *node) Stream[T] {
	return Stream[T]{p: p, parts: []streamPart{{from: from, p: p}}}
}

// Where keeps only the messages whose tags match c (for every vertex the
// stream comes from); with an earlier Where, a message must match both.
func (s Stream[T]) Where(c *vertex.Condition) Stream[T] {
	out := Stream[T]{p: s.p, parts: make([]streamPart, len(s.parts))}
	for i, part := range s.parts {
		if part.when != nil {
			part.when = vertex.And(part.when, c)
		} else {
			part.when = c
		}
		out.parts[i] = part
	}
	return out
}

// Tagged keeps only the messages carrying at least one of tags: a branch of
// a split by tags.
func (s Stream[T]) Tagged(tags ...string) Stream[T] { return s.Where(vertex.AnyTag(tags...)) }

// DiscardWhenFull makes the stream drop (and count) the messages that do
// not fit in the destination's buffer instead of waiting for room,
// whatever the destination's options say (vertex.DiscardWhenFull
// discards on every edge into a vertex).
func (s Stream[T]) DiscardWhenFull() Stream[T] {
	out := Stream[T]{p: s.p, parts: make([]streamPart, len(s.parts))}
	for i, part := range s.parts {
		part.discard = true
		out.parts[i] = part
	}
	return out
}

// Join merges streams of one type: a vertex fed by the result reads the
// messages of all of them.
func Join[T any](streams ...Stream[T]) Stream[T] {
	var out Stream[T]
	for _, s := range streams {
		if out.p == nil {
			out.p = s.p
		}
		out.parts = append(out.parts, s.parts...)
	}
	return out
}
