package main

import (
	"fmt"
	"strings"

	"github.com/acme/log"

	"example.com/shop/store"
	u "example.com/shop/util"
)

func main() {
	db := store.Open("shop.db")
	fmt.Println(strings.ToUpper("ready"), db)
	log.Info("started")
	run()
}

func run() {
	u.Retry(3)
	setup()
}
