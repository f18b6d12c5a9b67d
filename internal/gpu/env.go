package gpu

import (
	"fmt"
	"os"
	"time"
)

// DurationEnv reads a backend's time limit from the environment variable name: def when it is not
// set, an error that says how to write it when it is not a positive duration.
func DurationEnv(name string, def time.Duration) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q is not a positive duration: write it as 90s or 5m", name, v)
	}
	return d, nil
}
