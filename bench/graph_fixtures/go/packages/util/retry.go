package util

import "time"

func Retry(n int) {
	for i := 0; i < n; i++ {
		time.Sleep(time.Millisecond)
	}
}
