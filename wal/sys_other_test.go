//go:build !linux && !darwin

package wal_test

import (
	"errors"
	"testing"

	"github.com/runnel-dev/runnel/wal"
)

// TestUnsupportedSystemRefusesAtOpen: off Linux and macOS Open fails with
// ErrUnsupported.
func TestUnsupportedSystemRefusesAtOpen(t *testing.T) {
	_, err := wal.Open(t.TempDir())
	if !errors.Is(err, wal.ErrUnsupported) {
		t.Fatalf("Open = %v; want ErrUnsupported", err)
	}
}
