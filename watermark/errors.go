package watermark

import "errors"

// Sentinel errors. Every error of this package matches one of them with
// errors.Is; the message adds the bucket, key, partition or field at fault.
var (
	// ErrInvalidConfig reports a bad field of a *Config struct.
	ErrInvalidConfig = errors.New("watermark: invalid config")
	// ErrInvalidName reports a bucket, key or processor name that the store
	// cannot hold (empty, or a character outside the allowed set).
	ErrInvalidName = errors.New("watermark: invalid name")
	// ErrNotFound is returned by Store.Get for a missing key.
	ErrNotFound = errors.New("watermark: key not found")
	// ErrDecode reports bytes that are not a valid encoding.
	ErrDecode = errors.New("watermark: cannot decode")
	// ErrRange reports a value that cannot be encoded (a time outside the
	// years 1678-2262, a negative offset or partition).
	ErrRange = errors.New("watermark: value out of range")
	// ErrUnknownEdge is returned for an edge a Publisher was not built with.
	ErrUnknownEdge = errors.New("watermark: unknown edge")
	// ErrPartition reports a partition outside the configured range.
	ErrPartition = errors.New("watermark: partition out of range")
	// ErrStarted is returned by Start on a value already started or stopped.
	ErrStarted = errors.New("watermark: already started")
	// ErrStopped is returned by a Start that a concurrent Stop ended.
	ErrStopped = errors.New("watermark: stopped")
)
