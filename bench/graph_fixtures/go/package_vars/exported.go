package logs

// Info logs through the standard logger.
func Info(msg string) {
	std.Info(msg)
	audit.Info(msg)
}

// SetLevel through the standard logger.
func SetLevel(level int) {
	std.SetLevel(level)
}

// Fresh returns a configured logger through its named result.
func Fresh() (l *Logger) {
	l = New()
	l.SetLevel(1)
	return
}

// Each: a range variable is local (of no known type here), never the `l` parameters of the
// func literals in the package's variables.
func Each(items []Named) {
	for _, l := range items {
		l.Info("x")
	}
}
