package wal

import "golang.org/x/sys/unix"

// mapPopulate reads a mapped segment in one go: replay reads all of it.
const mapPopulate = unix.MAP_POPULATE
