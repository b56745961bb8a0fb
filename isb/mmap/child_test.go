package mmap

// children are the child sides of the multi-process tests: a test binary
// that internal/crashtest re-executed runs one of them instead of the
// tests (see TestMain). The children of tests that run on one system only
// are added by their files.
var children = map[string]func(){
	"lock":  lockChild,
	"crash": crashChild,
}
