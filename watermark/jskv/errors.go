package jskv

import "errors"

// Errors of this package. Failures of a NATS call wrap the NATS error, so
// errors.Is works with both these and nats.go's errors; a missing key
// matches [watermark.ErrNotFound], a bad name [watermark.ErrInvalidName].
var (
	// ErrInvalidOption reports an option New cannot use; the message names it.
	ErrInvalidOption = errors.New("jskv: invalid option")
	// ErrWatchFailed is the error a Watch yields last when its subscription
	// ends without its context ending.
	ErrWatchFailed = errors.New("jskv: watch failed")
)
