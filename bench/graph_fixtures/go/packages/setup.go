package main

func setup() {
	configure()
}

func configure() {}
