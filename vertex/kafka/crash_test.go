package kafka

func crashChild() {}
