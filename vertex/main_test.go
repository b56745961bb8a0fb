package vertex

import (
	"testing"

	"go.uber.org/goleak"
)

// vertex starts no goroutines of its own, but FromSeq runs the user's
// sequence as a coroutine: goleak checks that Close ends it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
