module example.com/shop

go 1.22

require github.com/acme/log v1.2.0
