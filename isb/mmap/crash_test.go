package mmap

func crashChild() {}
