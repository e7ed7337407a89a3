package main

import (
	"log"

	"github.com/acme/portal/internal/auth"
)

func main() {
	if !auth.Check("token") {
		log.Fatal("denied")
	}
}
