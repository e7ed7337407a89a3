package shop

type Cart struct{ items []string }

func NewCart() *Cart { return &Cart{} }

func (c *Cart) Add(item string) { c.items = append(c.items, item) }

func (c *Cart) Total() int { return len(c.items) }

type Pricer interface {
	Price(item string) int
}
