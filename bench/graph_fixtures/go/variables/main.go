package main

import (
	"os"

	"example.com/app/shop"
)

type Order struct{}

func NewOrder() (*Order, error) { return &Order{}, nil }

func (o *Order) Submit() {}

func (o Order) Cancel() {}

func checkout(p shop.Pricer) {
	a := &Order{}
	a.Submit()
	var b Order
	b.Cancel()
	c, err := NewOrder()
	if err != nil {
		os.Exit(1)
	}
	c.Submit()
	cart := shop.NewCart()
	cart.Add("tea")
	d := new(shop.Cart)
	_ = d.Total()
	p.Price("tea")
	handler := func() {}
	handler()
}
