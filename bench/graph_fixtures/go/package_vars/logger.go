package logs

type Logger struct{ level int }

func New() *Logger { return &Logger{} }

func (l *Logger) Info(msg string) {}

func (l *Logger) SetLevel(level int) { l.level = level }

// std is declared in this file and used from the package's other files.
var std = New()

var (
	audit  Logger
	hooks  = map[string]func(l *Logger){}
	filter = func(l *Logger) bool { return l != nil }
)

// Named has an Info of its own.
type Named interface{ Info(msg string) }
