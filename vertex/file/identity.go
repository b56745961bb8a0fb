package file

// identity tells two files apart: their device and inode. The zero value
// is unknown (a system without inodes, or a position saved there), which
// matches every identity.
type identity struct {
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

// differs reports whether a and b are known and name different files.
func (a identity) differs(b identity) bool {
	return a != (identity{}) && b != (identity{}) && a != b
}
