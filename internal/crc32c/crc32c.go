// Package crc32c is the one CRC-32C (Castagnoli) table of runnel's on-disk
// formats: isb/mmap's records, segment headers, checkpoints and topic
// metadata, the wal's entries, tail hint, clean-close and metadata records,
// and the pipeline's source state files. Every one of them stores the
// checksum as hash/crc32 computes it with this table, so a file written by
// one build reads back in another.
//
// It is internal: no user imports it.
package crc32c

import "hash/crc32"

// Table is the Castagnoli table; hash/crc32 uses the CPU's CRC32
// instruction with it where there is one.
var Table = crc32.MakeTable(crc32.Castagnoli)

// Checksum returns the CRC-32C of b.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, Table) }

// Update returns the CRC-32C of the bytes crc covered followed by b.
func Update(crc uint32, b []byte) uint32 { return crc32.Update(crc, Table, b) }
