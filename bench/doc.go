// Package bench compares runnel with plain goroutines and channels and with
// github.com/reugn/go-streams on the same pipeline: a generator, an
// identity map and a discarding sink. It is a separate module so that the
// library's go.mod does not carry the peers it is measured against.
//
//	cd bench && go test -run '^$' -bench . -benchtime 2s -count 5
package bench
