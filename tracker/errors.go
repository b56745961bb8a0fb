package tracker

import "errors"

var (
	// ErrTracked is returned by Insert for an offset already in flight.
	ErrTracked = errors.New("tracker: offset already tracked")
	// ErrPartition is returned (wrapped, with the partition and the valid
	// range) by Insert for a partition outside 0..partitions-1.
	ErrPartition = errors.New("tracker: partition out of range")
)
