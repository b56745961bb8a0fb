package jskv

import (
	"errors"

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
	// ErrWatchFailed is the error a Watch yields last when its subscription
	// ends without its context ending.
	ErrWatchFailed = errors.New("jskv: watch failed")
)
