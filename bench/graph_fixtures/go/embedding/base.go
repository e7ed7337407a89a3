package zoo

type Logger struct{}

func (l *Logger) Log(msg string) {}

type Animal struct {
	*Logger
	name string
}

func (a Animal) Name() string { return a.name }

func (a Animal) Speak() string { return "..." }
