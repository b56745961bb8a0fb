package jskv_test

import (
	"testing"

	"github.com/runnel-dev/runnel/watermark"
	"github.com/runnel-dev/runnel/watermark/storetest"
)

// TestStoreContract runs the Store contract suite, the one MemStore runs,
// each subtest on a fresh server.
func TestStoreContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) watermark.Store {
		_, js := startServer(t).connect()
		return newStore(t, js)
	})
}
