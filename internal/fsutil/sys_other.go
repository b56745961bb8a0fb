//go:build !linux && !darwin

package fsutil

import (
	"errors"
	"os"
)

// The stores lock their directories with flock and flush with fdatasync as
// Linux and macOS have them. On other systems both fail with
// errors.ErrUnsupported; each store turns LockDir's into its own
// ErrUnsupported at open, so Fdatasync is never reached.

func lockFile(*os.File) error { return errors.ErrUnsupported }

// Fdatasync returns errors.ErrUnsupported.
func Fdatasync(*os.File) error { return errors.ErrUnsupported }
