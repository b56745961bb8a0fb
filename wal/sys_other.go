//go:build !linux && !darwin

package wal

import (
	"fmt"
	"os"
	"runtime"
)

// The WAL locks its directory with flock and maps segments for replay, as
// Linux and macOS allow. On other systems lockFile, the first step of Open,
// fails with ErrUnsupported, so mapReadOnly is never reached.

func unsupported() error {
	return fmt.Errorf("%w: the WAL runs on linux and darwin, not %s", ErrUnsupported, runtime.GOOS)
}

func lockFile(*os.File) error { return unsupported() }

func mapReadOnly(*os.File, int) ([]byte, func(), error) { return nil, nil, unsupported() }
