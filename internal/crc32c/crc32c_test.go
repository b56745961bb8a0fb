package crc32c_test

import (
	"testing"

	"github.com/runnel-dev/runnel/internal/crc32c"
)

// TestCheckValue: the standard check value of CRC-32C ("123456789" gives
// 0xE3069283), so the table is Castagnoli's and not another polynomial,
// and Update over two parts equals Checksum over the whole.
func TestCheckValue(t *testing.T) {
	b := []byte("123456789")
	if got := crc32c.Checksum(b); got != 0xE3069283 {
		t.Fatalf("Checksum = %#08x, want 0xe3069283", got)
	}
	if got := crc32c.Update(crc32c.Checksum(b[:4]), b[4:]); got != 0xE3069283 {
		t.Fatalf("Update over two parts = %#08x, want 0xe3069283", got)
	}
}
