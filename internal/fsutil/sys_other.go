//go:build !linux && !darwin

package fsutil

import (
	"errors"
	"os"
)

// The stores lock their directories with flock and flush with fdatasync as
// Linux and macOS have them. On other systems both fail with
// errors.ErrUnsupported; LockDir turns its own into the store's
// ErrUnsupported, so a store refuses at open and never reaches Fdatasync.

func lockFile(*os.File) error { return errors.ErrUnsupported }

// Fdatasync returns errors.ErrUnsupported.
func Fdatasync(*os.File) error { return errors.ErrUnsupported }
