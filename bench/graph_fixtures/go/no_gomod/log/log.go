package log

// Fatal shares its name with the standard library's log.Fatal.
func Fatal(msg string) {}
