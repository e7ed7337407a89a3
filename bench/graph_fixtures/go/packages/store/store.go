package store

import "example.com/shop/util"

type DB struct{ path string }

func Open(path string) *DB {
	util.Retry(1)
	return connect(path)
}
