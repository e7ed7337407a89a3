package zoo

type Dog struct {
	Animal
}

// Speak overrides the promoted Animal.Speak.
func (d Dog) Speak() string {
	d.Log("speak")
	return d.Name() + " says woof"
}

func Talk() string {
	d := Dog{}
	return d.Speak() + d.Animal.Speak()
}
