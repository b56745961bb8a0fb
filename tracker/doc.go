// Package tracker holds a vertex replica's in-flight messages: per
// partition, a B-tree of offsets with their watermarks.
package tracker
