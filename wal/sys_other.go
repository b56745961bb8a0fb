//go:build !linux && !darwin

package wal

import "os"

// The WAL locks its directory with flock and maps segments for replay, as
// Linux and macOS allow. On other systems the lock, the first step of Open,
// fails with ErrUnsupported, so mapReadOnly is never reached.

func mapReadOnly(*os.File, int) ([]byte, func(), error) { return nil, nil, errNotHere }
