//go:build !linux && !darwin

package mmap_test

import (
	"errors"
	"testing"

	"github.com/runnel-dev/runnel/isb/mmap"
)

// TestUnsupportedSystemRefusesAtOpen: off Linux and macOS the storage
// refuses at Open with ErrUnsupported, never later.
func TestUnsupportedSystemRefusesAtOpen(t *testing.T) {
	_, err := mmap.NewTopic[int](t.TempDir(), "t")
	if !errors.Is(err, mmap.ErrUnsupported) {
		t.Fatalf("NewTopic = %v; want ErrUnsupported", err)
	}
}
