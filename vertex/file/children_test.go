package file_test

var children = map[string]func(){}
