package wal

// children are the child sides of the multi-process tests: a test binary
// that internal/crashtest re-executed runs one of them instead of the
// tests (see TestMain).
var children = map[string]func(){
	"lock":   lockChild,
	"crash":  crashChild,
	"reopen": reopenChild,
}
