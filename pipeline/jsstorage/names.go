package jsstorage

import (
	"fmt"

	"github.com/runnel-dev/runnel/isb/jetstream"
)

// Names in the server (the table of the package doc). Pipeline and vertex
// names are escaped as isb/jetstream escapes its topics: letters, digits
// and '-' stay, every other byte becomes '_' and two upper-case hex digits.
// An escape never holds "__" (a '_' is always followed by a hex digit), so
// "{P}__" ends the pipeline's part of a name unambiguously.

// maxStreamLen is the longest stream name the server accepts; a bucket's
// stream is "KV_{bucket}".
const maxStreamLen = 255

// escape is isb/jetstream's escape, so names of both agree.
func escape(s string) string { return jetstream.EscapeName(s) }

// pipelineBase is the start of every name of pipeline p: "{escaped p}__".
func pipelineBase(p string) (string, error) {
	if p == "" {
		return "", optErr("pipeline name", p, "must not be empty")
	}
	return escape(p) + "__", nil
}

// bucketName is the KV bucket suffix of pipeline p, checked against the
// server's limit on its stream's name.
func bucketName(p, suffix string) (string, error) {
	base, err := pipelineBase(p)
	if err != nil {
		return "", err
	}
	b := base + suffix
	if len("KV_"+b) > maxStreamLen {
		return "", optErr("pipeline name", p, fmt.Sprintf("makes bucket %q longer than its stream's limit of %d bytes", b, maxStreamLen-3))
	}
	return b, nil
}

// Buckets and keys of a pipeline.
const (
	isbSuffix   = "isb"   // the buffers' commits; isb/jetstream adds "-claims"
	stateSuffix = "state" // sources' states and the run record
	runKey      = "run"
	sourcePre   = "source."
)

// sourceKey is the key of vertex's source state in the state bucket.
func sourceKey(vertex string) (string, error) {
	if vertex == "" {
		return "", optErr("vertex name", vertex, "must not be empty")
	}
	return sourcePre + escape(vertex), nil
}
