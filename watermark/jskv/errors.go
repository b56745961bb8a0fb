package jskv

import (
	"errors"
	"fmt"

	"github.com/runnel-dev/runnel/isb"
)

// Errors of this package. Failures of a NATS call wrap the NATS error, so
// errors.Is works with both these and nats.go's errors; a missing key
// matches [watermark.ErrNotFound], a bad name [watermark.ErrInvalidName].
var (
	// ErrInvalidOption is isb.ErrInvalidOption (the same value): New
	// reports an option it cannot use as an *isb.OptionError naming it,
	// as every runnel package does.
	ErrInvalidOption = isb.ErrInvalidOption
	// ErrWatchFailed is matched by the error a Watch yields last, a
	// *WatchError, when it cannot go on.
	ErrWatchFailed = errors.New("jskv: watch failed")
	// ErrBucketDeleted: the bucket a watch watched was deleted (and maybe
	// created again, as a Put does): the changes it held are gone, so the
	// watch cannot go on from where it was.
	ErrBucketDeleted = errors.New("jskv: bucket deleted")
)

// WatchError is the error a Watch yields last when it cannot go on: the
// bucket was deleted (ErrBucketDeleted), the connection closed for good
// (nats.ErrConnectionClosed), or the account is not allowed what a watch
// needs (nats.ErrPermissionViolation, nats.ErrAuthorization,
// jetstream.ErrJetStreamNotEnabledForAccount). Err says which; errors.Is
// matches it and ErrWatchFailed.
type WatchError struct {
	Bucket string
	Err    error
}

func (e *WatchError) Error() string {
	return fmt.Sprintf("jskv: watch failed: bucket %q: %v", e.Bucket, e.Err)
}

// Unwrap returns the cause.
func (e *WatchError) Unwrap() error { return e.Err }

// Is matches ErrWatchFailed.
func (e *WatchError) Is(target error) bool { return target == ErrWatchFailed }
