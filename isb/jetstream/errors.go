package jetstream

import (
	"errors"
	"fmt"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/isb"
)

// Sentinel errors, matched with errors.Is. Each is the Kind of a
// *StreamError naming the stream; a full buffer matches isb.ErrFull and
// damaged data isb.ErrCorrupt, as in every storage mode.
var (
	// ErrUnreachable: the server did not answer (Open's first request, or
	// a request retried for RetryTimeout).
	ErrUnreachable = errors.New("jetstream: server unreachable")
	// ErrStreamDeleted: a partition's stream was deleted while the topic
	// was open. It does not heal: the data is gone.
	ErrStreamDeleted = errors.New("jetstream: stream deleted")
	// ErrDenied: the server refused a request for lack of permission.
	ErrDenied = errors.New("jetstream: permission denied")
	// ErrMismatch is matched by every *MismatchError.
	ErrMismatch = errors.New("jetstream: stream exists with other settings")
	// ErrGap: a message inside the retained range is missing (deleted by
	// hand). It matches isb.ErrCorrupt, so a consumer steps past it with
	// Skip, one offset at a time.
	ErrGap = errors.New("jetstream: message missing inside the stream")
)

// StreamError is a failure of an operation on one partition's stream.
type StreamError struct {
	Stream string // the stream's name
	Op     string // "open", "append", "read", "commit", ...
	Kind   error  // one of the sentinels above, isb.ErrFull, isb.ErrClosed, or nil
	Err    error  // the cause, from nats.go or the server
	// Offset is the first offset of the missing message of an ErrGap.
	Offset int64
}

// Error names the stream, the operation, the kind and the cause.
func (e *StreamError) Error() string {
	switch {
	case e.Kind == nil:
		return fmt.Sprintf("jetstream: stream %q: %s: %v", e.Stream, e.Op, e.Err)
	case e.Err == nil:
		return fmt.Sprintf("jetstream: stream %q: %s: %v", e.Stream, e.Op, e.Kind)
	}
	return fmt.Sprintf("jetstream: stream %q: %s: %v: %v", e.Stream, e.Op, e.Kind, e.Err)
}

// Unwrap returns the kind and the cause.
func (e *StreamError) Unwrap() []error {
	var errs []error
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// Is makes a gap match isb.ErrCorrupt.
func (e *StreamError) Is(target error) bool { return target == isb.ErrCorrupt && e.Kind == ErrGap }

// CorruptOffset is where a gap is (see isb.CorruptOffset): on a packed
// stream a read at the end of one frame may find the next one missing.
func (e *StreamError) CorruptOffset() (int64, bool) { return e.Offset, e.Kind == ErrGap }

// MismatchError reports a stream that exists with a setting other than
// the one this backend asks for: another partition count, codec or element
// type (which would move keys to other partitions or decode wrong values),
// or a stream setting that changes what the storage guarantees (discard
// policy, limits, retention). Nothing is changed in the server.
type MismatchError struct {
	Stream  string
	Setting string // e.g. "Discard", "MaxMsgs", "codec", "partitions"
	Stored  any    // what the stream has
	Asked   any    // what this backend asked for
}

// Error names the stream, the setting and both values.
func (e *MismatchError) Error() string {
	return fmt.Sprintf("jetstream: stream %q exists with %s %v, asked for %v", e.Stream, e.Setting, e.Stored, e.Asked)
}

// Is makes errors.Is(err, ErrMismatch) true.
func (e *MismatchError) Is(target error) bool { return target == ErrMismatch }

// DecodeError reports a message the codec could not decode. It matches
// isb.ErrCorrupt, so the consumer reports it as a damaged record and
// steps past it with Skip (counted by PullConsumer.Skipped), and the
// codec's error (codec.ErrDecode).
type DecodeError struct {
	Stream string
	Offset int64
	Err    error
}

// Error names the stream and the offset.
func (e *DecodeError) Error() string {
	return fmt.Sprintf("jetstream: stream %q: message at offset %d does not decode: %v", e.Stream, e.Offset, e.Err)
}

// Unwrap returns the codec's error.
func (e *DecodeError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, isb.ErrCorrupt) true.
func (e *DecodeError) Is(target error) bool { return target == isb.ErrCorrupt }

// CorruptOffset is Offset (see isb.CorruptOffset): on a packed stream a
// read at the end of one frame may find the next one damaged.
func (e *DecodeError) CorruptOffset() (int64, bool) { return e.Offset, true }

// casConflict reports whether err is a KV compare-and-set that lost to
// another writer. nats.go reports it as ErrKeyExists on a stream of one
// replica (error code 10071) and as ErrKeyRevisionMismatch on a
// replicated one (10164): matching only the first made a commit of a
// group on an R3 bucket fail instead of keeping the higher commit
// (TestClusterPackedSuite, ConcurrentProducersAndGroups).
func casConflict(err error) bool {
	return errors.Is(err, natsjs.ErrKeyExists) || errors.Is(err, natsjs.ErrKeyRevisionMismatch)
}
