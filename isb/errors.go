package isb

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
)

// Sentinel errors. Every error returned by this package and by its storage
// backends matches one of these with errors.Is, or is one of the typed errors
// below.
var (
	// ErrFull is returned under FullFail when the topic has no room for
	// the whole batch (nothing of the batch is stored).
	ErrFull = errors.New("isb: topic is full")
	// ErrClosed is returned by calls on a closed topic, producer or consumer.
	ErrClosed = errors.New("isb: closed")
	// ErrInvalidOption is matched by every *OptionError: the option errors
	// of every runnel package (isb and its storage modes, vertex, pipeline,
	// wal, watermark and its stores), so one errors.Is test serves all.
	ErrInvalidOption = errors.New("runnel: invalid option")
	// ErrOutOfRange is wrapped by every storage mode's error for an offset
	// a Backend cannot serve or accept: a Read outside [Head, Tail), a
	// Commit or Release past Tail. The isb never makes such a call; a
	// backend returning it reports a breach of the Backend contract.
	ErrOutOfRange = errors.New("isb: offset out of range")
	// ErrInvalidKey is returned when a routing key cannot be mapped to a
	// partition (NaN, an infinity, a fraction, or a selector result out of range).
	ErrInvalidKey = errors.New("isb: invalid routing key")
	// ErrGroupInUse is returned when consumers are created for a group that
	// already has running consumers, and by Topic.DeleteGroup for a group
	// with open consumers.
	ErrGroupInUse = errors.New("isb: consumer group already has consumers")
	// ErrUnknownGroup is returned by Topic.DeleteGroup for a group the
	// topic does not know (never created, or deleted already).
	ErrUnknownGroup = errors.New("isb: unknown consumer group")
	// ErrNotAssigned is returned by CommitTo for a partition the consumer does not own.
	ErrNotAssigned = errors.New("isb: partition not assigned to this consumer")
	// ErrCommitBeyondDelivered is returned by CommitTo for an offset past
	// what the consumer has been delivered.
	ErrCommitBeyondDelivered = errors.New("isb: commit beyond delivered offset")
	// ErrUnknownTopic is returned by a Registry lookup of a name never registered.
	ErrUnknownTopic = errors.New("isb: unknown topic")
	// ErrTopicExists is returned when a name is registered twice.
	ErrTopicExists = errors.New("isb: topic already registered")
	// ErrWrongType is matched by every *TypeError.
	ErrWrongType = errors.New("isb: topic element type mismatch")
	// ErrCorrupt is matched by storage errors that report damaged data.
	ErrCorrupt = errors.New("isb: corrupt data")
	// ErrNotDamaged is returned by Skip for a partition whose last read
	// did not fail with ErrCorrupt at its next offset: Skip steps past
	// damaged records only, never past data that can be delivered.
	ErrNotDamaged = errors.New("isb: no damaged record to skip")
	// ErrClaimLost is returned by Pull and commits of a consumer whose
	// claim of its partitions storage shared by processes took away (a
	// renewal that did not reach the server in time): another process may
	// read them now, so this consumer stops. Close it and join again.
	ErrClaimLost = errors.New("isb: claim of partitions lost")
	// ErrPanic is matched by every *PanicError.
	ErrPanic = errors.New("isb: handler panicked")
)

// ReadError reports that reading a partition failed at an offset. Pull
// returns it in that partition's round-robin turn and goes on with the
// next partition at the next call, so one damaged partition never stops a
// consumer's others. When it matches ErrCorrupt, Skip steps past the
// damaged record.
type ReadError struct {
	Topic     string
	Partition int
	Offset    int64
	Err       error // the storage's error
}

// Error names the topic, partition and offset, then the storage's error.
func (e *ReadError) Error() string {
	return fmt.Sprintf("isb: topic %q partition %d: read at offset %d: %v", e.Topic, e.Partition, e.Offset, e.Err)
}

// Unwrap returns the storage's error.
func (e *ReadError) Unwrap() error { return e.Err }

// CorruptOffset returns the offset of the damaged record that err (an
// error matching ErrCorrupt) reports, when the storage says where it is:
// a Read of storage that leaves offsets unused may find the damage past
// the offset it was asked for (a packed JetStream read at the end of one
// frame finding the next one damaged), and the consumer then steps past
// the damaged record, not past the offset it asked for. The storage's
// error says so with a method CorruptOffset() (int64, bool).
func CorruptOffset(err error) (int64, bool) {
	var d interface{ CorruptOffset() (int64, bool) }
	if errors.As(err, &d) {
		return d.CorruptOffset()
	}
	return 0, false
}

// PanicError is a panic of a push handler, recovered and turned into the
// handler's error: it goes to OnError and the batch is treated as failed.
type PanicError struct {
	Value any    // what the handler panicked with
	Stack []byte // the handler goroutine's stack at the panic
}

// Error gives the panic value and the stack.
func (e *PanicError) Error() string {
	return fmt.Sprintf("isb: push handler panicked: %v\n%s", e.Value, e.Stack)
}

// Is makes errors.Is(err, ErrPanic) true.
func (e *PanicError) Is(target error) bool { return target == ErrPanic }

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// OptionError reports an option that failed validation, naming it. It is
// the one option error of runnel: every package that validates options
// (isb, isb/memory, isb/mmap, vertex, pipeline, wal, watermark,
// watermark/jskv) returns it, so errors.As(err, &oe) and
// errors.Is(err, ErrInvalidOption) work whichever package refused.
//
// It lives in isb because isb is the lowest package of runnel's own: it
// imports nothing of runnel, and every package that has options already
// depends on it or may (dependencies point down to isb), so no package has
// to be added for two declarations, and no storage mode, vertex or
// pipeline error needs translating.
type OptionError struct {
	Package string // the package that refused, e.g. "vertex"; "" is "isb"
	Option  string // e.g. "Partitions"
	Value   any    // the rejected value
	Reason  string // e.g. "must be at least 1"
}

// Error names the package, the option, the reason and the rejected value.
func (e *OptionError) Error() string {
	v := e.Value
	if s, ok := v.(string); ok {
		// Quote strings so an empty or odd name is visible in the message.
		v = strconv.Quote(s)
	}
	pkg := e.Package
	if pkg == "" {
		pkg = "isb"
	}
	return fmt.Sprintf("%s: option %s: %s (got %v)", pkg, e.Option, e.Reason, v)
}

// Is makes errors.Is(err, ErrInvalidOption) true.
func (e *OptionError) Is(target error) bool { return target == ErrInvalidOption }

// TypeError reports a registry lookup whose element type differs from the
// registered topic's.
type TypeError struct {
	Topic string
	Want  reflect.Type // the type asked for
	Got   reflect.Type // the type the topic was registered with
}

// Error names the topic and both element types.
func (e *TypeError) Error() string {
	return fmt.Sprintf("isb: topic %q holds %v, not %v", e.Topic, e.Got, e.Want)
}

// Is makes errors.Is(err, ErrWrongType) true.
func (e *TypeError) Is(target error) bool { return target == ErrWrongType }
