package store

func connect(path string) *DB {
	return &DB{path: path}
}
